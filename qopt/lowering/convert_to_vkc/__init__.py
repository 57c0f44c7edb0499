"""`convert-to-vkc`: aten + qfused + quant (the mid level) -> vkc kernel calls.

The pass rewrites the body of every function into straight-line vkc code, in
stages (each stage's invariant is what the next one relies on):

1. Constants. Each `arith.constant` maps to its value, a numpy array (a weight's
   blob, without a copy); it becomes a `vkc.constant` only where a kernel reads it.
   Folding what does not depend on the inputs (masks, rope tables, iota, weight
   dequantization, zero-size values) is the pass `fold-constants{target=vulkan}`
   (qopt/lowering/fold_constants.py) before this one, listed by qopt-vulkan and run by
   `prepare=true`: the conversion evaluates nothing at compile time.
2. Lowering, op by op (`get_rules`): each remaining op becomes one or more
   dispatches of the catalogue's kernels (qopt/kernels/): fused quantized ops onto
   their fused kernels with weights repacked by qopt/kernels/packing.py; float ops
   onto the generic kernels; views that keep the row-major order onto `vkc.view`,
   every other layout change (permute, transpose, slice, cat, expand) onto
   `copy_strided`; reductions over a dim other than the last through a
   transposing copy. An op without a rule is a QoptError naming the op, its
   location and what to do (every such op of the program, in one error), unless the
   option `fallback` is set: then such ops run on the host, by the reference
   interpreter, in `vkc.host_call` segments between the device's work (`host.py`);
   so does an op whose rule refuses its form (index_put with accumulate=True ...),
   the rule's partial work undone (`Lowering.checkpoint` / `rollback`).
   A kernel that indexes a table with values read from a
   buffer (gather_rows, the embeddings) gets its own status buffer per dispatch
   (`vkc.alloc {status, what = "'aten.embedding' at model.py:12"}`, added by
   `Lowering.dispatch`): an out-of-range index is an error naming that op at run
   time, never silent zeros. Every vkc op a rule builds carries the location of
   the op it lowers.
3. Program state (`state.py`): each `ml_program.global` the function reads or
   writes is a device buffer kept across calls (`vkc.state`); a KV-cache update
   (`global_load -> index_put/index_copy -> global_store`) scatters into it in
   place, any other store copies into it after the function's other dispatches.

A module with several functions (methods: `prefill` and `decode`) shares its kernel
symbols and, across functions, the blobs of constant buffers with the same words, so
each weight is stored once; every function names the same states.

What runs around the conversion is a pass of its own, each listed by `qopt-vulkan`
(qopt/lowering/pipelines.py), which runs this pass as `convert-to-vkc{prepare=false
schedule=false}`: before it `expand-dynamic-windows` (run-time windows as index ops),
`check-mid-level{target=vulkan}` (the unfused-pattern warning, the weights in the
compile report), `compose{target=vulkan}` (forms the kernels lack, in ops they
have) and `fold-constants{target=vulkan}` (every input-independent op evaluated), the
passes `preparation()` returns; after it `vkc-plan-buffers`
(qopt/lowering/vkc_plan_buffers.py) and `vkc-insert-barriers`
(qopt/lowering/vkc_insert_barriers.py). Run alone (`-p fuse-quant,convert-to-vkc`),
the pass does what the pipeline does around it, with the same code: option `prepare`
(default true) runs the preparation passes first, option `schedule` (default true)
plans the buffers of the functions it lowered and inserts their barriers.

Layout: `lowering.py` holds `Lowering` (the builder), `Buf`, `RuleTable` and the
kernel calls every family shares; one module per op family holds that family's
`RULES`, keyed and typed by op class: `views` (views, layout changes, gathers),
`elementwise`, `reductions` (reductions and normalisation), `linalg` (matmul,
conv, pooling), `attention`, `quant` (standalone quantization), `qfused` (the
fused quantized ops) and `state` (ml_program loads and stores). `get_rules`
merges them with a duplicate check.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from qopt.dialects import vkc
from qopt.dialects.queries import constant_array
from qopt.dialects.signature import refuse_dynamic
from qopt.dialects.tensors import dtype_of
from qopt.errors import QoptError, where
from qopt.lowering.analyses import CheckMidLevelPass
from qopt.lowering.compose import ComposePass
from qopt.lowering.convert_to_vkc import (
    attention,
    elementwise,
    linalg,
    qfused,
    quant,
    reductions,
    state,
    views,
)
from qopt.lowering.convert_to_vkc.host import (
    STATE_OPS,
    HostSegment,
    missing_rules_error,
    unsupported_ops,
)
from qopt.lowering.convert_to_vkc.lowering import (
    Buf,
    Lowering,
    Rules,
    RuleTable,
    abi_dtype,
    unsupported,
)
from qopt.lowering.dynamic_windows import ExpandDynamicWindowsPass
from qopt.lowering.fold_constants import FoldConstantsPass
from qopt.lowering.rules import merge_rules
from qopt.lowering.vkc_insert_barriers import insert_barriers
from qopt.lowering.vkc_plan_buffers import is_vkc_function, plan_function
from qopt.resources import require_weights

log = logging.getLogger("qopt.vkc")

FAMILIES = (views, elementwise, reductions, linalg, attention, quant, qfused, state)
"""The rule family modules, each with its `RULES` by op class."""


@functools.cache
def get_rules() -> Rules:
    """Every family's rules, merged (an op class ruled by two families is an error)."""
    return merge_rules("convert-to-vkc", (family.RULES for family in FAMILIES))


