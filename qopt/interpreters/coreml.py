"""numpy semantics of the `coreml` dialect (MIL ops, coremltools 9.0 definitions).

No Core ML runtime exists on Linux: these bodies are how qopt checks the
numerics of what it writes (and of packages read back from disk). Float ops
compute in their operands' dtype (fp32, or fp16 for fp16 programs), as Core ML
does; sub-byte integers live in int8 / uint8 containers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from qopt.dialects import coreml
from qopt.dialects.coreml import storage_dtype
from qopt.dialects.tensors import elem_of, shape_of
from qopt.interpreters.aten_layers import attention
from qopt.interpreters.aten_nn import conv2d
from qopt.interpreters.aten_reduction import softmax
from qopt.interpreters.common import checked_indices
from qopt.numerics import activations as act
from qopt.numerics.bits import unpack_bits
from qopt.numerics.quant import DIVIDE, RECIPROCAL, dequantize, lut_to_dense, quantize
from qopt.numerics.reductions import sequential_sum, torch_mean, torch_sum
from qopt.resources import elements_array


def const_array(op: coreml.ConstOp) -> np.ndarray:
    """The value of a `coreml.const` (sub-byte types in 8-bit containers)."""
    return elements_array(op.value, op, storage_dtype(elem_of(op.result)))


def _ints(attr: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in attr.get_values())


def _int(attr: Any) -> int:
    return int(attr.value.data)


def _float(attr: Any) -> float:
    return float(attr.value.data)


def _axis_params(p: np.ndarray, axis: int | None, rank: int) -> np.ndarray:
    if axis is None:
        return p.reshape(())
    shape = [1] * rank
    shape[axis] = p.size
    return p.reshape(shape)


def blockwise_shift_scale(
    data: np.ndarray, scale: np.ndarray, offset: np.ndarray | None
) -> np.ndarray:
    """iOS18 `constexpr_blockwise_shift_scale`: `scale * (data - offset)` per block
    (`block = data.shape / scale.shape`), in the scale's type."""
    block = [d // p for d, p in zip(data.shape, scale.shape, strict=True)]
    return dequantize(data, scale, offset, block, scale.dtype)


def _same(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[..., Any]:
    def body(op: coreml.CoremlOp, x: np.ndarray) -> np.ndarray:
        return fn(x).astype(x.dtype, copy=False)

    return body


_GELU_MODES = {"EXACT": "none", "TANH_APPROXIMATION": "tanh", "SIGMOID_APPROXIMATION": "sigmoid"}


def _gelu(op: Any, x: np.ndarray) -> np.ndarray:
    return act.gelu(x, _GELU_MODES[op.mode.data])


def _log(op: Any, x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):  # log(0) = -inf, log(-1) = NaN
        return np.log(x + np.asarray(_float(op.epsilon), x.dtype))


def _inverse(op: Any, x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):  # 1 / 0 = inf
        return np.asarray(1, x.dtype) / (x + np.asarray(_float(op.epsilon), x.dtype))


def _mod(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Python's `%` (coremltools' definition of MIL mod): the sign of y."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.mod(x, y)


_UNARY: dict[type, Callable[..., np.ndarray]] = {
    coreml.ReluOp: _same(lambda x: np.maximum(x, 0)),
    coreml.SiluOp: _same(act.silu),
    coreml.SigmoidOp: _same(act.sigmoid),
    coreml.TanhOp: _same(np.tanh),
    coreml.ExpOp: _same(np.exp),
    coreml.SqrtOp: _same(np.sqrt),
    coreml.SinOp: _same(np.sin),
    coreml.CosOp: _same(np.cos),
    coreml.ErfOp: _same(act.erf),
    coreml.RsqrtOp: lambda op, x: 1 / np.sqrt(x + np.asarray(_float(op.epsilon), x.dtype)),
    coreml.GeluOp: _gelu,
    coreml.SoftmaxOp: lambda op, x: softmax(x, _int(op.axis)),
    coreml.ClipOp: lambda op, x: np.clip(x, _float(op.alpha), _float(op.beta)).astype(x.dtype),
    coreml.SigmoidHardOp: lambda op, x: np.clip(
        np.asarray(_float(op.alpha), x.dtype) * x + np.asarray(_float(op.beta), x.dtype), 0, 1
    ),
    coreml.LeakyReluOp: lambda op, x: act.leaky_relu(x, _float(op.alpha)),
    coreml.AbsOp: _same(np.abs),
    coreml.CeilOp: _same(np.ceil),
    coreml.FloorOp: _same(np.floor),
    coreml.LogOp: _log,
    coreml.InverseOp: _inverse,
}

_BINARY: dict[type, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    coreml.AddOp: np.add,
    coreml.SubOp: np.subtract,
    coreml.MulOp: np.multiply,
    coreml.RealDivOp: np.divide,
    coreml.PowOp: np.power,
    coreml.MaximumOp: np.maximum,
    coreml.MinimumOp: np.minimum,
    coreml.ModOp: _mod,
}

_COMPARE: dict[type, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    coreml.EqualOp: np.equal,
    coreml.NotEqualOp: np.not_equal,
    coreml.LessOp: np.less,
    coreml.LessEqualOp: np.less_equal,
    coreml.GreaterOp: np.greater,
    coreml.GreaterEqualOp: np.greater_equal,
}


def _ordered(ordered: Callable[..., np.ndarray], plain: Callable[..., np.ndarray]):
    """float32 sums in torch's CPU order (qopt.numerics), so a package is checked
    against torch bit for bit where a reduction feeds a quantizer."""

    def body(x: np.ndarray, axis: tuple[int, ...], keepdims: bool) -> np.ndarray:
        if x.dtype == np.float32:
            return ordered(x, axis, keepdims)
        return plain(x, axis=axis, keepdims=keepdims)

    return body


_LOGICAL: dict[type, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    coreml.LogicalAndOp: np.logical_and,
    coreml.LogicalOrOp: np.logical_or,
    coreml.LogicalXorOp: np.logical_xor,
}


_REDUCE: dict[type, Callable[..., np.ndarray]] = {
    coreml.ReduceMeanOp: _ordered(torch_mean, np.mean),
    coreml.ReduceSumOp: _ordered(torch_sum, np.sum),
    coreml.ReduceMaxOp: np.max,
    coreml.ReduceMinOp: np.min,
}


def _result_dtype(op: coreml.CoremlOp) -> np.dtype:
    return storage_dtype(elem_of(op.results[0]))


def _pool(op: coreml.MaxPoolOp | coreml.AvgPoolOp, x: np.ndarray) -> np.ndarray:
    kernel, stride = _ints(op.kernel_sizes), _ints(op.strides)
    pad = _ints(op.pad) if op.pad_type.data == "custom" else (0,) * (2 * len(kernel))
    out_hw = shape_of(op.result)[2:]
    is_max = isinstance(op, coreml.MaxPoolOp)
    fill = -np.inf if is_max else 0.0
    pads = [(0, 0), (0, 0)]
    for i in range(len(kernel)):
        need = (out_hw[i] - 1) * stride[i] + kernel[i]
        size = x.shape[2 + i]
        pads.append((pad[2 * i], max(0, need - size - pad[2 * i])))
    xp = np.pad(x, pads, constant_values=fill)
    windows = np.lib.stride_tricks.sliding_window_view(xp, kernel, axis=(2, 3))
    windows = windows[
        :, :, : out_hw[0] * stride[0] : stride[0], : out_hw[1] * stride[1] : stride[1]
    ]
    if is_max:
        return np.max(windows, axis=(-2, -1))
    if x.dtype == np.float32:
        total = sequential_sum(windows)  # torch's avg_pool2d order
    else:
        total = np.sum(windows, axis=(-2, -1), dtype=x.dtype)
    assert isinstance(op, coreml.AvgPoolOp)
    include_padding = 0 if _int(op.exclude_padding_from_average) else 1
    ones = np.pad(np.ones(x.shape[2:], x.dtype), pads[2:], constant_values=include_padding)
    counts = np.lib.stride_tricks.sliding_window_view(ones, kernel)
    counts = counts[: out_hw[0] * stride[0] : stride[0], : out_hw[1] * stride[1] : stride[1]]
    return total / np.sum(counts, axis=(-2, -1))


_QUANTIZE_RULE = [DIVIDE]


@contextlib.contextmanager
def torch_quantize_rule() -> Iterator[None]:
    """Interpret `coreml.quantize` as torch does, `round(x * f32(1 / scale))`,
    instead of the MIL spec's `round(x / scale)`, inside the `with` block
    (`qopt.numerics.quant`'s RECIPROCAL and DIVIDE rules).

    The two differ in the last bit for some x, which can move a value lying on
    a rounding boundary by one quantization step. Tests use this to show that a
    static-activation package computes exactly what torch computes apart from
    that documented rounding rule.
    """
    _QUANTIZE_RULE[0] = RECIPROCAL
    try:
        yield
    finally:
        _QUANTIZE_RULE[0] = DIVIDE


class CoremlFunctions(InterpreterFunctions):
    """One `@impl` per coreml op (elementwise families share a table)."""

    @impl(coreml.ConstOp)
    def run_const(self, interp: Interpreter, op: coreml.ConstOp, args: PythonValues):
        return (const_array(op),)

    @impl(coreml.ConstexprBlockwiseShiftScaleOp)
    def run_blockwise(self, interp: Interpreter, op: Any, args: PythonValues):
        offset = args[2] if len(args) > 2 else None
        return (blockwise_shift_scale(args[0], args[1], offset),)

    @impl(coreml.ConstexprAffineDequantizeOp)
    def run_affine(self, interp: Interpreter, op: Any, args: PythonValues):
        data, zp, scale = args
        axis = _int(op.axis) % data.ndim
        zp_b = _axis_params(np.asarray(zp), axis if zp.size > 1 else None, data.ndim)
        scale_b = _axis_params(np.asarray(scale), axis if scale.size > 1 else None, data.ndim)
        return (dequantize(data, scale_b, zp_b, None, scale.dtype),)

    @impl(coreml.ConstexprLutToDenseOp)
    def run_lut(self, interp: Interpreter, op: Any, args: PythonValues):
        indices, lut = args
        if op.shape is not None:  # iOS16: bit-packed indices, one palette
            shape = _ints(op.shape)
            nbits = lut.shape[0].bit_length() - 1
            codes = unpack_bits(indices, nbits, int(np.prod(shape)), signed=False)
            palette = lut.reshape((1,) * len(shape) + (lut.shape[0], 1))
            return (lut_to_dense(codes.reshape(shape), palette),)
        axis = None if op.vector_axis is None else _int(op.vector_axis)
        return (lut_to_dense(indices, lut, axis),)

    @impl(coreml.QuantizeOp)
    def run_quantize(self, interp: Interpreter, op: Any, args: PythonValues):
        """MIL: `clip(round(x / scale) + zp)` to the full storage range, in x's type."""
        x, *rest = args
        zp, scale = rest if len(rest) == 2 else (None, rest[0])
        axis = None if op.axis is None else _int(op.axis)
        dtype = _result_dtype(op)
        info = np.iinfo(dtype)
        s = _axis_params(scale, axis, x.ndim).astype(x.dtype)
        z = None if zp is None else _axis_params(zp, axis, x.ndim)
        q = quantize(x, s, z, None, info.min, info.max, dtype, x.dtype, rule=_QUANTIZE_RULE[0])
        return (q,)

    @impl(coreml.DequantizeOp)
    def run_dequantize(self, interp: Interpreter, op: Any, args: PythonValues):
        x, *rest = args
        zp, scale = rest if len(rest) == 2 else (None, rest[0])
        axis = None if op.axis is None else _int(op.axis)
        z = None if zp is None else _axis_params(zp, axis, x.ndim)
        return (dequantize(x, _axis_params(scale, axis, x.ndim), z, None, scale.dtype),)

    @impl(coreml.LinearOp)
    def run_linear(self, interp: Interpreter, op: Any, args: PythonValues):
        x, w, *bias = args
        y = np.matmul(x, w.astype(x.dtype).T)
        if bias:
            y = y + bias[0].astype(x.dtype)
        return (y.astype(x.dtype, copy=False),)

    @impl(coreml.MatmulOp)
    def run_matmul(self, interp: Interpreter, op: Any, args: PythonValues):
        x, y = args
        if _int(op.transpose_x):
            x = np.swapaxes(x, -1, -2)
        if _int(op.transpose_y):
            y = np.swapaxes(y, -1, -2)
        return (np.matmul(x, y.astype(x.dtype)).astype(x.dtype, copy=False),)

    @impl(coreml.ConvOp)
    def run_conv(self, interp: Interpreter, op: Any, args: PythonValues):
        x, w, *bias = args
        pad = _ints(op.pad) if op.pad_type.data == "custom" else (0, 0, 0, 0)
        if pad[0] != pad[1] or pad[2] != pad[3]:
            xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[1]), (pad[2], pad[3])))
            pad = (0, 0, 0, 0)
            x = xp
        out = conv2d(
            x,
            w.astype(x.dtype),
            bias[0].astype(x.dtype) if bias else None,
            _ints(op.strides),
            (pad[0], pad[2]),
            _ints(op.dilations),
            _int(op.groups),
        )
        return (out.astype(x.dtype, copy=False),)

    @impl(coreml.GatherOp)
    def run_gather(self, interp: Interpreter, op: Any, args: PythonValues):
        x, indices = args
        axis = _int(op.axis)
        # MIL's gather counts negative indices from the end before iOS17.
        idx = checked_indices(indices, x.shape[axis], op, negative=op.opset() < 17)
        return (np.take(x, idx, axis=axis),)

    @impl(coreml.LayerNormOp)
    def run_layer_norm(self, interp: Interpreter, op: Any, args: PythonValues):
        x = args[0]
        axes = _ints(op.axes)
        mean = np.mean(x, axis=axes, keepdims=True, dtype=x.dtype)
        var = np.mean(np.square(x - mean), axis=axes, keepdims=True, dtype=x.dtype)
        y = (x - mean) / np.sqrt(var + np.asarray(_float(op.epsilon), x.dtype))
        operands = dict(zip(("gamma", "beta"), args[1:], strict=False))
        if op.gamma is not None:
            y = y * operands["gamma"]
        if op.beta is not None:
            y = y + (operands["beta"] if op.gamma is not None else operands["gamma"])
        return (y.astype(x.dtype, copy=False),)

    @impl(coreml.BatchNormOp)
    def run_batch_norm(self, interp: Interpreter, op: Any, args: PythonValues):
        """In torch's inference order: `a = gamma / sqrt(var + eps)`,
        `b = beta - mean * a`, `y = x * a + b`."""
        x, mean, var, *rest = args
        operands = dict(zip(("gamma", "beta"), rest, strict=False))
        if op.gamma is None and rest:
            operands = {"beta": rest[0]}
        dtype = x.dtype
        eps = np.asarray(_float(op.epsilon), dtype)
        alpha = np.asarray(1, dtype) / np.sqrt(var.astype(dtype) + eps)
        if (gamma := operands.get("gamma")) is not None:
            alpha = alpha * gamma.astype(dtype)
        beta = -mean.astype(dtype) * alpha
        if (offset := operands.get("beta")) is not None:
            beta = beta + offset.astype(dtype)
        channel = (x.shape[1],) + (1,) * (x.ndim - 2)
        return ((x * alpha.reshape(channel) + beta.reshape(channel)).astype(dtype),)

    @impl(coreml.ReshapeOp)
    def run_reshape(self, interp: Interpreter, op: Any, args: PythonValues):
        return (args[0].reshape(shape_of(op.result)),)

    @impl(coreml.TransposeOp)
    def run_transpose(self, interp: Interpreter, op: Any, args: PythonValues):
        return (np.ascontiguousarray(np.transpose(args[0], _ints(op.perm))),)

    @impl(coreml.ConcatOp)
    def run_concat(self, interp: Interpreter, op: Any, args: PythonValues):
        if _int(op.interleave):
            stacked = np.stack(args, axis=_int(op.axis) + 1)
            return (stacked.reshape(shape_of(op.result)),)
        return (np.concatenate(args, axis=_int(op.axis)),)

    @impl(coreml.TileOp)
    def run_tile(self, interp: Interpreter, op: Any, args: PythonValues):
        return (np.tile(args[0], _ints(op.reps)),)

    @impl(coreml.SliceByIndexOp)
    def run_slice(self, interp: Interpreter, op: Any, args: PythonValues):
        # begin/end masks drop a bound, squeezed axes are integer indices.
        return (np.ascontiguousarray(args[0][op.index()]).reshape(shape_of(op.result)),)

    @impl(coreml.ExpandDimsOp)
    def run_expand_dims(self, interp: Interpreter, op: Any, args: PythonValues):
        return (args[0].reshape(shape_of(op.result)),)

    @impl(coreml.SqueezeOp)
    def run_squeeze(self, interp: Interpreter, op: Any, args: PythonValues):
        return (args[0].reshape(shape_of(op.result)),)

    @impl(coreml.CastOp)
    def run_cast(self, interp: Interpreter, op: Any, args: PythonValues):
        return (args[0].astype(_result_dtype(op)),)

    @impl(coreml.SelectOp)
    def run_select(self, interp: Interpreter, op: Any, args: PythonValues):
        cond, a, b = args
        return (np.where(cond.astype(np.bool_), a, b).astype(_result_dtype(op)),)

    @impl(coreml.MaxPoolOp)
    def run_max_pool(self, interp: Interpreter, op: Any, args: PythonValues):
        return (_pool(op, args[0]).astype(args[0].dtype),)

    @impl(coreml.AvgPoolOp)
    def run_avg_pool(self, interp: Interpreter, op: Any, args: PythonValues):
        return (_pool(op, args[0]).astype(args[0].dtype),)

    @impl(coreml.ScaledDotProductAttentionOp)
    def run_sdpa(self, interp: Interpreter, op: Any, args: PythonValues):
        q, k, v, *mask = args
        return (attention(q, k, v, mask[0] if mask else None, False, None).astype(q.dtype),)


