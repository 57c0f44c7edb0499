"""The CoreML target: `compile_coreml` (mid level -> coreml -> `.mlpackage`).

`qopt.compile(ep, target="coreml", **options)` lands here with the fused (mid
level) module; `qopt.read_mlpackage` is in `reader.py`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from qopt.errors import QoptError

PRECISIONS = ("fp32", "fp16")


@dataclass
class CoremlArtifact:
    """The compiled program: `.module` (coreml dialect), `.mil_program`, `.save(path)`."""

    module: ModuleOp
    mil_program: Any
    target: str
    compute_precision: str
    output_names: list[str] = field(default_factory=list[str])

    def save(self, path: str | os.PathLike[str]) -> str:
        """Write the `.mlpackage` directory atomically (temp dir + rename)."""
        return save_mlpackage(self.mil_program, path, self.target)


def save_mlpackage(program: Any, path: str | os.PathLike[str], target: str) -> str:
    import coremltools as ct

    from qopt.backends.coreml.emitter import save_program

    final = os.path.abspath(os.fspath(path))
    parent = os.path.dirname(final)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(dir=parent, prefix=f".{os.path.basename(final)}.")
    try:
        staged = os.path.join(tmp, "model.mlpackage")
        save_program(program, staged, getattr(ct.target, target))
        if os.path.isdir(final):
            shutil.rmtree(final)
        elif os.path.exists(final):
            os.unlink(final)
        os.replace(staged, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def compile_coreml(
    module: ModuleOp,
    minimum_deployment_target: str = "iOS18",
    compute_precision: str = "fp32",
    output_names: Sequence[str] | None = None,
) -> CoremlArtifact:
    """Lower a mid-level (aten + qfused + quant) module to coreml and build its MIL
    Program. `compute_precision` is "fp32" (default, exact checks) or "fp16"."""
    from qopt.backends.coreml.emitter import build_program, to_fp16
    from qopt.context import make_context
    from qopt.lowering.convert_to_coreml import ConvertToCoremlPass

    if compute_precision not in PRECISIONS:
        raise QoptError(f"compute_precision must be 'fp32' or 'fp16', got '{compute_precision}'")
    ConvertToCoremlPass(target=minimum_deployment_target).apply(make_context(), module)
    if compute_precision == "fp16":
        to_fp16(module)
    module.verify()
    program = build_program(module, output_names)
    return CoremlArtifact(
        module, program, minimum_deployment_target, compute_precision, list(output_names or [])
    )


__all__ = ["CoremlArtifact", "compile_coreml", "save_mlpackage"]
