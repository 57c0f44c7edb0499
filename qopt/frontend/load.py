"""The torch side of `import_program` (qopt/frontend/program.py): a program loaded (a
`.pt2` safely, qopt/frontend/pt2.py) and imported, as one function per method or per
size variant. Importing this module imports torch; program.py imports it only when a
program is imported, so that importing qopt's frontends for `qopt-opt x.mlir` stays cheap.
"""

from __future__ import annotations

import os
from typing import Any

import torch
from torch.export import ExportedProgram
from xdsl.dialects.builtin import ModuleOp

from qopt.dialects.signature import variant_name
from qopt.errors import QoptError
from qopt.frontend.converters import get_converters
from qopt.frontend.importer import Importer
from qopt.frontend.methods import enumerate_sizes, import_methods
from qopt.frontend.pt2 import load_pt2


def import_loaded(
    programs: dict[str, Any], ep_or_path: Any, static: bool, dynamic_sizes: Any
) -> ModuleOp:
    """The module of loaded programs (`import_program`'s methods): one function per
    method, or per size variant of a Dim-exported method where the target compiles
    static shapes (`static`) or sizes are asked for (`dynamic_sizes`)."""
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
        return load_pt2(os.fspath(ep_or_path), trust_pickle=trust_pickle, limits=limits)
    raise QoptError(
        "import_program takes an ExportedProgram, a .pt2 path or a dict of them by "
        f"method name, got {type(ep_or_path).__name__}"
    )
