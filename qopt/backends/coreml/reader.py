"""`.mlpackage` (any ML Program) -> the coreml dialect, for the ops qopt knows.

The package's protobuf spec is loaded through coremltools
(`ct.models.MLModel(path, skip_model_load=True).get_spec()`); constants come
from immediate values or from `weights/weight.bin` (MILBlob storage format,
PATTERNS.md §3.5: 64-byte header, then per blob a 64-byte metadata record
`{sentinel, dtype, size, data offset}` and the data; sub-byte data is an
LSB-first bit stream). Inputs MIL requires to be constants of a fixed form
become op properties (the op's `MIL_PARAMS`), with MIL's defaults where the
package omits them. Ops outside the dialect are reported all at once.
"""

from __future__ import annotations

import os
import struct
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    Signedness,
    StringAttr,
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
from xdsl.ir import Attribute, Block, Region, SSAValue

from qopt.backends.coreml.packing import packed_nbytes, unpack_bits
from qopt.dialects import coreml
from qopt.dialects.coreml import OPSET_ATTR, storage_dtype
from qopt.errors import QoptError
from qopt.resources import make_resource, printable_inline

_BLOB_SENTINEL = 0xDEADBEEF

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
_BLOB_DTYPES = {
    1: "FLOAT16", 2: "FLOAT32", 3: "UINT8", 4: "INT8", 6: "INT16", 7: "UINT16", 8: "INT4",
    9: "UINT1", 10: "UINT2", 11: "UINT4", 12: "UINT3", 13: "UINT6", 14: "INT32", 15: "UINT32",
}  # fmt: skip

