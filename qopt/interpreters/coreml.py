"""numpy semantics of the `coreml` dialect (MIL ops, coremltools 9.0 definitions).

No Core ML runtime exists on Linux: these bodies are how qopt checks the
numerics of what it writes (and of packages read back from disk). Float ops
compute in their operands' dtype (fp32, or fp16 for fp16 programs), as Core ML
does; sub-byte integers live in int8 / uint8 containers.

Every body computes its result from its operands and the op's MIL parameters
(never by reshaping to the declared type), and every result is then checked
against the op's declared result type (`_checked`): a disagreement between the
verifier (MIL's type inference) and these semantics is a `QoptError` naming the
op, never a silently wrong shape or type.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    OpImpl,
    PythonValues,
    register_impls,
)
from xdsl.interpreter import impl as xdsl_impl
from xdsl.ir import Operation

from qopt.dialects import coreml
from qopt.dialects.coreml import storage_dtype
from qopt.dialects.coreml.queries import const_array
from qopt.dialects.tensors import elem_of, shape_of
from qopt.errors import QoptError, where
from qopt.interpreters.aten_layers import attention
from qopt.interpreters.aten_reduction import softmax
from qopt.interpreters.common import checked_indices
from qopt.interpreters.ml_program import state_of
from qopt.numerics import activations as act
from qopt.numerics.bits import unpack_bits
from qopt.numerics.quant import DIVIDE, RECIPROCAL, dequantize, lut_to_dense, quantize
from qopt.numerics.reductions import sequential_sum, torch_mean, torch_sum


def _check_results(op: Operation, results: PythonValues) -> None:
    """Each result has the shape and (storage) dtype of the op's declared type."""
    if len(results) != len(op.results):
        raise QoptError(
            f"coreml interpreter: {where(op)} computed {len(results)} results, the op "
            f"declares {len(op.results)}"
        )
    for i, (value, declared) in enumerate(zip(results, op.results, strict=True)):
        array = np.asarray(value)
        shape, dtype = shape_of(declared), storage_dtype(elem_of(declared))
        if array.shape != shape or array.dtype != dtype:
            raise QoptError(
                f"coreml interpreter: {where(op)} computed result {i} as {array.dtype} "
                f"{list(array.shape)}, but the op declares {dtype} {list(shape)} "
                f"({declared.type}): its semantics and its verifier disagree"
            )


def impl(op_type: type[Operation]) -> Callable[[Callable[..., PythonValues]], OpImpl[Any, Any]]:
    """xDSL's `impl`, with the results checked against the op's declared types."""

    def annotate(body: Callable[..., PythonValues]) -> OpImpl[Any, Any]:
        def checked(self: Any, interp: Interpreter, op: Any, args: PythonValues) -> PythonValues:
            results = body(self, interp, op, args)
            _check_results(op, results)
            return results

        return xdsl_impl(op_type)(checked)

    return annotate


def unsupported(op: Operation, what: str) -> QoptError:
    return QoptError(f"coreml interpreter: {where(op)}: {what} is not supported")


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


def _cumsum(op: Any, x: np.ndarray) -> np.ndarray:
    """MIL cumsum: sums in x's type, in order along the axis (int32 wraps)."""
    axis = _int(op.axis) % x.ndim
    if _int(op.reverse):
        x = np.flip(x, axis)
    with np.errstate(over="ignore"):
        y = np.cumsum(x, axis=axis, dtype=x.dtype)
    if _int(op.exclusive):
        y = np.concatenate([np.zeros_like(np.take(y, [0], axis)), np.delete(y, -1, axis)], axis)
    return np.flip(y, axis) if _int(op.reverse) else y


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
    coreml.TanOp: _same(np.tan),
    coreml.AsinOp: _same(np.arcsin),
    coreml.AcosOp: _same(np.arccos),
    coreml.AtanOp: _same(np.arctan),
    coreml.SinhOp: _same(np.sinh),
    coreml.CoshOp: _same(np.cosh),
    coreml.ErfOp: _same(act.erf),
    coreml.RsqrtOp: lambda op, x: 1 / np.sqrt(x + np.asarray(_float(op.epsilon), x.dtype)),
    coreml.GeluOp: _gelu,
    coreml.SoftmaxOp: lambda op, x: softmax(x, _int(op.axis)),
    coreml.CumsumOp: _cumsum,
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
    coreml.FloorDivOp: np.floor_divide,
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


