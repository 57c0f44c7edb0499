"""CoreML deployment targets (issue 4): iOS16/17 lower int8 per-channel weights to
`constexpr_affine_dequantize`; schemes they cannot express are errors naming iOS18.

For mlp and llama, w8c at iOS16 and iOS17 compiles, saves, reads back and matches
torch eager (relative L2 error < 1e-4, fp32 compute).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

import qopt
from qopt.backends.coreml import compile_coreml
from qopt.backends.coreml.reader import read_mlpackage
from qopt.examples import export_model, random_inputs


def rel_err(got: np.ndarray, want: np.ndarray) -> float:
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30))


@functools.cache
def exported(model: str, scheme: str) -> Any:
    return export_model(model, scheme)


def mid_level(model: str, scheme: str) -> ModuleOp:
    return qopt.fuse(qopt.import_program(exported(model, scheme)))


def op_names(module: ModuleOp) -> set[str]:
    return {op.name for op in module.walk()}


@pytest.mark.parametrize("target", ["iOS16", "iOS17"])
@pytest.mark.parametrize("model", ["mlp", "llama"])
def test_w8c_older_target_round_trip(model: str, target: str, tmp_path: Path) -> None:
    artifact = compile_coreml(mid_level(model, "w8c"), minimum_deployment_target=target)
    names = op_names(artifact.module)
    assert "coreml.constexpr_affine_dequantize" in names
    assert "coreml.constexpr_blockwise_shift_scale" not in names
    path = str(tmp_path / f"{model}-w8c-{target}.mlpackage")
    artifact.save(path)
    back = read_mlpackage(path)
    assert "coreml.constexpr_affine_dequantize" in op_names(back)
    opsets = {
        str(op.attributes["coreml.opset"]) for op in back.walk() if "coreml.opset" in op.attributes
    }
    assert opsets == {f'"{target}"'}
    inputs = random_inputs(model, 7)
    got = qopt.interpret(back, *inputs)[0]
    want = exported(model, "w8c").module()(*inputs).detach().numpy()
    assert rel_err(got, want) < 1e-4


@pytest.mark.parametrize("scheme", ["w4g32", "codebook4"])
def test_ios18_only_schemes_are_errors_at_ios17(scheme: str) -> None:
    with pytest.raises(qopt.QoptError, match="iOS18") as info:
        compile_coreml(mid_level("mlp", scheme), minimum_deployment_target="iOS17")
    message = str(info.value)
    assert "iOS17 cannot express" in message
    assert "the lowest target that can is iOS18" in message
