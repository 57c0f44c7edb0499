"""`import_program`: an ExportedProgram or a `.pt2` file to the aten + quant level.

torch (and the importer, which needs it) are imported when a program is imported,
so that importing qopt's frontends for `qopt-opt x.mlir` stays cheap.
"""

from __future__ import annotations

import os
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from qopt import arguments
from qopt.dialects.signature import variant_name
from qopt.errors import QoptError
from qopt.limits import resolve


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

    from qopt.report import phase

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
            name: import_source(value, trust_pickle=trust_pickle, limits=bounds)
            for name, value in methods.items()
        }
    with bounds.applied(), phase("import"):
        return _import_loaded(programs, ep_or_path, static, dynamic_sizes)


def _import_loaded(
    programs: dict[str, Any], ep_or_path: Any, static: bool, dynamic_sizes: Any
) -> ModuleOp:
    from qopt.frontend.converters import get_converters
    from qopt.frontend.importer import Importer
    from qopt.frontend.methods import enumerate_sizes, import_methods

    converters = get_converters()
    if not (static or dynamic_sizes is not None):
        if isinstance(ep_or_path, dict):
            return import_methods(programs, converters)
        return Importer(programs["forward"], converters).run()
    expanded: dict[str, Any] = {}
    sizes: dict[str, dict[str, int]] = {}
    for name, ep in programs.items():
        dims = Importer(ep, converters).dynamic_dims()
        if not dims:
            expanded[name] = ep
            continue
        requested = dynamic_sizes
        if isinstance(dynamic_sizes, dict) and name in dynamic_sizes:
            requested = dynamic_sizes[name]
        elif isinstance(dynamic_sizes, dict) and set(dynamic_sizes) & set(programs):
            requested = None  # sizes given for other methods only
        for combo in enumerate_sizes(name, dims, requested):
            variant = variant_name(name, [combo[symbol] for symbol in sorted(combo)])
            if variant in programs:
                raise QoptError(
                    f"method {variant!r} is also the name of a size variant of {name!r}: "
                    "rename the method"
                )
            expanded[variant] = ep
            sizes[variant] = combo
    if not sizes and not isinstance(ep_or_path, dict):
        return Importer(programs["forward"], converters).run()
    return import_methods(expanded, converters, sizes)


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
