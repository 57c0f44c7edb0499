"""Analyses the pipelines run before a conversion: they change no op of the program.

- `check-mid-level{target=coreml|vulkan}`: what a conversion to a target notes first.
  It warns (`qopt-opt: warning: ...`, `qopt.report.QoptWarning`) when quantized
  patterns that fuse-quant would fuse reach the target unfused (fuse-quant is tried
  on a clone of the module, which stays as it is), and records the weights the
  target is given (compressed against float) in the active compile report.
- `record-source-hash`: records on the module the SHA-256 of the program as the
  CoreML preparation receives it (`qopt.source_sha256`, written into the package's
  metadata), once: a later run keeps the first hash.

`qopt-coreml` and `qopt-vulkan` list them before their conversion (and its other
preparation passes: qopt/lowering/pipelines.py); convert-to-coreml and convert-to-vkc,
run alone, run them first themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from qopt.dialects.queries import record_source_hash
from qopt.errors import QoptError
from qopt.lowering.fuse_quant import check_mid_level
from qopt.resources import require_weights

CONVERSIONS = {"coreml": "convert-to-coreml", "vulkan": "convert-to-vkc"}
"""The conversion each target's checks speak for (their warnings name it)."""


@dataclass(frozen=True)
class CheckMidLevelPass(ModulePass):
    """Warn when quantized patterns fuse-quant would fuse are left unfused, and record
    the weights the target is given in the compile report (an analysis: the module
    stays as it is)."""

    name = "check-mid-level"

    target: str = "vulkan"
    """The target the module is about to be converted for: coreml or vulkan (the
    warning names its conversion)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        conversion = CONVERSIONS.get(self.target)
        if conversion is None:
            raise QoptError(
                f"check-mid-level: target must be one of {', '.join(CONVERSIONS)}, "
                f"got '{self.target}'"
            )
        require_weights(op, conversion)
        check_mid_level(op, conversion)


@dataclass(frozen=True)
class RecordSourceHashPass(ModulePass):
    """Record the hash of the program as it is now (`qopt.source_sha256`: the CoreML
    package's metadata), once (an analysis: no op changes)."""

    name = "record-source-hash"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        require_weights(op, self.name)
        record_source_hash(op)


__all__ = ["CONVERSIONS", "CheckMidLevelPass", "RecordSourceHashPass"]
