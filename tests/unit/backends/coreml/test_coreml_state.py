"""Stateful programs on CoreML: compile -> save -> read back -> decode, against torch.

An ExecuTorch-style decoder (qopt/examples.py `build_kv_llama`: KV caches in
buffers written by `index_put` / `index_copy` at run-time positions,
`repeat_interleave` GQA, `mask[input_pos]`) is compiled to an iOS18 package whose
caches are Core ML states (`read_state` / `coreml_update_state`), saved, read
back without Core ML (qopt/backends/coreml/reader.py) and run in qopt's
interpreter, 32 greedy tokens per run, as a device would run it.

Tolerances: Core ML packages hold fp16 states only, so the caches are rounded to
fp16 between calls (qopt/lowering/convert_to_coreml/state.py); logits stay within
1e-3 of torch eager (measured ~1e-4) for float and weight-only schemes. 8da4w
computes its activations in float on Core ML (documented), so its logits differ
by the activation quantization error: within 5e-2 (measured 1.2e-2). The tokens
are compared exactly; a divergence fails with its step.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import shutil
from typing import Any

import numpy as np
import pytest
import torch
from shared_exports import process_tempdir
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

import qopt
from qopt.backends.coreml import CoremlArtifact, load_mlpackage_artifact
from qopt.backends.coreml.emitter import build_programs, state_names_of
from qopt.backends.coreml.reader import STATES_METADATA, read_mlpackage
from qopt.backends.coreml.size import weight_file
from qopt.context import make_context, parse_module
from qopt.dialects import coreml
from qopt.dialects import ml_program as mlp
from qopt.examples import apply_scheme, build_kv_llama
from qopt.lowering.convert_to_coreml import ConvertToCoremlPass

CONFIG = {"vocab_size": 64, "dim": 32, "n_layers": 2, "n_heads": 4, "hidden_dim": 64,
          "max_seq_len": 40}  # fmt: skip
CACHES = [f"layers.{i}.attention.{c}" for i in range(2) for c in ("k_cache", "v_cache")]
_TMP = process_tempdir("qopt-coreml-state-")


def _export(model: torch.nn.Module, *inputs: torch.Tensor) -> torch.export.ExportedProgram:
    with torch.no_grad():
        return torch.export.export(copy.deepcopy(model), inputs, strict=False)


@functools.cache
def _model(update: str, scheme: str, example: tuple[int, ...] = (1,)) -> torch.nn.Module:
    tokens = torch.tensor([list(example)])
    positions = torch.arange(len(example))
    return apply_scheme(build_kv_llama(update=update, **CONFIG), scheme, (tokens, positions))


@functools.cache
def _package(update: str, scheme: str) -> tuple[str, CoremlArtifact]:
    """(saved package, artifact) of the decoder's one-token call."""
    model = _model(update, scheme)
    ep = _export(model, torch.tensor([[1]]), torch.tensor([0]))
    artifact = qopt.compile(ep, target="coreml", compute_precision="fp32")
    path = artifact.save(os.path.join(_TMP, f"{update}-{scheme}.mlpackage"))
    return path, artifact


def _greedy_torch(model: torch.nn.Module, prompt: int, steps: int):
    model = copy.deepcopy(model)
    tokens, logits, token = [], [], prompt
    with torch.no_grad():
        for pos in range(steps):
            out = model(torch.tensor([[token]]), torch.tensor([pos])).numpy()
            logits.append(out)
            token = int(out[0, -1].argmax())
            tokens.append(token)
    return tokens, logits


def _greedy(session: Any, prompt: int, steps: int):
    tokens, logits, token = [], [], prompt
    for pos in range(steps):
        (out,) = session.run(np.array([[token]]), np.array([pos]))
        logits.append(out)
        token = int(out[0, -1].argmax())
        tokens.append(token)
    return tokens, logits


def _ops(module: ModuleOp, cls: type) -> list[Any]:
    return [op for op in module.walk() if isinstance(op, cls)]


