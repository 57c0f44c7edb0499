"""qopt.numerics reproduces torch's CPU float32 reductions bit for bit, and the
interpreters use it (so a quantizer after a mean or a pool rounds as torch does)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from qopt.numerics import sequential_sum, torch_mean, torch_sum

SIZES = [1, 3, 4, 7, 8, 9, 31, 32, 33, 63, 64, 100, 511, 512, 513, 4096, 11008, 20000]


@pytest.mark.parametrize("n", SIZES)
def test_row_sum_and_mean_equal_torch(n: int) -> None:
    x = torch.randn(9, n, generator=torch.Generator().manual_seed(n))
    np.testing.assert_array_equal(torch_sum(x.numpy(), [-1]), torch.sum(x, -1).numpy())
    np.testing.assert_array_equal(torch_mean(x.numpy(), [-1]), torch.mean(x, -1).numpy())


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(1, 6),
    n=st.integers(1, 700),
    scale=st.sampled_from([1e-3, 1.0, 1e4]),
    seed=st.integers(0, 2**31 - 1),
)
def test_row_sum_property(rows: int, n: int, scale: float, seed: int) -> None:
    x = torch.randn(rows, n, generator=torch.Generator().manual_seed(seed)) * scale
    np.testing.assert_array_equal(torch_sum(x.numpy(), [1]), torch.sum(x, 1).numpy())
    np.testing.assert_array_equal(
        torch_mean(x.numpy(), [1], keepdims=True), torch.mean(x, 1, keepdim=True).numpy()
    )


def test_trailing_dims_and_global_pool() -> None:
    x = torch.randn(2, 16, 7, 9, generator=torch.Generator().manual_seed(1))
    np.testing.assert_array_equal(
        torch_mean(x.numpy(), [2, 3], keepdims=True), torch.mean(x, (2, 3), keepdim=True).numpy()
    )
    np.testing.assert_array_equal(
        torch_mean(x.numpy(), [-2, -1], keepdims=True),
        torch.nn.functional.adaptive_avg_pool2d(x, 1).numpy(),
    )


def test_numpy_order_would_differ() -> None:
    """The reason this module exists: numpy's own float32 sum order is not torch's."""
    x = torch.randn(512, 100, generator=torch.Generator().manual_seed(0))
    plain = np.sum(x.numpy(), axis=1, dtype=np.float32) / np.float32(100)
    assert (plain != torch.mean(x, 1).numpy()).any()


def test_window_sums_equal_torch_pooling() -> None:
    from qopt.interpreters.aten_layers import _adaptive_avg_pool

    x = torch.randn(3, 8, 9, 11, generator=torch.Generator().manual_seed(2))
    for out in [(1, 1), (2, 3), (4, 4), (9, 11)]:
        np.testing.assert_array_equal(
            _adaptive_avg_pool(x.numpy(), out),
            torch.nn.functional.adaptive_avg_pool2d(x, out).numpy(),
        )
    windows = np.lib.stride_tricks.sliding_window_view(x.numpy(), (3, 3), axis=(2, 3))
    want = torch.nn.functional.avg_pool2d(x, 3, 1).numpy()
    np.testing.assert_array_equal(sequential_sum(windows) / np.float32(9), want)


def test_sums_of_zero_size_leads() -> None:
    """A zero-size dim outside the summed window (adaptive_avg_pool1d of a [0, C, L]
    input) gives an empty result, as torch does (reshape(-1) could not infer it)."""
    from qopt.numerics.reductions import sequential_sum, torch_sum

    assert sequential_sum(np.zeros((0, 8, 1, 3), np.float32)).shape == (0, 8)
    assert torch_sum(np.zeros((0, 4), np.float32), [1]).shape == (0,)
    assert torch_sum(np.zeros((0, 4), np.float32), [0]).tolist() == [0.0] * 4
