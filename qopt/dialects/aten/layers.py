"""aten layer ops: normalisations (layer, group, batch), 2-D pooling (max, average,
adaptive average), scaled dot-product attention and pixel shuffle.

Normalisations compute in float32 (float64 for f64 tensors). Their optional
affine parameters are written `weight(%w : type)` and `bias(%b : type)`; an op
from torch's `native_*` variants also returns the saved statistics (`mean`,
`rstd`), which torch's inference batch norm returns empty.

See external [documentation](https://pytorch.org/docs/stable/nn.functional.html).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    TensorType,
)
from xdsl.ir import SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_result_def,
)

from qopt.dialects.aten.base import AtenOp, Shape, broadcast_shapes, flag, integer, ints, shape_of
from qopt.dialects.tensors import elem_of
from qopt.dtypes import is_bool, is_float

_AFFINE = "(`weight` `(` $weight^ `:` type($weight) `)`)? (`bias` `(` $bias^ `:` type($bias) `)`)?"


DEFAULT_EPS = 1e-5
"""`eps` of the norms when the op has none: torch's default."""


class NormOp(AtenOp):
    """A normalisation with optional per-channel `weight` and `bias`."""

    irdl_options = (ParsePropInAttrDict(), AttrSizedOperandSegments(as_property=True))

    def check_param(self, value: SSAValue | None, what: str, shape: Shape) -> None:
        if value is not None and shape_of(value) != shape:
            raise self.fail(f"{what} must have shape {list(shape)}, got {list(shape_of(value))}")

    def check_stats(self, stats: Sequence[SSAValue]) -> None:
        if len(stats) not in (0, 2):
            raise self.fail(f"expected 1 or 3 results (out, mean, rstd), got {1 + len(stats)}")


@irdl_op_definition
class LayerNormOp(NormOp):
    """Normalise over the trailing `normalized_shape` dims:
    `(x - mean) * rstd * weight + bias`, `rstd = 1 / sqrt(var + eps)` (biased var).
    With 3 results (`aten.native_layer_norm`) also `mean` and `rstd`, shaped like
    the input with the normalised dims set to 1."""

    name = "aten.layer_norm"
    input = operand_def(TensorType)
    weight = opt_operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    normalized_shape = prop_def(DenseArrayBase[IntegerType])
    eps = opt_prop_def(FloatAttr)
    result = result_def(TensorType)
    stats = var_result_def(TensorType)
    assembly_format = f"$input {_AFFINE} attr-dict `:` type($input) `->` type(results)"

    def check(self) -> None:
        self.require_float(self.input, "input")
        self.check_stats(self.stats)

    def expected_shapes(self) -> Sequence[Shape]:
        x = shape_of(self.input)
        norm = ints(self.normalized_shape)
        if not norm or len(norm) > len(x) or x[len(x) - len(norm) :] != norm:
            raise self.fail(
                f"normalized_shape {list(norm)} must be a non-empty suffix of the input "
                f"shape {list(x)}"
            )
        self.check_param(self.weight, "weight", norm)
        self.check_param(self.bias, "bias", norm)
        if not self.stats:
            return [x]
        stat = (*x[: len(x) - len(norm)], *(1 for _ in norm))
        return [x, stat, stat]


@irdl_op_definition
class GroupNormOp(NormOp):
    """Normalise `[N, C, *]` over each of `num_groups` channel groups (and the
    spatial dims), then apply per-channel `weight` and `bias`. With 3 results
    (`aten.native_group_norm`) also `mean` and `rstd`, shaped `[N, num_groups]`."""

    name = "aten.group_norm"
    input = operand_def(TensorType)
    weight = opt_operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    num_groups = prop_def(IntegerAttr)
    eps = opt_prop_def(FloatAttr)
    result = result_def(TensorType)
    stats = var_result_def(TensorType)
    assembly_format = f"$input {_AFFINE} attr-dict `:` type($input) `->` type(results)"

    def check(self) -> None:
        self.require_float(self.input, "input")
        self.check_stats(self.stats)

    def expected_shapes(self) -> Sequence[Shape]:
        x = shape_of(self.input)
        groups = integer(self.num_groups)
        if len(x) < 2:
            raise self.fail(f"input must be [N, C, *], got {list(x)}")
        if groups < 1 or x[1] % groups:
            raise self.fail(f"{x[1]} channels cannot be split into {groups} groups")
        self.check_param(self.weight, "weight", (x[1],))
        self.check_param(self.bias, "bias", (x[1],))
        if not self.stats:
            return [x]
        return [x, (x[0], groups), (x[0], groups)]


