"""`.mlpackage` (any ML Program) -> the coreml dialect, for the ops qopt knows.

A package is untrusted input: it is parsed here, without coremltools' loader,
and every name, offset, size and shape in it is checked before it is used.

Layout (coremltools' `ModelPackage`, modelpackage/src/ModelPackage.cpp):
`<pkg>/Manifest.json` is `{"fileFormatVersion": "1.0.0", "itemInfoEntries":
{id: {"path", "name", "author", "description"}}, "rootModelIdentifier": id}`;
an item's file is `<pkg>/Data/<path>`. The root item is the protobuf `Model`
spec (`com.apple.CoreML/model.mlmodel`), parsed with `Model_pb2`. Blob values
name their file as `@model_path/<relative path>`, relative to the root model's
directory (`@model_path/weights/weight.bin`).

Constants come from immediate values or from blob files in the MILBlob storage
format (docs/interfaces.md, `weight.bin`): a 64-byte header `{count: u32, version: u32 = 2,
reserved}`, then per blob a 64-byte metadata record `{sentinel 0xDEADBEEF: u32,
dtype: u32, size: u64, data offset: u64, padding bits: u64, reserved}` and the
data; sub-byte data is an LSB-first bit stream (packing.py). Inputs MIL requires
to be constants of a fixed form become op properties (the op's `MIL_PARAMS`),
with MIL's defaults where the package omits them. Ops outside the dialect are
reported all at once.

What is refused (each a `QoptError` naming the package, and the op by its
output name where there is one, on one line):
- files outside the package: absolute paths, `..` components, and any path
  whose `os.path.realpath` leaves the package's realpath (symlinks); files that
  are not regular files (devices, fifos, directories); files above their cap;
- a manifest that is not JSON of the structure above, a spec that is not a
  protobuf `Model` holding an ML Program with a `main` function;
- blob records outside the file or with a bad sentinel, data outside the file
  or inside its header, a data size other than the declared type needs (for
  sub-byte types the packed size), a dtype code other than the declared
  element type's, and blobs of one file that together decode more bytes than
  the file holds (overlapping blobs: a blob referenced several times is
  decoded once and shared, read-only);
- types that are not tensors of a fixed shape (unknown dimensions or rank:
  qopt reads fixed shapes), rank above `MAX_RANK`, more than `MAX_ELEMENTS`
  elements; immediate values whose count is not the element count;
- any other malformed structure (an input naming an undefined value, a missing
  output or attribute, wrong arity, an unknown opset, a module that does not
  verify).

Resource bounds (module constants):
- `MAX_MANIFEST_BYTES`: Manifest.json (coremltools writes under 1 KiB);
- `MAX_SPEC_BYTES`: the root model spec (its size bounds every immediate value);
- `MAX_BLOB_FILE_BYTES`: one blob file. Blob files are never read whole: each
  record and each blob's data is read with `pread`, after its checks, and the
  decoded blobs of a file hold at most as many bytes as the file (at most 8x
  that once sub-byte values are unpacked into byte containers), so memory is
  bounded by the package's own size;
- `MAX_RANK`, `MAX_ELEMENTS`: every declared tensor type (constants, function
  inputs, op results); nothing is allocated from a declared shape before it
  is checked against the bytes present (a blob's size, an immediate value's
  count or byte length);
- `MAX_PARAM_ENTRIES`: list-valued MIL parameters (axes, perm, pad, ...).

They fit every package coremltools or qopt writes; a genuine package above one
can be read by raising the constant (they are module attributes).
"""

from __future__ import annotations

