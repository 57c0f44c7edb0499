"""`coreml-canonicalize`: exact data-movement simplifications (coreml -> coreml).

convert-to-coreml writes each torch view and permute as written; coremltools' graph
passes merge consecutive reshapes and cancel transpose pairs. This pass does the
same, with rewrites that are exact (pure data movement, so the program computes
bit for bit what it did, in any element type):

- `reshape(reshape(x))` -> `x` when the outer result has x's static type; else one
  `reshape(x)` with the outer shape when the inner reshape has no other reader (and
  the outer shape copies no dim with MIL's `0`, which would name the inner's dims);
- `reshape(x)` to x's own static shape -> `x`;
- `transpose(transpose(x))` -> one transpose with the composed permutation (`x` when
  it is the identity; else only when the inner transpose has no other reader);
- an identity `transpose` -> `x`;
- `slice_by_index(x)` that takes all of x (every dim whole, in order, none
  squeezed) -> `x`;
- `slice_by_index(slice_by_index(x))` (positive strides, none squeezed, the inner
  slice read by nothing else) -> one slice (swin's patch merging takes every
  other row, then every other column);
- `reshape(const)` (the const read by nothing else, the reshape by no quantize /
  dequantize) -> the const in the new shape (swin's relative position index).

An op that a rewrite leaves without readers goes. `qopt-coreml` runs it right after
`convert-to-coreml`, before `coreml-fp16`: the rewrites do not depend on the element
type, and fp16 then retypes fewer ops. A function output that becomes an input (or
another output) is renamed by the emitter's `identity`, as coremltools does.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import (
    DenseArrayBase,
    Float16Type,
    Float32Type,
    IntegerType,
    ModuleOp,
    TensorType,
    i64,
)
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from qopt.dialects import coreml
from qopt.dialects.coreml.queries import const_array
from qopt.dialects.tensors import shape_of
from qopt.resources import make_resource, weights_of


def _static(value: SSAValue) -> bool:
    return all(d >= 0 for d in shape_of(value))


def _same_static(a: SSAValue, b: SSAValue) -> bool:
    """a and b have one type, every dim known."""
    return a.type == b.type and _static(a)


def _single_use(value: SSAValue) -> bool:
    return len(list(value.uses)) == 1


def _erase_if_dead(value: SSAValue, rewriter: PatternRewriter) -> None:
    owner = value.owner
    if isinstance(owner, coreml.ReshapeOp | coreml.TransposeOp) and not owner.result.uses:
        rewriter.erase_op(owner)


class MergeReshapes(RewritePattern):
    """reshape of a reshape, and a reshape to the operand's own shape."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: coreml.ReshapeOp, rewriter: PatternRewriter, /) -> None:
        if _same_static(op.x, op.result):
            rewriter.replace_op(op, [], [op.x])
            return
        inner = op.x.owner
        if not isinstance(inner, coreml.ReshapeOp):
            return
        if _same_static(inner.x, op.result):
            rewriter.replace_op(op, [], [inner.x])
            _erase_if_dead(inner.result, rewriter)
            return
        shape = [int(d) for d in op.shape.get_values()]
        if 0 in shape or not _single_use(inner.result):
            return
        merged = coreml.ReshapeOp.build(
            operands=[inner.x],
            properties={"shape": DenseArrayBase.from_list(i64, shape)},
            result_types=[op.result.type],
        )
        merged.location = op.location
        rewriter.replace_op(op, merged)
        rewriter.erase_op(inner)


def _perm(op: coreml.TransposeOp) -> tuple[int, ...]:
    return tuple(int(p) for p in op.perm.get_values())


class MergeTransposes(RewritePattern):
    """transpose of a transpose, and an identity transpose."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: coreml.TransposeOp, rewriter: PatternRewriter, /) -> None:
        perm = _perm(op)
        if perm == tuple(range(len(perm))):
            rewriter.replace_op(op, [], [op.x])
            return
        inner = op.x.owner
        if not isinstance(inner, coreml.TransposeOp):
            return
        first = _perm(inner)
        composed = tuple(first[p] for p in perm)  # result dim i is x's dim first[perm[i]]
        if composed == tuple(range(len(composed))):
            rewriter.replace_op(op, [], [inner.x])
            _erase_if_dead(inner.result, rewriter)
            return
        if not _single_use(inner.result):
            return
        merged = coreml.TransposeOp.build(
            operands=[inner.x],
            properties={"perm": DenseArrayBase.from_list(i64, composed)},
            result_types=[op.result.type],
        )
        merged.location = op.location
        rewriter.replace_op(op, merged)
        rewriter.erase_op(inner)


class WholeSlice(RewritePattern):
    """A slice_by_index that takes all of its operand, in order."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: coreml.SliceByIndexOp, rewriter: PatternRewriter, /) -> None:
        if not _same_static(op.x, op.result):
            return
        index = op.index()
        dims = shape_of(op.x)
        if len(index) != len(dims):
            return
        for part, dim in zip(index, dims, strict=True):
            if not isinstance(part, slice) or range(*part.indices(dim)) != range(dim):
                return
        rewriter.replace_op(op, [], [op.x])


