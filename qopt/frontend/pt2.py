"""Load a `.pt2` archive (written by `torch.export.save`) without running code from it.

`torch.export.load` unpickles with `weights_only=False` (full pickle, which can run any
code) for pickled weights and constants, custom/opaque objects, legacy weight files, and
as a fallback for sample inputs; it hands shape expressions to `sympy.sympify`, which
evaluates them; and it builds tensors from whatever shapes and strides the archive
declares. `load_pt2` treats the archive as untrusted input and rebuilds the program
from the same records with torch's own pieces, but:

* the zip's central directory is checked first (`qopt.limits.Limits`): member count,
  declared sizes (per member, in total, and against the archive's size on disk, so a
  small deflated archive cannot inflate to gigabytes), duplicate names, names outside
  the archive's root;
* the graph (`models/model.json`) is parsed as JSON and checked before torch sees it:
  node count, node targets (only `torch.ops.*` operators and torch's symbolic-int
  operators resolve; nothing else is looked up), symbol names and value ranges; every
  symbolic shape expression is parsed by `qopt.frontend.shape_expr` (never evaluated)
  and replaced by the text of the expression qopt built; metadata qopt does not use
  (`source_fn_stack`, `torch_fn`, `custom`, `from_node`) and guard code are dropped;
* every pickle goes through `torch.load(weights_only=True)` (no fallback), after a
  scan of its `GLOBAL` opcodes that admits only torch's built-in weights-only globals
  plus `_allowed_subclasses()` (torchao registers more types globally at import; the
  scan keeps qopt's list exact);
* raw weights are checked against their record before any tensor is built (dtype,
  shape, strides, offset: no zero or negative strides, no overlapping views, numel
  overflow, the extent inside the record), and every tensor a pickle rebuilds is
  checked the same way (a view must not claim more elements than its storage holds);
* records that need full pickle (custom/opaque objects, legacy `.pt` weight files,
  archives from before torch 2.7) are refused;
* sample inputs (unused by qopt) are loaded the same restricted way, or dropped;
* ahead-of-time compiled (AOTInductor) records are never loaded.

`trust_pickle=True` hands the file to `torch.export.load` as is.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import io
import json
import os
import pickletools
import re
import struct
import types
import typing
import warnings
import zipfile
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any

import torch

from qopt.errors import QoptError, quoted
from qopt.frontend.shape_expr import canonical_shape_expr
from qopt.limits import Limits, check_zip, resolve
from qopt.report import phase

_TRUST_HINT = "pass --trust-pickle / trust_pickle=True only if you trust this file"

_MODEL = "model"


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    line = text.splitlines()[0].strip() if text else ""
    return f"{type(e).__name__}: {line}" if line else type(e).__name__


@functools.cache
def _allowed_subclasses() -> tuple[type, ...]:
    """The torchao tensor subclasses qopt imports, as stored by `torch.export.save`.

    Their pickles need nothing else beyond torch's built-in weights-only globals
    (`torch._tensor._rebuild_from_type_v2`, `torch._utils._rebuild_wrapper_subclass`,
    `torch._utils._rebuild_tensor_v2`, storages, dtypes, `torch.device`,
    `torch.serialization._get_layout`, `collections.OrderedDict`).
    """
    return tuple(_torchao_subclasses())


def _torchao_subclasses() -> Iterator[type]:
    try:  # IntxWeightOnlyConfig / Int8DynamicActivationIntxWeightConfig weights
        from torchao.quantization import IntxUnpackedToInt8Tensor

        yield IntxUnpackedToInt8Tensor
    except ImportError:
        pass
    try:  # CodebookWeightOnlyConfig (CoreML LUT) weights
        from torchao.prototype.quantization.codebook_coreml.codebook_quantized_tensor import (
            CodebookQuantizedTensor,
        )

        yield CodebookQuantizedTensor
    except ImportError:
        pass


def _global_name(obj: Any) -> str:
    return f"{obj.__module__}.{obj.__qualname__}"


def _pickle_globals(data: bytes) -> Iterator[str]:
    """The `module.name` of every GLOBAL opcode in a pickle, without unpickling it."""
    for opcode, arg, _ in pickletools.genops(data):
        if opcode.name == "GLOBAL":
            module, _, name = str(arg).partition(" ")
            yield f"{module}.{name}"
        elif opcode.name in ("STACK_GLOBAL", "INST", "OBJ"):
            # The weights-only unpickler has no STACK_GLOBAL/INST/OBJ: refuse outright.
            yield f"<pickle opcode {opcode.name}>"


class _MemberFile(io.RawIOBase):
    """A stored (uncompressed) member of the open `.pt2` as a read-only, seekable file:
    `torch.load` reads a pickled payload's storages from the archive straight into
    tensors (through `readinto`), instead of from a copy of the member's bytes."""

    def __init__(self, archive: io.BufferedReader, start: int, size: int):
        super().__init__()
        self._archive, self._start, self._size, self._pos = archive, start, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        count = min(len(memoryview(buffer).cast("B")), self._size - self._pos)
        if count <= 0:
            return 0
        self._archive.seek(self._start + self._pos)
        got = self._archive.readinto(memoryview(buffer).cast("B")[:count])
        self._pos += got
        return got