import json
import os
import re
import struct
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
from xdsl.dialects.builtin import (
    AnyFloat,
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    Signedness,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    f16,
    f32,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import OptOperandDef, VarOperandDef
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from qopt.backends.coreml.deps import ensure_coremltools
from qopt.backends.coreml.package import (
    MAX_BLOB_FILE_BYTES,
    MAX_ELEMENTS,
    MAX_MANIFEST_BYTES,
    MAX_PARAM_ENTRIES,
    MAX_RANK,
    MAX_SPEC_BYTES,
    CheckedType,
    Package,
    decode_values,
    message_line,
    quoted_name,
    value_nbytes,
)
from qopt.dialects import coreml
from qopt.dialects.coreml import OPSET_ATTR, OPSETS, storage_dtype
from qopt.dialects.ml_program import GlobalOp
from qopt.dialects.signature import set_output_names
from qopt.errors import QoptError
from qopt.logs import quiet_third_party_logs
from qopt.resources import WeightStore, attach, make_resource, printable_inline

#: Package metadata keys qopt writes (qopt/backends/coreml/emitter.py).
STATES_METADATA = "qopt.states"
METHOD_METADATA = "qopt.method"
VERSION_METADATA = "qopt.version"
SCALAR_INPUTS_METADATA = "qopt.scalar_inputs"
SOURCE_HASH_METADATA = "qopt.source_sha256"
WEIGHTS_METADATA = "qopt.weights"
_TYPES: dict[str, Attribute] = {
    "FLOAT16": f16,
    "FLOAT32": f32,
    "INT8": i8,
    "UINT8": IntegerType(8, Signedness.UNSIGNED),
    "INT16": i16,
    "UINT16": IntegerType(16, Signedness.UNSIGNED),
    "INT32": i32,
    "UINT32": IntegerType(32, Signedness.UNSIGNED),
    "INT64": i64,
    "BOOL": i1,
    "INT4": IntegerType(4),
    **{f"UINT{n}": IntegerType(n, Signedness.UNSIGNED) for n in (1, 2, 3, 4, 6)},
}
#: numpy dtype of each repeated field of an immediate `TensorValue` (read with
#: `np.fromiter`: no Python list of its values).
_FIELD_DTYPES = {
    "floats": np.float32,
    "doubles": np.float64,
    "ints": np.int32,
    "longInts": np.int64,
    "bools": np.bool_,
}

#: Errors malformed input raises in code that reads it (numpy, xDSL builders and
#: verifiers, struct); at the op and package boundaries they become a QoptError.
_MALFORMED = (
    KeyError,
    IndexError,
    ValueError,
    TypeError,
    OverflowError,
    struct.error,
    VerifyException,
    DiagnosticException,
)

#: MIL's defaults for parameters a package may omit.
_DEFAULTS: dict[str, dict[str, Any]] = {
    "matmul": {"transpose_x": False, "transpose_y": False},
    "conv": {"pad_type": "valid", "groups": 1},
    "gather": {"axis": 0},
    "gather_along_axis": {"axis": 0},
    "scatter": {"axis": 0, "mode": "add"},
    "concat": {"interleave": False},
    "softmax": {"axis": -1},
    "cumsum": {"axis": 0, "exclusive": False, "reverse": False},
    "gelu": {"mode": "EXACT"},
    "rsqrt": {"epsilon": 1e-12},
    "layer_norm": {"epsilon": 1e-5},
    "batch_norm": {"epsilon": 1e-5},
    "max_pool": {"pad_type": "valid", "ceil_mode": False},
    "avg_pool": {"pad_type": "valid", "ceil_mode": False, "exclude_padding_from_average": False},
    "reduce_mean": {"keep_dims": False},
    "reduce_sum": {"keep_dims": False},
    "reduce_max": {"keep_dims": False},
    "reduce_min": {"keep_dims": False},
    "log": {"epsilon": 1e-45},
    "inverse": {"epsilon": 1e-4},
}


def _param_attr(array: Any, kind: str) -> Attribute:
    if (kind == "str") != isinstance(array, str):
        raise TypeError(f"expected {'a string' if kind == 'str' else 'a number'}")
    if kind in ("ints", "bools") and np.size(array) > MAX_PARAM_ENTRIES:
        raise ValueError(f"it has {np.size(array)} entries, more than {MAX_PARAM_ENTRIES}")
    if kind == "str":
        return StringAttr(str(array))
    if kind == "ints":
        return DenseArrayBase.from_list(i64, [int(v) for v in np.asarray(array).reshape(-1)])
    if kind == "bools":
        return DenseArrayBase.from_list(i1, [bool(v) for v in np.asarray(array).reshape(-1)])
    if kind == "float":
        return FloatAttr(float(np.asarray(array).reshape(())), 64)
    if kind == "bool":
        return IntegerAttr(int(bool(np.asarray(array).reshape(()))), i1)
    return IntegerAttr(int(np.asarray(array).reshape(())), i64)


def _operand_kinds(cls: type[coreml.CoremlOp]) -> dict[str, str]:
    """MIL input name -> `single`, `optional` or `variadic`, for each operand."""
    kinds: dict[str, str] = {}
    defs = cls.get_irdl_definition().operands
    for key, (_, definition) in zip(cls.MIL_OPERANDS, defs, strict=True):
        if isinstance(definition, OptOperandDef):
            kinds[key] = "optional"
        elif isinstance(definition, VarOperandDef):
            kinds[key] = "variadic"
        else:
            kinds[key] = "single"
    return kinds


class Reader:
    """Reads one function of the package (its block, values and state uses)."""

    def __init__(self, pkg: Package, store: WeightStore, states: _States):
        self.pkg = pkg
        self.block = Block()
        self.values: dict[str, SSAValue] = {}
        self.arrays: dict[str, Any] = {}
        self.where = ""  # the op being read, for messages
        self.store = store  # the module's weights
        self.states = states  # the module's states
        self.states_in: dict[str, str] = {}  # the function's state inputs -> global names
        self.names: dict[Operation, str] = {}  # op -> its MIL op type and output name

    def fail(self, message: str) -> QoptError:
        return self.pkg.error(f"{self.where}: {message}" if self.where else message)

    # ----- types and values ----------------------------------------------------

    def tensor_type(self, value_type: Any, what: str, string_ok: bool = False) -> CheckedType:
        ensure_coremltools()
        from coremltools.proto import MIL_pb2

        kind = value_type.WhichOneof("type")
        if kind != "tensorType":
            raise self.fail(f"{what} is {'a ' + kind if kind else 'untyped'}; qopt reads tensors")
        tensor = value_type.tensorType
        try:
            name = MIL_pb2.DataType.Name(tensor.dataType)
        except ValueError:
            raise self.fail(f"{what} has unknown MIL data type {tensor.dataType}") from None
        dims = tensor.dimensions
        if name == "STRING":
            if not string_ok:
                raise self.fail(f"{what} is a string; qopt reads numeric tensors")
            if len(dims) or tensor.rank:
                raise self.fail(f"{what} is a string tensor; qopt reads string scalars only")
            return CheckedType(name, StringAttr(""), (), 1)
        if name not in _TYPES:
            raise self.fail(f"{what} has unsupported MIL data type {name}")
        if tensor.rank < 0:
            raise self.fail(f"{what} has an unknown rank; qopt reads fixed shapes")
        if len(dims) > MAX_RANK:
            raise self.fail(f"{what} has rank {len(dims)}, more than {MAX_RANK}")
        if tensor.rank != len(dims):
            raise self.fail(f"{what} declares rank {tensor.rank} but has {len(dims)} dimensions")
        shape: list[int] = []
        count = 1
        for dim in dims:
            if dim.WhichOneof("dimension") != "constant":
                raise self.fail(
                    f"{what} has a dimension that is not a constant; qopt reads fixed shapes"
                )
            size = int(dim.constant.size)
            if size > MAX_ELEMENTS:
                raise self.fail(f"{what} has a dimension of {size}, more than {MAX_ELEMENTS}")
            shape.append(size)
            count *= size
        if count > MAX_ELEMENTS:
            raise self.fail(f"{what} has shape {shape}: more than {MAX_ELEMENTS} elements")
        return CheckedType(name, _TYPES[name], tuple(shape), count)

    def value(self, value: Any, what: str) -> tuple[Any, CheckedType]:
        """(numpy array or str, type) of a proto `Value`."""
        t = self.tensor_type(value.type, what, string_ok=True)
        kind = value.WhichOneof("value")
        if kind == "blobFileValue":
            if t.name == "STRING":
                raise self.fail(f"{what} is a string stored in a blob")
            blob = value.blobFileValue
            where = f"{self.where}: {what}" if self.where else what
            return self.pkg.blob(where, blob.fileName, blob.offset, t).reshape(t.shape), t
        if kind != "immediateValue":
            raise self.fail(f"{what} has no value")
        if value.immediateValue.WhichOneof("value") != "tensor":
            raise self.fail(f"{what} is not a tensor value")
        tensor = value.immediateValue.tensor
        which = tensor.WhichOneof("value")
        if t.name == "STRING":
            if which != "strings" or len(tensor.strings.values) != 1:
                raise self.fail(f"{what} is declared a string but holds no single string")
            return str(tensor.strings.values[0]), t
        dtype = storage_dtype(t.elem)
        if which == "strings":
            raise self.fail(f"{what} holds strings but is declared {t.name}")
        if which is None:
            if t.count:
                raise self.fail(f"{what} has no values; its type {list(t.shape)} needs {t.count}")
            return np.zeros(t.shape, dtype), t
        if which == "bytes":
            raw = tensor.bytes.values
            need = value_nbytes(t.elem, t.count)
            if len(raw) != need:
                raise self.fail(
                    f"{what} holds {len(raw)} bytes; its type {t.name} {list(t.shape)} needs {need}"
                )
            return decode_values(raw, t.elem, t.count).reshape(t.shape).copy(), t
        values = getattr(tensor, which).values
        if len(values) != t.count:
            raise self.fail(
                f"{what} holds {len(values)} values; its type {list(t.shape)} needs {t.count}"
            )
        array = np.fromiter(values, _FIELD_DTYPES[which], count=len(values))
        return array.astype(dtype).reshape(t.shape), t

    # ----- ops -----------------------------------------------------------------

    def const(self, array: np.ndarray, elem: Attribute, hint: str) -> SSAValue:
        assert isinstance(elem, AnyFloat | IntegerType)  # a _TYPES entry: the array is no string
        type = TensorType(elem, list(array.shape))
        width = elem.width.data if isinstance(elem, IntegerType) else 32
        if array.size <= 16 and width >= 8 and printable_inline(np.asarray(array)):
            attr: Attribute = DenseIntOrFPElementsAttr(type, BytesAttr(array.tobytes()))
        else:
            attr = make_resource(hint, np.asarray(array, order="C"), type, self.store)
        op = coreml.ConstOp.build(properties={"value": attr}, result_types=[type])
        op.result.name_hint = _hint(hint)
        self.block.add_op(op)
        self.names[op] = self.where
        return op.result

    def output(self, op: Any) -> tuple[str, Any]:
        """The name and type of the op's single output (not defined before)."""
        if len(op.outputs) != 1:
            raise self.fail(f"has {len(op.outputs)} outputs; qopt reads ops with one")
        name = op.outputs[0].name
        if not name:
            raise self.fail("its output has no name")
        if name in self.values or name in self.arrays:
            raise self.fail("its output name is defined twice")
        return name, op.outputs[0].type

    def const_op(self, op: Any) -> None:
        name, _ = self.output(op)
        if "val" not in op.attributes:
            raise self.fail("has no 'val' attribute")
        array, t = self.value(op.attributes["val"], "its value")
        self.arrays[name] = array
        if not isinstance(array, str):
            self.values[name] = self.const(array, t.elem, name)

    def identity_op(self, op: Any) -> None:
        """MIL `identity` (qopt writes one for an output that is an input, a constant
        or another output): its output name stands for its input's value."""
        name, out_type = self.output(op)
        if len(op.blocks) or set(op.inputs.keys()) != {"x"}:
            raise self.fail(f"must have the one input 'x', has {sorted(op.inputs.keys())}")
        arguments = op.inputs["x"].arguments
        if len(arguments) != 1:
            raise self.fail("input 'x' must have one argument")
        value, _ = self.argument("x", arguments[0])
        if value is None:
            raise self.fail("input 'x' must be a tensor")
        out = self.tensor_type(out_type, "its output")
        if TensorType(out.elem, list(out.shape)) != value.type:
            raise self.fail(f"its output type differs from its input's, {value.type}")
        self.values[name] = value

    def argument(self, key: str, binding: Any) -> tuple[SSAValue | None, Any]:
        which = binding.WhichOneof("binding")
        if which == "name":
            ref = binding.name
            if ref not in self.values and ref not in self.arrays:
                raise self.fail(
                    f"input '{key}' names {quoted_name(ref)}, which is not defined before it"
                )
            return self.values.get(ref), self.arrays.get(ref)
        if which != "value":
            raise self.fail(f"input '{key}' has an argument with no binding")
        array, t = self.value(binding.value, f"input '{key}'")
        if isinstance(array, str):
            return None, array
        return self.const(array, t.elem, key), array

    def op(self, op: Any) -> None:
        cls = coreml.BY_MIL_NAME[op.type]
        out_name, out_type = self.output(op)
        if len(op.blocks):
            raise self.fail("has nested blocks; qopt reads none for this op")
        kinds = _operand_kinds(cls)
        args: dict[str, Any] = {}
        arrays: dict[str, Any] = {}
        for key, arg in op.inputs.items():
            if not len(arg.arguments):
                raise self.fail(f"input '{key}' has no arguments")
            bound = [self.argument(key, b) for b in arg.arguments]
            if kinds.get(key) == "variadic":
                if any(v is None for v, _ in bound):
                    raise self.fail(f"input '{key}' must be tensors")
                args[key] = [v for v, _ in bound]
            elif len(bound) != 1:
                raise self.fail(f"input '{key}' has {len(bound)} arguments; {op.type} takes one")
            else:
                args[key], arrays[key] = bound[0]
        for key, attr in op.attributes.items():  # iOS16/17 constexpr parameters
            if key == "name":
                continue
            array, t = self.value(attr, f"attribute '{key}'")
            arrays[key] = array
            if key in cls.MIL_OPERANDS:
                if isinstance(array, str):
                    raise self.fail(f"attribute '{key}' must be a tensor")
                args[key] = self.const(array, t.elem, key)
        for key in cls.MIL_PARAMS:
            if key in op.inputs and arrays.get(key) is None:
                raise self.fail(
                    f"computes its '{key}' at run time; qopt reads it only as a constant"
                )
        out = self.tensor_type(out_type, "its output")
        props: dict[str, Attribute] = {}
        defaults = _DEFAULTS.get(op.type, {})
        for key, kind in cls.MIL_PARAMS.items():
            value = arrays.get(key, defaults.get(key))
            if value is None:
                value = self._derived_default(op.type, key, args, out.shape)
            if value is not None:
                try:
                    props[key] = _param_attr(value, kind)
                except (ValueError, TypeError, OverflowError, VerifyException) as e:
                    raise self.fail(f"parameter '{key}' is not a valid {kind}: {e}") from None
        operands: list[Any] = []
        for key in cls.MIL_OPERANDS:
            operand = args.get(key)
            if operand is None and kinds[key] != "optional":
                raise self.fail(f"input '{key}' is missing (or is not a tensor)")
            operands.append(operand)
        result = TensorType(out.elem, list(out.shape))
        new = cls.build(operands=operands, properties=props, result_types=[result])
        new.results[0].name_hint = _hint(out_name)
        self.block.add_op(new)
        self.names[new] = self.where
        self.values[out_name] = new.results[0]

    def state_op(self, op: Any) -> None:
        """MIL `read_state(input)` -> `coreml.read_state`; `write_state(input, data)`
        -> `coreml.coreml_update_state` (coremltools writes `coreml_update_state`
        as `write_state`, then a `read_state` where its result is used)."""
        if len(op.blocks):
            raise self.fail("has nested blocks; qopt reads none for this op")
        allowed = {"input"} | ({"data"} if op.type == "write_state" else set())
        if set(op.inputs.keys()) != allowed:
            raise self.fail(f"must have inputs {sorted(allowed)}, has {sorted(op.inputs.keys())}")
        bindings = op.inputs["input"].arguments
        if len(bindings) != 1 or bindings[0].WhichOneof("binding") != "name":
            raise self.fail("input 'input' must name one state")
        state = bindings[0].name
        if state not in self.states_in:
            raise self.fail(f"input 'input' names {quoted_name(state)}, which is not a state input")
        name = self.states_in[state]
        type = self.states.globals[name].type
        ref = {"state": SymbolRefAttr(name)}
        if op.type == "read_state":
            out_name, out_type = self.output(op)
            out = self.tensor_type(out_type, "its output")
            if TensorType(out.elem, list(out.shape)) != type:
                raise self.fail(f"its output type differs from the state's, {type}")
            new = coreml.ReadStateOp.build(properties=ref, result_types=[type])
        else:
            if len(op.outputs):
                raise self.fail("write_state has no outputs")
            data = op.inputs["data"].arguments
            if len(data) != 1:
                raise self.fail("input 'data' must have one argument")
            value, _ = self.argument("data", data[0])
            if value is None:
                raise self.fail("input 'data' must be a tensor")
            new = coreml.CoremlUpdateStateOp.build(
                operands=[value], properties=ref, result_types=[value.type]
            )
            out_name = ""
        self.block.add_op(new)
        self.names[new] = self.where
        if out_name:
            new.results[0].name_hint = _hint(out_name)
            self.values[out_name] = new.results[0]

    def _derived_default(
        self, op_type: str, key: str, args: dict[str, Any], out_shape: tuple[int, ...]
    ) -> Any:
        x = args.get("x")
        rank = len(x.type.get_shape()) if isinstance(x, SSAValue) else 0
        spatial = max(rank - 2, 0)
        if key in ("strides", "dilations"):
            return [1] * spatial
        if key == "pad":
            return [0] * (2 * spatial)
        if key == "axes":
            return list(range(rank))
        if key == "stride":
            return [1] * rank
        if key == "shape" and op_type == "reshape":
            return list(out_shape)
        return None


def _hint(name: str) -> str | None:
    clean = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return clean if clean and not clean[0].isdigit() else None


def _op_label(op: Any) -> str:
    out = op.outputs[0].name if len(op.outputs) else "<no output>"
    return f"{quoted_name(op.type)[1:-1]} {quoted_name(out)}"


#: The MIL function names and state names qopt reads (a package's names become
#: symbol names; a program of qopt's writes identifiers).
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,199}")
#: Largest `qopt.states` metadata value read (JSON; about 60 bytes per state).
MAX_STATES_METADATA = 1 << 20


