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


def _conv(imp: Importer, node: Node, args: dict[str, Any], padding: Any) -> Operation:
    """aten.conv2d; an unbatched `[C, H, W]` input (torch's 3-D conv2d) is a view to
    `[1, C, H, W]`, a batched conv2d and a view of its result back."""
    x = imp.value(args["input"])
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
    if isinstance(padding, str):
        if padding == "valid":
            padding = [0, 0]
        else:
            weight_shape = shape_of(imp.value(args["weight"]))
            dilation = _pair(args.get("dilation", 1))
            totals = [dilation[i] * (weight_shape[2 + i] - 1) for i in range(2)]
            if any(t % 2 for t in totals):
                raise imp.error("asymmetric 'same' padding is not supported")
            padding = [t // 2 for t in totals]
    return _conv(imp, node, args, _pair(padding))


@CONVERTERS("aten.convolution.default")
def convert_convolution(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    if args.get("transposed"):
        raise imp.error("transposed convolution is not supported yet")
    weight_rank = len(shape_of(imp.value(args["weight"])))
    if weight_rank != 4 or len(imp.result_type().get_shape()) not in (3, 4):
        raise imp.error(
            "only 2-D convolution ([N, C, H, W] or [C, H, W] input, 4-D weight) is supported"
        )
    return _conv(imp, node, args, _pair(args.get("padding", 0)))
