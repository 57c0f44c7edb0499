"""Load a `.pt2` archive (written by `torch.export.save`) without running code from it.

`torch.export.load` unpickles with `weights_only=False` (full pickle, which can run any
code) for pickled weights and constants, custom/opaque objects, legacy weight files, and
as a fallback for sample inputs; it also hands shape expressions to `sympy.sympify`,
which evaluates them. `load_pt2` rebuilds the program from the same archive records
with torch's own pieces, but:

* every pickle goes through `torch.load(weights_only=True)` (no fallback), after a
  scan of its `GLOBAL` opcodes that admits only torch's built-in weights-only globals
  plus `_allowed_subclasses()` (torchao registers more types globally at import; the
  scan keeps qopt's list exact);
* records that need full pickle (custom/opaque objects, legacy `.pt` weight files,
  archives from before torch 2.7) are refused;
* sample inputs (unused by qopt) are loaded the same restricted way, or dropped;
* symbolic shape expressions must be made of numbers, operators, shape symbols and
  known sympy/torch functions;
* ahead-of-time compiled (AOTInductor) records are never loaded.

`trust_pickle=True` hands the file to `torch.export.load` as is.
"""

from __future__ import annotations

import io
import json
import os
import pickletools
import re
import warnings
import zipfile
from collections.abc import Iterator
from typing import Any

import torch

from qopt.errors import QoptError

_TRUST_HINT = "pass --trust-pickle / trust_pickle=True only if you trust this file"

_MODEL = "model"


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    line = text.splitlines()[0].strip() if text else ""
    return f"{type(e).__name__}: {line}" if line else type(e).__name__


def _allowed_subclasses() -> list[type]:
    """The torchao tensor subclasses qopt imports, as stored by `torch.export.save`.

    Their pickles need nothing else beyond torch's built-in weights-only globals
    (`torch._tensor._rebuild_from_type_v2`, `torch._utils._rebuild_wrapper_subclass`,
    `torch._utils._rebuild_tensor_v2`, storages, dtypes, `torch.device`,
    `torch.serialization._get_layout`, `collections.OrderedDict`).
    """
    allowed: list[type] = []
    try:  # IntxWeightOnlyConfig / Int8DynamicActivationIntxWeightConfig weights
        from torchao.quantization import IntxUnpackedToInt8Tensor

        allowed.append(IntxUnpackedToInt8Tensor)
    except ImportError:
        pass
    try:  # CodebookWeightOnlyConfig (CoreML LUT) weights
        from torchao.prototype.quantization.codebook_coreml.codebook_quantized_tensor import (
            CodebookQuantizedTensor,
        )

        allowed.append(CodebookQuantizedTensor)
    except ImportError:
        pass
    return allowed


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


def _restricted_load(data: bytes, what: str) -> Any:
    """`torch.load(weights_only=True)` of a `torch.save` payload, allow-list enforced.

    `what` names the file and record for messages. Raises QoptError on any refusal.
    """
    from torch._weights_only_unpickler import _get_allowed_globals

    allowed = _allowed_subclasses()
    permitted = set(_get_allowed_globals()) | {_global_name(t) for t in allowed}
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as inner:
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
    missing = [t for t in allowed if t not in already]
    try:
        with torch.serialization.safe_globals(missing):
            return torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    except Exception as e:
        raise QoptError(
            f"{what}: the restricted unpickler refused it ({_first_line(e)}); {_TRUST_HINT}"
        ) from e


# Shape expressions (torch writes them with `sympy.srepr`, e.g.
# "Mul(Integer(3), Symbol('s77', positive=True, integer=True))") are evaluated by
# `sympy.sympify`, i.e. by Python `eval`. Admit only numbers, operators, plain string
# literals, and names that are sympy/torch expression classes or that sympy would turn
# into symbols; refuse builtins (`chr`, `exec`, ...), sympy helpers that are not expression
# classes (`lambdify`, `sympify`, ...), attribute access, subscripts and dunders.
_TOKEN_RE = re.compile(
    r"\s+|'[A-Za-z0-9_]*'|'[-+]?[0-9.]+(?:[eE][-+]?[0-9]+)?'"
    r"|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|[A-Za-z_][A-Za-z0-9_]*"
    r"|\*\*|//|<=|>=|==|!=|[-+*/%(),<>&|~^=]"
)


