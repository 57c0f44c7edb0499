"""`coreml-fp16`: make a coreml-level module compute in fp16 (coreml -> coreml).

Float constants and results become f16; fp32 inputs are cast to fp16 on entry and
fp16 outputs back to fp32, as coremltools does for its FLOAT16 compute precision
(the function's signature stays fp32). Activation quantization stays fp32:
`quantize` / `dequantize` and their scale / zero-point constants, with a cast
before a `quantize` whose input became fp16 and after a `dequantize` read by fp16
ops. So do the float ops of static-activation int8 regions
(`integer_regions`: dequantize -> linear / conv / add / pool -> quantize, which
Core ML executes as int8 kernels, so their accumulation is not rounded to fp16),
the `mul` by 1 / scale (and `clip`) written before a `quantize`
(`quantizer_prologues`), and the weights only they read.

A `conv -> batch_norm` pair with constant parameters becomes one conv with the norm
folded into its weight and bias first (`fold_batch_norms`), as coremltools does.

`qopt-coreml{compute-precision=fp16}` runs it after `convert-to-coreml`; the
emitter then writes what the IR says (coremltools' own fp16 pass never runs).
Ops the pass creates (casts, f16 constants) take the location of the op they
serve. States are fp16 already (convert-to-coreml): the casts between them and
fp32 computation become identities, which the pass removes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import (
    DenseResourceAttr,
    Float16Type,
    Float32Type,
    LocationAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f16,
    f32,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from qopt.dialects import coreml
from qopt.dialects.coreml.queries import const_array
from qopt.dialects.tensors import elem_of, shape_of
from qopt.errors import QoptError, where
from qopt.resources import WeightStore, make_resource, resource_references, weights_of

_WEIGHTS = (coreml.ConstOp, coreml.ConstexprOp)
_QDQ = (coreml.QuantizeOp, coreml.DequantizeOp)


def _cast(value: SSAValue, elem: Attribute, name: str, location: LocationAttr) -> coreml.CastOp:
    cast = coreml.CastOp.build(
        operands=[value],
        properties={"dtype": StringAttr(name)},
        result_types=[TensorType(elem, shape_of(value))],
    )
    cast.location = location
    return cast


def _cast_operand(op: Operation, index: int, elem: Attribute, name: str) -> None:
    cast = _cast(op.operands[index], elem, name, op.location)
    Rewriter.insert_op(cast, InsertPoint.before(op))
    op.operands[index] = cast.result


def _cast_result(op: Operation, elem: Attribute, name: str, keep: set[Operation]) -> None:
    """Activation quantization computes in fp32; its float result is cast to fp16
    for every user but those in `keep` (which compute in fp32)."""
    result = op.results[0]
    cast = _cast(result, elem, name, op.location)
    result.replace_uses_with_if(cast.result, lambda use: use.operation not in keep)
    Rewriter.insert_op(cast, InsertPoint.after(op))
    cast.operands = [result]


def _is_f32_tensor(value: SSAValue) -> bool:
    type = value.type
    return isinstance(type, TensorType) and isinstance(type.get_element_type(), Float32Type)


def integer_regions(block: Block) -> set[Operation]:
    """The float ops of static-activation int8 regions: every float operand comes
    from a `dequantize`, a weight (const/constexpr) or another such op, and every
    use is a `quantize` or another such op (dequantize -> linear/conv/add/pool ->
    quantize). Core ML runs these as int8 kernels, so their accumulation is not
    rounded to fp16; `coreml-fp16` keeps them in fp32, which models that."""
    region: set[Operation] = {
        op
        for op in block.ops
        if not isinstance(op, (*_QDQ, *_WEIGHTS))
        and isinstance(op, coreml.CoremlOp)
        and any(_is_f32_tensor(r) for r in op.results)
    }
    changed = True
    while changed:
        changed = False
        for op in list(region):
            inputs_ok = all(
                not _is_f32_tensor(v)
                or isinstance(v.owner, (coreml.DequantizeOp, *_WEIGHTS))
                or v.owner in region
                for v in op.operands
            )
            uses_ok = all(
                isinstance(u.operation, coreml.QuantizeOp) or u.operation in region
                for r in op.results
                for u in r.uses
            ) and any(r.uses for r in op.results)
            if not (inputs_ok and uses_ok):
                region.discard(op)
                changed = True
    return region


def quantizer_prologues(block: Block) -> set[Operation]:
    """The `mul` by the reciprocal of the scale, and the `clip` to a range narrower
    than the type, that convert-to-coreml writes before a `quantize` (torch's
    rounding, `rne(x * f32(1 / scale))`): part of the activation quantizer, so
    they compute in fp32 as the `quantize` does (an fp16 product would round the
    scaled value before the rounding to an integer). An op qualifies when every
    use is a `quantize` or another such op."""
    found: set[Operation] = set()
    for op in reversed(list(block.ops)):
        if not isinstance(op, coreml.MulOp | coreml.ClipOp):
            continue
        if isinstance(op, coreml.MulOp) and not any(
            isinstance(v.owner, coreml.ConstOp) for v in op.operands
        ):
            continue
        uses = list(op.results[0].uses)
        if uses and all(
            isinstance(u.operation, coreml.QuantizeOp) or u.operation in found for u in uses
        ):
            found.add(op)
    return found


def _float_const(value: SSAValue | None) -> np.ndarray | None:
    owner = None if value is None else value.owner
    if isinstance(owner, coreml.ConstOp) and isinstance(elem_of(owner.result), Float32Type):
        return const_array(owner).astype(np.float64)
    return None


def fold_batch_norms(block: Block) -> None:
    """`conv -> batch_norm` as one conv: weight `W * s` and bias `(b - mean) * s + beta`
    per output channel, `s = gamma / sqrt(variance + epsilon)` (computed in float64,
    rounded once to fp32, then to fp16 with the other weights), when the conv's
    weight, bias and the norm's parameters are fp32 constants and the norm is the
    conv's only reader. coremltools folds them the same way; the values move by
    the weights' rounding, inside fp16's (an fp32 package keeps torch's two steps)."""
    orphans: list[Operation] = []
    for norm in list(block.ops):
        if not isinstance(norm, coreml.BatchNormOp):
            continue
        conv = norm.x.owner
        if not isinstance(conv, coreml.ConvOp) or len(list(norm.x.uses)) != 1:
            continue
        weight, mean, variance = (_float_const(v) for v in (conv.weight, norm.mean, norm.variance))
        if weight is None or mean is None or variance is None:
            continue
        channels = weight.shape[0]
        bias = np.zeros(channels) if conv.bias is None else _float_const(conv.bias)
        gamma = np.ones(channels) if norm.gamma is None else _float_const(norm.gamma)
        beta = np.zeros(channels) if norm.beta is None else _float_const(norm.beta)
        if bias is None or gamma is None or beta is None:
            continue
        scale = gamma / np.sqrt(variance + float(norm.epsilon.value.data))
        folded = (weight * scale.reshape(-1, *[1] * (weight.ndim - 1))).astype(np.float32)
        shift = ((bias - mean) * scale + beta).astype(np.float32)
        new_weight = _new_const(folded, conv, "folded_weight")
        new_bias = _new_const(shift, conv, "folded_bias")
        properties = {k: v for k, v in conv.properties.items() if k != "operandSegmentSizes"}
        new_conv = coreml.ConvOp.build(
            operands=[conv.x, new_weight.result, new_bias.result],
            properties=properties,
            result_types=[conv.result.type],
        )
        new_conv.location = conv.location
        Rewriter.insert_op([new_weight, new_bias, new_conv], InsertPoint.before(conv))
        orphans += [
            v.owner
            for v in (*conv.operands[1:], *norm.operands[1:])
            if isinstance(v.owner, Operation)
        ]
        norm.result.replace_all_uses_with(new_conv.result)
        Rewriter.erase_op(norm)
        Rewriter.erase_op(conv)
    for op in dict.fromkeys(orphans):  # the parameters nothing reads any more
        if isinstance(op, coreml.ConstOp) and not op.result.uses:
            Rewriter.erase_op(op)


def _new_const(array: np.ndarray, near: Operation, hint: str) -> coreml.ConstOp:
    type = TensorType(f32, array.shape)
    const = coreml.ConstOp.build(
        properties={"value": make_resource(hint, array, type, weights_of(near))},
        result_types=[type],
    )
    const.location = near.location
    return const


def function_to_fp16(func: FuncOp, references: dict[str, int] | None = None) -> None:
    """Rewrite one coreml function to compute in fp16 (see the module docstring).
    With `references` (`resource_references` of the module, counted before the pass),
    the blob of each fp32 weight is dropped as soon as its fp16 copy has replaced the
    last op naming it, so the pass holds one weight in both widths at a time, not the
    whole program (the counts are kept up to date)."""
    block = func.body.block
    for op in block.ops:
        if not isinstance(op, coreml.CoremlOp | ReturnOp):
            raise QoptError(
                f"coreml-fp16: {where(op)} is not a coreml op: lower the module first "
                "(-p convert-to-coreml, or qopt-coreml{compute-precision=fp16})"
            )
    fold_batch_norms(block)
    kept: set[Operation] = integer_regions(block) | quantizer_prologues(block)
    for op in reversed(list(block.ops)):  # weights (and their consts) that only feed kept ops
        if isinstance(op, _WEIGHTS) and op.results[0].uses:
            uses = op.results[0].uses
            if all(u.operation in kept or isinstance(u.operation, _QDQ) for u in uses) and any(
                u.operation in kept for u in uses
            ):
                kept.add(op)
    for op in list(block.ops):
        if op in kept:
            continue
        if isinstance(op, coreml.ConstOp) and isinstance(elem_of(op.result), Float32Type):
            if all(isinstance(u.operation, _QDQ) for u in op.result.uses):
                continue  # activation quantization parameters stay fp32
            with np.errstate(over="ignore"):  # +-3.4e38 mask fills become +-inf, as in
                array = const_array(op).astype(np.float16)  # coremltools' fp16 pass
            type = TensorType(f16, shape_of(op.result))
            new = coreml.ConstOp.build(
                properties={"value": make_resource("fp16", array, type, weights_of(op))},
                result_types=[type],
            )
            new.location = op.location
            Rewriter.replace_op(op, new)
            _release(op, weights_of(new), references)
            continue
        if isinstance(op, coreml.QuantizeOp):
            if not isinstance(elem_of(op.operands[0]), Float32Type):
                _cast_operand(op, 0, f32, "fp32")
            continue
        if isinstance(op, coreml.DequantizeOp):
            if not all(u.operation in kept for u in op.results[0].uses):
                _cast_result(op, f16, "fp16", kept)
            continue
        for result in op.results:
            if _is_f32_tensor(result):
                Rewriter.replace_value_with_new_type(result, TensorType(f16, shape_of(result)))
                if isinstance(op, coreml.CastOp):  # a cast to float (of a bool mask) names it
                    op.dtype = StringAttr("fp16")
    for op in kept:  # a kept op reading a value that became fp16 reads it back in fp32
        for index, value in enumerate(op.operands):
            if isinstance(value.type, TensorType) and isinstance(elem_of(value), Float16Type):
                _cast_operand(op, index, f32, "fp32")
    for arg in block.args:
        if not isinstance(elem_of(arg), Float32Type) or not arg.uses:
            continue
        cast = _cast(arg, f16, "fp16", func.location)
        # fp32 readers (activation quantizers, int8-region ops) keep the fp32 input
        arg.replace_uses_with_if(
            cast.result,
            lambda use: (
                use.operation is not cast
                and not (isinstance(use.operation, coreml.QuantizeOp) or use.operation in kept)
            ),
        )
        if not cast.result.uses:
            cast.erase()
            continue
        Rewriter.insert_op(cast, InsertPoint.at_start(block))
    for op in list(block.ops):  # casts made identities (the fp16 state casts)
        if isinstance(op, coreml.CastOp) and op.x.type == op.result.type:
            Rewriter.replace_op(op, [], [op.x])
    ret = block.last_op
    assert isinstance(ret, ReturnOp)
    outputs = []
    for value in ret.operands:
        if isinstance(elem_of(value), Float16Type):
            owner = value.owner
            location = owner.location if isinstance(owner, Operation) else func.location
            cast = _cast(value, f32, "fp32", location)
            Rewriter.insert_op(cast, InsertPoint.before(ret))
            value = cast.result
        outputs.append(value)
    ret.operands = outputs
    func.update_function_type()


def _release(old: coreml.ConstOp, store: WeightStore, references: dict[str, int] | None) -> None:
    """Count `old` (a constant just replaced) out of `references`: its blob is dropped
    from the module's weights once no op names it (a key counted before the pass only:
    one made during it may have uncounted names; `release_unreferenced` drops those
    after the pass)."""
    value = old.value
    if references is None or not isinstance(value, DenseResourceAttr):
        return
    key = value.resource_handle.data
    if key not in references:
        return
    references[key] -= 1
    if references[key] == 0:
        store.release(key)


@dataclass(frozen=True)
class CoremlFp16Pass(ModulePass):
    """Make every function of a coreml-level module compute in fp16 (in place)."""

    name = "coreml-fp16"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        references = resource_references(op) if weights_of(op).releasable else None
        for func in list(op.ops):
            if isinstance(func, FuncOp):
                function_to_fp16(func, references)


__all__ = ["CoremlFp16Pass", "fold_batch_norms", "function_to_fp16", "integer_regions"]