class _StoredMembers:
    """The stored (uncompressed) members of the `.pt2` at `path`, by their name below
    the archive's root folder (as torch's reader names them; `check_zip` made sure
    there is one root), each opened as a `_MemberFile` on one handle of the archive,
    which the `with` block closes."""

    def __init__(self, path: str):
        self._archive = open(path, "rb")
        self._size = os.fstat(self._archive.fileno()).st_size
        with zipfile.ZipFile(self._archive) as z:
            self._infos = {info.filename.partition("/")[2]: info for info in z.infolist()}

    def __enter__(self) -> typing.Self:
        return self

    def __exit__(self, *_: object) -> None:
        self._archive.close()

    def open(self, name: str) -> _MemberFile | None:
        """Member `name` as a file, or None for a compressed or inconsistent one (the
        caller reads its bytes instead)."""
        info = self._infos.get(name)
        if info is None or info.compress_type != zipfile.ZIP_STORED:
            return None
        self._archive.seek(info.header_offset)
        header = self._archive.read(30)
        if len(header) != 30 or header[:4] != b"PK\x03\x04":
            return None
        name_length, extra_length = struct.unpack("<HH", header[26:30])
        start = info.header_offset + 30 + name_length + extra_length
        if start + info.file_size > self._size:
            return None
        return _MemberFile(self._archive, start, info.file_size)


def _restricted_load(data: bytes | _MemberFile, what: str, limits: Limits) -> Any:
    """`torch.load(weights_only=True)` of a `torch.save` payload (its bytes, or a
    seekable file holding them: `_MemberFile`), allow-list enforced, and every tensor
    it rebuilds checked (`check_tensor`).

    `what` names the file and record for messages. Raises QoptError on any refusal.
    """
    from torch._weights_only_unpickler import _get_allowed_globals

    payload = typing.cast(IO[bytes], io.BytesIO(data) if isinstance(data, bytes) else data)
    check_zip(payload, limits, what)
    allowed = _allowed_subclasses()
    permitted = set(_get_allowed_globals()) | {_global_name(t) for t in allowed}
    try:
        payload.seek(0)
        with zipfile.ZipFile(payload) as inner:
            pickles = [n for n in inner.namelist() if n.endswith(".pkl")]
            if not pickles:
                raise QoptError(f"{what}: not a torch.save payload (no .pkl record)")
            for name in pickles:
                for glob in _pickle_globals(inner.read(name)):
                    if glob not in permitted:
                        raise QoptError(
                            f"{what}: refusing to unpickle '{glob}', which needs full "
                            f"pickle (it could run code); {_TRUST_HINT}"
                        )
    except QoptError:
        raise
    except Exception as e:
        raise QoptError(f"{what}: unreadable pickled payload ({_first_line(e)})") from e
    # `safe_globals` removes its entries on exit, even ones registered before (torchao
    # registers IntxUnpackedToInt8Tensor at import): add only the missing ones.
    already = set(torch.serialization.get_safe_globals())
    missing: list[Any] = [t for t in allowed if t not in already]
    try:
        payload.seek(0)
        with torch.serialization.safe_globals(missing):
            loaded = torch.load(payload, weights_only=True, map_location="cpu")
    except Exception as e:
        raise QoptError(
            f"{what}: the restricted unpickler refused it ({_first_line(e)}); {_TRUST_HINT}"
        ) from e
    _check_loaded(loaded, what, limits)
    return loaded


