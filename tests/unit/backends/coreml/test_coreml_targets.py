"""CoreML deployment targets iOS16 and iOS17 for every built-in (model, scheme) pair.

`EXPECTED` is the table of what each target can express: a pair either compiles,
saves, reads back and interprets to torch eager's result (with test_coreml.py's
iOS18 tolerances), or raises a QoptError naming the op, the scheme and the lowest
target that can express it (never a silent float fallback). A change of
behaviour in either direction fails the table.

Tolerances (relative L2 error against torch eager, fp32 compute):
- float, w8c: < 1e-4 (measured below 4e-7); iOS16/17 hold int8 per-channel
  weights in `constexpr_affine_dequantize`;
- pt2e_static (iOS17): < 1e-4 (the package multiplies by f32(1 / scale) as torch
  does; Core ML's `quantize`, which divides, gets scale 1);
- pt2e_dynamic: torch's activation quantizers in MIL float ops (no run-time
  choose-qparams op in Core ML; documented in convert_to_coreml): < 1e-4.
"""

from __future__ import annotations

import functools
import os
from typing import Any, NamedTuple

import numpy as np
import pytest
from shared_exports import exported, process_tempdir
from xdsl.dialects.builtin import ModuleOp

import qopt
from qopt.backends.coreml import CoremlArtifact
from qopt.backends.coreml.reader import read_mlpackage
from qopt.driver import compile_coreml
from qopt.examples import MODELS, SCHEMES, random_inputs

TARGETS = ("iOS16", "iOS17")
_TMP = process_tempdir("qopt-coreml-targets-")


class Needs(NamedTuple):
    """The QoptError expected: the op, the scheme it names, the lowest target."""

    op: str
    scheme: str
    lowest: str


OK = "ok"
Expectation = str | Needs

_Q4 = "4-bit affine (block [1, 32])"

# (model, scheme) -> (iOS16, iOS17)
EXPECTED: dict[tuple[str, str], tuple[Expectation, Expectation]] = {
    ("llama", "float"): (OK, OK),
    ("llama", "pt2e_static"): (Needs("qfused.add", "add_q8ta_q8ta_q8to", "iOS17"), OK),
    ("llama", "pt2e_dynamic"): (OK, OK),
    ("llama", "w4g32"): (Needs("qfused.embedding", "embedding_q4gsw", "iOS18"),) * 2,
    ("llama", "w8c"): (OK, OK),
    ("llama", "8da4w"): (Needs("qfused.embedding", "embedding_q4gsw", "iOS18"),) * 2,
    ("llama", "codebook4"): (Needs("qfused.embedding", "embedding_lut4w", "iOS18"),) * 2,
    ("llama", "codebook3"): (Needs("qfused.embedding", "embedding_lut3w", "iOS18"),) * 2,
    ("mlp", "float"): (OK, OK),
    ("mlp", "pt2e_static"): (Needs("qfused.linear", "linear_q8ta_q8csw_q8to", "iOS17"), OK),
    ("mlp", "pt2e_dynamic"): (OK, OK),
    ("mlp", "w4g32"): (Needs("qfused.linear", "linear_q4gsw", "iOS18"),) * 2,
    ("mlp", "w8c"): (OK, OK),
    ("mlp", "8da4w"): (Needs("qfused.linear", "linear_dq8ca_q4gsw", "iOS18"),) * 2,
    ("mlp", "codebook4"): (Needs("qfused.linear", "linear_lut4w", "iOS18"),) * 2,
    ("mlp", "codebook3"): (Needs("qfused.linear", "linear_lut3w", "iOS18"),) * 2,
    ("convnet", "float"): (OK, OK),
    ("convnet", "pt2e_static"): (Needs("qfused.conv2d", "conv2d_q8ta_q8csw_q8to", "iOS17"), OK),
    ("convnet", "pt2e_dynamic"): (OK, OK),
    ("convnet", "w4g32"): (Needs("qfused.linear", "linear_q4csw", "iOS18"),) * 2,
    ("convnet", "w8c"): (OK, OK),
    ("convnet", "8da4w"): (Needs("qfused.linear", "linear_dq8ca_q4csw", "iOS18"),) * 2,
    ("convnet", "codebook4"): (Needs("qfused.linear", "linear_lut4w", "iOS18"),) * 2,
    ("convnet", "codebook3"): (Needs("qfused.linear", "linear_lut3w", "iOS18"),) * 2,
}
CASES = [
    pytest.param(model, scheme, target, EXPECTED[model, scheme][i], id=f"{model}-{scheme}-{target}")
    for model, scheme in EXPECTED
    for i, target in enumerate(TARGETS)
]
IOS18_ONLY_OPS = {
    "coreml.constexpr_blockwise_shift_scale",
    "coreml.scaled_dot_product_attention",
}