@irdl_op_definition
class BatchNormOp(NormOp):
    """Inference batch norm over channel dim 1 with the running statistics:
    `x * a + b` where `a = weight / sqrt(running_var + eps)` and
    `b = bias - running_mean * a`. With 3 results
    (`aten._native_batch_norm_legit_no_training`) the two extra results are
    empty (`[0]`), as torch returns them."""

    name = "aten.batch_norm"
    input = operand_def(TensorType)
    weight = opt_operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    running_mean = operand_def(TensorType)
    running_var = operand_def(TensorType)
    eps = opt_prop_def(FloatAttr)
    result = result_def(TensorType)
    stats = var_result_def(TensorType)
    assembly_format = (
        f"$input `,` $running_mean `,` $running_var {_AFFINE} attr-dict `:` type($input) "
        "`,` type($running_mean) `,` type($running_var) `->` type(results)"
    )

    def check(self) -> None:
        self.require_float(self.input, "input")
        if len(self.stats) not in (0, 2):
            raise self.fail(f"expected 1 or 3 results, got {1 + len(self.stats)}")

    def expected_shapes(self) -> Sequence[Shape]:
        x = shape_of(self.input)
        if len(x) < 2:
            raise self.fail(f"input must be [N, C, *], got {list(x)}")
        channel = (x[1],)
        self.check_param(self.weight, "weight", channel)
        self.check_param(self.bias, "bias", channel)
        self.check_param(self.running_mean, "running_mean", channel)
        self.check_param(self.running_var, "running_var", channel)
        if not self.stats:
            return [x]
        return [x, (0,), (0,)]


def pool_out(size: int, kernel: int, stride: int, pad: int, dilation: int, ceil: bool) -> int:
    """torch's pooling output size (a last window must start inside input + left pad)."""
    span = size + 2 * pad - dilation * (kernel - 1) - 1 + (stride - 1 if ceil else 0)
    out = span // stride + 1
    if ceil and (out - 1) * stride >= size + pad:
        out -= 1
    return out


