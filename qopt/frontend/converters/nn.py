"""Converters for linear algebra, embedding and convolution ATen ops."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch.fx import Node
from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerAttr, TensorType, i64
from xdsl.ir import Attribute, Operation, SSAValue

from qopt.dialects.aten import nn
from qopt.dialects.aten import shape as sh
from qopt.dialects.tensors import elem_of, shape_of
from qopt.frontend.converters.table import ConverterTable
from qopt.frontend.importer import Importer, node_location

CONVERTERS = ConverterTable()


def array(values: Any) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


@CONVERTERS("aten.linear.default")
def convert_linear(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    operands = [imp.value(args["input"]), imp.value(args["weight"])]
    if args.get("bias") is not None:
        operands.append(imp.value(args["bias"]))
    return nn.LinearOp.create(operands=operands, result_types=[imp.result_type()])


@CONVERTERS("aten.matmul.default", "aten.mm.default", "aten.bmm.default")
def convert_matmul(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    lhs = args.get("self")
    rhs = args.get("other", args.get("mat2"))
    return nn.MatmulOp.create(
        operands=[imp.value(lhs), imp.value(rhs)], result_types=[imp.result_type()]
    )


@CONVERTERS("aten.addmm.default", "aten.baddbmm.default")
def convert_addmm(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    mat1 = imp.value(args.get("mat1", args.get("batch1")))
    mat2 = imp.value(args.get("mat2", args.get("batch2")))
    props: dict[str, Attribute] = {}
    for name in ("beta", "alpha"):
        value = args.get(name)
        if value is not None and value != 1:
            props[name] = FloatAttr(float(value), 64)
    return nn.AddmmOp.create(
        operands=[imp.operand(args["self"], like=mat1), mat1, mat2],
        result_types=[imp.result_type()],
        properties=props,
    )


@CONVERTERS("aten.embedding.default")
def convert_embedding(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    return nn.EmbeddingOp.create(
        operands=[imp.value(args["weight"]), imp.value(args["indices"])],
        result_types=[imp.result_type()],
    )


def _pair(value: Any) -> list[int]:
    values = [int(v) for v in (value if isinstance(value, list | tuple) else [value])]
    return values * 2 if len(values) == 1 else values


def _batched(imp: Importer, node: Node, value: SSAValue, shape: Sequence[int]) -> SSAValue:
    """`value` viewed as `shape`, an op of the node's line."""
    view = sh.ViewOp.create(operands=[value], result_types=[TensorType(elem_of(value), shape)])
    if (loc := node_location(node)) is not None:
        view.location = loc
    imp.builder.insert(view)
    return view.result


def _pad_end(imp: Importer, node: Node, x: SSAValue, extra: Sequence[int]) -> SSAValue:
    """`x` zero-padded by `extra[i]` at the end of its i-th trailing spatial dim (torch's
    asymmetric 'same' padding: the odd element of a padding total goes after), or `x`."""
    if not any(extra):
        return x
    shape = list(shape_of(x))
    pads: list[int] = []
    for i, amount in enumerate(reversed(extra)):  # constant_pad_nd lists the last dim first
        pads += [0, amount]
        shape[len(shape) - 1 - i] += amount
    return _emit(imp, node, sh.ConstantPadNdOp, x, shape, pad=array(pads), value=FloatAttr(0.0, 64))


