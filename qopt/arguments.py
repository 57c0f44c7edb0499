"""Arguments of qopt's public Python API, checked at the door.

A public function or method checks every argument it is given here, before any
work: a wrong type or value is a one-line `QoptError` naming the argument and
what it takes, never a TypeError or ValueError from deep inside, and never a
silent conversion that changes the value (`2.7` is not the size 2; `True` is
not the size 1). One checker per kind of argument, shared by every entry point
that takes one.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

from qopt.errors import QoptError, quoted

#: Nesting of `dynamic_sizes`: {method: {symbol: [sizes]}} at most.
_MAX_DEPTH = 2
#: Sizes of one `dynamic_sizes` list (each is a program variant to compile).
_MAX_SIZES = 4096


def _shown(value: Any) -> str:
    return quoted(repr(value), 60)


def integer(value: Any, what: str, minimum: int | None = 0) -> int:
    """An int (a Python or numpy integer, not a bool, not a float even if whole)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise QoptError(f"{what} must be an integer, got {type(value).__name__} {_shown(value)}")
    number = int(value)
    if minimum is not None and number < minimum:
        raise QoptError(f"{what} must be at least {minimum}, got {number}")
    return number


def name(value: Any, what: str) -> str:
    """A non-empty string (a state's, a method's, a function's name)."""
    if not isinstance(value, str) or not value:
        raise QoptError(f"{what} must be a non-empty string, got {type(value).__name__} "
                        f"{_shown(value)}")  # fmt: skip
    return value


def optional_name(value: Any, what: str) -> str | None:
    return None if value is None else name(value, what)


def token_ids(value: Any, what: str = "prompt") -> list[int]:
    """A sequence of token ids (non-negative integers), e.g. a list or a 1-d array."""
    if isinstance(value, str | bytes) or not hasattr(value, "__iter__"):
        raise QoptError(f"{what} must be a sequence of token ids, got {type(value).__name__}")
    items = list(value.reshape(-1) if hasattr(value, "reshape") else value)
    return [integer(item, f"{what}[{i}]") for i, item in enumerate(items)]


def dynamic_sizes(value: Any, what: str = "dynamic_sizes", depth: int = 0) -> Any:
    """None, a list of sizes (non-negative ints), or a dict of those by Dim symbol or
    method name (a dict by method of dicts by symbol at most): its shape checked,
    every size an int; what each key names is checked where it is used."""
    if value is None and depth == 0:
        return None
    if isinstance(value, Mapping):
        if depth >= _MAX_DEPTH or not value:
            raise QoptError(f"{what} must be a list of sizes here, got {_shown(value)}")
        checked: dict[str, Any] = {}
        for key, item in value.items():
            name(key, f"a key of {what}")
            checked[key] = dynamic_sizes(item, f"{what}[{key!r}]", depth + 1)
        return checked
    if isinstance(value, str | bytes) or not isinstance(value, Sequence) or not value:
        raise QoptError(
            f"{what} must be a non-empty list of sizes (ints), or a dict of them by symbol "
            f"or method, got {type(value).__name__} {_shown(value)}"
        )
    if len(value) > _MAX_SIZES:
        raise QoptError(f"{what} lists {len(value)} sizes, more than {_MAX_SIZES}")
    return [integer(item, f"{what}[{i}]") for i, item in enumerate(value)]
