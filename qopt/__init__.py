"""qopt: a multi-level compiler for quantized PyTorch models, built on xDSL.

Public API (DESIGN.md §2): `import_program` (one program, or a dict of methods),
`fuse`, `fold_constants`, `compile` (CoreML or Vulkan artifacts), `load` (a saved
`.qvk` / `.mlpackage`), `interpret` (one call), `session` (calls keeping state),
`generate` (greedy LLM decoding), `read_mlpackage`, `Limits`, `QoptError`.
"""

from __future__ import annotations

import os
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from qopt.errors import QoptError
from qopt.limits import Limits

__all__ = [
    "Limits",
    "QoptError",
    "compile",
    "fold_constants",
    "fuse",
    "generate",
    "import_program",
    "interpret",
    "load",
    "read_mlpackage",
    "session",
]


#: Options of `compile` per target (besides `trust_pickle` and `limits`, which
#: every target takes).
TARGET_OPTIONS = {
    "coreml": (
        "minimum_deployment_target",
        "compute_precision",
        "output_names",
        "dynamic_activations",
    ),
    "vulkan": ("device", "validation"),
}


def _module_argument(module: Any, function: str) -> ModuleOp:
    if not isinstance(module, ModuleOp):
        raise QoptError(
            f"qopt.{function} takes a module (builtin.module) from qopt.import_program or "
            f"the parser, got {type(module).__name__}"
        )
    return module


def import_program(
    ep_or_path: Any, *, trust_pickle: bool = False, limits: Limits | str | None = None
) -> ModuleOp:
    """Import an ExportedProgram or a `.pt2` file into the aten + quant level.

    A `.pt2` is untrusted input: nothing in it runs unless `trust_pickle`, and what
    it declares is bounded by `limits` (`qopt.Limits`, or "name=value,..." text)."""
    from qopt.frontend import import_program as _import

    return _import(ep_or_path, trust_pickle=trust_pickle, limits=limits)


def interpret(module: ModuleOp, *inputs: Any, function: str = "forward") -> tuple[Any, ...]:
    """Run a module through the reference interpreter; numpy outputs in program order."""
    from qopt.interpreters import interpret as _interpret

    return _interpret(_module_argument(module, "interpret"), *inputs, function=function)


def session(module: ModuleOp) -> Any:
    """A `Session` of `module` in the reference interpreter: `run(*inputs, method=)`
    keeps the program's state (its `ml_program` globals: mutated buffers such as a
    KV cache) between calls; `reset()`, `read_state(name)`, `state_names`,
    `methods`. Two sessions never share state."""
    from qopt.interpreters.session import Session

    return Session(_module_argument(module, "session"))


def generate(runner: Any, prompt: Any, max_new_tokens: int) -> list[int]:
    """Greedy generation: `max_new_tokens` tokens after `prompt` (token ids) on a
    session (`qopt.session(module)`, an artifact's `.session()`), a module or an
    artifact (a fresh session of it); `prefill` then `decode` where the program has
    them (qopt/generation.py)."""
    from qopt.generation import generate as _generate

    if isinstance(runner, ModuleOp):
        runner = session(runner)
    elif not hasattr(runner, "run") and hasattr(runner, "session"):
        runner = runner.session()
    if not hasattr(runner, "run") or not hasattr(runner, "methods"):
        raise QoptError(
            f"qopt.generate takes a session, a module or an artifact, got {type(runner).__name__}"
        )
    return _generate(runner, [int(t) for t in prompt], int(max_new_tokens))


def fuse(module: ModuleOp, *, report: bool = False) -> ModuleOp:
    """Run `fuse-quant` on `module` in place and return it."""
    from qopt.context import make_context
    from qopt.lowering.fuse_quant import FuseQuantPass

    FuseQuantPass(report=report).apply(make_context(), _module_argument(module, "fuse"))
    return module


def fold_constants(module: ModuleOp) -> ModuleOp:
    """Run `fold-constants` on `module` in place and return it."""
    from qopt.context import make_context
    from qopt.lowering.fold_constants import FoldConstantsPass

    FoldConstantsPass().apply(make_context(), _module_argument(module, "fold_constants"))
    return module


def compile(ep_or_path: Any, target: str = "coreml", **options: Any) -> Any:
    """Import a program and compile it for `target` ("coreml" or "vulkan"): the
    target's pipeline (`qopt-coreml` / `qopt-vulkan`, qopt/lowering/pipelines.py,
    the passes `qopt-opt -p` runs), then its artifact.

    Returns the target's artifact: `.module` (the final IR) and `.save(path)`; a
    CoreML artifact also has `.mil_program`, a Vulkan artifact is callable.
    `trust_pickle` and `limits` go to the `.pt2` loader; the others (TARGET_OPTIONS)
    to the target. An unknown target or option is a QoptError listing the valid ones.
    CoreML outputs are named after the exported program's (recorded by the import).
    """
    if target not in TARGET_OPTIONS:
        raise QoptError(f"unknown target {target!r}: use 'coreml' or 'vulkan'")
    unknown = sorted(set(options) - {"trust_pickle", "limits", *TARGET_OPTIONS[target]})
    if unknown:
        valid = ", ".join(("trust_pickle", "limits", *TARGET_OPTIONS[target]))
        raise QoptError(
            f"qopt.compile(target={target!r}) has no option {', '.join(unknown)}; "
            f"its options are {valid}"
        )
    trust_pickle = bool(options.pop("trust_pickle", False))
    limits = options.pop("limits", None)
    module = import_program(ep_or_path, trust_pickle=trust_pickle, limits=limits)
    if target == "coreml":  # qopt-coreml{target, compute-precision}, then the MIL Program
        from qopt.backends.coreml import compile_coreml

        return compile_coreml(module, **options)
    from qopt.backends.vulkan import compile_vulkan  # qopt-vulkan, then the artifact

    return compile_vulkan(module, **options)


def read_mlpackage(path: Any) -> ModuleOp:
    """Read any ML Program `.mlpackage` back into the coreml dialect (untrusted input:
    every path stays inside the package, every size is checked before use)."""
    from qopt.backends.coreml.reader import read_mlpackage as _read

    if not isinstance(path, str | os.PathLike):
        raise QoptError(f"qopt.read_mlpackage takes a path, got {type(path).__name__}")
    return _read(path)


def load(path: Any) -> Any:
    """A saved artifact: a `.qvk` bundle (runs on the Vulkan device) or an
    `.mlpackage` (runs by interpreting the package read back: how to run one without
    Core ML). Both are untrusted input, checked whole before anything runs. The
    artifact is callable (one call on a fresh state), has `.methods` and
    `.session()` (calls that keep the program's state)."""
    if not isinstance(path, str | os.PathLike):
        raise QoptError(f"qopt.load takes a path, got {type(path).__name__}")
    text = os.fspath(path)
    if text.rstrip("/").endswith(".mlpackage"):
        from qopt.backends.coreml import load_mlpackage_artifact

        return load_mlpackage_artifact(text)
    if text.endswith(".qvk"):
        from qopt.backends.vulkan import load_vulkan_artifact

        return load_vulkan_artifact(text)
    raise QoptError(
        f"qopt.load reads a .qvk bundle or an .mlpackage, got '{text}' (import a .pt2 "
        "with qopt.import_program or qopt.compile)"
    )
