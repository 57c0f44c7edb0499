"""fold-constants and inline constants: what is folded prints and parses back
to the same values (non-finite floats go to blobs), and the pass is a no-op on
modules without input-independent aten ops."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from shared_exports import exported
from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import DenseResourceAttr
from xdsl.dialects.func import FuncOp

import qopt
from qopt.context import make_context, parse_module, print_module
from qopt.examples import MODELS, SCHEMES, random_inputs
from qopt.lowering.convert_to_vkc import ConvertToVkcPass
from qopt.lowering.fold_constants import NEVER_FOLDED, FoldConstantsPass
from qopt.lowering.pipelines import QoptVulkanPipeline
from qopt.resources import weights_of


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
            module = qopt.fuse(qopt.import_program(exported(model, scheme)))
            inputs = random_inputs(model, 3)
            before = qopt.interpret(module, *inputs)
            FoldConstantsPass().apply(make_context(), module)
            module.verify()
            after = qopt.interpret(module, *inputs)
            assert all(np.array_equal(a, b) for a, b in zip(before, after, strict=True))


def _input_independent(module) -> list[str]:
    """The ops of `module`'s functions whose operands are all constants."""
    found = []
    for function in module.ops:
        if not isinstance(function, FuncOp):
            continue
        constants = set()
        for op in function.body.block.ops:
            if isinstance(op, ConstantOp):
                constants.add(op.result)
            elif op.name not in NEVER_FOLDED and all(v in constants for v in op.operands):
                found.append(op.name)
    return found


def test_vulkan_mode_is_equivalent_on_the_examples() -> None:
    """fold-constants{target=vulkan}, where qopt-vulkan runs it (after the rest of
    convert-to-vkc's preparation): the interpreter gives the same values before and
    after, nothing input-independent is left (convert-to-vkc evaluates nothing), and
    the only new blobs are values the program reads (no intermediate of a chain)."""
    passes = QoptVulkanPipeline().passes()
    at = next(i for i, p in enumerate(passes) if p.name == "fold-constants" and i > 1)
    fold = passes[at]
    assert fold == FoldConstantsPass(target="vulkan")
    assert ConvertToVkcPass.preparation()[-1] == fold
    for model in MODELS:
        for scheme in ("float", "w4g32", "pt2e_static"):
            module = qopt.import_program(exported(model, scheme))
            for before_fold in passes[:at]:
                before_fold.apply(make_context(), module)
            inputs = random_inputs(model, 3)
            before = qopt.interpret(module, *inputs)
            store = weights_of(module)
            blobs = len(store)
            fold.apply(make_context(), module)
            module.verify()
            assert _input_independent(module) == [], (model, scheme)
            after = qopt.interpret(module, *inputs)
            assert all(np.array_equal(a, b) for a, b in zip(before, after, strict=True))
            read = {
                op.value.resource_handle.data
                for op in module.walk()
                if isinstance(op, ConstantOp) and isinstance(op.value, DenseResourceAttr)
            }
            new = [key for key in list(store._blobs)[blobs:]]
            assert set(new) <= read, (model, scheme)


def test_vulkan_mode_bad_target() -> None:
    module = parse_module("func.func @f() {\n  func.return\n}\n")
    with pytest.raises(qopt.QoptError, match="target must be one of any, vulkan"):
        FoldConstantsPass(target="metal").apply(make_context(), module)