def _function_names(pkg: Package, spec: Any) -> list[tuple[str, str]]:
    """(MIL name, qopt name) of each function to read, in the package's order: a
    single `main` is `forward` (or the method qopt recorded), the functions of a
    multifunction package keep their names."""
    program = spec.mlProgram
    names = list(program.functions.keys())
    if not names:
        raise pkg.error("has no main function")
    if len(names) == 1:
        only = names[0]
        method = spec.description.metadata.userDefined.get(METHOD_METADATA, "forward")
        if not _IDENTIFIER.fullmatch(method):
            raise pkg.error(
                f"metadata {METHOD_METADATA} {quoted_name(method)} is not an identifier"
            )
        if only != "main" and not _IDENTIFIER.fullmatch(only):
            raise pkg.error(f"function {quoted_name(only)} has a name qopt does not read")
        return [(only, method if only == "main" else only)]
    ordered = [f.name for f in spec.description.functions if f.name in program.functions]
    ordered += sorted(set(names) - set(ordered))
    for name in ordered:
        if not _IDENTIFIER.fullmatch(name):
            raise pkg.error(f"function {quoted_name(name)} has a name qopt does not read")
    if len(set(ordered)) != len(ordered):
        raise pkg.error("names a function twice")
    return [(name, name) for name in ordered]