def spatial_pads(
    op: Operation,
    pad_type: str,
    pad: tuple[int, ...],
    size: tuple[int, ...],
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    dilations: tuple[int, ...],
) -> list[tuple[int, int]]:
    """(before, after) padding of each spatial dim of MIL `conv` / pools.

    `valid`: none; `custom`: `pad[2i], pad[2i+1]`; `same` / `same_lower`: the
    total `max(0, s * ceil(d / s) - d + k - s)` with `k = dilation * (kernel - 1)
    + 1` (coremltools' `aggregated_pad`, output `ceil(d / s)`), split evenly with
    the odd one at the end for `same` (BOTTOM_RIGHT_HEAVY, as coremltools maps it
    to Core ML's SamePadding) and at the beginning for `same_lower`
    (TOP_LEFT_HEAVY)."""
    spatial = len(size)
    if pad_type == "valid":
        return [(0, 0)] * spatial
    if pad_type == "custom":
        if len(pad) != 2 * spatial or min(pad, default=0) < 0:
            raise unsupported(op, f"pad {list(pad)} for {spatial} spatial dims")
        return [(pad[2 * i], pad[2 * i + 1]) for i in range(spatial)]
    if pad_type not in ("same", "same_lower"):
        raise unsupported(op, f"pad_type '{pad_type}'")
    pads = []
    for d, kk, s, dil in zip(size, kernel, strides, dilations, strict=True):
        k = dil * (kk - 1) + 1
        total = max(0, s * -(-d // s) - d + k - s)
        small, large = total // 2, total - total // 2
        pads.append((small, large) if pad_type == "same" else (large, small))
    return pads


def _spatial_params(op: Any, name: str, spatial: int) -> tuple[int, ...]:
    values = _ints(getattr(op, name))
    if len(values) != spatial or min(values, default=1) < 1:
        raise unsupported(op, f"{name} {list(values)} for {spatial} spatial dims")
    return values


def _window_view(
    op: Operation,
    x: np.ndarray,
    spans: tuple[int, ...],
    strides: tuple[int, ...],
    steps: tuple[int, ...],
) -> np.ndarray:
    """`[N, C, *out, *window]`: the windows of `spans` over x's spatial dims, every
    `strides` apart, every `steps`-th element of each window (dilation)."""
    spatial = len(spans)
    if any(x.shape[2 + i] < spans[i] for i in range(spatial)):
        raise unsupported(op, f"a window {list(spans)} larger than the padded input")
    windows = np.lib.stride_tricks.sliding_window_view(x, spans, axis=tuple(range(2, 2 + spatial)))
    index = (
        slice(None),
        slice(None),
        *(slice(None, None, s) for s in strides),
        *(slice(None, None, t) for t in steps),
    )
    return windows[index]


_LETTERS_OUT, _LETTERS_KERNEL = "xyz", "ijk"


def conv(op: Any, x: np.ndarray, w: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """MIL `conv`: x `[N, Cin, *D]` with 1 to 3 spatial dims, weight `[Cout, Cin /
    groups, *K]`, padding by `spatial_pads`, in x's type."""
    spatial = x.ndim - 2
    if not 1 <= spatial <= 3 or w.ndim != x.ndim:
        raise unsupported(op, f"conv of x {list(x.shape)} with weight {list(w.shape)}")
    groups = _int(op.groups)
    strides = _spatial_params(op, "strides", spatial)
    dilations = _spatial_params(op, "dilations", spatial)
    kernel = w.shape[2:]
    pads = spatial_pads(
        op, op.pad_type.data, _ints(op.pad), x.shape[2:], kernel, strides, dilations
    )
    xp = np.pad(x, [(0, 0), (0, 0), *pads])
    spans = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilations, strict=True))
    patches = _window_view(op, xp, spans, strides, dilations)  # [N, Cin, *out, *K]
    w = w.astype(x.dtype, copy=False)
    out_l, k_l = _LETTERS_OUT[:spatial], _LETTERS_KERNEL[:spatial]
    subscripts = f"nc{out_l}{k_l},oc{k_l}->no{out_l}"
    icg, ocg = w.shape[1], w.shape[0] // groups
    out = np.empty((x.shape[0], w.shape[0], *patches.shape[2 : 2 + spatial]), x.dtype)
    for g in range(groups):
        pg = patches[:, g * icg : (g + 1) * icg]
        wg = w[g * ocg : (g + 1) * ocg]
        out[:, g * ocg : (g + 1) * ocg] = np.einsum(subscripts, pg, wg, optimize=True)
    if bias is not None:
        out += bias.astype(x.dtype).reshape(1, -1, *(1,) * spatial)
    return out


def _pool(op: coreml.MaxPoolOp | coreml.AvgPoolOp, x: np.ndarray) -> np.ndarray:
    """MIL `max_pool` / `avg_pool` over 1 to 3 spatial dims. Output sizes are
    coremltools' (`spatial_dimensions_out_shape`); with `ceil_mode` the last
    window may run past the end padding: that part is never in a max and never
    counted in an average (torch's rule), while the declared padding is counted
    unless `exclude_padding_from_average`."""
    spatial = x.ndim - 2
    if not 1 <= spatial <= 3:
        raise unsupported(op, f"pooling x {list(x.shape)} (rank 3 to 5)")
    kernel = _spatial_params(op, "kernel_sizes", spatial)
    strides = _spatial_params(op, "strides", spatial)
    ones = (1,) * spatial
    pads = spatial_pads(op, op.pad_type.data, _ints(op.pad), x.shape[2:], kernel, strides, ones)
    ceil_mode = bool(_int(op.ceil_mode))
    full: list[tuple[int, int]] = []
    outs: list[int] = []
    for i in range(spatial):
        d, k, s = x.shape[2 + i], kernel[i], strides[i]
        before, after = pads[i]
        total = before + after
        if ceil_mode:
            n = (d + total - k + s - 1) // s + 1
            if (n - 1) * s >= d + before and total > 0:
                n -= 1
        else:
            n = (d + total - k) // s + 1
        if n < 1:
            raise unsupported(op, f"a window {list(kernel)} larger than the padded input")
        outs.append(n)
        full.append((before, after + max(0, (n - 1) * s + k - (d + total))))
    is_max = isinstance(op, coreml.MaxPoolOp)
    fill = -np.inf if is_max else 0.0
    xp = np.pad(x, [(0, 0), (0, 0), *full], constant_values=fill)
    # custom end padding larger than the windows need gives windows past the last
    last = tuple(slice(0, n) for n in outs)
    windows = _window_view(op, xp, kernel, strides, ones)[(slice(None), slice(None), *last)]
    axes = tuple(range(-spatial, 0))
    if is_max:
        return np.max(windows, axis=axes)
    assert isinstance(op, coreml.AvgPoolOp)
    if x.dtype == np.float32:
        total = sequential_sum(windows, spatial)  # torch's avg_pool order
    else:
        total = np.sum(windows, axis=axes, dtype=x.dtype)
    declared = 0 if _int(op.exclude_padding_from_average) else 1
    valid = np.pad(np.ones(x.shape[2:], x.dtype), pads, constant_values=declared)
    extra = [(0, f[1] - p[1]) for f, p in zip(full, pads, strict=True)]
    valid = np.pad(valid, extra, constant_values=0)
    counts = _window_view(op, valid[None, None], kernel, strides, ones)[(0, 0, *last)]
    return total / np.sum(counts, axis=axes)


_SCATTER_AT = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "max": np.maximum,
    "min": np.minimum,
}


