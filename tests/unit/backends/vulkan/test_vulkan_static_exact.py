"""Static quantization is exact on Vulkan: the device computes what the qfused
interpreter computes, bit for bit.

A statically quantized linear / conv2d accumulates exact integer products; its
float tail is `f32(acc) * f32(in_scale * w_scale) (+ bias)`, clamped and requantized
as torch's quantize does (`rne(y * f32(1 / scale)) + zp`), in that order, in the
interpreter (qopt/interpreters/qfused.py) and in the kernels (conv2d_q8.glsl,
linear_q8ta.glsl). The interpreter used to scale a float64 sum instead: the same
value to within an f32 ulp, but on the output quantizer's rounding midpoints the
two roundings disagree and one flipped activation grows through a network.

The first test puts many outputs exactly on those midpoints (requant scale twice
the product of the scales); it checks that the float64 form would disagree there
(so the test can fail) and that the device equals the interpreter everywhere. The
second runs an EfficientNet-like model (TF "same" ZeroPad2d before depthwise convs,
squeeze-excitation, SiLU, residual adds) under PT2E static on the device against
the interpreter's fused level, output bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import qopt
from qopt.context import make_context, parse_module
from qopt.lowering.pipelines import QoptVulkanPipeline

F32 = np.float32
IN_SCALE, OUT_SCALE, CHANNELS = F32(0.0173), 0.0391, 64


@pytest.fixture(scope="module")
def vulkan_device() -> None:
    from qopt.backends.vulkan.runtime import vulkan_available

    reason = vulkan_available()
    if reason is not None:
        print(f"Vulkan tests skipped: {reason}")
        pytest.skip(reason)


def _on_device(text: str, *inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(device result, interpreter result) of the qfused module `text`."""
    from qopt.backends.vulkan.artifact import compile_artifact

    (want,) = qopt.interpret(parse_module(text), *inputs)
    module = parse_module(text)
    QoptVulkanPipeline().apply(make_context(), module)
    with compile_artifact(module) as artifact:
        (got,) = artifact(*inputs)
    return np.asarray(got), np.asarray(want)


def _midpoint_linear() -> tuple[str, np.ndarray, np.ndarray, np.ndarray]:
    """x = every int8 value (K = 1), weights +-1, per-channel scales within a few ulps
    of OUT_SCALE / (2 IN_SCALE): y / OUT_SCALE lies on k + 1/2 for every odd x."""
    rng = np.random.default_rng(0)
    base = OUT_SCALE / (2 * float(IN_SCALE))
    scales = (base * (1 + rng.integers(-8, 9, CHANNELS) * 2.0**-23)).astype(F32)
    weights = rng.choice([-1, 1], CHANNELS).astype(np.int8)
    x = np.arange(-128, 128, dtype=np.int8).reshape(256, 1)
    w_text = ", ".join(f"[{int(v)}]" for v in weights)
    s_text = ", ".join(f"[{float(v)!r}]" for v in scales)
    text = f"""func.func @forward(%x: tensor<256x1xi8>) -> tensor<256x{CHANNELS}xi8> {{
  %w = arith.constant dense<[{w_text}]> : tensor<{CHANNELS}x1xi8>
  %s = arith.constant dense<[{s_text}]> : tensor<{CHANNELS}x1xf32>
  %y = qfused.linear %x, %w, %s {{weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 1]>, act = #qfused.static<scale = {float(IN_SCALE)!r}, zero_point = 0, range = [-128, 127]>, requant = #qfused.static<scale = {OUT_SCALE!r}, zero_point = 0, range = [-128, 127]>, kernel = "linear_q8ta_q8csw_q8to"}} : tensor<256x1xi8>, tensor<{CHANNELS}x1xi8>, tensor<{CHANNELS}x1xf32> -> tensor<256x{CHANNELS}xi8>
  func.return %y : tensor<256x{CHANNELS}xi8>
}}"""
    return text, x, weights, scales


def test_requantization_midpoints_round_as_the_interpreter(vulkan_device: None) -> None:
    text, x, weights, scales = _midpoint_linear()
    got, want = _on_device(text, x)
    # the float64 form: the same real value, rounded once to f32 before requantizing
    acc = x.astype(np.float64) * weights.astype(np.float64)[None, :]
    y64 = (acc * np.float64(IN_SCALE) * scales.astype(np.float64)[None, :]).astype(F32)
    inv = F32(1 / np.float64(OUT_SCALE))
    q64 = np.clip(np.rint(y64 * inv), -128, 127).astype(np.int8)
    assert np.count_nonzero(q64 != want) > 0, "no midpoint: the test could not fail"
    np.testing.assert_array_equal(got, want)


def test_efficientnet_like_pt2e_static_is_bit_exact(vulkan_device: None) -> None:
    from qopt.examples import apply_scheme, build_efficientnet_like

    model, make = build_efficientnet_like(0)
    quantized = apply_scheme(model, "pt2e_static", make(0), [make(1), make(2)])
    with torch.no_grad():
        ep = torch.export.export(quantized, make(0), strict=False)
    fused = qopt.fuse(qopt.import_program(ep))
    with qopt.compile(ep, target="vulkan") as artifact:
        for seed in (5, 6):
            inputs = make(seed)
            (want,) = qopt.interpret(fused, *inputs)
            (got,) = artifact(*inputs)
            np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
            with torch.no_grad():
                reference = ep.module()(*inputs).numpy()
            error = np.linalg.norm(np.asarray(got) - reference) / np.linalg.norm(reference)
            assert error <= 1e-2, error  # against torch: one step on a midpoint at most
