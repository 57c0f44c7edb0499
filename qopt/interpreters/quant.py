"""numpy semantics of the `quant` dialect, bit-exact with torch on integer results."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)
from xdsl.ir import Attribute, SSAValue

from qopt.dialects import quant
from qopt.dialects.dtypes import numpy_dtype


def _dtype(value: SSAValue) -> np.dtype:
    assert isinstance(value.type, TensorType)
    return numpy_dtype(value.type.get_element_type())


def expand_params(params: np.ndarray, block: Sequence[int], shape: Sequence[int]) -> np.ndarray:
    """Per-block parameters broadcast to a view over `shape`: element i uses
    `params.reshape(shape / block)[i // block]`."""
    reduced = tuple(d // b for b, d in zip(block, shape, strict=True))
    p = np.asarray(params).reshape(reduced)
    # (r0, 1, r1, 1, ...) broadcast against (r0, b0, r1, b1, ...)
    split = tuple(x for r, b in zip(reduced, block, strict=True) for x in (r, b))
    interleaved = p.reshape(tuple(x for r in reduced for x in (r, 1)))
    return np.broadcast_to(interleaved, split).reshape(tuple(shape))


def block_view(x: np.ndarray, block: Sequence[int]) -> np.ndarray:
    """`x` reshaped to (r0, b0, r1, b1, ...)."""
    split = tuple(v for d, b in zip(x.shape, block, strict=True) for v in (d // b, b))
    return x.reshape(split)


def quantize(
    x: np.ndarray,
    scale: np.ndarray,
    zero_point: np.ndarray | None,
    block: Sequence[int],
    qmin: int,
    qmax: int,
    out_dtype: np.dtype,
    compute_dtype: np.dtype,
    zero_point_before_rounding: bool = False,
) -> np.ndarray:
    scale = np.asarray(scale)
    with np.errstate(divide="ignore"):
        inv = (np.asarray(1.0, scale.dtype) / scale).astype(compute_dtype)
    v = x.astype(compute_dtype) * expand_params(inv, block, x.shape)
    zp = None
    if zero_point is not None:
        zp = expand_params(np.asarray(zero_point), block, x.shape).astype(compute_dtype)
    if zero_point_before_rounding:
        q = np.round(v + zp) if zp is not None else np.round(v)
    else:
        q = np.round(v) + zp if zp is not None else np.round(v)
    return np.clip(q, qmin, qmax).astype(out_dtype)


def dequantize(
    q: np.ndarray,
    scale: np.ndarray,
    zero_point: np.ndarray | None,
    block: Sequence[int],
    out_dtype: np.dtype,
    compute_dtype: np.dtype,
) -> np.ndarray:
    v = q.astype(compute_dtype)
    if zero_point is not None:
        v = v - expand_params(np.asarray(zero_point), block, q.shape).astype(compute_dtype)
    v = v * expand_params(np.asarray(scale), block, q.shape).astype(compute_dtype)
    return v.astype(out_dtype)


def choose_qparams(
    x: np.ndarray,
    block: Sequence[int],
    qmin: int,
    qmax: int,
    mapping: str,
    eps: float,
    scale_dtype: np.dtype,
    zp_dtype: np.dtype,
) -> tuple[np.ndarray, np.ndarray]:
    ct = x.dtype
    view = block_view(x, block)
    axes = tuple(range(1, view.ndim, 2))
    mn = np.minimum(view.min(axis=axes), np.zeros((), ct))
    mx = np.maximum(view.max(axis=axes), np.zeros((), ct))
    eps_c = np.asarray(eps, dtype=ct)
    if mapping == quant.Mapping.ASYMMETRIC:
        scale = (mx - mn) / ct.type(float(qmax - qmin))
        scale = np.maximum(scale, eps_c)
        zp = np.clip(qmin - np.round(mn / scale), qmin, qmax)
    else:
        if mapping == quant.Mapping.SYMMETRIC:
            scale = np.maximum(-mn, mx) / ct.type(float(qmax - qmin) / 2)
        else:
            smin = mn / ct.type(float(qmin))
            smax = mx / ct.type(float(qmax))
            scale = np.where(smin > smax, smin, smax)
        scale = np.maximum(scale, eps_c)
        zp = np.full_like(scale, int((qmax + qmin + 1) / 2))
    return scale.astype(scale_dtype), zp.astype(zp_dtype)


def dequantize_codebook(
    codes: np.ndarray, codebook: np.ndarray, block: Sequence[int], out_dtype: np.dtype
) -> np.ndarray:
    shape = codes.shape
    full = quant.resolve_block_size(block, shape)
    index = tuple(
        (np.arange(d) // b).reshape([-1 if j == i else 1 for j in range(len(shape))])
        for i, (d, b) in enumerate(zip(shape, full, strict=True))
    )
    return codebook[(*index, codes.astype(np.int64), 0)].astype(out_dtype)


def _compute(explicit: Attribute | None, default: np.dtype) -> np.dtype:
    return default if explicit is None else numpy_dtype(explicit)


@register_impls
class QuantFunctions(InterpreterFunctions):
    @impl(quant.QuantizeOp)
    def run_quantize(
        self, interpreter: Interpreter, op: quant.QuantizeOp, args: PythonValues
    ) -> PythonValues:
        x, scale, *zp = args
        default = np.promote_types(_dtype(op.input), _dtype(op.scale))
        return (
            quantize(
                x,
                scale,
                zp[0] if zp else None,
                op.block_size.get_values(),
                op.qmin.value.data,
                op.qmax.value.data,
                _dtype(op.output),
                _compute(op.compute_type, default),
                op.zero_point_before_rounding is not None,
            ),
        )

    @impl(quant.DequantizeOp)
    def run_dequantize(
        self, interpreter: Interpreter, op: quant.DequantizeOp, args: PythonValues
    ) -> PythonValues:
        q, scale, *zp = args
        return (
            dequantize(
                q,
                scale,
                zp[0] if zp else None,
                op.block_size.get_values(),
                _dtype(op.output),
                _compute(op.compute_type, _dtype(op.output)),
            ),
        )

    @impl(quant.ChooseQParamsOp)
    def run_choose_qparams(
        self, interpreter: Interpreter, op: quant.ChooseQParamsOp, args: PythonValues
    ) -> PythonValues:
        (x,) = args
        scale, zp = choose_qparams(
            x,
            op.block_size.get_values(),
            op.qmin.value.data,
            op.qmax.value.data,
            op.mapping.data,
            op.eps.value.data,
            _dtype(op.scale),
            _dtype(op.zero_point),
        )
        return scale.reshape(_shape(op.scale)), zp.reshape(_shape(op.zero_point))

    @impl(quant.DequantizeCodebookOp)
    def run_dequantize_codebook(
        self,
        interpreter: Interpreter,
        op: quant.DequantizeCodebookOp,
        args: PythonValues,
    ) -> PythonValues:
        codes, codebook = args
        return (
            dequantize_codebook(codes, codebook, op.block_size.get_values(), _dtype(op.output)),
        )


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())