def lower_function(
    module: ModuleOp,
    function: func.FuncOp,
    shared_constants: dict[tuple[str, ...], Any] | None = None,
    fallback: bool = False,
) -> None:
    """Rewrite `function`'s body into vkc ops (in place) and put the kernel symbols it
    calls at the top of `module` (reusing those already there). `shared_constants`:
    constant blobs by content, shared with the module's other functions. `fallback`:
    ops without a rule run on the host (`vkc.host_call`, host.py) instead of being an
    error."""
    rules = get_rules()
    lowering = Lowering(module, shared_constants=shared_constants)
    for existing in module.ops:
        if isinstance(existing, vkc.KernelOp):
            key = (existing.kernel.data, tuple(sorted(existing.spec_values().items())))
            lowering.kernel_ops.setdefault(key, existing)
    block = function.body.block
    lowering.in_place = state.plan_in_place(block)
    for index, arg in enumerate(block.args):
        arg_type = arg.type
        assert isinstance(arg_type, TensorType)
        dtype = abi_dtype(arg)
        shape = tuple(arg_type.get_shape()) or (1,)
        if 0 in shape:
            raise QoptError(
                f"convert-to-vkc: input {index} of @{function.sym_name.data} has the "
                f"zero-size shape {list(shape)}; Vulkan buffers are never empty: "
                "export the program without the empty input"
            )
        op = vkc.InputOp(
            operands=[arg], result_types=[vkc.BufferType.get(shape, vkc.BINDING_DTYPES[dtype])]
        )
        op.location = function.location
        lowering.ops.append(op)
        lowering.values[arg] = Buf(op.result, shape, dtype)

    returned: Sequence[SSAValue] = ()
    segment = HostSegment(rules)
    for op in list(block.ops):
        if op in segment.taken:
            continue  # run earlier, in a host segment (HostSegment.flush's lookahead)
        if isinstance(op, func.ReturnOp):
            lowering.current = op
            segment.flush(lowering)
            returned = list(op.operands)
            break
        lowering.current = op
        if segment.ops and (
            isinstance(op, STATE_OPS) or op in lowering.in_place or segment.reads(op)
        ):
            if fallback and type(op) not in rules and not isinstance(op, STATE_OPS):
                segment.add(op)
                continue
            segment.flush(lowering)
            lowering.current = op
        if isinstance(op, arith.ConstantOp):
            lowering.values[op.result] = np.asarray(constant_array(op))
            continue
        fn = rules.get(type(op))
        if fn is None and fallback:
            segment.add(op)
            continue
        if fn is None:
            raise unsupported(
                op,
                "has no Vulkan lowering",
                "run fuse-quant first, rewrite the model without this op, or add a rule "
                "to a family of qopt/lowering/convert_to_vkc/",
            )
        if fallback and not isinstance(op, STATE_OPS) and op not in lowering.in_place:
            mark = lowering.checkpoint(op)
            try:
                results = fn(lowering, op)
            except QoptError as refusal:  # a form of the op without a kernel: the host
                lowering.rollback(mark)
                log.info("host fallback: %s", refusal)
                segment.add(op)
                continue
        elif isinstance(op, STATE_OPS) or op in lowering.in_place:
            results = fn(lowering, op)
        else:
            try:
                results = fn(lowering, op)
            except QoptError as refusal:
                text = str(refusal)
                if not text.startswith("convert-to-vkc:"):  # a helper's, without the op
                    text = f"convert-to-vkc: {where(op)}: {text}"
                raise QoptError(
                    f"{text}; or run it on the host with fallback=True (qopt-opt --host-fallback)"
                ) from None
        for result, value in zip(op.results, results, strict=True):
            wrong_type = isinstance(value, Buf) and (value.dtype == "f32") != (
                abi_dtype(result) == "f32"
            )
            if wrong_type and result.uses:
                # a rule whose kernel computes in f32 only, given integers (or the
                # reverse): its buffer would be read as the wrong type (an unread
                # result, max_pool2d's indices, is never read)
                raise unsupported(
                    op,
                    f"the Vulkan kernels compute it in {value.dtype}, not on "
                    f"{dtype_of(result)} tensors",
                    "cast the operands to float32 in the model",
                )
            lowering.values[result] = value

    results = [lowering.buffer(value) for value in returned]
    at_return = lowering.current
    results = state.finish(lowering, results)
    lowering.current = at_return
    outputs: list[SSAValue] = []
    for value, buf in zip(returned, results, strict=True):
        result_type = value.type
        assert isinstance(result_type, TensorType)
        out = vkc.OutputOp(operands=[buf.value], result_types=[result_type])
        lowering.emit(out)
        outputs.append(out.result)

    # Replace the body: new ops, then the return.
    old_ops = list(block.ops)
    for op in reversed(old_ops):
        op.detach()
    for op in lowering.ops:
        block.add_op(op)
    ret = func.ReturnOp(*outputs)
    if isinstance(lowering.current, func.ReturnOp):
        ret.location = lowering.current.location
    block.add_op(ret)
    for op in old_ops:
        op.drop_all_references()
    for op in old_ops:
        op.erase(safe_erase=False)

    # New kernel symbols at the top of the module, before the function.
    body = module.body.block
    first = body.first_op
    for kernel_op in lowering.kernel_ops.values():
        if kernel_op.parent is not None:
            continue  # a symbol another function added
        if first is None:
            body.add_op(kernel_op)
        else:
            body.insert_op_before(kernel_op, first)


