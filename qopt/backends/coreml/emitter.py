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

States (iOS18): each mutable `ml_program.global` of the module is a state input
of every function (`ct.StateType`: `mb.StateTensorSpec` in the Builder, after the
function's tensor inputs), named by `state_names_of` (the global's name made an
identifier, e.g. `layers.0.k_cache` -> `layers_0_k_cache`); `coreml.read_state`
is MIL `read_state`, `coreml.coreml_update_state` MIL `coreml_update_state`
(which coremltools writes as `write_state` + `read_state`). The package records
MIL name -> global name in its metadata (`qopt.states`, JSON: reader.py's
`STATES_METADATA`) so the reader names the states back. Refused, each with a
QoptError naming the state: a state other than fp16 (the only state type a
package holds: coremltools 9 writes no other, iOS18's MLState) and a state whose
initial value is not all zeros (a Core ML state starts as zeros: the caller
makes it, `model.make_state()`).

Rank-0 inputs: Core ML program inputs have rank 1 to 5, so a rank-0 tensor input is
a `[1]` program input, reshaped to rank 0 first thing in the program; the package
records those inputs' names per method (`qopt.scalar_inputs`, JSON: reader.py's
`SCALAR_INPUTS_METADATA`), and the reader gives them back their rank-0 type, so the
package read back (and `qopt.load`) takes the same arrays as the exported program.
A caller of the package on a Core ML device passes a 1-element array.

Several methods (functions `prefill` and `decode` sharing weights and states):
one Program per function, each saved alone, then merged by coremltools'
`MultiFunctionDescriptor` / `save_multifunction` into one multifunction package
(iOS18; its constants deduplicated across functions, so a shared weight is
stored once); the first method is the default function.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import keyword
import os
import shutil
import tempfile
import uuid
from collections import defaultdict
from collections.abc import Iterator, Sequence
from types import SimpleNamespace
from typing import Any, cast

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

from qopt.backends.coreml.deps import ensure_coremltools
from qopt.backends.coreml.reader import (
    METHOD_METADATA,
    SCALAR_INPUTS_METADATA,
    SOURCE_HASH_METADATA,
    STATES_METADATA,
    VERSION_METADATA,
    WEIGHTS_METADATA,
)
from qopt.dialects import coreml
from qopt.dialects.coreml import OPSET_ATTR, PACKAGE_STATE_TYPES, mutable_globals
from qopt.dialects.coreml.queries import const_array
from qopt.dialects.queries import entry_function, initial_value, methods_of
from qopt.dialects.signature import output_names as recorded_output_names
from qopt.dialects.tensors import elem_of, shape_of
from qopt.errors import QoptError, where
from qopt.files import default_modes
from qopt.logs import quiet_third_party_logs
from qopt.report import phase
from qopt.version import qopt_version


def mil_type(elem: Attribute) -> Any:
    ensure_coremltools()
    from coremltools.converters.mil.mil import types

    name = coreml.mil_dtype_name(elem)
    return {"bool": types.bool}.get(name) or getattr(types, name)


def _np_value(array: np.ndarray, elem: Attribute) -> np.ndarray:
    """A numpy array tagged with the MIL type (sub-byte types carry metadata)."""
    ensure_coremltools()
    from coremltools.converters.mil.mil import types

    if isinstance(elem, IntegerType) and elem.width.data < 8 and elem.width.data != 1:
        tagged = np.dtype(types.nptype_from_builtin(mil_type(elem)))
        # A view when the container already matches: a weight is not copied to be tagged.
        return array.view(tagged) if array.dtype == tagged else array.astype(tagged)
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
    """The type of a float parameter (epsilon, alpha ...): clip's and pad's that of
    its input (`T` in every opset); else that of the op's constant float parameters
    (batch_norm's mean, layer_norm's gamma: MIL's `U`), else before iOS17 that of its
    input (`T`), else fp32."""
    if isinstance(op, coreml.ClipOp | coreml.PadOp):  # `const T`: x's type (clip's alpha
        # / beta, pad's constant_val)
        return np.float16 if isinstance(elem_of(op.operands[0]), Float16Type) else np.float32
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
    ct = ensure_coremltools()

    attr = func.attributes.get(OPSET_ATTR)
    name = attr.data if isinstance(attr, StringAttr) else "iOS18"
    return getattr(ct.target, name)


