"""Breadth: ordinary torch functions as a user writes them.

Each entry of `FUNCTIONS` is one ordinary torch function (normalization, reductions,
sorting, indexing, pooling, interpolation, linear-algebra helpers, losses, ...) in a
small `torch.nn.Module`, with small inputs. `cases()` makes them conformance `Case`s
(qopt/conformance.py): exported with plain `torch.export.export` (no
`run_decompositions`: the IR users get), run by torch eager for the reference and by
every target (interpreter, CoreML read back and interpreted, Vulkan), classified
pass / unsupported (a clean QoptError) / wrong / crash.

`benchmarks/breadth.py` runs the list and writes docs/breadth.md;
tests/unit/semantics/test_breadth.py runs it per function.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from qopt.conformance import Case

Inputs = Callable[[torch.Generator], tuple[torch.Tensor, ...]]


@dataclass(frozen=True)
class Function:
    name: str
    family: str
    fn: Callable[..., object]
    inputs: Inputs


class FunctionModule(torch.nn.Module):
    """`fn(*inputs)` as a module (its inputs are the graph's inputs)."""

    def __init__(self, fn: Callable[..., object]):
        super().__init__()
        self.fn = fn

    def forward(self, *xs: torch.Tensor) -> object:
        return self.fn(*xs)


def _r(*shape: int) -> Inputs:
    return lambda g: (torch.randn(*shape, generator=g),)


def _rr(*shapes: tuple[int, ...]) -> Inputs:
    return lambda g: tuple(torch.randn(*s, generator=g) for s in shapes)


def _pos(*shape: int) -> Inputs:
    return lambda g: (torch.rand(*shape, generator=g) + 0.1,)


def _unit(*shape: int) -> Inputs:
    return lambda g: (torch.rand(*shape, generator=g) * 1.8 - 0.9,)


def _ints(high: int, *shape: int) -> Inputs:
    return lambda g: (torch.randint(0, high, shape, generator=g),)


def _two_ints(high: int, *shape: int) -> Inputs:
    return lambda g: (
        torch.randint(-high, high, shape, generator=g),
        torch.randint(-high, high, shape, generator=g),
    )


def _with(first: Inputs, *rest: Callable[[torch.Generator], torch.Tensor]) -> Inputs:
    return lambda g: (*first(g), *(r(g) for r in rest))


def _randn(*shape: int) -> Callable[[torch.Generator], torch.Tensor]:
    return lambda g: torch.randn(*shape, generator=g)


def _rand(*shape: int) -> Callable[[torch.Generator], torch.Tensor]:
    return lambda g: torch.rand(*shape, generator=g)


def _randint(high: int, *shape: int) -> Callable[[torch.Generator], torch.Tensor]:
    return lambda g: torch.randint(0, high, shape, generator=g)


_F: list[Function] = []


def add(name: str, family: str, f: Callable[..., object], inputs: Inputs) -> None:
    _F.append(Function(name, family, f, inputs))


X = _r(2, 3, 8)
IMG = _r(1, 3, 8, 8)
SEQ = _r(1, 3, 16)

# ----- elementwise ---------------------------------------------------------------------------
for _name, _f, _in in [
    ("abs", torch.abs, X),
    ("neg", torch.neg, X),
    ("exp", torch.exp, X),
    ("log", torch.log, _pos(2, 3, 8)),
    ("sqrt", torch.sqrt, _pos(2, 3, 8)),
    ("rsqrt", torch.rsqrt, _pos(2, 3, 8)),
    ("sin", torch.sin, X),
    ("cos", torch.cos, X),
    ("tan", torch.tan, _unit(2, 3, 8)),
    ("tanh", torch.tanh, X),
    ("sigmoid", torch.sigmoid, X),
    ("acos", torch.acos, _unit(2, 3, 8)),
    ("asin", torch.asin, _unit(2, 3, 8)),
    ("atan", torch.atan, X),
    ("sinh", torch.sinh, X),
    ("cosh", torch.cosh, X),
    ("asinh", torch.asinh, X),
    ("erf", torch.erf, X),
    ("log1p", torch.log1p, _pos(2, 3, 8)),
    ("expm1", torch.expm1, X),
    ("log2", torch.log2, _pos(2, 3, 8)),
    ("exp2", torch.exp2, X),
    ("floor", torch.floor, X),
    ("ceil", torch.ceil, X),
    ("round", torch.round, X),
    ("trunc", torch.trunc, X),
    ("frac", torch.frac, X),
    ("reciprocal", torch.reciprocal, _pos(2, 3, 8)),
    ("square", torch.square, X),
    ("sign", torch.sign, X),
    ("clamp", lambda x: torch.clamp(x, -0.5, 0.5), X),
    ("clamp_min", lambda x: torch.clamp_min(x, 0.1), X),
    ("isfinite", lambda x: torch.isfinite(x / (x > 0)), X),
    ("isnan", lambda x: torch.isnan(torch.log(x)), X),
    ("nan_to_num", lambda x: torch.nan_to_num(torch.log(x)), X),
    (
        "logit",
        lambda x: torch.logit(x, 1e-3),
        lambda g: (torch.rand(2, 3, 8, generator=g) * 0.9 + 0.05,),
    ),
    ("sinc", torch.sinc, X),
    ("deg2rad", torch.deg2rad, X),
    ("xlogy", torch.xlogy, _with(_pos(2, 3, 8), _rand(2, 3, 8))),
    ("heaviside", lambda x: torch.heaviside(x, torch.tensor(0.5)), X),
]:
    add(_name, "elementwise", _f, _in)

for _name, _f, _in in [
    ("relu", F.relu, X),
    ("relu6", F.relu6, X),
    ("gelu", F.gelu, X),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), X),
    ("silu", F.silu, X),
    ("mish", F.mish, X),
    ("softplus", F.softplus, X),
    ("elu", F.elu, X),
    ("selu", F.selu, X),
    ("celu", F.celu, X),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.1), X),
    ("hardtanh", F.hardtanh, X),
    ("hardsigmoid", F.hardsigmoid, X),
    ("hardswish", F.hardswish, X),
    ("logsigmoid", F.logsigmoid, X),
    ("softsign", F.softsign, X),
    ("tanhshrink", F.tanhshrink, X),
    ("softshrink", F.softshrink, X),
    ("hardshrink", F.hardshrink, X),
    ("threshold", lambda x: F.threshold(x, 0.2, -1.0), X),
    ("glu", F.glu, X),
    ("prelu", F.prelu, _with(IMG, _rand(3))),
    ("softmax", lambda x: F.softmax(x, -1), X),
    ("log_softmax", lambda x: F.log_softmax(x, -1), X),
    ("softmin", lambda x: F.softmin(x, 1), X),
]:
    add(_name, "activation", _f, _in)