def _expr_names() -> tuple[frozenset[str], frozenset[str]]:
    """(expression class names that may be called, names that must not appear)."""
    import builtins

    import sympy
    from torch.utils._sympy import functions

    ok: set[str] = set()
    for module in (sympy, functions):
        for name in dir(module):
            obj = getattr(module, name, None)
            if isinstance(obj, type) and issubclass(obj, sympy.Basic):
                ok.add(name)
            elif isinstance(obj, sympy.Basic):  # oo, zoo, nan, pi, E, I, true, false
                ok.add(name)
    banned = (set(dir(builtins)) | set(getattr(sympy, "__all__", dir(sympy)))) - ok
    ok |= {"True", "False"}
    banned -= {"True", "False"}
    return frozenset(ok), frozenset(banned)


def _check_expr(expr: str, names: tuple[frozenset[str], frozenset[str]]) -> str | None:
    """None if `expr` is a plain shape expression, else the offending token."""
    ok, banned = names
    pos = 0
    while pos < len(expr):
        m = _TOKEN_RE.match(expr, pos)
        if m is None:
            return expr[pos]
        tok = m.group()
        if (tok[0].isalpha() or tok[0] == "_") and tok not in ok:
            if tok.startswith("_") or tok in banned:
                return tok
        pos = m.end()
    return None


def _check_exprs(node: Any, names: tuple[frozenset[str], frozenset[str]], what: str) -> None:
    stack = [node]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "expr_str" and isinstance(value, str):
                    bad = _check_expr(value, names)
                    if bad is not None:
                        raise QoptError(
                            f"{what}: symbolic shape expression {value[:60]!r} contains "
                            f"{bad!r}, which is not a shape symbol or known function "
                            f"(torch would evaluate it as code); {_TRUST_HINT}"
                        )
                else:
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)


def _load_payloads(
    reader: Any, path: str, config_file: str, base_dir: str, kind: str
) -> dict[str, Any]:
    """Weights or constants of the model, as `_load_state_dict`/`_load_constants` build them,
    with restricted unpickling and custom/opaque objects refused."""
    from torch._export.serde.serialize import (
        deserialize_size,
        deserialize_storage_offset,
        deserialize_stride,
    )
    from torch.export.pt2_archive import _package
    from torch.export.pt2_archive.constants import (
        CUSTOM_OBJ_FILENAME_PREFIX,
        OPAQUE_OBJ_FILENAME_PREFIX,
        TENSOR_CONSTANT_FILENAME_PREFIX,
    )

    names = reader.get_file_names()
    legacy = f"{base_dir}{_MODEL}.pt"
    if legacy in names:
        raise QoptError(
            f"{path}: entry '{legacy}' holds {kind} in the legacy pickled format, which "
            f"needs full pickle (it could run code); re-save the program with "
            f"torch.export.save, or {_TRUST_HINT}"
        )
    if config_file not in names:
        raise QoptError(f"{path}: missing entry '{config_file}'; not a complete .pt2 archive")
    config = _package._load_payload_config(reader, config_file)
    is_weight = kind == "weights"
    for fqn, meta in config.config.items():
        what = f"{path}: entry '{base_dir}{meta.path_name}' ({kind[:-1]} '{fqn}')"
        if not is_weight and meta.path_name.startswith(
            (CUSTOM_OBJ_FILENAME_PREFIX, OPAQUE_OBJ_FILENAME_PREFIX)
        ):
            raise QoptError(
                f"{what} is a pickled Python/TorchScript object, which needs full pickle "
                f"(it could run code) and qopt does not compile; {_TRUST_HINT}"
            )
        if not is_weight and not meta.path_name.startswith(TENSOR_CONSTANT_FILENAME_PREFIX):
            raise QoptError(f"{what}: unsupported constant kind")
    file_map = _package._build_file_map(reader, config, base_dir)

    loaded: dict[str, Any] = {}
    for fqn, meta in config.config.items():
        entry = base_dir + meta.path_name
        what = f"{path}: entry '{entry}' ({kind[:-1]} '{fqn}')"
        if meta.use_pickle:
            loaded[fqn] = _restricted_load(reader.read_bytes(entry), what)
            continue
        tm = meta.tensor_meta
        if tm is None:
            raise QoptError(f"{what}: raw tensor without tensor_meta")
        tensor = torch.as_strided(
            input=file_map[meta.path_name],
            size=deserialize_size(tm.sizes),
            stride=deserialize_stride(tm.strides),
            storage_offset=deserialize_storage_offset(tm.storage_offset),
        )
        if is_weight and meta.is_param:
            tensor = torch.nn.Parameter(tensor, requires_grad=tm.requires_grad)
        loaded[fqn] = tensor
    return loaded