def _unary_impl(body: Callable[..., np.ndarray]) -> Callable[..., PythonValues]:
    def run(self: Any, interp: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        return (np.asarray(body(op, args[0])).astype(args[0].dtype, copy=False),)

    return run


def _binary_impl(body: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., Any]:
    def run(self: Any, interp: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        x, y = args
        dtype = _result_dtype(op)
        return (np.asarray(body(x.astype(dtype), y.astype(dtype))).astype(dtype, copy=False),)

    return run


def _compare_impl(body: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., Any]:
    def run(self: Any, interp: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        x, y = args
        return (np.asarray(body(x, y.astype(x.dtype)), np.bool_),)

    return run


def _reduce_impl(body: Callable[..., np.ndarray]) -> Callable[..., Any]:
    def run(self: Any, interp: Interpreter, op: Any, args: PythonValues) -> PythonValues:
        x = args[0]
        out = body(x, axis=_ints(op.axes), keepdims=bool(_int(op.keep_dims)))
        return (np.asarray(out).astype(x.dtype, copy=False).reshape(shape_of(op.result)),)

    return run


for _table, _make in (
    (_UNARY, _unary_impl),
    (_BINARY, _binary_impl),
    (_COMPARE, _compare_impl),
    (_LOGICAL, _compare_impl),
    (_REDUCE, _reduce_impl),
):
    for _op_type, _body in _table.items():
        setattr(CoremlFunctions, f"run_{_op_type.__name__}", impl(_op_type)(_make(_body)))
CoremlFunctions = register_impls(CoremlFunctions)

__all__ = [
    "CoremlFunctions",
    "blockwise_shift_scale",
    "const_array",
    "lut_to_dense",
    "torch_quantize_rule",
]
