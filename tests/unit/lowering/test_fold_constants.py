"""fold-constants and inline constants: what is folded prints and parses back
to the same values (non-finite floats go to blobs), and the pass is a no-op on
modules without input-independent aten ops."""

from __future__ import annotations

import numpy as np
import torch

import qopt
from qopt.context import make_context, parse_module, print_module
from qopt.examples import MODELS, SCHEMES, export_model, random_inputs
from qopt.lowering.fold_constants import FoldConstantsPass


def _round_trip(module):
    """Print with every blob (as `qopt-opt --print-weights`) and parse back."""
    return parse_module(print_module(module, elide_larger_than=None))


class _Masked(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[-1]
        mask = torch.arange(n)[None, :] > torch.arange(n)[:, None]
        return torch.softmax(x.masked_fill(mask, float("-inf")), -1)


def test_folded_mask_with_inf_round_trips() -> None:
    ep = torch.export.export(_Masked(), (torch.randn(4, 4),))
    module = qopt.import_program(ep)
    FoldConstantsPass().apply(make_context(), module)
    assert not any(op.name in ("aten.arange", "aten.gt") for op in module.walk())
    x = torch.randn(4, 4)
    want = ep.module()(x).numpy()
    (got,) = qopt.interpret(module, x)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)  # softmax: ulps
    assert np.isinf(np.asarray(got)).sum() == 0
    assert (got == 0).sum() == 6
    (again,) = qopt.interpret(_round_trip(module), x)
    np.testing.assert_array_equal(again, got)


def test_builtin_examples_unchanged_in_value() -> None:
    """On the built-in examples the pass only removes what does not read inputs."""
    for model in MODELS:
        for scheme in ("float", "w4g32", "pt2e_static"):
            assert scheme in SCHEMES
            module = qopt.fuse(qopt.import_program(export_model(model, scheme)))
            inputs = random_inputs(model, 3)
            before = qopt.interpret(module, *inputs)
            FoldConstantsPass().apply(make_context(), module)
            module.verify()
            after = qopt.interpret(module, *inputs)
            assert all(np.array_equal(a, b) for a, b in zip(before, after, strict=True))
