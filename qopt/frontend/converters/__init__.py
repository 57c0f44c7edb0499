"""All converters from exported-graph targets to qopt ops, keyed by `str(node.target)`."""

from __future__ import annotations

import operator
from typing import Any

from torch.fx import Node
from xdsl.ir import SSAValue

from qopt.frontend.importer import Converter, Importer, subclass_inner


def getitem(imp: Importer, node: Node, args: dict[str, Any]) -> SSAValue:
    source, index = node.args[0], node.args[1]
    values = imp.values.get(source) if isinstance(source, Node) else None
    if not isinstance(values, tuple) or not isinstance(index, int):
        raise imp.error("getitem must index the results of a multi-result op")
    value = values[index]
    if not isinstance(value, SSAValue):
        raise imp.error(f"getitem index {index} names no result")
    return value


def get_converters() -> dict[str, Converter]:
    from qopt.frontend.converters import (
        elementwise,
        indexing,
        layers,
        nn,
        quant,
        reduction,
        scalar,
        shape,
    )

    merged: dict[str, Converter] = {
        str(operator.getitem): getitem,
        "export.access_subclass_inner_tensor.default": subclass_inner,
    }
    for module in (elementwise, nn, quant, shape, indexing, reduction, layers, scalar):
        for target, converter in module.CONVERTERS.items():
            if target in merged:
                raise ValueError(f"two converters for {target}")
            merged[target] = converter
    return merged