def _load_sample_inputs(reader: Any, path: str) -> Any:
    """Sample inputs, restricted; qopt does not need them, so a refusal drops them."""
    from torch.export.pt2_archive.constants import SAMPLE_INPUTS_FILENAME_FORMAT

    entry = SAMPLE_INPUTS_FILENAME_FORMAT.format(_MODEL)
    if entry not in reader.get_file_names():
        return None
    data = reader.read_bytes(entry)
    if not data:
        return None
    try:
        inputs = _restricted_load(data, f"{path}: entry '{entry}'")
    except QoptError as e:
        warnings.warn(f"sample inputs dropped: {e}", stacklevel=3)
        return None
    return inputs if isinstance(inputs, tuple) else None


def _load_restricted(path: str) -> torch.export.ExportedProgram:
    from torch._export.serde import schema
    from torch._export.serde.serialize import (
        ExportedProgramDeserializer,
        _dict_to_dataclass,
    )
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
                f"{path}: archive version {version!r}, this torch reads "
                f"{ARCHIVE_VERSION_VALUE!r}; re-save it with this torch version"
            )
        model_file = MODELS_FILENAME_FORMAT.format(_MODEL)
        if model_file not in names:
            raise QoptError(f"{path}: no '{model_file}' entry; not a torch.export.save archive")
        stage = f"entry '{model_file}'"
        program_json = json.loads(reader.read_bytes(model_file).decode("utf-8"))
        _check_exprs(program_json, _expr_names(), f"{path}: {stage}")
        serialized = _dict_to_dataclass(schema.ExportedProgram, program_json)
        stage = "weights"
        state_dict = _load_payloads(
            reader, path, WEIGHTS_CONFIG_FILENAME_FORMAT.format(_MODEL), WEIGHTS_DIR, "weights"
        )
        stage = "constants"
        constants = _load_payloads(
            reader,
            path,
            CONSTANTS_CONFIG_FILENAME_FORMAT.format(_MODEL),
            CONSTANTS_DIR,
            "constants",
        )
        stage = "sample inputs"
        sample_inputs = _load_sample_inputs(reader, path)
        stage = f"entry '{model_file}' (rebuilding the program)"
        return ExportedProgramDeserializer(None).deserialize(
            serialized, state_dict, constants, sample_inputs
        )
    except QoptError:
        raise
    except Exception as e:
        if "pytree is not registered" in str(e):
            hint = "import the package that defines the model's input/output types first"
        else:
            hint = "is it a complete .pt2 file written by torch.export.save with this torch?"
        raise QoptError(f"{path}: cannot load {stage}: {_first_line(e)}; {hint}") from e


def load_pt2(path: str, *, trust_pickle: bool = False) -> torch.export.ExportedProgram:
    """Load the ExportedProgram of a `.pt2` written by `torch.export.save`.

    Nothing in the file is run unless `trust_pickle` is True (then the file goes to
    `torch.export.load`, which uses full pickle). Every failure is a one-line QoptError.
    """
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
    if not trust_pickle:
        return _load_restricted(path)
    try:
        return torch.export.load(path)
    except Exception as e:
        raise QoptError(f"{path}: torch.export.load failed: {_first_line(e)}") from e
