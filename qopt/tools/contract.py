"""The command-line tools' error contract (docs/interfaces.md, Errors).

Every failure of `qopt-opt` and `qopt-run` ends the same way: a message on stderr
that starts with `<tool>: error:` (a parse error adds its source line and caret;
a list of unsupported ops adds one line per op), exit status 1, no traceback and
no partial output file. User mistakes (QoptError, xDSL diagnostics and parse
errors, bad files) print their message; resource exhaustion (MemoryError,
RecursionError from deeply nested input) and Vulkan driver errors print what ran
out; anything else is reported as an internal error, with the hint to rerun with
`--debug`, which lets the traceback through. Both tools take `--limits` and
`--debug` (`add_common_arguments`); this module imports no IR, so `qopt-run` on a
`.qvk` does not either.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError

from qopt.errors import QoptError, one_line
from qopt.limits import Limits

#: Errors a user can cause; reported with their own message.
USER_ERRORS = (DiagnosticException, ParseError, ValueError, OSError, ArgSpecParseError)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else ""


def spec_syntax_error(error: ArgSpecParseError) -> str:
    """xDSL's five-line pipeline/spec syntax error (a header, `pass-pipeline:1:C`, the
    spec, a caret, the message) as one line: the spec, the column, the message."""
    lines = str(error).splitlines()
    if len(lines) < 5:
        return " ".join(line.strip() for line in lines)
    column = lines[1].rpartition(":")[2]
    spec = one_line(lines[2], 200)
    return f"bad pass pipeline or -f/-t spec '{spec}' at column {column}: {lines[-1].strip()}"


def format_error(tool: str, error: BaseException) -> str:
    """The message the tool prints for `error` (see the module docstring)."""
    if isinstance(error, ParseError):
        context = error.span.print_with_context().rstrip("\n").split("\n")[1:]
        lines = [f"{tool}: error: {error.span.get_location()}: {error.msg}", *context]
        return "\n".join(lines)
    if isinstance(error, ArgSpecParseError):  # -p/-f/-t syntax: one line, as every error
        return f"{tool}: error: {spec_syntax_error(error)}"
    if isinstance(error, MemoryError):
        return (
            f"{tool}: error: out of memory: the input needs more memory than this machine "
            "has (qopt checks what files declare against --limits; this came after that)"
        )
    if isinstance(error, RecursionError):
        return f"{tool}: error: the input is nested too deeply to process"
    if type(error).__module__.startswith("vulkan") and type(error).__name__.startswith("Vk"):
        name = type(error).__name__
        return f"{tool}: error: the Vulkan driver failed: {name} {_first_line(error)}".rstrip()
    if isinstance(error, USER_ERRORS):
        if isinstance(error, OSError) and error.filename is not None and error.strerror:
            return f"{tool}: error: {error.filename}: {error.strerror}"
        message = str(error).strip() or type(error).__name__
        return f"{tool}: error: {message}"
    where = _first_line(error)
    return (
        f"{tool}: error: internal error: {type(error).__name__}"
        + (f": {where}" if where else "")
        + " (a bug in qopt: rerun with --debug for the traceback and report it)"
    )


def one_line_usage_errors(parser: argparse.ArgumentParser, tool: str) -> None:
    """A command-line mistake (an unknown option, a bad --limits) as every other error:
    one `<tool>: error:` line and exit status 1, not argparse's usage block and 2."""

    def error(message: str) -> NoReturn:
        print(f"{tool}: error: {one_line(message, 500)} (see {tool} --help)", file=sys.stderr)
        sys.exit(1)

    parser.prog = tool
    parser.error = error


def run_tool(tool: str, body: Callable[[], None], argv: Sequence[str] | None) -> None:
    """Run `body` under the contract; `--debug` in `argv` lets tracebacks through."""
    args = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in args
    try:
        body()
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.stdout.flush()
        print(f"{tool}: interrupted", file=sys.stderr)
        sys.exit(130)
    except BaseException as error:  # the contract: nothing escapes as a traceback
        if debug:
            raise
        fail(tool, error)


def fail(tool: str, error: BaseException) -> NoReturn:
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    print(format_error(tool, error), file=sys.stderr)
    sys.exit(1)


def writes_in_place(path: str) -> bool:
    """True for an existing path that is not a regular file (`/dev/stdout`, a pipe):
    it is written directly, never replaced by a renamed temporary file."""
    return os.path.exists(path) and not os.path.isfile(path)


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """`--limits` and `--debug`, shared by qopt-opt and qopt-run."""
    parser.add_argument(
        "--limits",
        type=_limits_argument,
        default=Limits(),
        metavar="NAME=N,...",
        help="raise qopt's bounds on what an input file may declare, e.g. "
        "max_graph_nodes=5000000,max_expansion=8 (see qopt.limits.Limits)",
    )
    parser.add_argument(
        "--debug",
        default=False,
        action="store_true",
        help="show the traceback of an internal error",
    )


def _limits_argument(text: str) -> Limits:
    try:
        return Limits.parse(text)
    except QoptError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
