"""Every built-in (model, scheme) pair: import + interpret equals torch eager.

The reference is the exported program run by torch (`ep.module()`), on fresh
random inputs that differ from the calibration data.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from shared_exports import exported
from xdsl.dialects.builtin import ModuleOp

import qopt
from qopt.examples import MODELS, SCHEMES, random_inputs
from qopt.testing import check_ops_against_torch

#: Schemes that quantize activations at run time: a last-bit difference in a
#: float op upstream (numpy and torch sum in different orders) can move a value
#: across a rounding boundary and change the output by a quantization step.
DYNAMIC = {"pt2e_dynamic", "8da4w"}


@functools.cache
def _imported(name: str, scheme: str):
    ep = exported(name, scheme)
    return ep, qopt.import_program(ep)


def rel_err(got: np.ndarray, want: np.ndarray) -> float:
    got64, want64 = got.astype(np.float64), want.astype(np.float64)
    return float(np.linalg.norm(got64 - want64) / max(np.linalg.norm(want64), 1e-30))


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("name", MODELS)
def test_import_and_interpret_matches_torch(name: str, scheme: str):
    ep, module = _imported(name, scheme)
    assert isinstance(module, ModuleOp)
    module.verify()
    for seed in (11, 12):
        inputs = random_inputs(name, seed)
        got = qopt.interpret(module, *inputs)
        want = ep.module()(*inputs)
        want = want if isinstance(want, tuple) else (want,)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            w = w.detach().numpy()
            assert g.shape == w.shape
            assert g.dtype == w.dtype
            err = rel_err(g, w)
            if err >= 1e-5 and scheme in DYNAMIC:
                # Every op must still match torch on torch's own inputs.
                assert check_ops_against_torch(ep, inputs) == []
                assert err < 1e-2, f"{name}/{scheme}: relative error {err:.3g}"
            else:
                assert err < 1e-5, f"{name}/{scheme}: relative error {err:.3g}"


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("name", MODELS)
def test_every_op_matches_torch_on_torch_inputs(name: str, scheme: str):
    ep, _ = _imported(name, scheme)
    assert check_ops_against_torch(ep, random_inputs(name, 21)) == []


@pytest.mark.parametrize("scheme", [s for s in SCHEMES if s != "float"])
def test_quantized_ops_are_imported(scheme: str):
    _, module = _imported("mlp", scheme)
    names = {op.name for op in module.walk()}
    expected = {
        "pt2e_static": {"quant.quantize", "quant.dequantize"},
        "pt2e_dynamic": {"quant.choose_qparams", "quant.quantize", "quant.dequantize"},
        "w4g32": {"quant.dequantize"},
        "w8c": {"quant.dequantize"},
        "8da4w": {"quant.choose_qparams", "quant.quantize", "quant.dequantize"},
        "codebook4": {"quant.dequantize_codebook"},
        "codebook3": {"quant.dequantize_codebook"},
    }[scheme]
    assert expected <= names


def test_unused_pt2e_float_weights_are_not_imported():
    ep, module = _imported("mlp", "pt2e_static")
    float_weights = [s.target for s in ep.graph_signature.input_specs if s.kind.name == "PARAMETER"]
    assert float_weights
    text = str(module)
    assert "p_fc1_weight" not in text
