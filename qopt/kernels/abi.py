"""The buffer ABI's element types on the host: every binding holds 4-byte words,
read as f32, i32 or raw u32 (see qopt.kernels.spec)."""

from __future__ import annotations

import numpy as np

from qopt.errors import QoptError

NUMPY_DTYPES = {"f32": np.dtype(np.float32), "i32": np.dtype(np.int32), "u32": np.dtype(np.uint32)}
"""Buffer dtype name -> the numpy dtype of its words."""


def narrow(array: np.ndarray, dtype: np.dtype, what: str) -> np.ndarray:
    """`array` as a flat `dtype` array; integers must fit (int64 -> int32)."""
    flat = np.ascontiguousarray(array).reshape(-1)
    if flat.dtype == np.bool_:
        return flat.astype(dtype)
    if flat.dtype.kind in "iu" and dtype.kind in "iu" and flat.size:
        info = np.iinfo(dtype)
        lo, hi = int(flat.min()), int(flat.max())
        if lo < info.min or hi > info.max:
            raise QoptError(
                f"{what} holds values in [{lo}, {hi}], outside {dtype.name}: Vulkan buffers "
                f"carry integers as {dtype.name}"
            )
    return flat.astype(dtype)