for _name, _f, _in in [
    ("add", torch.add, _rr((2, 3, 8), (3, 8))),
    ("sub_alpha", lambda a, b: torch.sub(a, b, alpha=2), _rr((2, 3, 8), (2, 3, 8))),
    ("mul", torch.mul, _rr((2, 3, 8), (8,))),
    ("div", torch.div, _with(X, lambda g: torch.rand(2, 3, 8, generator=g) + 0.5)),
    ("div_floor", lambda a, b: torch.div(a, b, rounding_mode="floor"), _two_ints(9, 4, 5)),
    ("pow", lambda a: torch.pow(a, 3), X),
    ("pow_tensor", torch.pow, _with(_pos(2, 3, 8), _randn(2, 3, 8))),
    ("maximum", torch.maximum, _rr((2, 3, 8), (2, 3, 8))),
    ("minimum", torch.minimum, _rr((2, 3, 8), (2, 3, 8))),
    ("atan2", torch.atan2, _rr((2, 3, 8), (2, 3, 8))),
    ("remainder", torch.remainder, _with(X, lambda g: torch.rand(2, 3, 8, generator=g) + 0.5)),
    ("fmod", torch.fmod, _with(X, lambda g: torch.rand(2, 3, 8, generator=g) + 0.5)),
    ("floor_divide", torch.floor_divide, _two_ints(9, 4, 5)),
    ("lerp", lambda a, b: torch.lerp(a, b, 0.3), _rr((2, 3, 8), (2, 3, 8))),
    ("addcmul", lambda a, b, c: torch.addcmul(a, b, c, value=0.5), _rr((4, 5), (4, 5), (4, 5))),
    (
        "addcdiv",
        lambda a, b, c: torch.addcdiv(a, b, c, value=0.5),
        _with(_rr((4, 5), (4, 5)), lambda g: torch.rand(4, 5, generator=g) + 0.5),
    ),
    ("hypot", torch.hypot, _rr((2, 3, 8), (2, 3, 8))),
    ("copysign", torch.copysign, _rr((2, 3, 8), (2, 3, 8))),
    ("logaddexp", torch.logaddexp, _rr((2, 3, 8), (2, 3, 8))),
    ("where", lambda a, b: torch.where(a > 0, a, b), _rr((2, 3, 8), (2, 3, 8))),
    ("masked_fill", lambda a: a.masked_fill(a < 0, -1.0), X),
    ("bitwise_and", torch.bitwise_and, _two_ints(50, 4, 5)),
    ("bitwise_or", torch.bitwise_or, _two_ints(50, 4, 5)),
    ("bitwise_xor", torch.bitwise_xor, _two_ints(50, 4, 5)),
    ("bitwise_not", torch.bitwise_not, _ints(50, 4, 5)),
    ("logical_and", lambda a, b: torch.logical_and(a > 0, b > 0), _rr((4, 5), (4, 5))),
    ("logical_not", lambda a: torch.logical_not(a > 0), X),
    ("eq", lambda a, b: torch.eq(a, b), _two_ints(3, 4, 5)),
    ("ge", torch.ge, _rr((2, 3, 8), (2, 3, 8))),
    ("isclose", lambda a, b: torch.isclose(a, b, atol=0.5), _rr((4, 5), (4, 5))),
]:
    add(_name, "binary", _f, _in)