@pytest.mark.parametrize(
    ("update", "scheme"),
    [
        ("index_put", "float"),
        ("index_copy", "float"),
        ("index_put", "w4g32"),
        ("index_copy", "w4g32"),
        ("index_put", "8da4w"),
        ("index_copy", "codebook4"),
    ],
)
def test_kv_cache_decode_package_matches_torch(update: str, scheme: str) -> None:
    """The package declares one fp16 state per cache (named after the buffer), its
    MIL reads and updates each once, and the package read back generates torch
    eager's 32 greedy tokens."""
    path, _ = _package(update, scheme)
    artifact = load_mlpackage_artifact(path)
    module = artifact.module
    states = {g.sym_name.data: g for g in mlp.globals_of(module)}
    assert list(states) == CACHES
    assert all(str(g.type) == "tensor<1x2x40x8xf16>" and g.value is None for g in states.values())
    assert sorted(op.state_name for op in _ops(module, coreml.ReadStateOp)) == sorted(CACHES)
    updates = _ops(module, coreml.CoremlUpdateStateOp)
    assert sorted(op.state_name for op in updates) == sorted(CACHES)
    assert len(_ops(module, coreml.ScatterOp)) == 4
    assert artifact.methods == ["forward"]

    want_tokens, want_logits = _greedy_torch(_model(update, scheme), 3, 32)
    got_tokens, got_logits = _greedy(artifact.session(), 3, 32)
    first = next((i for i, (g, w) in enumerate(zip(got_tokens, want_tokens)) if g != w), None)
    assert first is None, f"first divergent step {first}: {got_tokens} != {want_tokens}"
    worst = max(float(np.abs(g - w).max()) for g, w in zip(got_logits, want_logits, strict=True))
    assert worst < (5e-2 if scheme == "8da4w" else 1e-3), worst


def test_package_states_and_metadata() -> None:
    """The spec declares the states (fp16, MIL names made identifiers) and maps them
    back to the buffers' names in its metadata."""
    from coremltools.proto import Model_pb2

    path, artifact = _package("index_put", "float")
    spec = Model_pb2.Model()
    with open(os.path.join(path, "Data", "com.apple.CoreML", "model.mlmodel"), "rb") as f:
        spec.ParseFromString(f.read())
    declared = {s.name: s.type.stateType.arrayType for s in spec.description.state}
    mil_names = [name.replace(".", "_") for name in CACHES]
    assert sorted(declared) == sorted(mil_names)
    assert all(list(a.shape) == [1, 2, 40, 8] for a in declared.values())
    assert all(
        a.dataType == Model_pb2.FeatureTypes__pb2.ArrayFeatureType.FLOAT16
        for a in declared.values()
    )
    names = json.loads(spec.description.metadata.userDefined[STATES_METADATA])
    assert names == dict(zip(mil_names, CACHES, strict=True))
    assert state_names_of(artifact.module) == dict(zip(CACHES, mil_names, strict=True))
    ops = [
        op.type
        for op in spec.mlProgram.functions["main"].block_specializations["CoreML8"].operations
    ]
    assert ops.count("read_state") == 4
    assert ops.count("write_state") == 4


def test_sessions_are_independent_and_reset() -> None:
    """Two sessions of one artifact keep their own states; reset() starts over; a
    call of the artifact itself runs on a fresh state."""
    _, artifact = _package("index_copy", "float")
    a, b = artifact.session(), artifact.session()
    first, _ = _greedy(a, 3, 5)
    k = a.read_state(CACHES[0])
    assert k.dtype == np.float16
    assert np.any(k[:, :, :5])
    assert not np.any(k[:, :, 5:])
    assert not np.any(b.read_state(CACHES[0]))
    assert _greedy(b, 3, 5)[0] == first
    a.reset()
    assert not np.any(a.read_state(CACHES[0]))
    assert _greedy(a, 3, 5)[0] == first
    once = artifact(np.array([[3]]), np.array([0]))[0]
    np.testing.assert_array_equal(once, artifact(np.array([[3]]), np.array([0]))[0])
    with pytest.raises(qopt.QoptError, match=r"no state named 'k_cache'"):
        a.read_state("k_cache")


