"""qopt's user-facing error type."""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException


class QoptError(DiagnosticException, ValueError):
    """A user mistake: bad input file, unknown op, bad shape, unsupported scheme.

    The message names what went wrong, where (op and source location) and what
    to do. The command-line tools print it without a traceback and exit 1.
    """


def where(op: Operation) -> str:
    """`'aten.linear' at model.py:12` for an op with a file location."""
    from xdsl.dialects.builtin import FileLineColLoc

    loc = getattr(op, "location", None)
    if isinstance(loc, FileLineColLoc):
        return f"'{op.name}' at {loc.filename.data}:{loc.line.data}"
    return f"'{op.name}'"


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the choice closest to a mistyped `name` (compared
    without case), or ""."""
    import difflib

    by_lower = {choice.lower(): choice for choice in choices}
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    return f" (did you mean '{by_lower[close[0]]}'?)" if close else ""