# ----- reductions ----------------------------------------------------------------------------
for _name, _f, _in in [
    ("sum", lambda x: x.sum(-1), X),
    ("sum_all", torch.sum, X),
    ("mean", lambda x: x.mean((1, 2), keepdim=True), X),
    ("prod", lambda x: x.prod(-1), _unit(2, 3, 8)),
    ("amax", lambda x: x.amax(1), X),
    ("amin", lambda x: x.amin(1), X),
    ("max_dim", lambda x: torch.max(x, 1), X),
    ("min_dim", lambda x: torch.min(x, -1), X),
    ("max_all", torch.max, X),
    ("argmax", lambda x: x.argmax(-1), X),
    ("argmin", lambda x: x.argmin(1), X),
    ("std", lambda x: x.std(-1), X),
    ("var", lambda x: x.var(1, unbiased=False), X),
    ("var_mean", lambda x: torch.var_mean(x, -1), X),
    ("std_mean", lambda x: torch.std_mean(x, 1), X),
    ("logsumexp", lambda x: torch.logsumexp(x, -1), X),
    ("vector_norm", lambda x: torch.linalg.vector_norm(x, dim=-1), X),
    ("norm", lambda x: torch.norm(x, dim=1), X),
    ("norm_l1", lambda x: torch.norm(x, p=1, dim=-1), X),
    ("cumsum", lambda x: x.cumsum(-1), X),
    ("cumprod", lambda x: x.cumprod(1), _unit(2, 3, 8)),
    ("all", lambda x: (x > -1).all(-1), X),
    ("any", lambda x: (x > 1).any(1), X),
    ("count_nonzero", lambda x: torch.count_nonzero(x > 0, -1), X),
    ("aminmax", lambda x: torch.aminmax(x, dim=-1), X),
    ("nansum", lambda x: torch.nansum(x, -1), X),
    ("mean_keepdim_all", lambda x: x.mean(), X),
]:
    add(_name, "reduction", _f, _in)

# ----- sorting -------------------------------------------------------------------------------
for _name, _f, _in in [
    ("topk", lambda x: torch.topk(x, 3, dim=-1), X),
    ("topk_smallest", lambda x: torch.topk(x, 2, dim=1, largest=False), X),
    ("topk_values", lambda x: torch.topk(x, 3, dim=-1).values, X),
    ("sort", lambda x: torch.sort(x, -1), X),
    ("sort_descending", lambda x: torch.sort(x, 1, descending=True), X),
    ("argsort", lambda x: torch.argsort(x, -1), X),
    ("msort", torch.msort, X),
    ("kthvalue", lambda x: torch.kthvalue(x, 2, -1), X),
    ("median_dim", lambda x: torch.median(x, -1), _r(2, 3, 7)),
    ("cummax", lambda x: torch.cummax(x, -1), X),
]:
    add(_name, "sorting", _f, _in)