def _state_names(pkg: Package, spec: Any) -> dict[str, str]:
    """MIL state name -> global name, from the `qopt.states` metadata qopt writes
    (a JSON object of strings; absent: each state keeps its MIL name)."""
    raw = spec.description.metadata.userDefined.get(STATES_METADATA)
    if raw is None:
        return {}
    what = f"metadata {STATES_METADATA}"
    if len(raw) > MAX_STATES_METADATA:
        raise pkg.error(f"{what} has {len(raw)} characters, more than {MAX_STATES_METADATA}")
    try:
        names = json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise pkg.error(f"{what} is not valid JSON: {e}") from None
    if not isinstance(names, dict):
        raise pkg.error(f"{what} is not a JSON object")
    out: dict[str, str] = {}
    for key, value in cast(dict[Any, Any], names).items():
        if not isinstance(value, str) or not value or len(value) > 1000 or not value.isprintable():
            raise pkg.error(f"{what}: state {quoted_name(key)} has a name qopt does not read")
        out[str(key)] = value
    if len(set(out.values())) != len(out):
        raise pkg.error(f"{what} gives two states one name")
    return out


def _scalar_inputs(pkg: Package, spec: Any) -> dict[str, list[str]]:
    """Method -> the inputs qopt wrote as `[1]` for a rank-0 tensor (the emitter's
    `qopt.scalar_inputs` metadata, a JSON object of lists of names; absent: none)."""
    raw = spec.description.metadata.userDefined.get(SCALAR_INPUTS_METADATA)
    if raw is None:
        return {}
    what = f"metadata {SCALAR_INPUTS_METADATA}"
    if len(raw) > MAX_STATES_METADATA:
        raise pkg.error(f"{what} has {len(raw)} characters, more than {MAX_STATES_METADATA}")
    try:
        table = json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise pkg.error(f"{what} is not valid JSON: {e}") from None
    if not isinstance(table, dict):
        raise pkg.error(f"{what} is not a JSON object")
    out: dict[str, list[str]] = {}
    for method, names in cast(dict[Any, Any], table).items():
        if not isinstance(names, list) or not all(
            isinstance(n, str) for n in cast(list[Any], names)
        ):
            raise pkg.error(f"{what}: method {quoted_name(method)} does not map to a list of names")
        out[str(method)] = [str(n) for n in cast(list[Any], names)]
    return out


