"""The built-in examples' exported programs, each exported once per test process.

`torch.export` of a built-in model is most of what many tests cost (a PT2E scheme
calibrates and converts first: the Llama's `pt2e_static` takes seconds), and a dozen
test files need the same (model, scheme) pairs. Each file used to keep its own cache;
they share this one (pytest puts this folder on `sys.path`: `pythonpath` in
pyproject.toml), so an xdist worker exports each pair once. The programs are shared:
tests read them (import, compile, `ep.module()`), never change them.
"""

from __future__ import annotations

import copy
import functools

import torch
from torch.export import ExportedProgram

from qopt.examples import apply_scheme, build_kv_llama, export_model


@functools.cache
def exported(model: str, scheme: str) -> ExportedProgram:
    """`qopt.examples.export_model(model, scheme)` (seed 0), once per process."""
    return export_model(model, scheme)


def kv_decoder_methods(
    config: dict[str, int], prompt: list[int], scheme: str
) -> dict[str, ExportedProgram]:
    """A KV-cache decoder (`build_kv_llama`, index_put updates) under `scheme`,
    exported as two methods: `prefill` over `prompt` and a one-token `decode`."""
    example = (torch.tensor([prompt]), torch.arange(len(prompt)))
    model = apply_scheme(build_kv_llama(update="index_put", **config), scheme, example)
    with torch.no_grad():
        return {
            "prefill": torch.export.export(copy.deepcopy(model), example, strict=False),
            "decode": torch.export.export(
                copy.deepcopy(model), (torch.tensor([[1]]), torch.tensor([0])), strict=False
            ),
        }
