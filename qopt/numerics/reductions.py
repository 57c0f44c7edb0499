"""Float32 reductions in the order torch's CPU kernels use.

A float32 sum depends on the order of its additions; torch eager (ATen's CPU
`cascade_sum`) adds in a fixed, documented order, and a static activation
quantizer downstream of a reduction (RMSNorm's mean, a global average pool)
rounds the last-bit differences of any other order into whole quantization
steps. qopt's interpreters and its Vulkan kernels therefore sum in ATen's
order, so the IR before and after every pass, and the device, agree with torch
bit for bit where the reduction is the only source of difference.

ATen's order for a row of `n` contiguous float32 values (`vectorized_inner_sum`
over 8-lane vectors, `row_sum` with 4 independent chains, `multi_row_sum` with
a 4-level cascade of 16-row steps):

- the first `8 * (n // 8)` values are `n // 8` vectors of 8 lanes; vector `v`
  belongs to chain `v % 4` while `v < 4 * (n // 32)`, and the remaining
  (at most 3) vectors are added to chain 0 afterwards;
- within a chain, vectors are added in order into a level-0 accumulator; after
  every 16 vectors of the chain, level 0 is added into level 1 (and cleared),
  and when 256 have passed level 1 goes into level 2, at 4096 level 2 into 3
  (the cascade; for `n >= 2**22` the step grows, as `max(4, ceil_log2(rows) // 4)`
  bits); at the end levels 1, 2, 3 are added into level 0 in that order;
- chains combine as `((c0 + c1) + c2) + c3`, lane by lane;
- the result starts at 0, adds the `n % 8` trailing scalars in order, then the
  8 lanes in order.

Rows shorter than 8 use the scalar `row_sum`: 4 chains of scalars (element `i`
in chain `i % 4` for the first `4 * (n // 4)`), the rest added to chain 0, the
chains combined in order. `mean` is this sum divided by `n` in float32 (ATen's
CPU `mean` is `sum(...).div_(n)`).

Multi-threaded splitting (torch splits one output's reduction across threads
only above 32768 inputs) is not modelled.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

F32 = np.float32
_LANES = 8
_CHAINS = 4
_LEVELS = 4


def _ceil_log2(x: int) -> int:
    return 1 if x <= 2 else int(x - 1).bit_length()


def _cascade(rows: np.ndarray) -> np.ndarray:
    """ATen's `multi_row_sum`: rows [..., size, k] summed over `size` -> [..., k]."""
    size = rows.shape[-2]
    power = max(4, _ceil_log2(size) // _LEVELS)
    step = 1 << power
    mask = step - 1
    acc = [np.zeros(rows.shape[:-2] + rows.shape[-1:], F32) for _ in range(_LEVELS)]
    i = 0
    while i + step <= size:
        for _ in range(step):
            acc[0] += rows[..., i, :]
            i += 1
        for j in range(1, _LEVELS):
            acc[j] += acc[j - 1]
            acc[j - 1][...] = 0
            if i & (mask << (j * power)):
                break
    while i < size:
        acc[0] += rows[..., i, :]
        i += 1
    for j in range(1, _LEVELS):
        acc[0] += acc[j]
    return acc[0]


def _row_sum(x: np.ndarray) -> np.ndarray:
    """ATen's `row_sum` over the last axis of `x` [..., n, k]-shaped as [..., n * k]:
    here `x` is [..., n, k] (n items of k lanes), summed over n with 4 chains."""
    n = x.shape[-2]
    full = n // _CHAINS
    head = x[..., : full * _CHAINS, :].reshape((*x.shape[:-2], full, _CHAINS * x.shape[-1]))
    partial = _cascade(head).reshape((*x.shape[:-2], _CHAINS, x.shape[-1]))
    chains = [partial[..., c, :].copy() for c in range(_CHAINS)]
    for i in range(full * _CHAINS, n):
        chains[0] += x[..., i, :]
    total = chains[0]
    for c in range(1, _CHAINS):
        total += chains[c]
    return total


def torch_sum_last(x: np.ndarray) -> np.ndarray:
    """Sum over the last axis of a float32 array, in ATen's CPU order."""
    x = np.ascontiguousarray(x, dtype=F32)
    n = x.shape[-1]
    lead = x.shape[:-1]
    if n == 0:
        return np.zeros(lead, F32)
    if n < _LANES:
        return _row_sum(x[..., None])[..., 0]
    vectors = n // _LANES
    lanes = _row_sum(x[..., : vectors * _LANES].reshape((*lead, vectors, _LANES)))
    total = np.zeros(lead, F32)
    for k in range(vectors * _LANES, n):
        total += x[..., k]
    for lane in range(_LANES):
        total += lanes[..., lane]
    return total


def torch_sum(x: np.ndarray, axes: Sequence[int], keepdims: bool = False) -> np.ndarray:
    """float32 sum over `axes` in ATen's order where the reduced axes are the
    trailing ones (they coalesce into one contiguous row, ATen's inner-sum path);
    other layouts sum the moved-to-the-end axes in the same row order."""
    x = np.asarray(x, dtype=F32)
    axes = sorted({a % x.ndim for a in axes}) if x.ndim else []
    kept = [a for a in range(x.ndim) if a not in axes]
    moved = np.transpose(x, kept + axes)
    lead = tuple(x.shape[a] for a in kept)
    out = torch_sum_last(moved.reshape((*lead, math.prod(x.shape[a] for a in axes))))
    if keepdims:
        out = out.reshape(tuple(1 if a in axes else x.shape[a] for a in range(x.ndim)))
    return out


def torch_mean(x: np.ndarray, axes: Sequence[int], keepdims: bool = False) -> np.ndarray:
    """float32 mean as ATen's CPU kernel: `torch_sum(...) / count` in float32."""
    x = np.asarray(x, dtype=F32)
    axes = [a % x.ndim for a in axes] if x.ndim else []
    count = int(np.prod([x.shape[a] for a in set(axes)], dtype=np.int64)) if axes else 1
    total = torch_sum(x, axes, keepdims)
    return (total / F32(count)).astype(F32)


def sequential_sum(windows: np.ndarray, ndims: int = 2) -> np.ndarray:
    """Sum over the last `ndims` axes one value at a time in row-major order, in
    float32: the order of torch's pooling kernels (avg_pool2d, adaptive_avg_pool2d
    with a window smaller than the input)."""
    windows = np.asarray(windows, dtype=F32)
    lead = windows.shape[: windows.ndim - ndims]
    window = math.prod(windows.shape[windows.ndim - ndims :])
    flat = windows.reshape((*lead, window))  # not -1: a zero-size lead leaves it open
    total = np.zeros(lead, F32)
    for k in range(flat.shape[-1]):
        total += flat[..., k]
    return total
