"""Bounded dynamic length on the static targets (issue 11, T4): a prefill exported
with `torch.export.Dim` compiles once per enumerated size (`<method>__<size>`
functions sharing weights and states); a call runs the variant of its inputs'
shapes, and a size not compiled is a QoptError listing the sizes that were."""

from __future__ import annotations

import copy
import os
import re
import tempfile

import numpy as np
import pytest
import torch

import qopt
from qopt.dialects.signature import logical_methods, pick_function, variant_name
from qopt.examples import apply_scheme, build_kv_llama
from qopt.frontend.importer import enumerate_sizes

CONFIG = {"vocab_size": 64, "dim": 32, "n_layers": 2, "n_heads": 4, "hidden_dim": 64,
          "max_seq_len": 40}  # fmt: skip


def _export(model: torch.nn.Module, *inputs: torch.Tensor, **kw: object):
    with torch.no_grad():
        return torch.export.export(copy.deepcopy(model), inputs, strict=False, **kw)  # type: ignore[arg-type]


def _greedy(step, prompt: list[int], n_new: int) -> list[int]:
    logits = step(np.array([prompt]), np.arange(len(prompt)))
    out = [int(logits[0, -1].argmax())]
    while len(out) < n_new:
        pos = len(prompt) + len(out) - 1
        out.append(int(step(np.array([[out[-1]]]), np.array([pos]))[0, -1].argmax()))
    return out


def test_enumerated_sizes() -> None:
    """Every size of a narrow Dim, min / max / powers of two of a wide one, the sizes
    given (checked against the range), and the variant names."""
    assert [c["s0"] for c in enumerate_sizes("f", {"s0": (1, 16)})] == list(range(1, 17))
    assert [c["s0"] for c in enumerate_sizes("f", {"s0": (3, 100)})] == [3, 4, 8, 16, 32, 64, 100]
    assert enumerate_sizes("f", {"s0": (1, 31)}, [17, 5, 5]) == [{"s0": 5}, {"s0": 17}]
    assert len(enumerate_sizes("f", {"a": (1, 2), "b": (4, 6)})) == 6
    with pytest.raises(
        qopt.QoptError, match=r"\[40\] of method 'f' are outside the range \[1, 31\]"
    ):
        enumerate_sizes("f", {"s0": (1, 31)}, [40])
    with pytest.raises(qopt.QoptError, match="give dynamic_sizes as a dict"):
        enumerate_sizes("f", {"a": (1, 2), "b": (1, 2)}, [1])
    with pytest.raises(qopt.QoptError, match="more than 64"):
        enumerate_sizes("f", {"a": (1, 16), "b": (1, 16)})
    names = [variant_name("prefill", [1]), variant_name("prefill", [5]), "decode"]
    assert names[:2] == ["prefill__1", "prefill__5"]
    assert logical_methods(names) == ["prefill", "decode"]
    shapes = {"prefill__1": [(1, 1)], "prefill__5": [(1, 5)], "decode": [(1, 1)]}
    assert pick_function("prefill", names, shapes.__getitem__, [(1, 5)]) == "prefill__5"
    with pytest.raises(qopt.QoptError, match="compiled for the sizes 1, 5 of its dynamic dims"):
        pick_function("prefill", names, shapes.__getitem__, [(1, 3)])


