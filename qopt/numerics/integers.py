"""Integer arithmetic as torch's CPU kernels compute it.

`int_pow`: `torch.pow` of integer tensors (ATen's `powi`): exponentiation by
squaring in the operands' type (wrapping on overflow, as C integers do); a negative
exponent gives 1 for a base of 1, +-1 for a base of -1 (by the exponent's parity)
and 0 for every other base (numpy refuses negative integer powers). `shift`: `<<` and
`>>` with torch's rules for shift amounts outside the width.
"""

from __future__ import annotations

import numpy as np


def int_pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """torch.pow of integer arrays `x`, `y` (broadcast), in their result type."""
    x, y = np.broadcast_arrays(np.asarray(x), np.asarray(y))
    dtype = np.result_type(x, y)
    x, y = x.astype(dtype), y.astype(dtype)
    negative = y < 0
    with np.errstate(over="ignore"):
        r = np.power(x, np.where(negative, 0, y))
    odd = (y % 2) != 0
    by_base = np.where(x == 1, 1, np.where(x == -1, np.where(odd, -1, 1), 0)).astype(dtype)
    return np.where(negative, by_base, r).astype(dtype)


__all__ = ["int_pow"]


def shift(x: np.ndarray, y: np.ndarray, left: bool) -> np.ndarray:
    """torch's integer shifts in x's type (width w): `x << y` wrapping, 0 where y < 0 or
    y >= w; `x >> y` arithmetic, `x >> (w - 1)` (signed) or 0 (unsigned) where y < 0 or
    y >= w - (1 if signed)."""
    x = np.asarray(x)
    y = np.asarray(y).astype(np.int64)
    width = x.dtype.itemsize * 8
    signed = x.dtype.kind == "i"
    unsigned = np.dtype(f"u{x.dtype.itemsize}")
    if left:
        amount = np.clip(y, 0, width - 1).astype(unsigned)
        r = (x.astype(unsigned) << amount).astype(x.dtype)
        return np.where((y < 0) | (y >= width), np.zeros_like(r), r)
    top = width - 1 if signed else width
    amount = np.clip(y, 0, width - 1).astype(x.dtype)
    fill = x >> np.asarray(width - 1, x.dtype) if signed else np.zeros_like(x)
    return np.where((y < 0) | (y >= top), fill, x >> amount)