@pytest.mark.parametrize("target", ["iOS16", "iOS17"])
def test_state_below_ios18_is_an_error(target: str) -> None:
    ep = _export(_model("index_put", "float"), torch.tensor([[1]]), torch.tensor([0]))
    with pytest.raises(qopt.QoptError, match=rf"from iOS18, the target is {target}") as info:
        qopt.compile(ep, target="coreml", minimum_deployment_target=target)
    assert "\n" not in str(info.value)
    assert "minimum_deployment_target='iOS18'" in str(info.value)


def test_states_as_inputs_and_outputs_below_ios18() -> None:
    """`states="io"` at iOS17 (ExecuTorch's form): the caches are the last inputs
    (named after the buffers) and outputs (`<name>_out`) of the package read back;
    the caller threads them from zeros, and 12 greedy tokens equal torch's."""
    model = _model("index_put", "w8c")  # int8 weights: iOS17 has no int4
    ep = _export(model, torch.tensor([[1]]), torch.tensor([0]))
    artifact = qopt.compile(
        ep,
        target="coreml",
        minimum_deployment_target="iOS17",
        states="io",
        compute_precision="fp32",
    )
    io_names = [c.replace(".", "_") for c in CACHES]
    assert artifact.output_names == ["linear_14", *(f"{n}_out" for n in io_names)]
    loaded = qopt.load(artifact.save(os.path.join(_TMP, "states-io.mlpackage")))
    assert loaded.state_names == []
    assert loaded.output_names == artifact.output_names  # read back from the package
    (func,) = [op for op in loaded.module.ops if isinstance(op, FuncOp)]
    assert [a.name_hint for a in func.body.block.args][2:] == io_names
    caches = [np.zeros((1, 2, 40, 8), np.float32) for _ in CACHES]
    eager = copy.deepcopy(model)
    got, want = [3], [3]
    with torch.no_grad():
        for pos in range(12):
            logits, *caches = loaded(np.array([[got[-1]]]), np.array([pos]), *caches)
            got.append(int(logits[0, -1].argmax()))
            want.append(int(eager(torch.tensor([[want[-1]]]), torch.tensor([pos]))[0, -1].argmax()))
    assert got == want


def test_prefill_and_decode_share_weights_and_states() -> None:
    """`prefill` (8 tokens) and `decode` (1 token) in one multifunction package:
    weights stored once, the states declared once; prefill then 24 decode calls on
    one session generate torch's tokens."""
    prompt = torch.tensor([[5, 9, 2, 33, 7, 1, 60, 12]])
    model = _model("index_copy", "w4g32", tuple(prompt[0].tolist()))
    prefill = _export(model, prompt, torch.arange(8))
    decode = _export(model, torch.tensor([[1]]), torch.tensor([0]))
    artifact = qopt.compile(
        {"prefill": prefill, "decode": decode}, target="coreml", compute_precision="fp32"
    )
    assert artifact.methods == ["prefill", "decode"]
    assert list(artifact.mil_programs) == ["prefill", "decode"]
    path = artifact.save(os.path.join(_TMP, "prefill-decode.mlpackage"))
    single = qopt.compile(decode, target="coreml", compute_precision="fp32").save(
        os.path.join(_TMP, "decode.mlpackage")
    )
    assert weight_file(path).payload <= weight_file(single).payload

    loaded = load_mlpackage_artifact(path)
    assert loaded.methods == ["prefill", "decode"]
    assert [g.sym_name.data for g in mlp.globals_of(loaded.module)] == CACHES
    session = loaded.session()
    eager = copy.deepcopy(model)
    with torch.no_grad():
        want = [int(eager(prompt, torch.arange(8))[0, -1].argmax())]
        for pos in range(8, 32):
            want.append(int(eager(torch.tensor([[want[-1]]]), torch.tensor([pos]))[0, -1].argmax()))
    (logits,) = session.run(prompt.numpy(), np.arange(8), method="prefill")
    got = [int(logits[0, -1].argmax())]
    for pos in range(8, 32):
        (logits,) = session.run(np.array([[got[-1]]]), np.array([pos]), method="decode")
        got.append(int(logits[0, -1].argmax()))
    assert got == want
    copied = loaded.save(os.path.join(_TMP, "copied.mlpackage"))
    assert load_mlpackage_artifact(copied).methods == ["prefill", "decode"]


