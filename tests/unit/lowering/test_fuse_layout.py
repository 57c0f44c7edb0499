"""Layout ops moved into the integer domain by fuse-quant (fuse_quant/layout.py):
the module computes the same integers before and after, and the integer pad / view /
permute / cat compile on both targets to what the interpreter computes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import qopt
from qopt.context import make_context, parse_module
from qopt.dialects import quant
from qopt.interpreters import entry_function
from qopt.lowering.pipelines import QoptCoremlPipeline, QoptVulkanPipeline

LIT = Path(__file__).parents[2] / "lit" / "fuse-quant" / "layout.mlir"
FUNCTIONS = [text for text in LIT.read_text().split("// -----") if "func.func" in text]


def _inputs(text: str, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    types = entry_function(parse_module(text)).function_type.inputs.data
    return [
        rng.integers(-128, 128, tuple(t.get_shape())).astype(np.int8)  # pyright: ignore
        for t in types
    ]


@pytest.mark.parametrize("index", range(len(FUNCTIONS)))
def test_moving_layout_ops_keeps_the_integers(index: int) -> None:
    text = FUNCTIONS[index]
    module = parse_module(text)
    fused = qopt.fuse(parse_module(text))
    for seed in range(3):
        inputs = _inputs(text, seed)
        want = qopt.interpret(module, *inputs)
        got = qopt.interpret(fused, *inputs)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    if index < 2:  # the two functions that move everything
        assert not any(isinstance(op, quant.QuantizeOp) for op in fused.walk())


def test_integer_pad_and_moves_on_the_targets() -> None:
    from qopt.backends.vulkan.runtime import vulkan_available

    for index, text in enumerate(FUNCTIONS[:2]):
        inputs = _inputs(text, 7)
        want = qopt.interpret(qopt.fuse(parse_module(text)), *inputs)
        coreml = parse_module(text)
        QoptCoremlPipeline().apply(make_context(), coreml)
        # Core ML convolves the dequantized values in float: its requantized conv output
        # may land one step from the integer form's on a rounding boundary; the integer
        # pad it reads is exact (the layout-only function compares bit for bit)
        steps = 1 if index == 0 else 0
        for g, w in zip(qopt.interpret(coreml, *inputs), want, strict=True):
            np.testing.assert_allclose(np.asarray(g, np.int64), np.asarray(w, np.int64), atol=steps)
        vulkan = parse_module(text)
        QoptVulkanPipeline().apply(make_context(), vulkan)
        for g, w in zip(qopt.interpret(vulkan, *inputs), want, strict=True):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
        reason = vulkan_available()
        if reason is not None:
            print(f"device run skipped: {reason}")
            continue
        from qopt.backends.vulkan.artifact import compile_artifact

        with compile_artifact(vulkan) as artifact:
            for g, w in zip(artifact(*inputs), want, strict=True):
                np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
