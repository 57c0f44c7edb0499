"""numpy semantics of the `coreml` dialect (MIL ops, coremltools 9.0 definitions).

No Core ML runtime exists on Linux: these bodies are how qopt checks the
numerics of what it writes (and of packages read back from disk). Float ops
compute in their operands' dtype (fp32, or fp16 for fp16 programs), as Core ML
does; sub-byte integers live in int8 / uint8 containers.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, DenseResourceAttr, TensorType
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from qopt.backends.coreml.packing import unpack_bits
from qopt.dialects import coreml
from qopt.dialects.coreml import shape_of, storage_dtype
from qopt.errors import QoptError, where
from qopt.interpreters.aten_elementwise import erf
from qopt.interpreters.aten_layers import attention
from qopt.interpreters.aten_nn import conv2d
from qopt.interpreters.aten_reduction import softmax
from qopt.interpreters.common import checked_indices
from qopt.numerics import sequential_sum, torch_mean, torch_sum
from qopt.resources import weights_of


def const_array(op: coreml.ConstOp) -> np.ndarray:
    """The value of a `coreml.const` (sub-byte types in 8-bit containers)."""
    value = op.value
    type = value.type
    assert isinstance(type, TensorType)
    dtype = storage_dtype(type.get_element_type())
    shape = tuple(type.get_shape())
    if isinstance(value, DenseResourceAttr):
        blob = weights_of(op).get(value.resource_handle.data)
        if blob is None:
            raise QoptError(
                f"{where(op)}: the data of dense_resource<{value.resource_handle.data}> is "
                "missing: print the module with --print-weights to run it"
            )
        if isinstance(blob, np.ndarray):
            return (blob if blob.dtype == dtype else blob.view(dtype)).reshape(shape)
        return np.frombuffer(blob, dtype).reshape(shape)
    assert isinstance(value, DenseIntOrFPElementsAttr)
    raw = value.data.data
    flat = np.frombuffer(raw, np.uint8 if dtype == np.bool_ else dtype)
    flat = flat.astype(np.bool_) if dtype == np.bool_ else flat
    count = int(np.prod(shape, dtype=np.int64))
    if flat.size == 1 and count != 1:
        return np.broadcast_to(flat, shape).copy()
    return flat.reshape(shape).copy()


def _ints(attr: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in attr.get_values())


def _int(attr: Any) -> int:
    return int(attr.value.data)


def _float(attr: Any) -> float:
    return float(attr.value.data)


def _expand(params: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Repeat a block-grid parameter tensor up to `shape`."""
    out = params
    for axis, (p, d) in enumerate(zip(params.shape, shape, strict=True)):
        if p != d:
            out = np.repeat(out, d // p, axis=axis)
    return out


def _axis_params(p: np.ndarray, axis: int | None, rank: int) -> np.ndarray:
    if axis is None:
        return p.reshape(())
    shape = [1] * rank
    shape[axis] = p.size
    return p.reshape(shape)


def blockwise_shift_scale(
    data: np.ndarray, scale: np.ndarray, offset: np.ndarray | None
) -> np.ndarray:
    values = data.astype(scale.dtype)
    if offset is not None:
        values = values - _expand(offset.astype(scale.dtype), data.shape)
    return values * _expand(scale, data.shape)


def lut_to_dense(indices: np.ndarray, lut: np.ndarray, vector_axis: int | None) -> np.ndarray:
    """iOS18 form: `out[i] = lut[i0 // (d0/g0), ..., indices[i], :]`."""
    rank = indices.ndim
    groups = lut.shape[:rank]
    grid = np.indices(indices.shape, sparse=True)
    block = [d // g for d, g in zip(indices.shape, groups, strict=True)]
    keys = tuple(g // b for g, b in zip(grid, block, strict=True))
    values = lut[(*keys, indices.astype(np.int64))]  # [*shape, V]
    if lut.shape[-1] == 1:
        return values[..., 0]
    assert vector_axis is not None
    moved = np.moveaxis(values, -1, vector_axis + 1)
    shape = list(indices.shape)
    shape[vector_axis] *= lut.shape[-1]
    return moved.reshape(shape)


def _same(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[..., Any]:
    def body(op: coreml.CoremlOp, x: np.ndarray) -> np.ndarray:
        return fn(x).astype(x.dtype, copy=False)

    return body


def _gelu(op: Any, x: np.ndarray) -> np.ndarray:
    half = np.asarray(0.5, x.dtype)
    if op.mode.data == "TANH_APPROXIMATION":
        c = np.asarray(math.sqrt(2 / math.pi), x.dtype)
        return half * x * (1 + np.tanh(c * (x + np.asarray(0.044715, x.dtype) * x**3)))
    if op.mode.data == "SIGMOID_APPROXIMATION":
        return x / (1 + np.exp(np.asarray(-1.702, x.dtype) * x))
    return half * x * (1 + erf(x / np.asarray(math.sqrt(2), x.dtype)))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


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
    coreml.SiluOp: _same(lambda x: x * _sigmoid(x)),
    coreml.SigmoidOp: _same(_sigmoid),
    coreml.TanhOp: _same(np.tanh),
    coreml.ExpOp: _same(np.exp),
    coreml.SqrtOp: _same(np.sqrt),
    coreml.SinOp: _same(np.sin),
    coreml.CosOp: _same(np.cos),
    coreml.ErfOp: _same(erf),
    coreml.RsqrtOp: lambda op, x: 1 / np.sqrt(x + np.asarray(_float(op.epsilon), x.dtype)),
    coreml.GeluOp: _gelu,
    coreml.SoftmaxOp: lambda op, x: softmax(x, _int(op.axis)),
    coreml.ClipOp: lambda op, x: np.clip(x, _float(op.alpha), _float(op.beta)).astype(x.dtype),
    coreml.SigmoidHardOp: lambda op, x: np.clip(
        np.asarray(_float(op.alpha), x.dtype) * x + np.asarray(_float(op.beta), x.dtype), 0, 1
    ),
    coreml.LeakyReluOp: lambda op, x: np.where(
        x >= 0, x, np.asarray(_float(op.alpha), x.dtype) * x
    ),
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
    type = op.results[0].type
    assert isinstance(type, TensorType)
    return storage_dtype(type.get_element_type())


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


_QUANTIZE_RULE = ["divide"]


@contextlib.contextmanager
def torch_quantize_rule() -> Iterator[None]:
    """Interpret `coreml.quantize` as torch does, `round(x * f32(1 / scale))`,
    instead of the MIL spec's `round(x / scale)`, inside the `with` block.

    The two differ in the last bit for some x, which can move a value lying on
    a rounding boundary by one quantization step. Tests use this to show that a
    static-activation package computes exactly what torch computes apart from
    that documented rounding rule.
    """
    _QUANTIZE_RULE[0] = "reciprocal"
    try:
        yield
    finally:
        _QUANTIZE_RULE[0] = "divide"


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
        return ((data.astype(scale.dtype) - zp_b.astype(scale.dtype)) * scale_b,)

    @impl(coreml.ConstexprLutToDenseOp)
    def run_lut(self, interp: Interpreter, op: Any, args: PythonValues):
        indices, lut = args
        if op.shape is not None:
            shape = _ints(op.shape)
            nbits = lut.shape[0].bit_length() - 1
            codes = unpack_bits(indices, nbits, int(np.prod(shape)), signed=False)
            return (lut[codes.astype(np.int64)].reshape(shape),)
        axis = None if op.vector_axis is None else _int(op.vector_axis)
        return (lut_to_dense(indices, lut, axis),)

    @impl(coreml.QuantizeOp)
    def run_quantize(self, interp: Interpreter, op: Any, args: PythonValues):
        x, *rest = args
        zp, scale = rest if len(rest) == 2 else (None, rest[0])
        axis = None if op.axis is None else _int(op.axis)
        dtype = _result_dtype(op)
        info = np.iinfo(dtype)
        s = _axis_params(scale, axis, x.ndim).astype(x.dtype)
        if _QUANTIZE_RULE[0] == "reciprocal":
            q = np.round(x * (np.asarray(1, x.dtype) / s))
        else:
            q = np.round(x / s)  # the MIL spec (and coremltools' value inference)
        if zp is not None:
            q = q + _axis_params(zp, axis, x.ndim).astype(x.dtype)
        return (np.clip(q, info.min, info.max).astype(dtype),)

    @impl(coreml.DequantizeOp)
    def run_dequantize(self, interp: Interpreter, op: Any, args: PythonValues):
        x, *rest = args
        zp, scale = rest if len(rest) == 2 else (None, rest[0])
        axis = None if op.axis is None else _int(op.axis)
        values = x.astype(scale.dtype)
        if zp is not None:
            values = values - _axis_params(zp, axis, x.ndim).astype(scale.dtype)
        return (values * _axis_params(scale, axis, x.ndim),)

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
