"""Converters for the aten shape family: views and layout, joining and splitting,
padding, scans and creation (see qopt/dialects/aten/shape.py); slicing, indexing and
scatters are indexing.py's.

Several ATen overloads map to one qopt op: every reshape-like op becomes
`aten.view`, every way of making a constant-filled tensor `aten.full`, every
split `aten.split` (its piece sizes read from the result types).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch.fx import Node
from xdsl.dialects.builtin import (
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue

from qopt.dialects.aten import elementwise as ew
from qopt.dialects.aten import indexing as ix
from qopt.dialects.aten import shape as sh
from qopt.dialects.aten.base import DYNAMIC
from qopt.dialects.tensors import elem_of, numel, shape_of
from qopt.dtypes import is_float
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
from qopt.frontend.importer import Importer, node_location
from qopt.limits import active_limits

CONVERTERS = ConverterTable()


def _scalar(value: Any, result: TensorType) -> FloatAttr | IntegerAttr:
    """A fill/bound scalar: IntegerAttr for exact integers into non-float results."""
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int) and not is_float(result.get_element_type()):
        return IntegerAttr(value, i64)
    return FloatAttr(float(value), 64)


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
    return unary_op(imp, sh.ViewOp, args["self"])


@CONVERTERS("aten.unsqueeze.default")
def convert_unsqueeze(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    rank = len(shape_of(imp.value(args["self"])))
    return unary_op(
        imp,
        sh.UnsqueezeOp,
        args["self"],
        {"dim": i64_attr(dim_index(imp, args["dim"], rank + 1))},
    )


@CONVERTERS("aten.squeeze.default", "aten.squeeze.dim", "aten.squeeze.dims")
def convert_squeeze(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    shape = shape_of(imp.value(args["self"]))
    dim = args.get("dim")
    if dim is None:
        listed = range(len(shape))
    else:
        listed = [
            dim_index(imp, d, len(shape)) for d in (dim if isinstance(dim, list | tuple) else [dim])
        ]
    # torch keeps listed dims whose size is not 1; aten.squeeze removes every listed dim
    dims = sorted({d for d in listed if shape and shape[d] == 1})
    return unary_op(imp, sh.SqueezeOp, args["self"], {"dims": i64_array(dims)})


@CONVERTERS("aten.permute.default")
def convert_permute(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    rank = len(shape_of(imp.value(args["self"])))
    dims = [dim_index(imp, d, rank) for d in args["dims"]]
    return unary_op(imp, sh.PermuteOp, args["self"], {"dims": i64_array(dims)})


@CONVERTERS("aten.numpy_T.default")
def convert_numpy_t(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`x.T`: every dim reversed (Falcon's `input @ self.weight.T`)."""
    rank = len(shape_of(imp.value(args["self"])))
    return unary_op(imp, sh.PermuteOp, args["self"], {"dims": i64_array(list(range(rank))[::-1])})