def _same_padding(kernel: Sequence[int], dilation: Sequence[int]) -> tuple[list[int], list[int]]:
    """'same' padding as torch computes it: per spatial dim, dilation * (kernel - 1) in
    all, half of it (rounded down) on both sides and the odd one after."""
    totals = [d * (k - 1) for k, d in zip(kernel, dilation, strict=True)]
    return [t // 2 for t in totals], [t % 2 for t in totals]


def _conv(
    imp: Importer, node: Node, args: dict[str, Any], padding: Any, extra: Sequence[int] = (0, 0)
) -> Operation:
    """aten.conv2d; an unbatched `[C, H, W]` input (torch's 3-D conv2d) is a view to
    `[1, C, H, W]`, a batched conv2d and a view of its result back. `extra`: zeros padded
    after the input's (H, W) first (asymmetric 'same' padding)."""
    x = _pad_end(imp, node, imp.value(args["input"]), extra)
    w = imp.value(args["weight"])
    result_type = imp.result_type()
    unbatched = len(shape_of(x)) == 3 and len(shape_of(w)) == 4
    if unbatched:
        x = _batched(imp, node, x, (1, *shape_of(x)))
        result_type = TensorType(result_type.get_element_type(), (1, *shape_of(result_type)))
    operands = [x, w]
    if args.get("bias") is not None:
        operands.append(imp.value(args["bias"]))
    conv = nn.Conv2dOp.create(
        operands=operands,
        result_types=[result_type],
        properties={
            "stride": array(_pair(args.get("stride", 1))),
            "padding": array(padding),
            "dilation": array(_pair(args.get("dilation", 1))),
            "groups": IntegerAttr(int(args.get("groups", 1)), i64),
        },
    )
    if not unbatched:
        return conv
    if (loc := node_location(node)) is not None:
        conv.location = loc
    imp.builder.insert(conv)
    return sh.ViewOp.create(operands=[conv.result], result_types=[imp.result_type()])


@CONVERTERS("aten.conv2d.default", "aten.conv2d.padding")
def convert_conv2d(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    padding = args.get("padding", 0)
    extra = [0, 0]
    if isinstance(padding, str):
        if padding == "valid":
            padding = [0, 0]
        else:
            kernel = shape_of(imp.value(args["weight"]))[2:]
            padding, extra = _same_padding(kernel, _pair(args.get("dilation", 1)))
    return _conv(imp, node, args, _pair(padding), extra)


def _single(value: Any) -> int:
    values = [int(v) for v in (value if isinstance(value, list | tuple) else [value])]
    return values[0]


def _insert(imp: Importer, node: Node, op: Operation) -> SSAValue:
    """Insert an intermediate op of a converter that emits several, at the node's line."""
    if (loc := node_location(node)) is not None:
        op.location = loc
    imp.builder.insert(op)
    return op.results[0]


def _view(imp: Importer, node: Node, value: SSAValue, shape: Sequence[int]) -> SSAValue:
    """An `aten.view` of `value` to `shape`, inserted at the node's line."""
    elem = elem_of(value)
    view = sh.ViewOp.create(operands=[value], result_types=[TensorType(elem, shape)])
    return _insert(imp, node, view)


def _conv1d(
    imp: Importer, node: Node, args: dict[str, Any], padding: int, extra: int = 0
) -> Operation:
    """A 1-D convolution is the 2-D one on a unit height: the input `[N, C, L]` (or
    unbatched `[C, L]`) viewed as `[N, C, 1, L]`, the weight `[O, I, K]` as `[O, I, 1,
    K]`, stride / padding / dilation `(1, s)`, `(0, p)`, `(1, d)`, and the `[N, O, 1,
    L']` result viewed back to the node's shape. `extra`: zeros padded after the input's
    L first (asymmetric 'same' padding)."""
    x = _pad_end(imp, node, imp.value(args["input"]), [extra])
    w = imp.value(args["weight"])
    x_shape, w_shape = list(shape_of(x)), list(shape_of(w))
    if len(x_shape) not in (2, 3) or len(w_shape) != 3:
        raise imp.error(
            f"conv1d takes a [N, C, L] or [C, L] input and a [O, I, K] weight, got "
            f"{x_shape} and {w_shape}"
        )
    batched = x_shape if len(x_shape) == 3 else [1, *x_shape]
    operands = [
        _view(imp, node, x, [*batched[:2], 1, batched[2]]),
        _view(imp, node, w, [*w_shape[:2], 1, w_shape[2]]),
    ]
    if args.get("bias") is not None:
        operands.append(imp.value(args["bias"]))
    result = imp.result_type()
    n, channels, length = (1, *result.get_shape()) if len(x_shape) == 2 else result.get_shape()
    out2d = TensorType(result.get_element_type(), [n, channels, 1, length])
    conv = nn.Conv2dOp.create(
        operands=operands,
        result_types=[out2d],
        properties={
            "stride": array([1, _single(args.get("stride", 1))]),
            "padding": array([0, padding]),
            "dilation": array([1, _single(args.get("dilation", 1))]),
            "groups": IntegerAttr(int(args.get("groups", 1)), i64),
        },
    )
    return sh.ViewOp.create(operands=[_insert(imp, node, conv)], result_types=[result])


@CONVERTERS("aten.conv1d.default", "aten.conv1d.padding")
def convert_conv1d(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    padding = args.get("padding", 0)
    extra = 0
    if isinstance(padding, str):
        if padding == "valid":
            padding = 0
        else:
            kernel = shape_of(imp.value(args["weight"]))[-1:]
            (padding,), (extra,) = _same_padding(kernel, [_single(args.get("dilation", 1))])
    return _conv1d(imp, node, args, _single(padding), extra)


def _emit(
    imp: Importer,
    node: Node,
    op_type: type[Operation],
    x: SSAValue,
    shape: Sequence[int],
    **props: Attribute,
) -> SSAValue:
    """A one-operand op `op_type` of `x` with result shape `shape`, inserted."""
    op = op_type.create(
        operands=[x], result_types=[TensorType(elem_of(x), shape)], properties=props
    )
    return _insert(imp, node, op)


def _ints(values: Any, rank: int) -> list[int]:
    values = [int(v) for v in (values if isinstance(values, list | tuple) else [values])]
    return values * rank if len(values) == 1 else values


def _conv_transpose(imp: Importer, node: Node, args: dict[str, Any], rank: int) -> Operation:
    """A transposed convolution (`conv_transpose1d/2d`, `convolution` with
    `transposed`) as the convolution it is the gradient of: the input with `s - 1`
    zeros inserted between pixels (a view to `[N * C, H, 1, W, 1]`, a zero pad of
    the unit dims, a view back), zero-padded by `d * (k - 1) - p` on each side
    (negative amounts crop) plus `output_padding` at the end, then a stride-1
    `conv2d` with dilation `d` and the weight `[C_in, C_out / g, kh, kw]` regrouped
    to `[C_out, C_in / g, kh, kw]` and flipped spatially (input-independent: folded
    by fold-constants). 1-D is the 2-D case on a unit height. Every output sums
    the same products as torch's, in another order."""
    x = imp.value(args["input"])
    w = imp.value(args["weight"])
    x_shape, w_shape = list(shape_of(x)), list(shape_of(w))
    if len(w_shape) != rank + 2 or len(x_shape) not in (rank + 1, rank + 2):
        raise imp.error(
            f"conv_transpose{rank}d takes a {rank + 2}-D (or unbatched {rank + 1}-D) input "
            f"and a {rank + 2}-D weight, got {x_shape} and {w_shape}"
        )
    stride = _ints(args.get("stride", 1), rank)
    padding = _ints(args.get("padding", 0), rank)
    output_padding = _ints(args.get("output_padding", 0), rank)
    dilation = _ints(args.get("dilation", 1), rank)
    groups = int(args.get("groups", 1))
    if rank == 1:  # a unit height: (1, s), (0, p), ...
        stride, dilation = [1, *stride], [1, *dilation]
        padding, output_padding = [0, *padding], [0, *output_padding]
        w_shape = [*w_shape[:2], 1, w_shape[2]]
        w = _view(imp, node, w, w_shape)
        spatial = [1, x_shape[-1]]
    else:
        spatial = x_shape[-2:]
    batch = x_shape[0] if len(x_shape) == rank + 2 else 1
    c_in, (h, wd), (kh, kw) = w_shape[0], spatial, w_shape[2:]
    if groups < 1 or x_shape[-rank - 1] != c_in or c_in % groups:
        raise imp.error(
            f"channels do not match: input {x_shape}, weight {w_shape}, groups {groups}"
        )
    (sh_, sw), (dh, dw) = stride, dilation
    # zero insertion: [N * C, H, 1, W, 1] padded to [N * C, H, sh, W, sw]
    planes = batch * c_in
    y = _view(imp, node, x, [planes, h, 1, wd, 1])
    pad_value = FloatAttr(0.0, 64)
    zeros = array([0, sw - 1, 0, 0, 0, sh_ - 1])
    y = _emit(
        imp, node, sh.ConstantPadNdOp, y, [planes, h, sh_, wd, sw], pad=zeros, value=pad_value
    )
    y = _view(imp, node, y, [batch, c_in, h * sh_, wd * sw])
    # keep (H - 1) * s + 1 rows, then the convolution's own padding
    pads: list[int] = []
    for axis in (1, 0):  # constant_pad_nd lists the last dim first
        k, s = (kh, kw)[axis], stride[axis]
        q = dilation[axis] * (k - 1) - padding[axis]
        pads += [q, q + output_padding[axis] - (s - 1)]
    padded = [batch, c_in, h * sh_ + pads[2] + pads[3], wd * sw + pads[0] + pads[1]]
    if min(padded[2] - dh * (kh - 1), padded[3] - dw * (kw - 1)) < 1:
        raise imp.error(
            f"conv_transpose{rank}d with padding {padding[2 - rank :]} gives an empty output "
            "(qopt does not compile zero-size tensors)"
        )
    y = _emit(imp, node, sh.ConstantPadNdOp, y, padded, pad=array(pads), value=pad_value)
    # weight [C_in, C_out / g, kh, kw] -> [C_out, C_in / g, kh, kw], flipped
    c_out_g = w_shape[1]
    grouped = [groups, c_in // groups, c_out_g, kh, kw]
    wt = _view(imp, node, w, grouped)
    swapped = [groups, c_out_g, c_in // groups, kh, kw]
    one, two = IntegerAttr(1, i64), IntegerAttr(2, i64)
    wt = _emit(imp, node, sh.TransposeOp, wt, swapped, dim0=one, dim1=two)
    regrouped = [groups * c_out_g, c_in // groups, kh, kw]
    wt = _view(imp, node, wt, regrouped)
    wt = _emit(imp, node, sh.FlipOp, wt, regrouped, dims=array([2, 3]))
    operands = [y, wt]
    if args.get("bias") is not None:
        operands.append(imp.value(args["bias"]))
    result = imp.result_type()
    out_hw = [padded[2] - dh * (kh - 1), padded[3] - dw * (kw - 1)]
    out4 = TensorType(result.get_element_type(), [batch, groups * c_out_g, *out_hw])
    conv = nn.Conv2dOp.create(
        operands=operands,
        result_types=[out4],
        properties={
            "stride": array([1, 1]),
            "padding": array([0, 0]),
            "dilation": array(dilation),
            "groups": IntegerAttr(groups, i64),
        },
    )
    if out4.get_shape() == result.get_shape():
        return conv
    return sh.ViewOp.create(operands=[_insert(imp, node, conv)], result_types=[result])


@CONVERTERS("aten.conv_transpose2d.input")
def convert_conv_transpose2d(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    return _conv_transpose(imp, node, args, 2)


@CONVERTERS("aten.conv_transpose1d.default")
def convert_conv_transpose1d(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    return _conv_transpose(imp, node, args, 1)


@CONVERTERS("aten.convolution.default")
def convert_convolution(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    if args.get("transposed"):
        rank = len(shape_of(imp.value(args["weight"]))) - 2
        if rank not in (1, 2):
            raise imp.error("only 1-D and 2-D transposed convolutions are supported")
        return _conv_transpose(imp, node, args, rank)
    weight_rank = len(shape_of(imp.value(args["weight"])))
    if weight_rank == 3:  # 1-D: [N, C, L] or [C, L] input, [O, I, K] weight
        return _conv1d(imp, node, args, _single(args.get("padding", 0)))
    if weight_rank != 4 or len(imp.result_type().get_shape()) not in (3, 4):
        raise imp.error(
            "only 1-D and 2-D convolution ([N, C, H, W] or [C, H, W] input, 4-D weight) is "
            "supported"
        )
    return _conv(imp, node, args, _pair(args.get("padding", 0)))
