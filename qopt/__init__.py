"""qopt: a multi-level compiler for quantized PyTorch models, built on xDSL.

Public API (DESIGN.md §2): `import_program`, `interpret`, `QoptError` (more
entry points arrive with the fusion and target levels).
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import ModuleOp

from qopt.errors import QoptError

__all__ = ["QoptError", "fuse", "import_program", "interpret"]


def import_program(ep_or_path: Any, *, trust_pickle: bool = False) -> ModuleOp:
    """Import an ExportedProgram or a `.pt2` file into the aten + quant level."""
    from qopt.frontend import import_program as _import

    return _import(ep_or_path, trust_pickle=trust_pickle)


def interpret(module: ModuleOp, *inputs: Any, function: str = "forward") -> tuple[Any, ...]:
    """Run a module through the reference interpreter; numpy outputs in program order."""
    from qopt.interpreters import interpret as _interpret

    return _interpret(module, *inputs, function=function)


def fuse(module: ModuleOp, *, report: bool = False) -> ModuleOp:
    """Run `fuse-quant` on `module` in place and return it."""
    from qopt.context import make_context
    from qopt.lowering.fuse_quant import FuseQuantPass

    FuseQuantPass(report=report).apply(make_context(), module)
    return module
