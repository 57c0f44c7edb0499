"""coreml dialect -> coremltools MIL Program (Builder) -> ML Program `.mlpackage`.

Every `coreml` op becomes the MIL op of its name through the op's tables
(`MIL_OPERANDS`, `MIL_PARAMS`); each `coreml.const` becomes one MIL `const`
(shared by its users), sub-byte constants keep their type (`int4`, `uint3` ...),
so `weight.bin` holds the packed bits. The Program is saved with coremltools'
empty pass pipeline: what qopt emitted is what the package holds (no constant
folding or fp16 rewriting behind qopt's back; fp16 programs are made fp16 by
the `coreml-fp16` pass before emission). Outputs are named after the function's
`qopt.output_names` (the exported program's, recorded by the `.pt2` frontend),
else `output_0`, `output_1`, ...
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
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Operation, SSAValue

from qopt.dialects import coreml
from qopt.dialects.coreml import OPSET_ATTR
from qopt.dialects.signature import output_names as recorded_output_names
from qopt.dialects.tensors import elem_of, shape_of
from qopt.errors import QoptError, where
from qopt.interpreters import entry_function
from qopt.interpreters.coreml import const_array


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


def output_names_of(module: ModuleOp, output_names: Sequence[str] | None = None) -> list[str]:
    """The names of the package's outputs: `output_names` if given (missing ones
    `output_<i>`), else the entry function's `qopt.output_names`, else
    `output_0`, `output_1`, ..."""
    func = entry_function(module)
    count = len(func.function_type.outputs)
    names = list(output_names) if output_names else recorded_output_names(func) or []
    names += [f"output_{i}" for i in range(len(names), count)]
    if len(names) != count:
        raise QoptError(f"{len(names)} output names for {count} outputs")
    return names


def build_program(module: ModuleOp, output_names: Sequence[str] | None = None) -> Any:
    """The coremltools MIL Program of `module`'s entry function (coreml dialect),
    its outputs named by `output_names_of`."""
    _quiet()
    from coremltools.converters.mil import Builder as mb

    func = entry_function(module)
    block = func.body.block
    ret = block.last_op
    assert isinstance(ret, ReturnOp)
    names: dict[SSAValue, str] = {}
    out_names = output_names_of(module, output_names)
    input_names = _input_names([a.name_hint for a in block.args])
    specs = [mb.TensorSpec(shape=shape_of(a), dtype=mil_type(elem_of(a))) for a in block.args]
    renamed_outputs: list[tuple[str, SSAValue]] = []
    for name, value in zip(out_names, ret.operands, strict=True):
        if (
            isinstance(value.owner, Operation)
            and value.owner.parent is block
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
                env[op.result] = getattr(mb, "const")(val=value, name=fresh(base))
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
            outputs[i] = getattr(mb, "identity")(x=env[value], name=name)
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


__all__ = ["build_program", "output_names_of", "save_program"]