# ----- the graph ------------------------------------------------------------------------

#: Node metadata qopt reads; everything else is dropped before torch deserializes it.
_KEPT_METADATA = ("stack_trace", "nn_module_stack")
#: `torch.ops.<namespace>.<op>[.<overload>]`: no dunder namespace (which would find
#: the namespace object's own attributes) and no underscore-led overload; op names may be
#: dunders (`aten.__and__.Tensor`). check_graph_targets checks what they resolve to.
_OP_TARGET = re.compile(
    r"torch\.ops\.(?!__)[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)?"
)
_SYMBOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_NUMBERED_SYMBOL = re.compile(r"[a-z]+([0-9]+)")
_MAX_SYMBOL_INDEX = 1_000_000


def _symbolic_targets() -> frozenset[str]:
    """The serialized names of the symbolic-int operators torch's deserializer
    resolves outside `torch.ops` (`_operator.add`, `torch.sym_max`, ...)."""
    from torch._export.serde.serialize import _SYM_OPS

    return frozenset(f"{op.__module__}.{op.__name__}" for op in _SYM_OPS)


def _check_target(target: Any, what: str) -> None:
    if not isinstance(target, str):
        raise QoptError(f"{what}: a node target is {type(target).__name__}, not an operator name")
    if _OP_TARGET.fullmatch(target):
        return
    if target in _symbolic_targets():
        return
    shown = target if len(target) <= 80 else target[:77] + "..."
    raise QoptError(
        f"{what}: node target {shown!r} is not an operator (torch.ops.<namespace>.<op>) "
        "or a symbolic-int operator; qopt does not look up other names"
    )


def _bounded_int(value: Any, what: str, limits: Limits) -> None:
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool):
        raise QoptError(f"{what} is {quoted(repr(value))}, not an integer")
    if value.bit_length() > limits.max_int_bits:
        raise limits.exceeded(what + "'s size in bits", value.bit_length(), "max_int_bits")


def _check_symbol_name(name: Any, what: str) -> None:
    if not isinstance(name, str) or not _SYMBOL_NAME.fullmatch(name):
        raise QoptError(f"{what}: symbol name {str(name)[:40]!r} is not an identifier")
    numbered = _NUMBERED_SYMBOL.fullmatch(name)
    if numbered and int(numbered.group(1)) > _MAX_SYMBOL_INDEX:
        raise QoptError(
            f"{what}: symbol {name} is numbered beyond {_MAX_SYMBOL_INDEX} (torch counts "
            "unbacked symbols up to that number when it loads them)"
        )


