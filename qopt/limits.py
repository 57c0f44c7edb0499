"""Resource bounds for untrusted inputs (`.pt2`, `.mlpackage`, `.qvk`, `.mlir`, `.npz`).

Every file a user hands qopt is untrusted: before qopt builds anything from it,
what the file declares (members, sizes, shapes, node counts, expression lengths)
is checked against these bounds, so that no input can make qopt allocate more
than a small multiple of its own size, or work for more than a time linear in
it, before it is refused with a `QoptError` that names the bound and how to
raise it.

The defaults fit every real model qopt is meant for (a `.pt2` of a 70B-parameter
model included); `Limits.parse("max_graph_nodes=5000000,max_expansion=8")`,
`qopt-opt --limits ...` / `qopt-run --limits ...` and `limits=` on the Python
API raise them for one call.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import math
import os
import re
import zipfile
from collections.abc import Generator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import IO

from qopt.errors import QoptError, quoted

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


@dataclass(frozen=True)
class Limits:
    """Bounds on what an input file may declare (see the module docstring)."""

    max_archive_members: int = 200_000
    """Entries of a `.pt2` zip archive."""
    max_member_bytes: int = 256 * GiB
    """Uncompressed bytes of one archive entry."""
    max_expansion: float = 2.0
    """Uncompressed bytes of all entries together, as a multiple of the archive's
    size on disk (plus `expansion_slack_bytes`): `torch.export.save` stores its
    entries uncompressed, so a real archive is about 1.0."""
    expansion_slack_bytes: int = 64 * MiB
    max_graph_bytes: int = 512 * MiB
    """The serialized graph (`models/model.json` of a `.pt2`: ~700 bytes a node)."""
    max_graph_nodes: int = 200_000
    """Nodes of an exported graph (all subgraphs together). Loading and importing a
    node takes ~0.5 ms and ~25 KB (torch's deserializer builds a fake tensor per
    value), so the bound keeps a graph under ~2 minutes and ~5 GB; a 32-layer
    decoder has a few thousand nodes."""
    max_expr_chars: int = 4096
    """Characters of one symbolic shape expression."""
    max_expr_nodes: int = 512
    """Syntax-tree nodes of one symbolic shape expression."""
    max_int_bits: int = 64
    """Bits of an integer literal, a shape bound or a value range in a `.pt2`."""
    max_tensor_elements: int = 1 << 31
    """Elements of one tensor a file declares (shape checked before any allocation):
    8 GiB of float32, more than any tensor of an on-device model."""
    max_tensor_rank: int = 16
    max_device_bytes: int = 64 * GiB
    """Device memory a `.qvk` bundle may ask for (all its buffers together)."""
    max_dispatches: int = 1_000_000
    """Dispatches of one `.qvk` program."""
    max_manifest_bytes: int = 256 * MiB
    """The JSON manifest of a `.qvk` bundle, an `.mlpackage`'s Manifest.json."""

    def __post_init__(self) -> None:
        # One gate for every way a Limits is made (parse, the constructor, replace):
        # a limit is a finite positive number (an integer but for max_expansion), so
        # that no spelling (nan, inf, -1, True, "8") turns a check off or crashes it.
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            integer = f.type in ("int", int)
            number = isinstance(value, int if integer else int | float)
            if isinstance(value, bool) or not number or not math.isfinite(value) or value <= 0:
                kind = "a positive integer" if integer else "a finite positive number"
                raise QoptError(f"bad limit {f.name}={_shown(value)}: a limit is {kind}")

    @classmethod
    def parse(cls, spec: str) -> Limits:
        """`"name=value,name=value"` over the defaults; QoptError on a bad spec."""
        if not isinstance(spec, str):  # pyright: ignore[reportUnnecessaryIsInstance] -- untyped callers
            raise QoptError(f"limits must be a 'name=value,...' string, got {_shown(spec)}")
        fields = {f.name: f for f in dataclasses.fields(cls)}
        values: dict[str, int | float] = {}
        for item in filter(None, (part.strip() for part in spec.split(","))):
            name, sep, text = item.partition("=")
            name = name.strip().replace("-", "_")
            if not sep or name not in fields:
                raise QoptError(
                    f"bad limit {_shown(item)}: use name=value with a name among "
                    f"{', '.join(sorted(fields))}"
                )
            integer = fields[name].type in ("int", int)
            try:
                value: int | float = int(text.strip(), 0) if integer else float(text)
            except ValueError:
                kind = "a positive integer" if integer else "a finite positive number"
                raise QoptError(f"bad limit {_shown(item)}: {name} is {kind}") from None
            if not math.isfinite(value) or value <= 0:
                kind = "a positive integer" if integer else "a finite positive number"
                raise QoptError(f"bad limit {_shown(item)}: {name} is {kind}")
            values[name] = value
        return cls(**values)  # pyright: ignore[reportArgumentType]

    @contextlib.contextmanager
    def applied(self) -> Generator[Limits]:
        """These limits bound the run-time sizes of whatever runs within the block
        (`active_limits()`: the interpreter, constant folding, host segments)."""
        token = _active.set(self)
        try:
            yield self
        finally:
            _active.reset(token)

    def tally(self, what: str, name: str) -> Tally:
        """A running total bounded by the same limit `name` as each of its items: a
        limit that bounds one item (a segment's ops, a method's steps) bounds their
        sum too, so that many items each under it cannot add up past it."""
        return Tally(self, what, name)

    def exceeded(self, what: str, value: float | str, name: str) -> QoptError:
        """The error for `what` (with `value`) over the bound `name`."""
        bound = getattr(self, name)
        return QoptError(
            f"{what} is {value}, over qopt's limit {name}={bound} for untrusted inputs; "
            f"if the file is genuine, raise it with --limits {name}=N "
            f"(Python: limits=qopt.Limits(...))"
        )

    def check(self, what: str, value: float, name: str) -> None:
        if value > getattr(self, name):
            raise self.exceeded(what, value, name)


