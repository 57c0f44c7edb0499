"""Activation functions, computed in the input's float type in the operation
order of torch's CPU kernels (aten/src/ATen/native/cpu/Activation.cpp,
UnaryOpsKernel.cpp), which the Vulkan shaders follow too.

The order matters for the last bit: SiLU is `x / (1 + exp(-x))` (not
`x * sigmoid(x)`, which rounds twice), exact GELU multiplies by `f32(1/sqrt(2))`
(not a division by `sqrt(2)`), tanh GELU cubes as `x * x * x`. The transcendental
functions themselves (numpy's / SciPy's exp, tanh, erf against torch's SLEEF
vectors) still differ from torch by an ulp or so for some inputs, so float
results agree with torch to float rounding, not bit for bit; the rational
functions (hardswish, hardsigmoid, leaky_relu) agree bit for bit
(tests/unit/semantics/test_semantics.py).

torch computes float16 / bfloat16 activations in float32 and rounds the result
(its "opmath" type); these functions compute in the input's type (as Core ML's
fp16 programs do). `gelu` takes the `erf` and `tanh` to use, so a kernel
reference can substitute the shader's own approximations.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

UnaryFn = Callable[[np.ndarray], np.ndarray]

SQRT1_2 = 0.70710678118654752440  # M_SQRT1_2
TANH_GELU_BETA = math.sqrt(2.0) * (2.0 / math.sqrt(math.pi)) * 0.5  # M_SQRT2 * M_2_SQRTPI / 2
TANH_GELU_KAPPA = 0.044715
SIGMOID_GELU_ALPHA = 1.702


def _c(value: float, x: np.ndarray) -> np.ndarray:
    """A constant in x's float type (as torch's `scalar_t(value)`)."""
    return np.asarray(value, x.dtype)


def _erf_scalar(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, rounded to x's type (SciPy's; `math.erf` without SciPy)."""
    x = np.asarray(x)
    try:
        from scipy.special import erf as scipy_erf
    except ImportError:  # pragma: no cover
        return _erf_scalar(x).astype(x.dtype)
    return np.asarray(scipy_erf(x)).astype(x.dtype)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """`1 / (1 + exp(-x))`."""
    one = _c(1, x)
    return one / (one + np.exp(-x))


def silu(x: np.ndarray) -> np.ndarray:
    """SiLU as torch computes it: `x / (1 + exp(-x))`."""
    return x / (_c(1, x) + np.exp(-x))


def gelu(
    x: np.ndarray,
    approximate: str = "none",
    *,
    erf: UnaryFn = erf,
    tanh: UnaryFn = np.tanh,
) -> np.ndarray:
    """GELU, `approximate` one of torch's "none" (exact) and "tanh", or MIL's
    "sigmoid" (`GELU(mode=SIGMOID_APPROXIMATION)`, no torch equivalent):

    - none: `x * 0.5 * (1 + erf(x * f(1/sqrt(2))))`
    - tanh: `0.5 * x * (1 + tanh(f(sqrt(2/pi)) * (x + 0.044715 * (x * x * x))))`
    - sigmoid: `x / (1 + exp(-1.702 * x))` (coremltools' definition)
    """
    if approximate == "tanh":
        cube = x * x * x
        inner = _c(TANH_GELU_BETA, x) * (x + _c(TANH_GELU_KAPPA, x) * cube)
        return _c(0.5, x) * x * (_c(1, x) + tanh(inner))
    if approximate == "sigmoid":
        return x / (_c(1, x) + np.exp(_c(-SIGMOID_GELU_ALPHA, x) * x))
    if approximate != "none":
        raise ValueError(f"unknown GELU approximation {approximate!r}")
    return x * _c(0.5, x) * (_c(1, x) + erf(x * _c(SQRT1_2, x)))


def hardsigmoid(x: np.ndarray) -> np.ndarray:
    """`min(max(x + 3, 0), 6) / 6`."""
    return np.clip(x + _c(3, x), _c(0, x), _c(6, x)) / _c(6, x)


def hardswish(x: np.ndarray) -> np.ndarray:
    """`x * min(max(x + 3, 0), 6) / 6`."""
    return x * np.clip(x + _c(3, x), _c(0, x), _c(6, x)) / _c(6, x)


def leaky_relu(x: np.ndarray, negative_slope: float) -> np.ndarray:
    """`x if x > 0 else x * negative_slope` (torch's and the shaders' comparison)."""
    return np.where(x > 0, x, x * _c(negative_slope, x))


def hardshrink(x: np.ndarray, lambd: float) -> np.ndarray:
    """`0 if -lambd <= x <= lambd else x` (NaN passes), lambd in x's type as torch casts it."""
    lam = _c(lambd, x)
    inside = (x >= -lam) & (x <= lam)
    return np.where(inside, _c(0, x), x)


def softshrink(x: np.ndarray, lambd: float) -> np.ndarray:
    """`x - lambd if x > lambd else x + lambd if x < -lambd else x * 0` (torch's
    order: NaN passes, -0 stays -0), lambd in x's type as torch casts it."""
    lam = _c(lambd, x)
    return np.where(x > lam, x - lam, np.where(x < -lam, x + lam, x * _c(0, x)))


__all__ = [
    "erf",
    "gelu",
    "hardshrink",
    "hardsigmoid",
    "hardswish",
    "leaky_relu",
    "sigmoid",
    "silu",
    "softshrink",
]
