"""Source indices and weights of torch's 2-D resizing (`upsample_nearest2d`,
`upsample_bilinear2d`), per axis, in float32 as ATen's CPU kernels compute them
(aten/src/ATen/native/UpSample.h): the interpreter applies them with numpy, the
lowerings bake them into gathers and weight constants, so every level picks the
same source pixels.

`scale` is the user's scale factor of that axis (None when an output size was
given); torch then maps with `1 / scale` (in double, rounded to float), else with
`input_size / output_size` in float.
"""

from __future__ import annotations

import numpy as np

F32 = np.float32


def _scale(in_size: int, out_size: int, scale: float | None) -> np.float32:
    if scale is not None and scale > 0:
        return F32(1.0 / scale)
    return F32(in_size) / F32(out_size)


def nearest_indices(in_size: int, out_size: int, scale: float | None) -> np.ndarray:
    """int64 source index of each output index (legacy 'nearest': floor, not round)."""
    dst = np.arange(out_size, dtype=np.int64)
    if out_size == in_size:
        return dst
    if out_size == 2 * in_size:
        return dst >> 1
    src = np.floor(dst.astype(F32) * _scale(in_size, out_size, scale)).astype(np.int64)
    return np.minimum(src, in_size - 1)


def linear_weights(
    in_size: int, out_size: int, align_corners: bool, scale: float | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(i0, i1, w0, w1): each output index reads `w0 * x[i0] + w1 * x[i1]` (int64
    indices, float32 weights; `i1 = i0 + 1` except at the last input index)."""
    dst = np.arange(out_size, dtype=np.int64).astype(F32)
    if align_corners:
        ratio = F32(in_size - 1) / F32(out_size - 1) if out_size > 1 else F32(0)
        real = ratio * dst
    else:
        real = _scale(in_size, out_size, scale) * (dst + F32(0.5)) - F32(0.5)
        real = np.where(real < 0, F32(0), real).astype(F32)
    i0 = np.minimum(np.floor(real).astype(np.int64), in_size - 1)
    w1 = np.clip(real - i0.astype(F32), F32(0), F32(1)).astype(F32)
    w0 = (F32(1) - w1).astype(F32)
    i1 = i0 + (i0 < in_size - 1).astype(np.int64)
    return i0, i1, w0, w1


def upsample_nearest2d(
    x: np.ndarray, out_hw: tuple[int, int], scales: tuple[float | None, float | None]
) -> np.ndarray:
    """`x[..., h(oh), w(ow)]` over the last two dims."""
    h = nearest_indices(x.shape[-2], out_hw[0], scales[0])
    w = nearest_indices(x.shape[-1], out_hw[1], scales[1])
    return x[..., h[:, None], w[None, :]]


def upsample_bilinear2d(
    x: np.ndarray,
    out_hw: tuple[int, int],
    align_corners: bool,
    scales: tuple[float | None, float | None],
) -> np.ndarray:
    """torch's order: `h0w * (w0w * x00 + w1w * x01) + h1w * (w0w * x10 + w1w * x11)`,
    in x's float type."""
    h0, h1, hw0, hw1 = linear_weights(x.shape[-2], out_hw[0], align_corners, scales[0])
    w0, w1, ww0, ww1 = linear_weights(x.shape[-1], out_hw[1], align_corners, scales[1])
    dtype = x.dtype
    hw0, hw1 = hw0.astype(dtype)[:, None], hw1.astype(dtype)[:, None]
    ww0, ww1 = ww0.astype(dtype)[None, :], ww1.astype(dtype)[None, :]
    top = ww0 * x[..., h0[:, None], w0[None, :]] + ww1 * x[..., h0[:, None], w1[None, :]]
    bottom = ww0 * x[..., h1[:, None], w0[None, :]] + ww1 * x[..., h1[:, None], w1[None, :]]
    return (hw0 * top + hw1 * bottom).astype(dtype)
