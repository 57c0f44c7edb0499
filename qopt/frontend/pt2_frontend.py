"""The `.pt2` frontend of `qopt-opt`: a `torch.export.save` file to aten + quant.

torch is imported only when a `.pt2` file is actually parsed, so `qopt-opt`
on `.mlir` text stays fast.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.frontend import Frontend

from qopt.context import register_qopt_dialects
from qopt.errors import QoptError
from qopt.frontend.program import import_program
from qopt.limits import DEFAULT_LIMITS, Limits


def precheck_pt2(path: str) -> None:
    """Reject a path that cannot be a `.pt2` archive before paying for `import torch`.

    `qopt.frontend.pt2.load_pt2` makes the same checks (and many more) after it.
    """
    if not os.path.exists(path):
        raise QoptError(f"{path}: no such file")
    if os.path.isdir(path):
        raise QoptError(f"{path}: is a directory, expected a .pt2 file")
    if not zipfile.is_zipfile(path):
        why = (
            "it is empty"
            if os.path.getsize(path) == 0
            else "it is not a zip archive (truncated or not a .pt2)"
        )
        raise QoptError(
            f"{path}: not a .pt2 file: {why}; expected a file written by torch.export.save"
        )


@dataclass(frozen=True)
class PT2Frontend(Frontend):
    """Imports a `.pt2` archive with `qopt.import_program`.

    By default the archive is loaded without running code from it (see
    `qopt.frontend.pt2`); `trust_pickle` (`--trust-pickle`, or
    `-f 'pt2{trust_pickle=true}'`) allows full unpickling, for trusted files only.
    `dynamic_sizes` (`-f 'pt2{dynamic_sizes=1,5,17}'`) imports a program exported with
    one `torch.export.Dim` as static size variants `<method>__<size>`, the form the
    CoreML and Vulkan pipelines compile (`qopt.compile(..., dynamic_sizes=[...])`).
    """

    name = "pt2"

    trust_pickle: bool = False
    limits: Limits = DEFAULT_LIMITS
    dynamic_sizes: tuple[int, ...] = ()

    def parse(self, ctx: Context, input: IO[bytes], input_name: str) -> ModuleOp:
        register_qopt_dialects(ctx)
        if getattr(input, "name", None) == input_name and os.path.isfile(input_name):
            precheck_pt2(input_name)
            return self._import(input_name)
        with tempfile.TemporaryDirectory(prefix="qopt-pt2-") as tmp:
            path = os.path.join(tmp, "input.pt2")
            with open(path, "wb") as f:
                shutil.copyfileobj(input, f)
            precheck_pt2(path)
            return self._import(path)

    def _import(self, path: str) -> ModuleOp:
        return import_program(
            path,
            trust_pickle=self.trust_pickle,
            limits=self.limits,
            dynamic_sizes=list(self.dynamic_sizes) or None,
        )