def function_of(module: ModuleOp, function: str | None = None) -> FuncOp:
    """The function `function` of `module`, or its entry function (`forward`, or
    its only one)."""
    if function is None:
        return entry_function(module)
    for op in module.ops:
        if isinstance(op, FuncOp) and op.sym_name.data == function:
            return op
    raise QoptError(f"the module has no function @{function}")


def output_names_of(
    module: ModuleOp, output_names: Sequence[str] | None = None, function: str | None = None
) -> list[str]:
    """The names of the package's outputs: `output_names` if given (missing ones
    `output_<i>`), else the function's (the entry function's by default)
    `qopt.output_names`, else `output_0`, `output_1`, ..."""
    func = function_of(module, function)
    count = len(func.function_type.outputs)
    names = list(output_names) if output_names else recorded_output_names(func) or []
    names += [f"output_{i}" for i in range(len(names), count)]
    if len(names) != count:
        raise QoptError(f"{len(names)} output names for {count} outputs")
    return names


def input_names_of(func: FuncOp) -> list[str]:
    """The names of the package's inputs for `func` (its arguments' name hints,
    made distinct identifiers: `_input_names`)."""
    return _input_names([a.name_hint for a in func.body.block.args])


def scalar_inputs_of(func: FuncOp) -> list[str]:
    """The package input names (`input_names_of`) of `func`'s rank-0 arguments: `[1]`
    inputs of the package, reshaped to rank 0 inside."""
    args = func.body.block.args
    return [n for n, a in zip(input_names_of(func), args, strict=True) if not shape_of(a)]


def state_names_of(module: ModuleOp) -> dict[str, str]:
    """Each state (mutable global) of `module` -> its MIL state name: the global's
    name made an identifier, distinct from the other states' and from every
    function's input and output names (one name per state in every function)."""
    taken: list[str] = []
    for method in methods_of(module):
        func = function_of(module, method)
        taken += _input_names([a.name_hint for a in func.body.block.args])
        taken += output_names_of(module, None, method)
    return coreml.mil_state_names([g.sym_name.data for g in mutable_globals(module)], taken)


def check_states(module: ModuleOp) -> None:
    """A QoptError for a state no Core ML package can hold (see the module docstring)."""
    for g in mutable_globals(module):
        name = g.sym_name.data
        elem = coreml.type_name(g.type.get_element_type())
        if elem not in PACKAGE_STATE_TYPES:
            raise QoptError(
                f"emit: state @{name} is {elem}; Core ML packages hold fp16 states only "
                "(coremltools 9 writes no other state type; iOS18's MLState): convert-to-coreml "
                "keeps float states in fp16, an integer state has no CoreML form"
            )
        if g.value is not None and np.any(initial_value(g)):
            raise QoptError(
                f"emit: state @{name} starts with values that are not all zeros (the buffer's "
                "value at export); a Core ML state starts as zeros (the caller makes it, "
                "model.make_state()), so the package cannot hold it: zero the buffer before "
                "export, or run the program with qopt.session"
            )


def package_metadata(module: ModuleOp) -> dict[str, str]:
    """The user-defined metadata qopt writes into a package: the version of qopt that
    wrote it (`qopt.version`), the SHA-256 of the program it was compiled from
    (`qopt.source_sha256`: `program_hash` of the module convert-to-coreml lowered,
    recorded on it by that pass: the source after fuse-quant and fold-constants),
    the compression of each weight (`qopt.weights`, JSON: `weight_compression`), the
    states' names (`qopt.states`: MIL name -> global name), the name of a single
    method other than `forward` (`qopt.method`; a single-function package's
    function is `main`) and the rank-0 inputs of each method, given to the package
    as `[1]` (`qopt.scalar_inputs`: method -> input names; absent when there are
    none). Every value is a function of the program: two compiles write the same
    bytes."""
    out: dict[str, str] = {VERSION_METADATA: qopt_version()}
    source_hash = module.attributes.get(SOURCE_HASH_METADATA)  # the same key
    if isinstance(source_hash, StringAttr):
        out[SOURCE_HASH_METADATA] = source_hash.data
    if weights := weight_compression(module):
        out[WEIGHTS_METADATA] = json.dumps(weights, sort_keys=True, separators=(",", ":"))
    if names := state_names_of(module):
        out[STATES_METADATA] = json.dumps({mil: name for name, mil in names.items()})
    methods = methods_of(module)
    scalars = {m: scalar_inputs_of(function_of(module, m)) for m in methods}
    if any(scalars.values()):
        out[SCALAR_INPUTS_METADATA] = json.dumps({m: s for m, s in scalars.items() if s})
    if len(methods) == 1 and methods[0] != "forward":
        out[METHOD_METADATA] = methods[0]
    return out


