"""Translation validation of `fuse-quant` on every built-in (model, scheme) pair.

For each pair the module is interpreted before and after the pass on fresh
random inputs (seeds distinct from the example and calibration inputs):

- op by op (`qopt.testing.fuse_and_validate`): every fused op's result against
  the unfused value it replaces, on exactly the unfused inputs (integers exact,
  up to the counted one-step rounding-boundary cases of requantized outputs;
  floats within 1e-5 relative), every surviving op against its unfused value;
- end to end: outputs within 1e-5 relative. A dynamic activation quantizer
  (pt2e_dynamic, 8da4w) can turn a last-bit float difference into a whole
  quantization step and amplify it downstream; so can a requantization that the
  op-by-op check saw land one step off on a rounding boundary. In those two
  cases only, the op-by-op check is the proof and the end-to-end difference is
  allowed.

Then the structural requirements: no dequantize (affine or codebook) is left
feeding a linear / conv2d / embedding / matmul, and each scheme names the
kernels ExecuTorch would run.
"""

from __future__ import annotations

import numpy as np
import pytest
from shared_exports import exported
from xdsl.dialects.builtin import ModuleOp, StringAttr

import qopt
from qopt import examples as E
from qopt import testing as T
from qopt.context import parse_module
from qopt.dialects import qfused
from qopt.lowering.fuse_quant import FuseQuantPass
from qopt.lowering.fuse_quant.report import kernel_counts, quant_op_count

PAIRS = [(m, s) for m in E.MODELS for s in E.SCHEMES]
SEEDS = (7001, 7002)  # examples use seed 0, calibration 1000 + 97 * seed + i
DYNAMIC = frozenset({"pt2e_dynamic", "8da4w"})

# Kernels each pair must produce; a tuple lists acceptable alternatives. (The
# convnet's classifier input is [1, 32]: per-token and per-tensor coincide, and
# K = 32 makes group-32 weights per-channel.)
_LINEAR = {
    "pt2e_static": "linear_q8ta_q8csw_q8to",
    "pt2e_dynamic": ("linear_dq8ta_q8csw", "linear_dq8ca_q8csw"),
    "w4g32": "linear_q4gsw",
    "w8c": "linear_q8csw",
    "8da4w": "linear_dq8ca_q4gsw",
    "codebook4": "linear_lut4w",
    "codebook3": "linear_lut3w",
}
_EMBEDDING = {
    "w4g32": "embedding_q4gsw",
    "w8c": "embedding_q8csw",
    "8da4w": "embedding_q4gsw",
    "codebook4": "embedding_lut4w",
    "codebook3": "embedding_lut3w",
}


def expected_kernels(model: str, scheme: str) -> list[str | tuple[str, ...]]:
    if scheme == "float":
        return []
    linear = _LINEAR[scheme]
    if model == "convnet" and scheme in ("w4g32", "8da4w"):
        linear = linear.replace("q4gsw", "q4csw")  # pyright: ignore[reportAttributeAccessIssue]
    kernels: list[str | tuple[str, ...]] = [linear]
    if model == "llama" and scheme in _EMBEDDING:
        kernels.append(_EMBEDDING[scheme])
    if model == "llama" and scheme == "pt2e_static":
        kernels.append("add_q8ta_q8ta_q8to")  # residual adds
    if model == "convnet" and scheme == "pt2e_static":
        kernels += ["conv2d_q8ta_q8csw_q8to", "add_q8ta_q8ta_q8to"]
    return kernels


def fresh_module(model: str, scheme: str) -> ModuleOp:
    return qopt.import_program(exported(model, scheme))


@pytest.mark.parametrize(("model", "scheme"), PAIRS)
def test_fused_equals_unfused(model: str, scheme: str):
    for seed in SEEDS:
        module = fresh_module(model, scheme)
        inputs = E.random_inputs(model, seed)
        result = T.fuse_and_validate(module, inputs, rtol=1e-5)
        assert not result.mismatches, "\n".join(map(str, result.mismatches))
        if scheme != "float":
            assert result.checked > 0, "nothing was fused"
        # The pass's output as the public API runs it agrees with the validated one.
        again = qopt.interpret(module, *inputs)
        for a, b in zip(again, result.outputs_after, strict=True):
            np.testing.assert_array_equal(a, b)
        if result.end_to_end:
            assert scheme in DYNAMIC or result.boundary_steps > 0, "\n".join(
                map(str, result.end_to_end)
            )


@pytest.mark.parametrize(("model", "scheme"), PAIRS)
def test_no_dequantize_feeds_an_anchor(model: str, scheme: str):
    module = fresh_module(model, scheme)
    FuseQuantPass.run(module)
    left = T.dequantized_anchor_operands(module)
    assert not left, "\n".join(left)


@pytest.mark.parametrize(("model", "scheme"), PAIRS)
def test_kernel_names(model: str, scheme: str):
    module = fresh_module(model, scheme)
    log = FuseQuantPass.run(module)
    counts = kernel_counts(module)
    for kernel in expected_kernels(model, scheme):
        names = kernel if isinstance(kernel, tuple) else (kernel,)
        assert any(counts[n] for n in names), f"no {' / '.join(names)} in {dict(counts)}"
    for op in module.walk():
        if isinstance(op, qfused.QFusedOp):
            assert op.kernel.data == op.kernel_name()
    if scheme != "pt2e_static":
        # Weight-only and dynamic schemes leave no quant op behind.
        assert quant_op_count(module) == 0, log.unfused(module)
    if model == "mlp" and scheme not in ("float", "pt2e_static"):
        assert sum(counts.values()) == 3


