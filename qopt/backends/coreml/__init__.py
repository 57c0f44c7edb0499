"""The CoreML target: `compile_coreml` (the `qopt-coreml` pipeline, then the MIL
Program) and the `.mlpackage` it saves.

`qopt.compile(ep, target="coreml", **options)` lands here with the imported
module; `qopt.read_mlpackage` is in `reader.py`. The passes and their order are
`qopt/lowering/pipelines.py: QoptCoremlPipeline`'s, the one definition
`qopt-opt -p qopt-coreml` runs too.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects.builtin import ModuleOp


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
    """Run `qopt-coreml{target=... compute-precision=...}` on `module` in place
    (import level, or already fused: fuse-quant leaves qfused ops as they are),
    then build its MIL Program. `compute_precision` is "fp32"
    (default, exact checks) or "fp16". Outputs are named `output_names`, else as
    the module records (`qopt.output_names`: the exported program's), else
    `output_<i>`."""
    from qopt.backends.coreml.emitter import build_program, output_names_of
    from qopt.context import make_context
    from qopt.lowering.pipelines import QoptCoremlPipeline

    pipeline = QoptCoremlPipeline(
        target=minimum_deployment_target, compute_precision=compute_precision
    )
    pipeline.apply(make_context(), module)
    names = output_names_of(module, output_names)
    program = build_program(module, names)
    return CoremlArtifact(module, program, minimum_deployment_target, compute_precision, names)


__all__ = ["CoremlArtifact", "compile_coreml", "save_mlpackage"]
