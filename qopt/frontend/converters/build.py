"""Building blocks the shape and indexing converters share: attributes, dimensions,
intermediate ops inserted at the node's line, and sizes (static, or read at run time)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch.fx import Node
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, TensorType, i64
from xdsl.ir import Attribute, Operation, SSAValue

from qopt.dialects.aten import scalar as sc
from qopt.dialects.aten.base import DYNAMIC, norm_dim
from qopt.dialects.tensors import shape_of
from qopt.frontend.importer import Importer, node_location


def i64_array(values: Sequence[Any]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def i64_attr(value: Any) -> IntegerAttr:
    return IntegerAttr(int(value), i64)


def dim_index(imp: Importer, dim: Any, rank: int) -> int:
    try:
        return norm_dim(int(dim), rank)
    except Exception as e:  # VerifyException from norm_dim
        raise imp.error(str(e)) from None


def insert_op(imp: Importer, node: Node, op: Operation) -> SSAValue:
    """Insert an intermediate op of a converter that emits several, at the node's line."""
    if (loc := node_location(node)) is not None:
        op.location = loc
    imp.builder.insert(op)
    return op.results[0]


def unary_op(
    imp: Importer,
    op_type: type[Operation],
    x: Any,
    props: Mapping[str, Attribute] | None = None,
) -> Operation:
    return op_type.create(
        operands=[imp.value(x)],
        result_types=[imp.result_type()],
        properties=dict(props or {}),
    )


def size_of(imp: Importer, node: Node, x: SSAValue, d: int) -> int | SSAValue:
    size = shape_of(x)[d]
    if size != DYNAMIC:
        return size
    op = sc.SymSizeOp.create(
        operands=[x], result_types=[TensorType(i64, [])], properties={"dim": i64_attr(d)}
    )
    return insert_op(imp, node, op)


def expr_of_size(size: Any) -> Any:
    import sympy

    return size.node.expr if isinstance(size, torch.SymInt) else sympy.Integer(int(size))
