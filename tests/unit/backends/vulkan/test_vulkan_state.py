"""Stateful programs on the Vulkan device: an ExecuTorch-style decoder whose KV cache
lives in state buffers on the device across calls.

Each model (tiny, seeded: `build_kv_llama` with the CONFIG of
tests/unit/frontend/test_state.py) is compiled for Vulkan, saved to a `.qvk`, loaded
back and run: its greedy tokens equal torch eager's exactly (logits within float
tolerance); sessions are independent, `reset()` reproduces a run, `prefill` and
`decode` of one bundle share the cache; a call never uploads or downloads a state,
and records its command buffer once per session. Crafted bundles (a state buffer of
the wrong size, a write into a constant, broken methods) are refused on load. Device
tests skip with the reason where there is no Vulkan device.
"""

from __future__ import annotations

import copy
import functools
import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

import qopt
from qopt.backends.vulkan import load_vulkan_artifact
from qopt.backends.vulkan.bundle import check_program, program_from_module
from qopt.backends.vulkan.registry import kernel
from qopt.errors import QoptError
from qopt.examples import apply_scheme, build_kv_llama

CONFIG = {"vocab_size": 64, "dim": 32, "n_layers": 2, "n_heads": 4, "hidden_dim": 64,
          "max_seq_len": 40}  # fmt: skip
STATES = [f"layers.{i}.attention.{c}" for i in range(2) for c in ("k_cache", "v_cache")]
PROMPT = [5, 9, 2, 33, 7, 1, 60, 12]


@pytest.fixture(scope="module")
def vulkan_device() -> None:
    from qopt.backends.vulkan.runtime import vulkan_available

    reason = vulkan_available()
    if reason is not None:
        print(f"Vulkan tests skipped: {reason}")
        pytest.skip(reason)


def _export(model: nn.Module, *inputs: torch.Tensor) -> torch.export.ExportedProgram:
    with torch.no_grad():
        return torch.export.export(copy.deepcopy(model), inputs, strict=False)


@functools.cache
def model(update: str, scheme: str) -> nn.Module:
    example = (torch.tensor([[1]]), torch.tensor([0]))
    return apply_scheme(build_kv_llama(update=update, **CONFIG), scheme, example)


@functools.cache
def decode_program(update: str, scheme: str) -> torch.export.ExportedProgram:
    return _export(model(update, scheme), torch.tensor([[1]]), torch.tensor([0]))


@functools.cache
def torch_greedy(update: str, scheme: str, prompt: int, steps: int) -> tuple[list[int], Any, Any]:
    """Torch eager's greedy tokens, logits and caches (its buffers) after `steps` calls."""
    eager = copy.deepcopy(model(update, scheme))
    tokens, logits, token = [], [], prompt
    with torch.no_grad():
        for pos in range(steps):
            out = eager(torch.tensor([[token]]), torch.tensor([pos]))
            logits.append(out.numpy())
            token = int(out[0, -1].argmax())
            tokens.append(token)
    caches = {name: buffer.numpy().copy() for name, buffer in eager.named_buffers()}
    return tokens, logits, caches


def greedy(session: Any, prompt: int, steps: int, start: int = 0) -> tuple[list[int], list]:
    tokens, logits, token = [], [], prompt
    for pos in range(start, start + steps):
        (out,) = session.run(np.array([[token]]), np.array([pos]))
        logits.append(out)
        token = int(out[0, -1].argmax())
        tokens.append(token)
    return tokens, logits


@functools.cache
def saved(update: str, scheme: str, directory: str) -> Path:
    """The decoder compiled for Vulkan and saved as a .qvk (no device needed)."""
    artifact = qopt.compile(decode_program(update, scheme), target="vulkan")
    path = Path(directory) / f"kv_{update}_{scheme}.qvk"
    artifact.save(path)
    artifact.close()
    return path


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("qvk"))


# ----- the program: the cache updated in place in state buffers -----------------------------


@pytest.mark.parametrize("update", ["index_put", "index_copy"])
def test_cache_writes_go_into_state_buffers(update: str, bundles: str) -> None:
    """In the bundle, every state buffer is written only by a scatter_dim dispatch (the
    S new rows), one per cache per call: no dispatch copies a whole cache into or out
    of a state buffer, and no state buffer is in a memory slot."""
    from qopt.backends.vulkan.bundle import read_bundle

    program = read_bundle(saved(update, "float", bundles))
    assert [s.name for s in program.states] == STATES
    assert program.method_names() == ["forward"]
    state_ids = {s.buffer for s in program.states}
    assert all(program.buffers[b]["kind"] == "state" for b in state_ids)
    assert all(s.initial is None for s in program.states)  # zeros: no blob in the file
    writers: list[str] = []
    for step in program.steps:
        name = program.kernels[step.kernel].kernel
        spec = kernel(name)
        for binding, b in zip(spec.bindings, step.buffers, strict=True):
            if b in state_ids and binding.writes:
                writers.append(name)
            if b in state_ids and name == "copy_strided":
                assert not binding.writes
    assert writers == ["scatter_dim"] * 4


