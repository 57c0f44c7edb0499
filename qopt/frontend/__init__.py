"""Frontends: `.pt2` / ExportedProgram import (and, later, `.mlpackage`)."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.utils.frontend import Frontend

from qopt.frontend.program import import_program


def get_all_frontends() -> dict[str, Callable[[], type[Frontend]]]:
    """`{file extension: factory}` of qopt's frontends (xdsl-opt's registry shape)."""

    def get_pt2() -> type[Frontend]:
        from qopt.frontend.pt2_frontend import PT2Frontend

        return PT2Frontend

    return {"pt2": get_pt2}


__all__ = ["get_all_frontends", "import_program"]