def sanitize_program(program: Any, limits: Limits, what: str) -> None:
    """Check and rewrite the JSON of a serialized ExportedProgram in place (see the
    module docstring): after it, torch's deserializer sees only operator names it
    may resolve and shape expressions qopt generated."""
    if not isinstance(program, dict):
        raise QoptError(f"{what}: the serialized program is not a JSON object")
    ranges = program.get("range_constraints")
    if ranges is not None:
        if not isinstance(ranges, dict):
            raise QoptError(f"{what}: range_constraints is not an object")
        for name, bounds in ranges.items():
            _check_symbol_name(name, what)
            if not isinstance(bounds, dict):
                raise QoptError(f"{what}: the range of {name} is not an object")
            for key in ("min_val", "max_val"):
                _bounded_int(bounds.get(key), f"{what}: {key} of {name}", limits)
            low, high = bounds.get("min_val"), bounds.get("max_val")
            if high is not None and high > limits.max_tensor_elements:  # bounded like a shape
                raise limits.exceeded(
                    f"{what}: the largest size of {name} (a Dim's max_val)", high,
                    "max_tensor_elements",
                )  # fmt: skip
            if low is not None and high is not None and low > high:
                raise QoptError(f"{what}: the range of {name} is empty ([{low}, {high}])")
    if "guards_code" in program:
        program["guards_code"] = []
    expressions: dict[str, str] = {}
    nodes = 0
    stack: list[Any] = [program]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
            continue
        if not isinstance(item, dict):
            continue
        if "target" in item and "inputs" in item:  # a graph node
            nodes += 1
            if nodes > limits.max_graph_nodes:
                raise limits.exceeded(
                    f"{what}: the number of graph nodes", f"more than {nodes - 1}",
                    "max_graph_nodes",
                )  # fmt: skip
            _check_target(item["target"], what)
            metadata = item.get("metadata")
            if isinstance(metadata, dict):
                item["metadata"] = {k: v for k, v in metadata.items() if k in _KEPT_METADATA}
        for key, value in item.items():
            if key == "expr_str":
                if not isinstance(value, str):
                    raise QoptError(f"{what}: a symbolic shape expression is not a string")
                text = expressions.get(value)
                if text is None:
                    text = canonical_shape_expr(value, limits, what)
                    expressions[value] = text
                item[key] = text
            elif isinstance(value, dict | list):
                stack.append(value)


def check_graph_targets(ep: torch.export.ExportedProgram, what: str) -> None:
    """After deserialization: every call is an operator or a symbolic-int function."""
    import operator

    from torch._export.serde.serialize import _SYM_OPS

    modules = [ep.graph_module, *ep.graph_module.modules()]
    for module in modules:
        graph = getattr(module, "graph", None)
        if graph is None:
            continue
        for node in graph.nodes:
            if node.op != "call_function":
                continue
            target = node.target
            if isinstance(target, torch._ops.OpOverload | torch._ops.HigherOrderOperator):
                continue
            if target in _SYM_OPS or target is operator.getitem:
                continue
            raise QoptError(
                f"{what}: node {node.name} calls {quoted(target)}, which is not an operator"
            )


# ----- JSON -> torch's schema dataclasses ------------------------------------------------


class _Malformed(Exception):
    pass


def _schema_class(cls: Any) -> Any:
    from torch._export.serde import schema

    if isinstance(cls, typing.ForwardRef):
        cls = cls.__forward_arg__
    if isinstance(cls, str):
        return getattr(schema, cls)
    return cls


def _expect(kinds: type | tuple[type, ...], what: str) -> Callable[[Any], Any]:
    def convert(data: Any) -> Any:
        if not isinstance(data, kinds) or isinstance(data, bool) is not (kinds is bool):
            raise _Malformed(f"expected {what}, got {str(data)[:20]!r}")
        return data

    return convert


def _to_float(data: Any) -> float:
    if isinstance(data, bool) or not isinstance(data, int | float | str):
        raise _Malformed(f"expected a number, got {str(data)[:20]!r}")
    return float(data)


