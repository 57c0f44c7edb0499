"""The `mlpackage` target of `qopt-opt`: a coreml-dialect module -> `.mlpackage`.

`qopt-opt model.pt2 -p qopt-coreml -t mlpackage -o model.mlpackage` (OUTPUT is
a directory, written under a temporary name and renamed into place, so a
failed run leaves nothing behind). The module must already be at the coreml
level (run `qopt-coreml` or `convert-to-coreml` first); its states (mutable
`ml_program.global`s) become the package's states, several functions one
multifunction package.
"""

from __future__ import annotations

import os

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp

from qopt.backends.coreml import save_mlpackage
from qopt.backends.coreml.emitter import build_programs, package_metadata
from qopt.dialects import coreml
from qopt.dialects.ml_program import GlobalOp
from qopt.errors import QoptError, where
from qopt.report import phase


def write_mlpackage(module: ModuleOp, path: str | os.PathLike[str] | None) -> str:
    if path is None:
        raise QoptError("-t mlpackage writes a directory: give it with -o model.mlpackage")
    for op in module.walk():
        if not isinstance(op, coreml.CoremlOp | FuncOp | ReturnOp | ModuleOp | GlobalOp):
            raise QoptError(
                f"-t mlpackage: {where(op)} is not a coreml op: lower the module first "
                "(-p qopt-coreml, or -p convert-to-coreml after fuse-quant)"
            )
    with phase("MIL build"):
        programs = build_programs(module)
    func = next(op for op in module.ops if isinstance(op, FuncOp))
    opset = func.attributes.get(coreml.OPSET_ATTR)
    target = getattr(opset, "data", "iOS18")
    with phase("serialization"):
        return save_mlpackage(programs, path, target, package_metadata(module))


__all__ = ["write_mlpackage"]
