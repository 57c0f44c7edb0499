"""numpy semantics of the aten reduction family.

Float reductions run in float32 (float64 for a float64 result) and are cast to
the result type; integer and boolean reductions are exact.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import SSAValue

from qopt.dialects.aten import reduction as red
from qopt.dialects.aten.base import flag, integer, norm_dim
from qopt.dialects.tensors import dtype_of
from qopt.interpreters.common import as_result
from qopt.numerics import torch_mean, torch_sum


def compute_dtype(value: SSAValue) -> np.dtype:
    """float32 for float results (float64 for f64), the result's own type otherwise."""
    dtype = dtype_of(value)
    if dtype.kind == "f":
        return np.dtype(np.float64 if dtype == np.float64 else np.float32)
    return dtype


def float_dtype(*values: SSAValue) -> np.dtype:
    """float64 if any value is float64, else float32."""
    wide = any(dtype_of(v) == np.float64 for v in values)
    return np.dtype(np.float64 if wide else np.float32)


def extreme_with_index(x: np.ndarray, axis: int, largest: bool) -> tuple[np.ndarray, np.ndarray]:
    """Values and first indices of the max/min along `axis`; a NaN beats numbers."""
    index = np.argmax(x, axis=axis) if largest else np.argmin(x, axis=axis)
    if x.dtype.kind == "f":
        nan = np.isnan(x)
        has_nan = nan.any(axis=axis)
        if has_nan.any():
            index = np.where(has_nan, np.argmax(nan, axis=axis), index)
    values = np.take_along_axis(x, np.expand_dims(index, axis), axis=axis)
    return np.squeeze(values, axis=axis), index


def softmax(x: np.ndarray, axis: int, safe: bool = False) -> np.ndarray:
    """exp(x - max) / sum(...) along `axis`; all -inf slices give NaN, or 0 if `safe`."""
    top = np.max(x, axis=axis, keepdims=True)
    with np.errstate(invalid="ignore"):
        e = np.exp(x - top)
        out = e / np.sum(e, axis=axis, keepdims=True)
    if safe:
        out = np.where(np.isneginf(top), np.zeros((), x.dtype), out)
    return out


