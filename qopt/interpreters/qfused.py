"""numpy semantics of the `qfused` dialect, written directly from each op's
definition (quantize the activation, integer-valued products against the
unpacked weight, scale, bias, clamp, requantize) rather than by re-running the
unfused quant/aten ops: the equivalence tests of `fuse-quant` compare the two.
The quantization steps themselves are `qopt.numerics.quant`'s, the same the
`quant` interpreter and the Vulkan kernels' references use.

A statically quantized activation against 8-bit per-channel weights (PT2E
static) is computed in its integer form: exact integer sums, then
`f32(acc) * f32(in_scale * w_scale) (+ bias)` in f32, in that order, then the clamp
and torch's requantization (`rne(y * f32(1 / scale)) + zp`): what the Vulkan
kernels compute, bit for bit. Every other scheme accumulates in float64, so a fused
op is at least as accurate as the float32 graph it replaces; results are rounded to
the result type.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects.builtin import FloatAttr
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Attribute, SSAValue

from qopt.dialects import qfused
from qopt.dialects.tensors import dtype_of
from qopt.dtypes import numpy_dtype
from qopt.interpreters.aten_nn import conv2d
from qopt.interpreters.common import checked_indices
from qopt.numerics.quant import (
    choose_qparams,
    dequantize,
    dequantize_codebook,
    expand_params,
    quantize,
)

F32 = np.float32


def unpack_weight(
    scheme: Attribute, data: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None
) -> np.ndarray:
    """The weight as float64 values (`(data - zero_point) * scale`, or the LUT entries)."""
    if isinstance(scheme, qfused.LutWeightAttr):
        return dequantize_codebook(data, scale, scheme.block_size, np.float64)
    assert isinstance(scheme, qfused.AffineWeightAttr)
    return dequantize(data, scale, zero_point, scheme.block_size, np.float64)


def quantize_static(x: np.ndarray, act: qfused.StaticQParamsAttr) -> np.ndarray:
    """PT2E per-tensor quantization: `clamp(rne(x * f32(1/scale)) + zp)`, in f32 (the
    scale a Python float, its reciprocal taken in double)."""
    return quantize(
        x,
        np.float64(act.scale.value.data),
        act.zero_point.data,
        None,
        act.qmin.data,
        act.qmax.data,
        np.int64,
        F32,
    )


def _act_block(x: np.ndarray, act: qfused.DynamicQParamsAttr) -> tuple[int, ...]:
    """The block of a dynamic activation quantizer: per token (last dim) or per tensor."""
    if act.granularity.data == "per_token":
        return (*([1] * (x.ndim - 1)), x.shape[-1])
    return x.shape


def dynamic_qparams(x: np.ndarray, act: qfused.DynamicQParamsAttr) -> tuple[np.ndarray, np.ndarray]:
    """Per-token (last dim) or per-tensor scale and zero point, as
    `quant.choose_qparams` computes them (in f32, scale rounded to scale_type),
    shaped to broadcast against x."""
    xf = x.astype(F32)
    return choose_qparams(
        xf,
        _act_block(xf, act),
        act.qmin.data,
        act.qmax.data,
        act.mapping.data,
        act.eps.value.data,
        numpy_dtype(act.scale_type),
        np.int64,
    )


def quantize_dynamic(
    x: np.ndarray, scale: np.ndarray, zp: np.ndarray, act: qfused.DynamicQParamsAttr
) -> np.ndarray:
    return quantize(x.astype(F32), scale, zp, None, act.qmin.data, act.qmax.data, np.int64, F32)


def activation_values(x: np.ndarray, act: Attribute | None) -> np.ndarray:
    """The float64 values the op computes with: the input itself (weight-only),
    or its quantized integers scaled back, `(q - zp) * f32(scale)`."""
    if act is None:
        return x.astype(np.float64)
    if isinstance(act, qfused.StaticQParamsAttr):
        q = x.astype(np.int64) if x.dtype.kind in "iu" else quantize_static(x, act)
        return dequantize(q, F32(act.scale.value.data), act.zero_point.data, None, np.float64)
    assert isinstance(act, qfused.DynamicQParamsAttr)
    scale, zp = dynamic_qparams(x, act)
    q = quantize_dynamic(x, scale, zp, act)
    return dequantize(q, scale.astype(F32), zp, None, np.float64)


def static_integer_form(
    op: qfused.LinearOp | qfused.Conv2dOp, v: dict[str, Any], rank: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """A statically quantized activation against 8-bit weights quantized per output
    channel with no zero point (PT2E static, XNNPACK's quantizer): the integers the
    op multiplies, `(xq - in_zp, wq)` as float64 (exact: integer-valued), and
    `ws = f32(f32(in_scale) * w_scale)` per output channel; None for any other
    scheme (then the products are float64 values of the dequantized operands)."""
    act, scheme = op.act, op.weight_scheme
    if not isinstance(act, qfused.StaticQParamsAttr) or "zero_point" in v:
        return None
    if not isinstance(scheme, qfused.AffineWeightAttr):
        return None
    data = v["weight"]
    block = tuple(scheme.block_size)
    if data.ndim != rank or block != (1, *data.shape[1:]):
        return None
    x = v["input"]
    q = x.astype(np.int64) if x.dtype.kind in "iu" else quantize_static(x, act)
    n = (q - act.zero_point.data).astype(np.float64)
    ws = F32(act.scale.value.data) * v["scale"].reshape(-1).astype(F32)
    return n, data.astype(np.float64), ws.astype(F32)


def rescale(acc: np.ndarray, ws: np.ndarray, bias: np.ndarray | None, axis: int) -> np.ndarray:
    """The integer form's float tail, in f32 and in this order (the Vulkan kernels'
    and ExecuTorch's q8ta kernels'): `f32(acc) * ws[channel] (+ bias[channel])`.
    `acc` holds exact integer sums (float64 of integers below 2^53)."""
    shape = [1] * acc.ndim
    shape[axis] = -1
    y = np.rint(acc).astype(np.int64).astype(F32) * ws.reshape(shape)
    if bias is not None:
        y = y + bias.astype(F32).reshape(shape)
    return y


def static_dequantized(x: np.ndarray, act: qfused.StaticQParamsAttr) -> np.ndarray:
    """An operand of qfused.add / qfused.mul in f32: its integers (given, or quantized
    now) dequantized as torch does, `(q - zp) * f32(scale)` in f32."""
    q = x.astype(np.int64) if x.dtype.kind in "iu" else quantize_static(x, act)
    return dequantize(q, np.float64(act.scale.value.data), act.zero_point.data, None, F32)


def finish(
    y: np.ndarray,
    result: SSAValue,
    requant: qfused.StaticQParamsAttr | None,
    clamp_min: FloatAttr | None,
    clamp_max: FloatAttr | None,
) -> np.ndarray:
    """Round to f32, clamp, and requantize when the op has an output quantizer."""
    out = y.astype(F32)
    if clamp_min is not None:
        out = np.maximum(out, F32(clamp_min.value.data))
    if clamp_max is not None:
        out = np.minimum(out, F32(clamp_max.value.data))
    if requant is not None:
        return quantize_static(out, requant).astype(dtype_of(result))
    return out.astype(dtype_of(result))


def _operands(op: Any, args: PythonValues) -> dict[str, Any]:
    """Operand values by name (optional operands may be absent)."""
    values = iter(args)
    named: dict[str, Any] = {}
    for name in ("input", "indices", "weight", "scale", "zero_point", "bias"):
        operand = getattr(op, name, None)
        if isinstance(operand, SSAValue):
            named[name] = np.asarray(next(values))
    return named


@register_impls
class QFusedFunctions(InterpreterFunctions):
    @impl(qfused.LinearOp)
    def run_linear(
        self, interpreter: Interpreter, op: qfused.LinearOp, args: PythonValues
    ) -> PythonValues:
        v = _operands(op, args)
        integer = static_integer_form(op, v, 2)
        if integer is not None:
            n, wq, ws = integer
            y = rescale(np.matmul(n, wq.T), ws, v.get("bias"), -1)
            return (finish(y, op.result, op.requant, op.clamp_min, op.clamp_max),)
        w = unpack_weight(op.weight_scheme, v["weight"], v["scale"], v.get("zero_point"))
        x = activation_values(v["input"], op.act)
        y = np.matmul(x, w.T)
        if "bias" in v:
            y = y + v["bias"].astype(np.float64)
        return (finish(y, op.result, op.requant, op.clamp_min, op.clamp_max),)

    @impl(qfused.Conv2dOp)
    def run_conv2d(
        self, interpreter: Interpreter, op: qfused.Conv2dOp, args: PythonValues
    ) -> PythonValues:
        v = _operands(op, args)
        geometry = (
            tuple(op.stride.get_values()),
            tuple(op.padding.get_values()),
            tuple(op.dilation.get_values()),
            op.groups.value.data,
        )
        integer = static_integer_form(op, v, 4)
        if integer is not None:
            n, wq, ws = integer
            y = rescale(conv2d(n, wq, None, *geometry), ws, v.get("bias"), -3)
            return (finish(y, op.result, op.requant, op.clamp_min, op.clamp_max),)
        w = unpack_weight(op.weight_scheme, v["weight"], v["scale"], v.get("zero_point"))
        x = activation_values(v["input"], op.act)
        bias = v["bias"].astype(np.float64) if "bias" in v else None
        y = conv2d(x, w, bias, *geometry)
        return (finish(y, op.result, op.requant, op.clamp_min, op.clamp_max),)

    @impl(qfused.EmbeddingOp)
    def run_embedding(
        self, interpreter: Interpreter, op: qfused.EmbeddingOp, args: PythonValues
    ) -> PythonValues:
        v = _operands(op, args)
        rows = checked_indices(v["indices"], v["weight"].shape[0], op)
        scheme = op.weight_scheme
        out_dtype = dtype_of(op.result)
        if isinstance(scheme, qfused.LutWeightAttr):
            table = unpack_weight(scheme, v["weight"], v["scale"], None)
            return (table[rows].astype(out_dtype),)
        # Dequantize only the gathered rows, in the result type (as dequantize does).
        assert isinstance(scheme, qfused.AffineWeightAttr)
        block, shape = scheme.block_size, v["weight"].shape
        scale = expand_params(v["scale"], block, shape)[rows]
        zp = expand_params(v["zero_point"], block, shape)[rows] if "zero_point" in v else None
        return (dequantize(v["weight"][rows], scale, zp, None, out_dtype),)

    @impl(qfused.AddOp)
    def run_add(
        self, interpreter: Interpreter, op: qfused.AddOp, args: PythonValues
    ) -> PythonValues:
        a, b = (np.asarray(x) for x in args)
        lhs, rhs = static_dequantized(a, op.lhs_act), static_dequantized(b, op.rhs_act)
        if op.alpha is not None:
            rhs = rhs * F32(op.alpha.value.data)
        return (finish(lhs + rhs, op.result, op.requant, op.clamp_min, op.clamp_max),)

    @impl(qfused.MulOp)
    def run_mul(
        self, interpreter: Interpreter, op: qfused.MulOp, args: PythonValues
    ) -> PythonValues:
        a, b = (np.asarray(x) for x in args)
        lhs, rhs = static_dequantized(a, op.lhs_act), static_dequantized(b, op.rhs_act)
        return (finish(lhs * rhs, op.result, op.requant, op.clamp_min, op.clamp_max),)
