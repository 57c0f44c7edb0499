"""Helpers of the kernels' numpy references: buffers as flat 4-byte words, the f32
quantizer the shaders run, and the unpacking of packed weights."""

from __future__ import annotations

from typing import Any

import numpy as np

from qopt.kernels.extents import RANK, shape6, spec_int
from qopt.kernels.packing import unpack_bits
from qopt.kernels.spec import STATUS, PushValues, SpecValues
from qopt.numerics.quant import quantize_scaled

F32 = np.float32


def as_words(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a).reshape(-1)
    assert a.dtype.itemsize == 4, f"buffers hold 4-byte words, got {a.dtype}"
    return a.view(np.uint32)


def f32s(a: np.ndarray) -> np.ndarray:
    return as_words(a).view(np.float32)


def i32s(a: np.ndarray) -> np.ndarray:
    return as_words(a).view(np.int32)


def store(buffers: dict[str, np.ndarray], name: str, values: np.ndarray, offset: int = 0) -> None:
    """Write `values` (4-byte dtype) bit for bit into buffer `name` at `offset` words."""
    v = as_words(np.asarray(values))
    out = buffers.get(name)
    if out is None or out.size < offset + v.size:
        fresh = np.zeros(offset + v.size, dtype=np.uint32)
        if out is not None:
            fresh[: out.size] = as_words(out)
        out = fresh.view(out.dtype if out is not None else np.float32)
        buffers[name] = out
    out.reshape(-1).view(np.uint32)[offset : offset + v.size] = v


def strided_index(push: PushValues, dims: tuple[int, ...], stride_prefix: str) -> np.ndarray:
    """Flat element offsets (without base offset) of a 6-D index space."""
    strides = shape6(push, stride_prefix)
    idx = np.zeros(dims, dtype=np.int64)
    for axis, (d, s) in enumerate(zip(dims, strides, strict=True)):
        shape = [1] * RANK
        shape[axis] = d
        idx = idx + (np.arange(d, dtype=np.int64) * s).reshape(shape)
    return idx.reshape(-1)


def quantize(
    x: np.ndarray, inv: float, zp: float, qmin: float, qmax: float, zp_first: bool = False
) -> np.ndarray:
    """The shaders' quantizer on the host's `inv_scale = f32(1 / scale)` push constant:
    `clamp(roundEven(x * inv) + zp, qmin, qmax)` in f32 (`roundEven(x * inv + zp)`
    with `zp_first`), as int64: `qopt.numerics.quant.quantize_scaled`."""
    return quantize_scaled(
        x.astype(F32) * F32(inv),
        F32(zp),
        int(qmin),
        int(qmax),
        np.int64,
        zero_point_before_rounding=zp_first,
    )


def requantize(y: np.ndarray, push: PushValues, requant: bool) -> np.ndarray:
    y = np.minimum(np.maximum(y.astype(F32), F32(push["clamp_min"])), F32(push["clamp_max"]))
    if not requant:
        return y.astype(F32)
    q = quantize(y, push["out_inv_scale"], push["out_zp"], push["out_qmin"], push["out_qmax"])
    return q.astype(np.int32)


def erf_f32(v: np.ndarray) -> np.ndarray:
    """The shaders' float erf (Eigen's rational approximation), in f32."""
    x = np.clip(v.astype(F32), F32(-4), F32(4))
    x2 = x * x
    num = x2 * F32(-2.72614225801306e-10) + F32(2.77068142495902e-08)
    for c in (
        -2.10102402082508e-06,
        -5.69250639462346e-05,
        -7.34990630326855e-04,
        -2.95459980854025e-03,
        -1.60960333262415e-02,
    ):
        num = num * x2 + F32(c)
    num = num * x
    den = x2 * F32(-1.45660718464996e-05) + F32(-2.13374055278905e-04)
    for c in (-1.68282697438203e-03, -7.37332916720468e-03, -1.42647390514189e-02):
        den = den * x2 + F32(c)
    return (num / den).astype(F32)


def rows_of(buffers: dict[str, np.ndarray], name: str, push: PushValues) -> np.ndarray:
    rows, cols = int(push["rows"]), int(push["cols"])
    return f32s(buffers[name])[: rows * cols].reshape(rows, cols)


def row_index(
    buffers: dict[str, np.ndarray], idx: np.ndarray, v: int
) -> tuple[np.ndarray, np.ndarray]:
    """Rows of `idx` in a table of `v` rows (a negative index in [-v, 0) reads row
    idx + v) and which of them are read (the others give 0). Any index outside [0, v),
    the range torch's embedding and index_select accept, sets the status word (as the
    shaders' atomicOr): a program with one is an error, whatever the row read."""
    raw = idx.astype(np.int64)
    r = np.where(raw < 0, raw + v, raw)
    ok = (r >= 0) & (r < v)
    if bool(((raw < 0) | (raw >= v)).any()):
        status = buffers.get(STATUS)
        word = np.uint32(0) if status is None else as_words(status)[0]
        store(buffers, STATUS, np.array([word | np.uint32(1)], np.uint32))
    return np.where(ok, r, 0), ok


def fields(
    buffers: dict[str, np.ndarray], name: str, rows: int, row_words: int, bits: int, cols: int
) -> np.ndarray:
    words = as_words(buffers[name])[: rows * row_words].reshape(rows, row_words)
    return unpack_bits(words, bits, cols)


def affine_weight(
    buffers: dict[str, np.ndarray],
    rows: int,
    cols: int,
    row_words: int,
    ngroups: int,
    bits: int,
    group: int,
    has_zp: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(field - zero) int64 [rows, cols], scales f32 [rows, ngroups], group index per col."""
    f = fields(buffers, "w", rows, row_words, bits, cols)
    g = np.minimum(np.arange(cols) // group, ngroups - 1)
    if has_zp:
        z = i32s(buffers["zeros"])[: rows * ngroups].reshape(rows, ngroups).astype(np.int64)
    else:
        z = np.full((rows, ngroups), 1 << (bits - 1), dtype=np.int64)
    s = f32s(buffers["scales"])[: rows * ngroups].reshape(rows, ngroups)
    return f - z[:, g], s, g


def lut_table(
    buffers: dict[str, np.ndarray],
    rows: int,
    cols: int,
    push: PushValues,
    spec: SpecValues,
    block_rows: str,
    block_cols: str,
    col_groups: str,
) -> np.ndarray:
    codes = fields(buffers, "codes", rows, int(push["row_words"]), spec_int(spec, "FBITS", 4), cols)
    br, bc, gc, lut = (int(push[x]) for x in (block_rows, block_cols, col_groups, "L"))
    base = (np.arange(rows)[:, None] // br) * gc + (np.arange(cols)[None, :] // bc)
    # a code >= L (pack_lut never writes one) reads the palette's last entry, as the shaders
    return f32s(buffers["codebook"])[base * lut + np.minimum(codes, lut - 1)]


def torch_conv(torch: Any, x: np.ndarray, w: np.ndarray, bias: Any, push: PushValues):
    y = torch.nn.functional.conv2d(
        torch.from_numpy(np.asarray(x, dtype=np.float64)),
        torch.from_numpy(np.asarray(w, dtype=np.float64)),
        None if bias is None else torch.from_numpy(np.asarray(bias, dtype=np.float64)),
        stride=(int(push["sh"]), int(push["sw"])),
        padding=(int(push["ph"]), int(push["pw"])),
        dilation=(int(push["dh"]), int(push["dw"])),
        groups=int(push["groups"]),
    )
    return y.numpy()
