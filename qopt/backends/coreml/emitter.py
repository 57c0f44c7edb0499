"""coreml dialect -> coremltools MIL Program (Builder) -> ML Program `.mlpackage`.

Every `coreml` op becomes the MIL op of its name through the op's tables
(`MIL_OPERANDS`, `MIL_PARAMS`); each `coreml.const` becomes one MIL `const`
(shared by its users), sub-byte constants keep their type (`int4`, `uint3` ...),
so `weight.bin` holds the packed bits. The Program is saved with coremltools'
empty pass pipeline: what qopt emitted is what the package holds (no constant
folding or fp16 rewriting behind qopt's back; fp16 programs are made fp16 by
`to_fp16` before emission).
"""

from __future__ import annotations

import contextlib
import io
import keyword
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    DenseArrayBase,
    Float16Type,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    TensorType,
    f16,
    f32,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from qopt.dialects import coreml
from qopt.dialects.coreml import OPSET_ATTR, elem_of, shape_of
from qopt.errors import QoptError, where
from qopt.interpreters import entry_function
from qopt.interpreters.coreml import const_array
from qopt.resources import make_resource


def _quiet() -> None:
    from qopt.logs import quiet_third_party_logs

    quiet_third_party_logs()


def mil_type(elem: Attribute) -> Any:
    from coremltools.converters.mil.mil import types

    name = coreml.mil_dtype_name(elem)
    return {"bool": types.bool}.get(name) or getattr(types, name)


def _np_value(array: np.ndarray, elem: Attribute) -> np.ndarray:
    """A numpy array tagged with the MIL type (sub-byte types carry metadata)."""
    from coremltools.converters.mil.mil import types

    if isinstance(elem, IntegerType) and elem.width.data < 8 and elem.width.data != 1:
        return array.astype(types.nptype_from_builtin(mil_type(elem)))
    if array.ndim == 0:
        return array[()]  # a numpy scalar: MIL's rank-0 value
    return array


def _param(attr: Attribute, kind: str, float_type: Any = np.float32) -> Any:
    if isinstance(attr, DenseArrayBase):
        if kind == "bools":
            return np.asarray([bool(v) for v in attr.get_values()], np.bool_)
        return np.asarray(attr.get_values(), np.int32)
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, FloatAttr):
        return float_type(attr.value.data)
    assert isinstance(attr, IntegerAttr)
    return bool(attr.value.data) if kind == "bool" else np.int32(attr.value.data)


def _float_param_type(op: coreml.CoremlOp) -> Any:
    """The type of a float parameter (epsilon, alpha ...): that of the op's constant
    float parameters (batch_norm's mean, layer_norm's gamma: MIL's `U`), else
    before iOS17 that of its input (`T`), else fp32."""
    candidates = [v for v in op.operands[1:] if isinstance(v.owner, coreml.ConstOp)]
    if op.opset() < 17:
        candidates = [*candidates, *op.operands[:1]]
    for value in candidates:
        elem = elem_of(value)
        if isinstance(elem, Float16Type):
            return np.float16
        if isinstance(elem, Float32Type):
            return np.float32
    return np.float32


def target_of(func: FuncOp) -> Any:
    import coremltools as ct

    attr = func.attributes.get(OPSET_ATTR)
    name = attr.data if isinstance(attr, StringAttr) else "iOS18"
    return getattr(ct.target, name)


