"""Affine quantization, dynamic quantization parameters and codebook decoding:
numpy, bit for bit with torch on integer results (docs/ir.md).

Parameters are laid out by block size, as the `quant` ops describe them (MLIR's
sub-channel `!quant.uniform`): element `(i0, ..., i_{r-1})` of a tensor of shape
`(d0, ..., d_{r-1})` uses parameter `(i0 // b0, ..., i_{r-1} // b_{r-1})` of the
reduced shape `(d0 / b0, ...)` (row-major, so `[N, K/G]` and flat parameters both
work). Per-tensor is `block = shape`, per-channel on axis a is 1 at a and the
dimension elsewhere, per-group G is `[1, G]`. `block=None` broadcasts the
parameters against the tensor with numpy's rules instead (a scalar, or an array
already shaped for it: per-axis `[1, C, 1]`, per-row `[rows, 1]`).

The operations, in torch's order and types:

- quantize: `q = clamp(rne(x * f(1 / scale)) + zp, qmin, qmax)` cast to the storage
  type. `1 / scale` is computed in the scale's type and rounded to the compute type
  `f` (torch: the reciprocal of a Python float scale in double, used as an f32
  scalar; torchao: in the scale tensor's dtype), the product in the compute type
  (promote(x, scale) by default; f32 for `quantize_per_tensor`, which reads its
  scale as a Python float). `zero_point_before_rounding` gives
  `clamp(rne(x * f(1 / scale) + zp))` (`quantize_per_token` /
  `quantize_per_channel_group`): a different result at exact ties when zp is odd
  (rne picks the even neighbour). `rule=DIVIDE` gives `rne(x / scale)`, the
  definition of MIL's `quantize` (coremltools' value inference) and of MLIR's
  `quant.qcast`; the two differ in the last bit for some x, which can move a value
  on a rounding boundary by one step.
- dequantize: `(q - zp) * scale`, q and zp converted to the compute type first
  (the output type by default), then cast to the output type (torch computes a
  float16 `dequantize_per_tensor` in f32, its "opmath" type, with the Python float
  scale unrounded: the frontend gives it compute type f32). torch's
  `dequantize_per_channel(_group)` subtract in integers before converting; the
  results agree while |q| and |zp| are exact in the compute type (below 2^24 in
  f32, 2^11 in f16), which every 8- and 16-bit storage type is in f32.
- choose_qparams: over each block, `mn = min(min(x), 0)`, `mx = max(max(x), 0)`,
  in x's float type; asymmetric `scale = max((mx - mn) / (qmax - qmin), eps)`,
  `zp = clamp(qmin - rne(mn / scale), qmin, qmax)`; symmetric
  `scale = max(max(-mn, mx) / ((qmax - qmin) / 2), eps)`; symmetric without clipping
  error `scale = max(where(mn / qmin > mx / qmax, mn / qmin, mx / qmax), eps)`; a
  symmetric zero point is `int((qmax + qmin + 1) / 2)` (torchao's
  `choose_qparams_affine`; `quantized_decomposed.choose_qparams_symmetric` gives 128
  for uint8 and 0 otherwise, the same for the default ranges, which the frontend
  checks); eps is rounded to x's type.
- codebook: `out[i] = codebook[i0 // b0, ..., i_{r-1} // b_{r-1}, codes[i], :]`
  (torchao's `dequantize_codebook`; MIL's iOS18 `constexpr_lut_to_dense`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from qopt.dialects.quant import reduced_shape, resolve_block_size

Block = Sequence[int] | None

RECIPROCAL = "reciprocal"
"""Quantize as torch: multiply by the reciprocal of the scale."""
DIVIDE = "divide"
"""Quantize as MIL's `quantize` and MLIR's `quant.qcast`: divide by the scale."""

ASYMMETRIC = "asymmetric"
SYMMETRIC = "symmetric"
SYMMETRIC_NO_CLIPPING_ERR = "symmetric_no_clipping_err"
"""choose_qparams mappings (the values of `qopt.dialects.quant.Mapping`)."""


# ----- parameter layout -----------------------------------------------------------


def expand_params(params: ArrayLike, block: Block, shape: Sequence[int]) -> np.ndarray:
    """Per-block parameters as a view broadcast to `shape`: element i uses
    `params.reshape(shape / block)[i // block]`. `block=None`: `params` as is
    (numpy broadcasting applies)."""
    p = np.asarray(params)
    if block is None:
        return p
    reduced = reduced_shape(block, shape)
    p = p.reshape(reduced)
    # (r0, 1, r1, 1, ...) broadcast against (r0, b0, r1, b1, ...)
    split = tuple(x for r, b in zip(reduced, block, strict=True) for x in (r, b))
    interleaved = p.reshape(tuple(x for r in reduced for x in (r, 1)))
    return np.broadcast_to(interleaved, split).reshape(tuple(shape))


def block_view(x: np.ndarray, block: Sequence[int]) -> np.ndarray:
    """`x` reshaped to (r0, b0, r1, b1, ...): its blocks on the odd axes."""
    split = tuple(v for d, b in zip(x.shape, block, strict=True) for v in (d // b, b))
    return x.reshape(split)


# ----- quantize / dequantize --------------------------------------------------------


def reciprocal(scale: ArrayLike, dtype: DTypeLike) -> np.ndarray:
    """torch's `1.0 / scale` as a quantizer uses it: the reciprocal in the scale's own
    type (double for a Python float), rounded to `dtype`, the type the product is
    computed in. A zero scale gives inf (torch multiplies by inf too)."""
    s = np.asarray(scale)
    with np.errstate(divide="ignore"):
        return (np.asarray(1.0, s.dtype) / s).astype(dtype)


def scaled(
    x: ArrayLike,
    scale: ArrayLike,
    block: Block = None,
    compute_dtype: DTypeLike | None = None,
    *,
    rule: str = RECIPROCAL,
) -> np.ndarray:
    """`x` in units of the scale before rounding, in the compute type
    (promote(x, scale) by default): `x * f(1 / scale)` (RECIPROCAL, torch) or
    `x / scale` (DIVIDE, MIL / MLIR)."""
    x = np.asarray(x)
    s = np.asarray(scale)
    ct: np.dtype[Any] = np.dtype(
        np.promote_types(x.dtype, s.dtype) if compute_dtype is None else compute_dtype
    )
    # Overflow to +-inf (clamped later) and a zero scale are defined as in torch.
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        if rule == RECIPROCAL:
            return x.astype(ct) * expand_params(reciprocal(s, ct), block, x.shape)
        if rule == DIVIDE:
            return x.astype(ct) / expand_params(s, block, x.shape).astype(ct)
    raise ValueError(f"unknown quantize rule {rule!r} (expected {RECIPROCAL!r} or {DIVIDE!r})")


def quantize_scaled(
    v: np.ndarray,
    zero_point: ArrayLike | None,
    qmin: int,
    qmax: int,
    dtype: DTypeLike,
    *,
    zero_point_before_rounding: bool = False,
) -> np.ndarray:
    """The integers of `v` (x in units of the scale, see `scaled`):
    `clamp(rne(v) + zp, qmin, qmax)`, or `clamp(rne(v + zp), ...)`
    with `zero_point_before_rounding`, in v's type, cast to `dtype`. `zero_point`
    broadcasts against v."""
    v = np.asarray(v)
    if zero_point is None:
        q = np.round(v)
    else:
        zp = np.asarray(zero_point).astype(v.dtype)
        q = np.round(v + zp) if zero_point_before_rounding else np.round(v) + zp
    return np.clip(q, int(qmin), int(qmax)).astype(dtype)


def quantize(
    x: ArrayLike,
    scale: ArrayLike,
    zero_point: ArrayLike | None,
    block: Block,
    qmin: int,
    qmax: int,
    dtype: DTypeLike,
    compute_dtype: DTypeLike | None = None,
    *,
    zero_point_before_rounding: bool = False,
    rule: str = RECIPROCAL,
) -> np.ndarray:
    """Affine quantization (see the module docstring): `quantized_decomposed.
    quantize_per_tensor / per_channel / per_channel_group`, `torchao.quantize_affine`,
    MIL `quantize` (with `rule=DIVIDE`)."""
    x = np.asarray(x)
    v = scaled(x, scale, block, compute_dtype, rule=rule)
    zp = None if zero_point is None else expand_params(zero_point, block, x.shape)
    return quantize_scaled(
        v, zp, qmin, qmax, dtype, zero_point_before_rounding=zero_point_before_rounding
    )


def dequantize(
    q: ArrayLike,
    scale: ArrayLike,
    zero_point: ArrayLike | None,
    block: Block,
    dtype: DTypeLike,
    compute_dtype: DTypeLike | None = None,
) -> np.ndarray:
    """`(q - zp) * scale` in the compute type (the output type by default), cast to
    `dtype`: `quantized_decomposed.dequantize_*`, `torchao.dequantize_affine`, MIL
    `dequantize` / `constexpr_affine_dequantize` / `constexpr_blockwise_shift_scale`."""
    q = np.asarray(q)
    ct: np.dtype[Any] = np.dtype(dtype if compute_dtype is None else compute_dtype)
    v = q.astype(ct)
    if zero_point is not None:
        v = v - expand_params(zero_point, block, q.shape).astype(ct)
    v = v * expand_params(scale, block, q.shape).astype(ct)
    return v.astype(dtype)


# ----- dynamic quantization parameters --------------------------------------------


def choose_qparams(
    x: np.ndarray,
    block: Sequence[int],
    qmin: int,
    qmax: int,
    mapping: str,
    eps: float,
    scale_dtype: DTypeLike,
    zero_point_dtype: DTypeLike,
) -> tuple[np.ndarray, np.ndarray]:
    """Scale and zero point of every block of `x` (shaped `x.shape / block`),
    computed in x's float type (see the module docstring): torchao's
    `choose_qparams_affine`, `quantized_decomposed.choose_qparams(_symmetric).tensor`."""
    x = np.asarray(x)
    ct = x.dtype
    view = block_view(x, block)
    axes = tuple(range(1, view.ndim, 2))
    zero = np.zeros((), ct)
    mn = np.minimum(view.min(axis=axes), zero)
    mx = np.maximum(view.max(axis=axes), zero)
    eps_c = np.asarray(eps, dtype=ct)
    with np.errstate(divide="ignore", invalid="ignore"):  # eps 0 on an all-zero block
        if mapping == ASYMMETRIC:
            scale = np.maximum((mx - mn) / ct.type(float(qmax - qmin)), eps_c)
            zp = np.clip(qmin - np.round(mn / scale), qmin, qmax)
        else:
            if mapping == SYMMETRIC:
                scale = np.maximum(-mn, mx) / ct.type(float(qmax - qmin) / 2)
            elif mapping == SYMMETRIC_NO_CLIPPING_ERR:
                smin = mn / ct.type(float(qmin))
                smax = mx / ct.type(float(qmax))
                scale = np.where(smin > smax, smin, smax)
            else:
                raise ValueError(f"unknown choose_qparams mapping {mapping!r}")
            scale = np.maximum(scale, eps_c)
            zp = np.full_like(scale, symmetric_zero_point(qmin, qmax))
    return scale.astype(scale_dtype), zp.astype(zero_point_dtype)


def symmetric_zero_point(qmin: int, qmax: int) -> int:
    """The zero point of a symmetric mapping: torchao's `int((qmax + qmin + 1) / 2)`
    (0 for int8 and int4, 128 for uint8 [0, 255], 8 for uint4)."""
    return int((qmax + qmin + 1) / 2)


# ----- codebooks ------------------------------------------------------------------


def codebook_lookup(codes: np.ndarray, codebook: np.ndarray, block: Sequence[int]) -> np.ndarray:
    """`codebook[i0 // b0, ..., codes[i], :]` for every element i of `codes`:
    shape `(*codes.shape, V)` (V the codebook's last dim, its vector size). `block`
    may hold -1 (the whole dimension)."""
    codes = np.asarray(codes)
    shape = codes.shape
    full = resolve_block_size(block, shape)
    index = tuple(
        (np.arange(d) // b).reshape([-1 if j == i else 1 for j in range(len(shape))])
        for i, (d, b) in enumerate(zip(shape, full, strict=True))
    )
    return np.asarray(codebook)[(*index, codes.astype(np.int64))]


def dequantize_codebook(
    codes: np.ndarray, codebook: np.ndarray, block: Sequence[int], dtype: DTypeLike
) -> np.ndarray:
    """torchao's `quant.dequantize_codebook`: the looked-up entries (the vector
    dim squeezed when it is 1) cast to `dtype`."""
    out = codebook_lookup(codes, codebook, block)
    if out.shape[-1] == 1:
        out = out[..., 0]
    return out.astype(dtype)


def lut_to_dense(
    indices: np.ndarray, lut: np.ndarray, vector_axis: int | None = None
) -> np.ndarray:
    """MIL's iOS18 `constexpr_lut_to_dense`: `lut` `[g0, ..., g_{r-1}, 2^n, V]`, one
    palette per block of `d_i / g_i` along each dim; V > 1 expands the output along
    `vector_axis` by V."""
    indices = np.asarray(indices)
    rank = indices.ndim
    block = [d // g for d, g in zip(indices.shape, lut.shape[:rank], strict=True)]
    values = codebook_lookup(indices, lut, block)  # [*shape, V]
    if lut.shape[-1] == 1:
        return values[..., 0]
    if vector_axis is None:
        raise ValueError("a LUT of vectors (V > 1) needs a vector_axis")
    moved = np.moveaxis(values, -1, vector_axis + 1)
    shape = list(indices.shape)
    shape[vector_axis] *= lut.shape[-1]
    return moved.reshape(shape)


__all__ = [
    "ASYMMETRIC",
    "DIVIDE",
    "RECIPROCAL",
    "SYMMETRIC",
    "SYMMETRIC_NO_CLIPPING_ERR",
    "block_view",
    "choose_qparams",
    "codebook_lookup",
    "dequantize",
    "dequantize_codebook",
    "expand_params",
    "lut_to_dense",
    "quantize",
    "quantize_scaled",
    "reciprocal",
    "scaled",
    "symmetric_zero_point",
]