def rel_err(got: np.ndarray, want: np.ndarray) -> float:
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30))


def mid_level(model: str, scheme: str) -> ModuleOp:
    return qopt.fuse(qopt.import_program(exported(model, scheme)))


@functools.cache
def compiled(model: str, scheme: str, target: str) -> tuple[CoremlArtifact, str]:
    artifact = compile_coreml(
        mid_level(model, scheme), minimum_deployment_target=target, compute_precision="fp32"
    )
    path = os.path.join(_TMP, f"{model}-{scheme}-{target}.mlpackage")
    artifact.save(path)
    return artifact, path


@functools.cache
def read_back(model: str, scheme: str, target: str) -> ModuleOp:
    return read_mlpackage(compiled(model, scheme, target)[1])


def op_names(module: ModuleOp) -> set[str]:
    return {op.name for op in module.walk()}


def torch_out(model: str, scheme: str, inputs: tuple[Any, ...]) -> np.ndarray:
    return exported(model, scheme).module()(*inputs).detach().numpy()


def test_table_covers_every_pair() -> None:
    assert set(EXPECTED) == {(m, s) for m in MODELS for s in SCHEMES}


@pytest.mark.parametrize(("model", "scheme", "target", "expected"), CASES)
def test_older_target(model: str, scheme: str, target: str, expected: Expectation) -> None:
    if isinstance(expected, Needs):
        with pytest.raises(qopt.QoptError) as info:
            compiled(model, scheme, target)
        message = str(info.value)
        assert f"'{expected.op}'" in message, message
        assert expected.scheme in message, message
        assert f"the lowest target that can is {expected.lowest}" in message, message
        assert f"minimum_deployment_target='{expected.lowest}'" in message, message
        return
    back = read_back(model, scheme, target)
    assert not op_names(back) & IOS18_ONLY_OPS
    opsets = {str(op.attributes["coreml.opset"]) for op in back.walk()
              if "coreml.opset" in op.attributes}  # fmt: skip
    assert opsets == {f'"{target}"'}
    inputs = random_inputs(model, 11)
    got = qopt.interpret(back, *inputs)[0]
    want = torch_out(model, scheme, inputs)
    err = rel_err(got, want)
    assert err < 1e-4, err  # pt2e_static too: the quantize rounds as torch's
    # The package holds what qopt emitted.
    artifact = compiled(model, scheme, target)[0]
    assert np.array_equal(got, qopt.interpret(artifact.module, *inputs)[0])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("model", ["mlp", "llama"])
def test_w8c_uses_affine_dequantize(model: str, target: str) -> None:
    """int8 per-channel weights stay compressed in `constexpr_affine_dequantize`."""
    names = op_names(read_back(model, "w8c", target))
    assert "coreml.constexpr_affine_dequantize" in names
    assert "coreml.constexpr_blockwise_shift_scale" not in names


def test_llama_attention_is_decomposed_before_ios18() -> None:
    names = op_names(read_back("llama", "float", "iOS17"))
    assert {"coreml.matmul", "coreml.softmax", "coreml.select"} <= names
