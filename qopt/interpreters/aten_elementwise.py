"""numpy semantics of elementwise aten ops.

Arithmetic is carried out in the result's element type, as torch computes in
the common dtype of its operands (0-d scalar constants are already typed by the
frontend the way torch promotes Python scalars).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.interpreter import Interpreter, PythonValues
from xdsl.ir import Operation

from qopt.dialects.aten import elementwise as ew
from qopt.dialects.aten.base import real, text
from qopt.dialects.tensors import dtype_of
from qopt.interpreters.common import as_result, functions_class
from qopt.numerics import activations as act
from qopt.numerics.integers import int_pow, shift


def _sign(x: np.ndarray) -> np.ndarray:
    """torch's sign: `(x > 0) - (x < 0)` in x's type (0 for NaN, where numpy's is NaN)."""
    if x.dtype == np.bool_:
        return x
    return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)


UNARY: dict[type[Operation], Callable[[np.ndarray, Any], np.ndarray]] = {
    ew.NegOp: lambda x, op: -x,
    ew.AbsOp: lambda x, op: np.abs(x),
    # x < 0 ? 0 : x, torch's: -0.0 and NaN pass (numpy's maximum gives +0.0 for -0.0)
    ew.ReluOp: lambda x, op: np.where(x < 0, np.zeros((), x.dtype), x),
    ew.SiluOp: lambda x, op: act.silu(x),
    ew.SigmoidOp: lambda x, op: act.sigmoid(x),
    ew.TanhOp: lambda x, op: np.tanh(x),
    ew.SignbitOp: lambda x, op: (
        np.zeros(x.shape, np.bool_) if x.dtype == np.bool_ else np.signbit(x)
    ),
    ew.ExpOp: lambda x, op: np.exp(x),
    ew.LogOp: lambda x, op: np.log(x),
    ew.Log10Op: lambda x, op: np.log10(x),
    ew.Log2Op: lambda x, op: np.log2(x),
    ew.SqrtOp: lambda x, op: np.sqrt(x),
    ew.RsqrtOp: lambda x, op: np.asarray(1, x.dtype) / np.sqrt(x),
    ew.ReciprocalOp: lambda x, op: np.asarray(1, x.dtype) / x,
    ew.SinOp: lambda x, op: np.sin(x),
    ew.CosOp: lambda x, op: np.cos(x),
    ew.TanOp: lambda x, op: np.tan(x),
    ew.AsinOp: lambda x, op: np.arcsin(x),
    ew.AcosOp: lambda x, op: np.arccos(x),
    ew.AtanOp: lambda x, op: np.arctan(x),
    ew.Expm1Op: lambda x, op: np.expm1(x),
    ew.Log1pOp: lambda x, op: np.log1p(x),
    ew.SinhOp: lambda x, op: np.sinh(x),
    ew.CoshOp: lambda x, op: np.cosh(x),
    ew.ErfOp: lambda x, op: act.erf(x),
    ew.FloorOp: lambda x, op: np.floor(x),
    ew.CeilOp: lambda x, op: np.ceil(x),
    ew.RoundOp: lambda x, op: np.round(x),
    ew.TruncOp: lambda x, op: np.trunc(x) if x.dtype.kind == "f" else x,
    ew.SignOp: lambda x, op: _sign(x),
    ew.GeluOp: lambda x, op: act.gelu(x, text(op.approximate, "none")),
    ew.HardswishOp: lambda x, op: act.hardswish(x),
    ew.HardsigmoidOp: lambda x, op: act.hardsigmoid(x),
    ew.LeakyReluOp: lambda x, op: act.leaky_relu(x, real(op.negative_slope, 0.01)),
    ew.HardshrinkOp: lambda x, op: act.hardshrink(x, real(op.lambd, 0.5)),
    ew.SoftshrinkOp: lambda x, op: act.softshrink(x, real(op.lambd, 0.5)),
    ew.LogicalNotOp: lambda x, op: np.logical_not(x),
    ew.BitwiseNotOp: lambda x, op: np.logical_not(x) if x.dtype == np.bool_ else np.invert(x),
    ew.IsNanOp: lambda x, op: np.isnan(x),
    ew.IsInfOp: lambda x, op: np.isinf(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool),
    ew.IsFiniteOp: lambda x, op: np.isfinite(x) if x.dtype.kind == "f" else np.ones(x.shape, bool),
    ew.CloneOp: lambda x, op: x,
}