@dataclass(frozen=True)
class ConvertToVkcPass(ModulePass):
    """Lower aten + qfused + quant to vkc kernel calls (see the module docstring)."""

    name = "convert-to-vkc"

    schedule: bool = True
    """Also plan the buffers of the functions this pass lowers and insert their
    barriers, as vkc-plan-buffers and vkc-insert-barriers do (`schedule=false`: leave
    both to those passes, as qopt-vulkan does)."""

    fallback: bool = False
    """Run ops without a Vulkan lowering on the host, by the reference interpreter
    (`vkc.host_call` segments between the device's work: host.py); without it such an
    op is an error (listing every one of the program, and naming this option)."""

    prepare: bool = True
    """First run the passes `preparation()` lists (expand-dynamic-windows,
    check-mid-level, compose, fold-constants{target=vulkan}), as qopt-vulkan does
    before this pass (`prepare=false`: convert only; the pipeline runs them as passes
    of their own)."""

    @staticmethod
    def preparation() -> list[ModulePass]:
        """The passes that run before the conversion, in order: qopt-vulkan lists them,
        and `prepare=true` runs them."""
        return [
            ExpandDynamicWindowsPass(),
            CheckMidLevelPass(target="vulkan"),
            ComposePass(target="vulkan"),
            FoldConstantsPass(target="vulkan"),
        ]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        require_weights(op, self.name)
        if self.prepare:
            for before in self.preparation():
                before.apply(ctx, op)
        refuse_dynamic(op, "convert-to-vkc")
        functions = [
            f for f in op.ops if isinstance(f, func.FuncOp) and not is_vkc_function(f)
        ]  # the others are at the vkc level already
        if not self.fallback:
            missing = unsupported_ops(functions, get_rules())
            if missing:
                raise missing_rules_error(missing)
        shared: dict[tuple[str, ...], Any] | None = {} if len(functions) > 1 else None
        for function in functions:
            lower_function(op, function, shared, self.fallback)
            if self.schedule:
                plan_function(function)
                insert_barriers(function)


__all__ = [
    "FAMILIES",
    "Buf",
    "ConvertToVkcPass",
    "Lowering",
    "RuleTable",
    "get_rules",
    "lower_function",
]
