"""qopt's user-facing error type."""

from __future__ import annotations

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