READ_MIL_OPS = frozenset({"const", "identity", "write_state", *coreml.BY_MIL_NAME})
"""The MIL op types the reader reads: every coreml dialect op, `const`, `identity`
(an alias of its input) and `write_state` (coremltools' serialization of
`coreml_update_state`)."""


def _read(pkg: Package) -> ModuleOp:
    spec = pkg.read_spec(pkg.read_manifest())
    kind = spec.WhichOneof("Type")
    if kind != "mlProgram":
        raise pkg.error(f"not an ML Program (it is {'a ' + kind if kind else 'empty'})")
    program = spec.mlProgram
    functions = _function_names(pkg, spec)
    states = _States(pkg, _state_names(pkg, spec))
    store = WeightStore()
    readers: list[Reader] = []
    funcs: list[FuncOp] = []
    scalars = _scalar_inputs(pkg, spec)
    for mil_name, name in functions:
        reader = Reader(pkg, store, states)
        function = program.functions[mil_name]
        funcs.append(_read_function(reader, function, mil_name, name, scalars.get(name, [])))
        readers.append(reader)
    unused = [n for n in states.names if n not in states.by_mil]
    if unused:
        raise pkg.error(
            f"metadata {STATES_METADATA} names states the functions do not have: "
            + ", ".join(quoted_name(n) for n in sorted(unused)[:8])
        )
    module = attach(ModuleOp([*states.globals.values(), *funcs]), store)
    for reader in readers:
        # Constants only used as MIL parameters (now properties) are dropped.
        for op in reversed(list(reader.block.ops)):
            if isinstance(op, coreml.ConstOp) and not op.result.uses:
                reader.block.erase_op(op)
        for op in reader.block.ops:
            try:
                op.verify()
            except (VerifyException, DiagnosticException) as e:
                where = reader.names.get(op, op.name)
                raise pkg.error(f"{where}: does not verify: {e}") from None
    module.verify()
    return module