# ----- on the device ---------------------------------------------------------------------------


CASES = [
    ("index_put", "float"),
    ("index_copy", "float"),
    ("index_put", "w4g32"),
    ("index_copy", "w4g32"),
    ("index_put", "8da4w"),
    ("index_copy", "codebook4"),
]


@pytest.mark.parametrize(("update", "scheme"), CASES)
def test_qvk_decode_matches_torch(vulkan_device: None, bundles: str, update: str, scheme: str):
    """32 greedy tokens from the loaded .qvk equal torch eager's; logits within float
    tolerance; the device's caches equal torch's buffers after the run."""
    want_tokens, want_logits, caches = torch_greedy(update, scheme, 3, 32)
    with load_vulkan_artifact(saved(update, scheme, bundles)) as artifact:
        assert artifact.state_names == STATES
        session = artifact.session()
        got_tokens, got_logits = greedy(session, 3, 32)
        assert got_tokens == want_tokens
        worst = max(float(np.abs(g - w).max()) for g, w in zip(got_logits, want_logits))
        assert worst < (1e-4 if scheme == "float" else 2e-2), worst
        for name in STATES:
            np.testing.assert_allclose(session.read_state(name), caches[name], atol=1e-3)


@pytest.mark.parametrize("update", ["index_put", "narrow"])
def test_decode_attends_over_the_cache_rows_in_use(
    vulkan_device: None, bundles: str, update: str
) -> None:
    """Attention reads the cache rows in use: the program computes the bound once per
    call (one mask_bound, the mask shared by the layers) and every sdpa loops to it
    (BOUNDED); decoding every position of the cache, 0 and the last row included, gives
    torch's logits, and the same bits as the program with the loop over the whole cache
    (BOUNDED = 0) at positions 0, 20 and 39."""
    artifact = qopt.compile(decode_program(update, "float"), target="vulkan")
    full = qopt.compile(decode_program(update, "float"), target="vulkan")
    names = [artifact.program.kernels[step.kernel].kernel for step in artifact.program.steps]
    assert names.count("mask_bound") == 1
    sdpa = [k for k in artifact.program.kernels if k.kernel == "sdpa"]
    assert sdpa
    assert all(k.spec["BOUNDED"] == 1 for k in sdpa)
    for entry in full.program.kernels:
        if entry.kernel == "sdpa":
            entry.spec["BOUNDED"] = 0
    steps = CONFIG["max_seq_len"]
    want_tokens, want_logits, _ = torch_greedy(update, "float", 3, steps)
    with artifact, full:
        session, whole = artifact.session(), full.session()
        token = 3
        for pos in range(steps):
            (got,) = session.run(np.array([[token]]), np.array([pos]))
            (ref,) = whole.run(np.array([[token]]), np.array([pos]))
            assert float(np.abs(got - want_logits[pos]).max()) < 1e-4, pos
            if pos in (0, 20, steps - 1):
                assert got.tobytes() == ref.tobytes(), pos
            token = want_tokens[pos]


def test_sessions_are_independent_and_reset(vulkan_device: None, bundles: str) -> None:
    want, _, _ = torch_greedy("index_put", "float", 3, 12)
    with load_vulkan_artifact(saved("index_put", "float", bundles)) as artifact:
        a, b = artifact.session(), artifact.session()
        first, _ = greedy(a, 3, 6)
        assert first == want[:6]
        assert np.any(a.read_state(STATES[0])[:, :, :6] != 0)
        assert not np.any(b.read_state(STATES[0]))
        # interleaved: each session continues its own cache
        b_first, _ = greedy(b, 3, 6)
        a_rest, _ = greedy(a, first[-1], 6, start=6)
        b_rest, _ = greedy(b, b_first[-1], 6, start=6)
        assert b_first == first
        assert a_rest == b_rest == want[6:]
        # calling the artifact runs on a fresh state and leaves the sessions alone
        before = a.read_state(STATES[1])
        (once,) = artifact(np.array([[3]]), np.array([0]))
        (again,) = artifact(np.array([[3]]), np.array([0]))
        np.testing.assert_array_equal(once, again)
        np.testing.assert_array_equal(a.read_state(STATES[1]), before)
        a.reset()
        assert not np.any(a.read_state(STATES[0]))
        again_tokens, _ = greedy(a, 3, 12)
        assert again_tokens == want
        with pytest.raises(QoptError, match=r"no state named 'nope'.*layers\.0\.attention"):
            a.read_state("nope")
        with pytest.raises(QoptError, match="no method 'decode'"):
            a.run(np.array([[3]]), np.array([0]), method="decode")
    with pytest.raises(QoptError, match="session is closed"):
        a.run(np.array([[3]]), np.array([0]))