@functools.cache
def _converter(cls: Any) -> Callable[[Any], Any]:
    """A function turning parsed JSON into an instance of torch's serialization schema
    class `cls`, as torch's `_dict_to_dataclass` builds it, with every value's JSON type
    checked. Built once per schema type (torch inspects the type hints per object,
    which was 80% of loading a large graph)."""
    from torch._export.serde import schema
    from torch._export.serde.union import _Union

    cls = _schema_class(cls)
    origin = typing.get_origin(cls)
    if origin is typing.Annotated:
        return _converter(typing.get_args(cls)[0])
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(cls) if a is not type(None)]
        if len(args) != 1 or len(typing.get_args(cls)) != 2:
            raise TypeError(f"no schema rule for {cls}")
        inner = _converter(args[0])
        return lambda data: None if data is None else inner(data)
    if isinstance(cls, type) and issubclass(cls, _Union):
        from torch._export.serde.union import _UnionTag

        hints = typing.get_type_hints(cls, globalns=dict(vars(schema)))
        variants = {f.name: hints[f.name] for f in dataclasses.fields(typing.cast(Any, cls))}
        unset = dict.fromkeys(variants)
        cls.create(**{next(iter(variants)): None})  # torch's own checks of the class, once
        name = cls.__name__

        def union(data: Any) -> Any:
            if not isinstance(data, dict) or len(data) != 1:
                raise _Malformed(f"{name} must be an object with one key")
            ((key, value),) = data.items()
            if key not in variants:
                raise _Malformed(f"{name} has no variant {str(key)[:40]!r}")
            # What `cls.create(key=value)` builds, without re-checking the class's
            # fields per object (80% of the conversion).
            obj = object.__new__(cls)
            fields = object.__getattribute__(obj, "__dict__")  # _Union overrides lookups
            fields.update(unset)
            fields[key] = _converter(variants[key])(value)
            fields["_type"] = _UnionTag.create(key, cls)
            return obj

        return union
    if isinstance(cls, type) and dataclasses.is_dataclass(cls):
        hints = typing.get_type_hints(cls, globalns=dict(vars(schema)))
        fields = [(f.name, hints[f.name]) for f in dataclasses.fields(cls)]
        name = cls.__name__

        def record(data: Any) -> Any:
            if not isinstance(data, dict):
                raise _Malformed(f"{name} must be an object")
            # Unknown keys are ignored, as torch does (forward compatibility).
            return cls(**{n: _converter(t)(data[n]) for n, t in fields if n in data})

        return record
    if origin is list:
        (item_type,) = typing.get_args(cls)

        def items(data: Any) -> Any:
            if not isinstance(data, list):
                raise _Malformed(f"expected a list of {item_type}")
            item = _converter(item_type)
            return [item(d) for d in data]

        return items
    if origin is dict:
        _, value_type = typing.get_args(cls)

        def mapping(data: Any) -> Any:
            if not isinstance(data, dict):
                raise _Malformed(f"expected an object of {value_type}")
            value = _converter(value_type)
            return {k: value(v) for k, v in data.items()}

        return mapping
    if cls is bool:
        return _expect(bool, "a boolean")
    if cls is int:
        return _expect(int, "an integer")
    if cls is str:
        return _expect(str, "a string")
    if cls is float:
        return _to_float
    if isinstance(cls, type) and issubclass(cls, enum.Enum):
        return cls
    raise TypeError(f"no schema rule for {cls}")


def to_schema(cls: Any, data: Any) -> Any:
    """`data` (parsed JSON) as torch's schema class `cls` (see `_converter`)."""
    return _converter(cls)(data)


# ----- tensors --------------------------------------------------------------------------


def check_view(
    what: str,
    sizes: Sequence[int],
    strides: Sequence[int],
    offset: int,
    storage_numel: int,
    limits: Limits,
) -> int:
    """The element count of a strided view of a storage of `storage_numel` elements,
    after checking that it lies inside the storage and does not overlap itself (so
    materializing it never takes more memory than the storage)."""
    if len(sizes) != len(strides):
        raise QoptError(f"{what}: {len(sizes)} sizes but {len(strides)} strides")
    limits.check(f"{what}: the rank", len(sizes), "max_tensor_rank")
    for v in (*sizes, *strides, offset):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise QoptError(
                f"{what}: sizes {list(sizes)}, strides {list(strides)} and offset {offset} "
                "must be non-negative integers"
            )
    numel = 1
    for d in sizes:
        numel *= d
    limits.check(f"{what}: the element count", numel, "max_tensor_elements")
    if numel == 0:
        return 0
    dims = sorted((s, d) for d, s in zip(sizes, strides, strict=True) if d > 1)
    reach = 1  # elements a prefix of the dims (by increasing stride) spans
    for stride, d in dims:
        if stride < reach:
            raise QoptError(
                f"{what}: strides {list(strides)} make the view of shape {list(sizes)} "
                "overlap itself (zero or overlapping strides are refused)"
            )
        reach = stride * (d - 1) + reach
    if offset + reach > storage_numel:
        raise QoptError(
            f"{what}: shape {list(sizes)} with strides {list(strides)} and offset {offset} "
            f"reaches element {offset + reach}, but its data holds {storage_numel}"
        )
    return numel


