"""Weight layouts of qopt's Vulkan kernels (numpy only, no Python lists of values).

Packed integer data (`pack_bits`): each row of the last dimension is a run of
`bits`-bit unsigned fields, `32 // bits` per uint32 word, element j of a word at
bit `bits * j` (even element in the low bits: the ExecuTorch q4gsw order); the
field holds `value - lo` where `lo = field_offset(qmin, bits)` (-2^(bits-1) for a
signed range, 0 for an unsigned one), so int4 [-8, 7] is stored offset-binary
(value + 8) as ExecuTorch's Vulkan buffers do and int8 as value + 128. Rows are
padded with zero fields to a multiple of 128 bits (one uvec4, the tuned linear
kernels' load width); `row_words` is the padded row length in words.

Zero points travel as `zp - lo` (i32), so a kernel computes `field - zero`
= `value - zp` exactly; a symmetric weight (no zero point) uses the default
zero `2^(bits-1)` (= `0 - lo`). Scales stay float32 `[rows, groups]` row-major
(the tuned kernels walk K inside a row, so row-major scales are the coalesced
order for them). LUT codes use fields of `lut_field_bits(nbits)` (1, 2, 4 or 8:
no field straddles a word) and codebooks are float32 `[row groups, col groups, 2^nbits]`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

CHUNK_BITS = 128


def field_offset(qmin: int, bits: int) -> int:
    """`lo`: the value stored as field 0."""
    return -(1 << (bits - 1)) if qmin < 0 else 0


def row_words(cols: int, bits: int) -> int:
    """Words per packed row of `cols` values (padded to a multiple of 128 bits)."""
    per_chunk = CHUNK_BITS // bits
    return -(-cols // per_chunk) * per_chunk * bits // 32


#: Fields packed per step of `pack_bits`: its temporaries stay this small (cache-sized
#: and reused), so a large weight costs its output's pages, not four fresh copies.
PACK_STEP_FIELDS = 1 << 20


def pack_bits(values: np.ndarray, bits: int, lo: int = 0) -> np.ndarray:
    """`values` ([..., cols] integers in [lo, lo + 2^bits)) -> uint32 [rows, row_words].

    Rows are packed a block at a time (`PACK_STEP_FIELDS`): each block's fields are
    formed as bytes (`value - lo`, padding fields 0), then combined without widening
    any value: the `8 / bits` bytes that make one packed byte are read as one
    little-endian integer, where field k sits at bit 8k, so shifting it right by
    `(8 - bits) * k` puts field k at bit `bits * k` and nothing else below bit 8; the
    OR of those shifts, truncated to its low byte, is the packed byte. The packed bytes
    are read as little-endian words (a 32000 x 2048 int4 embedding packs in ~0.05 s)."""
    if bits not in (1, 2, 4, 8):
        raise ValueError(f"pack_bits: bits must be 1, 2, 4 or 8, got {bits}")
    v = np.asarray(values)
    cols = v.shape[-1] if v.ndim else 1
    v = v.reshape(math.prod(v.shape[:-1]) if v.ndim else 1, cols)
    rows = v.shape[0]
    width = row_words(cols, bits) * (32 // bits)  # fields per padded row
    per_byte = 8 // bits
    packed = np.empty((rows, width // per_byte), dtype=np.uint8)
    step = max(1, PACK_STEP_FIELDS // max(width, 1))
    fields = np.zeros((min(step, rows), width), dtype=np.uint8)  # padding stays 0
    for start in range(0, rows, step):
        block = v[start : start + step]
        if block.size:
            low, high = int(block.min()), int(block.max())
            if low < lo or high >= lo + (1 << bits):
                raise ValueError(f"pack_bits: values outside [{lo}, {lo + (1 << bits) - 1}]")
        field = fields[: block.shape[0]]
        if lo == 0:
            field[:, :cols] = block
        else:
            np.subtract(block, lo, out=field[:, :cols], casting="unsafe")
        out = packed[start : start + block.shape[0]]
        if per_byte == 1:
            out[...] = field
            continue
        grouped = field.view(f"<u{per_byte}")  # one packed byte's fields, field k at bit 8k
        combined = grouped >> np.uint8(8 - bits)
        combined |= grouped
        for k in range(2, per_byte):
            combined |= grouped >> np.uint8((8 - bits) * k)
        np.copyto(out, combined, casting="unsafe")  # the low byte
    return packed.view("<u4").astype(np.uint32, copy=False)


def unpack_bits(words: np.ndarray, bits: int, cols: int, lo: int = 0) -> np.ndarray:
    """Inverse of `pack_bits`: int64 [rows, cols]."""
    w = np.asarray(words, dtype=np.uint32)
    w = w.reshape(-1, w.shape[-1] if w.ndim else 1)
    vpw = 32 // bits
    shifts = (np.arange(vpw, dtype=np.uint32) * np.uint32(bits))[None, None, :]
    fields = (w[:, :, None] >> shifts) & np.uint32((1 << bits) - 1)
    return fields.reshape(w.shape[0], -1)[:, :cols].astype(np.int64) + lo


def storage_bits(qmin: int, qmax: int) -> int:
    """Field width for an integer range: 4 (int4/uint4 and narrower) or 8."""
    if (qmin < 0 and qmin >= -8 and qmax <= 7) or (qmin >= 0 and qmax <= 15):
        return 4
    if qmin >= -128 and qmax <= 255:
        return 8
    raise ValueError(f"range [{qmin}, {qmax}] does not fit 8-bit fields")


@dataclass
class PackedAffine:
    """An affine weight `[rows, cols]` in the layout of the q4/q8 kernels."""

    weight: np.ndarray  # uint32 [rows, row_words]
    scales: np.ndarray  # float32 [rows, ngroups]
    zeros: np.ndarray | None  # int32 [rows, ngroups] = zp - lo, None if symmetric
    bits: int
    lo: int
    group_size: int
    rows: int
    cols: int

    @property
    def row_words(self) -> int:
        return int(self.weight.shape[1])

    @property
    def ngroups(self) -> int:
        return int(self.scales.shape[1])

    @property
    def default_zero(self) -> int:
        return 1 << (self.bits - 1)


def pack_affine(
    data: np.ndarray,
    scale: np.ndarray,
    zero_point: np.ndarray | None,
    qmin: int,
    qmax: int,
    group_size: int | None = None,
) -> PackedAffine:
    """Pack a 2-D affine weight `(data - zp) * scale` with per-row groups along the
    last dim: `scale`/`zero_point` shaped `[rows, cols / G]` (or `[rows]` / `[rows, 1]`
    for per-channel). Symmetric signed data only may omit the zero point."""
    d = np.asarray(data)
    if d.ndim != 2:
        d = d.reshape(d.shape[0], -1)
    rows, cols = d.shape
    bits = storage_bits(qmin, qmax)
    lo = field_offset(qmin, bits)
    if zero_point is None and lo == 0:
        raise ValueError("an unsigned weight needs its zero point")
    s = np.asarray(scale, dtype=np.float32).reshape(rows, -1)
    ngroups = s.shape[1]
    if group_size is None:
        group_size = int(cols // ngroups)
    if group_size * ngroups != cols:
        raise ValueError(f"{ngroups} groups do not tile {cols} columns")
    zeros = None
    if zero_point is not None:
        zeros = (np.asarray(zero_point).astype(np.int64).reshape(rows, ngroups) - lo).astype(
            np.int32
        )
    return PackedAffine(
        weight=pack_bits(d, bits, lo),
        scales=np.ascontiguousarray(s),
        zeros=zeros,
        bits=bits,
        lo=lo,
        group_size=int(group_size),
        rows=rows,
        cols=cols,
    )


def unpack_affine(p: PackedAffine) -> np.ndarray:
    """The float64 weight values `(value - zp) * scale` of a packed weight."""
    fields = unpack_bits(p.weight, p.bits, p.cols)
    zero = p.zeros if p.zeros is not None else np.full(p.scales.shape, p.default_zero)
    g = np.arange(p.cols) // p.group_size
    return (fields - zero[:, g]).astype(np.float64) * p.scales[:, g].astype(np.float64)


def lut_field_bits(nbits: int) -> int:
    for b in (1, 2, 4, 8):
        if nbits <= b:
            return b
    raise ValueError(f"LUT nbits must be <= 8, got {nbits}")


@dataclass
class PackedLut:
    codes: np.ndarray  # uint32 [rows, row_words]
    codebook: np.ndarray  # float32 [GR * GC * L]
    field_bits: int
    block_rows: int
    block_cols: int
    col_groups: int
    lut_size: int
    rows: int
    cols: int

    @property
    def row_words(self) -> int:
        return int(self.codes.shape[1])


def pack_lut(codes: np.ndarray, codebook: np.ndarray, nbits: int) -> PackedLut:
    """Codes `[rows, cols]` and a qfused codebook `[GR, GC, 2^nbits, 1]` (block
    `[rows / GR, cols / GC]`) in the LUT kernels' layout."""
    c = np.asarray(codes)
    rows, cols = c.shape
    cb = np.asarray(codebook, dtype=np.float32)
    if cb.ndim == 4:
        cb = cb[..., 0]
    gr, gc, lut = cb.shape
    if rows % gr or cols % gc:
        raise ValueError(f"codebook grid {gr}x{gc} does not tile {rows}x{cols}")
    fb = lut_field_bits(nbits)
    return PackedLut(
        codes=pack_bits(c, fb, 0),
        codebook=np.ascontiguousarray(cb.reshape(-1)),
        field_bits=fb,
        block_rows=rows // gr,
        block_cols=cols // gc,
        col_groups=gc,
        lut_size=lut,
        rows=rows,
        cols=cols,
    )


def pad_to(x: np.ndarray, multiple: int, value: float = 0) -> np.ndarray:
    """Flattened `x` padded with `value` to a multiple of `multiple` elements."""
    flat = np.asarray(x).reshape(-1)
    extra = (-flat.size) % multiple
    if not extra:
        return flat
    return np.concatenate([flat, np.full(extra, value, dtype=flat.dtype)])
