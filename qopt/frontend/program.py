"""`import_program`: an ExportedProgram or a `.pt2` file to the aten + quant level.

torch (and the importer, which needs it) are imported when a program is imported,
so that importing qopt's frontends for `qopt-opt x.mlir` stays cheap.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import ModuleOp

from qopt import arguments
from qopt.errors import QoptError
from qopt.limits import resolve
from qopt.report import phase


def import_program(
    ep_or_path: Any,
    *,
    trust_pickle: bool = False,
    limits: Any = None,
    static: bool = False,
    dynamic_sizes: Any = None,
) -> ModuleOp:
    """Import a `torch.export.ExportedProgram` or a `.pt2` path into aten + quant
    (`limits`: a `qopt.Limits` or spec string bounding what a `.pt2` may declare).

    A dict `{method: program or path}` (an LLM's `prefill` and `decode`) imports
    into one module with a function per method, sharing weights and states.

    A method exported with a `torch.export.Dim` imports with `?` dims (the reference
    interpreter runs it at any size in range); with `static` (the CoreML and Vulkan
    targets) or `dynamic_sizes`, it imports as static size variants `<method>__<size>`
    at the sizes `dynamic_sizes` gives (a list for one Dim, a dict by symbol name for
    several; a dict by method name of those for several methods), by default every
    size of a narrow Dim or the powers of two of a wide one (`enumerate_sizes`)."""

    # torch (and the importer, which needs it): imported when a program is imported
    from qopt.frontend import load

    if isinstance(ep_or_path, dict):
        methods: dict[str, Any] = ep_or_path
        if not methods or not all(isinstance(k, str) and k.isidentifier() for k in methods):
            raise QoptError(
                "import_program takes a dict of methods {name: program}, names being "
                f"identifiers, got keys {list(methods)[:8]}"
            )
    else:
        methods = {"forward": ep_or_path}
    bounds = resolve(limits)
    dynamic_sizes = arguments.dynamic_sizes(dynamic_sizes)
    with bounds.applied(), phase("load"):
        programs = {
            name: load.import_source(value, trust_pickle=trust_pickle, limits=bounds)
            for name, value in methods.items()
        }
    with bounds.applied(), phase("import"):
        return load.import_loaded(programs, ep_or_path, static, dynamic_sizes)
