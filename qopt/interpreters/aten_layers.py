"""numpy semantics of the aten layers family (norms, pooling, attention, pixel shuffle).

Float math runs in float32 (float64 where a tensor is float64) and is cast to the
result type, following torch's CPU kernels' formulas.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import SSAValue

from qopt.dialects.aten import layers
from qopt.dialects.aten.base import flag, integer, ints, real
from qopt.dialects.aten.layers import DEFAULT_EPS
from qopt.dialects.tensors import shape_of
from qopt.interpreters.aten_reduction import float_dtype, softmax
from qopt.interpreters.common import as_result
from qopt.numerics import resize, sequential_sum, torch_mean


def _affine(
    weight_value: SSAValue | None, bias_value: SSAValue | None, args: PythonValues, first: int
) -> tuple[np.ndarray | None, np.ndarray | None, int]:
    """The optional (weight, bias) operands from index `first` of `args`, and the
    index after them."""
    weight = bias = None
    index = first
    if weight_value is not None:
        weight = np.asarray(args[index])
        index += 1
    if bias_value is not None:
        bias = np.asarray(args[index])
        index += 1
    return weight, bias, index


def _normalize(x: np.ndarray, axes: tuple[int, ...], eps: float) -> tuple[np.ndarray, ...]:
    """(x - mean) * rstd with the biased variance over `axes`; also mean and rstd."""
    mean = np.mean(x, axis=axes, keepdims=True, dtype=x.dtype)
    centered = x - mean
    var = np.mean(np.square(centered), axis=axes, keepdims=True, dtype=x.dtype)
    rstd = np.asarray(1, x.dtype) / np.sqrt(var + np.asarray(eps, x.dtype))
    return centered * rstd, mean, rstd


def _window_view(
    x: np.ndarray,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    out_hw: tuple[int, ...],
    fill: float,
) -> np.ndarray:
    """`[..., OH, OW, KH, KW]` windows of the last two dims, padded with `fill`."""
    pads: list[tuple[int, int]] = [(0, 0)] * (x.ndim - 2)
    for i in range(2):
        need = (out_hw[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1
        size = x.shape[x.ndim - 2 + i]
        pads.append((padding[i], max(0, need - size - padding[i])))
    xp = np.pad(x, pads, constant_values=fill)
    span = tuple(dilation[i] * (kernel[i] - 1) + 1 for i in range(2))
    windows = np.lib.stride_tricks.sliding_window_view(xp, span, axis=(-2, -1))
    (oh, ow), (sh, sw), (dh, dw) = out_hw, stride, dilation
    return windows[..., : oh * sh : sh, : ow * sw : sw, ::dh, ::dw]


def _pool_window(op: layers.Pool2dOp) -> tuple[tuple[int, ...], ...]:
    kernel, stride, padding, dilation = op.window()
    out_hw = shape_of(op.results[0])[-2:]
    return kernel, stride, padding, dilation, out_hw


def _max_pool(op: layers.MaxPool2dOp, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    kernel, stride, padding, dilation, out_hw = _pool_window(op)
    fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    windows = _window_view(x, kernel, stride, padding, dilation, out_hw, fill)
    flat = windows.reshape(*windows.shape[:-2], kernel[0] * kernel[1])
    values = np.max(flat, axis=-1)
    index = np.argmax(flat, axis=-1)
    if x.dtype.kind == "f":
        # torch's kernel lets every NaN take over, so the last NaN wins.
        nan = np.isnan(flat)
        last_nan = flat.shape[-1] - 1 - np.argmax(nan[..., ::-1], axis=-1)
        index = np.where(nan.any(axis=-1), last_nan, index)
    row = np.arange(out_hw[0]).reshape(-1, 1) * stride[0] - padding[0]
    col = np.arange(out_hw[1]).reshape(1, -1) * stride[1] - padding[1]
    h = row + (index // kernel[1]) * dilation[0]
    w = col + (index % kernel[1]) * dilation[1]
    return values, h * x.shape[-1] + w


def _avg_pool(op: layers.AvgPool2dOp, x: np.ndarray) -> np.ndarray:
    kernel, stride, padding, dilation, out_hw = _pool_window(op)
    windows = _window_view(x, kernel, stride, padding, dilation, out_hw, 0)
    if x.dtype == np.float32:
        total = sequential_sum(windows)  # torch's order (padding adds zeros)
    else:
        total = np.sum(windows, axis=(-2, -1), dtype=x.dtype)
    if op.divisor_override is not None:
        return total / np.asarray(integer(op.divisor_override), x.dtype)
    counts: list[np.ndarray] = []
    for i in range(2):
        size = x.shape[x.ndim - 2 + i]
        start = np.arange(out_hw[i]) * stride[i] - padding[i]
        end = np.minimum(start + kernel[i], size + padding[i])
        if flag(op.count_include_pad, True):
            counts.append(end - start)
        else:
            counts.append(np.minimum(end, size) - np.maximum(start, 0))
    divisor = counts[0].reshape(-1, 1) * counts[1].reshape(1, -1)
    return total / divisor.astype(x.dtype)


def adaptive_bins(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """torch's adaptive pooling bins: start floor(i*size/out), end ceil((i+1)*size/out)."""
    i = np.arange(out)
    return (i * size) // out, -((-(i + 1) * size) // out)