# ----- indexing and layout -------------------------------------------------------------------
for _name, _f, _in in [
    ("gather", lambda x, i: torch.gather(x, -1, i), _with(X, _randint(8, 2, 3, 4))),
    ("index_select", lambda x, i: torch.index_select(x, 1, i), _with(X, _randint(3, 5))),
    ("take_along_dim", lambda x, i: torch.take_along_dim(x, i, 1), _with(X, _randint(3, 2, 2, 8))),
    (
        "scatter",
        lambda x, i, s: x.scatter(-1, i, s),
        _with(X, _randint(8, 2, 3, 2), _randn(2, 3, 2)),
    ),
    (
        "scatter_add",
        lambda x, i, s: x.scatter_add(1, i, s),
        _with(X, _randint(3, 2, 3, 8), _randn(2, 3, 8)),
    ),
    (
        "index_add",
        lambda x, i, s: x.index_add(0, i, s),
        _with(_r(5, 4), _randint(5, 3), _randn(3, 4)),
    ),
    ("indexing_tensor", lambda x, i: x[:, i], _with(X, _randint(3, 4))),
    (
        "index_put",
        lambda x, i, v: x.index_put((i,), v),
        _with(_r(6, 4), _randint(6, 2), _randn(2, 4)),
    ),
    ("narrow", lambda x: x.narrow(-1, 2, 4), X),
    ("select", lambda x: x.select(1, 2), X),
    ("slice_step", lambda x: x[:, :, 1::2], X),
    ("flip", lambda x: torch.flip(x, (-1,)), X),
    ("roll", lambda x: torch.roll(x, 2, -1), X),
    ("tril", torch.tril, _r(5, 5)),
    ("triu", lambda x: torch.triu(x, 1), _r(5, 5)),
    ("diag", torch.diag, _r(5, 5)),
    ("diag_embed", torch.diag_embed, _r(2, 4)),
    ("diagonal", lambda x: torch.diagonal(x, 0, -2, -1), _r(2, 4, 4)),
    ("trace", torch.trace, _r(5, 5)),
    ("repeat", lambda x: x.repeat(1, 2, 1), X),
    ("repeat_interleave", lambda x: x.repeat_interleave(2, dim=1), X),
    ("tile", lambda x: torch.tile(x, (2, 1)), _r(3, 4)),
    ("expand_as", lambda x, y: x.expand_as(y), _rr((3, 1), (2, 3, 4))),
    ("broadcast_to", lambda x: torch.broadcast_to(x, (2, 3, 4)), _r(3, 1)),
    ("reshape_as", lambda x, y: x.reshape_as(y), _rr((12,), (3, 4))),
    ("view_as", lambda x, y: x.view_as(y), _rr((12,), (3, 4))),
    ("type_as", lambda x, y: x.type_as(y), _with(_ints(5, 3, 4), _randn(3, 4))),
    ("new_zeros", lambda x: x.new_zeros(2, 3) + x[0, :3], _r(3, 4)),
    ("new_ones", lambda x: x.new_ones((3, 4)) * x, _r(3, 4)),
    ("new_full", lambda x: x.new_full((3, 4), 2.5) - x, _r(3, 4)),
    ("zeros_like", lambda x: torch.zeros_like(x) + 1, X),
    ("full_like", lambda x: torch.full_like(x, 3.0) * x, X),
    ("arange", lambda x: x + torch.arange(8, dtype=torch.float32), X),
    ("linspace", lambda x: x * torch.linspace(0, 1, 8), X),
    ("unflatten", lambda x: x.unflatten(-1, (2, 4)), X),
    ("flatten", lambda x: torch.flatten(x, 1), X),
    ("movedim", lambda x: torch.movedim(x, 0, -1), X),
    ("swapaxes", lambda x: torch.swapaxes(x, 0, 2), X),
    ("permute", lambda x: x.permute(2, 0, 1), X),
    ("transpose", lambda x: x.transpose(1, 2), X),
    ("t", lambda x: x.t(), _r(3, 4)),
    ("squeeze", lambda x: x.squeeze(1), _r(2, 1, 4)),
    ("unsqueeze", lambda x: x.unsqueeze(-1), X),
    ("chunk", lambda x: torch.chunk(x, 2, -1), X),
    ("unbind", lambda x: torch.unbind(x, 1), X),
    ("split", lambda x: torch.split(x, [3, 5], -1), X),
    ("tensor_split", lambda x: torch.tensor_split(x, 3, -1), X),
    ("stack", lambda a, b: torch.stack([a, b], 1), _rr((2, 3), (2, 3))),
    ("cat", lambda a, b: torch.cat([a, b], -1), _rr((2, 3), (2, 5))),
    ("hstack", lambda a, b: torch.hstack([a, b]), _rr((2, 3), (2, 5))),
    ("vstack", lambda a, b: torch.vstack([a, b]), _rr((2, 3), (1, 3))),
    ("meshgrid", lambda a, b: torch.meshgrid(a, b, indexing="ij"), _rr((3,), (4,))),
    ("one_hot", lambda i: F.one_hot(i, 6), _ints(6, 2, 3)),
    ("embedding", lambda i, w: F.embedding(i, w), _with(_ints(10, 2, 3), _randn(10, 4))),
    ("diff", lambda x: torch.diff(x, dim=-1), X),
    ("atleast_2d", torch.atleast_2d, _r(5)),
    ("masked_scatter_free_where", lambda x, m: torch.where(m > 0, x, 0.0), _rr((4, 5), (4, 5))),
]:
    add(_name, "indexing", _f, _in)

