"""convert-to-coreml rules for the aten layers family (qopt/dialects/aten/layers.py):
layer_norm, batch_norm, pooling, scaled_dot_product_attention."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import StringAttr, TensorType, f32, i1, i32
from xdsl.ir import Attribute, SSAValue

from qopt.dialects import coreml
from qopt.dialects.aten import layers
from qopt.dialects.aten.base import flag, real
from qopt.dialects.coreml import storage_dtype
from qopt.dialects.tensors import elem_of, shape_of
from qopt.errors import QoptError, where
from qopt.lowering.convert_to_coreml.lowering import (
    Lowering,
    RuleTable,
    bool_attr,
    float_attr,
    int_attr,
    ints,
    mil_elem,
    mil_tensor,
)
from qopt.numerics import resize

RULES = RuleTable()


@RULES(layers.LayerNormOp)
def _layer_norm(lw: Lowering, op: layers.LayerNormOp) -> Sequence[SSAValue]:
    """MIL `layer_norm` over the trailing dims. Its gamma and beta must be constants:
    a run-time weight or bias is a `mul` / `add` after it (broadcast over the trailing
    dims). native_layer_norm's mean and rstd outputs only when unused."""
    if any(r.uses for r in op.stats):
        raise QoptError(
            f"convert-to-coreml: {where(op)}: the mean / rstd outputs of native_layer_norm "
            "have no CoreML lowering: use only the normalized output"
        )
    rank = len(shape_of(op.input))
    n = len(op.normalized_shape.get_values())
    axes = list(range(rank - n, rank))
    out = mil_tensor(op.result.type)
    weight, bias = op.weight, op.bias
    constant = all(p is None or lw.array(p) is not None for p in (weight, bias))
    y = lw.build(
        coreml.LayerNormOp,
        [op.input, weight, bias] if constant else [op.input, None, None],
        out,
        axes=ints(axes),
        epsilon=float_attr(real(op.eps, layers.DEFAULT_EPS)),
    )
    if not constant:
        for param, cls in ((weight, coreml.MulOp), (bias, coreml.AddOp)):
            if param is not None:
                y = lw.build(cls, [y, lw.as_elem(param, out.get_element_type())], out)
    return [y, *(y for _ in op.stats)]  # unused stats: nothing reads them


