"""Ops real convnets and transformers use beyond the built-in examples, each
exported from a small torch module, compiled with qopt.compile(target="vulkan"),
run on the Vulkan device and compared with torch eager (and with the vkc
interpreter)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.ao.quantization.fx import _decomposed  # noqa: F401  (registers quantized_decomposed)

import qopt
from qopt.dialects import vkc


@pytest.fixture(scope="module", autouse=True)
def vulkan_device() -> None:
    from qopt.backends.vulkan.runtime import vulkan_available

    reason = vulkan_available()
    if reason is not None:
        print(f"Vulkan op tests skipped: {reason}")
        pytest.skip(reason)


def _gen() -> torch.Generator:
    return torch.Generator().manual_seed(0)


class ConvBN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-1, 1, generator=_gen())
            self.bn.running_var.uniform_(0.5, 2, generator=_gen())
            self.bn.weight.uniform_(0.5, 1.5, generator=_gen())
            self.bn.bias.uniform_(-1, 1, generator=_gen())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(self.conv(x)))


class Pad(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.pad(x, (1, 2, -1, 3), value=0.5)


class PadBool(torch.nn.Module):
    """A bool tensor padded (unfold's zero padding of a mask, too): it travels as i32
    0/1, so the pad value is 0 or 1 (once a raw ValueError from the lowering)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mask = torch.nn.functional.pad(x > 0, (1, 2, 0, 1), value=True)
        cols = torch.nn.functional.unfold(x[None] > 0.5, kernel_size=2, padding=1)
        return mask.float().sum() + cols.float().sum(-1, keepdim=True)


class Stack(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.stack([x, x * 2, x + 1], dim=1)


class IndexSelect(torch.nn.Module):
    def forward(self, x: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        fixed = torch.index_select(x, 2, torch.tensor([3, 0, 3, 1]))
        return torch.index_select(x, 0, i).sum() + fixed.sum(dim=2, keepdim=True) * x[:1]


class Logic(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = x > 0, x < 0.5
        m = torch.logical_xor(a, b) & ~torch.isnan(x) | torch.logical_not(b)
        return torch.where(m, x, -x) + (~torch.arange(6).reshape(1, 6)).float()


class Repeat(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.repeat(2, 1, 3) + 1


class Triangular(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tril(x, -1) * 2 + torch.triu(x, 1)


class PixelShuffle(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.pixel_shuffle(x, 2) * 3


class UnbatchedConv(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


class Cumsum(torch.nn.Module):
    """A float scan and an integer one (a mask's prefix count, RoBERTa's positions)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, 1) + (x > 0).int().cumsum(-1).float()


CASES = {
    "batch_norm": (ConvBN, [(2, 3, 6, 6)]),
    "cumsum": (Cumsum, [(2, 6, 5)]),
    "conv2d_unbatched": (UnbatchedConv, [(3, 5, 4)]),
    "constant_pad_nd": (Pad, [(2, 3, 5, 4)]),
    "constant_pad_nd_bool": (PadBool, [(2, 5, 4)]),
    "stack": (Stack, [(2, 5)]),
    "index_select": (IndexSelect, [(3, 2, 4), "index"]),
    "logical": (Logic, [(4, 6)]),
    "repeat": (Repeat, [(2, 3)]),
    "tril_triu": (Triangular, [(2, 5, 4)]),
    "pixel_shuffle": (PixelShuffle, [(1, 8, 3, 2)]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_op_on_vulkan(case: str) -> None:
    module, specs = CASES[case]
    gen = _gen()
    inputs = tuple(
        torch.tensor([2, 0], dtype=torch.int64) if s == "index" else torch.randn(*s, generator=gen)
        for s in specs
    )
    model = module().eval()
    with torch.no_grad():
        ep = torch.export.export(model, inputs)
    want = ep.module()(*inputs).detach().numpy()
    with qopt.compile(ep, target="vulkan") as artifact:
        (got,) = artifact(*inputs)
        (interpreted,) = qopt.interpret(artifact.module, *inputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(interpreted, want, rtol=1e-5, atol=1e-6)


class ArgReductions(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        values, index = torch.max(x, dim=1)
        low, where = torch.min(x, dim=0, keepdim=True)
        return torch.argmax(x, dim=-1), torch.argmin(x), values, index, low, where


def test_argmax_and_max_dim_on_vulkan() -> None:
    """argmax/argmin (the first extreme, NaN counting as the extreme) and max/min
    with indices, as torch defines them, including ties and a NaN."""
    x = torch.randn(5, 70, generator=_gen())
    x[1, 3] = x[1, 40] = 9.0  # a tie: the first index wins
    x[2, 50] = float("nan")  # NaN is the extreme
    x[4, :] = 1.0  # all equal
    ep = torch.export.export(ArgReductions(), (x,))
    want = ep.module()(x)
    with qopt.compile(ep, target="vulkan") as artifact:
        got = artifact(x)
        interpreted = qopt.interpret(artifact.module, x)
    for g, v, w in zip(got, interpreted, want, strict=True):
        np.testing.assert_array_equal(g, w.numpy())
        np.testing.assert_array_equal(v, w.numpy())


class Moments(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return x.var(-1, keepdim=True), x.std(dim=(0, 2), correction=0), torch.var(x)


def test_var_std_on_vulkan() -> None:
    x = torch.randn(3, 4, 50, generator=_gen()) * 3 + 1
    ep = torch.export.export(Moments(), (x,))
    want = ep.module()(x)
    with qopt.compile(ep, target="vulkan") as artifact:
        got = artifact(x)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w.numpy(), rtol=2e-6, atol=1e-6)


class Movement(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            torch.flip(x, (0, 2)) + 1,
            torch.roll(x, shifts=(1, -2), dims=(1, 2)) * 2,
            torch.roll(x, 3) - 1,
            torch.any(x > 1.0, dim=1),
            torch.all(x > -1.5, dim=-1, keepdim=True),
            torch.max(x),
            torch.min(x * 2),
        )


def test_flip_roll_any_all_on_vulkan() -> None:
    x = torch.randn(2, 3, 4, generator=_gen())
    ep = torch.export.export(Movement(), (x,))
    want = ep.module()(x)
    with qopt.compile(ep, target="vulkan") as artifact:
        got = artifact(x)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w.numpy())


class CacheWindows(torch.nn.Module):
    """Writes into a cache at compile-time positions (slice_scatter, select_scatter,
    an integer source converted to float) and grouped-query head repetition
    (repeat_interleave)."""

    def forward(self, cache: torch.Tensor, k: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
        cache = torch.slice_scatter(cache, k, 2, 3, 5)
        cache = torch.select_scatter(cache, k[:, :, 0] * 2, -2, -1)
        cache = torch.slice_scatter(cache, n, 3, 1, None, 2)
        return cache.repeat_interleave(2, dim=1) + 1


def test_cache_windows_on_vulkan() -> None:
    gen = _gen()
    inputs = (
        torch.randn(1, 2, 8, 4, generator=gen),
        torch.randn(1, 2, 2, 4, generator=gen),
        torch.randint(-5, 5, (1, 2, 8, 2), generator=gen),
    )
    ep = torch.export.export(CacheWindows(), inputs)
    want = ep.module()(*inputs).numpy()
    with qopt.compile(ep, target="vulkan") as artifact:
        (got,) = artifact(*inputs)
        (interpreted,) = qopt.interpret(artifact.module, *inputs)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(interpreted, want)


class IntegerClamp(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            torch.clamp(x, min=-3),
            torch.clamp(x, max=2),
            torch.clamp(x, -2, 4),
            torch.clamp(x, min=-(2**40)),
            torch.clamp(x, min=-2.5),  # a float bound: a float result
            torch.maximum(x, x.flip(0)),
            torch.minimum(x, x * 2),
        )


def test_integer_clamp_is_exact_on_vulkan() -> None:
    """Integer clamp with one, both or out-of-range bounds is exact (an absent bound
    once became int(inf) on the device)."""
    x = torch.arange(-6, 6, dtype=torch.int64).reshape(3, 4)
    ep = torch.export.export(IntegerClamp(), (x,))
    want = ep.module()(x)
    with qopt.compile(ep, target="vulkan") as artifact:
        got = artifact(x)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.numpy().dtype
        np.testing.assert_array_equal(g, w.numpy())


class PoolIndices(torch.nn.Module):
    def __init__(self, keep_indices: bool) -> None:
        super().__init__()
        self.keep_indices = keep_indices

    def forward(self, x: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        values, indices = torch.nn.functional.max_pool2d(x, 2, return_indices=True)
        return (values, indices) if self.keep_indices else values + 1


def test_max_pool_indices_on_vulkan() -> None:
    """max_pool2d with return_indices: the values alone run; reading the indices is
    a QoptError naming the op (it once was a zip() ValueError)."""
    x = torch.randn(1, 2, 4, 4, generator=_gen())
    ep = torch.export.export(PoolIndices(False), (x,))
    with qopt.compile(ep, target="vulkan") as artifact:
        (got,) = artifact(x)
    np.testing.assert_array_equal(got, ep.module()(x).numpy())
    ep = torch.export.export(PoolIndices(True), (x,))
    with pytest.raises(qopt.QoptError, match=r"max_pool2d.*indices .*have no Vulkan kernel"):
        qopt.compile(ep, target="vulkan")


class CatEmpty(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
        promoted = torch.cat([x * 2, y[:0]], dim=0) + 1  # the empty float makes it float
        return promoted, torch.cat([y[:, :0], y, torch.zeros(0)], dim=1)


class EmptyInput(torch.nn.Module):
    def forward(self, x: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
        return torch.cat([x, e]) * 2


def test_zero_size_tensors_on_vulkan() -> None:
    """cat drops its empty inputs (they once reached the device as [2, 0] buffers);
    an empty program input is a QoptError naming it."""
    x = torch.arange(6, dtype=torch.int32).reshape(2, 3)
    y = torch.randn(2, 3, generator=_gen())
    ep = torch.export.export(CatEmpty(), (x, y))
    with qopt.compile(ep, target="vulkan") as artifact:
        got = artifact(x, y)
    for g, w in zip(got, ep.module()(x, y), strict=True):
        np.testing.assert_array_equal(g, w.numpy())
    ep = torch.export.export(EmptyInput(), (y, torch.zeros(0, 3)))
    with pytest.raises(qopt.QoptError, match=r"input 1 of @forward has the zero-size shape"):
        qopt.compile(ep, target="vulkan")


class QuantizedConstants(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("c", torch.tensor([0.125, 0.375, -0.125, -0.375, 0.625, 100.0]))
        self.register_buffer("q0", torch.tensor(-7, dtype=torch.int8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        qd = torch.ops.quantized_decomposed
        q = qd.quantize_per_tensor(self.c, 0.25, 1, -128, 127, torch.int8)
        a = qd.dequantize_per_tensor(q, 0.25, 1, -128, 127, torch.int8)
        return x + a * qd.dequantize_per_tensor(self.q0, 0.5, 2, -128, 127, torch.int8)


def test_quantized_constants_on_vulkan() -> None:
    """A quantize of constants folds at compile time (ties to even, as torch); a
    rank-0 quantized constant lowers."""
    x = torch.randn(6, generator=_gen())
    ep = torch.export.export(QuantizedConstants(), (x,))
    with qopt.compile(ep, target="vulkan") as artifact:
        (got,) = artifact(x)
        kernels = {op.kernel.data for op in artifact.module.walk() if isinstance(op, vkc.KernelOp)}
    assert "quantize_per_tensor" not in kernels
    np.testing.assert_array_equal(got, ep.module()(x).numpy())


def test_nan_propagates_as_in_torch_on_vulkan() -> None:
    """clamp, hardtanh, relu, hardsigmoid, maximum and minimum of a NaN are NaN, as in
    torch (GLSL's max/min/clamp may return the other operand)."""

    class Ops(torch.nn.Module):
        def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
            return (
                torch.clamp(x, -1.0, 1.0),
                torch.clamp(x, min=0.5),
                torch.nn.functional.hardtanh(x),
                torch.relu(x),
                torch.nn.functional.hardsigmoid(x),
                torch.maximum(x, y),
                torch.minimum(x, y),
            )

    x = torch.tensor([float("nan"), 2.0, -3.0, 0.2])
    y = torch.tensor([0.0, float("nan"), 1.0, 0.0])
    got = qopt.compile(torch.export.export(Ops(), (x, y)), "vulkan")(x.numpy(), y.numpy())
    for i, (g, w) in enumerate(zip(got, Ops()(x, y), strict=True)):
        np.testing.assert_array_equal(g, w.numpy(), err_msg=f"output {i}")