def log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    top = np.max(x, axis=axis, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        shifted = x - top
        return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def _reduce(op: red.ReduceOp, x: np.ndarray, fn: str) -> np.ndarray:
    ct = compute_dtype(op.result)
    data = np.asarray(x)
    if fn in ("sum", "prod", "mean"):
        data = data.astype(ct, copy=False)
    axes = op.axes()
    keep = flag(op.keepdim)
    if fn in ("sum", "mean") and np.dtype(ct) == np.float32:
        # float32 sums add in torch's CPU order (qopt.numerics), bit for bit.
        reducer = torch_sum if fn == "sum" else torch_mean
        out = reducer(data, axes, keep)
    elif fn == "sum":
        out = np.sum(data, axis=axes, keepdims=keep, dtype=ct)
    elif fn == "prod":
        out = np.prod(data, axis=axes, keepdims=keep, dtype=ct)
    elif fn == "mean":
        out = np.mean(data, axis=axes, keepdims=keep, dtype=ct)
    elif fn == "amax":
        out = np.max(data, axis=axes, keepdims=keep)
    elif fn == "amin":
        out = np.min(data, axis=axes, keepdims=keep)
    elif fn == "any":
        out = np.any(data != 0, axis=axes, keepdims=keep)
    else:
        out = np.all(data != 0, axis=axes, keepdims=keep)
    return as_result(out, op.result)


def _moment(op: red.MomentOp, x: np.ndarray, root: bool) -> np.ndarray:
    ct = float_dtype(op.input, op.result)
    data = np.asarray(x).astype(ct, copy=False)
    axes = op.axes()
    count = math.prod(data.shape[a] for a in axes)
    keep = flag(op.keepdim)
    mean = np.mean(data, axis=axes, keepdims=True, dtype=ct)
    squares = np.sum(np.square(data - mean), axis=axes, keepdims=keep, dtype=ct)
    denom = max(0.0, count - red.correction_of(op))
    with np.errstate(divide="ignore", invalid="ignore"):
        var = squares / np.asarray(denom, ct)
    return as_result(np.sqrt(var) if root else var, op.result)


@register_impls
class AtenReductionFunctions(InterpreterFunctions):
    @impl(red.SumOp)
    def run_sum(self, interpreter: Interpreter, op: red.SumOp, args: PythonValues) -> PythonValues:
        return (_reduce(op, args[0], "sum"),)

    @impl(red.MeanOp)
    def run_mean(
        self, interpreter: Interpreter, op: red.MeanOp, args: PythonValues
    ) -> PythonValues:
        return (_reduce(op, args[0], "mean"),)

    @impl(red.ProdOp)
    def run_prod(
        self, interpreter: Interpreter, op: red.ProdOp, args: PythonValues
    ) -> PythonValues:
        return (_reduce(op, args[0], "prod"),)

    @impl(red.AmaxOp)
    def run_amax(
        self, interpreter: Interpreter, op: red.AmaxOp, args: PythonValues
    ) -> PythonValues:
        return (_reduce(op, args[0], "amax"),)

    @impl(red.AminOp)
    def run_amin(
        self, interpreter: Interpreter, op: red.AminOp, args: PythonValues
    ) -> PythonValues:
        return (_reduce(op, args[0], "amin"),)

    @impl(red.AnyOp)
    def run_any(self, interpreter: Interpreter, op: red.AnyOp, args: PythonValues) -> PythonValues:
        return (_reduce(op, args[0], "any"),)

    @impl(red.AllOp)
    def run_all(self, interpreter: Interpreter, op: red.AllOp, args: PythonValues) -> PythonValues:
        return (_reduce(op, args[0], "all"),)

    @impl(red.MaxOp)
    def run_max(self, interpreter: Interpreter, op: red.MaxOp, args: PythonValues) -> PythonValues:
        return (as_result(np.max(args[0]), op.result),)

    @impl(red.MinOp)
    def run_min(self, interpreter: Interpreter, op: red.MinOp, args: PythonValues) -> PythonValues:
        return (as_result(np.min(args[0]), op.result),)

    @impl(red.MaxDimOp)
    def run_max_dim(
        self, interpreter: Interpreter, op: red.MaxDimOp, args: PythonValues
    ) -> PythonValues:
        return _extreme_dim(op, args[0], largest=True)

    @impl(red.MinDimOp)
    def run_min_dim(
        self, interpreter: Interpreter, op: red.MinDimOp, args: PythonValues
    ) -> PythonValues:
        return _extreme_dim(op, args[0], largest=False)

    @impl(red.SortOp)
    def run_sort(
        self, interpreter: Interpreter, op: red.SortOp, args: PythonValues
    ) -> PythonValues:
        return _sort(op, np.asarray(args[0]))

    @impl(red.ArgmaxOp)
    def run_argmax(
        self, interpreter: Interpreter, op: red.ArgmaxOp, args: PythonValues
    ) -> PythonValues:
        return (_arg_extreme(op, args[0], largest=True),)

    @impl(red.ArgminOp)
    def run_argmin(
        self, interpreter: Interpreter, op: red.ArgminOp, args: PythonValues
    ) -> PythonValues:
        return (_arg_extreme(op, args[0], largest=False),)

    @impl(red.VarOp)
    def run_var(self, interpreter: Interpreter, op: red.VarOp, args: PythonValues) -> PythonValues:
        return (_moment(op, args[0], root=False),)

    @impl(red.StdOp)
    def run_std(self, interpreter: Interpreter, op: red.StdOp, args: PythonValues) -> PythonValues:
        return (_moment(op, args[0], root=True),)

    @impl(red.SoftmaxOp)
    def run_softmax(
        self, interpreter: Interpreter, op: red.SoftmaxOp, args: PythonValues
    ) -> PythonValues:
        x = np.asarray(args[0]).astype(float_dtype(op.input, op.result), copy=False)
        axis = norm_dim(integer(op.dim), x.ndim)
        return (as_result(softmax(x, axis, flag(op.safe)), op.result),)

    @impl(red.LogSoftmaxOp)
    def run_log_softmax(
        self, interpreter: Interpreter, op: red.LogSoftmaxOp, args: PythonValues
    ) -> PythonValues:
        x = np.asarray(args[0]).astype(float_dtype(op.input, op.result), copy=False)
        axis = norm_dim(integer(op.dim), x.ndim)
        return (as_result(log_softmax(x, axis), op.result),)


def _extreme_dim(op: red.ReduceDimWithIndexOp, x: np.ndarray, largest: bool) -> PythonValues:
    data = np.asarray(x)
    if data.ndim == 0:
        return (as_result(data, op.values), as_result(np.zeros((), np.int64), op.indices))
    axis = norm_dim(integer(op.dim), data.ndim)
    values, index = extreme_with_index(data, axis, largest)
    if flag(op.keepdim):
        values, index = np.expand_dims(values, axis), np.expand_dims(index, axis)
    return (as_result(values, op.values), as_result(index, op.indices))


def _arg_extreme(op: red.ArgReduceOp, x: np.ndarray, largest: bool) -> np.ndarray:
    data = np.asarray(x)
    if op.dim is None or data.ndim == 0:
        _, index = extreme_with_index(data.reshape(-1), 0, largest)
        return as_result(index, op.result)
    axis = norm_dim(integer(op.dim), data.ndim)
    _, index = extreme_with_index(data, axis, largest)
    if flag(op.keepdim):
        index = np.expand_dims(index, axis)
    return as_result(index, op.result)


def _sort(op: red.SortOp, x: np.ndarray) -> PythonValues:
    """A stable sort along `dim` (NaN above every number, as torch); the first `k`."""
    if x.ndim == 0:
        return (as_result(x, op.values), as_result(np.zeros((), np.int64), op.indices))
    axis = norm_dim(integer(op.dim), x.ndim)
    data = np.moveaxis(x, axis, -1)
    descending = flag(op.descending)
    if data.dtype.kind == "f":
        nan = np.isnan(data)
        key = np.where(nan, 0, -data if descending else data)
        # lexsort: the last key first; NaN after numbers ascending, before them descending
        order = np.lexsort((key, ~nan if descending else nan), axis=-1)
    else:
        ints = data.astype(np.int64)
        order = np.argsort(~ints if descending else ints, axis=-1, kind="stable")
    if op.k is not None:
        order = order[..., : integer(op.k)]
    values = np.take_along_axis(data, order, axis=-1)
    return (
        as_result(np.moveaxis(values, -1, axis), op.values),
        as_result(np.moveaxis(order.astype(np.int64), -1, axis), op.indices),
    )
