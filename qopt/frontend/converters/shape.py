"""Converters for the aten shape and indexing families (see qopt/dialects/aten/shape.py
and qopt/dialects/aten/indexing.py).

Several ATen overloads map to one qopt op: every reshape-like op becomes
`aten.view`, every way of making a constant-filled tensor `aten.full`, every
split `aten.split` (its piece sizes read from the result types).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch.fx import Node
from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue

from qopt.dialects.aten import elementwise as ew
from qopt.dialects.aten import indexing as ix
from qopt.dialects.aten import scalar as sc
from qopt.dialects.aten import shape as sh
from qopt.dialects.aten.base import DYNAMIC, broadcast_shapes, norm_dim
from qopt.dialects.tensors import elem_of, numel, shape_of
from qopt.dtypes import is_bool, is_float
from qopt.frontend.converters.table import ConverterTable
from qopt.frontend.importer import Importer, node_location, static_int
from qopt.limits import active_limits

CONVERTERS = ConverterTable()


def _array(values: Sequence[Any]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def _int(value: Any) -> IntegerAttr:
    return IntegerAttr(int(value), i64)


def _scalar(value: Any, result: TensorType) -> FloatAttr | IntegerAttr:
    """A fill/bound scalar: IntegerAttr for exact integers into non-float results."""
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int) and not is_float(result.get_element_type()):
        return IntegerAttr(value, i64)
    return FloatAttr(float(value), 64)


def _dim(imp: Importer, dim: Any, rank: int) -> int:
    try:
        return norm_dim(int(dim), rank)
    except Exception as e:  # VerifyException from norm_dim
        raise imp.error(str(e)) from None


def _insert(imp: Importer, node: Node, op: Operation) -> SSAValue:
    """Insert an intermediate op of a converter that emits several, at the node's line."""
    if (loc := node_location(node)) is not None:
        op.location = loc
    imp.builder.insert(op)
    return op.results[0]