def test_a_call_moves_no_state_and_records_once(vulkan_device: None, bundles: str) -> None:
    """The state stays on the device: a call writes only the inputs and status words
    and reads only the outputs and status words; its command buffer and pipelines are
    made once per session, not per call."""
    with load_vulkan_artifact(saved("index_copy", "float", bundles)) as artifact:
        session = artifact.session()
        greedy(session, 3, 1)
        recorded = dict(session._recorded)
        pipelines = len(artifact.device._pipelines)
        touched: list[str] = []
        for buf in session._states:
            buf.write = lambda *a, **k: touched.append("write")
            buf.read = lambda *a, **k: touched.append("read")
        greedy(session, 7, 4, start=1)
        assert touched == []
        assert session._recorded == recorded
        assert len(artifact.device._pipelines) == pipelines


@pytest.mark.parametrize("scheme", ["float", "w4g32"])
def test_prefill_then_decode_from_one_qvk(vulkan_device: None, tmp_path: Path, scheme: str):
    """`prefill` (8 tokens) and `decode` (1 token) compiled together into one .qvk:
    weights stored once, states shared; prefill then 24 decode steps equal torch."""
    prompt = torch.tensor([PROMPT])
    float_model = build_kv_llama(update="index_copy", **CONFIG)
    m = apply_scheme(float_model, scheme, (prompt, torch.arange(8)))
    prefill = _export(m, prompt, torch.arange(8))
    decode = _export(m, torch.tensor([[1]]), torch.tensor([0]))
    artifact = qopt.compile({"prefill": prefill, "decode": decode}, target="vulkan")
    single = qopt.compile(decode, target="vulkan")
    weights = sum(c.nbytes for c in artifact.program.constants)
    assert weights <= sum(c.nbytes for c in single.program.constants)
    single.close()
    assert artifact.methods == ["prefill", "decode"]
    path = tmp_path / "pd.qvk"
    artifact.save(path)
    artifact.close()

    eager = copy.deepcopy(m)
    with torch.no_grad():
        want = [int(eager(prompt, torch.arange(8))[0, -1].argmax())]
        for pos in range(8, 32):
            want.append(int(eager(torch.tensor([[want[-1]]]), torch.tensor([pos]))[0, -1].argmax()))
    with load_vulkan_artifact(path) as loaded:
        assert loaded.methods == ["prefill", "decode"]
        session = loaded.session()
        (logits,) = session.run(prompt.numpy(), np.arange(8), method="prefill")
        got = [int(logits[0, -1].argmax())]
        for pos in range(8, 32):
            (logits,) = session.run(np.array([[got[-1]]]), np.array([pos]), method="decode")
            got.append(int(logits[0, -1].argmax()))
        assert got == want
        with pytest.raises(QoptError, match="several methods"):
            session.run(prompt.numpy(), np.arange(8))
        with pytest.raises(QoptError, match=r"method decode.*shape"):
            session.run(prompt.numpy(), np.arange(8), method="decode")


def test_out_of_range_position_is_an_error(vulkan_device: None, bundles: str) -> None:
    """A cache position past max_seq_len: the scatter (and the mask lookup) flag it,
    an error naming the op, as in the interpreter."""
    with load_vulkan_artifact(saved("index_put", "float", bundles)) as artifact:
        session = artifact.session()
        with pytest.raises(QoptError, match=r"'aten\.index.*out of range"):
            session.run(np.array([[3]]), np.array([CONFIG["max_seq_len"]]))


# ----- crafted bundles ---------------------------------------------------------------------------


@functools.cache
def kv_program() -> Any:
    from qopt.context import make_context
    from qopt.lowering.pipelines import QoptVulkanPipeline

    module = qopt.import_program(decode_program("index_put", "float"))
    QoptVulkanPipeline().apply(make_context(), module)
    return program_from_module(module)