_COUNTER = """
ml_program.global private mutable @step.count : tensor<i64>
func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
  %n = ml_program.global_load @step.count : tensor<i64>
  %one = arith.constant dense<1> : tensor<i64>
  %m = aten.add %n, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
  ml_program.global_store @step.count = %m : tensor<i64>
  %f = aten.add %x, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %f : tensor<2xf32>
}
"""


def test_states_no_package_holds_are_errors() -> None:
    """An integer state (int64 -> int32 at the coreml level, which the interpreter
    runs) and a state starting non-zero lower, but the emitter refuses both: Core
    ML packages hold fp16 states starting at zero."""
    module = parse_module(_COUNTER)
    ConvertToCoremlPass().apply(make_context(), module)
    (state,) = mlp.globals_of(module)
    assert str(state.type) == "tensor<i32>"
    session = qopt.session(module)
    for _ in range(3):
        session.run(np.ones(2, np.float32))
    assert int(session.read_state("step.count")) == 3
    with pytest.raises(
        qopt.QoptError, match=r"state @step\.count is int32; Core ML packages hold fp16"
    ):
        build_programs(module)

    text = _COUNTER.replace("@step.count : tensor<i64>", "@step.count : tensor<f32>")
    text = text.replace("tensor<i64>", "tensor<f32>").replace("dense<1>", "dense<1.0>")
    text = text.replace("mutable @step.count :", "mutable @step.count(dense<2.0> : tensor<f32>) :")
    module = parse_module(text)
    ConvertToCoremlPass().apply(make_context(), module)
    with pytest.raises(
        qopt.QoptError, match=r"state @step\.count starts with values that are not all zeros"
    ):
        build_programs(module)


_UPDATE_USED = """
ml_program.global private mutable @cache : tensor<4xf16>
func.func @forward(%x: tensor<4xf16>) -> (tensor<4xf16>, tensor<4xf16>) attributes {coreml.opset = "iOS18"} {
  %c = coreml.read_state @cache : tensor<4xf16>
  %s = coreml.add %c, %x : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  %u = coreml.coreml_update_state @cache, %s : tensor<4xf16>
  %t = coreml.mul %u, %x : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  func.return %t, %c : tensor<4xf16>, tensor<4xf16>
}
"""


def test_update_state_result_round_trips(tmp_path: Any) -> None:
    """A used `coreml_update_state` result is written as `write_state` + `read_state`
    and read back as an update followed by a read: the same values, call after call;
    without qopt's metadata a state keeps its MIL name."""
    from qopt.backends.coreml import save_mlpackage

    module = parse_module(_UPDATE_USED)
    path = save_mlpackage(build_programs(module), tmp_path / "m.mlpackage", "iOS18")
    back = read_mlpackage(path)
    assert [g.sym_name.data for g in mlp.globals_of(back)] == ["cache"]
    x = np.array([1, 2, 3, 4], np.float16)
    want, got = qopt.session(module), qopt.session(back)
    for _ in range(3):
        for a, b in zip(want.run(x), got.run(x), strict=True):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(got.read_state("cache"), 3 * x)


def test_reader_refuses_bad_state_metadata(tmp_path: Any) -> None:
    from coremltools.proto import Model_pb2

    path, _ = _package("index_put", "float")
    spec_path = os.path.join(path, "Data", "com.apple.CoreML", "model.mlmodel")
    for bad, message in (
        ("[1, 2]", "is not a JSON object"),
        ('{"layers_0_attention_k_cache": 3}', "has a name qopt does not read"),
        ('{"a": "x", "b": "x"}', "gives two states one name"),
        ('{"nope": "x"}', "names states the functions do not have"),
    ):
        copy_path = tmp_path / f"bad{len(message)}.mlpackage"
        shutil.copytree(path, copy_path)
        spec = Model_pb2.Model()
        target = os.path.join(copy_path, os.path.relpath(spec_path, path))
        with open(target, "rb") as f:
            spec.ParseFromString(f.read())
        spec.description.metadata.userDefined[STATES_METADATA] = bad
        with open(target, "wb") as f:
            f.write(spec.SerializeToString())
        with pytest.raises(qopt.QoptError, match=message):
            read_mlpackage(copy_path)