@RULES(layers.GroupNormOp)
def _group_norm(lw: Lowering, op: layers.GroupNormOp) -> Sequence[SSAValue]:
    """Group norm: x `[N, C, *]` reshaped to `[N, G, C / G * prod(*)]`, MIL
    `layer_norm` over the last axis (no gamma / beta), reshaped back, then `* weight`
    and `+ bias` per channel (reshaped to `[C, 1, ...]`). native_group_norm's mean
    and rstd outputs are not lowered."""
    if any(r.uses for r in op.stats):
        raise QoptError(
            f"convert-to-coreml: {where(op)}: the mean / rstd outputs of native_group_norm "
            "have no CoreML lowering: use only the normalized output"
        )
    dims = list(shape_of(op.input))
    out = mil_tensor(op.result.type)
    elem = out.get_element_type()
    groups = int(op.num_groups.value.data)
    grouped = [dims[0], groups, math.prod(dims[1:]) // groups]
    x = lw.as_elem(op.input, elem)
    x = lw.build(coreml.ReshapeOp, [x], TensorType(elem, grouped), shape=ints(grouped))
    eps = float_attr(real(op.eps, layers.DEFAULT_EPS))
    y = lw.build(coreml.LayerNormOp, [x, None, None], x.type, axes=ints([2]), epsilon=eps)
    y = lw.build(coreml.ReshapeOp, [y], out, shape=ints(dims))
    channel = [dims[1], *([1] * (len(dims) - 2))]
    for param, cls in ((op.weight, coreml.MulOp), (op.bias, coreml.AddOp)):
        if param is None:
            continue
        if (array := lw.array(param)) is not None:
            value = lw.const(array.reshape(channel).astype(storage_dtype(elem)), elem, "gn")
        else:
            value = lw.as_elem(param, elem)
            channel_type = TensorType(elem, channel)
            value = lw.build(coreml.ReshapeOp, [value], channel_type, shape=ints(channel))
        y = lw.build(cls, [y, value], out)
    return [y, *(y for _ in op.stats)]  # unused stats: nothing reads them


@RULES(layers.BatchNormOp)
def _batch_norm(lw: Lowering, op: layers.BatchNormOp) -> Sequence[SSAValue]:
    """Inference batch norm: MIL batch_norm for rank 3 to 5 (its range); a rank-2
    input `[N, C]` becomes `x * a + b` with `a = weight / sqrt(var + eps)` and
    `b = bias - mean * a` computed at compile time (torch's order)."""
    if any(r.uses for r in op.stats):
        raise QoptError(
            f"convert-to-coreml: {where(op)}: the saved batch statistics of batch_norm are "
            "not supported (export the model in eval mode)"
        )
    x = op.input
    out = mil_tensor(op.result.type)
    elem = out.get_element_type()
    dtype = storage_dtype(elem)
    eps = real(op.eps, layers.DEFAULT_EPS)
    params = {
        "running_mean": op.running_mean,
        "running_var": op.running_var,
        "weight": op.weight,
        "bias": op.bias,
    }
    arrays: dict[str, np.ndarray | None] = {}
    for key, value in params.items():
        array = None if value is None else lw.array(value)
        if value is not None and array is None:
            raise QoptError(
                f"convert-to-coreml: {where(op)}: batch_norm's {key} is computed at run time; "
                "Core ML takes constant statistics and affine parameters: export the model "
                "in eval mode with the statistics as parameters or buffers"
            )
        arrays[key] = None if array is None else array.astype(dtype)
    mean, var, gamma, beta = arrays.values()
    assert mean is not None
    assert var is not None
    rank = len(shape_of(x))
    if 3 <= rank <= 5:
        operands = [
            x,
            lw.const(mean, elem, "bn_mean"),
            lw.const(var, elem, "bn_variance"),
            None if gamma is None else lw.const(gamma, elem, "bn_gamma"),
            None if beta is None else lw.const(beta, elem, "bn_beta"),
        ]
        value = lw.build(coreml.BatchNormOp, operands, out, epsilon=float_attr(eps))
        return [value] * len(op.results)
    if rank != 2:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: batch_norm needs an input [N, C, *] of rank 2 "
            f"to 5, got rank {rank}"
        )
    alpha = np.asarray(1, dtype) / np.sqrt(var + np.asarray(eps, dtype))
    if gamma is not None:
        alpha = alpha * gamma
    shift = -mean * alpha
    if beta is not None:
        shift = shift + beta
    scaled = lw.build(coreml.MulOp, [x, lw.const(alpha, elem, "bn_scale")], out)
    value = lw.build(coreml.AddOp, [scaled, lw.const(shift, elem, "bn_shift")], out)
    return [value] * len(op.results)


def _pool_props(op: layers.Pool2dOp) -> dict[str, Attribute]:
    """MIL pool parameters giving exactly torch's windows, never MIL's `ceil_mode`
    (whose last windows coremltools defines only for symmetric padding): the end
    padding of each spatial dim is what the last of torch's windows needs, so a
    floor-mode MIL pool over the padded input yields torch's output size, including
    ceil_mode's dropping of windows that would start in the end padding (symmetric
    padding where it gives the same windows)."""
    kernel, stride, padding, dilation = op.window()
    if any(d != 1 for d in dilation):
        raise QoptError(f"convert-to-coreml: {where(op)}: dilated pooling is not supported")
    sizes = shape_of(op.input)[-2:]
    outs = shape_of(op.results[0])[-2:]
    pad: list[int] = []
    for size, out, k, s, p in zip(sizes, outs, kernel, stride, padding, strict=True):
        symmetric = (size + 2 * p - k) // s + 1 == out
        pad += [p, p if symmetric else max((out - 1) * s + k - size - p, 0)]
    return {
        "kernel_sizes": ints(kernel),
        "strides": ints(stride),
        "pad_type": StringAttr("custom"),
        "pad": ints(pad),
        "ceil_mode": bool_attr(False),
    }


