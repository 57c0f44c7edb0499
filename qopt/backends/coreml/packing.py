"""Sub-byte bit streams as Core ML writes them (PATTERNS.md §3.5).

Row-major elements, LSB first: element i occupies bits [i*n, (i+1)*n) of the
little-endian stream, so an element may straddle two bytes. Signed values are
two's complement in n bits.
"""

from __future__ import annotations

import numpy as np


def pack_bits(values: np.ndarray, nbits: int) -> np.ndarray:
    """uint8 bytes holding `values` (any integer dtype, fitting in `nbits`)."""
    flat = np.asarray(values).reshape(-1).astype(np.int64) & ((1 << nbits) - 1)
    bits = ((flat[:, None] >> np.arange(nbits)) & 1).astype(np.uint8).reshape(-1)
    return np.packbits(bits, bitorder="little")


def unpack_bits(raw: np.ndarray | bytes, nbits: int, count: int, signed: bool) -> np.ndarray:
    """The first `count` `nbits`-wide values of a packed stream (int8/uint8 containers)."""
    data = np.frombuffer(raw, np.uint8) if isinstance(raw, bytes) else np.asarray(raw, np.uint8)
    bits = np.unpackbits(data, bitorder="little")[: count * nbits].reshape(count, nbits)
    values = (bits.astype(np.int64) << np.arange(nbits)).sum(axis=1)
    if signed:
        values = np.where(values >= 1 << (nbits - 1), values - (1 << nbits), values)
        return values.astype(np.int8)
    return values.astype(np.uint8)


def packed_nbytes(count: int, nbits: int) -> int:
    return -(-count * nbits // 8)