@dataclass
class Tally:
    """A sum of items checked against one limit as it grows (`Limits.tally`)."""

    limits: Limits
    what: str
    name: str
    total: int = 0

    def add(self, count: int) -> None:
        self.total += count
        self.limits.check(self.what, self.total, self.name)


DEFAULT_LIMITS = Limits()
_active: ContextVar[Limits] = ContextVar("qopt_limits", default=DEFAULT_LIMITS)


def active_limits() -> Limits:
    """The limits of the call in progress (`Limits.applied`; the defaults outside one)."""
    return _active.get()


def _shown(value: object, width: int = 60) -> str:
    return quoted(value if isinstance(value, str) else repr(value), width)


def resolve(limits: Limits | str | None) -> Limits:
    """`limits` as given (a Limits, a spec string) or the limits in effect
    (`active_limits`: the defaults outside `Limits.applied`)."""
    if limits is None:
        return active_limits()
    if isinstance(limits, str):
        return Limits.parse(limits)
    if not isinstance(limits, Limits):  # pyright: ignore[reportUnnecessaryIsInstance] -- runtime guard: untyped callers
        raise QoptError(
            f"limits must be a qopt.Limits or a 'name=value,...' string, got {_shown(limits)}"
        )
    return limits


def check_zip(
    source: str | os.PathLike[str] | bytes | IO[bytes],
    limits: Limits,
    what: str,
    *,
    single_root: bool = True,
) -> None:
    """A zip's central directory against `limits`, before any member is read.

    `source` is a path, the bytes of a zip or a seekable binary file holding one (a
    `.pt2`, a `torch.save` payload inside one, an `.npz`). Names must be relative,
    without `..`, unique and (with `single_root`, as in a `.pt2`) under one root
    folder; declared sizes are bounded per member, in total and relative to the zip's
    own size (a zip bomb declares far more than it holds)."""
    if isinstance(source, bytes | bytearray | memoryview):
        size, opened = len(source), io.BytesIO(source)
    elif isinstance(source, io.IOBase):
        size, opened = source.seek(0, io.SEEK_END), source
        source.seek(0)
    elif isinstance(source, str | os.PathLike):
        source = os.fspath(source)
        try:
            size = os.path.getsize(source)
        except OSError as e:
            raise QoptError(f"{what}: cannot read it ({e.strerror})") from None
        opened = source
    else:
        raise QoptError(f"{what}: expected a path or bytes, got {type(source).__name__}")
    try:
        with zipfile.ZipFile(opened) as z:
            infos = z.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as e:
        raise QoptError(f"{what}: not a readable zip archive ({type(e).__name__})") from None
    limits.check(f"{what}: the number of archive members", len(infos), "max_archive_members")
    names: set[str] = set()
    roots: set[str] = set()
    total = 0
    for info in infos:
        name = info.filename
        parts = name.split("/")
        if (
            not name
            or name.startswith("/")
            or "\\" in name
            or "\0" in name
            or ":" in parts[0]
            or any(p in ("..", ".") for p in parts)
        ):
            raise QoptError(
                f"{what}: archive member {quoted(name)} lies outside the archive's root"
            )
        if name in names:
            raise QoptError(f"{what}: archive member {quoted(name)} appears twice")
        names.add(name)
        roots.add(parts[0])
        limits.check(
            f"{what}: the uncompressed size of archive member {quoted(name)}",
            info.file_size,
            "max_member_bytes",
        )
        total += info.file_size
    if single_root and len(roots) > 1:
        shown = ", ".join(sorted(roots)[:3])
        raise QoptError(f"{what}: archive members lie under several root folders ({shown}, ...)")
    budget = limits.max_expansion * size + limits.expansion_slack_bytes
    if total > budget:
        raise QoptError(
            f"{what}: the archive's members declare {total} bytes uncompressed, "
            f"{total / max(size, 1):.1f}x its {size} bytes (qopt's limit is max_expansion="
            f"{limits.max_expansion} plus {limits.expansion_slack_bytes} bytes): a zip bomb, "
            "or raise the limit with --limits max_expansion=N if the file is genuine"
        )


