"""`coreml` shape and indexing ops: `reshape`, `transpose`, `concat`, `tile`,
`slice_by_index`, `expand_dims`, `squeeze`, `gather`, `scatter`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
)
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)

from qopt.dialects.coreml.base import ANY, FI, CoremlOp, F
from qopt.dialects.tensors import elem_of, shape_of


@irdl_op_definition
class ReshapeOp(CoremlOp):
    """Row-major reshape to `shape`."""

    name = "coreml.reshape"
    x = operand_def(TensorType)
    shape = prop_def(DenseArrayBase[IntegerType])
    result = result_def(TensorType)
    MIL_PARAMS: ClassVar[dict[str, str]] = {"shape": "ints"}
    INPUT_TYPES: ClassVar[frozenset[str]] = ANY

    def check(self) -> None:
        """`shape` is the result's shape, where MIL's `0` copies x's dim (x of the
        same rank) and one `-1` takes what the others leave (coremltools'
        `reshape`); the result has x's element count and type."""
        x = shape_of(self.x)
        shape = [int(d) for d in self.shape.get_values()]
        if shape.count(-1) > 1 or any(d < -1 for d in shape):
            raise self.fail(f"shape {shape} may hold one -1 and no other negative dim")
        if 0 in shape:
            if len(shape) != len(x):
                raise self.fail(f"shape {shape} copies dims (0) of x {list(x)} of another rank")
            shape = [x[i] if d == 0 else d for i, d in enumerate(shape)]
        numel = int(np.prod(x, dtype=np.int64))
        if -1 in shape:
            rest = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
            if rest == 0 or numel % rest:
                raise self.fail(f"reshape must keep the number of elements ({numel}): {shape}")
            shape[shape.index(-1)] = numel // rest
        if numel != int(np.prod(shape, dtype=np.int64)):
            raise self.fail(f"reshape must keep the number of elements ({numel}): {shape}")
        self.check_result(shape, elem_of(self.x))


@irdl_op_definition
class TransposeOp(CoremlOp):
    name = "coreml.transpose"
    x = operand_def(TensorType)
    perm = prop_def(DenseArrayBase[IntegerType])
    result = result_def(TensorType)
    MIL_PARAMS: ClassVar[dict[str, str]] = {"perm": "ints"}
    INPUT_TYPES: ClassVar[frozenset[str]] = ANY

    def check(self) -> None:
        x = shape_of(self.x)
        perm = tuple(int(p) for p in self.perm.get_values())
        if sorted(perm) != list(range(len(x))):
            raise self.fail(f"perm {list(perm)} is not a permutation of the input's dims")
        self.check_result(tuple(x[p] for p in perm), elem_of(self.x))


@irdl_op_definition
class ConcatOp(CoremlOp):
    name = "coreml.concat"
    values = var_operand_def(TensorType)
    axis = prop_def(IntegerAttr)
    interleave = prop_def(IntegerAttr)
    result = result_def(TensorType)
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("values",)
    MIL_PARAMS: ClassVar[dict[str, str]] = {"axis": "int", "interleave": "bool"}
    INPUT_TYPES: ClassVar[frozenset[str]] = ANY

    def check(self) -> None:
        """values: one or more tensors of one type and rank >= 1, equal but on
        `axis` (equal everywhere with `interleave`); the result has their type and
        the sum of their `axis` dims (coremltools' `concat`)."""
        if not self.values:
            raise self.fail("values must hold at least one tensor")
        shapes = [shape_of(v) for v in self.values]
        first = shapes[0]
        if not first or any(len(s) != len(first) for s in shapes):
            raise self.fail(
                f"values must have one rank of at least 1, got {[list(s) for s in shapes]}"
            )
        elem = self.same_elem([(f"values[{i}]", v) for i, v in enumerate(self.values)])
        axis = self.check_axis(self.axis.value.data, len(first))
        interleave = bool(self.interleave.value.data)
        for s in shapes[1:]:
            if any(
                a != b
                for i, (a, b) in enumerate(zip(s, first, strict=True))
                if interleave or i != axis
            ):
                what = "the same shape with interleave" if interleave else "equal dims off axis"
                raise self.fail(f"values must have {what}, got {[list(s) for s in shapes]}")
        out = list(first)
        out[axis] = sum(s[axis] for s in shapes)
        self.check_result(out, elem)