class _States:
    """The package's states: one `ml_program.global` per state name, shared by
    every function that declares it (with one type)."""

    def __init__(self, pkg: Package, names: dict[str, str]):
        self.pkg = pkg
        self.names = names  # MIL state name -> global name (metadata)
        self.globals: dict[str, GlobalOp] = {}  # global name -> its declaration
        self.by_mil: dict[str, str] = {}  # MIL state name -> global name

    def declare(self, mil_name: str, type: TensorType, where: str) -> str:
        name = self.names.get(mil_name, mil_name)
        if not _IDENTIFIER.fullmatch(mil_name):
            raise self.pkg.error(
                f"{where}: state name {quoted_name(mil_name)} is not an identifier"
            )
        if name in self.globals:
            if self.by_mil.get(mil_name) != name or self.globals[name].type != type:
                raise self.pkg.error(
                    f"{where}: state {quoted_name(mil_name)} differs from the one of that name in "
                    "another function"
                )
            return name
        self.globals[name] = GlobalOp(name, type, None)
        self.by_mil[mil_name] = name
        return name


def _read_function(
    reader: Reader, function: Any, mil_name: str, name: str, scalars: Sequence[str] = ()
) -> FuncOp:
    """The coreml function of MIL `function`; its inputs named in `scalars` (the `[1]`
    inputs qopt wrote for rank-0 tensors) are rank-0 arguments again, reshaped to
    `[1]` for the program's ops."""
    pkg = reader.pkg
    label = f"function {quoted_name(mil_name)}"
    match = re.fullmatch(r"CoreML(\d{1,3})", function.opset)
    opset = f"iOS{int(match.group(1)) + 10}" if match else ""
    if opset not in OPSETS:
        raise pkg.error(
            f"{mil_name if mil_name == 'main' else label} has opset {quoted_name(function.opset)}; "
            "qopt reads " + ", ".join(f"CoreML{int(o[3:]) - 10} ({o})" for o in OPSETS)
        )
    if function.opset not in function.block_specializations:
        raise pkg.error(f"{mil_name} has no block for its opset {function.opset}")
    block_spec = function.block_specializations[function.opset]
    unknown = sorted({op.type for op in block_spec.operations} - READ_MIL_OPS)
    if unknown:
        shown = ", ".join(quoted_name(t)[1:-1] for t in unknown[:20])
        more = f" and {len(unknown) - 20} more" if len(unknown) > 20 else ""
        raise pkg.error(f"uses MIL ops qopt does not know: {shown}{more}")
    arg_types: list[TensorType[Attribute]] = []
    arg_names: list[str] = []
    seen: set[str] = set()
    for named in function.inputs:
        reader.where = f"input {quoted_name(named.name)}"
        if not named.name or named.name in seen:
            raise reader.fail("is unnamed or defined twice")
        seen.add(named.name)
        if named.type.WhichOneof("type") == "stateType":
            t = reader.tensor_type(named.type.stateType.wrappedType, "its state type")
            wrapped = TensorType(t.elem, list(t.shape))
            reader.states_in[named.name] = reader.states.declare(named.name, wrapped, reader.where)
            continue
        t = reader.tensor_type(named.type, "its type")
        shape = list(t.shape)
        if named.name in scalars:
            if shape != [1]:
                raise reader.fail(f"is named in {SCALAR_INPUTS_METADATA} but has shape {shape}")
            shape = []
        arg_types.append(TensorType(t.elem, shape))
        arg_names.append(named.name)
    if unknown_scalars := sorted(set(scalars) - set(arg_names)):
        raise pkg.error(
            f"metadata {SCALAR_INPUTS_METADATA} names inputs {mil_name} does not have: "
            + ", ".join(quoted_name(n) for n in unknown_scalars[:8])
        )
    reader.block = Block(arg_types=arg_types)
    for arg_name, arg, arg_type in zip(arg_names, reader.block.args, arg_types, strict=True):
        arg.name_hint = _hint(arg_name)
        reader.values[arg_name] = arg
        if arg_name in scalars:
            one = coreml.ReshapeOp.build(
                operands=[arg],
                properties={"shape": DenseArrayBase.from_list(i64, [1])},
                result_types=[TensorType(arg_type.get_element_type(), [1])],
            )
            reader.block.add_op(one)
            reader.values[arg_name] = one.results[0]
    for op in block_spec.operations:
        reader.where = _op_label(op)
        try:
            if op.type == "const":
                reader.const_op(op)
            elif op.type == "identity":
                reader.identity_op(op)
            elif op.type in ("read_state", "write_state"):
                reader.state_op(op)
            else:
                reader.op(op)
        except QoptError:
            raise
        except _MALFORMED as e:
            raise reader.fail(f"malformed: {type(e).__name__}: {e}") from None
    reader.where = ""
    if not len(block_spec.outputs):
        raise pkg.error(f"{mil_name} has no outputs")
    outputs: list[SSAValue] = []
    for out in block_spec.outputs:
        if out not in reader.values:
            raise pkg.error(f"output {quoted_name(out)} is not a tensor defined in {mil_name}")
        outputs.append(reader.values[out])
    reader.block.add_op(ReturnOp(*outputs))
    func = FuncOp.from_region(name, arg_types, [v.type for v in outputs], Region(reader.block))
    func.attributes[OPSET_ATTR] = StringAttr(opset)
    set_output_names(func, [str(out) for out in block_spec.outputs])  # the package's names
    return func


def read_mlpackage(path: Any) -> ModuleOp:
    """Read an ML Program `.mlpackage` into a module with one coreml function.

    The package is untrusted: see the module docstring for what is checked.
    """
    quiet_third_party_logs()
    path = os.fsdecode(os.fspath(path))
    if not os.path.isdir(path):
        raise QoptError(message_line(f"read_mlpackage: {path} is not an .mlpackage directory"))
    pkg = Package(path)
    try:
        return _read(pkg)
    except QoptError:
        raise
    except _MALFORMED as e:  # the last resort: malformed input a check above missed
        raise pkg.error(f"malformed package: {type(e).__name__}: {e}") from None
    finally:
        pkg.close()


__all__ = ["MAX_BLOB_FILE_BYTES", "MAX_ELEMENTS", "MAX_MANIFEST_BYTES", "MAX_PARAM_ENTRIES",
           "MAX_RANK", "MAX_SPEC_BYTES", "READ_MIL_OPS", "read_mlpackage"]  # fmt: skip