def _unary(
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


# ----- views and layout --------------------------------------------------------


@CONVERTERS(
    "aten.view.default",
    "aten.reshape.default",
    "aten._unsafe_view.default",
    "aten.view_as.default",
    "aten.flatten.using_ints",
    "aten.unflatten.int",
)
def convert_view(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    if list(imp.result_type().get_shape()).count(DYNAMIC) > 1:
        raise imp.error(
            "a view to a shape with several dynamic dims: qopt views to at most one dynamic "
            "dim (its size is what the others leave)"
        )
    return _unary(imp, sh.ViewOp, args["self"])


@CONVERTERS("aten.unsqueeze.default")
def convert_unsqueeze(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    rank = len(shape_of(imp.value(args["self"])))
    return _unary(
        imp,
        sh.UnsqueezeOp,
        args["self"],
        {"dim": _int(_dim(imp, args["dim"], rank + 1))},
    )


@CONVERTERS("aten.squeeze.default", "aten.squeeze.dim", "aten.squeeze.dims")
def convert_squeeze(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    shape = shape_of(imp.value(args["self"]))
    dim = args.get("dim")
    if dim is None:
        listed = range(len(shape))
    else:
        listed = [
            _dim(imp, d, len(shape)) for d in (dim if isinstance(dim, list | tuple) else [dim])
        ]
    # torch keeps listed dims whose size is not 1; aten.squeeze removes every listed dim
    dims = sorted({d for d in listed if shape and shape[d] == 1})
    return _unary(imp, sh.SqueezeOp, args["self"], {"dims": _array(dims)})


@CONVERTERS("aten.permute.default")
def convert_permute(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    rank = len(shape_of(imp.value(args["self"])))
    dims = [_dim(imp, d, rank) for d in args["dims"]]
    return _unary(imp, sh.PermuteOp, args["self"], {"dims": _array(dims)})


@CONVERTERS("aten.numpy_T.default")
def convert_numpy_t(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`x.T`: every dim reversed (Falcon's `input @ self.weight.T`)."""
    rank = len(shape_of(imp.value(args["self"])))
    return _unary(imp, sh.PermuteOp, args["self"], {"dims": _array(list(range(rank))[::-1])})


@CONVERTERS("aten.movedim.int", "aten.movedim.intlist")
def convert_movedim(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    rank = len(shape_of(imp.value(args["self"])))
    source, destination = args["source"], args["destination"]
    if not isinstance(source, list | tuple):
        source, destination = [source], [destination]
    src = [_dim(imp, d, rank) for d in source]
    dst = [_dim(imp, d, rank) for d in destination]
    perm = [-1] * rank
    for s, d in zip(src, dst, strict=True):
        perm[d] = s
    rest = iter(d for d in range(rank) if d not in src)
    perm = [p if p >= 0 else next(rest) for p in perm]
    return _unary(imp, sh.PermuteOp, args["self"], {"dims": _array(perm)})


@CONVERTERS("aten.transpose.int", "aten.swapaxes.default", "aten.swapdims.default")
def convert_transpose(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    rank = len(shape_of(imp.value(args["self"])))
    dim0 = args.get("dim0", args.get("axis0"))
    dim1 = args.get("dim1", args.get("axis1"))
    props = {"dim0": _int(_dim(imp, dim0, rank)), "dim1": _int(_dim(imp, dim1, rank))}
    return _unary(imp, sh.TransposeOp, args["self"], props)


@CONVERTERS("aten.t.default")
def convert_t(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    rank = len(shape_of(imp.value(args["self"])))
    if rank < 2:  # t() is the identity below rank 2
        return _unary(imp, sh.ViewOp, args["self"])
    return _unary(imp, sh.TransposeOp, args["self"], {"dim0": _int(0), "dim1": _int(1)})


@CONVERTERS("aten.mT.default", "aten.mH.default", "aten.adjoint.default", "aten.matrix_H.default")
def convert_matrix_t(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`x.mT` (and `mH`, `adjoint`, `H`: the same for qopt's real dtypes): the last two
    dims swapped."""
    rank = len(shape_of(imp.value(args["self"])))
    if rank < 2:
        raise imp.error(f"transposes the last two dims of a rank-{rank} tensor (torch needs 2+)")
    props = {"dim0": _int(rank - 2), "dim1": _int(rank - 1)}
    return _unary(imp, sh.TransposeOp, args["self"], props)


@CONVERTERS("aten.expand.default", "aten.expand_as.default")
def convert_expand(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    x, y = shape_of(imp.value(args["self"])), imp.result_type().get_shape()
    source = args["self"].meta.get("val") if isinstance(args["self"], Node) else None
    val = node.meta.get("val")
    for i, size in enumerate(y):
        j = i - (len(y) - len(x))
        same = (
            j >= 0
            and x[j] == DYNAMIC
            and isinstance(source, torch.Tensor)
            and isinstance(val, torch.Tensor)
            and (_expr_of_size(val.shape[i]) - _expr_of_size(source.shape[j])).simplify() == 0
        )
        if size == DYNAMIC and not same:
            return _expand_to_runtime_sizes(imp, node, args, x)
    return _unary(imp, sh.ExpandOp, args["self"])


def _expand_to_runtime_sizes(
    imp: Importer, node: Node, args: dict[str, Any], x: Sequence[int]
) -> Operation:
    """`expand` that grows a dim to a run-time size (`x[:1].expand(n, 4)`): expanded
    to the Dim's bound there, then cut to the run-time size (`_windows`); a `?` dim
    the input already has at the same size stays `?`."""
    result = imp.result_type()
    y = result.get_shape()
    if "other" in args:  # expand_as: the sizes of `other`
        other = imp.value(args["other"])
        sizes: list[Any] = [_size_of(imp, node, other, d) for d in range(len(y))]
    else:
        sizes = list(args["size"])
    bound = _bound_shape(imp, node, result)
    offset = len(y) - len(x)
    shape = [
        DYNAMIC if i >= offset and x[i - offset] == DYNAMIC and size == DYNAMIC else bound[i]
        for i, size in enumerate(y)
    ]
    for i, size in enumerate(sizes):
        if shape[i] == DYNAMIC or y[i] != DYNAMIC:
            continue
        if isinstance(size, int) and size < 0:
            raise imp.error(f"expand size -1 for dim {i}, which the input does not have")
    grown = sh.ExpandOp.create(
        operands=[imp.value(args["self"])],
        result_types=[TensorType(result.get_element_type(), shape)],
    )
    return _windows(imp, node, _insert(imp, node, grown), result, sizes)


@CONVERTERS("aten.repeat.default")
def convert_repeat(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    return _unary(imp, sh.RepeatOp, args["self"], {"repeats": _array(args["repeats"])})


@CONVERTERS("aten.repeat_interleave.self_int")
def convert_repeat_interleave(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`repeat_interleave(x, repeats: int, dim=None, output_size=None)`; a tensor of
    repeats (`.self_Tensor`) has data-dependent shapes and is not imported."""
    repeats, dim, output_size = args["repeats"], args.get("dim"), args.get("output_size")
    if isinstance(repeats, Node) or isinstance(dim, Node):
        raise imp.error("repeat_interleave needs constant repeats and dim")
    repeats = int(repeats)
    if repeats < 0:
        raise imp.error(f"repeat_interleave repeats must be non-negative, got {repeats}")
    shape = shape_of(imp.value(args["self"]))
    props: dict[str, Attribute] = {"repeats": _int(repeats)}
    if dim is None:
        size = numel(shape) * repeats
    else:
        if not shape:
            raise imp.error("repeat_interleave of a 0-d tensor takes no dim")
        d = _dim(imp, dim, len(shape))
        props["dim"] = _int(d)
        size = shape[d] * repeats
    if isinstance(output_size, int) and output_size != size:
        raise imp.error(
            f"repeat_interleave output_size {output_size} disagrees with the {size} entries "
            f"{repeats} repeats give"
        )
    return _unary(imp, sh.RepeatInterleaveOp, args["self"], props)


@CONVERTERS("aten.flip.default")
def convert_flip(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    rank = len(shape_of(imp.value(args["self"])))
    dims = [_dim(imp, d, rank) for d in args["dims"]]
    return _unary(imp, sh.FlipOp, args["self"], {"dims": _array(dims)})


@CONVERTERS("aten.roll.default")
def convert_roll(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    rank = len(shape_of(imp.value(args["self"])))
    dims = [_dim(imp, d, rank) for d in args.get("dims") or []]
    props = {"shifts": _array(args["shifts"]), "dims": _array(dims)}
    return _unary(imp, sh.RollOp, args["self"], props)


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
    d = _dim(imp, dim, len(shape))
    step = 1 if step is None else int(step)
    if step <= 0:
        raise imp.error(f"slice step must be positive, got {step}")
    start = 0 if start is None else int(start)
    end = sh.INT64_MAX if end is None else int(end)
    start, end, _ = sh.slice_bounds(start, end, step, shape[d])
    return {"dim": _int(d), "start": _int(start), "end": _int(end), "step": _int(step)}


def _slice(imp: Importer, x: Any, dim: Any, start: Any, end: Any, step: Any) -> Operation:
    return _unary(imp, sh.SliceOp, x, _slice_props(imp, x, dim, start, end, step))


@CONVERTERS("aten.slice.Tensor")
def convert_slice(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    shape = shape_of(imp.value(args["self"]))
    start, end = (
        imp.symint(b, "a slice bound") if isinstance(b, Node) else b
        for b in (args["start"], args["end"])
    )
    if shape and not isinstance(start, SSAValue) and not isinstance(end, SSAValue):
        d = _dim(imp, args["dim"], len(shape))
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
    d = _dim(imp, args["dim"], len(shape))
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
        length_value = _insert(imp, node, sub)
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
    size_expr = _expr_of_size(source.shape[d]) if isinstance(source, torch.Tensor) else None
    if value >= 0 and (size == DYNAMIC or value < size) and value < sh.INT64_MAX // 2:
        return sympy.Integer(value), value
    if size != DYNAMIC:  # clamped (past the end) or counted from the end, statically
        value = min(value, size) if value >= 0 else max(value + size, 0)
        return sympy.Integer(value), value
    if size_expr is None:
        return None, value
    runtime = _size_of(imp, node, x, d)
    if value >= 0:  # past the end: the size
        return size_expr, runtime
    add = ew.AddOp.create(
        operands=[imp.scalar_operand(runtime), imp.scalar_operand(value)],
        result_types=[TensorType(i64, [])],
    )
    return size_expr + value, _insert(imp, node, add)


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
    d = _dim(imp, args["dim"], len(shape))
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
        operands=operands, result_types=[result], properties={"dim": _int(d)}
    )


@CONVERTERS("aten.select.int")
def convert_select(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`x.select(dim, index)`; a run-time index (a SymInt) is a one-entry
    `aten.dynamic_slice` and an `aten.squeeze` of its dim."""
    shape = shape_of(imp.value(args["self"]))
    d = _dim(imp, args["dim"], len(shape))
    symbolic = imp.symint(args["index"], "select's index")
    if isinstance(symbolic, SSAValue):
        return _dynamic_select(imp, node, args["self"], d, symbolic)
    index = symbolic
    if shape and -shape[d] <= index < 0:
        index += shape[d]
    return _unary(imp, sh.SelectOp, args["self"], {"dim": _int(d), "index": _int(index)})


def _dynamic_select(imp: Importer, node: Node, x: Any, d: int, index: SSAValue) -> Operation:
    result = imp.result_type()
    window = list(shape_of(imp.value(x)))
    window[d] = 1
    one = ix.DynamicSliceOp.create(
        operands=[imp.value(x), index],
        result_types=[TensorType(result.get_element_type(), window)],
        properties={"dim": _int(d)},
    )
    value = _insert(imp, node, one)
    return sh.SqueezeOp.create(
        operands=[value], result_types=[result], properties={"dims": _array([d])}
    )


@CONVERTERS("aten.unbind.int")
def convert_unbind(imp: Importer, node: Node, args: dict[str, Any]) -> list[SSAValue]:
    """`unbind` -> one `aten.select` per index along `dim`."""
    x = imp.value(args["self"])
    d = _dim(imp, args["dim"], len(shape_of(x)))
    loc = node_location(node)
    values: list[SSAValue] = []
    for i, type in enumerate(imp.result_types()):
        op = sh.SelectOp.create(
            operands=[x],
            result_types=[type],
            properties={"dim": _int(d), "index": _int(i)},
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
        properties={"indexed_dims": _array(dims)},
    )


@CONVERTERS("aten.index_select.default")
def convert_index_select(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    x = imp.value(args["self"])
    d = _dim(imp, args["dim"], len(shape_of(x)))
    return ix.IndexSelectOp.create(
        operands=[x, imp.value(args["index"])],
        result_types=[imp.result_type()],
        properties={"dim": _int(d)},
    )


@CONVERTERS("aten.gather.default")
def convert_gather(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    x = imp.value(args["self"])
    d = _dim(imp, args["dim"], len(shape_of(x)))
    return ix.GatherOp.create(
        operands=[x, imp.value(args["index"])],
        result_types=[imp.result_type()],
        properties={"dim": _int(d)},
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
    props: dict[str, Attribute] = {"indexed_dims": _array([d for d, _ in present])}
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
        cond = _insert(imp, node, sh.ViewOp.create(operands=[mask], result_types=[cond_type]))
    new = values
    if spread != v:
        new = _insert(
            imp, node, sh.ViewOp.create(operands=[values], result_types=[TensorType(elem, spread)])
        )
    if accumulate:
        added = ew.AddOp.create(operands=[x, new], result_types=[TensorType(elem, shape)])
        new = _insert(imp, node, added)
    return ew.WhereOp.create(operands=[cond, new, x], result_types=[imp.result_type()])


@CONVERTERS("aten.index_copy.default")
def convert_index_copy(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    x = imp.value(args["self"])
    d = _dim(imp, args["dim"], len(shape_of(x)))
    return ix.IndexCopyOp.create(
        operands=[x, imp.value(args["index"]), imp.value(args["source"])],
        result_types=[imp.result_type()],
        properties={"dim": _int(d)},
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
    d = _dim(imp, args["dim"], len(shape_of(x)))
    step = imp.static(args["step"] if args["step"] is not None else 1, "the slice step")
    start = imp.symint(args["start"] if args["start"] is not None else 0, "the slice start")
    src_val = src_node.meta.get("val") if isinstance(src_node, Node) else None
    start_expr, end_expr = _expr(args["start"] or 0), _expr(args["end"])
    fits = (
        step == 1
        and isinstance(src_val, torch.Tensor)
        and start_expr is not None
        and end_expr is not None
        and (end_expr - start_expr - _expr_of_size(src_val.shape[d])).simplify() == 0
    )
    if not fits or (isinstance(start, int) and start < 0):
        raise imp.error(
            "a slice_scatter with run-time bounds whose window torch clamps: qopt writes "
            "run-time windows only where the source fills them (narrow(...).copy_(src))"
        )
    src = imp.value(src_node)
    if elem_of(src) != elem_of(x):  # torch converts src to self's dtype
        cast = TensorType(elem_of(x), shape_of(src))
        src = _insert(imp, node, ew.CastOp.create(operands=[src], result_types=[cast]))
    return ix.DynamicUpdateSliceOp.create(
        operands=[x, src, imp.scalar_operand(start)],
        result_types=[imp.result_type()],
        properties={"dim": _int(d)},
    )


def _expr_of_size(size: Any) -> Any:
    import sympy

    return size.node.expr if isinstance(size, torch.SymInt) else sympy.Integer(int(size))


@CONVERTERS("aten.select_scatter.default")
def convert_select_scatter(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    x = imp.value(args["self"])
    shape = shape_of(x)
    if not shape:
        raise imp.error("cannot select from a 0-d tensor")
    d = _dim(imp, args["dim"], len(shape))
    symbolic = imp.symint(args["index"], "select_scatter's index")
    if isinstance(symbolic, SSAValue):  # at a run-time index: a one-entry window
        src = imp.value(args["src"])
        if elem_of(src) != elem_of(x):
            cast = TensorType(elem_of(x), shape_of(src))
            src = _insert(imp, node, ew.CastOp.create(operands=[src], result_types=[cast]))
        window = [*shape_of(src)[:d], 1, *shape_of(src)[d:]]
        row = sh.UnsqueezeOp.create(
            operands=[src],
            result_types=[TensorType(elem_of(x), window)],
            properties={"dim": _int(d)},
        )
        return ix.DynamicUpdateSliceOp.create(
            operands=[x, _insert(imp, node, row), symbolic],
            result_types=[imp.result_type()],
            properties={"dim": _int(d)},
        )
    index = symbolic
    if not -shape[d] <= index < shape[d]:
        raise imp.error(
            f"select_scatter index {index} is out of range for dim {d} of size {shape[d]}"
        )
    return ix.SelectScatterOp.create(
        operands=[x, imp.value(args["src"])],
        result_types=[imp.result_type()],
        properties={"dim": _int(d), "index": _int(index % shape[d])},
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
        value = _insert(imp, node, ew.CastOp.create(operands=[value], result_types=[cast]))
    if tuple(source.get_shape()) != tuple(type.get_shape()):
        value = _insert(imp, node, sh.ExpandOp.create(operands=[value], result_types=[type]))
    return value


# ----- joining and splitting ---------------------------------------------------


@CONVERTERS("aten.cat.default", "aten.concat.default", "aten.concatenate.default")
def convert_cat(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """aten.cat without its empty inputs (torch skips them, also its legacy `[0]`
    tensors of any rank; their dtype still takes part in the result's)."""
    rank = len(imp.result_type().get_shape())
    tensors = imp.values_of(args["tensors"])
    nonempty = [t for t in tensors if 0 not in shape_of(t)]
    return sh.CatOp.create(
        operands=nonempty or tensors,
        result_types=[imp.result_type()],
        properties={"dim": _int(_dim(imp, args["dim"], rank))},
    )


@CONVERTERS("aten.stack.default")
def convert_stack(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    rank = len(imp.result_type().get_shape())
    return sh.StackOp.create(
        operands=imp.values_of(args["tensors"]),
        result_types=[imp.result_type()],
        properties={"dim": _int(_dim(imp, args["dim"], rank))},
    )


@CONVERTERS("aten.split.Tensor", "aten.split_with_sizes.default", "aten.chunk.default")
def convert_split(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    x = imp.value(args["self"])
    d = _dim(imp, args["dim"], len(shape_of(x)))
    types = imp.result_types()
    sizes = [t.get_shape()[d] for t in types]
    return sh.SplitOp.create(
        operands=[x],
        result_types=types,
        properties={"sizes": _array(sizes), "dim": _int(d)},
    )


@CONVERTERS("aten.tensor_split.sections", "aten.tensor_split.indices")
def convert_tensor_split(
    imp: Importer, node: Node, args: dict[str, Any]
) -> Operation | tuple[SSAValue, ...]:
    """`tensor_split(x, sections, dim)` is `split` with torch's piece sizes (read from
    the result types: the first `size % sections` pieces one longer);
    `tensor_split(x, indices, dim)` is one `slice` per piece, `x[i_k : i_k+1]` with
    `i_0 = 0` and the last piece to the end (indices out of order give empty or
    overlapping pieces, as in torch). A tensor of indices or sections
    (`.tensor_indices_or_sections`) is not imported."""
    x = imp.value(args["self"])
    d = _dim(imp, args.get("dim", 0), len(shape_of(x)))
    types = imp.result_types()
    if "sections" in args:
        sections = args["sections"]
        if not isinstance(sections, int) or sections <= 0:
            raise imp.error(f"tensor_split sections must be a positive number, got {sections!r}")
        return sh.SplitOp.create(
            operands=[x],
            result_types=types,
            properties={"sizes": _array([t.get_shape()[d] for t in types]), "dim": _int(d)},
        )
    indices = args["indices"]
    if any(not isinstance(i, int) for i in indices):
        raise imp.error("tensor_split needs constant indices")
    starts = [0, *indices]
    ends = [*indices, sh.INT64_MAX]
    pieces: list[SSAValue] = []
    for start, end, type in zip(starts, ends, types, strict=True):
        props = {"dim": _int(d), "start": _int(start), "end": _int(end), "step": _int(1)}
        piece = sh.SliceOp.create(operands=[x], result_types=[type], properties=props)
        pieces.append(_insert(imp, node, piece))
    return tuple(pieces)


# ----- triangular, padding, differences, scans ---------------------------------


@CONVERTERS("aten.tril.default")
def convert_tril(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    return _unary(imp, sh.TrilOp, args["self"], {"diagonal": _int(args["diagonal"])})


@CONVERTERS("aten.triu.default")
def convert_triu(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    return _unary(imp, sh.TriuOp, args["self"], {"diagonal": _int(args["diagonal"])})


@CONVERTERS("aten.constant_pad_nd.default", "aten.pad.default")
def convert_pad(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    mode = args.get("mode", "constant")
    if mode != "constant":
        raise imp.error(f"pad mode '{mode}' is not supported: only 'constant' padding is")
    value = args.get("value")
    if isinstance(value, Node):
        raise imp.error("the pad value must be a constant")
    fill = _scalar(0 if value is None else value, imp.result_type())
    if any(isinstance(p, Node) for p in args["pad"]):
        return _runtime_pad(imp, node, args, fill)
    props = {"pad": _array(args["pad"]), "value": fill}
    return _unary(imp, sh.ConstantPadNdOp, args["self"], props)


def _runtime_pad(
    imp: Importer, node: Node, args: dict[str, Any], fill: FloatAttr | IntegerAttr
) -> Operation:
    """Constant padding by run-time amounts (`F.pad(x, (0, 0, 0, max - x.shape[0]))`):
    the constant pairs first (`aten.constant_pad_nd`), then per dim padded at run
    time the fill at that dim's size (at its bound if `?`) with `x` written at the
    `before` offset (`aten.dynamic_update_slice`), cut to the run-time size. The
    run-time amounts must be sizes (never negative, as torch's range shows them)
    and the other dims of the tensor static."""
    x = imp.value(args["self"])
    pad = list(args["pad"])
    rank = len(shape_of(x))
    if len(pad) % 2 or len(pad) // 2 > rank:
        raise imp.error(f"pad {pad} needs pairs for at most {rank} dims")
    amounts: list[int | SSAValue] = []
    for p in pad:
        if isinstance(p, Node):
            low = imp.symbol_range(p.meta.get("val"))
            if low is None or low[0] < 0:
                raise imp.error(
                    f"pads by {p.name}, computed at run time and maybe negative: qopt pads by "
                    "run-time amounts that are sizes (torch._check(amount >= 0))"
                )
        amounts.append(imp.symint(p, "a pad amount"))
    elem = imp.result_type().get_element_type()
    static = [a if isinstance(a, int) else 0 for a in amounts]
    value = x
    if any(static):
        shape = list(shape_of(x))
        for i in range(len(static) // 2):
            d = rank - 1 - i
            if shape[d] != DYNAMIC:
                shape[d] += static[2 * i] + static[2 * i + 1]
        padded = sh.ConstantPadNdOp.create(
            operands=[x],
            result_types=[TensorType(elem, shape)],
            properties={"pad": _array(static), "value": fill},
        )
        value = _insert(imp, node, padded)
    result = imp.result_type()
    bound = _bound_shape(imp, node, result)
    op: Operation | None = None
    for i in range(len(amounts) // 2):
        d = rank - 1 - i
        before, after = amounts[2 * i], amounts[2 * i + 1]
        if isinstance(before, int) and isinstance(after, int):
            continue
        # the constant one of the pair is in `value` already
        before = 0 if isinstance(before, int) else before
        after = 0 if isinstance(after, int) else after
        if op is not None:
            value = _insert(imp, node, op)
        src = value
        shape = list(shape_of(src))
        if any(size == DYNAMIC for k, size in enumerate(shape) if k != d):
            raise imp.error(
                f"pads dim {d} by a run-time amount while another dim is dynamic: qopt pads "
                "by run-time amounts along the only dynamic dim"
            )
        shape[d] = bound[d]
        base = _insert(imp, node, sh.FullOp.create(
            result_types=[TensorType(elem, shape)], properties={"value": fill}))  # fmt: skip
        op = ix.DynamicUpdateSliceOp.create(
            operands=[base, src, imp.scalar_operand(before)],
            result_types=[TensorType(elem, shape)],
            properties={"dim": _int(d)},
        )
        if result.get_shape()[d] == DYNAMIC:  # cut to before + size + after
            value = _insert(imp, node, op)
            total: int | SSAValue = 0
            for part in (before, _size_of(imp, node, src, d), after):
                if isinstance(total, int) and isinstance(part, int):
                    total += part
                    continue
                add = ew.AddOp.create(
                    operands=[imp.scalar_operand(total), imp.scalar_operand(part)],
                    result_types=[TensorType(i64, [])],
                )
                total = _insert(imp, node, add)
            out = [*shape]
            out[d] = DYNAMIC
            op = ix.DynamicSliceOp.create(
                operands=[value, imp.scalar_operand(0), imp.scalar_operand(total)],
                result_types=[TensorType(elem, out)],
                properties={"dim": _int(d)},
            )
    assert op is not None
    return op


def _constant_mode(node: Node) -> bool:
    """The forms convert_pad takes (other modes are decomposed by torch's rules)."""
    mode = node.kwargs.get("mode", node.args[2] if len(node.args) > 2 else "constant")
    return mode == "constant"


convert_pad.handles = _constant_mode  # pyright: ignore[reportFunctionMemberAccess]


@CONVERTERS("aten.diff.default")
def convert_diff(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`diff(x, n, dim, prepend, append)` -> `diff(cat(prepend, x, append), n, dim)`."""
    x = imp.value(args["self"])
    shape = list(shape_of(x))
    d = _dim(imp, args["dim"], len(shape))
    parts = [
        p if isinstance(p, SSAValue) else imp.value(p)
        for p in (args["prepend"], x, args["append"])
        if p is not None
    ]
    if len(parts) > 1:
        shape[d] = sum(shape_of(p)[d] for p in parts)
        joined = TensorType(imp.result_type().get_element_type(), shape)
        cat = sh.CatOp.create(operands=parts, result_types=[joined], properties={"dim": _int(d)})
        if (loc := node_location(node)) is not None:
            cat.location = loc
        imp.builder.insert(cat)
        x = cat.result
    return sh.DiffOp.create(
        operands=[x],
        result_types=[imp.result_type()],
        properties={"n": _int(args["n"]), "dim": _int(d)},
    )


@CONVERTERS("aten.cumsum.default")
def convert_cumsum(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    rank = len(shape_of(imp.value(args["self"])))
    return _unary(imp, sh.CumsumOp, args["self"], {"dim": _int(_dim(imp, args["dim"], rank))})


# ----- creation ----------------------------------------------------------------


@CONVERTERS("aten.arange.default", "aten.arange.start", "aten.arange.start_step")
def convert_arange(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`arange(start, end, step)`; a run-time `end` (a SymInt: `arange(seq_len)`) is
    the arange to its bound cut to `end - start` entries (`aten.dynamic_slice`)."""
    result = imp.result_type()
    bounds = [args.get("start", 0), args["end"], args.get("step", 1)]
    bounds = [imp.symint(b, "an arange bound") if isinstance(b, Node) else b for b in bounds]
    if not any(isinstance(b, SSAValue) for b in bounds):
        names = ("start", "end", "step")
        props = {k: _scalar(v, result) for k, v in zip(names, bounds, strict=True)}
        return sh.ArangeOp.create(result_types=[result], properties=props)
    start, end, step = bounds
    if isinstance(step, SSAValue) or not isinstance(step, int) or step == 0:
        raise imp.error("arange with a run-time or non-integer step: qopt takes a constant one")
    if isinstance(start, float) or isinstance(end, float) or result.get_shape() != (DYNAMIC,):
        raise imp.error("arange with a run-time bound needs integer bounds")
    (bound,) = _bound_shape(imp, node, result)
    elem = result.get_element_type()
    scalar = TensorType(i64, [])

    def arith(op_type: type[Operation], lhs: int | SSAValue, rhs: int | SSAValue) -> SSAValue:
        op = op_type.create(
            operands=[imp.scalar_operand(lhs), imp.scalar_operand(rhs)], result_types=[scalar]
        )
        return _insert(imp, node, op)

    if isinstance(start, int):  # start, start + step, ... at the bound
        props = {
            "start": _scalar(start, result),
            "end": _scalar(start + bound * step, result),
            "step": _scalar(step, result),
        }
        iota = _insert(imp, node, sh.ArangeOp.create(
            result_types=[TensorType(elem, [bound])], properties=props))  # fmt: skip
    else:  # a run-time start: step * i (int64) + start, in the result's dtype
        props = {"start": _int(0), "end": _int(bound * step), "step": _int(step)}
        steps = _insert(imp, node, sh.ArangeOp.create(
            result_types=[TensorType(i64, [bound])], properties=props))  # fmt: skip
        add = ew.AddOp.create(operands=[steps, start], result_types=[TensorType(i64, [bound])])
        iota = _insert(imp, node, add)
        if elem != i64:
            cast = ew.CastOp.create(operands=[iota], result_types=[TensorType(elem, [bound])])
            iota = _insert(imp, node, cast)
    # torch's length: ceil((end - start) / step), its sign checked at export
    span = arith(ew.SubOp, end, start) if step > 0 else arith(ew.SubOp, start, end)
    length = span
    if abs(step) != 1:
        length = arith(ew.AddOp, span, abs(step) - 1)
        div = ew.DivOp.create(
            operands=[length, imp.scalar_operand(abs(step))],
            result_types=[scalar],
            properties={"rounding_mode": StringAttr("floor")},
        )
        length = _insert(imp, node, div)
    return _windows(imp, node, iota, result, [length])


_FILL = {
    "aten.zeros.default": 0,
    "aten.new_zeros.default": 0,
    "aten.zeros_like.default": 0,
    "aten.empty.memory_format": 0,
    "aten.new_empty.default": 0,
    "aten.empty_like.default": 0,
    "aten.ones.default": 1,
    "aten.new_ones.default": 1,
    "aten.ones_like.default": 1,
}


@CONVERTERS(
    *_FILL,
    "aten.full.default",
    "aten.new_full.default",
    "aten.full_like.default",
    "aten.scalar_tensor.default",
)
def convert_full(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """Every constant-filled creation op; `empty*` is filled with 0 (its contents
    are unspecified in torch). The shape and dtype come from the result type."""
    target = str(node.target)
    value = _FILL.get(target, args.get("fill_value", args.get("s")))
    result = imp.result_type()
    elem = result.get_element_type()
    shape = result.get_shape()
    # A dynamic size: filled at its bound, then the run-time window of each `?` dim.
    bound = _bound_shape(imp, node, result) if DYNAMIC in shape else list(shape)
    if isinstance(value, Node):  # a run-time scalar (`x.shape[0]`, `.item()`)
        fill = imp.value(value)
        if shape_of(fill):
            raise imp.error("the fill value must be a number")
        if elem_of(fill) != elem:
            cast = ew.CastOp.create(operands=[fill], result_types=[TensorType(elem, [])])
            fill = _insert(imp, node, cast)
        full = sh.ExpandOp.create(operands=[fill], result_types=[TensorType(elem, bound)])
        if DYNAMIC not in shape:
            return full
    else:
        props = {"value": _scalar(value, result)}
        full = sh.FullOp.create(result_types=[TensorType(elem, bound)], properties=props)
        if DYNAMIC not in shape:
            return full
    sizes = args.get("size")
    if not isinstance(sizes, list | tuple):  # `*_like`: the sizes of `self`
        like = imp.value(args["self"])
        sizes = [_size_of(imp, node, like, d) for d in range(len(shape_of(like)))]
    return _windows(imp, node, _insert(imp, node, full), result, list(sizes))


def _bound_shape(imp: Importer, node: Node, result: TensorType) -> list[int]:
    """The result shape with each `?` dim at the largest size torch allows for it."""
    val = node.meta.get("val")
    assert isinstance(val, torch.Tensor)
    bound: list[int] = []
    for d, size in enumerate(result.get_shape()):
        if size != DYNAMIC:
            bound.append(size)
            continue
        limits = imp.symbol_range(val.shape[d])
        if limits is None or not 0 <= limits[1] <= active_limits().max_tensor_elements:
            raise imp.error(
                f"dim {d} of the result ({val.shape[d]}) has no bound: qopt creates tensors of "
                "a dynamic size at a bounded Dim's max"
            )
        bound.append(limits[1])
    count = math.prod(bound)
    if count > active_limits().max_tensor_elements:  # a Dim's range, bounded like a shape
        raise imp.error(
            f"its result at the bound of its dynamic dims {bound} would have {count} elements, "
            f"over qopt's limit max_tensor_elements={active_limits().max_tensor_elements}: "
            "export with a smaller Dim max, import static sizes (dynamic_sizes=[...]), or "
            "raise --limits max_tensor_elements=N if the program is genuine"
        )
    return bound


def _size_of(imp: Importer, node: Node, x: SSAValue, d: int) -> int | SSAValue:
    size = shape_of(x)[d]
    if size != DYNAMIC:
        return size
    op = sc.SymSizeOp.create(
        operands=[x], result_types=[TensorType(i64, [])], properties={"dim": _int(d)}
    )
    return _insert(imp, node, op)


def _windows(
    imp: Importer, node: Node, value: SSAValue, result: TensorType, sizes: list[Any]
) -> Operation:
    """`value` (at its bound) cut to the run-time size of each `?` dim of `result`
    that `value` has at its bound: an `aten.dynamic_slice` from 0 per dim, the last
    one returned."""
    zero = imp.scalar_operand(0)
    shape = list(shape_of(value))
    op: Operation | None = None
    for d, size in enumerate(result.get_shape()):
        if size != DYNAMIC or shape[d] == DYNAMIC:  # static, or already its size
            continue
        if op is not None:
            value = _insert(imp, node, op)
        length = (
            imp.symint(sizes[d], f"size {d}") if not isinstance(sizes[d], SSAValue) else sizes[d]
        )
        shape[d] = DYNAMIC
        op = ix.DynamicSliceOp.create(
            operands=[value, zero, imp.scalar_operand(length)],
            result_types=[TensorType(result.get_element_type(), shape)],
            properties={"dim": _int(d)},
        )
    assert op is not None
    return op


#: The most elements an `as_strided` result may have (its indices are a constant).
AS_STRIDED_MAX_ELEMENTS = 1 << 20


@CONVERTERS("aten.as_strided.default", "aten.as_strided_copy.default")
def convert_as_strided(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`as_strided(x, size, stride, offset)` of a contiguous `x` (torch's
    decompositions of `diagonal`, `diag`, `trace`, ... make these): the elements at
    `offset + sum(i_k * stride_k)` of the flat `x`, an index_select of a constant
    index list, viewed to `size`."""
    source = args["self"]
    meta = source.meta.get("val") if isinstance(source, Node) else None
    if not isinstance(meta, torch.Tensor) or not meta.is_contiguous():
        raise imp.error("as_strided of a non-contiguous tensor: qopt reads contiguous ones")
    size = [imp.static(s, "an as_strided size") for s in args["size"]]
    stride = [imp.static(s, "an as_strided stride") for s in args["stride"]]
    offset = imp.static(args.get("storage_offset") or 0, "an as_strided offset")
    count = numel(size)
    if count > AS_STRIDED_MAX_ELEMENTS:
        raise imp.error(f"as_strided to {count} elements (more than {AS_STRIDED_MAX_ELEMENTS})")
    x = imp.value(source)
    total = numel(shape_of(x))
    index = np.full(size, offset, dtype=np.int64)
    for d, (n, s) in enumerate(zip(size, stride, strict=True)):
        shape = [1] * len(size)
        shape[d] = n
        index = index + np.arange(n, dtype=np.int64).reshape(shape) * s
    if index.size and (index.min() < 0 or index.max() >= total):
        raise imp.error(f"as_strided reads outside the tensor's {total} elements")
    element = imp.result_type().get_element_type()
    flat = _insert(
        imp, node, sh.ViewOp.create(operands=[x], result_types=[TensorType(element, [total])])
    )
    picked = _insert(
        imp,
        node,
        ix.IndexSelectOp.create(
            operands=[flat, imp.constant(index.reshape(-1), f"{node.name}_index", node)],
            result_types=[TensorType(element, [index.size])],
            properties={"dim": _int(0)},
        ),
    )
    return sh.ViewOp.create(operands=[picked], result_types=[imp.result_type()])