def _adaptive_avg_pool(x: np.ndarray, out_hw: tuple[int, ...]) -> np.ndarray:
    h_start, h_end = adaptive_bins(x.shape[-2], out_hw[0])
    w_start, w_end = adaptive_bins(x.shape[-1], out_hw[1])
    if x.dtype == np.float32:
        # torch: a 1x1 output is `mean` over (H, W); other sizes sum each window
        # in row-major order and divide by its height, then by its width.
        if tuple(out_hw) == (1, 1):
            return torch_mean(x, (-2, -1), keepdims=True)
        out = np.empty((*x.shape[:-2], *out_hw), x.dtype)
        for i in range(out_hw[0]):
            for j in range(out_hw[1]):
                window = x[..., h_start[i] : h_end[i], w_start[j] : w_end[j]]
                total = sequential_sum(window)
                out[..., i, j] = (
                    total / np.float32(h_end[i] - h_start[i]) / np.float32(w_end[j] - w_start[j])
                )
        return out
    rows = np.empty((*x.shape[:-2], out_hw[0], x.shape[-1]), x.dtype)
    for i in range(out_hw[0]):
        rows[..., i, :] = np.sum(x[..., h_start[i] : h_end[i], :], axis=-2, dtype=x.dtype)
    out = np.empty((*x.shape[:-2], *out_hw), x.dtype)
    for j in range(out_hw[1]):
        out[..., j] = np.sum(rows[..., w_start[j] : w_end[j]], axis=-1, dtype=x.dtype)
    counts = (h_end - h_start).reshape(-1, 1) * (w_end - w_start).reshape(1, -1)
    return out / counts.astype(x.dtype)


def attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: np.ndarray | None,
    is_causal: bool,
    scale: float | None,
) -> np.ndarray:
    """softmax(q @ k^T * scale + mask) @ v; fully masked query rows give 0."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) * np.asarray(scale, q.dtype)
    if is_causal:
        mask = np.tril(np.ones((q.shape[-2], k.shape[-2]), np.bool_))
    if mask is not None:
        if mask.dtype == np.bool_:
            scores = np.where(mask, scores, np.asarray(-np.inf, q.dtype))
        else:
            scores = scores + mask.astype(q.dtype, copy=False)
    return np.matmul(softmax(scores, -1, safe=True), v)


@register_impls
class AtenLayersFunctions(InterpreterFunctions):
    @impl(layers.LayerNormOp)
    def run_layer_norm(
        self, interpreter: Interpreter, op: layers.LayerNormOp, args: PythonValues
    ) -> PythonValues:
        ct = float_dtype(op.input, op.result)
        x = np.asarray(args[0]).astype(ct, copy=False)
        weight, bias, _ = _affine(op.weight, op.bias, args, 1)
        axes = tuple(range(x.ndim - len(ints(op.normalized_shape)), x.ndim))
        y, mean, rstd = _normalize(x, axes, real(op.eps, DEFAULT_EPS))
        if weight is not None:
            y = y * weight.astype(ct, copy=False)
        if bias is not None:
            y = y + bias.astype(ct, copy=False)
        stats = [as_result(s, r) for s, r in zip((mean, rstd), op.stats, strict=False)]
        return (as_result(y, op.result), *stats)

    @impl(layers.GroupNormOp)
    def run_group_norm(
        self, interpreter: Interpreter, op: layers.GroupNormOp, args: PythonValues
    ) -> PythonValues:
        ct = float_dtype(op.input, op.result)
        x = np.asarray(args[0]).astype(ct, copy=False)
        weight, bias, _ = _affine(op.weight, op.bias, args, 1)
        n, c = x.shape[:2]
        groups = integer(op.num_groups)
        y, mean, rstd = _normalize(x.reshape(n, groups, -1), (2,), real(op.eps, DEFAULT_EPS))
        y = y.reshape(x.shape)
        channel = (c,) + (1,) * (x.ndim - 2)
        if weight is not None:
            y = y * weight.astype(ct, copy=False).reshape(channel)
        if bias is not None:
            y = y + bias.astype(ct, copy=False).reshape(channel)
        stats = [as_result(s, r) for s, r in zip((mean, rstd), op.stats, strict=False)]
        return (as_result(y, op.result), *stats)

    @impl(layers.BatchNormOp)
    def run_batch_norm(
        self, interpreter: Interpreter, op: layers.BatchNormOp, args: PythonValues
    ) -> PythonValues:
        ct = float_dtype(op.input, op.result)
        x = np.asarray(args[0]).astype(ct, copy=False)
        weight, bias, index = _affine(op.weight, op.bias, args, 1)
        mean = np.asarray(args[index]).astype(ct, copy=False)
        var = np.asarray(args[index + 1]).astype(ct, copy=False)
        alpha = np.asarray(1, ct) / np.sqrt(var + np.asarray(real(op.eps, DEFAULT_EPS), ct))
        if weight is not None:
            alpha = alpha * weight.astype(ct, copy=False)
        beta = -mean * alpha
        if bias is not None:
            beta = beta + bias.astype(ct, copy=False)
        channel = (x.shape[1],) + (1,) * (x.ndim - 2)
        y = x * alpha.reshape(channel) + beta.reshape(channel)
        stats = [as_result(np.empty((0,), ct), r) for r in op.stats]
        return (as_result(y, op.result), *stats)

    @impl(layers.MaxPool2dOp)
    def run_max_pool2d(
        self, interpreter: Interpreter, op: layers.MaxPool2dOp, args: PythonValues
    ) -> PythonValues:
        values, index = _max_pool(op, np.asarray(args[0]))
        return (as_result(values, op.result), *(as_result(index, r) for r in op.indices))

    @impl(layers.AvgPool2dOp)
    def run_avg_pool2d(
        self, interpreter: Interpreter, op: layers.AvgPool2dOp, args: PythonValues
    ) -> PythonValues:
        x = np.asarray(args[0]).astype(float_dtype(op.input, op.result), copy=False)
        return (as_result(_avg_pool(op, x), op.result),)

    @impl(layers.AdaptiveAvgPool2dOp)
    def run_adaptive_avg_pool2d(
        self, interpreter: Interpreter, op: layers.AdaptiveAvgPool2dOp, args: PythonValues
    ) -> PythonValues:
        x = np.asarray(args[0]).astype(float_dtype(op.input, op.result), copy=False)
        return (as_result(_adaptive_avg_pool(x, ints(op.output_size)), op.result),)

    @impl(layers.ScaledDotProductAttentionOp)
    def run_sdpa(
        self,
        interpreter: Interpreter,
        op: layers.ScaledDotProductAttentionOp,
        args: PythonValues,
    ) -> PythonValues:
        ct = float_dtype(op.query, op.key, op.value, op.result)
        q, k, v = (np.asarray(a).astype(ct, copy=False) for a in args[:3])
        mask = np.asarray(args[3]) if op.attn_mask is not None else None
        if flag(op.enable_gqa) and q.ndim >= 3 and q.shape[-3] != k.shape[-3]:
            repeats = q.shape[-3] // k.shape[-3]
            k = np.repeat(k, repeats, axis=-3)
            v = np.repeat(v, repeats, axis=-3)
        scale = None if op.scale is None else real(op.scale)
        out = attention(q, k, v, mask, flag(op.is_causal), scale)
        return (as_result(out, op.result),)

    @impl(layers.PixelShuffleOp)
    def run_pixel_shuffle(
        self, interpreter: Interpreter, op: layers.PixelShuffleOp, args: PythonValues
    ) -> PythonValues:
        x = np.asarray(args[0])
        r = integer(op.upscale_factor)
        *batch, c, h, w = x.shape
        n = len(batch)
        y = x.reshape(*batch, c // (r * r), r, r, h, w)
        order = (*range(n), n, n + 3, n + 1, n + 4, n + 2)
        return (as_result(np.transpose(y, order), op.result),)

    @impl(layers.UpsampleNearest2dOp)
    def run_upsample_nearest2d(
        self, interpreter: Interpreter, op: layers.UpsampleNearest2dOp, args: PythonValues
    ) -> PythonValues:
        out_hw = shape_of(op.result)[-2:]
        y = resize.upsample_nearest2d(np.asarray(args[0]), (out_hw[0], out_hw[1]), op.scales())
        return (as_result(y, op.result),)

    @impl(layers.UpsampleBilinear2dOp)
    def run_upsample_bilinear2d(
        self, interpreter: Interpreter, op: layers.UpsampleBilinear2dOp, args: PythonValues
    ) -> PythonValues:
        out_hw = shape_of(op.result)[-2:]
        x = np.asarray(args[0])
        y = resize.upsample_bilinear2d(
            x, (out_hw[0], out_hw[1]), flag(op.align_corners), op.scales()
        )
        return (as_result(y, op.result),)