@pytest.mark.parametrize(
    "target,scheme,update",
    [
        ("vulkan", "w4g32", "index_copy"),
        ("vulkan", "float", "narrow"),
        ("coreml", "w4g32", "narrow"),
    ],
)
def test_dynamic_prefill_on_the_targets(target: str, scheme: str, update: str) -> None:
    """T4 on the targets: a `Dim("seq", 1..31)` prefill (the index_copy_ cache form, or
    `.item()` + `narrow(...).copy_`, expand_dynamic_windows) and a one-token decode
    compiled at sizes 1, 5 and 17; prompts of those lengths (and of 12, in chunks)
    then decode to 32 tokens (6 new ones on CoreML, whose package is interpreted),
    equal to torch eager's."""
    if target == "vulkan":
        from qopt.backends.vulkan.runtime import vulkan_available

        if (reason := vulkan_available()) is not None:
            print(f"Vulkan part skipped: {reason}")
            pytest.skip(reason)
    example = (torch.tensor([[5, 9, 2, 33, 7]]), torch.arange(5))
    model = apply_scheme(build_kv_llama(update=update, **CONFIG), scheme, example)
    seq = torch.export.Dim("seq", min=1, max=31)
    prefill = _export(model, *example, dynamic_shapes=({1: seq}, {0: seq}))
    decode = _export(model, torch.tensor([[1]]), torch.tensor([0]))
    methods = {"prefill": prefill, "decode": decode}
    artifact = qopt.compile(methods, target, dynamic_sizes=[1, 5, 17])
    assert artifact.methods == ["prefill", "decode"]
    if target == "coreml":
        tmp = tempfile.mkdtemp(prefix="qopt-variants-")
        artifact = qopt.load(artifact.save(os.path.join(tmp, "m.mlpackage")))
        assert artifact.methods == ["prefill", "decode"]
    session = artifact.session()
    eager = copy.deepcopy(model)

    def torch_step(tokens: np.ndarray, positions: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return eager(torch.from_numpy(tokens), torch.from_numpy(positions)).numpy()

    for length in (1, 5, 17, 12):  # 12: not compiled, prefilled as 5 + 5 + 1 + 1
        prompt = [(7 * i + length) % 64 for i in range(length)]
        new = 32 - length if target == "vulkan" else 6
        want = _greedy(torch_step, prompt, new)
        session.reset()
        assert qopt.generate(session, prompt, new) == want, length
    with pytest.raises(qopt.QoptError, match="compiled for the sizes 1, 5, 17"):
        session.run(np.array([[1, 2]]), np.arange(2), method="prefill")
    if target == "vulkan" and update == "narrow":  # torch's range check, on the device
        with pytest.raises(qopt.QoptError, match=r"\('u\d+ <= 39'\): a run-time check"):
            session.run(np.array([[1]]), np.array([40]), method="decode")


def test_expand_dynamic_windows_keeps_the_results() -> None:
    """expand_dynamic_windows (item, dynamic_slice, dynamic_update_slice as run-time
    indices) on the narrow-form decoder: the interpreter gives the same logits and
    caches before and after, and the same error for a position beyond the cache."""
    from qopt.context import print_module
    from qopt.lowering.dynamic_windows import expand_dynamic_windows

    model = build_kv_llama(update="narrow", **CONFIG)
    module = qopt.import_program(_export(model, torch.tensor([[1]]), torch.tensor([0])))
    before = qopt.session(module)
    expanded = qopt.import_program(_export(model, torch.tensor([[1]]), torch.tensor([0])))
    expand_dynamic_windows(expanded)
    text = print_module(expanded)
    assert "aten.item" not in text
    assert "dynamic_update_slice" not in text
    assert text.count("aten.index_copy") == 4
    assert text.count("aten.assert_scalar") == 3
    after = qopt.session(expanded)
    for token, pos in ((3, 0), (7, 1), (11, 5)):
        args = (np.array([[token]]), np.array([pos]))
        np.testing.assert_array_equal(before.run(*args)[0], after.run(*args)[0])
    for name in before.state_names:
        np.testing.assert_array_equal(before.read_state(name), after.read_state(name))
    with pytest.raises(qopt.QoptError, match=r"assertion failed: 'u\d+ <= 39'$"):
        after.run(np.array([[3]]), np.array([40]))


def test_qopt_opt_imports_size_variants(tmp_path, capsys) -> None:
    """`-f 'pt2{dynamic_sizes=2,5}'` imports a Dim-exported `.pt2` as `@forward__2` and
    `@forward__5`, which the Vulkan pipeline compiles; without it the pipeline's
    error says how to get them (qopt-opt's main, in this process)."""
    from qopt.tools.qopt_opt import main as opt_main

    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU())
    dim = torch.export.Dim("n", min=1, max=16)
    ep = _export(model, torch.randn(1, 3, 8), dynamic_shapes=({1: dim},))
    path = str(tmp_path / "m.pt2")
    torch.export.save(ep, path)
    opt_main([path, "-f", "pt2{dynamic_sizes=2,5}", "-p", "qopt-vulkan"])
    out = capsys.readouterr().out
    assert re.search(r"func.func @forward__2\(%\w+: tensor<1x2x8xf32>\)", out)
    assert re.search(r"func.func @forward__5\(%\w+: tensor<1x5x8xf32>\)", out)
    with pytest.raises(SystemExit) as exit_info:
        opt_main([path, "-p", "qopt-vulkan"])
    assert exit_info.value.code == 1
    assert "-f 'pt2{dynamic_sizes=1,8,64}'" in capsys.readouterr().err


def test_qopt_run_picks_the_variant(tmp_path) -> None:
    """qopt-run on a `.qvk` (or an `.mlpackage`) compiled at sizes 2 and 5: `--inputs`
    of length 5 run `forward__5` (`--method forward`), equal to torch; length 3 is the
    error listing the sizes."""
    import subprocess
    import sys

    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU())
    dim = torch.export.Dim("n", min=1, max=16)
    ep = _export(model, torch.randn(1, 3, 8), dynamic_shapes=({1: dim},))
    x = np.random.default_rng(0).standard_normal((1, 5, 8)).astype(np.float32)
    np.savez(tmp_path / "in5.npz", x)
    np.savez(tmp_path / "in3.npz", x[:, :3])
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    run = os.path.join(os.path.dirname(sys.executable), "qopt-run")
    from qopt.backends.vulkan.runtime import vulkan_available

    # the .qvk on the device, else the .mlpackage (qopt-run reads both the same way)
    if (reason := vulkan_available()) is None:
        paths = [(str(tmp_path / "m.qvk"), "vulkan", ["--device", "vulkan"])]
    else:
        print(f"Vulkan part skipped: {reason}")
        paths = [(str(tmp_path / "m.mlpackage"), "coreml", [])]
    for path, target, extra in paths:
        qopt.compile(ep, target, dynamic_sizes=[2, 5]).save(path)
        out = str(tmp_path / f"{target}.npz")
        args = [run, path, "--inputs", str(tmp_path / "in5.npz"), "--method", "forward"]
        done = subprocess.run([*args, *extra, "--outputs", out], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        np.testing.assert_allclose(np.load(out)["arr_0"], want, rtol=1e-5, atol=1e-6)
        args = [run, path, "--inputs", str(tmp_path / "in3.npz"), *extra]
        done = subprocess.run(args, capture_output=True, text=True)
        assert done.returncode == 1
        assert "compiled for the sizes 2, 5" in done.stderr, done.stderr