def build_program(module: ModuleOp, output_names: Sequence[str] | None = None) -> Any:
    """The coremltools MIL Program of `module`'s entry function (coreml dialect)."""
    _quiet()
    from coremltools.converters.mil import Builder as mb

    func = entry_function(module)
    block = func.body.block
    ret = block.last_op
    assert isinstance(ret, ReturnOp)
    names: dict[SSAValue, str] = {}
    out_names = list(output_names or [])
    out_names += [f"output_{i}" for i in range(len(out_names), len(ret.operands))]
    if len(out_names) != len(ret.operands):
        raise QoptError(f"{len(out_names)} output names for {len(ret.operands)} outputs")
    input_names = _input_names([a.name_hint for a in block.args])
    specs = [mb.TensorSpec(shape=shape_of(a), dtype=mil_type(elem_of(a))) for a in block.args]
    renamed_outputs: list[tuple[str, SSAValue]] = []
    for name, value in zip(out_names, ret.operands, strict=True):
        if (
            value.owner in block.ops
            and value not in names
            and not isinstance(value.owner, coreml.ConstOp)
        ):
            names[value] = name
        else:
            renamed_outputs.append((name, value))

    def body(*args: Any) -> Any:
        env: dict[SSAValue, Any] = dict(zip(block.args, args, strict=True))
        used: set[str] = set(input_names) | set(out_names)

        def fresh(base: str) -> str:
            name, i = base, 0
            while name in used:
                i += 1
                name = f"{base}_{i}"
            used.add(name)
            return name

        for op in block.ops:
            if isinstance(op, ReturnOp):
                break
            if isinstance(op, coreml.ConstOp):
                value = _np_value(const_array(op), elem_of(op.result))
                hint = getattr(op.value, "resource_handle", None)
                base = hint.data if hint is not None else "const"
                env[op.result] = mb.const(val=value, name=fresh(base))
                continue
            if not isinstance(op, coreml.CoremlOp):
                raise QoptError(f"emit: {where(op)} is not a coreml op: run convert-to-coreml")
            kwargs: dict[str, Any] = {}
            defs = type(op).get_irdl_definition()
            for (field, _), mil_name in zip(defs.operands, op.MIL_OPERANDS, strict=True):
                value = getattr(op, field)
                if value is None:
                    continue
                if isinstance(value, SSAValue):
                    kwargs[mil_name] = env[value]
                else:
                    kwargs[mil_name] = tuple(env[v] for v in value)
            float_type = _float_param_type(op)
            for field, kind in op.MIL_PARAMS.items():
                attr = getattr(op, field)
                if attr is not None:
                    kwargs[field] = _param(attr, kind, float_type)
            result = op.results[0]
            kwargs["name"] = names.get(result) or fresh(op.mil_type)
            builder = getattr(mb, op.mil_type)
            env[result] = builder(**kwargs)
        outputs = []
        for value in ret.operands:
            outputs.append(env[value])
        for name, value in renamed_outputs:
            i = list(ret.operands).index(value)
            outputs[i] = mb.identity(x=env[value], name=name)
        return tuple(outputs)

    body.__name__ = "main"
    wrapped = _with_arg_names(body, input_names)
    program = mb.program(input_specs=specs, opset_version=target_of(func))(wrapped)
    return program


def _input_names(hints: Sequence[str | None]) -> list[str]:
    """Distinct Python identifiers for the inputs, from their SSA name hints.

    xDSL drops a hint's `_<digits>` suffix, so torch.export's `args_0, args_1`
    both arrive as `args`: a hint shared by several inputs is numbered again
    (`args_0`, `args_1`). Characters an identifier cannot hold become `_`.
    """
    bases = []
    for i, hint in enumerate(hints):
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in hint or "")
        if not base or not base.isidentifier() or keyword.iskeyword(base):
            base = f"input_{base}" if base else f"input_{i}"
        bases.append(base)
    names: list[str] = []
    seen: dict[str, int] = {}
    for base in bases:
        if bases.count(base) == 1:
            names.append(base)
            continue
        k = seen.get(base, 0)
        while f"{base}_{k}" in bases or f"{base}_{k}" in names:
            k += 1
        seen[base] = k + 1
        names.append(f"{base}_{k}")
    return names


def _with_arg_names(fn: Any, names: Sequence[str]) -> Any:
    """A function whose positional parameters carry `names` (MIL names the inputs
    after the builder function's parameters)."""
    params = ", ".join(names)
    namespace: dict[str, Any] = {"_fn": fn}
    exec(f"def main({params}):\n    return _fn({params})\n", namespace)
    return namespace["main"]


def save_program(program: Any, path: str | os.PathLike[str], target: Any) -> Any:
    """Write `program` as an ML Program package (no coremltools passes)."""
    _quiet()
    import coremltools as ct

    with contextlib.redirect_stderr(io.StringIO()):  # coremltools' progress bars
        model = _convert(ct, program, target)
    model.save(str(path))
    return model


def _convert(ct: Any, program: Any, target: Any) -> Any:
    return ct.convert(
        program,
        convert_to="mlprogram",
        skip_model_load=True,
        minimum_deployment_target=target,
        compute_precision=ct.precision.FLOAT32,
        pass_pipeline=ct.PassPipeline.EMPTY,
    )


def _cast_operand(op: coreml.CoremlOp, index: int, elem: Attribute, name: str) -> None:
    value = op.operands[index]
    cast = coreml.CastOp.build(
        operands=[value],
        properties={"dtype": StringAttr(name)},
        result_types=[TensorType(elem, shape_of(value))],
    )
    Rewriter.insert_op(cast, InsertPoint.before(op))
    op.operands[index] = cast.result


def _cast_result(
    op: coreml.CoremlOp, elem: Attribute, name: str, keep: set[Operation] | None = None
) -> None:
    """Activation quantization computes in fp32; its float result is cast to fp16
    for every user but those in `keep` (which compute in fp32)."""
    result = op.results[0]
    cast = coreml.CastOp.build(
        operands=[result],
        properties={"dtype": StringAttr(name)},
        result_types=[TensorType(elem, shape_of(result))],
    )
    keep = keep or set()
    result.replace_uses_with_if(cast.result, lambda use: use.operation not in keep)
    Rewriter.insert_op(cast, InsertPoint.after(op))
    cast.operands = [result]


