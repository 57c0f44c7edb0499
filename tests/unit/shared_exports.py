"""The built-in examples' exported programs, each exported once per test process.

`torch.export` of a built-in model is most of what many tests cost (a PT2E scheme
calibrates and converts first: the Llama's `pt2e_static` takes seconds), and a dozen
test files need the same (model, scheme) pairs. Each file used to keep its own cache;
they share this one (pytest puts this folder on `sys.path`: `pythonpath` in
pyproject.toml), so an xdist worker exports each pair once. The programs are shared:
tests read them (import, compile, `ep.module()`), never change them.
"""

from __future__ import annotations

import functools

from torch.export import ExportedProgram

from qopt.examples import export_model


@functools.cache
def exported(model: str, scheme: str) -> ExportedProgram:
    """`qopt.examples.export_model(model, scheme)` (seed 0), once per process."""
    return export_model(model, scheme)
