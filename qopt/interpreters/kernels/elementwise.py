"""References of the elementwise kernels: unary, binary, where, copy_strided, fill."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from qopt.interpreters.kernels.common import (
    F32,
    as_words,
    erf_f32,
    f32s,
    i32s,
    store,
    strided_index,
)
from qopt.kernels.extents import shape6, spec_int
from qopt.kernels.opcodes import BINARY_BOOL_NAMES, BINARY_OPS, DTYPES, UNARY_OPS, opcode_name
from qopt.kernels.spec import PushValues, Reference, SpecValues
from qopt.numerics import activations as act
from qopt.numerics.integers import int_pow


def tanh_f32(v: np.ndarray) -> np.ndarray:
    """The shaders' tanh: of the argument clamped to [-15, 15] (GLSL's tanh may
    overflow beyond; tanh(+-15) rounds to +-1 in f32, so the clamp changes no value)."""
    return np.tanh(np.clip(v, F32(-15), F32(15)))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    """The shader's tanh GELU. Not `qopt.numerics.activations.gelu(x, "tanh")`: the
    shader writes `0.044715 * v * v * v`, which GLSL evaluates left to right
    (`((0.044715 * v) * v) * v`), where torch cubes first (`0.044715 * (x * x * x)`);
    the two round differently in the last bit, and the reference must round as the
    shader does."""
    inner = F32(0.7978845608028654) * (x + F32(0.044715) * x * x * x)
    return F32(0.5) * x * (F32(1) + tanh_f32(inner))


def _unary_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    name = opcode_name(UNARY_OPS, spec_int(spec, "OP", UNARY_OPS["identity"]))
    n = int(push["n"])
    if spec_int(spec, "DTYPE", DTYPES["f32"]) == DTYPES["i32"]:
        v = i32s(buffers["x"])[:n].astype(np.int64)
        if name == "cast_i32_f32":
            store(buffers, "y", v.astype(F32))
            return
        r = {
            "identity": lambda: v,
            "relu": lambda: np.maximum(v, 0),
            "neg": lambda: -v,
            "abs": lambda: np.abs(v),
            "clamp": lambda: np.clip(v, int(push["a"]), int(push["b"])),
            "logical_not": lambda: (v == 0).astype(np.int64),
            "to_bool": lambda: (v != 0).astype(np.int64),
        }[name]()
        store(buffers, "y", r.astype(np.int32))
        return
    x = f32s(buffers["x"])[:n]
    a, b = F32(push.get("a", 0.0)), F32(push.get("b", 0.0))
    with np.errstate(all="ignore"):
        if name in ("logical_not", "to_bool", "cast_f32_i32"):
            r = {
                "logical_not": lambda: (x == 0).astype(np.int32),
                "to_bool": lambda: (x != 0).astype(np.int32),
                "cast_f32_i32": lambda: np.trunc(x).astype(np.int32),
            }[name]()
            store(buffers, "y", r)
            return
        one = F32(1)
        fns: dict[str, Callable[[], np.ndarray]] = {
            "identity": lambda: x,
            "relu": lambda: np.maximum(x, F32(0)),
            "silu": lambda: act.silu(x),
            "sigmoid": lambda: act.sigmoid(x),
            "tanh": lambda: tanh_f32(x),
            "exp": lambda: np.exp(x),
            "log": lambda: np.log(x),
            "sqrt": lambda: np.sqrt(x),
            "rsqrt": lambda: one / np.sqrt(x),
            "reciprocal": lambda: one / x,
            "sin": lambda: np.sin(x),
            "cos": lambda: np.cos(x),
            "erf": lambda: erf_f32(x),
            "neg": lambda: -x,
            "abs": lambda: np.abs(x),
            # torch's order with the shader's erf: x * 0.5 * (1 + erf(x * f32(1/sqrt(2))))
            "gelu": lambda: act.gelu(x, "none", erf=erf_f32),
            "gelu_tanh": lambda: _gelu_tanh(x),
            "floor": lambda: np.floor(x),
            "ceil": lambda: np.ceil(x),
            "round": lambda: np.round(x),
            "clamp": lambda: np.minimum(np.maximum(x, a), b),
            "leaky_relu": lambda: act.leaky_relu(x, float(a)),
            "hardswish": lambda: act.hardswish(x),
            "hardsigmoid": lambda: act.hardsigmoid(x),
            "square": lambda: x * x,
            "log10": lambda: np.log2(x) * F32(0.30102999566398120),
            "log2": lambda: np.log2(x),
            "tan": lambda: np.tan(x),
            "hardshrink": lambda: act.hardshrink(x, float(a)),
            "softshrink": lambda: act.softshrink(x, float(a)),
        }
        store(buffers, "y", np.asarray(fns[name](), dtype=F32))


def _binary_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    name = opcode_name(BINARY_OPS, spec_int(spec, "OP", BINARY_OPS["add"]))
    dims = shape6(push, "d")
    ia = int(push["a_off"]) + strided_index(push, dims, "sa")
    ib = int(push["b_off"]) + strided_index(push, dims, "sb")
    alpha = push.get("alpha", 1.0)
    if spec_int(spec, "DTYPE", DTYPES["f32"]) == DTYPES["i32"]:
        x, y = i32s(buffers["a"])[ia].astype(np.int64), i32s(buffers["b"])[ib].astype(np.int64)
        al = int(np.trunc(alpha))
        with np.errstate(all="ignore"):
            r = {
                "add": lambda: x + al * y,
                "sub": lambda: x - al * y,
                "mul": lambda: x * y,
                "div": lambda: np.floor_divide(x, y),
                "floor_divide": lambda: np.floor_divide(x, y),
                "pow": lambda: int_pow(x.astype(np.int32), y.astype(np.int32)),
                "maximum": lambda: np.maximum(x, y),
                "minimum": lambda: np.minimum(x, y),
                "eq": lambda: x == y,
                "ne": lambda: x != y,
                "lt": lambda: x < y,
                "le": lambda: x <= y,
                "gt": lambda: x > y,
                "ge": lambda: x >= y,
                "logical_and": lambda: (x != 0) & (y != 0),
                "logical_or": lambda: (x != 0) | (y != 0),
                "remainder": lambda: np.mod(x, y),
                "bitwise_and": lambda: x & y,
                "bitwise_or": lambda: x | y,
                "bitwise_xor": lambda: x ^ y,
            }[name]()
        store(buffers, "out", np.asarray(r).astype(np.int64).astype(np.int32))
        return
    x, y = f32s(buffers["a"])[ia], f32s(buffers["b"])[ib]
    with np.errstate(all="ignore"):
        if name in BINARY_BOOL_NAMES:
            r = {
                "eq": x == y,
                "ne": x != y,
                "lt": x < y,
                "le": x <= y,
                "gt": x > y,
                "ge": x >= y,
                "logical_and": (x != 0) & (y != 0),
                "logical_or": (x != 0) | (y != 0),
            }[name]
            store(buffers, "out", r.astype(np.int32))
            return

        def powf() -> np.ndarray:
            neg_int = (x < 0) & (y == np.floor(y))
            r = np.power(np.abs(x), y)
            r = np.where(neg_int & (np.mod(y, F32(2)) == 1), -r, r)
            r = np.where(neg_int, r, np.power(x, y))
            r = np.where(y == F32(0.5), np.sqrt(x), r)
            r = np.where(y == F32(2), x * x, r)
            r = np.where(y == F32(1), x, r)
            return np.where(y == F32(0), F32(1), r)

        fns: dict[str, Callable[[], np.ndarray]] = {
            "add": lambda: x + F32(alpha) * y,
            "sub": lambda: x - F32(alpha) * y,
            "mul": lambda: x * y,
            "div": lambda: x / y,
            "pow": powf,
            "maximum": lambda: np.maximum(x, y),
            "minimum": lambda: np.minimum(x, y),
            "remainder": lambda: x - np.floor(x / y) * y,
            "floor_divide": lambda: np.floor(x / y),
        }
        store(buffers, "out", np.asarray(fns[name](), dtype=F32))


def _where_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    dims = shape6(push, "d")
    c = as_words(buffers["cond"])[strided_index(push, dims, "sc")]
    a = as_words(buffers["a"])[strided_index(push, dims, "sa")]
    b = as_words(buffers["b"])[strided_index(push, dims, "sb")]
    store(buffers, "out", np.where(c != 0, a, b).astype(np.uint32))


def _copy_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    dims = shape6(push, "d")
    src = as_words(buffers["x"])[int(push["in_off"]) + strided_index(push, dims, "si")]
    dst = int(push["out_off"]) + strided_index(push, dims, "so")
    out = buffers["y"]
    words = out.reshape(-1).view(np.uint32)
    words[dst] = src


def _fill_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    n = int(push["n"])
    i = np.arange(n)
    if spec_int(spec, "MODE", DTYPES["f32"]) == DTYPES["f32"]:
        start = np.uint32(push["start"]).view(F32)
        step = np.uint32(push["step"]).view(F32)
        store(buffers, "y", (start + i.astype(F32) * step).astype(F32))
    else:
        start = int(np.uint32(push["start"]).view(np.int32))
        step = int(np.uint32(push["step"]).view(np.int32))
        store(buffers, "y", (start + i * step).astype(np.int32))


REFERENCES: dict[str, Reference] = {
    "unary": _unary_ref,
    "binary": _binary_ref,
    "where": _where_ref,
    "copy_strided": _copy_ref,
    "fill": _fill_ref,
}