def _plain_ranges(op: coreml.SliceByIndexOp) -> list[range] | None:
    """The elements a slice takes, per dim, when it squeezes nothing, every dim is
    known and every stride is positive (else None)."""
    if not _static(op.x) or not _static(op.result):
        return None
    dims = shape_of(op.x)
    index = op.index()
    if len(index) != len(dims):
        return None
    ranges = []
    for part, dim in zip(index, dims, strict=True):
        if not isinstance(part, slice):
            return None
        taken = range(*part.indices(dim))
        if taken.step <= 0 or not taken:
            return None
        ranges.append(taken)
    return ranges


class MergeSlices(RewritePattern):
    """A slice of a slice (positive strides, nothing squeezed) as one slice: per
    dim, the outer one takes elements of the inner one's range, itself a range."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: coreml.SliceByIndexOp, rewriter: PatternRewriter, /) -> None:
        inner = op.x.owner
        if not isinstance(inner, coreml.SliceByIndexOp) or not _single_use(inner.result):
            return
        outer_ranges, inner_ranges = _plain_ranges(op), _plain_ranges(inner)
        if outer_ranges is None or inner_ranges is None:
            return
        taken = [
            i[o.start : o.stop : o.step] for i, o in zip(inner_ranges, outer_ranges, strict=True)
        ]
        merged = coreml.SliceByIndexOp.build(
            operands=[inner.x],
            properties={
                "begin": DenseArrayBase.from_list(i64, [t.start for t in taken]),
                "end": DenseArrayBase.from_list(i64, [t[-1] + 1 for t in taken]),
                "stride": DenseArrayBase.from_list(i64, [t.step for t in taken]),
            },
            result_types=[op.result.type],
        )
        merged.location = op.location
        rewriter.replace_op(op, merged)
        rewriter.erase_op(inner)


class ReshapeConstant(RewritePattern):
    """A reshape of a `const` that nothing else reads, as the const of that shape
    (the same bytes). Not when a quantize / dequantize reads the reshape: coreml-fp16
    keeps the consts those read alone in fp32, and the value must stay what it was."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: coreml.ReshapeOp, rewriter: PatternRewriter, /) -> None:
        const = op.x.owner
        if not isinstance(const, coreml.ConstOp) or not _single_use(const.result):
            return
        if not _static(op.result) or any(
            isinstance(use.operation, coreml.QuantizeOp | coreml.DequantizeOp)
            for use in op.result.uses
        ):
            return
        type = op.result.type
        assert isinstance(type, TensorType)
        elem = type.get_element_type()
        if not (
            isinstance(elem, Float16Type | Float32Type)
            or (isinstance(elem, IntegerType) and elem.width.data in (8, 16, 32))
        ):
            return  # sub-byte and other packed types keep their const as it is
        array = const_array(const).reshape(shape_of(op.result))
        new = coreml.ConstOp.build(
            properties={"value": make_resource("reshaped", array, type, weights_of(const))},
            result_types=[type],
        )
        new.location = const.location
        rewriter.replace_op(op, new)
        rewriter.erase_op(const)


def patterns() -> list[RewritePattern]:
    return [MergeReshapes(), MergeTransposes(), WholeSlice(), MergeSlices(), ReshapeConstant()]


@dataclass(frozen=True)
class CoremlCanonicalizePass(ModulePass):
    """Merge reshapes, cancel transposes, drop whole slices (module docstring)."""

    name = "coreml-canonicalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        walker = PatternRewriteWalker(
            GreedyRewritePatternApplier(patterns()), apply_recursively=True
        )
        walker.rewrite_module(op)


__all__ = ["CoremlCanonicalizePass", "patterns"]
