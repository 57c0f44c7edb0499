"""The `aten` dialect: float compute at the import level, one op per ATen node."""

from __future__ import annotations

from xdsl.ir import Dialect

from qopt.dialects.aten import elementwise, indexing, layers, nn, reduction, scalar, shape


def _all_ops() -> list[type]:
    ops: list[type] = []
    for module in (elementwise, nn, shape, indexing, reduction, layers, scalar):
        ops.extend(module.OPS)
    return ops


Aten = Dialect("aten", _all_ops(), [])