# ----- normalization -------------------------------------------------------------------------
for _name, _f, _in in [
    ("layer_norm", lambda x, w, b: F.layer_norm(x, (8,), w, b), _with(X, _randn(8), _randn(8))),
    ("layer_norm_no_affine", lambda x: F.layer_norm(x, (3, 8)), X),
    (
        "group_norm",
        lambda x, w, b: F.group_norm(x, 2, w, b),
        _with(_r(2, 4, 5), _randn(4), _randn(4)),
    ),
    (
        "batch_norm_eval",
        lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, training=False),
        _with(IMG, _randn(3), _rand(3), _randn(3), _randn(3)),
    ),
    ("instance_norm", lambda x: F.instance_norm(x), IMG),
    (
        "instance_norm_affine",
        lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
        _with(SEQ, _randn(3), _randn(3)),
    ),
    ("rms_norm", lambda x, w: F.rms_norm(x, (8,), w), _with(X, _randn(8))),
    ("normalize", lambda x: F.normalize(x, dim=-1), X),
    ("normalize_p1", lambda x: F.normalize(x, p=1.0, dim=1), X),
    ("local_response_norm", lambda x: F.local_response_norm(x, 2), IMG),
]:
    add(_name, "normalization", _f, _in)

# ----- pooling and image ops -----------------------------------------------------------------
for _name, _f, _in in [
    ("avg_pool1d", lambda x: F.avg_pool1d(x, 2), SEQ),
    ("avg_pool2d", lambda x: F.avg_pool2d(x, 2), IMG),
    ("avg_pool2d_pad", lambda x: F.avg_pool2d(x, 3, 1, 1, count_include_pad=False), IMG),
    ("max_pool1d", lambda x: F.max_pool1d(x, 2), SEQ),
    ("max_pool2d", lambda x: F.max_pool2d(x, 2), IMG),
    ("max_pool2d_stride", lambda x: F.max_pool2d(x, 3, 2, 1), IMG),
    ("adaptive_avg_pool1d", lambda x: F.adaptive_avg_pool1d(x, 4), SEQ),
    ("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (1, 1)), IMG),
    ("adaptive_avg_pool2d_4", lambda x: F.adaptive_avg_pool2d(x, 4), IMG),
    ("adaptive_max_pool2d", lambda x: F.adaptive_max_pool2d(x, 2), IMG),
    ("adaptive_max_pool1d", lambda x: F.adaptive_max_pool1d(x, 4), SEQ),
    ("lp_pool2d", lambda x: F.lp_pool2d(x, 2.0, 2), IMG),
    ("pixel_shuffle", lambda x: F.pixel_shuffle(x, 2), _r(1, 8, 3, 3)),
    ("pixel_unshuffle", lambda x: F.pixel_unshuffle(x, 2), _r(1, 2, 4, 4)),
    ("unfold", lambda x: F.unfold(x, 2, stride=2), IMG),
    ("pad_constant", lambda x: F.pad(x, (1, 2, 0, 1), value=0.5), IMG),
    ("pad_reflect", lambda x: F.pad(x, (1, 1, 2, 0), mode="reflect"), IMG),
    ("pad_replicate", lambda x: F.pad(x, (1, 1, 2, 0), mode="replicate"), IMG),
    ("pad_circular", lambda x: F.pad(x, (1, 1, 2, 0), mode="circular"), IMG),
    ("zero_pad2d", lambda x: torch.nn.functional.pad(x, (0, 1, 0, 1)), IMG),
]:
    add(_name, "pooling", _f, _in)

for _name, _f, _in in [
    ("interpolate_nearest", lambda x: F.interpolate(x, scale_factor=2, mode="nearest"), IMG),
    ("interpolate_nearest_size", lambda x: F.interpolate(x, size=(5, 11)), IMG),
    ("interpolate_bilinear", lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"), IMG),
    (
        "interpolate_bilinear_ac",
        lambda x: F.interpolate(x, size=(6, 10), mode="bilinear", align_corners=True),
        IMG,
    ),
    ("interpolate_bicubic", lambda x: F.interpolate(x, scale_factor=2, mode="bicubic"), IMG),
    ("interpolate_linear", lambda x: F.interpolate(x, scale_factor=2, mode="linear"), SEQ),
    ("interpolate_nearest1d", lambda x: F.interpolate(x, size=24), SEQ),
    (
        "interpolate_nearest_exact",
        lambda x: F.interpolate(x, size=(5, 6), mode="nearest-exact"),
        IMG,
    ),
    ("interpolate_area", lambda x: F.interpolate(x, size=(4, 4), mode="area"), IMG),
    ("upsample_bilinear_down", lambda x: F.interpolate(x, size=(5, 5), mode="bilinear"), IMG),
]:
    add(_name, "interpolation", _f, _in)

# ----- convolution and linear layers ---------------------------------------------------------
for _name, _f, _in in [
    ("linear", F.linear, _with(X, _randn(5, 8), _randn(5))),
    ("bilinear", F.bilinear, _with(_r(2, 4), _randn(2, 3), _randn(5, 4, 3), _randn(5))),
    ("conv1d", lambda x, w: F.conv1d(x, w, padding=1), _with(SEQ, _randn(4, 3, 3))),
    (
        "conv2d",
        lambda x, w, b: F.conv2d(x, w, b, stride=2),
        _with(IMG, _randn(4, 3, 3, 3), _randn(4)),
    ),
    (
        "conv2d_groups",
        lambda x, w: F.conv2d(x, w, groups=3, padding=1),
        _with(IMG, _randn(3, 1, 3, 3)),
    ),
    ("conv2d_dilation", lambda x, w: F.conv2d(x, w, dilation=2), _with(IMG, _randn(2, 3, 3, 3))),
    (
        "conv_transpose1d",
        lambda x, w: F.conv_transpose1d(x, w, stride=2),
        _with(SEQ, _randn(3, 2, 3)),
    ),
    (
        "conv_transpose2d",
        lambda x, w: F.conv_transpose2d(x, w, stride=2),
        _with(IMG, _randn(3, 2, 2, 2)),
    ),
    (
        "scaled_dot_product_attention",
        F.scaled_dot_product_attention,
        _rr((1, 2, 4, 8), (1, 2, 5, 8), (1, 2, 5, 8)),
    ),
    (
        "sdpa_causal",
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        _rr((1, 2, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8)),
    ),
]:
    add(_name, "layer", _f, _in)

# ----- linear algebra ------------------------------------------------------------------------
for _name, _f, _in in [
    ("matmul", torch.matmul, _rr((2, 3, 4), (4, 5))),
    ("mm", torch.mm, _rr((3, 4), (4, 5))),
    ("bmm", torch.bmm, _rr((2, 3, 4), (2, 4, 5))),
    ("einsum_bmm", lambda a, b: torch.einsum("bij,bjk->bik", a, b), _rr((2, 3, 4), (2, 4, 5))),
    (
        "einsum_attention",
        lambda q, k: torch.einsum("bhqd,bhkd->bhqk", q, k),
        _rr((1, 2, 3, 4), (1, 2, 5, 4)),
    ),
    ("einsum_outer", lambda a, b: torch.einsum("i,j->ij", a, b), _rr((3,), (4,))),
    ("outer", torch.outer, _rr((3,), (4,))),
    ("dot", torch.dot, _rr((5,), (5,))),
    ("inner", torch.inner, _rr((2, 4), (3, 4))),
    ("mv", torch.mv, _rr((3, 4), (4,))),
    ("addmm", lambda c, a, b: torch.addmm(c, a, b, beta=0.5), _rr((5,), (3, 4), (4, 5))),
    ("baddbmm", torch.baddbmm, _rr((2, 3, 5), (2, 3, 4), (2, 4, 5))),
    ("addbmm", torch.addbmm, _rr((3, 5), (2, 3, 4), (2, 4, 5))),
    ("addmv", torch.addmv, _rr((3,), (3, 4), (4,))),
    ("addr", torch.addr, _rr((3, 4), (3,), (4,))),
    ("tensordot", lambda a, b: torch.tensordot(a, b, dims=1), _rr((3, 4), (4, 5))),
    ("kron", torch.kron, _rr((2, 2), (2, 3))),
    ("cross", lambda a, b: torch.linalg.cross(a, b), _rr((4, 3), (4, 3))),
    ("cdist", torch.cdist, _rr((1, 3, 4), (1, 5, 4))),
    ("cosine_similarity", lambda a, b: F.cosine_similarity(a, b, dim=-1), _rr((4, 6), (4, 6))),
    ("pairwise_distance", F.pairwise_distance, _rr((4, 6), (4, 6))),
    ("matrix_norm", lambda x: torch.linalg.matrix_norm(x), _r(2, 3, 4)),
]:
    add(_name, "linalg", _f, _in)

# ----- losses --------------------------------------------------------------------------------
_PAIR = _rr((4, 5), (4, 5))
for _name, _f, _in in [
    ("mse_loss", F.mse_loss, _PAIR),
    ("l1_loss", F.l1_loss, _PAIR),
    ("smooth_l1_loss", F.smooth_l1_loss, _PAIR),
    ("huber_loss", lambda a, b: F.huber_loss(a, b, delta=0.5), _PAIR),
    ("cross_entropy", F.cross_entropy, _with(_r(4, 5), _randint(5, 4))),
    ("cross_entropy_probs", lambda a, b: F.cross_entropy(a, b.softmax(-1)), _PAIR),
    ("nll_loss", lambda a, t: F.nll_loss(a.log_softmax(-1), t), _with(_r(4, 5), _randint(5, 4))),
    ("binary_cross_entropy", lambda a, b: F.binary_cross_entropy(a.sigmoid(), b.sigmoid()), _PAIR),
    ("bce_with_logits", lambda a, b: F.binary_cross_entropy_with_logits(a, b.sigmoid()), _PAIR),
    (
        "kl_div",
        lambda a, b: F.kl_div(a.log_softmax(-1), b.softmax(-1), reduction="batchmean"),
        _PAIR,
    ),
    ("soft_margin_loss", F.soft_margin_loss, _PAIR),
    (
        "margin_ranking_loss",
        lambda a, b, y: F.margin_ranking_loss(a, b, y.sign()),
        _rr((6,), (6,), (6,)),
    ),
    ("hinge_embedding_loss", lambda a, y: F.hinge_embedding_loss(a, y.sign()), _PAIR),
    (
        "cosine_embedding_loss",
        lambda a, b, y: F.cosine_embedding_loss(a, b, y.sign()),
        _rr((4, 5), (4, 5), (4,)),
    ),
    ("triplet_margin_loss", F.triplet_margin_loss, _rr((4, 5), (4, 5), (4, 5))),
    ("poisson_nll_loss", F.poisson_nll_loss, _PAIR),
    (
        "gaussian_nll_loss",
        lambda a, b, v: F.gaussian_nll_loss(a, b, v.exp()),
        _rr((4, 5), (4, 5), (4, 5)),
    ),
    (
        "multilabel_soft_margin_loss",
        lambda a, b: F.multilabel_soft_margin_loss(a, (b > 0).float()),
        _PAIR,
    ),
]:
    add(_name, "loss", _f, _in)

FUNCTIONS: tuple[Function, ...] = tuple(_F)
FAMILIES: tuple[str, ...] = tuple(dict.fromkeys(f.family for f in FUNCTIONS))


def case(function: Function, seed: int = 0) -> Case:
    """The function as a conformance case (inputs from a seeded generator)."""
    generator = torch.Generator().manual_seed(seed)
    inputs = function.inputs(generator)
    return Case(
        function.name,
        str(inputs[0].dtype).removeprefix("torch."),
        0,
        FunctionModule(function.fn),
        inputs,
        function.family,
    )


def cases(names: set[str] | None = None) -> Iterator[Case]:
    for function in FUNCTIONS:
        if names is None or function.name in names:
            yield case(function)
