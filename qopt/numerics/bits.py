"""Sub-byte values as an LSB-first bit stream (docs/interfaces.md, `weight.bin`).

Core ML writes sub-byte constants (`int4`, `uint1` ... `uint6` in `weight.bin`, and
the iOS16 `constexpr_lut_to_dense` indices) this way: row-major elements, element
i in bits [i*n, (i+1)*n) of the little-endian byte stream, so an element may
straddle two bytes. Signed values are two's complement in n bits; unpacked values
live in int8 / uint8 containers (Core ML's storage dtypes).

(The Vulkan kernels' packing, `qopt.kernels.packing`, is a different layout: whole
fields of 1, 2, 4 or 8 bits in 32-bit words, rows padded to 128 bits, values
offset by `lo`.)
"""

from __future__ import annotations

import numpy as np

UNPACK_CHUNK = 1 << 20
"""Elements unpacked at a time (a multiple of 8, so every chunk starts on a byte):
the temporaries of one chunk are ~50x its size."""


def packed_nbytes(count: int, nbits: int) -> int:
    """Bytes `count` values of `nbits` bits take."""
    return -(-count * nbits // 8)


def pack_bits(values: np.ndarray, nbits: int) -> np.ndarray:
    """uint8 bytes holding `values` (any integer dtype, fitting in `nbits`)."""
    flat = np.asarray(values).reshape(-1).astype(np.int64) & ((1 << nbits) - 1)
    bits = ((flat[:, None] >> np.arange(nbits)) & 1).astype(np.uint8).reshape(-1)
    return np.packbits(bits, bitorder="little")


def _unpack_chunk(data: np.ndarray, nbits: int, count: int, signed: bool) -> np.ndarray:
    bits = np.unpackbits(data, bitorder="little")[: count * nbits].reshape(count, nbits)
    values = (bits.astype(np.int64) << np.arange(nbits)).sum(axis=1)
    if signed:
        values = np.where(values >= 1 << (nbits - 1), values - (1 << nbits), values)
        return values.astype(np.int8)
    return values.astype(np.uint8)


def unpack_bits(raw: np.ndarray | bytes, nbits: int, count: int, signed: bool) -> np.ndarray:
    """The first `count` `nbits`-wide values of a packed stream (int8 / uint8
    containers), unpacked `UNPACK_CHUNK` values at a time."""
    data = np.frombuffer(raw, np.uint8) if isinstance(raw, bytes) else np.asarray(raw, np.uint8)
    data = data.reshape(-1)
    if count <= UNPACK_CHUNK:
        return _unpack_chunk(data, nbits, count, signed)
    out = np.empty(count, np.int8 if signed else np.uint8)
    for start in range(0, count, UNPACK_CHUNK):
        k = min(UNPACK_CHUNK, count - start)
        first = start * nbits // 8  # chunks start on a byte boundary
        out[start : start + k] = _unpack_chunk(
            data[first : first + packed_nbytes(k, nbits)], nbits, k, signed
        )
    return out


__all__ = ["UNPACK_CHUNK", "pack_bits", "packed_nbytes", "unpack_bits"]