#: Constants with fewer elements are stored inline in the spec (not weights).
_INLINE_LIMIT = 10


def weight_compression(module: ModuleOp) -> dict[str, str]:
    """How each weight of the package is stored, by the name of the layer it comes
    from (its location's name, e.g. `layers.0.attention.wq`; `#2` ... when a name
    repeats, `const` without one): `"int4 blockwise shift/scale [256, 64], block
    [1, 32], fp16 scales"`, `"LUT 4-bit [64, 64], fp16 palette"`, `"fp16 [256]"`.
    Weights are the compile-time values of 10 elements or more that no constexpr op
    reads (a constexpr's inputs are part of its weight); small ones are inline."""
    from xdsl.dialects.builtin import NameLoc

    out: dict[str, str] = {}
    for op in module.walk():
        if not isinstance(op, coreml.CompileTimeOp) or numel_of(op.results[0]) < _INLINE_LIMIT:
            continue
        if op.results[0].uses and all(
            isinstance(u.operation, coreml.ConstexprOp) for u in op.results[0].uses
        ):
            continue
        named = [op.location, *(u.operation.location for u in op.results[0].uses)]
        base = next((loc.desc.data for loc in named if isinstance(loc, NameLoc)), "const")
        if any(
            isinstance(u.operation, coreml.LinearOp | coreml.ConvOp) and u.index == 2
            for u in op.results[0].uses
        ):
            base += ".bias"
        name, n = base, 1
        while name in out:
            n += 1
            name = f"{base}#{n}"
        out[name] = _compression(op)
    return out


def numel_of(value: SSAValue) -> int:
    return int(np.prod(shape_of(value), dtype=np.int64))


def _dtype(value: SSAValue) -> str:
    return coreml.mil_dtype_name(elem_of(value))


