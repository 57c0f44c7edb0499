"""References of the elementwise kernels: unary, binary, where, copy_strided, fill."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from qopt.interpreters.kernels.common import (
    F32,
    as_words,
    erf_f32,
    store,
    strided_index,
)
from qopt.kernels.elementwise import FUSED_LEAVES, fused_dims, fused_program, fused_strides
from qopt.kernels.extents import shape6, spec_int
from qopt.kernels.opcodes import (
    BINARY_BOOL_NAMES,
    BINARY_OPS,
    DTYPES,
    FUSED_OPS,
    UNARY_OPS,
    opcode_name,
)
from qopt.kernels.spec import PushValues, Reference, SpecValues
from qopt.numerics import activations as act
from qopt.numerics.integers import int_pow, shift


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
    is_i32 = spec_int(spec, "DTYPE", DTYPES["f32"]) == DTYPES["i32"]
    words = as_words(buffers["x"])[:n]
    store(buffers, "y", unary_words(name, is_i32, words, push.get("a", 0.0), push.get("b", 0.0)))


def unary_words(name: str, is_i32: bool, words: np.ndarray, pa: float, pb: float) -> np.ndarray:
    """unary.glsl's op `name` on 32-bit words (i32 or f32 by `is_i32`; push a, b), as an
    f32 or i32 array of the words it writes (fused_elementwise runs the same code)."""
    if is_i32:
        v = words.view(np.int32).astype(np.int64)
        if name == "cast_i32_f32":
            return v.astype(F32)
        r = {
            "identity": lambda: v,
            "relu": lambda: np.maximum(v, 0),
            "neg": lambda: -v,
            "abs": lambda: np.abs(v),
            "clamp": lambda: np.clip(v, int(pa), int(pb)),
            "logical_not": lambda: (v == 0).astype(np.int64),
            "to_bool": lambda: (v != 0).astype(np.int64),
            "sign": lambda: np.sign(v),
            "signbit": lambda: (v < 0).astype(np.int64),
        }[name]()
        return r.astype(np.int32)
    x = words.view(F32)
    a, b = F32(pa), F32(pb)
    with np.errstate(all="ignore"):
        if name in ("logical_not", "to_bool", "cast_f32_i32", "signbit"):
            return {
                "signbit": lambda: (words.view(np.uint32) >> 31).astype(np.int32),
                "logical_not": lambda: (x == 0).astype(np.int32),
                "to_bool": lambda: (x != 0).astype(np.int32),
                "cast_f32_i32": lambda: np.trunc(x).astype(np.int32),
            }[name]()
        one = F32(1)
        fns: dict[str, Callable[[], np.ndarray]] = {
            "identity": lambda: x,
            "relu": lambda: np.where(x < 0, F32(0), x),
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
            "clamp": lambda: clamp_f32(x, a, b),
            "leaky_relu": lambda: act.leaky_relu(x, float(a)),
            "hardswish": lambda: act.hardswish(x),
            "hardsigmoid": lambda: act.hardsigmoid(x),
            "square": lambda: x * x,
            "log10": lambda: np.log2(x) * F32(0.30102999566398120),
            "log2": lambda: np.log2(x),
            "tan": lambda: np.tan(x),
            "hardshrink": lambda: act.hardshrink(x, float(a)),
            "softshrink": lambda: act.softshrink(x, float(a)),
            "sinh": lambda: np.sinh(x),
            "expm1": lambda: np.expm1(x),
            "log1p": lambda: np.log1p(x),
            "cosh": lambda: np.cosh(x),
            "trunc": lambda: np.trunc(x),
            "asin": lambda: np.arcsin(x),
            "acos": lambda: np.arccos(x),
            "atan": lambda: np.arctan(x),
            # (x > 0) - (x < 0): +0.0 for NaN and -0.0, as the shader and torch
            "sign": lambda: (x > 0).astype(F32) - (x < 0).astype(F32),
        }
        return np.asarray(fns[name](), dtype=F32)


def _binary_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    name = opcode_name(BINARY_OPS, spec_int(spec, "OP", BINARY_OPS["add"]))
    dims = shape6(push, "d")
    ia = int(push["a_off"]) + strided_index(push, dims, "sa")
    ib = int(push["b_off"]) + strided_index(push, dims, "sb")
    is_i32 = spec_int(spec, "DTYPE", DTYPES["f32"]) == DTYPES["i32"]
    a, b = as_words(buffers["a"])[ia], as_words(buffers["b"])[ib]
    store(buffers, "out", binary_words(name, is_i32, a, b, push.get("alpha", 1.0)))


def clamp_f32(x: np.ndarray, lo: np.float32, hi: np.float32) -> np.ndarray:
    """The shader's float clamp: `x < lo ? lo : x`, then `> hi ? hi`, by comparisons (NaN
    and -0.0 pass a bound of 0, hi where lo > hi)."""
    r = np.where(x < lo, lo, x)
    return np.where(r > hi, hi, r).astype(F32)


def remainder_f32(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The shader's float remainder (torch's): the exact fmod, then `+ y` where it is
    nonzero with y's other sign."""
    m = np.fmod(x, y)
    return np.where((m != 0) & ((m < 0) != (y < 0)), m + y, m)