def _state_buffer(p: Any) -> int:
    return p.states[0].buffer


def _write_constant(p: Any) -> None:
    """The first scatter writes a constant buffer (large enough) instead of its state."""
    constant = _constant_id({"buffers": p.buffers})
    for step in p.steps:
        if p.kernels[step.kernel].kernel == "scatter_dim":
            step.buffers[2] = constant
            return


def _initial(p: Any, words: np.ndarray) -> None:
    p.constants.append(words)
    p.states[0].initial = len(p.constants) - 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda p: p.buffers[_state_buffer(p)].update(nbytes=4), "holds 4 bytes, a"),
        (lambda p: p.states[0].shape.append(2), "state needs 5120 bytes"),
        (lambda p: p.states[0].__setattr__("dtype", "object"), "not a tensor dtype"),
        (lambda p: p.states[1].__setattr__("buffer", _state_buffer(p)), "not its state buffer"),
        (lambda p: p.states[1].__setattr__("name", p.states[0].name), "second state named"),
        (lambda p: p.states.pop(), "a state buffer of no state"),
        (lambda p: _initial(p, np.zeros(3, np.float32)), "initial value"),
        (lambda p: _initial(p, np.zeros(640, np.int32)), "initial value"),
        (_write_constant, "writes binding out into constant buffer"),
        (lambda p: p.methods[0].steps.__setitem__(1, 3), "do not cover"),
        (lambda p: p.methods.append(copy.deepcopy(p.methods[0])), "second method"),
        (lambda p: p.methods.clear(), "no method"),
        (lambda p: p.buffers[p.inputs[0].buffer].update(method=1), "method"),
    ],
    ids=[
        "state-size",
        "state-shape",
        "state-dtype",
        "shared-state-buffer",
        "state-names",
        "orphan-state-buffer",
        "initial-size",
        "initial-dtype",
        "write-constant",
        "method-range",
        "method-names",
        "no-methods",
        "input-method",
    ],
)
def test_check_program_refuses_crafted_state(change: Any, message: str) -> None:
    check_program(kv_program(), "x.qvk")
    tampered = copy.deepcopy(kv_program())
    change(tampered)
    with pytest.raises(QoptError, match=message):
        check_program(tampered, "x.qvk")


def _qvk_edit(data: bytes, edit: Any) -> bytes:
    header = struct.Struct("<4sII")
    magic, version, size = header.unpack_from(data)
    manifest = json.loads(data[header.size : header.size + size])
    edit(manifest)
    text = json.dumps(manifest).encode()
    return header.pack(magic, version, len(text)) + text + data[header.size + size :]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda m: m["buffers"][m["states"][0]["buffer"]].update(nbytes=1024), "bytes, a"),
        (lambda m: _scatter(m)["buffers"].__setitem__(2, _constant_id(m)), "constant buffer"),
        (lambda m: m["states"][0].update(bogus=1), "corrupted manifest"),
        (lambda m: m.pop("methods"), "methods"),
    ],
    ids=["state-size", "write-constant", "state-keys", "no-methods"],
)
def test_crafted_qvk_is_refused_on_load(bundles: str, tmp_path: Path, edit: Any, message: str):
    """A .qvk whose state buffer has the wrong size, or whose dispatch writes a
    constant, is refused when read, before any device sees it (qopt-run too)."""
    from qopt.backends.vulkan.bundle import read_bundle

    pytest.importorskip("shutil").which("glslangValidator") or pytest.skip(
        "checking a bundle's SPIR-V needs glslangValidator"
    )
    path = tmp_path / "bad.qvk"
    path.write_bytes(_qvk_edit(saved("index_put", "float", bundles).read_bytes(), edit))
    with pytest.raises(QoptError, match=message):
        read_bundle(path)
    with pytest.raises(QoptError, match=message):
        load_vulkan_artifact(path)


def _constant_id(manifest: dict[str, Any]) -> int:
    """The largest constant buffer (it holds a whole cache)."""
    constants = [
        (b["nbytes"], i) for i, b in enumerate(manifest["buffers"]) if b["kind"] == "constant"
    ]
    return max(constants)[1]


def _scatter(manifest: dict[str, Any]) -> dict[str, Any]:
    """The first scatter_dim step (it writes a state buffer)."""
    kernels = [k["kernel"] for k in manifest["kernels"]]
    return next(s for s in manifest["steps"] if kernels[s["kernel"]] == "scatter_dim")
