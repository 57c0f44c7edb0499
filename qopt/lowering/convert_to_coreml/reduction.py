"""convert-to-coreml rules for the aten reduction family
(qopt/dialects/aten/reduction.py): reduce_*, softmax, log_softmax, argmax/argmin."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType, i1, i32
from xdsl.ir import SSAValue

from qopt.dialects import coreml
from qopt.dialects.aten import reduction
from qopt.dialects.tensors import elem_of, shape_of
from qopt.errors import QoptError, where
from qopt.lowering.convert_to_coreml.lowering import (
    Lowering,
    Rule,
    RuleTable,
    bool_attr,
    float_attr,
    int_attr,
    ints,
    mil_tensor,
)

RULES = RuleTable()


def _reduce(cls: type[coreml.CoremlOp]) -> Rule[reduction.ReduceOp]:
    """MIL `cls` (reduce_mean, reduce_sum ...) over the op's dims (all without)."""

    def lower(lw: Lowering, op: reduction.ReduceOp) -> Sequence[SSAValue]:
        x = op.input
        axes = op.axes()  # normalised; none for a rank-0 input (torch's dim 0 / -1 of it)
        out = mil_tensor(op.results[0].type)
        elem = out.get_element_type()
        if not axes:
            return [lw.as_elem(x, elem)]
        keep = op.keepdim
        keep_dims = keep is not None and bool(keep.value.data)
        props = {"axes": ints(axes), "keep_dims": bool_attr(keep_dims)}
        if elem == i1:  # amax / amin of bools: MIL reduces fp16 / fp32 / int32
            as_int = lw.build(cls, [lw.as_elem(x, i32)], TensorType(i32, out.get_shape()), **props)
            return [lw.as_elem(as_int, i1)]
        return [lw.build(cls, [lw.as_elem(x, elem)], out, **props)]  # sum of bools: int

    return lower


RULES.add(reduction.MeanOp, _reduce(coreml.ReduceMeanOp))
RULES.add(reduction.SumOp, _reduce(coreml.ReduceSumOp))
RULES.add(reduction.AmaxOp, _reduce(coreml.ReduceMaxOp))
RULES.add(reduction.AminOp, _reduce(coreml.ReduceMinOp))


@RULES(reduction.SoftmaxOp)
def _softmax(lw: Lowering, op: reduction.SoftmaxOp) -> Sequence[SSAValue]:
    """MIL `softmax`; `_safe_softmax` (`safe`) gives 0 where the slice is all -inf
    (NaN in MIL, as in torch's softmax): a `select` on `reduce_max == -inf`."""
    x, out = op.input, mil_tensor(op.result.type)
    dims = shape_of(x)
    axis = op.dim.value.data % len(dims)
    y = lw.build(coreml.SoftmaxOp, [x], out, axis=int_attr(axis))
    if op.safe is None or not op.safe.value.data:
        return [y]
    kept = [1 if i == axis else d for i, d in enumerate(dims)]
    top = lw.build(
        coreml.ReduceMaxOp, [x], TensorType(elem_of(x), kept), axes=ints([axis]),
        keep_dims=bool_attr(True),
    )  # fmt: skip
    dead = lw.build(coreml.EqualOp, [top, lw.scalar(-math.inf, top)], TensorType(i1, kept))
    return [lw.build(coreml.SelectOp, [dead, lw.scalar(0.0, y), y], out)]


@RULES(reduction.LogSoftmaxOp)
def _log_softmax(lw: Lowering, op: reduction.LogSoftmaxOp) -> Sequence[SSAValue]:
    """`(x - max) - log(sum(exp(x - max)))` along dim, torch's order (MIL has no
    log_softmax, and `log(softmax(x))` underflows to -inf for large negative
    logits): reduce_max, sub, exp, reduce_sum, log (epsilon 0), sub."""
    x, out = lw.float_input(op)
    dims = shape_of(x)
    axis = op.dim.value.data % len(dims)
    kept = TensorType(out.get_element_type(), [1 if i == axis else d for i, d in enumerate(dims)])
    axes, keep = ints([axis]), bool_attr(True)
    top = lw.build(coreml.ReduceMaxOp, [x], kept, axes=axes, keep_dims=keep)
    shifted = lw.build(coreml.SubOp, [x, top], out)
    exp = lw.build(coreml.ExpOp, [shifted], out)
    total = lw.build(coreml.ReduceSumOp, [exp], kept, axes=axes, keep_dims=keep)
    log_total = lw.build(coreml.LogOp, [total], kept, epsilon=float_attr(0.0))
    return [lw.build(coreml.SubOp, [shifted, log_total], out)]