def _compression(op: Operation) -> str:
    shape = list(shape_of(op.results[0]))
    if isinstance(op, coreml.ConstexprBlockwiseShiftScaleOp):
        grid = shape_of(op.scale)
        block = [s // g if g else s for s, g in zip(shape, grid, strict=False)]
        zero = ", zero points" if op.offset is not None else ""
        return (
            f"{_dtype(op.data)} blockwise shift/scale {shape}, block {block}, "
            f"{_dtype(op.scale)} scales{zero}"
        )
    if isinstance(op, coreml.ConstexprLutToDenseOp):
        bits = coreml.mil_dtype_name(elem_of(op.indices)).removeprefix("uint")
        return f"LUT {bits}-bit {shape}, {_dtype(op.lut)} palette"
    if isinstance(op, coreml.ConstexprAffineDequantizeOp):
        return (
            f"{_dtype(op.quantized_data)} affine {shape}, axis {op.axis.value.data}, "
            f"{_dtype(op.scale)} scales"
        )
    return f"{_dtype(op.results[0])} {shape}"


def build_programs(module: ModuleOp, output_names: Sequence[str] | None = None) -> dict[str, Any]:
    """One coremltools MIL Program per method of `module` (coreml dialect), by
    method name; `output_names` name the outputs of a single-method program."""
    methods = methods_of(module)
    if not methods:
        raise QoptError("emit: the module has no function")
    if output_names and len(methods) > 1:
        raise QoptError(
            f"emit: output_names name the outputs of a single-method program; this one "
            f"has {', '.join(methods)} (each names its outputs as recorded at import)"
        )
    if len(methods) > 1:
        opsets = {coreml.opset_number(_opset_name(function_of(module, m))) for m in methods}
        if min(opsets) < 18:
            raise QoptError(
                f"emit: the program has several methods ({', '.join(methods)}), which need a "
                "multifunction package: those exist from iOS18; use "
                "minimum_deployment_target='iOS18' (convert-to-coreml{target=iOS18})"
            )
        return {m: build_program(module, None, m) for m in methods}
    return {methods[0]: build_program(module, output_names, methods[0])}


def _opset_name(func: FuncOp) -> str:
    attr = func.attributes.get(OPSET_ATTR)
    return attr.data if isinstance(attr, StringAttr) else "iOS18"


CONST, IDENTITY = "const", "identity"
"""The MIL ops the emitter writes besides the coreml dialect's: constants, and an
output that is an input, a constant or another output (renamed by `identity`)."""


def emitted_mil_ops() -> frozenset[str]:
    """Every MIL op type `build_program` can write (the reader must read each)."""
    return frozenset({CONST, IDENTITY, *(cls.name.split(".", 1)[1] for cls in coreml.ALL_OPS)})


def build_program(
    module: ModuleOp, output_names: Sequence[str] | None = None, function: str | None = None
) -> Any:
    """The coremltools MIL Program of `module`'s function `function` (its entry
    function by default; coreml dialect), its outputs named by `output_names_of`,
    with every state of the module as a state input."""
    quiet_third_party_logs()
    ensure_coremltools()
    from coremltools.converters.mil import Builder as mb

    func = function_of(module, function)
    check_states(module)
    block = func.body.block
    ret = block.last_op
    assert isinstance(ret, ReturnOp)
    names: dict[SSAValue, str] = {}
    out_names = output_names_of(module, output_names, function)
    input_names = input_names_of(func)
    # a rank-0 input is a [1] program input (Core ML inputs have rank 1 to 5), reshaped
    # to rank 0 at the top of the program
    specs = [
        mb.TensorSpec(shape=shape_of(a) or (1,), dtype=mil_type(elem_of(a))) for a in block.args
    ]
    state_names = state_names_of(module)
    out_names = _distinct_outputs(out_names, [*input_names, *state_names.values()])
    states = mutable_globals(module)
    specs += [
        mb.StateTensorSpec(shape=shape_of(g.type), dtype=mil_type(g.type.get_element_type()))
        for g in states
    ]
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
        count = len(block.args)
        env: dict[SSAValue, Any] = dict(zip(block.args, args[:count], strict=True))
        state_vars = {g.sym_name.data: v for g, v in zip(states, args[count:], strict=True)}
        used: set[str] = set(input_names) | set(out_names) | set(state_names.values())

        def fresh(base: str) -> str:
            # `base__1`, not coremltools' own `base_1`: its passes at save time
            # (bool inputs / outputs cast to fp32) name ops `cast_0`, `cast_1`, ... and
            # would define a name twice
            name, i = base, 0
            while name in used:
                i += 1
                name = f"{base}__{i}"
            used.add(name)
            return name

        for arg, input_name in zip(block.args, input_names, strict=True):
            if not shape_of(arg):
                scalar_shape = np.zeros(0, np.int32)
                reshape = getattr(mb, coreml.ReshapeOp.name.removeprefix("coreml."))
                env[arg] = reshape(x=env[arg], shape=scalar_shape, name=fresh(input_name))
        for op in block.ops:
            if isinstance(op, ReturnOp):
                break
            if isinstance(op, coreml.ConstOp):
                value = _np_value(const_array(op), elem_of(op.result))
                hint = getattr(op.value, "resource_handle", None)
                base = hint.data if hint is not None else "const"
                env[op.result] = getattr(mb, CONST)(val=value, name=fresh(base))
                continue
            if not isinstance(op, coreml.CoremlOp):
                raise QoptError(f"emit: {where(op)} is not a coreml op: run convert-to-coreml")
            kwargs: dict[str, Any] = {}
            if isinstance(op, coreml.StateOp):
                if op.state_name not in state_vars:
                    raise QoptError(f"emit: {where(op)}: @{op.state_name} is not a state")
                kwargs[op.MIL_STATE] = state_vars[op.state_name]
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
            outputs[i] = getattr(mb, IDENTITY)(x=env[value], name=name)
        return tuple(outputs)

    body.__name__ = "main"
    wrapped = _NamedInputs(body, [*input_names, *(state_names[g.sym_name.data] for g in states)])
    # The Builder names the consts it makes for Python values (gelu's mode ...) with a
    # process-wide counter: counted from 0 for each program, the same program gets
    # the same names, and so the same package bytes, however many were built before.
    saved_counts = mb.name_count
    mb.name_count = defaultdict(int)
    try:
        program = mb.program(input_specs=specs, opset_version=target_of(func))(wrapped)
    finally:
        mb.name_count = saved_counts
    return program


def _distinct_outputs(names: Sequence[str], taken: Sequence[str]) -> list[str]:
    """Output names that name no input or state and no other output (a program
    returning its input `x` as `x`): a clash gets `_out`, numbered if needed."""
    used = set(taken)
    out: list[str] = []
    for name in names:
        new, i = name, 0
        while new in used:
            new = f"{name}_out" if i == 0 else f"{name}_out{i}"
            i += 1
        used.add(new)
        out.append(new)
    return out


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


class _NamedInputs:
    """`fn` as the function coremltools' builder takes (`mb.program(...)(main)`): it
    names the program's inputs after `main.__code__.co_varnames[:co_argcount]` and
    calls `main(*inputs)`, so a callable carrying those two fields is enough (no
    function is compiled from the input names)."""

    __name__ = "main"

    def __init__(self, fn: Any, names: Sequence[str]):
        self._fn = fn
        self.__code__ = SimpleNamespace(co_argcount=len(names), co_varnames=tuple(names))

    def __call__(self, *args: Any) -> Any:
        return self._fn(*args)


def save_program(
    program: Any,
    path: str | os.PathLike[str],
    target: Any,
    metadata: dict[str, str] | None = None,
) -> None:
    """Write `program` (a Program, or Programs by function name: several make a
    multifunction package, the first the default function) as an ML Program
    package (no coremltools passes), with `metadata` as its user-defined metadata."""
    quiet_third_party_logs()
    ct = ensure_coremltools()

    programs = program if isinstance(program, dict) else {"main": program}
    path = os.fspath(path)
    with contextlib.redirect_stderr(io.StringIO()):  # coremltools' progress bars
        if len(programs) == 1:
            write_mlprogram(next(iter(programs.values())), path, target, metadata or {})
        else:
            tmp = tempfile.mkdtemp(prefix="qopt-functions-")
            try:
                desc = ct.utils.MultiFunctionDescriptor()
                for name, prog in programs.items():
                    single = os.path.join(tmp, f"{name}.mlpackage")
                    write_mlprogram(prog, single, target, {})
                    desc.add_function(single, "main", name)
                desc.default_function_name = next(iter(programs))
                with phase("multifunction merge"):
                    ct.utils.save_multifunction(desc, path)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            _set_metadata(path, metadata or {})
    with phase("package manifest"):
        _stable_manifest(path)
    default_modes(path)  # 0644 files (coremltools writes model.mlmodel 0600)


class _SpecModel:
    """The part of a coremltools `MLModel` that its conversion's metadata steps
    (`_record_build_metadata`) read and write: the spec, in memory."""

    def __init__(self, spec: Any):
        self._spec = spec

    @property
    def user_defined_metadata(self) -> Any:
        return self._spec.description.metadata.userDefined

    def _set_build_info_mil_attributes(self, metadata: dict[str, str]) -> None:
        ensure_coremltools()
        from coremltools.models import MLModel

        MLModel._set_build_info_mil_attributes(cast(Any, self), metadata)


def _apply_pipeline(program: Any, pipeline: Any) -> None:
    """coremltools' `PassPipelineManager.apply_pipeline` without its debug log lines
    (each formats the whole Program as text, printed or not) and progress bar: the
    same validations, passes and options, in the same order."""
    ensure_coremltools()
    from coremltools.converters.mil.mil.passes.pass_registry import PASS_REGISTRY

    pipeline.validate()
    program.validate()
    for pass_name in pipeline.passes:
        graph_pass = PASS_REGISTRY[pass_name]
        graph_pass.set_options(pipeline.get_options(pass_name))
        graph_pass(program)
        program.validate(check_essential_scope=pass_name == "common::dead_code_elimination")


def write_mlprogram(program: Any, path: str, target: Any, metadata: dict[str, str]) -> None:
    """Write the package that `ct.convert(program, convert_to="mlprogram",
    minimum_deployment_target=target, compute_precision=FLOAT32,
    pass_pipeline=EMPTY, skip_model_load=True).save(path)` writes, followed by
    `_set_metadata(path, metadata)`, through the same coremltools steps (its MIL
    frontend check, the frontend / main / backend pass pipelines, its MIL-to-protobuf
    backend that writes `weight.bin`, `_create_mlpackage`, its build metadata and
    deployment checks), without the steps that cost time and leave the package as it
    is: `ct.convert`'s `gc.collect()`, the pipelines' debug text of the whole Program,
    the temporary package that `save` copies, and the spec's write / read / rewrite
    (written once, deterministically, with `metadata` set)."""
    ct = ensure_coremltools()
    from coremltools.converters._converters_entry import _record_build_metadata
    from coremltools.converters.mil._deployment_compatibility import (
        check_deployment_compatibility,
    )
    from coremltools.converters.mil.converter import (
        ConverterRegistry,
        _construct_other_pipelines,
        _reset_conversion_state,
    )
    from coremltools.models.utils import _create_mlpackage

    main_pipeline: Any = ct.PassPipeline.EMPTY  # a classproperty to the checker
    frontend_pipeline, backend_pipeline = _construct_other_pipelines(
        main_pipeline, "milinternal", "mlprogram"
    )
    weights_dir = tempfile.mkdtemp(prefix="qopt-weights-")
    try:
        options: dict[str, Any] = {
            "inputs": None,
            "outputs": None,
            "classifier_config": None,
            "skip_model_load": True,
            "package_dir": None,
            "debug": False,
            "specification_version": target.value,
            "use_default_fp16_io": False,
            "states": [],
            "weights_dir": weights_dir,
            "convert_from": "milinternal",
            "convert_to": "mlprogram",
        }
        with phase("MIL passes"):
            program = ConverterRegistry.frontends["milinternal"]()(program, **options)
            for pipeline in (frontend_pipeline, main_pipeline, backend_pipeline):
                _apply_pipeline(program, pipeline)
            program._check_early_error_out_for_invalid_program()
        with phase("MIL to protobuf"), _weights_written_in_place():
            try:
                spec = ConverterRegistry.backends["mlprogram"]()(program, **options)
            finally:
                _reset_conversion_state()
        for description in spec.description.input:
            for size_range in description.type.multiArrayType.shapeRange.sizeRanges:
                if size_range.upperBound == -1:
                    raise ValueError(
                        "For mlprogram, inputs with infinite upper_bound is not allowed"
                    )
        check_deployment_compatibility(
            spec=spec, representation="mlprogram", deployment_target=target
        )
        _record_build_metadata(_SpecModel(spec), "milinternal", source_dialect=None)
        user_defined = spec.description.metadata.userDefined
        user_defined.pop(CONVERSION_DATE_METADATA, None)
        for key, value in metadata.items():
            user_defined[key] = value
        with phase("package write"):
            _create_mlpackage(spec, weights_dir, path)
            with open(_spec_path(path), "wb") as f:
                f.write(spec.SerializeToString(deterministic=True))
    finally:
        shutil.rmtree(weights_dir, ignore_errors=True)


#: coremltools' BlobWriter method for each sub-byte MIL type (their values sit one per
#: byte in the array; the writer packs them) and, by numpy kind and item size, for the
#: others: `helper._get_offset_by_writing_data`'s table.
_SUB_BYTE_WRITERS = ("int4", "uint1", "uint2", "uint3", "uint4", "uint6")
_WRITERS = {
    ("f", 4): "write_float_data", ("f", 2): "write_fp16_data", ("u", 1): "write_uint8_data",
    ("i", 1): "write_int8_data", ("u", 2): "write_uint16_data", ("i", 2): "write_int16_data",
    ("i", 4): "write_int32_data", ("u", 4): "write_uint32_data",
}  # fmt: skip


@contextlib.contextmanager
def _weights_written_in_place() -> Iterator[None]:
    """coremltools' MIL-to-protobuf backend writes each weight into weight.bin through
    `helper._get_offset_by_writing_data`, which copies the weight first (`flatten()`;
    an fp16 weight twice, `flatten().tobytes()`): the copy of the largest weight was
    most of the package write's memory peak. Inside this context the backend calls
    `_write_weight` instead: the same BlobWriter method with the same values in the same
    order, given the array itself (flat, a view where it is contiguous), so weight.bin
    holds the same bytes."""
    ensure_coremltools()
    from coremltools.converters.mil.backend.mil import helper

    original = helper._get_offset_by_writing_data

    def write(var: Any, blob_writer: Any) -> int:
        return _write_weight(var, blob_writer, original)

    helper._get_offset_by_writing_data = write
    try:
        yield
    finally:
        helper._get_offset_by_writing_data = original


def _write_weight(var: Any, blob_writer: Any, original: Any) -> int:
    """The offset of `var`'s value written by `blob_writer`, without a copy of it (what
    `original`, coremltools' function, writes; it runs for a value it has no writer for,
    and raises its error)."""
    from coremltools.converters.mil.mil import types

    value = var.val
    if not isinstance(value, np.ndarray):
        return original(var, blob_writer)
    flat = np.ascontiguousarray(value).reshape(-1)
    sub_byte = next((n for n in _SUB_BYTE_WRITERS if var.dtype == getattr(types, n)), None)
    if sub_byte is not None:
        return getattr(blob_writer, f"write_{sub_byte}_data")(flat)
    method = _WRITERS.get((flat.dtype.kind, flat.dtype.itemsize))
    if method is None:
        return original(var, blob_writer)
    if method == "write_fp16_data":
        flat = flat.view(np.uint16)  # coremltools hands the fp16 bits as uint16
    return getattr(blob_writer, method)(flat)


def _spec_path(path: str) -> str:
    return os.path.join(path, "Data", "com.apple.CoreML", "model.mlmodel")


#: coremltools' user-defined metadata key holding the day of the conversion: left
#: out, so that the same program gives the same package on any day.
CONVERSION_DATE_METADATA = "com.github.apple.coremltools.conversion_date"


def _set_metadata(path: str, metadata: dict[str, str]) -> None:
    """Add `metadata` to the user-defined metadata of the package coremltools wrote
    at `path` (its spec is `Data/com.apple.CoreML/model.mlmodel`), drop the
    conversion date, and write the spec back deterministically (map keys sorted)."""
    ensure_coremltools()
    from coremltools.proto import Model_pb2
    from google.protobuf.message import Message

    spec_path = _spec_path(path)
    # a class made at run time by protobuf's reflection: the checker cannot see its base
    spec: Any = cast(Message, Model_pb2.Model())
    with open(spec_path, "rb") as f:
        spec.ParseFromString(f.read())
    user_defined = spec.description.metadata.userDefined
    user_defined.pop(CONVERSION_DATE_METADATA, None)
    for key, value in metadata.items():
        user_defined[key] = value
    with open(spec_path, "wb") as f:
        f.write(spec.SerializeToString(deterministic=True))


#: Namespace of the package items' identifiers (uuid5 of an item's path and content).
_MANIFEST_NAMESPACE = uuid.UUID("5d1f3c1e-8a4b-5b0e-9c1d-71b0c0e1a513")


def _stable_manifest(path: str) -> None:
    """Replace the random identifiers coremltools gives the package's items
    (`Manifest.json`: a uuid4 per item, and the root model's) by identifiers derived
    from each item's path and content, so that the same program gives a
    byte-identical package."""
    manifest_path = os.path.join(path, "Manifest.json")
    with open(manifest_path) as f:
        manifest = json.load(f)
    entries: dict[str, dict[str, str]] = manifest["itemInfoEntries"]
    renamed: dict[str, str] = {}
    for old_id, info in entries.items():
        digest = _content_digest(os.path.join(path, "Data", info["path"]))
        renamed[old_id] = str(uuid.uuid5(_MANIFEST_NAMESPACE, f"{info['path']}\0{digest}"))
    manifest["itemInfoEntries"] = {
        renamed[old_id]: entries[old_id] for old_id in sorted(entries, key=renamed.__getitem__)
    }
    manifest["rootModelIdentifier"] = renamed[manifest["rootModelIdentifier"]]
    with open(manifest_path, "w") as f:
        f.write(json.dumps(manifest, indent=4) + "\n")


def _content_digest(item: str) -> str:
    """SHA-256 of a file, or of a directory's files (relative paths and bytes, sorted)."""
    digest = hashlib.sha256()
    files = [item] if os.path.isfile(item) else []
    for root, dirs, names in os.walk(item):
        dirs.sort()
        files += [os.path.join(root, name) for name in sorted(names)]
    for file in files:
        digest.update(os.path.relpath(file, item).encode() + b"\0")
        with open(file, "rb") as f:  # in chunks: weight.bin may be gigabytes
            while chunk := f.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()


__all__ = [
    "STATES_METADATA",
    "build_program",
    "build_programs",
    "check_states",
    "emitted_mil_ops",
    "function_of",
    "input_names_of",
    "output_names_of",
    "package_metadata",
    "save_program",
    "state_names_of",
    "weight_compression",
    "write_mlprogram",
]
