"""The native runtime (runtime/, C) against the Python runtime: the same `.qvk` gives
bit-identical outputs (same SPIR-V, same dispatch order, same buffers and descriptors)
for every built-in model x scheme, a zoo sample and the KV-cache decoders (prefill,
decode steps, states, `qvk-run --generate` tokens = `qopt-run --generate`'s = torch's),
and it refuses what the Python loader refuses. Skipped, with the reason printed, when
there is no Vulkan device or the runtime is not built (scripts/setup.sh builds it)."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from shared_exports import kv_decoder, kv_decoder_bytes, vulkan_bytes

import qopt
from qopt.backends.vulkan.native import ROOT, NativeBundle, native_library
from qopt.examples import (
    MODELS,
    SCHEMES,
    build_kv_llama,
    random_inputs,
)

QVK_RUN = [ROOT / "build" / "runtime" / "qvk-run", ROOT / ".venv" / "bin" / "qvk-run"]


def _skip_reason() -> str | None:
    from qopt.backends.vulkan.runtime import vulkan_available

    if (reason := vulkan_available()) is not None:
        return reason
    if (reason := native_library()) is not None:
        return reason
    if not any(p.is_file() for p in QVK_RUN):
        return "qvk-run is not built (scripts/setup.sh builds it into build/runtime)"
    return None


@pytest.fixture(scope="module", autouse=True)
def _native() -> None:
    if (reason := _skip_reason()) is not None:
        print(f"native runtime tests skipped: {reason}")
        pytest.skip(reason)


def qvk_run() -> str:
    return str(next(p for p in QVK_RUN if p.is_file()))


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize(("model", "scheme"), [(m, s) for m in MODELS for s in SCHEMES])
def test_builtin_bit_identical(model: str, scheme: str, builtin_reference: Any) -> None:
    ref = builtin_reference(model, scheme)  # conftest.py: compiled and run by Python once
    data, inputs, want = ref.data, ref.inputs, ref.outputs
    with NativeBundle.from_bytes(data, "m.qvk") as bundle, bundle.session() as session:
        got = session.run(*inputs)
        again = session.run(*inputs)  # a second call on the recorded command buffer
    assert len(got) == len(want)
    for g, a, w in zip(got, again, want, strict=True):
        assert same_bits(g, w), (model, scheme)
        assert same_bits(a, w)


def test_qvk_run_writes_the_outputs(tmp_path: Path) -> None:
    """The command line of the contract: .npy in, DIR/output_i.npy out, bit-identical."""
    path = tmp_path / "llama.qvk"
    path.write_bytes(vulkan_bytes("llama", "w4g32"))
    inputs = [t.numpy() for t in random_inputs("llama", 5)]
    files = []
    for i, x in enumerate(inputs):
        files.append(str(tmp_path / f"in{i}.npy"))
        np.save(files[-1], x)
    out = tmp_path / "out"
    r = subprocess.run(
        [qvk_run(), str(path), "--input", *files, "--output-dir", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    want = qopt.load(str(path))(*inputs)
    for i, w in enumerate(want):
        assert same_bits(np.load(out / f"output_{i}.npy"), w)
    # errors: one line, exit 1, nothing written
    bad = tmp_path / "bad"
    np.save(tmp_path / "wrong.npy", np.zeros((3, 3), np.float32))
    r = subprocess.run(
        [qvk_run(), str(path), "--input", str(tmp_path / "wrong.npy"), "--output-dir", str(bad)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 1
    assert r.stderr.startswith("qvk-run: error: "), r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    assert not bad.exists()


CONFIG = {"vocab_size": 64, "dim": 32, "n_layers": 2, "n_heads": 4, "hidden_dim": 64,
          "max_seq_len": 40}  # fmt: skip
PROMPT = [5, 9, 2, 33, 7, 1, 60, 12]


def _torch_tokens(model: torch.nn.Module, prompt: list[int], new: int) -> list[int]:
    model = copy.deepcopy(model)
    with torch.no_grad():
        logits = model(torch.tensor([prompt]), torch.arange(len(prompt)))
        out = [int(logits[0, -1].argmax())]
        for position in range(len(prompt), len(prompt) + new - 1):
            logits = model(torch.tensor([[out[-1]]]), torch.tensor([position]))
            out.append(int(logits[0, -1].argmax()))
    return out


@pytest.mark.parametrize("scheme", ["float", "8da4w"])
def test_kv_decoder_bit_identical_and_tokens(scheme: str, tmp_path: Path) -> None:
    """Prefill + decode steps: logits and caches bit-identical to the Python runtime's;
    `qvk-run --generate` prints torch's tokens, as `qopt-run --generate` does."""
    model = kv_decoder(CONFIG, PROMPT, scheme)[0]  # shared with test_native_sanitized.py
    path = tmp_path / "kv.qvk"
    path.write_bytes(kv_decoder_bytes(CONFIG, PROMPT, scheme))
    python = qopt.load(str(path)).session()
    with NativeBundle.open(path) as bundle, bundle.session() as native:
        assert native.methods == python.methods
        assert native.state_names == python.state_names
        calls = [("prefill", np.array([PROMPT]), np.arange(len(PROMPT)))]
        calls += [("decode", np.array([[t]]), np.array([8 + i])) for i, t in enumerate([3, 17, 40])]
        for method, tokens, positions in calls:
            want = python.run(tokens, positions, method=method)
            got = native.run(tokens, positions, method=method)
            assert all(same_bits(g, w) for g, w in zip(got, want, strict=True)), method
        for name in python.state_names:
            assert same_bits(native.read_state(name), python.read_state(name)), name
        native.reset()
        python.reset()
        assert qopt.generate(native, PROMPT, 6) == qopt.generate(python, PROMPT, 6)
    want = _torch_tokens(model, PROMPT, 12)
    ids = ",".join(map(str, PROMPT))
    native_cli = subprocess.run(
        [qvk_run(), str(path), "--generate", "12", "--prompt-ids", ids],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert native_cli.returncode == 0, native_cli.stderr
    tokens = native_cli.stdout.strip().splitlines()[-1]
    assert [int(t) for t in tokens.split()] == want
    if scheme != "float":
        return
    python_cli = subprocess.run(
        [sys.executable, "-m", "qopt.tools.qopt_run", str(path), "--generate", "12",
         "--prompt-ids", ids, "--device", "vulkan"],
        capture_output=True, text=True, check=False, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert python_cli.returncode == 0, python_cli.stderr
    assert tokens == python_cli.stdout.strip().splitlines()[-1]


def test_size_variants_and_chunked_prefill(tmp_path: Path) -> None:
    """A Dim prefill compiled at sizes 1 and 5: the variant is picked by the inputs'
    shape, a 12-token prompt is prefilled in chunks (5 + 5 + 1 + 1), as
    qopt/generation.py does; a length not compiled is refused naming the sizes."""
    example = (torch.tensor([[5, 9, 2, 33, 7]]), torch.arange(5))
    model = build_kv_llama(update="index_copy", **CONFIG)
    seq = torch.export.Dim("seq", min=1, max=31)
    with torch.no_grad():
        prefill = torch.export.export(
            copy.deepcopy(model), example, dynamic_shapes=({1: seq}, {0: seq}), strict=False
        )
        decode = torch.export.export(
            copy.deepcopy(model), (torch.tensor([[1]]), torch.tensor([0])), strict=False
        )
    path = tmp_path / "dyn.qvk"
    qopt.compile({"prefill": prefill, "decode": decode}, "vulkan", dynamic_sizes=[1, 5]).save(
        str(path)
    )
    prompt = [(7 * i + 12) % 64 for i in range(12)]
    want = _torch_tokens(model, prompt, 8)
    r = subprocess.run(
        [qvk_run(), str(path), "--generate", "8", "--prompt-ids", ",".join(map(str, prompt))],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert [int(t) for t in r.stdout.split("\n")[-2].split()] == want
    with NativeBundle.open(path) as bundle, bundle.session() as session:
        assert session.methods == ["prefill", "decode"]
        with pytest.raises(qopt.QoptError, match="compiled for the sizes 1, 5"):
            session.run(np.array([[1, 2]]), np.arange(2), method="prefill")


def test_index_status_word_names_the_op(tmp_path: Path) -> None:
    """A token id past the vocabulary sets the embedding's status word: the same
    one-line error as the Python runtime's."""
    path = tmp_path / "llama.qvk"
    path.write_bytes(vulkan_bytes("llama", "float"))
    (tokens,) = [t.numpy() for t in random_inputs("llama", 0)]
    bad = tokens.copy()
    bad.flat[0] = 10_000
    with pytest.raises(qopt.QoptError) as python_error:
        qopt.load(str(path))(bad)
    with NativeBundle.open(path) as bundle, bundle.session() as session:
        with pytest.raises(qopt.QoptError) as native_error:
            session.run(bad)
        assert same_bits(session.run(tokens)[0], qopt.load(str(path))(tokens)[0])
    assert str(native_error.value) == str(python_error.value)


def test_host_segments_refused_naming_ops_and_option(tmp_path: Path) -> None:
    """A version-4 bundle (host fallback) needs qopt's interpreter: one clear error."""
    from qopt.dialects.aten.reduction import SortOp
    from qopt.lowering.convert_to_vkc import get_rules

    if SortOp in get_rules():
        pytest.skip("aten.sort has a Vulkan kernel now: pick another op without one")

    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(x) * torch.sort(x + 1, dim=-1).values

    # (a sort of 4096 entries: longer than qopt/lowering/compose.py writes as ranks)
    ep = torch.export.export(Model(), (torch.randn(2, 4096),))
    data = qopt.compile(ep, target="vulkan", fallback=True).to_bytes()
    with pytest.raises(qopt.QoptError) as error:
        NativeBundle.from_bytes(data, "fallback.qvk")
    message = str(error.value)
    for part in ("aten.sort", "fallback=False", "--host-fallback"):
        assert part in message
    assert "\n" not in message


def test_kernels_checked_against_the_runtime_catalogue() -> None:
    """A kernel the runtime does not carry, or SPIR-V that is not its catalogue's for the
    kernel (rehashed, so only that check can refuse it), is refused naming the kernel and
    both qopt versions; an empty kernel list with a dispatch is refused."""
    sys.path.insert(0, str(ROOT / "tests" / "unit" / "untrusted"))
    import fuzz_worker

    from qopt.version import qopt_version

    manifest, blobs, version = fuzz_worker.qvk_parse(vulkan_bytes("mlp", "float"))
    manifest["qopt_version"] = "9.9.9"
    manifest["kernels"][0]["kernel"] = "linear_q2"
    with pytest.raises(qopt.QoptError, match=rf"linear_q2.*qopt {qopt_version()}.*qopt 9\.9\.9"):
        NativeBundle.from_bytes(fuzz_worker.qvk_build(manifest, blobs, version))
    manifest, blobs, version = fuzz_worker.qvk_parse(vulkan_bytes("mlp", "float"))
    record = manifest["kernels"][0]["spirv"]
    at = record["offset"] + record["size"] - 4
    edited = blobs[:at] + bytes(b ^ 1 for b in blobs[at : at + 4]) + blobs[at + 4 :]
    with pytest.raises(qopt.QoptError, match=r"SPIR-V is not this runtime's compilation"):
        NativeBundle.from_bytes(fuzz_worker.qvk_build(manifest, edited, version))
    manifest, blobs, version = fuzz_worker.qvk_parse(vulkan_bytes("mlp", "float"))
    manifest["kernels"] = []
    with pytest.raises(qopt.QoptError, match=r"dispatch 0's kernel must be at most -1"):
        NativeBundle.from_bytes(fuzz_worker.qvk_build(manifest, blobs, version))


def test_qvk_run_device_choice(tmp_path: Path) -> None:
    """--device takes an index or a name substring, as QOPT_VULKAN_DEVICE; an unknown one
    is one line naming the devices, exit 1."""
    path = tmp_path / "mlp.qvk"
    path.write_bytes(vulkan_bytes("mlp", "float"))
    np.save(tmp_path / "x.npy", random_inputs("mlp", 2)[0].numpy())
    base = [qvk_run(), str(path), "--input", str(tmp_path / "x.npy")]
    with NativeBundle.open(path) as bundle, bundle.session() as session:
        name = session.device_name
    for choice in ("0", name.split()[0].upper()):
        r = subprocess.run([*base, "--device", choice], capture_output=True, text=True, check=False)
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("output_0: float32[4, 32]")
    r = subprocess.run(
        [*base, "--device", "no-such-gpu"], capture_output=True, text=True, check=False
    )
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1
    assert f"no Vulkan device name contains 'no-such-gpu' (devices: 0: {name}" in r.stderr
