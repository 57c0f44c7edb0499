"""Converters for the aten slicing and indexing family and its functional updates
(scatters; see qopt/dialects/aten/indexing.py and qopt/dialects/aten/shape.py).
"""

from __future__ import annotations

from typing import Any

import torch
from torch.fx import Node
from xdsl.dialects.builtin import (
    BoolAttr,
    TensorType,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue

from qopt.dialects.aten import elementwise as ew
from qopt.dialects.aten import indexing as ix
from qopt.dialects.aten import shape as sh
from qopt.dialects.aten.base import DYNAMIC, broadcast_shapes
from qopt.dialects.tensors import elem_of, shape_of
from qopt.dtypes import is_bool
from qopt.frontend.converters.build import (
    dim_index,
    expr_of_size,
    i64_array,
    i64_attr,
    insert_op,
    size_of,
    unary_op,
)
from qopt.frontend.converters.table import ConverterTable
from qopt.frontend.importer import Importer, node_location, static_int

CONVERTERS = ConverterTable()


# ----- slicing and indexing ----------------------------------------------------


def _slice_props(
    imp: Importer, x: Any, dim: Any, start: Any, end: Any, step: Any
) -> dict[str, Attribute]:
    """`dim`, `start`, `end`, `step` of a slice of `x`, normalised and clamped as torch
    does (`aten.slice`, `aten.slice_scatter`)."""
    shape = shape_of(imp.value(x))
    if not shape:
        raise imp.error("cannot slice a 0-d tensor")
    if any(isinstance(v, Node) for v in (dim, start, end, step)):
        raise imp.error("slice bounds must be constants (qopt compiles static shapes)")
    d = dim_index(imp, dim, len(shape))
    step = 1 if step is None else int(step)
    if step <= 0:
        raise imp.error(f"slice step must be positive, got {step}")
    start = 0 if start is None else int(start)
    end = sh.INT64_MAX if end is None else int(end)
    start, end, _ = sh.slice_bounds(start, end, step, shape[d])
    return {
        "dim": i64_attr(d),
        "start": i64_attr(start),
        "end": i64_attr(end),
        "step": i64_attr(step),
    }


def _slice(imp: Importer, x: Any, dim: Any, start: Any, end: Any, step: Any) -> Operation:
    return unary_op(imp, sh.SliceOp, x, _slice_props(imp, x, dim, start, end, step))


@CONVERTERS("aten.slice.Tensor")
def convert_slice(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    shape = shape_of(imp.value(args["self"]))
    start, end = (
        imp.symint(b, "a slice bound") if isinstance(b, Node) else b
        for b in (args["start"], args["end"])
    )
    if shape and not isinstance(start, SSAValue) and not isinstance(end, SSAValue):
        d = dim_index(imp, args["dim"], len(shape))
        if shape[d] != DYNAMIC:  # bounds torch knows at export (maybe SymInts it folded)
            return _slice(imp, args["self"], d, start, end, args["step"])
    return _symbolic_slice(imp, node, args)


def _symbolic_slice(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`x[..., start:end, ...]` with a run-time bound or on a dynamic dim: torch clamps
    slice bounds, which `aten.dynamic_slice` does not, so it is taken only where
    torch's result length is the window's exactly (static, or `end - start` as torch
    computed it, negative bounds counting from the end); anything else is refused
    rather than clamped differently."""
    x = imp.value(args["self"])
    shape = shape_of(x)
    if not shape:
        raise imp.error("cannot slice a 0-d tensor")
    d = dim_index(imp, args["dim"], len(shape))
    step = imp.static(args["step"] if args["step"] is not None else 1, "the slice step")
    if step != 1:
        raise imp.error("a slice with run-time bounds or on a dynamic dim needs step 1")
    val = node.meta.get("val")
    length = val.shape[d] if isinstance(val, torch.Tensor) else None
    start = _slice_bound(imp, node, args, d, args["start"], 0)
    if static_int(length) is not None:
        return _dynamic_slice(imp, node, args["self"], d, start[1], int(static_int(length) or 0))
    end = _slice_bound(imp, node, args, d, args["end"], sh.INT64_MAX)
    if (
        start[0] is None
        or end[0] is None
        or not isinstance(length, torch.SymInt)
        or (end[0] - start[0] - length.node.expr).simplify() != 0
    ):
        raise imp.error(
            "a slice with run-time bounds whose length torch clamps: qopt slices run-time "
            "windows only where they fit (use narrow(dim, start, length))"
        )
    if isinstance(start[1], int) and isinstance(end[1], int):
        length_value: int | SSAValue = end[1] - start[1]
    else:
        sub = ew.SubOp.create(
            operands=[imp.scalar_operand(end[1]), imp.scalar_operand(start[1])],
            result_types=[TensorType(i64, [])],
        )
        length_value = insert_op(imp, node, sub)
    return _dynamic_slice(imp, node, args["self"], d, start[1], length_value)


def _slice_bound(
    imp: Importer, node: Node, args: dict[str, Any], d: int, bound: Any, default: int
) -> tuple[Any, int | SSAValue]:
    """A slice bound counted from 0: (its sympy expression, its value, an int or a
    run-time scalar). A static bound past the end is the dim's size, a negative one
    counts from the end (on a dynamic dim, from `aten.sym_size`)."""
    import sympy

    bound = default if bound is None else bound
    if isinstance(bound, Node):
        return _expr(bound), imp.symint(bound, "a slice bound")
    value = int(bound)
    x = imp.value(args["self"])
    size = shape_of(x)[d]
    source = args["self"].meta.get("val") if isinstance(args["self"], Node) else None
    size_expr = expr_of_size(source.shape[d]) if isinstance(source, torch.Tensor) else None
    if value >= 0 and (size == DYNAMIC or value < size) and value < sh.INT64_MAX // 2:
        return sympy.Integer(value), value
    if size != DYNAMIC:  # clamped (past the end) or counted from the end, statically
        value = min(value, size) if value >= 0 else max(value + size, 0)
        return sympy.Integer(value), value
    if size_expr is None:
        return None, value
    runtime = size_of(imp, node, x, d)
    if value >= 0:  # past the end: the size
        return size_expr, runtime
    add = ew.AddOp.create(
        operands=[imp.scalar_operand(runtime), imp.scalar_operand(value)],
        result_types=[TensorType(i64, [])],
    )
    return size_expr + value, insert_op(imp, node, add)


def _expr(arg: Any) -> Any:
    """The sympy expression of an integer argument (an int or a SymInt node)."""
    import sympy

    if isinstance(arg, int):
        return sympy.Integer(arg)
    val = arg.meta.get("val") if isinstance(arg, Node) else None
    if isinstance(val, int):
        return sympy.Integer(val)
    if isinstance(val, torch.SymInt):
        return val.node.expr
    return None


@CONVERTERS("aten.narrow.default")
def convert_narrow(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`narrow(x, dim, start, length)`: `aten.slice`, or with a run-time start or
    length (a SymInt: `.item()`, a dynamic dim) `aten.dynamic_slice`."""
    shape = shape_of(imp.value(args["self"]))
    if not shape:
        raise imp.error("cannot narrow a 0-d tensor")
    d = dim_index(imp, args["dim"], len(shape))
    start = imp.symint(args["start"], "narrow's start")
    length = imp.symint(args["length"], "narrow's length")
    if isinstance(start, int) and isinstance(length, int) and shape[d] >= 0:
        start = start + shape[d] if start < 0 else start
        return _slice(imp, args["self"], d, start, start + length, 1)
    return _dynamic_slice(imp, node, args["self"], d, start, length)


def _dynamic_slice(
    imp: Importer, node: Node, x: Any, d: int, start: int | SSAValue, length: int | SSAValue
) -> Operation:
    """`x[..., start : start + length, ...]` on dim `d` with a run-time start or
    length: `aten.dynamic_slice`, the length an operand where the result's dim is `?`."""
    result = imp.result_type()
    size = shape_of(imp.value(x))[d]
    if isinstance(start, int) and start < 0 and size != DYNAMIC:
        start += size  # on a dynamic dim, dynamic_slice counts it from the end itself
    operands = [imp.value(x), imp.scalar_operand(start)]
    if result.get_shape()[d] < 0:
        operands.append(imp.scalar_operand(length))
    elif isinstance(length, SSAValue):
        raise imp.error("the narrow's length is computed at run time but its result is static")
    return ix.DynamicSliceOp.create(
        operands=operands, result_types=[result], properties={"dim": i64_attr(d)}
    )


@CONVERTERS("aten.select.int")
def convert_select(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`x.select(dim, index)`; a run-time index (a SymInt) is a one-entry
    `aten.dynamic_slice` and an `aten.squeeze` of its dim."""
    shape = shape_of(imp.value(args["self"]))
    d = dim_index(imp, args["dim"], len(shape))
    symbolic = imp.symint(args["index"], "select's index")
    if isinstance(symbolic, SSAValue):
        return _dynamic_select(imp, node, args["self"], d, symbolic)
    index = symbolic
    if shape and -shape[d] <= index < 0:
        index += shape[d]
    return unary_op(imp, sh.SelectOp, args["self"], {"dim": i64_attr(d), "index": i64_attr(index)})


def _dynamic_select(imp: Importer, node: Node, x: Any, d: int, index: SSAValue) -> Operation:
    result = imp.result_type()
    window = list(shape_of(imp.value(x)))
    window[d] = 1
    one = ix.DynamicSliceOp.create(
        operands=[imp.value(x), index],
        result_types=[TensorType(result.get_element_type(), window)],
        properties={"dim": i64_attr(d)},
    )
    value = insert_op(imp, node, one)
    return sh.SqueezeOp.create(
        operands=[value], result_types=[result], properties={"dims": i64_array([d])}
    )


@CONVERTERS("aten.unbind.int")
def convert_unbind(imp: Importer, node: Node, args: dict[str, Any]) -> list[SSAValue]:
    """`unbind` -> one `aten.select` per index along `dim`."""
    x = imp.value(args["self"])
    d = dim_index(imp, args["dim"], len(shape_of(x)))
    loc = node_location(node)
    values: list[SSAValue] = []
    for i, type in enumerate(imp.result_types()):
        op = sh.SelectOp.create(
            operands=[x],
            result_types=[type],
            properties={"dim": i64_attr(d), "index": i64_attr(i)},
        )
        if loc is not None:
            op.location = loc
        imp.builder.insert(op)
        values.append(op.result)
    return values


@CONVERTERS("aten.index.Tensor")
def convert_index(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    indices: list[SSAValue] = []
    dims: list[int] = []
    for d, index in enumerate(args["indices"]):
        if index is None:
            continue
        value = imp.value(index)
        assert isinstance(value.type, TensorType)
        if is_bool(value.type.get_element_type()):
            raise imp.error(
                "indexing with a boolean mask gives a data-dependent shape, which qopt "
                "does not support: use torch.where or masked_fill instead"
            )
        indices.append(value)
        dims.append(d)
    if not indices:
        raise imp.error("index.Tensor needs at least one index tensor")
    return ix.IndexOp.create(
        operands=[imp.value(args["self"]), *indices],
        result_types=[imp.result_type()],
        properties={"indexed_dims": i64_array(dims)},
    )


@CONVERTERS("aten.index_select.default")
def convert_index_select(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    x = imp.value(args["self"])
    d = dim_index(imp, args["dim"], len(shape_of(x)))
    return ix.IndexSelectOp.create(
        operands=[x, imp.value(args["index"])],
        result_types=[imp.result_type()],
        properties={"dim": i64_attr(d)},
    )


@CONVERTERS("aten.gather.default")
def convert_gather(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    x = imp.value(args["self"])
    d = dim_index(imp, args["dim"], len(shape_of(x)))
    return ix.GatherOp.create(
        operands=[x, imp.value(args["index"])],
        result_types=[imp.result_type()],
        properties={"dim": i64_attr(d)},
    )


# ----- functional updates (scatters) -------------------------------------------


@CONVERTERS("aten.index_put.default")
def convert_index_put(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`index_put(self, indices, values, accumulate)`: the `None`s of `indices` are
    dims taken whole; the others become operands, their dims `indexed_dims`. A
    single boolean mask becomes `aten.where` (see `_index_put_mask`)."""
    x = imp.value(args["self"])
    values = imp.value(args["values"])
    accumulate = bool(args.get("accumulate"))
    entries = list(args["indices"] or [])
    rank = len(shape_of(x))
    if len(entries) > rank:
        raise imp.error(f"index_put has {len(entries)} indices for a rank-{rank} tensor")
    present = [(d, imp.value(index)) for d, index in enumerate(entries) if index is not None]
    if not present:
        raise imp.error("index_put needs at least one index tensor")
    if elem_of(values) != elem_of(x):
        raise imp.error(
            f"index_put values ({values.type}) must have the dtype of self ({x.type}), "
            "as torch requires"
        )
    masks = [d for d, index in present if is_bool(elem_of(index))]
    if masks and len(present) == 1:
        return _index_put_mask(imp, node, x, masks[0], present[0][1], values, accumulate)
    if masks:
        raise imp.error(
            "index_put with a boolean mask next to other index tensors is not supported "
            "(its shape depends on the mask's data): index with integer tensors instead"
        )
    for d, index in present:
        if elem_of(index) not in (i64, i32):
            raise imp.error(
                f"index tensor for dim {d} has type {index.type}: index_put takes int64 or "
                "int32 indices, or one boolean mask"
            )
    props: dict[str, Attribute] = {"indexed_dims": i64_array([d for d, _ in present])}
    if accumulate:
        props["accumulate"] = BoolAttr.from_bool(True)
    return ix.IndexPutOp.create(
        operands=[x, *(index for _, index in present), values],
        result_types=[imp.result_type()],
        properties=props,
    )


def _index_put_mask(
    imp: Importer,
    node: Node,
    x: SSAValue,
    first: int,
    mask: SSAValue,
    values: SSAValue,
    accumulate: bool,
) -> Operation:
    """`x[..., mask, ...] = values` (`+=` with `accumulate`) with one boolean `mask`
    covering dims `first ..` of `x`: `where(mask, values, x)` (`where(mask, x +
    values, x)`), the mask and the values viewed with size-1 dims to broadcast over
    `x`. The values must be the same for every masked entry (a scalar, or one value
    per dim outside the mask): one value per masked entry depends on the mask's data."""
    shape = shape_of(x)
    m = shape_of(mask)
    after = len(shape) - first - len(m)
    if after < 0 or shape[first : first + len(m)] != m:
        raise imp.error(
            f"the boolean mask of shape {list(m)} does not match dims {first}.. of the "
            f"self of shape {list(shape)}"
        )
    v = shape_of(values)
    target_rank = first + 1 + after
    padded = (1,) * (target_rank - len(v)) + v
    if len(v) > target_rank or padded[first] != 1:
        raise imp.error(
            f"index_put with a boolean mask and values of shape {list(v)}: values that differ "
            "per masked entry depend on the mask's data, which qopt does not support; use "
            "values that broadcast over the masked entries (e.g. a scalar) or torch.where"
        )
    spread = (*padded[:first], *(1,) * len(m), *padded[first + 1 :])
    if broadcast_shapes(spread, shape) != shape:
        raise imp.error(
            f"index_put values of shape {list(v)} do not broadcast to the masked entries of "
            f"the self of shape {list(shape)}"
        )
    elem = elem_of(x)
    cond_shape = (*(1,) * first, *m, *(1,) * after)
    cond = mask
    if cond_shape != m:
        cond_type = TensorType(elem_of(mask), cond_shape)
        cond = insert_op(imp, node, sh.ViewOp.create(operands=[mask], result_types=[cond_type]))
    new = values
    if spread != v:
        new = insert_op(
            imp, node, sh.ViewOp.create(operands=[values], result_types=[TensorType(elem, spread)])
        )
    if accumulate:
        added = ew.AddOp.create(operands=[x, new], result_types=[TensorType(elem, shape)])
        new = insert_op(imp, node, added)
    return ew.WhereOp.create(operands=[cond, new, x], result_types=[imp.result_type()])


@CONVERTERS("aten.index_copy.default")
def convert_index_copy(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    x = imp.value(args["self"])
    d = dim_index(imp, args["dim"], len(shape_of(x)))
    return ix.IndexCopyOp.create(
        operands=[x, imp.value(args["index"]), imp.value(args["source"])],
        result_types=[imp.result_type()],
        properties={"dim": i64_attr(d)},
    )


@CONVERTERS("aten.slice_scatter.default")
def convert_slice_scatter(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    x = args["self"]
    bounds = [args["start"], args["end"]]
    if any(isinstance(b, Node) for b in bounds) or any(
        d == DYNAMIC for d in shape_of(imp.value(x))
    ):
        return _symbolic_slice_scatter(imp, node, args)
    props = _slice_props(imp, x, args["dim"], args["start"], args["end"], args["step"])
    return ix.SliceScatterOp.create(
        operands=[imp.value(x), imp.value(args["src"])],
        result_types=[imp.result_type()],
        properties=props,
    )


def _symbolic_slice_scatter(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`slice_scatter` with run-time bounds (the functional form of
    `x.narrow(d, start, n).copy_(src)` after `run_decompositions`): an
    `aten.dynamic_update_slice` at `start` where `src` fills `[start, end)` exactly."""
    x = imp.value(args["self"])
    src_node = args["src"]
    d = dim_index(imp, args["dim"], len(shape_of(x)))
    step = imp.static(args["step"] if args["step"] is not None else 1, "the slice step")
    start = imp.symint(args["start"] if args["start"] is not None else 0, "the slice start")
    src_val = src_node.meta.get("val") if isinstance(src_node, Node) else None
    start_expr, end_expr = _expr(args["start"] or 0), _expr(args["end"])
    fits = (
        step == 1
        and isinstance(src_val, torch.Tensor)
        and start_expr is not None
        and end_expr is not None
        and (end_expr - start_expr - expr_of_size(src_val.shape[d])).simplify() == 0
    )
    if not fits or (isinstance(start, int) and start < 0):
        raise imp.error(
            "a slice_scatter with run-time bounds whose window torch clamps: qopt writes "
            "run-time windows only where the source fills them (narrow(...).copy_(src))"
        )
    src = imp.value(src_node)
    if elem_of(src) != elem_of(x):  # torch converts src to self's dtype
        cast = TensorType(elem_of(x), shape_of(src))
        src = insert_op(imp, node, ew.CastOp.create(operands=[src], result_types=[cast]))
    return ix.DynamicUpdateSliceOp.create(
        operands=[x, src, imp.scalar_operand(start)],
        result_types=[imp.result_type()],
        properties={"dim": i64_attr(d)},
    )


@CONVERTERS("aten.select_scatter.default")
def convert_select_scatter(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    x = imp.value(args["self"])
    shape = shape_of(x)
    if not shape:
        raise imp.error("cannot select from a 0-d tensor")
    d = dim_index(imp, args["dim"], len(shape))
    symbolic = imp.symint(args["index"], "select_scatter's index")
    if isinstance(symbolic, SSAValue):  # at a run-time index: a one-entry window
        src = imp.value(args["src"])
        if elem_of(src) != elem_of(x):
            cast = TensorType(elem_of(x), shape_of(src))
            src = insert_op(imp, node, ew.CastOp.create(operands=[src], result_types=[cast]))
        window = [*shape_of(src)[:d], 1, *shape_of(src)[d:]]
        row = sh.UnsqueezeOp.create(
            operands=[src],
            result_types=[TensorType(elem_of(x), window)],
            properties={"dim": i64_attr(d)},
        )
        return ix.DynamicUpdateSliceOp.create(
            operands=[x, insert_op(imp, node, row), symbolic],
            result_types=[imp.result_type()],
            properties={"dim": i64_attr(d)},
        )
    index = symbolic
    if not -shape[d] <= index < shape[d]:
        raise imp.error(
            f"select_scatter index {index} is out of range for dim {d} of size {shape[d]}"
        )
    return ix.SelectScatterOp.create(
        operands=[x, imp.value(args["src"])],
        result_types=[imp.result_type()],
        properties={"dim": i64_attr(d), "index": i64_attr(index % shape[d])},
    )


@CONVERTERS("aten.copy.default")
def convert_copy(imp: Importer, node: Node, args: dict[str, Any]) -> SSAValue:
    """Functional `copy(self, src)`: `src` broadcast to `self`'s shape in `self`'s
    dtype (`self` supplies only the type). Functionalized slice assignments
    (`x[:, 3:5] = v`) give `slice` -> `copy` -> `slice_scatter`."""
    type = imp.value(args["self"]).type
    assert isinstance(type, TensorType)
    value = imp.operand(args["src"], imp.value(args["self"]))
    source = value.type
    assert isinstance(source, TensorType)
    if source.get_element_type() != type.get_element_type():
        cast = TensorType(type.get_element_type(), source.get_shape())
        value = insert_op(imp, node, ew.CastOp.create(operands=[value], result_types=[cast]))
    if tuple(source.get_shape()) != tuple(type.get_shape()):
        value = insert_op(imp, node, sh.ExpandOp.create(operands=[value], result_types=[type]))
    return value