class Pool2dOp(AtenOp):
    """Sliding-window pooling over the last two dims of a `[N, C, H, W]` or
    `[C, H, W]` input. `stride` empty = `kernel_size`."""

    input = operand_def(TensorType)
    kernel_size = prop_def(DenseArrayBase[IntegerType])
    stride = opt_prop_def(DenseArrayBase[IntegerType])
    padding = opt_prop_def(DenseArrayBase[IntegerType])
    ceil_mode = opt_prop_def(BoolAttr)

    def window(self) -> tuple[Shape, Shape, Shape, Shape]:
        """(kernel, stride, padding, dilation), each with 2 entries."""
        kernel = ints(self.kernel_size)
        stride = ints(self.stride) or kernel
        padding = ints(self.padding) or (0, 0)
        dilation = ints(getattr(self, "dilation", None)) or (1, 1)
        for what, values in (
            ("kernel_size", kernel),
            ("stride", stride),
            ("padding", padding),
            ("dilation", dilation),
        ):
            if len(values) != 2:
                raise self.fail(f"{what} must have 2 entries, got {list(values)}")
        if min(kernel) < 1 or min(stride) < 1 or min(dilation) < 1 or min(padding) < 0:
            raise self.fail("kernel_size, stride and dilation must be positive, padding >= 0")
        return kernel, stride, padding, dilation

    def pooled_shape(self) -> Shape:
        x = shape_of(self.input)
        if len(x) not in (3, 4):
            raise self.fail(f"input must be 3-D or 4-D, got {list(x)}")
        kernel, stride, padding, dilation = self.window()
        limit = tuple(k // 2 for k in kernel)
        if padding[0] > limit[0] or padding[1] > limit[1]:
            raise self.fail(
                f"padding {list(padding)} must be at most half the kernel ({list(limit)})"
            )
        ceil = flag(self.ceil_mode)
        out = tuple(
            pool_out(x[-2 + i], kernel[i], stride[i], padding[i], dilation[i], ceil)
            for i in range(2)
        )
        if min(out) < 1:
            raise self.fail(f"the {list(x[-2:])} input is too small for the window")
        return (*x[:-2], *out)


@irdl_op_definition
class MaxPool2dOp(Pool2dOp):
    """Window maximum (padding never wins; NaN propagates). With 2 results
    (`aten.max_pool2d_with_indices`) also the int64 flat index `h * W + w` of
    each maximum in its input plane (the first maximum wins ties)."""

    name = "aten.max_pool2d"
    dilation = opt_prop_def(DenseArrayBase[IntegerType])
    result = result_def(TensorType)
    indices = var_result_def(TensorType)

    def check(self) -> None:
        if len(self.indices) > 1:
            raise self.fail(f"expected 1 or 2 results, got {1 + len(self.indices)}")
        for value in self.indices:
            self.require_integer(value, "indices")

    def expected_shapes(self) -> Sequence[Shape]:
        out = self.pooled_shape()
        return [out] * (1 + len(self.indices))


@irdl_op_definition
class AvgPool2dOp(Pool2dOp):
    """Window mean. The divisor is `divisor_override` if set, else the window's
    size clipped to the padded input (`count_include_pad`, the default) or to the
    input itself."""

    name = "aten.avg_pool2d"
    count_include_pad = opt_prop_def(BoolAttr)
    divisor_override = opt_prop_def(IntegerAttr)
    result = result_def(TensorType)

    def check(self) -> None:
        self.require_float(self.input, "input")
        if self.divisor_override is not None and integer(self.divisor_override) == 0:
            raise self.fail("divisor_override must not be zero")

    def expected_shapes(self) -> Sequence[Shape]:
        return [self.pooled_shape()]


@irdl_op_definition
class AdaptiveAvgPool2dOp(AtenOp):
    """Mean over `output_size` bins of the last two dims; bin `i` of `n` over a
    size `s` covers `[floor(i * s / n), ceil((i + 1) * s / n))`."""

    name = "aten.adaptive_avg_pool2d"
    input = operand_def(TensorType)
    output_size = prop_def(DenseArrayBase[IntegerType])
    result = result_def(TensorType)

    def check(self) -> None:
        self.require_float(self.input, "input")

    def expected_shapes(self) -> Sequence[Shape]:
        x = shape_of(self.input)
        size = ints(self.output_size)
        if len(x) not in (3, 4):
            raise self.fail(f"input must be 3-D or 4-D, got {list(x)}")
        if len(size) != 2 or min(size) < 1:
            raise self.fail(f"output_size must be 2 positive sizes, got {list(size)}")
        if min(x[-2:]) < 1:
            raise self.fail(f"cannot pool an empty {list(x[-2:])} plane")
        return [(*x[:-2], *size)]


@irdl_op_definition
class ScaledDotProductAttentionOp(AtenOp):
    """`softmax(q @ k^T * scale + mask) @ v` in float32 over query `[..., Hq, L, E]`,
    key `[..., Hk, S, E]`, value `[..., Hk, S, Ev]`; `scale` defaults to
    `1 / sqrt(E)`. A bool `attn_mask` keeps True positions, a float one is added;
    `is_causal` keeps key `j <= i` for query `i`. With `enable_gqa` each key/value
    head serves `Hq / Hk` consecutive query heads. A query row with every key
    masked gives 0 (torch's safe softmax). No dropout."""

    name = "aten.scaled_dot_product_attention"
    query = operand_def(TensorType)
    key = operand_def(TensorType)
    value = operand_def(TensorType)
    attn_mask = opt_operand_def(TensorType)
    is_causal = opt_prop_def(BoolAttr)
    scale = opt_prop_def(FloatAttr)
    enable_gqa = opt_prop_def(BoolAttr)
    result = result_def(TensorType)

    def check(self) -> None:
        for value, what in ((self.query, "query"), (self.key, "key"), (self.value, "value")):
            self.require_float(value, what)
        if self.attn_mask is not None:
            elem = elem_of(self.attn_mask)
            if not is_bool(elem) and not is_float(elem):
                raise self.fail(f"attn_mask must be bool or float, got {self.attn_mask.type}")
            if flag(self.is_causal):
                raise self.fail("attn_mask and is_causal cannot both be set")

    def expected_shapes(self) -> Sequence[Shape]:
        q, k, v = shape_of(self.query), shape_of(self.key), shape_of(self.value)
        if len(q) < 2 or len(k) != len(q) or len(v) != len(q):
            raise self.fail(
                f"query, key and value must have one rank >= 2, got {list(q)}, {list(k)}, {list(v)}"
            )
        if q[-1] != k[-1]:
            raise self.fail(f"query and key must share the embedding dim, got {q[-1]} and {k[-1]}")
        if k[:-1] != v[:-1]:
            raise self.fail(f"key {list(k)} and value {list(v)} must match except the last dim")
        kv_batch = k[:-2]
        if flag(self.enable_gqa) and len(q) >= 3:
            hq, hk = q[-3], k[-3]
            if hk < 1 or hq % hk:
                raise self.fail(f"{hq} query heads are not a multiple of {hk} key/value heads")
            kv_batch = (*k[:-3], hq)
        batch = broadcast_shapes(q[:-2], kv_batch)
        if batch is None:
            raise self.fail(f"batch dims of query {list(q)} and key {list(k)} do not broadcast")
        scores = (*batch, q[-2], k[-2])
        if self.attn_mask is not None:
            mask = shape_of(self.attn_mask)
            if broadcast_shapes(mask, scores) != scores:
                raise self.fail(f"attn_mask {list(mask)} does not broadcast to {list(scores)}")
        return [(*batch, q[-2], v[-1])]


@irdl_op_definition
class PixelShuffleOp(AtenOp):
    """`[..., C * r * r, H, W] -> [..., C, H * r, W * r]`, `r = upscale_factor`."""

    name = "aten.pixel_shuffle"
    input = operand_def(TensorType)
    upscale_factor = prop_def(IntegerAttr)
    result = result_def(TensorType)

    def expected_shapes(self) -> Sequence[Shape]:
        x = shape_of(self.input)
        r = integer(self.upscale_factor)
        if len(x) < 3:
            raise self.fail(f"input must have rank >= 3, got {list(x)}")
        if r < 1 or x[-3] % (r * r):
            raise self.fail(f"{x[-3]} channels are not divisible by upscale_factor^2 = {r * r}")
        return [(*x[:-3], x[-3] // (r * r), x[-2] * r, x[-1] * r)]


class Upsample2dOp(AtenOp):
    """Resize the last two dims of a `[N, C, H, W]` (or `[C, H, W]`) input to the
    result's `[OH, OW]`. `scales_h` / `scales_w` are the user's scale factors (absent
    when an output size was given): torch maps output to input indices with `1 /
    scale` then, else with `H / OH` (qopt/numerics/resize.py)."""

    input = operand_def(TensorType)
    scales_h = opt_prop_def(FloatAttr)
    scales_w = opt_prop_def(FloatAttr)
    result = result_def(TensorType)

    def scales(self) -> tuple[float | None, float | None]:
        return (
            None if self.scales_h is None else float(self.scales_h.value.data),
            None if self.scales_w is None else float(self.scales_w.value.data),
        )

    def check(self) -> None:
        self.require_float(self.input, "input")
        if elem_of(self.input) != elem_of(self.result):
            raise self.fail("input and result element types must match")
        if any(s is not None and not s > 0 for s in self.scales()):
            raise self.fail(f"scales must be positive, got {list(self.scales())}")

    def expected_shapes(self) -> Sequence[Shape]:
        x, y = shape_of(self.input), shape_of(self.result)
        if len(x) not in (3, 4):
            raise self.fail(f"input must be 3-D or 4-D, got {list(x)}")
        if len(y) != len(x) or min(y[-2:], default=0) < 1 or min(x[-2:]) < 1:
            raise self.fail(f"cannot resize {list(x)} to {list(y)}")
        return [(*x[:-2], *y[-2:])]


@irdl_op_definition
class UpsampleNearest2dOp(Upsample2dOp):
    """`y[..., i, j] = x[..., floor(i * sh), floor(j * sw)]` (torch's legacy
    'nearest'; clamped to the input). See external
    [documentation](https://pytorch.org/docs/stable/generated/torch.nn.functional.interpolate.html)."""

    name = "aten.upsample_nearest2d"


@irdl_op_definition
class UpsampleBilinear2dOp(Upsample2dOp):
    """Bilinear interpolation between the two nearest source rows and columns;
    `align_corners` maps the corner pixels' centres onto each other, else
    half-pixel centres (sources clamped at 0)."""

    name = "aten.upsample_bilinear2d"
    align_corners = opt_prop_def(BoolAttr)


OPS = [
    LayerNormOp,
    GroupNormOp,
    BatchNormOp,
    MaxPool2dOp,
    AvgPool2dOp,
    AdaptiveAvgPool2dOp,
    ScaledDotProductAttentionOp,
    PixelShuffleOp,
    UpsampleNearest2dOp,
    UpsampleBilinear2dOp,
]
