"""numpy semantics of the `qfused` dialect, written directly from each op's
definition (quantize the activation, integer-valued products against the
unpacked weight, scale, bias, clamp, requantize) rather than by re-running the
unfused quant/aten ops: the equivalence tests of `fuse-quant` compare the two.

Accumulation is in float64, so a fused op is at least as accurate as the float32
graph it replaces; results are rounded to the result type.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects.builtin import FloatAttr
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import Attribute, SSAValue

from qopt.dialects import qfused
from qopt.dialects.dtypes import numpy_dtype
from qopt.interpreters.aten_nn import conv2d
from qopt.interpreters.common import checked_indices, dtype_of

F32 = np.float32


def _per_element(params: np.ndarray, block: tuple[int, ...], shape: tuple[int, ...]) -> np.ndarray:
    """Block parameters (shape = shape / block) repeated to `shape`."""
    out = params
    for axis, b in enumerate(block):
        if b > 1:
            out = np.repeat(out, b, axis=axis)
    return out


def unpack_weight(
    scheme: Attribute, data: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None
) -> np.ndarray:
    """The weight as float64 values (`(data - zero_point) * scale`, or the LUT entries)."""
    if isinstance(scheme, qfused.LutWeightAttr):
        shape = data.shape
        block = tuple(d if b == -1 else b for b, d in zip(scheme.block_size, shape, strict=True))
        index = tuple(
            (np.arange(d) // b).reshape([-1 if j == i else 1 for j in range(len(shape))])
            for i, (d, b) in enumerate(zip(shape, block, strict=True))
        )
        return scale[(*index, data.astype(np.int64), 0)].astype(np.float64)
    assert isinstance(scheme, qfused.AffineWeightAttr)
    block = scheme.block_size
    values = data.astype(np.float64)
    if zero_point is not None:
        values = values - _per_element(zero_point.astype(np.float64), block, data.shape)
    return values * _per_element(scale.astype(np.float64), block, data.shape)


def quantize_static(x: np.ndarray, act: qfused.StaticQParamsAttr) -> np.ndarray:
    """PT2E per-tensor quantization: `clamp(rne(x * f32(1/scale)) + zp)`, in f32."""
    inv = F32(1.0 / act.scale.value.data)
    q = np.round(x.astype(F32) * inv) + F32(act.zero_point.data)
    return np.clip(q, act.qmin.data, act.qmax.data).astype(np.int64)


def dynamic_qparams(x: np.ndarray, act: qfused.DynamicQParamsAttr) -> tuple[np.ndarray, np.ndarray]:
    """Per-token (last dim) or per-tensor scale and zero point, as
    `quant.choose_qparams` computes them (in f32, scale rounded to scale_type)."""
    xf = x.astype(F32)
    if act.granularity.data == "per_token":
        lo, hi = xf.min(axis=-1, keepdims=True), xf.max(axis=-1, keepdims=True)
    else:
        lo, hi = xf.min(keepdims=True), xf.max(keepdims=True)
    qmin, qmax = act.qmin.data, act.qmax.data
    mn, mx = np.minimum(lo, F32(0)), np.maximum(hi, F32(0))
    eps = F32(act.eps.value.data)
    if act.mapping.data == "asymmetric":
        scale = np.maximum((mx - mn) / F32(qmax - qmin), eps)
        zp = np.clip(qmin - np.round(mn / scale), qmin, qmax)
    else:
        if act.mapping.data == "symmetric":
            scale = np.maximum(-mn, mx) / F32((qmax - qmin) / 2)
        else:
            smin, smax = mn / F32(qmin), mx / F32(qmax)
            scale = np.where(smin > smax, smin, smax)
        scale = np.maximum(scale, eps)
        zp = np.full_like(scale, int((qmax + qmin + 1) / 2))
    return scale.astype(numpy_dtype(act.scale_type)), zp.astype(np.int64)


def quantize_dynamic(
    x: np.ndarray, scale: np.ndarray, zp: np.ndarray, act: qfused.DynamicQParamsAttr
) -> np.ndarray:
    inv = (np.asarray(1.0, scale.dtype) / scale).astype(F32)
    q = np.round(x.astype(F32) * inv) + zp.astype(F32)
    return np.clip(q, act.qmin.data, act.qmax.data).astype(np.int64)


def activation_values(x: np.ndarray, act: Attribute | None) -> np.ndarray:
    """The float64 values the op computes with: the input itself (weight-only),
    or its quantized integers scaled back, `(q - zp) * f32(scale)`."""
    if act is None:
        return x.astype(np.float64)
    if isinstance(act, qfused.StaticQParamsAttr):
        q = x.astype(np.int64) if x.dtype.kind in "iu" else quantize_static(x, act)
        return (q - act.zero_point.data).astype(np.float64) * float(F32(act.scale.value.data))
    assert isinstance(act, qfused.DynamicQParamsAttr)
    scale, zp = dynamic_qparams(x, act)
    q = quantize_dynamic(x, scale, zp, act)
    return (q - zp).astype(np.float64) * scale.astype(F32).astype(np.float64)


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
        w = unpack_weight(op.weight_scheme, v["weight"], v["scale"], v.get("zero_point"))
        x = activation_values(v["input"], op.act)
        y = conv2d(
            x,
            w,
            v["bias"].astype(np.float64) if "bias" in v else None,
            tuple(op.stride.get_values()),
            tuple(op.padding.get_values()),
            tuple(op.dilation.get_values()),
            op.groups.value.data,
        )
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
        block = scheme.block_size
        data = v["weight"][rows].astype(out_dtype)
        scale = _per_element(v["scale"], block, v["weight"].shape)[rows].astype(out_dtype)
        if "zero_point" in v:
            zp = _per_element(v["zero_point"], block, v["weight"].shape)[rows].astype(out_dtype)
            data = data - zp
        return ((data * scale).astype(out_dtype),)

    @impl(qfused.AddOp)
    def run_add(
        self, interpreter: Interpreter, op: qfused.AddOp, args: PythonValues
    ) -> PythonValues:
        a, b = (np.asarray(x) for x in args)

        def dequant(x: np.ndarray, act: qfused.StaticQParamsAttr) -> np.ndarray:
            q = x.astype(np.int64) if x.dtype.kind in "iu" else quantize_static(x, act)
            return (q - act.zero_point.data).astype(F32) * F32(act.scale.value.data)

        lhs, rhs = dequant(a, op.lhs_act), dequant(b, op.rhs_act)
        if op.alpha is not None:
            rhs = rhs * F32(op.alpha.value.data)
        return (finish(lhs + rhs, op.result, op.requant, op.clamp_min, op.clamp_max),)
