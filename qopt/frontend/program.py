"""`import_program`: an ExportedProgram or a `.pt2` file to the aten + quant level.

torch (and the importer, which needs it) are imported when a program is imported,
so that importing qopt's frontends for `qopt-opt x.mlir` stays cheap.
"""

from __future__ import annotations

import os
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from qopt.errors import QoptError


def import_program(ep_or_path: Any, *, trust_pickle: bool = False, limits: Any = None) -> ModuleOp:
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
        raise QoptError(
            "import_program takes an ExportedProgram or a .pt2 path, "
            f"got {type(ep_or_path).__name__}"
        )
    return Importer(ep, get_converters()).run()