def scatter(op: Any, data: np.ndarray, indices: np.ndarray, updates: np.ndarray) -> np.ndarray:
    """MIL `scatter`: the slices of `data` along `axis` at `indices` combined with
    those of `updates` by `mode`, in index order (a repeated index: the last write
    wins for `update`, each one applies for the others). An index outside the
    axis (a negative one from iOS17) is a QoptError naming the op."""
    axis = _int(op.axis) % data.ndim
    size = data.shape[axis]
    idx = checked_indices(indices, size, op, negative=op.opset() < 17).reshape(-1)
    idx = np.where(idx < 0, idx + size, idx)
    out = np.array(data, copy=True)
    rows = np.moveaxis(np.asarray(updates, data.dtype), axis, 0)
    moved = np.moveaxis(out, axis, 0)  # a view of `out`
    mode = op.mode.data
    if mode == "update":
        # The last of repeated indices wins: keep each index's last occurrence.
        _, first_of_reversed = np.unique(idx[::-1], return_index=True)
        last = idx.size - 1 - first_of_reversed
        moved[idx[last]] = rows[last]
    elif mode == "div" and data.dtype.kind == "f":
        np.divide.at(moved, idx, rows)
    elif mode in _SCATTER_AT:
        _SCATTER_AT[mode].at(moved, idx, rows)
    else:
        raise unsupported(op, f"scatter mode {mode} on {data.dtype}")
    return out


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
        data, scale, *rest = args
        return (blockwise_shift_scale(data, scale, rest[0] if rest else None),)

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
        # vector_axis in [-rank, rank) of the indices, negative from the end
        axis = None if op.vector_axis is None else _int(op.vector_axis) % max(indices.ndim, 1)
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
        # From iOS17 one operand may be a constant of another type: the product has
        # the other's type (coremltools' iOS17 `matmul`); else x and y share one.
        x_const = isinstance(op.x.owner, coreml.CompileTimeOp)
        y_const = isinstance(op.y.owner, coreml.CompileTimeOp)
        dtype = y.dtype if x_const and not y_const else x.dtype
        out = np.matmul(x.astype(dtype, copy=False), y.astype(dtype, copy=False))
        return (np.asarray(out).astype(dtype, copy=False),)

    @impl(coreml.ConvOp)
    def run_conv(self, interp: Interpreter, op: Any, args: PythonValues):
        x, w, *bias = args
        return (conv(op, x, w, bias[0] if bias else None),)

    @impl(coreml.GatherOp)
    def run_gather(self, interp: Interpreter, op: Any, args: PythonValues):
        x, indices = args
        axis = _int(op.axis)
        # MIL's gather counts negative indices from the end before iOS17.
        idx = checked_indices(indices, x.shape[axis], op, negative=op.opset() < 17)
        return (np.take(x, idx, axis=axis),)

    @impl(coreml.GatherAlongAxisOp)
    def run_gather_along_axis(self, interp: Interpreter, op: Any, args: PythonValues):
        x, indices = args
        axis = _int(op.axis) % x.ndim
        idx = checked_indices(indices, x.shape[axis], op, negative=op.opset() < 17)
        return (np.take_along_axis(x, idx, axis=axis),)

    @impl(coreml.ScatterOp)
    def run_scatter(self, interp: Interpreter, op: Any, args: PythonValues):
        data, indices, updates = args
        return (scatter(op, data, indices, updates),)

    @impl(coreml.ReadStateOp)
    def run_read_state(self, interp: Interpreter, op: Any, args: PythonValues):
        """The state's current value (read-only: the next write replaces the array)."""
        return (state_of(interp).values[op.state_name],)

    @impl(coreml.CoremlUpdateStateOp)
    def run_update_state(self, interp: Interpreter, op: Any, args: PythonValues):
        state = state_of(interp)
        state.write(op.state_name, args[0])
        return (state.values[op.state_name],)

    @impl(coreml.LayerNormOp)
    def run_layer_norm(self, interp: Interpreter, op: Any, args: PythonValues):
        """`(x - mean) / sqrt(var + epsilon) * gamma + beta` over `axes` (any dims,
        negative from the end); gamma and beta hold x's dims at `axes` in dim order
        and broadcast with 1s elsewhere (coremltools' `layer_norm` value inference)."""
        x, *rest = args
        axes = tuple(sorted({a % x.ndim for a in _ints(op.axes)}))
        mean = np.mean(x, axis=axes, keepdims=True, dtype=x.dtype)
        var = np.mean(np.square(x - mean), axis=axes, keepdims=True, dtype=x.dtype)
        y = (x - mean) / np.sqrt(var + np.asarray(_float(op.epsilon), x.dtype))
        gamma = rest.pop(0) if op.gamma is not None else None
        beta = rest.pop(0) if op.beta is not None else None
        normalized = [d if i in axes else 1 for i, d in enumerate(x.shape)]
        if gamma is not None:
            y = y * gamma.astype(x.dtype, copy=False).reshape(normalized)
        if beta is not None:
            y = y + beta.astype(x.dtype, copy=False).reshape(normalized)
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
        """MIL's `shape`: a `0` copies x's dim, one `-1` takes what is left."""
        x = args[0]
        shape = [int(d) for d in _ints(op.shape)]
        if 0 in shape:
            if len(shape) != x.ndim:
                raise unsupported(op, f"shape {shape} copying dims of a rank-{x.ndim} x")
            shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
        return (x.reshape(shape),)

    @impl(coreml.TransposeOp)
    def run_transpose(self, interp: Interpreter, op: Any, args: PythonValues):
        return (np.array(np.transpose(args[0], _ints(op.perm)), order="C"),)

    @impl(coreml.ConcatOp)
    def run_concat(self, interp: Interpreter, op: Any, args: PythonValues):
        """`interleave`: same-shaped values alternate along `axis`, one slice each
        (`out[i::n] = values[i]` along axis); else numpy's concatenate."""
        axis = _int(op.axis) % args[0].ndim
        if _int(op.interleave):
            stacked = np.stack(args, axis=axis + 1)
            shape = list(args[0].shape)
            shape[axis] *= len(args)
            return (stacked.reshape(shape),)
        return (np.concatenate(args, axis=axis),)

    @impl(coreml.TileOp)
    def run_tile(self, interp: Interpreter, op: Any, args: PythonValues):
        return (np.tile(args[0], _ints(op.reps)),)

    @impl(coreml.PadOp)
    def run_pad(self, interp: Interpreter, op: Any, args: PythonValues):
        # the last len(pad) // 2 dims, dim D-N first, padded with constant_val
        x = args[0]
        pad = _ints(op.pad)
        widths = [(0, 0)] * (x.ndim - len(pad) // 2)
        widths += [(pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)]
        fill = x.dtype.type(_float(op.constant_val))
        return (np.pad(x, widths, mode="constant", constant_values=fill),)

    @impl(coreml.SliceByIndexOp)
    def run_slice(self, interp: Interpreter, op: Any, args: PythonValues):
        # begin/end masks drop a bound, squeezed axes are integer indices.
        return (np.array(args[0][op.index()], order="C"),)

    @impl(coreml.ExpandDimsOp)
    def run_expand_dims(self, interp: Interpreter, op: Any, args: PythonValues):
        # axes index the result (negative from its end), as numpy's expand_dims
        return (np.expand_dims(args[0], _ints(op.axes)),)

    @impl(coreml.SqueezeOp)
    def run_squeeze(self, interp: Interpreter, op: Any, args: PythonValues):
        x = args[0]
        axes = {a % x.ndim for a in _ints(op.axes)} if x.ndim else set()
        return (np.squeeze(x, axis=tuple(sorted(a for a in axes if x.shape[a] == 1))),)

    @impl(coreml.CastOp)
    def run_cast(self, interp: Interpreter, op: Any, args: PythonValues):
        return (args[0].astype(_result_dtype(op)),)

    @impl(coreml.SelectOp)
    def run_select(self, interp: Interpreter, op: Any, args: PythonValues):
        cond, a, b = args
        return (np.where(cond.astype(np.bool_), a, b).astype(a.dtype, copy=False),)

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
        x, y = args  # one type T (the verifier): the result is T
        dtype = x.dtype
        return (np.asarray(body(x, y.astype(dtype))).astype(dtype, copy=False),)

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
        return (np.asarray(out).astype(x.dtype, copy=False),)

    return run


for _table, _make in (  # the `impl` above: results checked against the declared types
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
    "lut_to_dense",
    "torch_quantize_rule",
]