@CONVERTERS("aten.movedim.int", "aten.movedim.intlist")
def convert_movedim(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    rank = len(shape_of(imp.value(args["self"])))
    source, destination = args["source"], args["destination"]
    if not isinstance(source, list | tuple):
        source, destination = [source], [destination]
    src = [dim_index(imp, d, rank) for d in source]
    dst = [dim_index(imp, d, rank) for d in destination]
    perm = [-1] * rank
    for s, d in zip(src, dst, strict=True):
        perm[d] = s
    rest = iter(d for d in range(rank) if d not in src)
    perm = [p if p >= 0 else next(rest) for p in perm]
    return unary_op(imp, sh.PermuteOp, args["self"], {"dims": i64_array(perm)})


@CONVERTERS("aten.transpose.int", "aten.swapaxes.default", "aten.swapdims.default")
def convert_transpose(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    rank = len(shape_of(imp.value(args["self"])))
    dim0 = args.get("dim0", args.get("axis0"))
    dim1 = args.get("dim1", args.get("axis1"))
    props = {
        "dim0": i64_attr(dim_index(imp, dim0, rank)),
        "dim1": i64_attr(dim_index(imp, dim1, rank)),
    }
    return unary_op(imp, sh.TransposeOp, args["self"], props)


@CONVERTERS("aten.t.default")
def convert_t(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    rank = len(shape_of(imp.value(args["self"])))
    if rank < 2:  # t() is the identity below rank 2
        return unary_op(imp, sh.ViewOp, args["self"])
    return unary_op(imp, sh.TransposeOp, args["self"], {"dim0": i64_attr(0), "dim1": i64_attr(1)})


@CONVERTERS("aten.mT.default", "aten.mH.default", "aten.adjoint.default", "aten.matrix_H.default")
def convert_matrix_t(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    """`x.mT` (and `mH`, `adjoint`, `H`: the same for qopt's real dtypes): the last two
    dims swapped."""
    rank = len(shape_of(imp.value(args["self"])))
    if rank < 2:
        raise imp.error(f"transposes the last two dims of a rank-{rank} tensor (torch needs 2+)")
    props = {"dim0": i64_attr(rank - 2), "dim1": i64_attr(rank - 1)}
    return unary_op(imp, sh.TransposeOp, args["self"], props)


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
            and (expr_of_size(val.shape[i]) - expr_of_size(source.shape[j])).simplify() == 0
        )
        if size == DYNAMIC and not same:
            return _expand_to_runtime_sizes(imp, node, args, x)
    return unary_op(imp, sh.ExpandOp, args["self"])


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
        sizes: list[Any] = [size_of(imp, node, other, d) for d in range(len(y))]
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
    return _windows(imp, node, insert_op(imp, node, grown), result, sizes)


@CONVERTERS("aten.repeat.default")
def convert_repeat(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    return unary_op(imp, sh.RepeatOp, args["self"], {"repeats": i64_array(args["repeats"])})


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
    props: dict[str, Attribute] = {"repeats": i64_attr(repeats)}
    if dim is None:
        size = numel(shape) * repeats
    else:
        if not shape:
            raise imp.error("repeat_interleave of a 0-d tensor takes no dim")
        d = dim_index(imp, dim, len(shape))
        props["dim"] = i64_attr(d)
        size = shape[d] * repeats
    if isinstance(output_size, int) and output_size != size:
        raise imp.error(
            f"repeat_interleave output_size {output_size} disagrees with the {size} entries "
            f"{repeats} repeats give"
        )
    return unary_op(imp, sh.RepeatInterleaveOp, args["self"], props)


@CONVERTERS("aten.flip.default")
def convert_flip(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    rank = len(shape_of(imp.value(args["self"])))
    dims = [dim_index(imp, d, rank) for d in args["dims"]]
    return unary_op(imp, sh.FlipOp, args["self"], {"dims": i64_array(dims)})


@CONVERTERS("aten.roll.default")
def convert_roll(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    rank = len(shape_of(imp.value(args["self"])))
    dims = [dim_index(imp, d, rank) for d in args.get("dims") or []]
    props = {"shifts": i64_array(args["shifts"]), "dims": i64_array(dims)}
    return unary_op(imp, sh.RollOp, args["self"], props)


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
        properties={"dim": i64_attr(dim_index(imp, args["dim"], rank))},
    )


@CONVERTERS("aten.stack.default")
def convert_stack(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    rank = len(imp.result_type().get_shape())
    return sh.StackOp.create(
        operands=imp.values_of(args["tensors"]),
        result_types=[imp.result_type()],
        properties={"dim": i64_attr(dim_index(imp, args["dim"], rank))},
    )


@CONVERTERS("aten.split.Tensor", "aten.split_with_sizes.default", "aten.chunk.default")
def convert_split(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    x = imp.value(args["self"])
    d = dim_index(imp, args["dim"], len(shape_of(x)))
    types = imp.result_types()
    sizes = [t.get_shape()[d] for t in types]
    return sh.SplitOp.create(
        operands=[x],
        result_types=types,
        properties={"sizes": i64_array(sizes), "dim": i64_attr(d)},
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
    d = dim_index(imp, args.get("dim", 0), len(shape_of(x)))
    types = imp.result_types()
    if "sections" in args:
        sections = args["sections"]
        if not isinstance(sections, int) or sections <= 0:
            raise imp.error(f"tensor_split sections must be a positive number, got {sections!r}")
        return sh.SplitOp.create(
            operands=[x],
            result_types=types,
            properties={"sizes": i64_array([t.get_shape()[d] for t in types]), "dim": i64_attr(d)},
        )
    indices = args["indices"]
    if any(not isinstance(i, int) for i in indices):
        raise imp.error("tensor_split needs constant indices")
    starts = [0, *indices]
    ends = [*indices, sh.INT64_MAX]
    pieces: list[SSAValue] = []
    for start, end, type in zip(starts, ends, types, strict=True):
        props = {
            "dim": i64_attr(d),
            "start": i64_attr(start),
            "end": i64_attr(end),
            "step": i64_attr(1),
        }
        piece = sh.SliceOp.create(operands=[x], result_types=[type], properties=props)
        pieces.append(insert_op(imp, node, piece))
    return tuple(pieces)


# ----- triangular, padding, differences, scans ---------------------------------


@CONVERTERS("aten.tril.default")
def convert_tril(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    return unary_op(imp, sh.TrilOp, args["self"], {"diagonal": i64_attr(args["diagonal"])})


@CONVERTERS("aten.triu.default")
def convert_triu(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    return unary_op(imp, sh.TriuOp, args["self"], {"diagonal": i64_attr(args["diagonal"])})


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
    props = {"pad": i64_array(args["pad"]), "value": fill}
    return unary_op(imp, sh.ConstantPadNdOp, args["self"], props)


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
            properties={"pad": i64_array(static), "value": fill},
        )
        value = insert_op(imp, node, padded)
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
            value = insert_op(imp, node, op)
        src = value
        shape = list(shape_of(src))
        if any(size == DYNAMIC for k, size in enumerate(shape) if k != d):
            raise imp.error(
                f"pads dim {d} by a run-time amount while another dim is dynamic: qopt pads "
                "by run-time amounts along the only dynamic dim"
            )
        shape[d] = bound[d]
        base = insert_op(imp, node, sh.FullOp.create(
            result_types=[TensorType(elem, shape)], properties={"value": fill}))  # fmt: skip
        op = ix.DynamicUpdateSliceOp.create(
            operands=[base, src, imp.scalar_operand(before)],
            result_types=[TensorType(elem, shape)],
            properties={"dim": i64_attr(d)},
        )
        if result.get_shape()[d] == DYNAMIC:  # cut to before + size + after
            value = insert_op(imp, node, op)
            total: int | SSAValue = 0
            for part in (before, size_of(imp, node, src, d), after):
                if isinstance(total, int) and isinstance(part, int):
                    total += part
                    continue
                add = ew.AddOp.create(
                    operands=[imp.scalar_operand(total), imp.scalar_operand(part)],
                    result_types=[TensorType(i64, [])],
                )
                total = insert_op(imp, node, add)
            out = [*shape]
            out[d] = DYNAMIC
            op = ix.DynamicSliceOp.create(
                operands=[value, imp.scalar_operand(0), imp.scalar_operand(total)],
                result_types=[TensorType(elem, out)],
                properties={"dim": i64_attr(d)},
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
    d = dim_index(imp, args["dim"], len(shape))
    parts = [
        p if isinstance(p, SSAValue) else imp.value(p)
        for p in (args["prepend"], x, args["append"])
        if p is not None
    ]
    if len(parts) > 1:
        shape[d] = sum(shape_of(p)[d] for p in parts)
        joined = TensorType(imp.result_type().get_element_type(), shape)
        cat = sh.CatOp.create(
            operands=parts, result_types=[joined], properties={"dim": i64_attr(d)}
        )
        if (loc := node_location(node)) is not None:
            cat.location = loc
        imp.builder.insert(cat)
        x = cat.result
    return sh.DiffOp.create(
        operands=[x],
        result_types=[imp.result_type()],
        properties={"n": i64_attr(args["n"]), "dim": i64_attr(d)},
    )


@CONVERTERS("aten.cumsum.default")
def convert_cumsum(imp: Importer, node: Node, args: dict[str, Any]) -> Operation:
    rank = len(shape_of(imp.value(args["self"])))
    return unary_op(
        imp, sh.CumsumOp, args["self"], {"dim": i64_attr(dim_index(imp, args["dim"], rank))}
    )


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
        return insert_op(imp, node, op)

    if isinstance(start, int):  # start, start + step, ... at the bound
        props = {
            "start": _scalar(start, result),
            "end": _scalar(start + bound * step, result),
            "step": _scalar(step, result),
        }
        iota = insert_op(imp, node, sh.ArangeOp.create(
            result_types=[TensorType(elem, [bound])], properties=props))  # fmt: skip
    else:  # a run-time start: step * i (int64) + start, in the result's dtype
        props = {"start": i64_attr(0), "end": i64_attr(bound * step), "step": i64_attr(step)}
        steps = insert_op(imp, node, sh.ArangeOp.create(
            result_types=[TensorType(i64, [bound])], properties=props))  # fmt: skip
        add = ew.AddOp.create(operands=[steps, start], result_types=[TensorType(i64, [bound])])
        iota = insert_op(imp, node, add)
        if elem != i64:
            cast = ew.CastOp.create(operands=[iota], result_types=[TensorType(elem, [bound])])
            iota = insert_op(imp, node, cast)
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
        length = insert_op(imp, node, div)
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
            fill = insert_op(imp, node, cast)
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
        sizes = [size_of(imp, node, like, d) for d in range(len(shape_of(like)))]
    return _windows(imp, node, insert_op(imp, node, full), result, list(sizes))


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
            value = insert_op(imp, node, op)
        length = (
            imp.symint(sizes[d], f"size {d}") if not isinstance(sizes[d], SSAValue) else sizes[d]
        )
        shape[d] = DYNAMIC
        op = ix.DynamicSliceOp.create(
            operands=[value, zero, imp.scalar_operand(length)],
            result_types=[TensorType(result.get_element_type(), shape)],
            properties={"dim": i64_attr(d)},
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
    flat = insert_op(
        imp, node, sh.ViewOp.create(operands=[x], result_types=[TensorType(element, [total])])
    )
    picked = insert_op(
        imp,
        node,
        ix.IndexSelectOp.create(
            operands=[flat, imp.constant(index.reshape(-1), f"{node.name}_index", node)],
            result_types=[TensorType(element, [index.size])],
            properties={"dim": i64_attr(0)},
        ),
    )
    return sh.ViewOp.create(operands=[picked], result_types=[imp.result_type()])
