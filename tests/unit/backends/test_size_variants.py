"""Bounded dynamic length on the static targets (issue 11, T4): a prefill exported
with `torch.export.Dim` compiles once per enumerated size (`<method>__<size>`
functions sharing weights and states); a call runs the variant of its inputs'
shapes, and a size not compiled is a QoptError listing the sizes that were."""

from __future__ import annotations

import copy
import functools
import os
import re
import tempfile
from typing import Any

import numpy as np
import pytest
import torch

import qopt
from qopt.dialects.signature import logical_methods, pick_function, variant_name
from qopt.examples import apply_scheme, build_kv_llama
from qopt.frontend.methods import enumerate_sizes

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


# ----- sizes used as values, at every size of the Dim ---------------------------


def _vulkan_or_skip() -> None:
    from qopt.backends.vulkan.runtime import vulkan_available

    if (reason := vulkan_available()) is not None:
        print(f"Vulkan part skipped: {reason}")
        pytest.skip(reason)


class _SizesAsValues(torch.nn.Module):
    """`x.shape[0]` used as a tensor value every way a size reaches an op: a scalar
    operand (`x * 2 + x.shape[0]`), a fill value, a clamp bound, `numel`, a power,
    a float buffer written with it, and `reshape(-1)` of the dynamic dim."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("seen", torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        self.seen.copy_(n)
        y = x * 2 + n
        y = y + torch.full_like(x, n) - torch.clamp(x * 10, max=n)
        y = y.reshape(-1) * x.numel() + n**2
        return y.reshape(n, 4) + self.seen + torch.full((4,), n)


class _SizesAsShapes(torch.nn.Module):
    """`x.shape[0]` as an op's size argument: a reversed `arange` (run-time start),
    an `expand` grown to it, constant padding by it (a run-time and a constant amount
    on one dim), `arange` of step 2."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        rows = torch.arange(n - 1, -1, -1, dtype=torch.float32)[:, None]
        y = x * rows + x[:1].expand(n, 4) + torch.arange(0, 2 * n, 2)[:, None]
        padded = torch.nn.functional.pad(y, (1, 0, 8 - n, 1), value=-1.0)
        return padded.sum(0)[1:] * padded[0, 1:] + y.sum(0)


