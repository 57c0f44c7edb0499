"""Layout ops between a dequantize and a quantize with the same parameters move into
the integer domain: `Q(layout(DQ(q, P)), P)` -> `layout(q)`.

PT2E quantizers annotate the layout ops that share their input's observer (XNNPACK's:
view / reshape / flatten, permute, squeeze, slice; `cat` of inputs quantized alike) and
leave a float island `DQ -> layout -> Q` with one set of parameters around each. The
ops this pass moves only move, copy or drop elements (`view`, `unsqueeze`, `squeeze`,
`permute`, `expand`, `slice`, `clone`, `cat` of equally quantized inputs) or add
elements equal to 0.0 (`constant_pad_nd` with value 0: a TF "same" `ZeroPad2d`),
which quantizes to the zero point exactly; on integers the pad value is the zero
point. Every other value reaches the quantize unchanged, and `quantize(dequantize(q))`
with the same static parameters is `q` exactly (fold.py's proof, checked by
`round_trip`). So the rewritten program computes the same integers, with one
quantize fewer and no float copy; the consumer of the quantize (a fused conv or
linear) then reads the integers directly.

A chain is rewritten only whole: every op on it has the quantize (through the
chain) as its only user, and every leaf is a dequantize `round_trip` accepts
against this quantize, of a run-time value (a dequantized constant, a stored table,
stays as it is: on integers fold-constants would store its slices and views as more
constants next to it).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import FloatAttr, TensorType, f64
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from qopt.dialects import quant
from qopt.dialects.aten import elementwise as ew
from qopt.dialects.aten import shape as sh
from qopt.dialects.tensors import elem_of, shape_of
from qopt.lowering.fuse_quant.fold import round_trip
from qopt.lowering.fuse_quant.match import Reject, single_use, static_params
from qopt.lowering.fuse_quant.report import FusionLog

MOVES = (
    sh.ViewOp,
    sh.UnsqueezeOp,
    sh.SqueezeOp,
    sh.PermuteOp,
    sh.ExpandOp,
    sh.SliceOp,
    ew.CloneOp,
)
"""Single-input ops that only move, copy or drop elements."""

MAX_DEPTH = 16
"""Longest chain looked through (the patterns seen have 1 to 3 ops)."""


@dataclass
class _Leaf:
    dq: quant.DequantizeOp


@dataclass
class _Node:
    op: Operation
    inputs: list[_Leaf | _Node]


def _plan(value: SSAValue, q: quant.QuantizeOp, depth: int = 0) -> _Leaf | _Node | None:
    """How `value` is made from dequantized integers by layout ops alone (None when
    it is not, or not exactly)."""
    owner = value.owner
    if isinstance(owner, quant.DequantizeOp):
        if isinstance(owner.input.owner, ConstantOp):
            return None  # a stored table: its layout ops would fold into more constants
        return _Leaf(owner) if isinstance(round_trip(owner, q), quant.DequantizeOp) else None
    if depth >= MAX_DEPTH or not isinstance(owner, Operation) or single_use(value) is None:
        return None
    if isinstance(owner, sh.ConstantPadNdOp):
        if float(owner.value.value.data) != 0.0:
            return None
    elif isinstance(owner, sh.CatOp):
        if elem_of(owner.result) != elem_of(q.input):
            return None
    elif not isinstance(owner, MOVES):
        return None
    if any(elem_of(v) != elem_of(q.input) for v in owner.operands):
        return None  # a cast on the way (cat of mixed types): not a pure move
    inputs = [_plan(v, q, depth + 1) for v in owner.operands]
    if any(i is None for i in inputs):
        return None
    return _Node(owner, [i for i in inputs if i is not None])


def _build(plan: _Leaf | _Node, q: quant.QuantizeOp, rewriter: PatternRewriter) -> SSAValue:
    """The integer form of `plan`, inserted before `q`."""
    if isinstance(plan, _Leaf):
        return plan.dq.input
    operands = [_build(i, q, rewriter) for i in plan.inputs]
    op = plan.op
    result = TensorType(elem_of(q.output), shape_of(op.results[0]))
    properties = dict(op.properties)
    if isinstance(op, sh.ConstantPadNdOp):  # 0.0 quantizes to the zero point
        params = static_params(q)
        assert not isinstance(params, Reject)
        properties["value"] = FloatAttr(float(params.zero_point.data), f64)
    new = type(op).create(
        operands=operands,
        result_types=[result],
        properties=properties,
        attributes=dict(op.attributes),
    )
    new.location = op.location
    rewriter.insert_op(new, InsertPoint.before(q))
    return new.results[0]


def _erase(plan: _Leaf | _Node, rewriter: PatternRewriter) -> None:
    """Erase the float chain `plan` where nothing else uses it any more."""
    op: Operation = plan.dq if isinstance(plan, _Leaf) else plan.op
    if any(r.uses for r in op.results):
        return
    rewriter.erase_op(op)
    if isinstance(plan, _Node):
        for i in plan.inputs:
            _erase(i, rewriter)


class MoveLayoutToIntegers(RewritePattern):
    """Q(layout ops(DQ(q, P)), P) -> layout ops(q) (module docstring)."""

    def __init__(self, log: FusionLog):
        self.log = log

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: quant.QuantizeOp, rewriter: PatternRewriter, /) -> None:
        owner = op.input.owner
        if isinstance(owner, quant.DequantizeOp) or not isinstance(
            owner, (*MOVES, sh.ConstantPadNdOp, sh.CatOp)
        ):
            return  # a plain pair is fold.py's; anything else is not a layout chain
        plan = _plan(op.input, op)
        if plan is None:
            return
        value = _build(plan, op, rewriter)
        self.log.record(value, op.output)
        rewriter.replace_op(op, [], [value])
        _erase(plan, rewriter)


def patterns(log: FusionLog) -> list[RewritePattern]:
    return [MoveLayoutToIntegers(log)]
