"""gather_dim and scatter_dim (qopt/kernels/gather.py, glsl/gather_dim.glsl and
glsl/scatter_dim.glsl): on the Vulkan device (under the Khronos validation layer when
it is installed) each equals its numpy reference bit for bit, status word included,
and each reference equals torch (index_select / advanced indexing, index_copy_ /
index_put_) on valid indices. Without a Vulkan device the device tests are skipped
with the reason."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from qopt.backends.vulkan.registry import kernel
from qopt.backends.vulkan.runtime import Dispatch, VulkanDevice

RNG = np.random.default_rng(2024)


@pytest.fixture(scope="module")
def dev(validated_device: VulkanDevice) -> VulkanDevice:
    """The validated device of tests/unit/kernels/conftest.py."""
    return validated_device


def run(
    dev: VulkanDevice, name: str, arrays: dict[str, np.ndarray], push: dict[str, int], neg: int
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(device, reference) words of every binding after one dispatch."""
    spec = kernel(name)
    bufs = [dev.upload(np.ascontiguousarray(arrays[b.name]).reshape(-1)) for b in spec.bindings]
    try:
        dev.run([Dispatch(spec, bufs, push=push, spec={"NEG": neg})])
        got = {
            b.name: buf.read(np.uint32, arrays[b.name].size)
            for b, buf in zip(spec.bindings, bufs, strict=True)
        }
    finally:
        for buf in bufs:
            buf.free()
    host = [np.ascontiguousarray(arrays[b.name]).reshape(-1).copy() for b in spec.bindings]
    spec.run_reference(host, push, {"NEG": neg})
    ref = {b.name: h.view(np.uint32) for b, h in zip(spec.bindings, host, strict=True)}
    return got, ref


def _gather(dev: VulkanDevice, x: np.ndarray, d: int, idx: np.ndarray, neg: int):
    dims = x.shape
    p, n, q = int(np.prod(dims[:d])), dims[d], int(np.prod(dims[d + 1 :]))
    s = idx.size
    arrays = {
        "x": x,
        "idx": idx.astype(np.int32),
        "y": np.zeros(p * s * q, x.dtype),
        "status": np.zeros(1, np.uint32),
    }
    got, ref = run(dev, "gather_dim", arrays, {"P": p, "N": n, "Q": q, "S": s}, neg)
    for name in ("y", "status"):
        np.testing.assert_array_equal(got[name], ref[name], err_msg=name)
    y = ref["y"].view(x.dtype).reshape(*dims[:d], *idx.shape, *dims[d + 1 :])
    return y, int(ref["status"][0])


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_gather_dim_matches_reference_and_torch(dev: VulkanDevice, dtype: type) -> None:
    x = (RNG.standard_normal((3, 5, 4)) * 10).astype(dtype)
    for d in range(3):
        n = x.shape[d]
        idx = RNG.integers(0, n, (2, 3))
        y, status = _gather(dev, x, d, idx, 0)
        assert status == 0
        want = torch.index_select(torch.from_numpy(x), d, torch.from_numpy(idx).reshape(-1))
        np.testing.assert_array_equal(y.reshape(want.shape), want.numpy())
        # NEG = 1: advanced indexing, negative indices count from the end
        neg = RNG.integers(-n, n, (4,))
        y, status = _gather(dev, x, d, neg, 1)
        key = [slice(None)] * 3
        key[d] = torch.from_numpy(neg)
        assert status == 0
        np.testing.assert_array_equal(y, torch.from_numpy(x)[tuple(key)].numpy())


def test_gather_dim_flags_invalid_indices(dev: VulkanDevice) -> None:
    """An index outside the valid range reads 0 and sets the status word: [0, N) for
    NEG = 0 (index_select), [-N, N) for NEG = 1 (advanced indexing)."""
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    for idx, neg, flagged in (
        ([0, 5], 0, 0),
        ([-1, 2], 0, 1),
        ([-1, 2], 1, 0),
        ([6, 0], 1, 1),
        ([-7, 0], 1, 1),
        ([2**31 - 1, 0], 1, 1),
    ):
        y, status = _gather(dev, x, 1, np.array(idx), neg)
        assert status == flagged, (idx, neg)
        if flagged:
            assert not y[:, 0].any()


def _scatter(
    dev: VulkanDevice, out: np.ndarray, d: int, idx: np.ndarray, vals: np.ndarray, neg: int
):
    dims = out.shape
    p, n, q = int(np.prod(dims[:d])), dims[d], int(np.prod(dims[d + 1 :]))
    arrays = {
        "vals": vals,
        "idx": idx.astype(np.int32),
        "out": out,
        "status": np.zeros(1, np.uint32),
    }
    got, ref = run(dev, "scatter_dim", arrays, {"P": p, "N": n, "Q": q, "S": idx.size}, neg)
    for name in ("out", "status"):
        np.testing.assert_array_equal(got[name], ref[name], err_msg=name)
    return ref["out"].view(out.dtype).reshape(dims), int(ref["status"][0])


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_scatter_dim_matches_reference_and_torch(dev: VulkanDevice, dtype: type) -> None:
    cache = (RNG.standard_normal((1, 2, 8, 4)) * 10).astype(dtype)
    for d in range(4):
        n = cache.shape[d]
        count = min(n, 3)
        idx = RNG.permutation(n)[:count]
        vals_shape = list(cache.shape)
        vals_shape[d] = count
        vals = (RNG.standard_normal(vals_shape) * 10).astype(dtype)
        got, status = _scatter(dev, cache, d, idx, vals, 0)
        assert status == 0
        want = torch.from_numpy(cache.copy()).index_copy_(
            d, torch.from_numpy(idx), torch.from_numpy(vals)
        )
        np.testing.assert_array_equal(got, want.numpy())
        # NEG = 1: index_put on one dim, negative positions from the end
        neg = idx - n
        got, status = _scatter(dev, cache, d, neg, vals, 1)
        key: list[object] = [slice(None)] * 4
        key[d] = torch.from_numpy(neg)
        expect = torch.from_numpy(cache.copy())
        expect[tuple(key)] = torch.from_numpy(vals)
        assert status == 0
        np.testing.assert_array_equal(got, expect.numpy())


def test_scatter_dim_repeated_and_invalid_indices(dev: VulkanDevice) -> None:
    """A repeated position takes the last of its rows (qopt's rule, as the
    interpreters'); an invalid position writes nothing and sets the status word."""
    cache = np.zeros((2, 5, 3), np.float32)
    vals = np.arange(2 * 4 * 3, dtype=np.float32).reshape(2, 4, 3) + 1
    got, status = _scatter(dev, cache, 1, np.array([1, 3, 1, -4]), vals, 1)
    assert status == 0
    np.testing.assert_array_equal(got[:, 1], vals[:, 3])  # -4 is row 1, the last write
    np.testing.assert_array_equal(got[:, 3], vals[:, 1])
    assert not got[:, [0, 2, 4]].any()
    got, status = _scatter(dev, cache, 1, np.array([2, 5, -1, 0]), vals, 0)
    assert status == 1
    np.testing.assert_array_equal(got[:, 2], vals[:, 0])
    np.testing.assert_array_equal(got[:, 0], vals[:, 3])
    assert not got[:, [1, 3, 4]].any()  # 5 and -1 (NEG = 0) wrote nothing