def check_tensor(t: Any, what: str, limits: Limits) -> None:
    """A tensor (or the inner tensors of a tensor subclass) rebuilt from a pickle
    must be a non-overlapping view inside its storage."""
    if type(t) not in (torch.Tensor, torch.nn.Parameter) and hasattr(t, "__tensor_flatten__"):
        try:
            names, _ = t.__tensor_flatten__()
        except Exception as e:
            raise QoptError(f"{what}: a broken tensor subclass ({_first_line(e)})") from None
        for name in names:
            check_tensor(getattr(t, name), f"{what} (part {name})", limits)
        return
    if not isinstance(t, torch.Tensor):
        return
    if t.layout != torch.strided or t.device.type != "cpu":
        raise QoptError(f"{what}: only dense CPU tensors are read, got {t.layout} on {t.device}")
    if t.numel() == 0:
        return
    storage = t.untyped_storage().nbytes() // t.element_size()
    check_view(what, list(t.shape), list(t.stride()), int(t.storage_offset()), storage, limits)


def _check_loaded(obj: Any, what: str, limits: Limits) -> None:
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
        else:
            check_tensor(item, what, limits)


def _raw_tensor(reader: Any, entry: str, meta: Any, what: str, limits: Limits) -> torch.Tensor:
    """A raw (unpickled) weight: its dtype, shape, strides and offset checked against
    the record's size before the storage is read and viewed."""
    from torch._export.serde.schema import ScalarType
    from torch._export.serde.serialize import _SERIALIZE_TO_TORCH_DTYPE

    tm = meta.tensor_meta
    if tm is None:
        raise QoptError(f"{what}: raw tensor without tensor_meta")
    try:
        dtype = _SERIALIZE_TO_TORCH_DTYPE[ScalarType(tm.dtype)]
    except (KeyError, ValueError):
        raise QoptError(f"{what}: unknown dtype code {quoted(repr(tm.dtype))}") from None

    def ints(values: Any, kind: str) -> list[int]:
        out: list[int] = []
        for v in values:
            if getattr(v, "type", None) != "as_int":
                raise QoptError(f"{what}: a symbolic {kind} in a stored weight")
            out.append(v.as_int)
        return out

    sizes = ints(tm.sizes, "size")
    strides = ints(tm.strides, "stride")
    (offset,) = ints([tm.storage_offset], "storage offset")
    nbytes = reader.archive_file.get_record_size(entry)
    itemsize = dtype.itemsize
    if nbytes % itemsize:
        raise QoptError(f"{what}: {nbytes} bytes is not a whole number of {dtype} elements")
    storage_numel = nbytes // itemsize
    numel = check_view(what, sizes, strides, offset, storage_numel, limits)
    if numel == 0:
        return torch.empty(sizes, dtype=dtype)
    raw = reader.archive_file.get_storage_from_record(entry, storage_numel, dtype)
    flat = torch.empty(0, dtype=dtype)
    flat.set_(raw.untyped_storage(), 0, (storage_numel,), (1,))
    return torch.as_strided(flat, sizes, strides, offset)