def _pool(
    lw: Lowering, op: layers.Pool2dOp, cls: type[coreml.CoremlOp], **props: Attribute
) -> SSAValue:
    """MIL pool `cls` of op's input; an unbatched `[C, H, W]` input (MIL reads rank 3
    as one spatial dim) is pooled as `[1, C, H, W]`."""
    x, out = op.input, mil_tensor(op.results[0].type)
    if coreml.mil_dtype_name(mil_elem(elem_of(x))) not in ("fp16", "fp32"):
        raise QoptError(
            f"convert-to-coreml: {where(op)}: pooling of "
            f"{coreml.mil_dtype_name(mil_elem(elem_of(x)))} tensors has no CoreML lowering "
            "(MIL pools fp16 / fp32): cast the input to float"
        )
    if len(shape_of(x)) == 4:
        return lw.build(cls, [x], out, **_pool_props(op), **props)
    elem = elem_of(x)
    batched = (1, *shape_of(x))
    x = lw.build(coreml.ReshapeOp, [x], TensorType(elem, batched), shape=ints(batched))
    pooled = (1, *out.get_shape())
    y = lw.build(cls, [x], TensorType(elem, pooled), **_pool_props(op), **props)
    return lw.build(coreml.ReshapeOp, [y], out, shape=ints(out.get_shape()))


@RULES(layers.MaxPool2dOp)
def _max_pool(lw: Lowering, op: layers.MaxPool2dOp) -> Sequence[SSAValue]:
    if any(v.uses for v in op.indices):
        raise QoptError(f"convert-to-coreml: {where(op)}: max_pool2d indices are not supported")
    value = _pool(lw, op, coreml.MaxPoolOp)
    return [value] * len(op.results)


def _avg_divisor_scale(op: layers.AvgPool2dOp) -> np.ndarray | None:
    """What a MIL average over the whole `kh * kw` window must be multiplied by to be
    torch's average with `count_include_pad` (its divisor counts the padding but not
    what a ceil_mode window runs past it) or `divisor_override`; None when 1."""
    kernel, stride, padding, _ = op.window()
    area = kernel[0] * kernel[1]
    if op.divisor_override is not None:
        return np.asarray(area / op.divisor_override.value.data, np.float64)
    counts: list[np.ndarray] = []
    for size, out, k, s, p in zip(
        shape_of(op.input)[-2:], shape_of(op.result)[-2:], kernel, stride, padding, strict=True
    ):
        start = np.arange(out) * s - p
        counts.append(np.minimum(start + k, size + p) - start)
    divisor = counts[0][:, None] * counts[1][None, :]
    if np.all(divisor == area):
        return None
    return area / divisor


@RULES(layers.AvgPool2dOp)
def _avg_pool(lw: Lowering, op: layers.AvgPool2dOp) -> Sequence[SSAValue]:
    """torch's divisor: the in-bounds element count (`count_include_pad=False`: MIL's
    exclude_padding_from_average), else the window clipped to the padded input, or
    `divisor_override`: MIL's whole-window average times a constant."""
    include = op.count_include_pad is None or bool(op.count_include_pad.value.data)
    exclude = not include and op.divisor_override is None
    y = _pool(lw, op, coreml.AvgPoolOp, exclude_padding_from_average=bool_attr(exclude))
    scale = None if exclude else _avg_divisor_scale(op)
    if scale is None:
        return [y]
    elem = elem_of(y)
    factor = lw.const(scale.astype(storage_dtype(elem)), elem, "avg_pool_divisor")
    return [lw.build(coreml.MulOp, [y, factor], mil_tensor(op.result.type))]