def binary_words(name: str, is_i32: bool, a: np.ndarray, b: np.ndarray, alpha: float) -> np.ndarray:
    """binary.glsl's op `name` on 32-bit words `a`, `b` (i32 or f32 by `is_i32`; push
    alpha), as an f32 or i32 array of the words it writes."""
    if is_i32:
        x, y = a.view(np.int32).astype(np.int64), b.view(np.int32).astype(np.int64)
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
                "fmod": lambda: np.where(y == 0, 0, np.fmod(x, np.where(y == 0, 1, y))),
                "bitwise_and": lambda: x & y,
                "bitwise_or": lambda: x | y,
                "bitwise_xor": lambda: x ^ y,
                "trunc_divide": lambda: np.where(
                    (x < 0) != (y < 0), -(np.abs(x) // np.abs(y)), np.abs(x) // np.abs(y)
                ),  # 0 for y == 0, as numpy's and the shader's
                "bitwise_left_shift": lambda: shift(x.astype(np.int32), y, left=True),
                "bitwise_right_shift": lambda: shift(x.astype(np.int32), y, left=False),
            }[name]()
        return np.asarray(r).astype(np.int64).astype(np.int32)
    x, y = a.view(F32), b.view(F32)
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
            return r.astype(np.int32)

        def powf() -> np.ndarray:
            # C's powf special cases (numpy's float32 power), with the shader's
            # shortcuts for e = 2 and 0.5 (sqrt: -0.0 and -inf differ from powf)
            r = np.power(x, y)
            r = np.where(y == F32(0.5), np.sqrt(x), r)
            r = np.where(y == F32(2), x * x, r)
            r = np.where(y == F32(1), x, r)
            return np.where((y == F32(0)) | (x == F32(1)), F32(1), r)

        fns: dict[str, Callable[[], np.ndarray]] = {
            "add": lambda: x + F32(alpha) * y,
            "sub": lambda: x - F32(alpha) * y,
            "mul": lambda: x * y,
            "div": lambda: x / y,
            "pow": powf,
            "maximum": lambda: np.maximum(x, y),
            "minimum": lambda: np.minimum(x, y),
            "remainder": lambda: remainder_f32(x, y),
            "fmod": lambda: np.fmod(x, y),
            "floor_divide": lambda: np.floor_divide(x, y),  # the shader's floordiv_f
            "trunc_divide": lambda: np.trunc(x / y),
        }
        return np.asarray(fns[name](), dtype=F32)


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


def _fused_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    """fused_elementwise: the leaves' words, each instruction by unary_words/binary_words
    (the code of the unary and binary references: the same f32 op sequence) or a select
    on an index digit, r[RES] written at the output map."""
    program = fused_program(spec)
    n, dims = int(push["n"]), fused_dims(spec)
    registers: dict[int, np.ndarray] = {}
    for leaf in range(FUSED_LEAVES):
        buf = spec_int(spec, f"L{leaf}_BUF", -1)
        if buf < 0:
            continue
        strides = fused_strides(spec, f"L{leaf}_S")
        at = spec_int(spec, f"L{leaf}_OFF", 0) + _offsets(dims, strides, n)
        axis = spec_int(spec, f"L{leaf}_AX", -1)
        if axis >= 0:  # the digit on `axis` windowed: clamp(idx - lo, 0, size - 1)
            lo, size = spec_int(spec, f"L{leaf}_LO", 0), spec_int(spec, f"L{leaf}_N", 1)
            d = _digit(dims, axis, n)
            at += (np.clip(d - lo, 0, size - 1) - d) * strides[axis]
        registers[leaf] = as_words(buffers[f"in{buf}"])[at]
    for register, op, dtype, a, b in program:
        k = register - FUSED_LEAVES
        if op == FUSED_OPS["select"]:
            low = _digit(dims, spec_int(spec, f"I{k}_X", 0), n) < spec_int(spec, f"I{k}_Y", 0)
            registers[register] = np.where(low, registers[a], registers[b])
            continue
        pa, pb = float(push[f"a{k}"]), float(push[f"b{k}"])
        is_i32 = dtype == DTYPES["i32"]
        if op >= FUSED_OPS["binary"]:
            name = opcode_name(BINARY_OPS, op - FUSED_OPS["binary"])
            r = binary_words(name, is_i32, registers[a], registers[b], pa)
        else:
            r = unary_words(opcode_name(UNARY_OPS, op), is_i32, registers[a], pa, pb)
        registers[register] = as_words(np.ascontiguousarray(r))
    dst = spec_int(spec, "OUT_OFF", 0) + _offsets(dims, fused_strides(spec, "OS"), n)
    out = buffers["y"].reshape(-1).view(np.uint32)
    out[dst] = registers[spec_int(spec, "RES", 0)]


def _offsets(dims: tuple[int, ...], strides: tuple[int, ...], n: int) -> np.ndarray:
    """`idx . strides` for the first n flat indices of the 6-D space `dims`."""
    total = np.zeros(dims, dtype=np.int64)
    for axis, (d, s) in enumerate(zip(dims, strides, strict=True)):
        if d > 1 and s:
            shape = [1] * len(dims)
            shape[axis] = d
            total = total + (np.arange(d, dtype=np.int64) * s).reshape(shape)
    return total.reshape(-1)[:n]


def _digit(dims: tuple[int, ...], axis: int, n: int) -> np.ndarray:
    """Digit `axis` of the first n flat indices of the 6-D space `dims`."""
    strides = tuple(1 if k == axis else 0 for k in range(len(dims)))
    return _offsets(dims, strides, n)


REFERENCES: dict[str, Reference] = {
    "unary": _unary_ref,
    "binary": _binary_ref,
    "where": _where_ref,
    "copy_strided": _copy_ref,
    "fill": _fill_ref,
    "fused_elementwise": _fused_ref,
}