@pytest.mark.parametrize("model_type", [_SizesAsValues, _SizesAsShapes])
@pytest.mark.parametrize("target", ["interpreter", "coreml", "vulkan"])
def test_sizes_used_as_values_match_torch(target: str, model_type: type, tmp_path) -> None:
    """Issue 27: `x * 2 + x.shape[0]` (and the other forms of `_SizesAsValues`)
    compiled at `dynamic_sizes=[2, 3]` failed at import ('argument sym_size_int_1
    is not a tensor value'); each size now matches torch eager, the interpreter
    at the Dim's bounds too with `?` dims (where `_SizesAsShapes` was refused),
    and `-f 'pt2{dynamic_sizes=2,3}'` imports the same variants."""
    model = model_type()
    dim = torch.export.Dim("n", min=1, max=8)
    ep = _export(model, torch.randn(3, 4), dynamic_shapes=({0: dim},))
    rng = np.random.default_rng(0)

    def want(x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return copy.deepcopy(model)(torch.from_numpy(x)).numpy()

    if target == "interpreter":
        session, sizes = qopt.session(qopt.import_program(ep)), (1, 2, 3, 8)
    else:
        if target == "vulkan":
            _vulkan_or_skip()
        exact = "fp32" if target == "coreml" else None  # tolerance 1e-6: torch's values
        artifact = qopt.compile(ep, target, dynamic_sizes=[2, 3], compute_precision=exact)
        if target == "coreml":
            artifact = qopt.load(artifact.save(str(tmp_path / "m.mlpackage")))
        session, sizes = artifact.session(), (2, 3)
    for n in sizes:
        x = rng.standard_normal((n, 4)).astype(np.float32)
        (got,) = session.run(x)
        np.testing.assert_allclose(got, want(x), rtol=1e-6, atol=1e-5, err_msg=f"size {n}")
    if target == "vulkan":
        from qopt.tools.qopt_opt import main as opt_main

        path = str(tmp_path / "m.pt2")
        torch.export.save(ep, path)
        out = str(tmp_path / "m.qvk")
        opt_main([path, "-f", "pt2{dynamic_sizes=2,3}", "-p", "qopt-vulkan", "-t", "vkbundle",
                  "-o", out])  # fmt: skip
        loaded = qopt.load(out).session()
        x = rng.standard_normal((3, 4)).astype(np.float32)
        np.testing.assert_allclose(loaded.run(x)[0], want(x), rtol=1e-6, atol=1e-5)


def _qwen2_static_cache():
    """A tiny Qwen2 (random weights, from a config) in transformers'
    `TorchExportableModuleWithStaticCache`, and a fresh copy maker for torch eager."""
    transformers = pytest.importorskip("transformers")
    from transformers.integrations.executorch import TorchExportableModuleWithStaticCache

    torch.manual_seed(0)
    config = transformers.Qwen2Config(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
    )  # fmt: skip
    model = transformers.Qwen2ForCausalLM(config).eval()
    model.generation_config = transformers.GenerationConfig(
        use_cache=True, cache_implementation="static", max_length=40,
        cache_config={"batch_size": 1, "max_cache_len": 40, "device": "cpu"},
    )  # fmt: skip

    def fresh() -> torch.nn.Module:
        return TorchExportableModuleWithStaticCache(copy.deepcopy(model))

    return fresh


def _hf_export(wrapper: torch.nn.Module, length: int, dynamic: bool):
    kwargs = {
        "input_ids": torch.arange(1, length + 1)[None],
        "cache_position": torch.arange(length),
    }
    seq = torch.export.Dim("seq", min=1, max=16)
    shapes = {"input_ids": {1: seq}, "cache_position": {0: seq}} if dynamic else None
    with torch.no_grad():
        return torch.export.export(
            wrapper, args=(), kwargs=kwargs, dynamic_shapes=shapes, strict=False
        )


@functools.cache
def _qwen2_exported() -> tuple[dict[str, Any], list[tuple[int, list[int], np.ndarray, list[int]]]]:
    """`_qwen2_static_cache()`'s two methods exported, and torch eager's references:
    (length, prompt, prefill logits, 6 greedy tokens) for lengths 1, 5 and 16. Made
    once per process for the three targets (they read the programs, never change them)."""
    fresh = _qwen2_static_cache()
    wrapper = fresh()  # both methods from one wrapper, as its buffers are shared
    prefill = _hf_export(wrapper, 4, dynamic=True)
    decode = _hf_export(wrapper, 1, dynamic=False)
    references = []
    for length in (1, 5, 16):
        prompt = [(7 * i + length) % 64 for i in range(length)]
        eager = fresh()
        with torch.no_grad():
            want = eager(input_ids=torch.tensor([prompt]), cache_position=torch.arange(length))
            tokens = [int(want[0, -1].argmax())]
            for pos in range(length, length + 5):
                step = eager(
                    input_ids=torch.tensor([[tokens[-1]]]), cache_position=torch.tensor([pos])
                )
                tokens.append(int(step[0, -1].argmax()))
        references.append((length, prompt, want.numpy(), tokens))
    return {"prefill": prefill, "decode": decode}, references


@pytest.mark.parametrize("target", ["interpreter", "coreml", "vulkan"])
def test_transformers_static_cache_prefill_with_a_dim(target: str, tmp_path) -> None:
    """Issue 22 item 6: a transformers static-cache decoder (Qwen2 shape) whose
    prefill is exported with `Dim("seq", 1..16)` as users write it, and its decode.
    The interpreter refused length 1 (an expand to the `?` length, which is 1) and
    both targets failed to import the size variants (`cumulative_length.add_(seq_len)`
    with the length a number); now prefill logits at lengths 1, 5 and 16 (the
    bounds included) and prefill + decode generation equal torch eager's."""
    methods, references = _qwen2_exported()
    if target == "interpreter":
        session = qopt.session(qopt.import_program(methods))
    else:
        if target == "vulkan":
            _vulkan_or_skip()
        exact = "fp32" if target == "coreml" else None  # torch's values and tokens
        artifact = qopt.compile(methods, target, dynamic_sizes=[1, 5, 16], compute_precision=exact)
        if target == "coreml":
            artifact = qopt.load(artifact.save(str(tmp_path / "m.mlpackage")))
        session = artifact.session()
    for length, prompt, want, tokens in references:
        session.reset()
        (got,) = session.run(np.array([prompt]), np.arange(length), method="prefill")
        np.testing.assert_allclose(got, want, atol=2e-4, rtol=0, err_msg=str(length))
        session.reset()
        assert qopt.generate(session, prompt, 6) == tokens, length
