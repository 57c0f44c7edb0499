"""qopt's user-facing error type."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from xdsl.utils.exceptions import DiagnosticException

if TYPE_CHECKING:
    from xdsl.ir import Operation


class QoptError(DiagnosticException, ValueError):
    """A user mistake: bad input file, unknown op, bad shape, unsupported scheme.

    The message names what went wrong, where (op and source location) and what
    to do. The command-line tools print it without a traceback and exit 1.
    """


#: Characters of a file-supplied string shown in a message (`quoted`).
MAX_QUOTED = 80


class QoptWarning(UserWarning):
    """A compile that works but is probably not what was meant (`qopt.compile`), or an
    input converted to the program's dtype (`qopt-run: warning: ...`); re-exported by
    qopt.report, which issues the compile's warnings."""


def one_line(text: object, width: int = MAX_QUOTED) -> str:
    """A string that came from a file, as a message shows it: on one printable line
    (control characters, ANSI escapes and newlines written as Python escapes), at
    most `width` characters (the last three `...` when cut)."""
    s = text if isinstance(text, str) else str(text)
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in s[: width + 1])
    return shown if len(shown) <= width else shown[: max(width - 3, 0)] + "..."


def quoted(text: object, width: int = MAX_QUOTED) -> str:
    """`one_line(text, width)` in quotes: how every file-supplied string (a name, an
    assert message) reaches a message, so that no file can write to the terminal or
    flood it."""
    return f"'{one_line(text, width)}'"


def where(op: Operation) -> str:
    """`'aten.linear' at model.py:12` for an op with a file location, and
    ` in layers.0.mlp` after it for one named by the module that ran it."""
    return f"'{op.name}'{describe_location(getattr(op, 'location', None))}"


def describe_location(loc: object) -> str:
    """` at model.py:12 in layers.0.mlp` for a location `loc("layers.0.mlp"(
    "model.py":12:0))`, ` at model.py:12` for a file location, ` in layers.0.mlp` for
    a name alone, "" for none."""
    from xdsl.dialects.builtin import FileLineColLoc, NameLoc

    module = ""
    if isinstance(loc, NameLoc):  # names and file names come from the file
        module = f" in {_bare(loc.desc.data)}"
        loc = loc.location
    if isinstance(loc, FileLineColLoc):
        return f" at {_bare(loc.filename.data)}:{loc.line.data}{module}"
    return module


def _bare(text: str) -> str:
    """A location's part (`model.py`, a module path) as a message shows it."""
    return one_line(text, 200)


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the choice closest to a mistyped `name` (compared
    without case), or ""."""
    import difflib

    by_lower = {choice.lower(): choice for choice in choices}
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    return f" (did you mean '{by_lower[close[0]]}'?)" if close else ""