def _load_payloads(
    reader: Any,
    path: str,
    config_file: str,
    base_dir: str,
    kind: str,
    limits: Limits,
    members: _StoredMembers | None = None,
) -> dict[str, Any]:
    """Weights or constants of the model, as `_load_state_dict`/`_load_constants` build them,
    with restricted unpickling, checked tensors and custom/opaque objects refused."""
    from torch.export.pt2_archive.constants import (
        CUSTOM_OBJ_FILENAME_PREFIX,
        OPAQUE_OBJ_FILENAME_PREFIX,
        TENSOR_CONSTANT_FILENAME_PREFIX,
    )

    names = set(reader.get_file_names())
    legacy = f"{base_dir}{_MODEL}.pt"
    if legacy in names:
        raise QoptError(
            f"{path}: entry '{legacy}' holds {kind} in the legacy pickled format, which "
            f"needs full pickle (it could run code); re-save the program with "
            f"torch.export.save, or {_TRUST_HINT}"
        )
    if config_file not in names:
        raise QoptError(f"{path}: missing entry '{config_file}'; not a complete .pt2 archive")
    from torch._export.serde import schema

    try:
        config = to_schema(schema.PayloadConfig, json.loads(reader.read_string(config_file)))
    except (_Malformed, ValueError, TypeError, KeyError, AttributeError) as e:
        raise QoptError(f"{path}: entry '{config_file}' is malformed: {e}") from None
    is_weight = kind == "weights"
    loaded: dict[str, Any] = {}
    pickled = False
    for fqn, meta in config.config.items():
        entry = base_dir + meta.path_name
        what = f"{path}: entry '{entry}' ({kind[:-1]} '{fqn}')"
        if not is_weight and meta.path_name.startswith(
            (CUSTOM_OBJ_FILENAME_PREFIX, OPAQUE_OBJ_FILENAME_PREFIX)
        ):
            raise QoptError(
                f"{what} is a pickled Python/TorchScript object, which needs full pickle "
                f"(it could run code) and qopt does not compile; {_TRUST_HINT}"
            )
        if not is_weight and not meta.path_name.startswith(TENSOR_CONSTANT_FILENAME_PREFIX):
            raise QoptError(f"{what}: unsupported constant kind")
        if entry not in names:
            raise QoptError(f"{what}: the entry is missing from the archive")
        if meta.use_pickle:
            if not pickled:  # torchao's import is most of the first pickle's cost
                with phase("torchao import"):
                    _allowed_subclasses()
            pickled = True
            member = members.open(entry) if members is not None else None
            source = member if member is not None else reader.read_bytes(entry)
            loaded[fqn] = _restricted_load(source, what, limits)
            continue
        tensor = _raw_tensor(reader, entry, meta, what, limits)
        if is_weight and meta.is_param:
            tensor = torch.nn.Parameter(tensor, requires_grad=bool(meta.tensor_meta.requires_grad))
        loaded[fqn] = tensor
    return loaded


def _load_sample_inputs(reader: Any, path: str, limits: Limits) -> Any:
    """Sample inputs, restricted; qopt does not need them, so a refusal drops them."""
    from torch.export.pt2_archive.constants import SAMPLE_INPUTS_FILENAME_FORMAT

    entry = SAMPLE_INPUTS_FILENAME_FORMAT.format(_MODEL)
    if entry not in reader.get_file_names():
        return None
    data = reader.read_bytes(entry)
    if not data:
        return None
    try:
        inputs = _restricted_load(data, f"{path}: entry '{entry}'", limits)
    except QoptError as e:
        warnings.warn(f"sample inputs dropped: {e}", stacklevel=3)
        return None
    return inputs if isinstance(inputs, tuple) else None


