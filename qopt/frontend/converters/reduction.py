"""Converters for the aten reduction family (see qopt/dialects/aten/reduction.py)."""

from __future__ import annotations

from typing import Any

from torch.fx import Node
from xdsl.dialects.builtin import BoolAttr, DenseArrayBase, FloatAttr, IntegerAttr, i64
from xdsl.ir import Attribute, Operation

from qopt.dialects.aten import reduction as red
from qopt.frontend.converters.table import ConverterTable
from qopt.frontend.importer import Importer

CONVERTERS = ConverterTable()


def dims_attr(dims: Any) -> DenseArrayBase | None:
    """`int[1]? dim` (None, an int or a list; empty/None = all) as an i64 array."""
    if dims is None:
        return None
    values = [int(d) for d in (dims if isinstance(dims, list | tuple) else [dims])]
    return DenseArrayBase.from_list(i64, values) if values else None


def reduce_props(dims: Any, keepdim: Any) -> dict[str, Attribute]:
    props: dict[str, Attribute] = {}
    if (attr := dims_attr(dims)) is not None:
        props["dims"] = attr
    if keepdim:
        props["keepdim"] = BoolAttr.from_bool(True)
    return props


def _reduce(op_type: type[red.ReduceOp], *targets: str) -> None:
    def convert(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
        return op_type.create(
            operands=[imp.value(args["self"])],
            result_types=[imp.result_type()],
            properties=reduce_props(args.get("dim"), args.get("keepdim")),
        )

    CONVERTERS(*targets)(convert)


_reduce(red.SumOp, "aten.sum.dim_IntList", "aten.sum.default")
_reduce(red.MeanOp, "aten.mean.dim", "aten.mean.default")
_reduce(red.ProdOp, "aten.prod.default", "aten.prod.dim_int")
_reduce(red.AmaxOp, "aten.amax.default")
_reduce(red.AminOp, "aten.amin.default")
_reduce(red.AnyOp, "aten.any.default", "aten.any.dim", "aten.any.dims")
_reduce(red.AllOp, "aten.all.default", "aten.all.dim", "aten.all.dims")


def _reduce_all(op_type: type[red.ReduceAllOp], target: str) -> None:
    def convert(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
        return op_type.create(operands=[imp.value(args["self"])], result_types=[imp.result_type()])

    CONVERTERS(target)(convert)


_reduce_all(red.MaxOp, "aten.max.default")
_reduce_all(red.MinOp, "aten.min.default")


def _with_dim(dim: Any, keepdim: Any) -> dict[str, Attribute]:
    props: dict[str, Attribute] = {}
    if dim is not None:
        props["dim"] = IntegerAttr(int(dim), i64)
    if keepdim:
        props["keepdim"] = BoolAttr.from_bool(True)
    return props


def _extreme_dim(op_type: type[red.ReduceDimWithIndexOp], target: str) -> None:
    def convert(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
        return op_type.create(
            operands=[imp.value(args["self"])],
            result_types=imp.result_types(),
            properties=_with_dim(args["dim"], args.get("keepdim")),
        )

    CONVERTERS(target)(convert)


_extreme_dim(red.MaxDimOp, "aten.max.dim")
_extreme_dim(red.MinDimOp, "aten.min.dim")


def _arg(op_type: type[red.ArgReduceOp], target: str) -> None:
    def convert(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
        return op_type.create(
            operands=[imp.value(args["self"])],
            result_types=[imp.result_type()],
            properties=_with_dim(args.get("dim"), args.get("keepdim")),
        )

    CONVERTERS(target)(convert)


_arg(red.ArgmaxOp, "aten.argmax.default")
_arg(red.ArgminOp, "aten.argmin.default")


def _moment(op_type: type[red.MomentOp], name: str) -> None:
    def convert(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
        props = reduce_props(args.get("dim"), args.get("keepdim"))
        if "correction" in args:
            correction = 1.0 if args["correction"] is None else float(args["correction"])
        else:
            correction = 1.0 if args.get("unbiased", True) else 0.0
        if correction != 1.0:
            props["correction"] = FloatAttr(correction, 64)
        return op_type.create(
            operands=[imp.value(args["self"])],
            result_types=[imp.result_type()],
            properties=props,
        )

    CONVERTERS(f"aten.{name}.correction", f"aten.{name}.dim", f"aten.{name}.default")(convert)


_moment(red.VarOp, "var")
_moment(red.StdOp, "std")


def _softmax(op_type: type[red.SoftmaxLikeOp], *targets: str, safe: bool = False) -> None:
    def convert(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
        if args.get("half_to_float"):
            raise imp.error("half_to_float softmax is not supported: export in float32")
        props: dict[str, Attribute] = {"dim": IntegerAttr(int(args["dim"]), i64)}
        if safe:
            props["safe"] = BoolAttr.from_bool(True)
        return op_type.create(
            operands=[imp.value(args["self"])],
            result_types=[imp.result_type()],
            properties=props,
        )

    CONVERTERS(*targets)(convert)


_softmax(red.SoftmaxOp, "aten.softmax.int", "aten._softmax.default")
_softmax(red.SoftmaxOp, "aten._safe_softmax.default", safe=True)
_softmax(red.LogSoftmaxOp, "aten.log_softmax.int", "aten._log_softmax.default")


@CONVERTERS("aten.sort.default", "aten.sort.stable", "aten.topk.default")
def convert_sort(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`sort(x, dim, descending)` (stable or not: qopt's is stable) and
    `topk(x, k, dim, largest, sorted)`: `aten.sort`, with `k` for topk. torch leaves
    the order of topk's equal values unspecified; qopt's is a stable sort's (the
    values are the same either way, the indices of ties may differ from torch's)."""
    props: dict[str, Attribute] = {"dim": IntegerAttr(int(args.get("dim", -1)), i64)}
    if str(node.target) == "aten.topk.default":
        if not args.get("sorted", True):
            raise imp.error(
                "topk(sorted=False) leaves its results in an order torch does not specify; "
                "use sorted=True"
            )
        props["k"] = IntegerAttr(imp.static(args["k"], "topk's k"), i64)
        descending = args.get("largest", True)
    else:
        descending = args.get("descending", False)
    if descending:
        props["descending"] = BoolAttr.from_bool(True)
    return red.SortOp.create(
        operands=[imp.value(args["self"])], result_types=imp.result_types(), properties=props
    )
