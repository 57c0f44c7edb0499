"""aten reduction and layers families: import from torch.export, verify, interpret
against torch eager; verifier rejections; custom-syntax round trip."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils import _pytree as pytree
from xdsl.utils.exceptions import VerifyException

import qopt
from qopt.context import make_context, parse_module
from qopt.errors import QoptError

LIT = Path(__file__).resolve().parents[2] / "lit" / "aten"


class Fn(nn.Module):
    def __init__(self, fn: Callable[..., object]):
        super().__init__()
        self.fn = fn

    def forward(self, *args: torch.Tensor) -> object:
        return self.fn(*args)


def check(module: nn.Module, *inputs: torch.Tensor, decompose: bool = False) -> None:
    ep = torch.export.export(module.eval(), inputs)
    if decompose:
        ep = ep.run_decompositions()
    ir = qopt.import_program(ep)
    ir.verify()
    got = qopt.interpret(ir, *inputs)
    wants = pytree.tree_leaves(ep.module()(*inputs))
    assert len(got) == len(wants)
    for g, w in zip(got, wants, strict=True):
        expected = w.detach().numpy()
        assert g.shape == expected.shape
        assert g.dtype == expected.dtype
        if expected.dtype.kind == "f":
            assert np.array_equal(np.isnan(g), np.isnan(expected))
            g, expected = np.nan_to_num(g), np.nan_to_num(expected)
            scale = max(float(np.linalg.norm(expected.ravel())), 1e-30)
            assert float(np.linalg.norm((g - expected).ravel())) / scale < 1e-5
        else:
            assert np.array_equal(g, expected)


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


X = torch.randn(2, 3, 4, 5, generator=gen(0))
IMG = torch.randn(2, 3, 7, 9, generator=gen(1))
INTS = torch.randint(-5, 5, (3, 4, 5), generator=gen(2), dtype=torch.int32)
TIES = torch.tensor([[1, 3, 3, 0], [2, 2, -1, 2], [0, 0, 0, 0]], dtype=torch.int64)
MASKED = torch.tensor([[0.0, -torch.inf, 1.0], [-torch.inf, -torch.inf, -torch.inf]])

REDUCTIONS: dict[str, tuple[Callable[..., object], tuple[torch.Tensor, ...]]] = {
    "sum_all": (lambda x: x.sum(), (X,)),
    "sum_dims_keepdim": (lambda x: x.sum((1, -1), keepdim=True), (X,)),
    "sum_empty_dims": (lambda x: torch.sum(x, dim=[]), (X,)),
    "sum_int": (lambda x: x.sum(0), (INTS,)),
    "sum_bool": (lambda x: (x > 0).sum(-1), (X,)),
    "mean_all": (lambda x: x.mean(), (X,)),
    "mean_neg_dim": (lambda x: x.mean(-2, keepdim=True), (X,)),
    "prod_all": (lambda x: x.prod(), (X[0, 0],)),
    "prod_dim": (lambda x: x.prod(1, keepdim=True), (INTS,)),
    "amax": (lambda x: x.amax((0, -1)), (X,)),
    "amin_int": (lambda x: x.amin(1, keepdim=True), (INTS,)),
    "any_all": (lambda x: (x > 2).any(), (X,)),
    "any_dim": (lambda x: (x > 1).any(1), (X,)),
    "any_dims": (lambda x: (x > 1).any((1, 2), keepdim=True), (X,)),
    "all_dim": (lambda x: (x > -2).all(-1), (X,)),
    "all_int": (lambda x: x.all(), (INTS,)),
    "max_all": (lambda x: x.max(), (X,)),
    "min_all_int": (lambda x: x.min(), (INTS,)),
    "max_dim": (lambda x: x.max(1), (X,)),
    "min_dim_keepdim": (lambda x: x.min(-1, keepdim=True), (X,)),
    "max_dim_ties": (lambda x: x.max(1), (TIES,)),
    # torch.max/min of two tensors (max.other, min.other: T5's relative buckets)
    "max_min_other": (lambda x: (torch.max(x, x.flip(0)), torch.min(x, x * 2)), (X,)),
    "argmax_all": (lambda x: x.argmax(), (X,)),
    "argmax_keepdim_all": (lambda x: x.argmax(keepdim=True), (X,)),
    "argmin_dim": (lambda x: x.argmin(-2, keepdim=True), (X,)),
    "argmax_ties": (lambda x: x.argmax(1), (TIES,)),
    "var_dim": (lambda x: x.var(1), (X,)),
    "var_all": (lambda x: x.var(), (X,)),
    "var_correction": (lambda x: torch.var(x, (0, 2), correction=0, keepdim=True), (X,)),
    "std_dim": (lambda x: x.std(-1, unbiased=False), (X,)),
    "std_correction2": (lambda x: torch.std(x, 1, correction=2), (X,)),
    "softmax": (lambda x: x.softmax(-1), (X,)),
    "softmax_masked_row": (lambda x: x.softmax(-1), (MASKED,)),
    "safe_softmax": (lambda x: torch.ops.aten._safe_softmax(x, -1), (MASKED,)),
    "log_softmax": (lambda x: F.log_softmax(x, 1), (X,)),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction(name: str) -> None:
    fn, inputs = REDUCTIONS[name]
    check(Fn(fn), *inputs)


def test_softmax_decomposed() -> None:
    check(Fn(lambda x: (x.softmax(-1), F.log_softmax(x, 0))), X, decompose=True)


def test_max_dim_nan() -> None:
    x = X.clone()
    x[0, 1, 2, 3] = torch.nan
    check(Fn(lambda t: (t.max(1), t.amax(-1), t.argmax(2))), x)


def affine(module: nn.Module, seed: int) -> nn.Module:
    g = gen(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g))
    return module


def batch_norm() -> nn.Module:
    bn = affine(nn.BatchNorm2d(3), 3)
    assert isinstance(bn.running_mean, torch.Tensor)
    assert isinstance(bn.running_var, torch.Tensor)
    bn.running_mean.copy_(torch.randn(3, generator=gen(4)))
    bn.running_var.copy_(torch.rand(3, generator=gen(5)) + 0.5)
    return bn.eval()


Q = torch.randn(2, 4, 5, 8, generator=gen(6))
K = torch.randn(2, 4, 7, 8, generator=gen(7))
V = torch.randn(2, 4, 7, 6, generator=gen(8))
BOOL_MASK = torch.rand(5, 7, generator=gen(9)) > 0.4
BOOL_MASK[2] = False  # a fully masked query row gives 0, as in torch
FLOAT_MASK = torch.randn(2, 1, 5, 7, generator=gen(10))

LAYERS: dict[str, tuple[Callable[[], nn.Module], tuple[torch.Tensor, ...]]] = {
    "layer_norm": (lambda: affine(nn.LayerNorm(5), 11), (X,)),
    "layer_norm_2d_plain": (lambda: Fn(lambda x: F.layer_norm(x, (4, 5), eps=1e-3)), (X,)),
    "layer_norm_no_bias": (lambda: affine(nn.LayerNorm((4, 5), bias=False), 12), (X,)),
    "group_norm": (lambda: affine(nn.GroupNorm(3, 3), 13), (X,)),
    "group_norm_plain": (lambda: Fn(lambda x: F.group_norm(x, 1)), (X,)),
    "batch_norm": (batch_norm, (X,)),
    "max_pool2d": (lambda: Fn(lambda x: F.max_pool2d(x, 2)), (IMG,)),
    "max_pool2d_ceil_pad": (lambda: Fn(lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True)), (IMG,)),
    "max_pool2d_indices_dilation": (
        lambda: Fn(lambda x: F.max_pool2d(x, (2, 3), (1, 2), 1, 2, return_indices=True)),
        (IMG,),
    ),
    "max_pool2d_3d_input": (lambda: Fn(lambda x: F.max_pool2d(x, 3, ceil_mode=True)), (IMG[0],)),
    "avg_pool2d": (lambda: Fn(lambda x: F.avg_pool2d(x, 2)), (IMG,)),
    "avg_pool2d_ceil_pad": (lambda: Fn(lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True)), (IMG,)),
    "avg_pool2d_exclude_pad": (
        lambda: Fn(lambda x: F.avg_pool2d(x, (3, 2), 2, 1, True, count_include_pad=False)),
        (IMG,),
    ),
    "avg_pool2d_divisor": (lambda: Fn(lambda x: F.avg_pool2d(x, 2, 1, divisor_override=3)), (IMG,)),
    "adaptive_avg_pool2d": (lambda: nn.AdaptiveAvgPool2d((1, 1)), (IMG,)),
    "adaptive_avg_pool2d_uneven": (lambda: nn.AdaptiveAvgPool2d((3, 4)), (IMG,)),
    "adaptive_avg_pool2d_upsample": (lambda: nn.AdaptiveAvgPool2d((9, 5)), (IMG[:, :, :4, :4],)),
    # weight norm (wav2vec2's positional conv: dim 2 of a 3-D weight), dim 0 and the
    # whole-tensor norm (dim=-1): _weight_norm imported as mul, sum, sqrt, div, mul
    "weight_norm": (
        lambda: Fn(
            lambda v, g: (
                torch._weight_norm(v, g[None, None, :], 2),
                torch._weight_norm(v, g[:2, None, None], 0),
                torch._weight_norm(v, g[:1].reshape(()), -1),
            )
        ),
        (torch.randn(2, 3, 5, generator=gen(30)), torch.rand(5, generator=gen(31)) + 0.5),
    ),
    # Swin's final pooling: [N, C, L] and [C, L] inputs, uneven windows
    "adaptive_avg_pool1d": (
        lambda: Fn(lambda x: (F.adaptive_avg_pool1d(x, 1), F.adaptive_avg_pool1d(x[0], 4))),
        (IMG[:, :, 0],),
    ),
    "sdpa": (lambda: Fn(F.scaled_dot_product_attention), (Q, K, V)),
    "sdpa_bool_mask": (
        lambda: Fn(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m)),
        (Q, K, V, BOOL_MASK),
    ),
    "sdpa_float_mask": (
        lambda: Fn(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m)),
        (Q, K, V, FLOAT_MASK),
    ),
    "sdpa_causal_scale": (
        lambda: Fn(
            lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.2)
        ),
        (Q, K, V),
    ),
    "sdpa_gqa": (
        lambda: Fn(
            lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        ),
        (Q, K[:, :2], V[:, :2]),
    ),
    "pixel_shuffle": (lambda: nn.PixelShuffle(2), (torch.randn(2, 12, 3, 4, generator=gen(14)),)),
    "pixel_shuffle_3d": (lambda: nn.PixelShuffle(3), (torch.randn(9, 2, 3, generator=gen(15)),)),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer(name: str) -> None:
    make, inputs = LAYERS[name]
    check(make(), *inputs)


@pytest.mark.parametrize(
    "make",
    [lambda: affine(nn.LayerNorm(5), 16), lambda: affine(nn.GroupNorm(3, 3), 17), batch_norm],
    ids=["native_layer_norm", "native_group_norm", "native_batch_norm_no_training"],
)
def test_native_norms(make: Callable[[], nn.Module]) -> None:
    check(make(), X, decompose=True)


def test_native_layer_norm_stats() -> None:
    fn = Fn(lambda x, w: torch.ops.aten.native_layer_norm(x, [4, 5], w, None, 1e-5))
    check(fn, X, torch.randn(4, 5, generator=gen(18)))


def test_sdpa_dropout_rejected() -> None:
    fn = Fn(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=0.5))
    ep = torch.export.export(fn, (Q, K, V))
    with pytest.raises(QoptError, match=re.escape("dropout_p=0.5")):
        qopt.import_program(ep)


# ----- verifier rejections ----------------------------------------------------------


def wrap(op: str, args: str) -> str:
    return f"func.func @f({args}) {{\n  {op}\n  func.return\n}}"


X4 = "%x: tensor<2x3x4x5xf32>"
INVALID = [
    (
        wrap(
            "%r = aten.sum %x {dims = array<i64: 1>} : (tensor<2x3x4x5xf32>) -> tensor<2x4xf32>", X4
        ),
        "result 0 has shape [2, 4] but the operands imply [2, 4, 5]",
    ),
    (
        wrap(
            "%r = aten.sum %x {dims = array<i64: 4>} : (tensor<2x3x4x5xf32>) -> tensor<2xf32>", X4
        ),
        "dim 4 is out of range for rank 4",
    ),
    (
        wrap(
            "%r = aten.amax %x {dims = array<i64: 1, -3>} : (tensor<2x3x4x5xf32>) -> tensor<2x5xf32>",
            X4,
        ),
        "name a dim more than once",
    ),
    (
        wrap("%r = aten.mean %x : (tensor<2x3x4x5xf32>) -> tensor<i64>", X4),
        "result must be a float tensor",
    ),
    (
        wrap("%r = aten.any %x : (tensor<2x3x4x5xf32>) -> tensor<f16>", X4),
        "result must be a boolean (i1) tensor",
    ),
    (
        wrap(
            "%v, %i = aten.max_dim %x {dim = 1 : i64} : (tensor<2x3x4x5xf32>) -> "
            "(tensor<2x4x5xf32>, tensor<2x4x5xf32>)",
            X4,
        ),
        "indices must be an integer tensor",
    ),
    (
        wrap(
            "%r = aten.argmax %x {dim = 1 : i64} : (tensor<2x3x4x5xf32>) -> tensor<2x1x4x5xi64>", X4
        ),
        "result 0 has shape [2, 1, 4, 5] but the operands imply [2, 4, 5]",
    ),
    (
        wrap(
            "%r = aten.softmax %x {dim = -5 : i64} : (tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32>",
            X4,
        ),
        "dim -5 is out of range for rank 4",
    ),
    (
        wrap(
            "%r = aten.layer_norm %x {normalized_shape = array<i64: 4>} : "
            "tensor<2x3x4x5xf32> -> tensor<2x3x4x5xf32>",
            X4,
        ),
        "normalized_shape [4] must be a non-empty suffix of the input shape [2, 3, 4, 5]",
    ),
    (
        wrap(
            "%r = aten.layer_norm %x weight(%w : tensor<4xf32>) {normalized_shape = array<i64: 5>} "
            ": tensor<2x3x4x5xf32> -> tensor<2x3x4x5xf32>",
            f"{X4}, %w: tensor<4xf32>",
        ),
        "weight must have shape [5], got [4]",
    ),
    (
        wrap(
            "%r = aten.group_norm %x {num_groups = 2 : i64} : tensor<2x3x4x5xf32> -> "
            "tensor<2x3x4x5xf32>",
            X4,
        ),
        "3 channels cannot be split into 2 groups",
    ),
    (
        wrap(
            "%r = aten.batch_norm %x, %m, %m : tensor<2x3x4x5xf32>, tensor<4xf32>, tensor<4xf32> "
            "-> tensor<2x3x4x5xf32>",
            f"{X4}, %m: tensor<4xf32>",
        ),
        "running_mean must have shape [3], got [4]",
    ),
    (
        wrap(
            "%r = aten.max_pool2d %x {kernel_size = array<i64: 2, 2>} : (tensor<2x3x4x5xf32>) "
            "-> tensor<2x3x2x3xf32>",
            X4,
        ),
        "result 0 has shape [2, 3, 2, 3] but the operands imply [2, 3, 2, 2]",
    ),
    (
        wrap(
            "%r = aten.max_pool2d %x {kernel_size = array<i64: 2, 2>, padding = array<i64: 2, 0>} "
            ": (tensor<2x3x4x5xf32>) -> tensor<2x3x4x2xf32>",
            X4,
        ),
        "padding [2, 0] must be at most half the kernel",
    ),
    (
        wrap(
            "%r = aten.avg_pool2d %x {kernel_size = array<i64: 2>} : (tensor<2x3x4x5xf32>) "
            "-> tensor<2x3x2x2xf32>",
            X4,
        ),
        "kernel_size must have 2 entries, got [2]",
    ),
    (
        wrap(
            "%r = aten.adaptive_avg_pool2d %x {output_size = array<i64: 2, 0>} : "
            "(tensor<2x3x4x5xf32>) -> tensor<2x3x2x0xf32>",
            X4,
        ),
        "output_size must be 2 positive sizes",
    ),
    (
        wrap(
            "%r = aten.scaled_dot_product_attention %q, %k, %k : (tensor<1x4x3x8xf32>, "
            "tensor<1x3x5x8xf32>, tensor<1x3x5x8xf32>) -> tensor<1x4x3x8xf32>",
            "%q: tensor<1x4x3x8xf32>, %k: tensor<1x3x5x8xf32>",
        ),
        "batch dims of query [1, 4, 3, 8] and key [1, 3, 5, 8] do not broadcast",
    ),
    (
        wrap(
            "%r = aten.scaled_dot_product_attention %q, %k, %k {enable_gqa = true} : "
            "(tensor<1x4x3x8xf32>, tensor<1x3x5x8xf32>, tensor<1x3x5x8xf32>) -> tensor<1x4x3x8xf32>",
            "%q: tensor<1x4x3x8xf32>, %k: tensor<1x3x5x8xf32>",
        ),
        "4 query heads are not a multiple of 3 key/value heads",
    ),
    (
        wrap(
            "%r = aten.scaled_dot_product_attention %q, %q, %q, %m {is_causal = true} : "
            "(tensor<1x3x8xf32>, tensor<1x3x8xf32>, tensor<1x3x8xf32>, tensor<3x3xi1>) "
            "-> tensor<1x3x8xf32>",
            "%q: tensor<1x3x8xf32>, %m: tensor<3x3xi1>",
        ),
        "attn_mask and is_causal cannot both be set",
    ),
    (
        wrap(
            "%r = aten.pixel_shuffle %x {upscale_factor = 2 : i64} : (tensor<2x3x4x5xf32>) "
            "-> tensor<2x1x8x10xf32>",
            X4,
        ),
        "3 channels are not divisible by upscale_factor^2 = 4",
    ),
]


@pytest.mark.parametrize(("text", "message"), INVALID, ids=[m[:40] for _, m in INVALID])
def test_verifier_rejects(text: str, message: str) -> None:
    module = parse_module(text)
    with pytest.raises(VerifyException, match=re.escape(message)):
        module.verify()


@pytest.mark.parametrize("name", ["reduction.mlir", "layers.mlir"])
def test_custom_syntax_round_trip(name: str) -> None:
    ctx = make_context()
    module = parse_module((LIT / name).read_text(), ctx=ctx)
    module.verify()
    printed = str(module)
    again = parse_module(printed, ctx=ctx)
    again.verify()
    assert str(again) == printed
    assert again.is_structurally_equivalent(module)