#: MIL's defaults for parameters a package may omit.
_DEFAULTS: dict[str, dict[str, Any]] = {
    "matmul": {"transpose_x": False, "transpose_y": False},
    "conv": {"pad_type": "valid", "groups": 1},
    "gather": {"axis": 0},
    "concat": {"interleave": False},
    "softmax": {"axis": -1},
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


class _Package:
    def __init__(self, path: str):
        self.path = path
        self.weights: dict[str, bytes] = {}

    def blob(self, file_name: str, offset: int) -> tuple[bytes, str]:
        rel = file_name.replace("@model_path/", "")
        full = os.path.join(self.path, "Data", "com.apple.CoreML", rel)
        if full not in self.weights:
            try:
                with open(full, "rb") as f:
                    self.weights[full] = f.read()
            except OSError as e:
                raise QoptError(f"read_mlpackage: cannot read weights {full}: {e}") from None
        raw = self.weights[full]
        sentinel, code, size, data_offset = struct.unpack_from("<IIQQ", raw, offset)
        if sentinel != _BLOB_SENTINEL or code not in _BLOB_DTYPES:
            raise QoptError(f"read_mlpackage: bad blob record at offset {offset} of {full}")
        return raw[data_offset : data_offset + size], _BLOB_DTYPES[code]


def _tensor_type(value_type: Any) -> tuple[Attribute, tuple[int, ...]]:
    from coremltools.proto import MIL_pb2

    tensor = value_type.tensorType
    name = MIL_pb2.DataType.Name(tensor.dataType)
    if name == "STRING":
        return StringAttr(""), ()
    if name not in _TYPES:
        raise QoptError(f"read_mlpackage: unsupported MIL data type {name}")
    dims = tuple(int(d.constant.size) for d in tensor.dimensions)
    return _TYPES[name], dims


def _decode(raw: bytes, elem: Attribute, shape: tuple[int, ...]) -> np.ndarray:
    count = int(np.prod(shape, dtype=np.int64))
    if (isinstance(elem, IntegerType) and 1 < elem.width.data < 8) or elem == IntegerType(
        1, Signedness.UNSIGNED
    ):
        assert isinstance(elem, IntegerType)
        signed = elem.signedness.data != Signedness.UNSIGNED
        n = elem.width.data
        return unpack_bits(raw[: packed_nbytes(count, n)], n, count, signed).reshape(shape)
    dtype = storage_dtype(elem)
    if dtype == np.bool_:
        return np.frombuffer(raw, np.uint8)[:count].astype(np.bool_).reshape(shape)
    return np.frombuffer(raw, dtype)[:count].reshape(shape).copy()


def _value(pkg: _Package, value: Any) -> tuple[Any, Attribute, tuple[int, ...]]:
    """(numpy array or str, element type, shape) of a proto `Value`."""
    elem, shape = _tensor_type(value.type)
    kind = value.WhichOneof("value")
    if kind == "blobFileValue":
        raw, _ = pkg.blob(value.blobFileValue.fileName, value.blobFileValue.offset)
        return _decode(raw, elem, shape), elem, shape
    tensor = value.immediateValue.tensor
    which = tensor.WhichOneof("value")
    if which == "strings":
        return str(tensor.strings.values[0]), elem, shape
    if which == "bytes":
        return _decode(tensor.bytes.values, elem, shape), elem, shape
    values = np.asarray(list(getattr(tensor, which).values))  # small immediate values only
    dtype = storage_dtype(elem)
    return values.astype(dtype).reshape(shape), elem, shape


def _param_attr(array: Any, kind: str) -> Attribute:
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


class Reader:
    def __init__(self, pkg: _Package):
        self.pkg = pkg
        self.block = Block()
        self.values: dict[str, SSAValue] = {}
        self.arrays: dict[str, Any] = {}

    def const(self, array: np.ndarray, elem: Attribute, hint: str) -> SSAValue:
        type = TensorType(elem, list(array.shape))
        width = elem.width.data if isinstance(elem, IntegerType) else 32
        if array.size <= 16 and width >= 8 and printable_inline(np.asarray(array)):
            attr: Attribute = DenseIntOrFPElementsAttr(type, BytesAttr(array.tobytes()))
        else:
            attr = make_resource(hint, np.asarray(array, order="C"), type)
        op = coreml.ConstOp.build(properties={"value": attr}, result_types=[type])
        op.result.name_hint = _hint(hint)
        self.block.add_op(op)
        return op.result

    def argument(self, name: str, binding: Any) -> tuple[SSAValue | None, Any]:
        if binding.WhichOneof("binding") == "name":
            key = binding.name
            return self.values.get(key), self.arrays.get(key)
        array, elem, _ = _value(self.pkg, binding.value)
        if isinstance(array, str):
            return None, array
        return self.const(array, elem, name), array

    def op(self, op: Any) -> None:
        cls = coreml.BY_MIL_NAME[op.type]
        args: dict[str, Any] = {}
        arrays: dict[str, Any] = {}
        for key, arg in op.inputs.items():
            bound = [self.argument(key, b) for b in arg.arguments]
            if key in cls.MIL_OPERANDS and cls is coreml.ConcatOp and key == "values":
                args[key] = [v for v, _ in bound]
            else:
                args[key], arrays[key] = bound[0]
        for key, attr in op.attributes.items():  # iOS16/17 constexpr parameters
            if key == "name":
                continue
            array, elem, _ = _value(self.pkg, attr)
            arrays[key] = array
            if key in cls.MIL_OPERANDS:
                args[key] = self.const(array, elem, key)
        props: dict[str, Attribute] = {}
        defaults = _DEFAULTS.get(op.type, {})
        out_elem, out_shape = _tensor_type(op.outputs[0].type)
        for key, kind in cls.MIL_PARAMS.items():
            if key in op.inputs and arrays.get(key) is None:
                raise QoptError(
                    f"read_mlpackage: {op.type} '{op.outputs[0].name}' computes its "
                    f"'{key}' at run time; qopt reads it only as a constant"
                )
            value = arrays.get(key, defaults.get(key))
            if value is None:
                value = self._derived_default(op.type, key, args, out_shape)
            if value is not None:
                props[key] = _param_attr(value, kind)
        operands: list[Any] = []
        for key in cls.MIL_OPERANDS:
            operands.append(args.get(key))
        result = TensorType(out_elem, list(out_shape))
        new = cls.build(operands=operands, properties=props, result_types=[result])
        new.results[0].name_hint = _hint(op.outputs[0].name)
        self.block.add_op(new)
        self.values[op.outputs[0].name] = new.results[0]

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


def read_mlpackage(path: Any) -> ModuleOp:
    """Read an ML Program `.mlpackage` into a module with one coreml function."""
    from qopt.logs import quiet_third_party_logs

    quiet_third_party_logs()
    import coremltools as ct
    from coremltools.proto import MIL_pb2  # noqa: F401

    path = os.fspath(path)
    if not os.path.isdir(path):
        raise QoptError(f"read_mlpackage: {path} is not an .mlpackage directory")
    try:
        spec = ct.models.MLModel(path, skip_model_load=True).get_spec()
    except Exception as e:  # coremltools raises many kinds
        raise QoptError(f"read_mlpackage: cannot load {path}: {e}") from None
    if spec.WhichOneof("Type") != "mlProgram":
        raise QoptError(
            f"read_mlpackage: {path} is not an ML Program (it is a {spec.WhichOneof('Type')})"
        )
    program = spec.mlProgram
    if "main" not in program.functions:
        raise QoptError(f"read_mlpackage: {path} has no main function")
    function = program.functions["main"]
    block_spec = function.block_specializations[function.opset]
    unknown = sorted({op.type for op in block_spec.operations} - {"const", *coreml.BY_MIL_NAME})
    if unknown:
        raise QoptError(
            f"read_mlpackage: {path} uses MIL ops qopt does not know: {', '.join(unknown)}"
        )
    reader = Reader(_Package(path))
    arg_types = []
    for named in function.inputs:
        elem, shape = _tensor_type(named.type)
        arg_types.append(TensorType(elem, list(shape)))
    reader.block = Block(arg_types=arg_types)
    for named, arg in zip(function.inputs, reader.block.args, strict=True):
        arg.name_hint = _hint(named.name)
        reader.values[named.name] = arg
    for op in block_spec.operations:
        if op.type == "const":
            array, elem, _ = _value(reader.pkg, op.attributes["val"])
            name = op.outputs[0].name
            reader.arrays[name] = array
            if not isinstance(array, str):
                reader.values[name] = reader.const(array, elem, name)
            continue
        reader.op(op)
    outputs = [reader.values[name] for name in block_spec.outputs]
    reader.block.add_op(ReturnOp(*outputs))
    func = FuncOp.from_region(
        "forward",
        arg_types,
        [v.type for v in outputs],
        Region(reader.block),
    )
    opset = f"iOS{int(function.opset.removeprefix('CoreML')) + 10}"
    func.attributes[OPSET_ATTR] = StringAttr(opset)
    module = ModuleOp([func])
    # Constants only used as MIL parameters (now properties) are dropped.
    for op in reversed(list(reader.block.ops)):
        if isinstance(op, coreml.ConstOp) and not op.result.uses:
            reader.block.erase_op(op)
    module.verify()
    return module


__all__ = ["read_mlpackage"]