def test_qopt_opt_writes_states(tmp_path: Any) -> None:
    """`qopt-opt -t mlpackage` of a coreml module with states, read back by qopt-opt."""
    from qopt.tools.qopt_opt import main as opt_main

    source = tmp_path / "state.mlir"
    source.write_text(_UPDATE_USED)
    out = tmp_path / "state.mlpackage"
    opt_main([str(source), "-t", "mlpackage", "-o", str(out)])
    back = read_mlpackage(out)
    funcs = [op for op in back.ops if isinstance(op, FuncOp)]
    assert [f.sym_name.data for f in funcs] == ["forward"]
    assert len(_ops(back, coreml.CoremlUpdateStateOp)) == 1


@pytest.mark.parametrize("scheme", ["float", "w4g32", "8da4w"])
def test_fp16_compute_keeps_fp16_caches(scheme: str) -> None:
    """T6: with fp16 compute (the default, as `ct.convert`) the whole decode runs in
    fp16 (states, cache writes, attention); the package read back is compared with
    torch eager's fp32 tokens and the first divergent step, if any, is reported
    (fp16 rounding may legitimately flip a near-tie late in the run; the first steps
    must agree; measured: float, w4g32 and 8da4w generate torch's 32 tokens)."""
    model = _model("index_put", scheme)
    artifact = qopt.compile(_export(model, torch.tensor([[1]]), torch.tensor([0])), "coreml")
    assert artifact.compute_precision == "fp16"
    path = artifact.save(os.path.join(_TMP, f"fp16-{scheme}.mlpackage"))
    loaded = load_mlpackage_artifact(path)
    states = mlp.globals_of(loaded.module)
    assert [str(g.type) for g in states] == ["tensor<1x2x40x8xf16>"] * 4
    to_fp32 = [op for op in _ops(loaded.module, coreml.CastOp) if "fp32" in str(op.dtype)]
    assert all(use.operation.name == "func.return" for op in to_fp32 for use in op.results[0].uses)
    want, _ = _greedy_torch(model, 3, 32)
    got, _ = _greedy(loaded.session(), 3, 32)
    first = next((i for i, (g, w) in enumerate(zip(got, want, strict=True)) if g != w), None)
    print(f"fp16 {scheme}: first divergent step {first} of 32")
    assert first is None or first >= 8, (first, got, want)


def test_fp16_prefill_and_decode_package() -> None:
    """The multifunction KV-cache decoder at the default fp16 compute: prefill (8
    tokens) then 24 decode calls on one session, against torch eager's fp32 greedy
    tokens; the first divergent step, if any, is reported (a near-tie fp16 rounding
    flips; the first steps must agree; measured: torch's 25 tokens)."""
    prompt = torch.tensor([[5, 9, 2, 33, 7, 1, 60, 12]])
    model = _model("index_copy", "w4g32", tuple(prompt[0].tolist()))
    methods = {
        "prefill": _export(model, prompt, torch.arange(8)),
        "decode": _export(model, torch.tensor([[1]]), torch.tensor([0])),
    }
    artifact = qopt.compile(methods, target="coreml")
    path = artifact.save(os.path.join(_TMP, "fp16-prefill-decode.mlpackage"))
    session = load_mlpackage_artifact(path).session()
    eager = copy.deepcopy(model)
    with torch.no_grad():
        want = [int(eager(prompt, torch.arange(8))[0, -1].argmax())]
        for pos in range(8, 32):
            want.append(int(eager(torch.tensor([[want[-1]]]), torch.tensor([pos]))[0, -1].argmax()))
    (logits,) = session.run(prompt.numpy(), np.arange(8), method="prefill")
    got = [int(logits[0, -1].argmax())]
    for pos in range(8, 32):
        (logits,) = session.run(np.array([[got[-1]]]), np.array([pos]), method="decode")
        got.append(int(logits[0, -1].argmax()))
    first = next((i for i, (g, w) in enumerate(zip(got, want, strict=True)) if g != w), None)
    print(f"fp16 prefill + decode: first divergent step {first} of {len(want)}")
    assert first is None or first >= 8, (first, got, want)
