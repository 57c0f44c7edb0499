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
    (`limits`: a `qopt.Limits` or spec string bounding what a `.pt2` may declare).

    A dict `{method: program or path}` (an LLM's `prefill` and `decode`) imports
    into one module with a function per method, sharing weights and states."""

    from qopt.frontend.converters import get_converters
    from qopt.frontend.importer import Importer, import_methods

    if isinstance(ep_or_path, dict):
        methods: dict[str, Any] = ep_or_path
        if not methods or not all(isinstance(k, str) and k.isidentifier() for k in methods):
            raise QoptError(
                "import_program takes a dict of methods {name: program}, names being "
                f"identifiers, got keys {list(methods)[:8]}"
            )
        programs = {
            name: import_source(value, trust_pickle=trust_pickle, limits=limits)
            for name, value in methods.items()
        }
        return import_methods(programs, get_converters())
    return Importer(import_source(ep_or_path, trust_pickle=trust_pickle, limits=limits),
                    get_converters()).run()  # fmt: skip


def import_source(ep_or_path: Any, *, trust_pickle: bool = False, limits: Any = None) -> Any:
    """The ExportedProgram of `ep_or_path` (a `.pt2` is loaded safely)."""
    import torch
    from torch.export import ExportedProgram

    if isinstance(ep_or_path, torch.nn.Module):
        name = type(ep_or_path).__name__
        raise QoptError(
            f"qopt takes a program captured by torch.export, got the nn.Module {name}: "
            "export it first, with example inputs of the shapes it will run on: "
            "ep = torch.export.export(model.eval(), (example_input,)), then "
            "qopt.compile(ep, ...) (or torch.export.save(ep, 'model.pt2') for qopt-opt)"
        )
    if isinstance(ep_or_path, ExportedProgram):
        return ep_or_path
    if isinstance(ep_or_path, str | os.PathLike):
        from qopt.frontend.pt2 import load_pt2

        return load_pt2(os.fspath(ep_or_path), trust_pickle=trust_pickle, limits=limits)
    raise QoptError(
        "import_program takes an ExportedProgram, a .pt2 path or a dict of them by "
        f"method name, got {type(ep_or_path).__name__}"
    )