def _clamp(x: np.ndarray, op: ew.ClampOp) -> np.ndarray:
    """`min(max(x, lo), hi)` by comparisons, as torch: NaN and -0.0 pass a bound of 0 (numpy's
    maximum gives +0.0), hi where lo > hi."""
    out = x
    if op.min is not None:
        lo = np.asarray(op.min.value.data).astype(x.dtype)
        out = np.where(out < lo, lo, out)
    if op.max is not None:
        hi = np.asarray(op.max.value.data).astype(x.dtype)
        out = np.where(out > hi, hi, out)
    return out


def _cast(x: np.ndarray, op: ew.CastOp) -> np.ndarray:
    target = dtype_of(op.result)
    if x.dtype.kind == "f" and target.kind in "iu":
        with np.errstate(invalid="ignore"):
            return np.trunc(x).astype(target)
    return x.astype(target)


def _alpha(op: ew.AddOp | ew.SubOp, y: np.ndarray) -> np.ndarray:
    if op.alpha is None:
        return y
    return y * np.asarray(op.alpha.value.data).astype(y.dtype)


def _div(x: np.ndarray, y: np.ndarray, op: ew.DivOp) -> np.ndarray:
    mode = text(op.rounding_mode, "")
    out_dtype = dtype_of(op.result)
    if mode == "":
        ct = out_dtype if out_dtype.kind == "f" else np.dtype(np.float32)
        return x.astype(ct) / y.astype(ct)
    if out_dtype.kind in "iu":
        if mode == "floor":
            return np.floor_divide(x, y)
        q = np.abs(x) // np.abs(y)
        return np.where((x < 0) != (y < 0), -q, q)
    if mode == "floor":  # numpy's float floor_divide is torch's: (x - fmod) / y, adjusted
        return np.floor_divide(x.astype(out_dtype), y.astype(out_dtype))
    return np.trunc(x / y)


def _pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype.kind in "iu" and y.dtype.kind in "iu":
        return int_pow(x, y)
    if y.ndim == 0 and x.dtype.kind == "f":
        e = float(y)
        if e == 2.0:
            return x * x
        if e == 0.5:
            return np.sqrt(x)
    return np.power(x, y)


