"""Translation validation of `coreml-canonicalize` on real exported models.

Each model is lowered to coreml IR (qopt-coreml's passes up to convert-to-coreml),
interpreted on fresh inputs, canonicalized, and interpreted again: the rewrites
only move data, so every output is bit for bit what it was. The pass must also
remove data-movement ops from each (swin's strided slices of slices and reshaped
constants, vit's and whisper's reshapes to their own shape), so the check is not
vacuous; at
fp16 (coreml-fp16 after it, as qopt-coreml runs them) the outputs equal those of
the uncanonicalized fp16 module as well.
"""

from __future__ import annotations

import collections
import functools

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

import qopt
from qopt import zoo
from qopt.context import make_context
from qopt.lowering.coreml_canonicalize import CoremlCanonicalizePass
from qopt.lowering.coreml_fp16 import CoremlFp16Pass
from qopt.lowering.pipelines import QoptCoremlPipeline

MOVES = ("coreml.reshape", "coreml.transpose", "coreml.slice_by_index")


@functools.cache
def exported(name: str) -> tuple[object, tuple[np.ndarray, ...]]:
    """zoo model `name`'s float exported program and fresh inputs."""
    ep, torch_inputs = zoo.export(name, "float")
    return ep, tuple(t.numpy() for t in torch_inputs)


def lowered(name: str) -> ModuleOp:
    """`name` at coreml level: qopt-coreml's passes before coreml-canonicalize."""
    module = qopt.import_program(exported(name)[0])
    ctx = make_context()
    for sub_pass in QoptCoremlPipeline(compute_precision="fp32").passes():
        if sub_pass.name == "coreml-canonicalize":
            break
        sub_pass.apply(ctx, module)
    return module


def moves(module: ModuleOp) -> collections.Counter[str]:
    return collections.Counter(op.name for op in module.walk() if op.name in MOVES)


def assert_bit_identical(got: tuple[np.ndarray, ...], want: tuple[np.ndarray, ...]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype
        assert g.shape == w.shape
        assert g.tobytes() == w.tobytes()


@pytest.mark.parametrize("name", ["swin", "whisper_encoder", "vit"])
def test_canonicalize_is_bit_exact_and_removes_moves(name: str) -> None:
    inputs = exported(name)[1]
    before = lowered(name)
    want = qopt.interpret(before, *inputs)
    after = lowered(name)
    CoremlCanonicalizePass().apply(make_context(), after)
    after.verify()
    assert_bit_identical(qopt.interpret(after, *inputs), want)
    removed = sum(moves(before).values()) - sum(moves(after).values())
    assert removed > 0, (moves(before), moves(after))
    again = str(after)  # a second run finds nothing left to do
    CoremlCanonicalizePass().apply(make_context(), after)
    assert str(after) == again


def test_canonicalize_before_fp16_is_bit_exact() -> None:
    inputs = exported("swin")[1]
    plain, canonical = lowered("swin"), lowered("swin")
    ctx = make_context()
    CoremlFp16Pass().apply(ctx, plain)
    CoremlCanonicalizePass().apply(ctx, canonical)
    CoremlFp16Pass().apply(ctx, canonical)
    assert_bit_identical(qopt.interpret(canonical, *inputs), qopt.interpret(plain, *inputs))
