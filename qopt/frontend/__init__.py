"""Frontends: `.pt2` / ExportedProgram import (and, later, `.mlpackage`)."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.utils.frontend import Frontend

from qopt.frontend.program import import_program
from qopt.registry import factories

#: Each frontend by the file extension it reads (imported when a file of it is read).
FRONTENDS: dict[str, str] = {"pt2": "qopt.frontend.pt2_frontend:PT2Frontend"}


def get_all_frontends() -> dict[str, Callable[[], type[Frontend]]]:
    """`{file extension: factory}` of qopt's frontends (xdsl-opt's registry shape;
    qopt/registry.py)."""
    return factories(FRONTENDS)


__all__ = ["get_all_frontends", "import_program"]
