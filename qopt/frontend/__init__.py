"""Frontends: `.pt2` / ExportedProgram import (and, later, `.mlpackage`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.frontend import Frontend


def import_program(
    ep_or_path: Any, *, trust_pickle: bool = False, limits: Any = None
) -> ModuleOp:
    """Import a `torch.export.ExportedProgram` or a `.pt2` path into aten + quant
    (`limits`: a `qopt.Limits` or spec string bounding what a `.pt2` may declare)."""
    from torch.export import ExportedProgram

    from qopt.frontend.converters import get_converters
    from qopt.frontend.importer import Importer

    if isinstance(ep_or_path, ExportedProgram):
        ep = ep_or_path
    elif isinstance(ep_or_path, str | os.PathLike):
        from qopt.frontend.pt2 import load_pt2

        ep = load_pt2(os.fspath(ep_or_path), trust_pickle=trust_pickle, limits=limits)
    else:
        from qopt.errors import QoptError

        raise QoptError(
            "import_program takes an ExportedProgram or a .pt2 path, "
            f"got {type(ep_or_path).__name__}"
        )
    return Importer(ep, get_converters()).run()


def get_all_frontends() -> dict[str, Callable[[], type[Frontend]]]:
    """`{file extension: factory}` of qopt's frontends (xdsl-opt's registry shape)."""

    def get_pt2() -> type[Frontend]:
        from qopt.frontend.pt2_frontend import PT2Frontend

        return PT2Frontend

    return {"pt2": get_pt2}