def _load_restricted(path: str, limits: Limits) -> torch.export.ExportedProgram:
    # Importing torch's deserializer imports torch._dynamo (unless torchao did): timed
    # as its own phase of a compile report, as are the stages below (`qopt-opt -v`).
    with phase("torch deserializer import"):
        from torch._export.serde import schema
        from torch._export.serde.serialize import ExportedProgramDeserializer
    from torch.export.pt2_archive._package import PT2ArchiveReader
    from torch.export.pt2_archive.constants import (
        ARCHIVE_VERSION_PATH,
        ARCHIVE_VERSION_VALUE,
        CONSTANTS_CONFIG_FILENAME_FORMAT,
        CONSTANTS_DIR,
        MODELS_FILENAME_FORMAT,
        WEIGHTS_CONFIG_FILENAME_FORMAT,
        WEIGHTS_DIR,
    )

    stage = "archive"
    try:
        reader = PT2ArchiveReader(path)
        names = reader.get_file_names()
        if ARCHIVE_VERSION_PATH not in names:
            raise QoptError(
                f"{path}: no '{ARCHIVE_VERSION_PATH}' entry: not a .pt2 archive from "
                f"torch.export.save (torch >= 2.7); older formats need full pickle, "
                f"{_TRUST_HINT}"
            )
        version = reader.read_string(ARCHIVE_VERSION_PATH).strip()
        if version != ARCHIVE_VERSION_VALUE:
            raise QoptError(
                f"{path}: archive version {version[:20]!r}, this torch reads "
                f"{ARCHIVE_VERSION_VALUE!r}; re-save it with this torch version"
            )
        model_file = MODELS_FILENAME_FORMAT.format(_MODEL)
        if model_file not in names:
            raise QoptError(f"{path}: no '{model_file}' entry; not a torch.export.save archive")
        stage = f"entry '{model_file}'"
        limits.check(
            f"{path}: {stage}'s size",
            reader.archive_file.get_record_size(model_file),
            "max_graph_bytes",
        )
        with phase("graph (parse and check)"):
            program_json = json.loads(reader.read_bytes(model_file).decode("utf-8"))
            sanitize_program(program_json, limits, f"{path}: {stage}")
            try:
                serialized = to_schema(schema.ExportedProgram, program_json)
            except (_Malformed, ValueError, TypeError, KeyError, AttributeError) as e:
                raise QoptError(
                    f"{path}: {stage} is not a serialized ExportedProgram: {e}"
                ) from None
        del program_json
        with phase("weights"), _StoredMembers(path) as members:  # read from the file once
            stage = "weights"
            state_dict = _load_payloads(
                reader,
                path,
                WEIGHTS_CONFIG_FILENAME_FORMAT.format(_MODEL),
                WEIGHTS_DIR,
                "weights",
                limits,
                members,
            )
            stage = "constants"
            constants = _load_payloads(
                reader,
                path,
                CONSTANTS_CONFIG_FILENAME_FORMAT.format(_MODEL),
                CONSTANTS_DIR,
                "constants",
                limits,
                members,
            )
        stage = "sample inputs"
        sample_inputs = _load_sample_inputs(reader, path, limits)
        stage = f"entry '{model_file}' (rebuilding the program)"
        with phase("rebuild (torch's deserializer)"):
            ep = ExportedProgramDeserializer(None).deserialize(
                serialized, state_dict, constants, sample_inputs
            )
            check_graph_targets(ep, f"{path}: {stage}")
        return ep
    except QoptError:
        raise
    except Exception as e:
        if "pytree is not registered" in str(e):
            hint = "import the package that defines the model's input/output types first"
        else:
            hint = "is it a complete .pt2 file written by torch.export.save with this torch?"
        raise QoptError(f"{path}: cannot load {stage}: {_first_line(e)}; {hint}") from e


def load_pt2(
    path: str, *, trust_pickle: bool = False, limits: Limits | str | None = None
) -> torch.export.ExportedProgram:
    """Load the ExportedProgram of a `.pt2` written by `torch.export.save`.

    Nothing in the file is run unless `trust_pickle` is True (then the file goes to
    `torch.export.load`, which uses full pickle); what the file declares is bounded by
    `limits` (`qopt.limits.Limits`). Every failure is a one-line QoptError.
    """
    limits = resolve(limits)
    path = os.fspath(path)
    if not os.path.exists(path):
        raise QoptError(f"{path}: no such file")
    if os.path.isdir(path):
        raise QoptError(f"{path}: is a directory, expected a .pt2 file")
    try:
        is_zip = zipfile.is_zipfile(path)
    except OSError as e:
        raise QoptError(f"{path}: cannot read it ({_first_line(e)})") from e
    if not is_zip:
        size = os.path.getsize(path)
        why = "it is empty" if size == 0 else "it is not a zip archive (truncated or not a .pt2)"
        raise QoptError(
            f"{path}: not a .pt2 file: {why}; expected a file written by torch.export.save"
        )
    check_zip(path, limits, path)
    if not trust_pickle:
        return _load_restricted(path, limits)
    try:
        return torch.export.load(path)
    except Exception as e:
        raise QoptError(f"{path}: torch.export.load failed: {_first_line(e)}") from e