@irdl_op_definition
class TileOp(CoremlOp):
    """`numpy.tile(x, reps)`: dim i repeated `reps[i]` times (`reps` has one entry
    per dim of x, each at least 1). x is fp16, fp32, int32 or bool (every opset
    up to iOS18): coremltools' `iOS15.tensor_operation.tile`.
    """

    name = "coreml.tile"
    x = operand_def(TensorType)
    reps = prop_def(DenseArrayBase[IntegerType])
    result = result_def(TensorType)
    MIL_PARAMS: ClassVar[dict[str, str]] = {"reps": "ints"}
    INPUT_TYPES: ClassVar[frozenset[str]] = FI | {"bool"}

    def check(self) -> None:
        x = shape_of(self.x)
        reps = tuple(self.reps.get_values())
        if len(reps) != len(x) or not reps:
            raise self.fail(f"reps must have one entry per dim of x (rank {len(x)})")
        if any(r < 1 for r in reps):
            raise self.fail(f"reps {list(reps)} must all be at least 1")
        out = tuple(d * r for d, r in zip(x, reps, strict=True))
        if shape_of(self.result) != out or elem_of(self.result) != elem_of(self.x):
            raise self.fail(f"result must have shape {list(out)} and the element type of x")


@irdl_op_definition
class PadOp(CoremlOp):
    """`pad(x, pad, mode="constant", constant_val)`: the last N dims of x padded by
    `pad = [begin_0, end_0, ..., begin_{N-1}, end_{N-1}]` (dim D-N first), each
    amount at least 0, with `constant_val`. x is fp16 or fp32 (coremltools'
    `iOS15.tensor_operation.pad`; qopt emits the constant mode only)."""

    name = "coreml.pad"
    x = operand_def(TensorType)
    pad = prop_def(DenseArrayBase[IntegerType])
    mode = prop_def(StringAttr)
    constant_val = prop_def(FloatAttr)
    result = result_def(TensorType)
    MIL_PARAMS: ClassVar[dict[str, str]] = {
        "pad": "ints",
        "mode": "str",
        "constant_val": "float",
    }
    INPUT_TYPES: ClassVar[frozenset[str]] = F

    def check(self) -> None:
        x = shape_of(self.x)
        pad = tuple(self.pad.get_values())
        if self.mode.data != "constant":
            raise self.fail(f"mode must be 'constant' (qopt's), got '{self.mode.data}'")
        if len(pad) % 2 or not 0 < len(pad) <= 2 * len(x):
            raise self.fail(f"pad must hold 2 amounts per padded dim, at most {2 * len(x)}")
        if any(p < 0 for p in pad):
            raise self.fail(f"pad amounts {list(pad)} must be at least 0")
        first = len(x) - len(pad) // 2
        out = list(x)
        for i in range(len(pad) // 2):
            out[first + i] += pad[2 * i] + pad[2 * i + 1]
        if shape_of(self.result) != tuple(out) or elem_of(self.result) != elem_of(self.x):
            raise self.fail(f"result must have shape {out} and the element type of x")


def _mask(attr: DenseArrayBase[IntegerType] | None, rank: int) -> tuple[bool, ...]:
    if attr is None:
        return (False,) * rank
    return tuple(bool(v) for v in attr.get_values())


def slice_by_index_indices(
    shape: Sequence[int],
    begin: Sequence[int],
    end: Sequence[int],
    stride: Sequence[int],
    begin_mask: Sequence[bool],
    end_mask: Sequence[bool],
    squeeze_mask: Sequence[bool],
) -> tuple[tuple[slice | int, ...], tuple[int, ...]]:
    """MIL `slice_by_index` as a numpy index and the result shape.

    Per axis i: `begin_mask[i]` ignores `begin[i]` (slice from the start, or from
    the end for a negative stride), `end_mask[i]` ignores `end[i]` (to the end),
    `squeeze_mask[i]` takes the single element at `begin[i]` and removes the
    axis; negative bounds count from the end (coremltools'
    `solve_slice_by_index_slice`, numpy's rules).
    """
    index: list[slice | int] = []
    out: list[int] = []
    for size, b, e, s, bm, em, sq in zip(
        shape, begin, end, stride, begin_mask, end_mask, squeeze_mask, strict=True
    ):
        if sq:
            b = 0 if bm else b
            if not -size <= b < size:
                raise ValueError(f"squeezed index {b} is out of range for a dim of size {size}")
            index.append(b)
            continue
        if s == 0:
            raise ValueError("stride must not be 0")
        piece = slice(None if bm else b, None if em else e, s)
        index.append(piece)
        out.append(len(range(*piece.indices(size))))
    return tuple(index), tuple(out)


@irdl_op_definition
class SliceByIndexOp(CoremlOp):
    """`x[begin:end:stride]` per dimension, with MIL's masks: `begin_mask[i]`
    ignores `begin[i]`, `end_mask[i]` ignores `end[i]`, `squeeze_mask[i]` takes
    the element at `begin[i]` and removes the axis (absent masks: all false)."""

    name = "coreml.slice_by_index"
    x = operand_def(TensorType)
    begin = prop_def(DenseArrayBase[IntegerType])
    end = prop_def(DenseArrayBase[IntegerType])
    stride = prop_def(DenseArrayBase[IntegerType])
    begin_mask = opt_prop_def(DenseArrayBase[IntegerType])
    end_mask = opt_prop_def(DenseArrayBase[IntegerType])
    squeeze_mask = opt_prop_def(DenseArrayBase[IntegerType])
    result = result_def(TensorType)
    MIL_PARAMS: ClassVar[dict[str, str]] = {
        "begin": "ints",
        "end": "ints",
        "stride": "ints",
        "begin_mask": "bools",
        "end_mask": "bools",
        "squeeze_mask": "bools",
    }
    INPUT_TYPES: ClassVar[frozenset[str]] = ANY

    def masks(self) -> tuple[tuple[bool, ...], tuple[bool, ...], tuple[bool, ...]]:
        rank = len(shape_of(self.x))
        return (
            _mask(self.begin_mask, rank),
            _mask(self.end_mask, rank),
            _mask(self.squeeze_mask, rank),
        )

    def index(self) -> tuple[slice | int, ...]:
        index, _ = slice_by_index_indices(
            shape_of(self.x),
            tuple(self.begin.get_values()),
            tuple(self.end.get_values()),
            tuple(self.stride.get_values()),
            *self.masks(),
        )
        return index

    def check(self) -> None:
        if self.opset() < 17:
            self.require(self.x, "x", FI | {"bool"})
        shape = shape_of(self.x)
        params = {
            "begin": self.begin,
            "end": self.end,
            "stride": self.stride,
            "begin_mask": self.begin_mask,
            "end_mask": self.end_mask,
            "squeeze_mask": self.squeeze_mask,
        }
        for key, attr in params.items():
            if attr is not None and len(attr.get_values()) != len(shape):
                raise self.fail(f"{key} must have one entry per dim of x (rank {len(shape)})")
        try:
            _, out = slice_by_index_indices(
                shape,
                tuple(self.begin.get_values()),
                tuple(self.end.get_values()),
                tuple(self.stride.get_values()),
                *self.masks(),
            )
        except ValueError as e:
            raise self.fail(str(e)) from None
        if shape_of(self.result) != out or elem_of(self.result) != elem_of(self.x):
            raise self.fail(f"result must have shape {list(out)} and the element type of x")


@irdl_op_definition
class ExpandDimsOp(CoremlOp):
    """Insert a dim of size 1 at each of `axes`, which index the result (rank
    `rank(x) + len(axes)`; negative from its end; none twice)."""

    name = "coreml.expand_dims"
    x = operand_def(TensorType)
    axes = prop_def(DenseArrayBase[IntegerType])
    result = result_def(TensorType)
    MIL_PARAMS: ClassVar[dict[str, str]] = {"axes": "ints"}
    INPUT_TYPES: ClassVar[frozenset[str]] = ANY

    def check(self) -> None:
        out = list(shape_of(self.x))
        values = self.axes.get_values()
        for axis in sorted(self.check_axes(values, len(out) + len(values))):
            out.insert(axis, 1)
        self.check_result(out, elem_of(self.x))


@irdl_op_definition
class SqueezeOp(CoremlOp):
    """Remove the dims of size 1 among `axes` (in [-rank, rank), none twice); a
    named dim of another size stays, as in coremltools' `squeeze` (the reader
    names every dim when a package omits `axes`, which squeezes all size-1 dims)."""

    name = "coreml.squeeze"
    x = operand_def(TensorType)
    axes = prop_def(DenseArrayBase[IntegerType])
    result = result_def(TensorType)
    MIL_PARAMS: ClassVar[dict[str, str]] = {"axes": "ints"}
    INPUT_TYPES: ClassVar[frozenset[str]] = ANY

    def check(self) -> None:
        x = shape_of(self.x)
        axes = self.check_axes(self.axes.get_values(), len(x))
        out = [d for i, d in enumerate(x) if not (i in axes and d == 1)]
        self.check_result(out, elem_of(self.x))


@irdl_op_definition
class GatherOp(CoremlOp):
    """`out = take(x, indices, axis)`; from iOS17 negative indices are out of bounds."""

    name = "coreml.gather"
    x = operand_def(TensorType)
    indices = operand_def(TensorType)
    axis = prop_def(IntegerAttr)
    result = result_def(TensorType)
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("x", "indices")
    MIL_PARAMS: ClassVar[dict[str, str]] = {"axis": "int"}
    INPUT_TYPES: ClassVar[frozenset[str]] = ANY

    def check(self) -> None:
        if self.opset() < 17:
            self.require(self.x, "x", FI)
        else:
            self.require(self.x, "x", FI | {"int8", "uint8", "int16", "uint16"})
        allowed: set[str] = {"int32"} | ({"int16", "uint16"} if self.opset() >= 16 else set())
        if self.opset() >= 17:
            allowed |= {"int8", "uint8"}
        self.require(self.indices, "indices", frozenset(allowed))
        x, indices = shape_of(self.x), shape_of(self.indices)
        axis = self.axis.value.data
        if not -len(x) <= axis < len(x):
            raise self.fail(f"axis {axis} out of range for rank {len(x)}")
        axis %= len(x)
        out = (*x[:axis], *indices, *x[axis + 1 :])
        if shape_of(self.result) != out or elem_of(self.result) != elem_of(self.x):
            raise self.fail(f"result must have shape {list(out)} and the element type of x")


@irdl_op_definition
class GatherAlongAxisOp(CoremlOp):
    """`out = take_along_axis(x, indices, axis)`: `out[.., i, ..] = x[.., indices[.., i,
    ..], ..]` along `axis` (torch.gather); indices int32 of x's rank and x's sizes in
    every other dim, the result indices' shape and x's type; x fp16, fp32 or int32.
    From iOS17 negative indices are out of bounds."""

    name = "coreml.gather_along_axis"
    x = operand_def(TensorType)
    indices = operand_def(TensorType)
    axis = prop_def(IntegerAttr)
    result = result_def(TensorType)
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("x", "indices")
    MIL_PARAMS: ClassVar[dict[str, str]] = {"axis": "int"}
    INPUT_TYPES: ClassVar[frozenset[str]] = ANY

    def check(self) -> None:
        self.require(self.x, "x", FI)
        self.require(self.indices, "indices", frozenset({"int32"}))
        x, indices = shape_of(self.x), shape_of(self.indices)
        if len(x) != len(indices):
            raise self.fail(f"indices must have x's rank {len(x)}, got {len(indices)}")
        axis = self.check_axis(self.axis.value.data, len(x))
        for d, (a, b) in enumerate(zip(x, indices, strict=True)):
            if d != axis and a != b:
                raise self.fail(f"indices must have x's size {a} in dim {d}, got {b}")
        self.check_result(indices, elem_of(self.x))


SCATTER_MODES = ("update", "add", "sub", "mul", "div", "max", "min")


@irdl_op_definition
class ScatterOp(CoremlOp):
    """`data` with its slices along `axis` at `indices` combined with those of
    `updates` by `mode` (`update` replaces them): for each i,
    `out[..., indices[i], ...] = updates[..., i, ...]` (MIL leaves the order of
    repeated indices unspecified; qopt's interpreter applies them in index
    order, so the last write wins for `update`). `indices` is a 1-D int32
    tensor, `updates` has data's shape with `len(indices)` on `axis`; data and
    updates are fp16, fp32 or int32. Before iOS17 a negative index counts from
    the end; from iOS17 it is out of bounds (coremltools' `iOS15` / `iOS17`
    `scatter_gather.scatter`).
    """

    name = "coreml.scatter"
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    updates = operand_def(TensorType)
    axis = prop_def(IntegerAttr)
    mode = prop_def(StringAttr)
    result = result_def(TensorType)
    MIL_OPERANDS: ClassVar[tuple[str, ...]] = ("data", "indices", "updates")
    MIL_PARAMS: ClassVar[dict[str, str]] = {"axis": "int", "mode": "str"}
    INPUT_TYPES: ClassVar[frozenset[str]] = FI

    def check(self) -> None:
        self.require(self.indices, "indices", frozenset({"int32"}))
        elem = self.same_elem((("data", self.data), ("updates", self.updates)))
        data, indices = shape_of(self.data), shape_of(self.indices)
        if len(indices) != 1:
            raise self.fail(f"indices must be 1-D, got shape {list(indices)}")
        if not data:
            raise self.fail("data must have rank 1 or more")
        axis = self.check_axis(self.axis.value.data, len(data))
        want = (*data[:axis], *indices, *data[axis + 1 :])
        if shape_of(self.updates) != want:
            raise self.fail(
                f"updates must have shape {list(want)} (data's with the indices on axis "
                f"{axis}), got {list(shape_of(self.updates))}"
            )
        if self.mode.data not in SCATTER_MODES:
            raise self.fail(f"mode must be one of {', '.join(SCATTER_MODES)}, got {self.mode.data}")
        self.check_result(data, elem)


#: This family's ops, in the order the dialect lists them.
OPS: tuple[type[CoremlOp], ...] = (
    ReshapeOp,
    TransposeOp,
    ConcatOp,
    TileOp,
    PadOp,
    SliceByIndexOp,
    ExpandDimsOp,
    SqueezeOp,
    GatherOp,
    GatherAlongAxisOp,
    ScatterOp,
)
