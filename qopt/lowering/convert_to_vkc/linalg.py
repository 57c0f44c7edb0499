"""convert-to-vkc rules of linear algebra, convolution and pooling: the matmul
kernel (linear, addmm, batched matmul), conv2d, pool2d and adaptive_avg_pool2d."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from qopt.dialects.aten import layers, nn
from qopt.dialects.aten.base import flag, integer, ints
from qopt.dialects.tensors import numel, shape_of
from qopt.kernels.linalg import conv_tile, matmul_tile
from qopt.kernels.opcodes import POOL_OPS, REDUCE_OPS
from qopt.lowering.convert_to_vkc.lowering import (
    Buf,
    Lowering,
    RuleTable,
    broadcast_strides,
    copy_strided,
    unsupported,
)

RULES = RuleTable()


def matmul_nt(lw: Lowering, x: Buf, w: Buf, bias: Buf | None, m: int, n: int, k: int) -> Buf:
    """out [m, n] = x [m, k] @ w[n, k].T (+ bias)."""
    out = lw.alloc((m, n), "f32")
    lw.dispatch(
        "matmul",
        [x, w, bias if bias is not None else out, out],
        [m, n, k, 1, m * k, 0],
        {"TRANS_B": 1, "HAS_BIAS": int(bias is not None), **matmul_tile(m)},
    )
    return out


@RULES(nn.LinearOp)
def lower_linear(lw: Lowering, op: nn.LinearOp) -> Sequence[Buf]:
    x_dims = shape_of(op.input)
    n, k = shape_of(op.weight)
    m = numel(x_dims[:-1])
    x = lw.buffer(op.input)
    w = lw.buffer(op.weight)
    b = lw.buffer(op.bias) if op.bias is not None else None
    out = matmul_nt(lw, x, w, b, m, n, k)
    return [lw.view(out, shape_of(op.result))]


@RULES(nn.AddmmOp)
def lower_addmm(lw: Lowering, op: nn.AddmmOp) -> Sequence[Buf]:
    """beta * input + alpha * (mat1 @ mat2) with beta = alpha = 1 and a row-vector
    input (GPT-2's Conv1D, nn.Linear traced as addmm): the matmul kernel's bias."""
    if len(shape_of(op.mat1)) != 2:  # baddbmm imports as a batched addmm
        raise unsupported(op, "batched addmm (baddbmm)", "write it as matmul + add")
    (m, k), (_, n) = shape_of(op.mat1), shape_of(op.mat2)
    beta = op.beta.value.data if op.beta is not None else 1.0
    alpha = op.alpha.value.data if op.alpha is not None else 1.0
    bias_dims = shape_of(op.input)
    if beta != 1.0 or alpha != 1.0 or numel(bias_dims) != n or (bias_dims and bias_dims[-1] != n):
        raise unsupported(
            op,
            f"addmm with beta={beta}, alpha={alpha} and a {list(bias_dims)} input",
            "use beta = alpha = 1 and a bias of shape [N] (or write mm + add)",
        )
    a = lw.buffer(op.mat1)
    b = lw.buffer(op.mat2)
    bias = lw.buffer(op.input)
    out = lw.alloc((m, n), "f32")
    lw.dispatch("matmul", [a, b, bias, out], [m, n, k, 1, 0, 0], {"TRANS_B": 0, "HAS_BIAS": 1})
    return [out]


@RULES(nn.MatmulOp)
def lower_matmul(lw: Lowering, op: nn.MatmulOp) -> Sequence[Buf]:
    a_dims, b_dims = shape_of(op.lhs), shape_of(op.rhs)
    a = lw.buffer(op.lhs)
    b = lw.buffer(op.rhs)
    # a 1-D operand is a matrix ([K] -> [1, K] on the left, [K, 1] on the right) whose
    # added dim the result drops, as torch defines it: a view of the same buffer
    if len(a_dims) == 1:
        a_dims = (1, *a_dims)
        a = lw.view(a, a_dims)
    if len(b_dims) == 1:
        b_dims = (*b_dims, 1)
        b = lw.view(b, b_dims)
    m, k = a_dims[-2:]
    n = b_dims[-1]
    batch_dims = tuple(np.broadcast_shapes(a_dims[:-2], b_dims[:-2]))
    out_dims = (*batch_dims, m, n)
    batch = numel(batch_dims)
    if numel(a_dims[:-2]) not in (1, batch):
        a = copy_strided(lw, a, (*batch_dims, m, k), broadcast_strides(a_dims, (*batch_dims, m, k)))
    if numel(b_dims[:-2]) not in (1, batch):
        b = copy_strided(lw, b, (*batch_dims, k, n), broadcast_strides(b_dims, (*batch_dims, k, n)))
    a_bs = 0 if numel(a_dims[:-2]) == 1 else m * k
    b_bs = 0 if numel(b_dims[:-2]) == 1 else k * n
    out = lw.alloc(out_dims, "f32")
    lw.dispatch(
        "matmul", [a, b, out, out], [m, n, k, batch, a_bs, b_bs], {"TRANS_B": 0, "HAS_BIAS": 0}
    )
    return [lw.view(out, shape_of(op.result) or (1,))]


@RULES(nn.Conv2dOp)
def lower_conv2d(lw: Lowering, op: nn.Conv2dOp) -> Sequence[Buf]:
    n, c, h, w = shape_of(op.input)
    oc, _, kh, kw = shape_of(op.weight)
    _, _, oh, ow = shape_of(op.result)
    x = lw.buffer(op.input)
    weight = lw.buffer(op.weight)
    b = lw.buffer(op.bias) if op.bias is not None else None
    (sh, sw), (ph, pw), (dh, dw) = ints(op.stride), ints(op.padding), ints(op.dilation)
    groups = integer(op.groups, 1)
    out = lw.alloc((n, oc, oh, ow), "f32")
    lw.dispatch(
        "conv2d",
        [x, weight, b if b is not None else out, out],
        [n, c, h, w, oc, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, groups],
        {"HAS_BIAS": int(b is not None), **conv_tile(oc, groups, ow)},
    )
    return [out]


def _pool(
    lw: Lowering,
    op: layers.MaxPool2dOp | layers.AvgPool2dOp,
    kind: str,
    dilation: tuple[int, ...],
    include_pad: int,
    divisor: int,
) -> Sequence[Buf]:
    dims = shape_of(op.input)
    h, w = dims[-2:]
    oh, ow = shape_of(op.result)[-2:]
    planes = numel(dims[:-2])
    kh, kw = ints(op.kernel_size)
    stride = ints(op.stride) or (kh, kw)
    padding = ints(op.padding) or (0, 0)
    x = lw.buffer(op.input)
    out = lw.alloc(shape_of(op.result), "f32")
    lw.dispatch(
        "pool2d",
        [x, out],
        [
            planes,
            h,
            w,
            oh,
            ow,
            kh,
            kw,
            stride[0],
            stride[1],
            padding[0],
            padding[1],
            dilation[0],
            dilation[1],
            divisor,
        ],
        {"OP": POOL_OPS[kind], "COUNT_INCLUDE_PAD": include_pad},
    )
    return [out]


@RULES(layers.MaxPool2dOp)
def lower_max_pool(lw: Lowering, op: layers.MaxPool2dOp) -> Sequence[Buf]:
    """max_pool2d; its indices (max_pool2d_with_indices) only where nothing reads them."""
    if any(v.uses for v in op.indices):
        raise unsupported(
            op,
            "the indices of max_pool2d (return_indices=True) have no Vulkan kernel",
            "use only the pooled values",
        )
    (out,) = _pool(lw, op, "max", ints(op.dilation) or (1, 1), 1, 0)
    return [out] * len(op.results)


@RULES(layers.AvgPool2dOp)
def lower_avg_pool(lw: Lowering, op: layers.AvgPool2dOp) -> Sequence[Buf]:
    include_pad = int(flag(op.count_include_pad, True))
    return _pool(lw, op, "avg", (1, 1), include_pad, integer(op.divisor_override, 0))


@RULES(layers.AdaptiveAvgPool2dOp)
def lower_adaptive_pool(lw: Lowering, op: layers.AdaptiveAvgPool2dOp) -> Sequence[Buf]:
    dims = shape_of(op.input)
    oh, ow = shape_of(op.result)[-2:]
    x = lw.buffer(op.input)
    if (oh, ow) == (1, 1):
        # torch computes a 1x1 adaptive average as `mean` over (H, W): same order here.
        out = lw.alloc((numel(dims[:-2]),), "f32")
        lw.dispatch(
            "reduce_rows",
            [x, out],
            [numel(dims[:-2]), dims[-2] * dims[-1]],
            {"OP": REDUCE_OPS["mean"]},
        )
        return [lw.view(out, shape_of(op.result))]
    out = lw.alloc(shape_of(op.result), "f32")
    lw.dispatch("adaptive_avg_pool2d", [x, out], [numel(dims[:-2]), dims[-2], dims[-1], oh, ow])
    return [out]