@RULES(layers.AdaptiveAvgPool2dOp)
def _adaptive_avg_pool(lw: Lowering, op: layers.AdaptiveAvgPool2dOp) -> Sequence[SSAValue]:
    x = op.input
    h, w = shape_of(x)[-2:]
    oh, ow = shape_of(op.result)[-2:]
    out = mil_tensor(op.result.type)
    if (oh, ow) == (1, 1):
        rank = len(shape_of(x))
        axes = ints((rank - 2, rank - 1))
        return [lw.build(coreml.ReduceMeanOp, [x], out, axes=axes, keep_dims=bool_attr(True))]
    if h % oh or w % ow:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: adaptive pooling to {oh}x{ow} needs input "
            f"sizes divisible by it (got {h}x{w})"
        )
    kernel = ints((h // oh, w // ow))
    return [
        lw.build(
            coreml.AvgPoolOp,
            [x],
            out,
            kernel_sizes=kernel,
            strides=kernel,
            pad_type=StringAttr("valid"),
            pad=ints((0, 0, 0, 0)),
            ceil_mode=bool_attr(False),
            exclude_padding_from_average=bool_attr(False),
        )
    ]


def _repeat_heads(lw: Lowering, x: SSAValue, repeats: int) -> SSAValue:
    """`x` `[*B, H, S, E]` with each head repeated `repeats` times in place
    (`repeat_interleave` on dim -3: head h of the result is head h // repeats of
    x): `reshape` to `[prod(B), H, 1, S * E]`, `tile` the size-1 dim, `reshape` to
    `[*B, H * repeats, S, E]` (rank 4 at most in between)."""
    *batch, h, s, e = shape_of(x)
    elem = elem_of(x)
    lead = math.prod(batch)
    split = (lead, h, 1, s * e)
    x = lw.build(coreml.ReshapeOp, [x], TensorType(elem, split), shape=ints(split))
    tiled = (lead, h, repeats, s * e)
    x = lw.build(coreml.TileOp, [x], TensorType(elem, tiled), reps=ints((1, 1, repeats, 1)))
    dims = (*batch, h * repeats, s, e)
    return lw.build(coreml.ReshapeOp, [x], TensorType(elem, dims), shape=ints(dims))


@RULES(layers.ScaledDotProductAttentionOp)
def _sdpa(lw: Lowering, op: layers.ScaledDotProductAttentionOp) -> Sequence[SSAValue]:
    """`softmax(q @ k.T * scale + mask) @ v`: MIL `scaled_dot_product_attention` on
    iOS18, its decomposition before. With `enable_gqa` and fewer key/value heads
    than query heads, each key/value head is repeated for its `Hq / Hk`
    consecutive query heads (`_repeat_heads`); MIL's op wants equal batch dims,
    so query, key and value are then broadcast to the result's (`tile`)."""
    q, k, v = op.query, op.key, op.value
    out = mil_tensor(op.result.type)
    qs, ks = shape_of(q), shape_of(k)
    if flag(op.enable_gqa) and len(qs) >= 3 and qs[-3] != ks[-3]:
        repeats = qs[-3] // ks[-3]
        k, v = _repeat_heads(lw, k, repeats), _repeat_heads(lw, v, repeats)
    e = shape_of(q)[-1]
    length, source = shape_of(q)[-2], shape_of(k)[-2]
    mask = op.attn_mask
    if op.is_causal is not None and bool(op.is_causal.value.data):
        if mask is not None:
            raise QoptError(f"convert-to-coreml: {where(op)}: is_causal with attn_mask")
        mask = lw.const(np.tril(np.ones((length, source), np.bool_)), i1, "causal_mask")
    if op.scale is not None and not math.isclose(op.scale.value.data, 1 / math.sqrt(e)):
        factor = op.scale.value.data * math.sqrt(e)
        q = lw.build(coreml.MulOp, [q, lw.scalar(factor, q)], q.type)
    if lw.opset >= 18:
        batch = tuple(out.get_shape())[:-2]
        q, k, v = (lw.broadcast_to(op, x, (*batch, *shape_of(x)[-2:])) for x in (q, k, v))
        return [lw.build(coreml.ScaledDotProductAttentionOp, [q, k, v, mask], out)]
    # Before iOS18: the decomposition coremltools itself uses.
    scores_type = TensorType(f32, [*shape_of(q)[:-1], source])
    f = bool_attr(False)
    scores = lw.build(
        coreml.MatmulOp, [q, k], scores_type, transpose_x=f, transpose_y=bool_attr(True)
    )
    scores = lw.build(coreml.MulOp, [scores, lw.scalar(1 / math.sqrt(e), scores)], scores_type)
    if mask is not None:
        if elem_of(mask) == i1:
            scores = lw.build(
                coreml.SelectOp, [mask, scores, lw.scalar(-math.inf, scores)], scores_type
            )
        else:
            scores = lw.build(coreml.AddOp, [scores, mask], scores_type)
    probs = lw.build(coreml.SoftmaxOp, [scores], scores_type, axis=int_attr(-1))
    return [lw.build(coreml.MatmulOp, [probs, v], out, transpose_x=f, transpose_y=f)]


@RULES(layers.UpsampleNearest2dOp, layers.UpsampleBilinear2dOp)
def _upsample2d(
    lw: Lowering, op: layers.UpsampleNearest2dOp | layers.UpsampleBilinear2dOp
) -> Sequence[SSAValue]:
    """Resizing as gathers of compile-time source offsets (qopt/numerics/resize.py,
    torch's index rules, so no MIL resize op's pixel-centre convention is relied on):
    x `[..., H, W]` reshaped to `[B, H * W]`; nearest is one `gather` on axis 1;
    bilinear gathers the four corners and blends them with constant weights in
    torch's order, `h0 * (w0 * x00 + w1 * x01) + h1 * (w0 * x10 + w1 * x11)`."""
    dims = shape_of(op.input)
    h, w = dims[-2:]
    out = mil_tensor(op.result.type)
    elem = out.get_element_type()
    oh, ow = out.get_shape()[-2:]
    batch = math.prod(dims[:-2])
    x = lw.as_elem(op.input, elem)
    x = lw.build(
        coreml.ReshapeOp, [x], TensorType(elem, [batch, h * w]), shape=ints([batch, h * w])
    )
    flat = TensorType(elem, [batch, oh * ow])
    scales = op.scales()

    def gather(rows: np.ndarray, cols: np.ndarray) -> SSAValue:
        offsets = (rows[:, None] * w + cols[None, :]).reshape(-1).astype(np.int32)
        indices = lw.const(offsets, i32, "indices")
        return lw.build(coreml.GatherOp, [x, indices], flat, axis=int_attr(1))

    if isinstance(op, layers.UpsampleNearest2dOp):
        y = gather(
            resize.nearest_indices(h, oh, scales[0]), resize.nearest_indices(w, ow, scales[1])
        )
    else:
        corners = flag(op.align_corners)
        h0, h1, hw0, hw1 = resize.linear_weights(h, oh, corners, scales[0])
        w0, w1, ww0, ww1 = resize.linear_weights(w, ow, corners, scales[1])
        dtype = storage_dtype(elem)

        def weight(values: np.ndarray, along_h: bool) -> SSAValue:
            grid = values[:, None].repeat(ow, 1) if along_h else values[None, :].repeat(oh, 0)
            return lw.const(grid.reshape(-1).astype(dtype), elem, "weights")

        def blend(a: SSAValue, wa: SSAValue, b: SSAValue, wb: SSAValue) -> SSAValue:
            first = lw.build(coreml.MulOp, [wa, a], flat)
            second = lw.build(coreml.MulOp, [wb, b], flat)
            return lw.build(coreml.AddOp, [first, second], flat)

        c0, c1 = weight(ww0, False), weight(ww1, False)
        top = blend(gather(h0, w0), c0, gather(h0, w1), c1)
        bottom = blend(gather(h1, w0), c0, gather(h1, w1), c1)
        y = blend(top, weight(hw0, True), bottom, weight(hw1, True))
    return [lw.build(coreml.ReshapeOp, [y], out, shape=ints(out.get_shape()))]


@RULES(layers.PixelShuffleOp)
def _pixel_shuffle(lw: Lowering, op: layers.PixelShuffleOp) -> Sequence[SSAValue]:
    """`[..., C * r * r, H, W] -> [..., C, H * r, W * r]`: reshape to `[B * C, r, r,
    H, W]` (rank 5, Core ML's limit), transpose to `[B * C, H, r, W, r]`, reshape to
    the result (MIL's own `pixel_shuffle` takes rank-4 inputs only)."""
    dims = shape_of(op.input)
    r = int(op.upscale_factor.value.data)
    c_in, h, w = dims[-3:]
    planes = math.prod(dims[:-3]) * (c_in // (r * r))
    out = mil_tensor(op.result.type)
    elem = elem_of(op.input)
    split = [planes, r, r, h, w]
    x = lw.build(coreml.ReshapeOp, [op.input], TensorType(elem, split), shape=ints(split))
    moved = [planes, h, r, w, r]
    x = lw.build(coreml.TransposeOp, [x], TensorType(elem, moved), perm=ints([0, 3, 1, 4, 2]))
    return [lw.build(coreml.ReshapeOp, [x], out, shape=ints(out.get_shape()))]
