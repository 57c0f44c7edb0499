"""qopt: a multi-level compiler for quantized PyTorch models, built on xDSL.

Public API (DESIGN.md §2): `import_program`, `interpret`, `QoptError` (more
entry points arrive with the fusion and target levels).
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import ModuleOp

from qopt.errors import QoptError

__all__ = [
    "QoptError",
    "compile",
    "fold_constants",
    "fuse",
    "import_program",
    "interpret",
    "read_mlpackage",
]


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


def fold_constants(module: ModuleOp) -> ModuleOp:
    """Run `fold-constants` on `module` in place and return it."""
    from qopt.context import make_context
    from qopt.lowering.fold_constants import FoldConstantsPass

    FoldConstantsPass().apply(make_context(), module)
    return module


def compile(ep_or_path: Any, target: str = "coreml", **options: Any) -> Any:
    """Import, fuse and lower a program for `target` ("coreml" or "vulkan").

    Returns the target's artifact: `.module` (the final IR) and `.save(path)`; a
    CoreML artifact also has `.mil_program`, a Vulkan artifact is callable.
    `trust_pickle` is passed to the `.pt2` loader; other options go to the target.
    """
    trust_pickle = bool(options.pop("trust_pickle", False))
    if target not in ("coreml", "vulkan"):
        raise QoptError(f"unknown target '{target}': use 'coreml' or 'vulkan'")
    module = fuse(import_program(ep_or_path, trust_pickle=trust_pickle))
    fold_constants(module)
    if target == "coreml":
        from qopt.backends.coreml import compile_coreml

        signature = getattr(ep_or_path, "graph_signature", None)
        if signature is not None:  # name the outputs after the exported program's
            options.setdefault("output_names", list(signature.user_outputs))
        return compile_coreml(module, **options)
    from qopt.backends.vulkan import compile_vulkan

    return compile_vulkan(module, **options)


def read_mlpackage(path: Any) -> ModuleOp:
    """Read any ML Program `.mlpackage` back into the coreml dialect."""
    from qopt.backends.coreml.reader import read_mlpackage as _read

    return _read(path)