def _integer_regions(block: Any) -> set[Operation]:
    """The float ops of static-activation int8 regions: every float operand comes
    from a `dequantize`, a weight (const/constexpr) or another such op, and every
    use is a `quantize` or another such op (dequantize -> linear/conv/add/pool ->
    quantize). Core ML runs these as int8 kernels, so their accumulation is not
    rounded to fp16; `to_fp16` keeps them in fp32, which models that."""
    weights = (coreml.ConstOp, coreml.ConstexprOp)
    region = {
        op
        for op in block.ops
        if not isinstance(op, (coreml.QuantizeOp, coreml.DequantizeOp, *weights))
        and isinstance(op, coreml.CoremlOp)
        and any(
            isinstance(r.type, TensorType) and isinstance(elem_of(r), Float32Type)
            for r in op.results
        )
    }
    changed = True
    while changed:
        changed = False
        for op in list(region):
            inputs_ok = all(
                not (isinstance(v.type, TensorType) and isinstance(elem_of(v), Float32Type))
                or isinstance(v.owner, (coreml.DequantizeOp, *weights))
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


def to_fp16(module: ModuleOp) -> None:
    """Make a coreml module compute in fp16 (in place): float constants and results
    become f16; fp32 inputs are cast on entry and outputs cast back to fp32, as
    coremltools does for its FLOAT16 compute precision. Activation quantization
    (quantize/dequantize and their parameters) stays fp32, and so do the float ops
    of static-activation int8 regions (`_integer_regions`: Core ML executes them as
    int8 kernels) with their weights."""
    func = entry_function(module)
    block = func.body.block
    qdq = (coreml.QuantizeOp, coreml.DequantizeOp)
    region = _integer_regions(block)
    kept: set[Operation] = set(region)  # ops whose float results stay fp32
    for op in reversed(list(block.ops)):  # weights (and their consts) that only feed kept ops
        if isinstance(op, (coreml.ConstOp, coreml.ConstexprOp)) and op.results[0].uses:
            if all(
                u.operation in kept or isinstance(u.operation, qdq) for u in op.results[0].uses
            ) and any(u.operation in kept for u in op.results[0].uses):
                kept.add(op)
    for op in list(block.ops):
        if op in kept:
            continue
        if isinstance(op, coreml.ConstOp) and isinstance(elem_of(op.result), Float32Type):
            if all(isinstance(u.operation, qdq) for u in op.result.uses):
                continue  # activation quantization parameters stay fp32
            with np.errstate(over="ignore"):  # +-3.4e38 mask fills become +-inf, as in
                array = const_array(op).astype(np.float16)  # coremltools' fp16 pass
            type = TensorType(f16, shape_of(op.result))
            new = coreml.ConstOp.build(
                properties={"value": make_resource("fp16", array, type)}, result_types=[type]
            )
            Rewriter.replace_op(op, new)
            continue
        if isinstance(op, coreml.QuantizeOp):
            if not isinstance(elem_of(op.operands[0]), Float32Type):
                _cast_operand(op, 0, f32, "fp32")
            continue
        if isinstance(op, coreml.DequantizeOp):
            if not all(u.operation in kept for u in op.results[0].uses):
                _cast_result(op, f16, "fp16", keep=kept)
            continue
        for result in op.results:
            if isinstance(result.type, TensorType) and isinstance(elem_of(result), Float32Type):
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
        cast = coreml.CastOp.build(
            operands=[arg],
            properties={"dtype": StringAttr("fp16")},
            result_types=[TensorType(f16, shape_of(arg))],
        )
        # fp32 readers (activation quantizers, int8-region ops) keep the fp32 input
        arg.replace_uses_with_if(
            cast.result,
            lambda use: not (isinstance(use.operation, coreml.QuantizeOp) or use.operation in kept),
        )
        if not cast.result.uses:
            cast.erase()
            continue
        Rewriter.insert_op(cast, InsertPoint.at_start(block))
        cast.operands = [arg]
    ret = block.last_op
    assert isinstance(ret, ReturnOp)
    outputs = []
    for value in ret.operands:
        if isinstance(elem_of(value), Float16Type):
            cast = coreml.CastOp.build(
                operands=[value],
                properties={"dtype": StringAttr("fp32")},
                result_types=[TensorType(f32, shape_of(value))],
            )
            Rewriter.insert_op(cast, InsertPoint.before(ret))
            value = cast.result
        outputs.append(value)
    ret.operands = outputs
    func.update_function_type()


__all__ = ["build_program", "save_program", "to_fp16"]