@RULES(reduction.ArgmaxOp, reduction.ArgminOp)
def _arg_extreme(lw: Lowering, op: reduction.ArgmaxOp | reduction.ArgminOp) -> Sequence[SSAValue]:
    """torch's argmax / argmin: the first index of the extreme, and the first NaN
    where a slice has one. MIL `reduce_argmax` / `reduce_argmin` leave ties
    unspecified ("the identity of the return value is not guaranteed"), so the
    index is composed: `hit = x == reduce_max(x)` (a NaN slice: `hit = x != x`),
    then `reduce_min(select(hit, iota, n))` over the dim, in int32 (the int64
    result is int32 in MIL, as every integer result). No dim: the flattened
    input."""
    x = op.input
    name = coreml.mil_dtype_name(elem_of(x))
    if name not in coreml.FI:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: {op.name.removeprefix('aten.')} of a {name} "
            "tensor has no CoreML lowering (MIL reductions take fp16, fp32 or int32): cast "
            "the input first"
        )
    out = mil_tensor(op.result.type)
    dims = shape_of(x)
    keep = op.keepdim is not None and bool(op.keepdim.value.data)
    if not dims or math.prod(dims) == 0:
        raise QoptError(
            f"convert-to-coreml: {where(op)}: {op.name.removeprefix('aten.')} of a tensor "
            f"of shape {list(dims)} is not supported (Core ML reduces non-empty tensors of "
            "rank 1 or more): reshape the input to 1-D first"
        )
    if op.dim is None:
        numel = math.prod(dims)
        if len(dims) != 1:
            x = lw.build(
                coreml.ReshapeOp, [x], TensorType(elem_of(x), [numel]), shape=ints([numel])
            )
        dims, axis = (numel,), 0
    else:
        axis = op.dim.value.data % len(dims)
    elem = elem_of(x)
    n = dims[axis]
    kept = [1 if i == axis else d for i, d in enumerate(dims)]
    axes = ints([axis])
    flags = TensorType(i1, dims)
    reduce = coreml.ReduceMaxOp if isinstance(op, reduction.ArgmaxOp) else coreml.ReduceMinOp
    extreme = lw.build(reduce, [x], TensorType(elem, kept), axes=axes, keep_dims=bool_attr(True))
    hit = lw.build(coreml.EqualOp, [x, extreme], flags)
    if coreml.mil_dtype_name(elem) != "int32":
        nan = lw.build(coreml.NotEqualOp, [x, x], flags)
        nan_count = lw.as_elem(nan, i32)
        has_nan = lw.build(
            coreml.ReduceMaxOp,
            [nan_count],
            TensorType(i32, kept),
            axes=axes,
            keep_dims=bool_attr(True),
        )
        hit = lw.build(coreml.SelectOp, [lw.as_elem(has_nan, i1), nan, hit], flags)
    iota_shape = [1] * len(dims)
    iota_shape[axis] = n
    iota = lw.const(np.arange(n, dtype=np.int32).reshape(iota_shape), i32, "arg_index")
    iota = lw.broadcast_to(op, iota, dims)
    missing = lw.const(np.asarray(n, np.int32), i32, "arg_size")
    candidates = lw.build(coreml.SelectOp, [hit, iota, missing], TensorType(i32, dims))
    result_shape = tuple(out.get_shape())
    if op.dim is not None or not keep:
        reduced = lw.build(
            coreml.ReduceMinOp, [candidates], out, axes=axes, keep_dims=bool_attr(keep)
        )
        return [reduced]
    first = lw.build(
        coreml.ReduceMinOp, [candidates], TensorType(i32, [1]), axes=axes, keep_dims=bool_attr(True)
    )
    return [lw.build(coreml.ReshapeOp, [first], out, shape=ints(result_shape))]


@RULES(reduction.VarOp, reduction.StdOp)
def _moment(lw: Lowering, op: reduction.VarOp | reduction.StdOp) -> Sequence[SSAValue]:
    """`sum((x - mean)^2) / max(0, N - correction)` (the interpreter's two-pass
    order): reduce_mean (kept dims), sub, mul, reduce_sum, real_div; std adds sqrt."""
    x, out = lw.float_input(op)
    elem = out.get_element_type()
    dims = shape_of(x)
    axes = op.axes()
    kept = TensorType(elem, [1 if i in axes else d for i, d in enumerate(dims)])
    axes_attr = ints(sorted(axes))
    mean = lw.build(coreml.ReduceMeanOp, [x], kept, axes=axes_attr, keep_dims=bool_attr(True))
    centred = lw.build(coreml.SubOp, [x, mean], x.type)
    squares = lw.build(coreml.MulOp, [centred, centred], x.type)
    keep = op.keepdim is not None and bool(op.keepdim.value.data)
    total = lw.build(coreml.ReduceSumOp, [squares], out, axes=axes_attr, keep_dims=bool_attr(keep))
    count = math.prod(dims[a] for a in axes)
    denom = max(0.0, count - reduction.correction_of(op))
    var = lw.build(coreml.RealDivOp, [total, lw.scalar(denom, total)], out)
    return [lw.build(coreml.SqrtOp, [var], out) if isinstance(op, reduction.StdOp) else var]
