"""All converters from exported-graph targets to qopt ops, keyed by `str(node.target)`."""

from __future__ import annotations

import operator
from typing import Any

import torch
from torch.fx import Node
from xdsl.ir import SSAValue

from qopt.frontend.converters import (
    composed,
    elementwise,
    indexing,
    layers,
    nn,
    quant,
    reduction,
    scalar,
    shape,
)
from qopt.frontend.importer import Converter, Importer
from qopt.frontend.nodes import to_numpy


def getitem(imp: Importer, node: Node, args: dict[str, Any]) -> SSAValue:
    source, index = node.args[0], node.args[1]
    values = imp.values.get(source) if isinstance(source, Node) else None
    if not isinstance(values, tuple) or not isinstance(index, int):
        raise imp.error("getitem must index the results of a multi-result op")
    value = values[index]
    if not isinstance(value, SSAValue):
        raise imp.error(f"getitem index {index} names no result")
    return value


def subclass_inner(imp: Importer, node: Node, args: dict[str, Any]) -> SSAValue:
    """`export.access_subclass_inner_tensor(param, 'qdata')` -> a constant of that part."""
    owner = args.get("src_subclass_tensor")
    attr = args.get("attr")
    if owner is None or attr is None:
        owner, attr = [*node.args, None, None][:2]
    subclass = imp.subclass_params.get(owner)
    if subclass is None:
        raise imp.error("access_subclass_inner_tensor must read a tensor-subclass parameter")
    parts, _ = subclass.__tensor_flatten__()
    if attr not in parts:
        raise imp.error(f"{type(subclass).__name__} has no tensor part {str(attr)[:40]!r}")
    inner = getattr(subclass, attr, None)
    if not isinstance(inner, torch.Tensor):
        raise imp.error(f"{type(subclass).__name__} has no tensor part '{attr}'")
    return imp.constant(to_numpy(inner), f"{owner.name}_{attr}", node)


def get_converters() -> dict[str, Converter]:
    merged: dict[str, Converter] = {
        str(operator.getitem): getitem,
        "export.access_subclass_inner_tensor.default": subclass_inner,
    }
    for module in (elementwise, composed, nn, quant, shape, indexing, reduction, layers, scalar):
        for target, converter in module.CONVERTERS.items():
            if target in merged:
                raise ValueError(f"two converters for {target}")
            merged[target] = converter
    return merged