#: Comments, complete string literals (possessive: linear time) and a lone `"` that
#: starts no valid literal (unterminated, or with an escape MLIR does not have).
_STRINGS = re.compile(rb'//[^\n]*|"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"|"')
#: `<dims>x<element>` shapes of tensor/vector/memref/buffer types in MLIR text.
_SHAPE = re.compile(rb"<\s*((?:\d+\s*x\s*)+)")
#: A type alias definition, `!name = tensor<...>`.
_ALIAS = re.compile(rb"^\s*(![\w.$-]+)\s*=\s*[\w.]+\s*<\s*((?:\d+\s*x\s*)*)", re.MULTILINE)
#: A splat `dense<value>` literal and the type after it, spelled out or an alias
#: (the parser expands a splat element by element).
_SPLAT = re.compile(
    rb'dense\s*<\s*(?:[^<>\[\]"]*|"0x[0-9A-Fa-f]*")\s*>\s*:\s*'
    rb"(?:[\w.]+\s*<\s*((?:\d+\s*x\s*)*)|(![\w.$-]+))"
)
#: Bytes the parser spends per element of an expanded splat (a Python list entry + data).
_SPLAT_BYTES_PER_ELEMENT = 16


def _count(dims: bytes) -> int:
    count = 1
    for d in dims.split(b"x")[:-1]:
        count *= int(d)
    return count


def _line(text: bytes, pos: int) -> int:
    return text.count(b"\n", 0, pos) + 1


def check_mlir_text(text: bytes, limits: Limits, what: str) -> None:
    """MLIR text, before xDSL parses it: string literals closed on their line (xDSL
    0.75's lexer takes exponential time on an unterminated one), every shape's
    element count within `max_tensor_elements`, and splat literals (`dense<0.0> :
    tensor<...>`, which the parser expands element by element; type aliases
    resolved) within a budget proportional to the text."""
    for match in _STRINGS.finditer(text):
        if match.group() == b'"':
            raise QoptError(
                f"{what}:{_line(text, match.start())}: a string literal that is not "
                'closed on its line, or holds an escape other than \\n \\t \\\\ \\" \\XX'
            )
    for match in _SHAPE.finditer(text):
        count = _count(re.sub(rb"\s", b"", match.group(1)))
        if count > limits.max_tensor_elements:
            raise limits.exceeded(
                f"{what}:{_line(text, match.start())}: a type's element count",
                count,
                "max_tensor_elements",
            )
    aliases = {m.group(1): _count(re.sub(rb"\s", b"", m.group(2))) for m in _ALIAS.finditer(text)}
    budget = max(limits.expansion_slack_bytes, int(limits.max_expansion * 16 * len(text)))
    spent = 0
    for match in _SPLAT.finditer(text):
        if match.group(1) is not None:
            count = _count(re.sub(rb"\s", b"", match.group(1)))
        else:
            count = aliases.get(match.group(2), 0)
        spent += count * _SPLAT_BYTES_PER_ELEMENT
        if spent > budget:
            raise QoptError(
                f"{what}:{_line(text, match.start())}: splat literals would expand to more "
                f"than {budget} bytes of memory in the parser ({spent}), "
                f"{spent // max(len(text), 1)}x the text; store large constants as "
                "dense_resource blobs, or raise --limits max_expansion=N if the file is genuine"
            )