# ----- the validator itself ----------------------------------------------------------------


def test_validator_catches_a_wrong_float_result(monkeypatch):
    from qopt.interpreters import qfused as qfused_interp

    finish = qfused_interp.finish

    def off(y, result, requant, clamp_min, clamp_max):
        out = finish(y, result, requant, clamp_min, clamp_max)
        return out if requant is not None else (out * np.float32(1.001)).astype(out.dtype)

    monkeypatch.setattr(qfused_interp, "finish", off)
    result = T.fuse_and_validate(fresh_module("mlp", "w4g32"), E.random_inputs("mlp", 1))
    assert len(result.mismatches) == 3
    assert all("relative error" in m.detail for m in result.mismatches)
    assert result.end_to_end


def test_validator_catches_a_wrong_integer_result(monkeypatch):
    from qopt.interpreters import qfused as qfused_interp

    finish = qfused_interp.finish

    def off(y, result, requant, clamp_min, clamp_max):
        out = finish(y, result, requant, clamp_min, clamp_max)
        if requant is None:
            return out
        bumped = out.copy().reshape(-1)
        bumped[0] = bumped[0] - 1 if bumped[0] > requant.qmin.data else bumped[0] + 1
        return bumped.reshape(out.shape)

    monkeypatch.setattr(qfused_interp, "finish", off)
    result = T.fuse_and_validate(fresh_module("mlp", "pt2e_static"), E.random_inputs("mlp", 1))
    assert result.mismatches
    assert all("rounding boundary" in m.detail for m in result.mismatches)
    assert result.boundary_steps == 0


def test_validator_catches_rewiring(monkeypatch):
    """A pattern that wires a consumer to the wrong value is caught at the
    surviving consumer, whose inputs are substituted from the unfused graph."""
    run = FuseQuantPass.run

    def swap(module, log=None):
        log = run(module, log)
        fused = [op for op in module.walk() if isinstance(op, qfused.LinearOp)]
        a, b = fused[0].result, fused[1].result
        log.replaced[a], log.replaced[b] = log.replaced[b], log.replaced[a]
        return log

    monkeypatch.setattr(FuseQuantPass, "run", staticmethod(swap))
    result = T.fuse_and_validate(fresh_module("mlp", "w8c"), E.random_inputs("mlp", 1))
    assert result.mismatches


_QUANTIZE = """
func.func @forward(%x: tensor<8xf32>, %s: tensor<f32>, %z: tensor<i64>) -> tensor<8xi8> {
  %q = quant.quantize %x, %s, %z {block_size = array<i64: 8>, qmin = -128 : i64,
       qmax = 127 : i64} : (tensor<8xf32>, tensor<f32>, tensor<i64>) -> tensor<8xi8>
  func.return %q : tensor<8xi8>
}
"""


def test_boundary_steps_are_allowed_only_at_a_boundary():
    module = parse_module(_QUANTIZE)
    func = next(iter(module.ops))
    quantize = next(iter(func.regions[0].block.ops))  # pyright: ignore[reportAttributeAccessIssue]
    x_arg, s_arg, z_arg = func.regions[0].block.args  # pyright: ignore[reportAttributeAccessIssue]
    scale = np.float32(0.25)
    at = np.float32(0.875)  # 3.5 steps
    up, down = np.nextafter(at, np.float32(1)), np.nextafter(at, np.float32(0))
    # 3.5 steps + 2.4e-7, a tie, 3.5 - 2.4e-7, 10.5 - 4.8e-7, then clear of boundaries
    x = np.array(
        [up, at, down, np.nextafter(np.float32(2.625), np.float32(0)), 0.3, -1.0, 1.9, 0.0],
        dtype=np.float32,
    )
    values = {x_arg: x, s_arg: np.asarray(scale), z_arg: np.asarray(2, np.int64)}
    (want,) = qopt.interpret(module, x, np.asarray(scale), np.asarray(2, np.int64))
    got = want.copy()
    got[[0, 2, 3]] += np.array([-1, 1, 1], dtype=np.int8)  # across the nearby boundary
    n, problem = T._boundary_steps(got, want, quantize, values)
    assert (n, problem) == (3, None)
    got[1] -= 1  # the tie rounded to even (4): 3 is its other neighbour
    assert T._boundary_steps(got, want, quantize, values) == (4, None)
    away = want.copy()
    away[0] += 1  # 3.5 + 1e-7 rounded up to 4: one more step is not a boundary case
    assert T._boundary_steps(away, want, quantize, values)[1] is not None
    far = want.copy()
    far[4] += 1
    assert T._boundary_steps(far, want, quantize, values)[1] is not None


def test_kernel_attribute_is_checked():
    module = fresh_module("mlp", "w8c")
    FuseQuantPass.run(module)
    op = next(op for op in module.walk() if isinstance(op, qfused.LinearOp))
    op.properties["kernel"] = StringAttr("linear_q4gsw")
    with pytest.raises(Exception, match="kernel is 'linear_q4gsw'"):
        module.verify()