def _fmod(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """C's fmod (numpy's); an integer divisor of 0 gives 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.fmod(x, y)
    return np.where(y == 0, np.zeros_like(r), r) if r.dtype.kind in "iu" else r


def _remainder(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """torch's remainder: fmod, then `+ y` where it is nonzero with y's other sign (a zero
    keeps x's sign, where numpy's mod gives y's)."""
    m = _fmod(x, y)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.where((m != 0) & ((m < 0) != (y < 0)), m + y, m)


BINARY: dict[type[Operation], Callable[[np.ndarray, np.ndarray, Any], np.ndarray]] = {
    ew.AddOp: lambda x, y, op: x + _alpha(op, y),
    ew.SubOp: lambda x, y, op: x - _alpha(op, y),
    ew.MulOp: lambda x, y, op: x * y,
    ew.RemainderOp: lambda x, y, op: _remainder(x, y),
    ew.FmodOp: lambda x, y, op: _fmod(x, y),
    ew.BitwiseLeftShiftOp: lambda x, y, op: shift(x, y, left=True),
    ew.BitwiseRightShiftOp: lambda x, y, op: shift(x, y, left=False),
    ew.PowOp: lambda x, y, op: _pow(x, y),
    ew.MaximumOp: lambda x, y, op: np.maximum(x, y),
    ew.MinimumOp: lambda x, y, op: np.minimum(x, y),
    ew.BitwiseAndOp: lambda x, y, op: np.bitwise_and(x, y),
    ew.BitwiseOrOp: lambda x, y, op: np.bitwise_or(x, y),
    ew.BitwiseXorOp: lambda x, y, op: np.bitwise_xor(x, y),
}

COMPARE: dict[type[Operation], Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    ew.EqOp: np.equal,
    ew.NeOp: np.not_equal,
    ew.LtOp: np.less,
    ew.LeOp: np.less_equal,
    ew.GtOp: np.greater,
    ew.GeOp: np.greater_equal,
    ew.LogicalAndOp: lambda x, y: np.logical_and(x, y),
    ew.LogicalOrOp: lambda x, y: np.logical_or(x, y),
    ew.LogicalXorOp: lambda x, y: np.logical_xor(x, y),
}


def _table() -> dict[type[Operation], Callable[..., PythonValues]]:
    """Attach one impl per op type (they share a few generic bodies)."""

    def unary_impl(fn: Callable[[np.ndarray, Any], np.ndarray]):
        def run(self: Any, interpreter: Interpreter, op: Any, args: PythonValues) -> PythonValues:
            (x,) = args
            x = np.asarray(x)
            out_dtype = dtype_of(op.result)
            if out_dtype.kind == "f" and x.dtype != out_dtype:
                x = x.astype(out_dtype)
            return (as_result(fn(x, op), op.result),)

        return run

    def binary_impl(fn: Callable[[np.ndarray, np.ndarray, Any], np.ndarray]):
        def run(self: Any, interpreter: Interpreter, op: Any, args: PythonValues) -> PythonValues:
            out_dtype = dtype_of(op.result)
            x, y = (np.asarray(a).astype(out_dtype, copy=False) for a in args)
            return (as_result(fn(x, y, op), op.result),)

        return run

    def compare_impl(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]):
        def run(self: Any, interpreter: Interpreter, op: Any, args: PythonValues) -> PythonValues:
            x, y = (np.asarray(a) for a in args)
            ct = np.promote_types(x.dtype, y.dtype)
            return (as_result(fn(x.astype(ct, copy=False), y.astype(ct, copy=False)), op.result),)

        return run

    table: dict[type[Operation], Callable[..., PythonValues]] = {}
    table.update({k: unary_impl(v) for k, v in UNARY.items()})
    table.update({k: binary_impl(v) for k, v in BINARY.items()})
    table.update({k: compare_impl(v) for k, v in COMPARE.items()})
    table[ew.ClampOp] = unary_impl(_clamp)
    table[ew.CastOp] = lambda self, interp, op, args: (
        as_result(_cast(np.asarray(args[0]), op), op.result),
    )

    def run_div(
        self: Any, interpreter: Interpreter, op: ew.DivOp, args: PythonValues
    ) -> PythonValues:
        x, y = (np.asarray(a) for a in args)
        out_dtype = dtype_of(op.result)
        if out_dtype.kind == "f":
            x, y = x.astype(out_dtype), y.astype(out_dtype)
        else:
            ct = np.promote_types(x.dtype, y.dtype)
            x, y = x.astype(ct), y.astype(ct)
        with np.errstate(divide="ignore", invalid="ignore"):
            return (as_result(_div(x, y, op), op.result),)

    def run_where(
        self: Any, interpreter: Interpreter, op: ew.WhereOp, args: PythonValues
    ) -> PythonValues:
        cond, a, b = (np.asarray(v) for v in args)
        out_dtype = dtype_of(op.result)
        return (as_result(np.where(cond, a.astype(out_dtype), b.astype(out_dtype)), op.result),)

    def run_masked_fill(
        self: Any, interpreter: Interpreter, op: ew.MaskedFillOp, args: PythonValues
    ) -> PythonValues:
        x, mask, value = (np.asarray(v) for v in args)
        return (as_result(np.where(mask, value.astype(x.dtype), x), op.result),)

    table[ew.DivOp] = run_div
    table[ew.WhereOp] = run_where
    table[ew.MaskedFillOp] = run_masked_fill

    return table


AtenElementwiseFunctions = functions_class("AtenElementwiseFunctions", _table())
