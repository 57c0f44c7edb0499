"""One `KernelSpec` per Vulkan kernel (registered on import) with its numpy reference.

Conventions shared by every kernel (see registry.py for the buffer ABI):
- bindings are listed in binding order; a binding a variant does not read
  (bias without HAS_BIAS, zero points without HAS_ZERO_POINT, ...) must still be
  bound to some buffer (a 16-byte dummy is fine);
- push constants are 4-byte scalars in declaration order; shapes of elementwise
  kernels are 6-D (leading 1s), strides in elements, 0 = broadcast;
- specialization constants are in constant_id order; `WG` (where present) is the
  local size x, `NPW`/`MT` are the tuned GEMV tile (outputs per workgroup, rows
  per workgroup);
- references take flat numpy arrays by binding name (any 4-byte dtype; words are
  reinterpreted as the kernel does) and write the outputs in place (or add them).
Integer-output kernels are bit-exact with their reference (roundEven, the same f32
operation order, no FMA contraction: the shaders use `precise`); float kernels match
to float32 rounding (different summation order, transcendental ulps).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from qopt.backends.vulkan.registry import (
    STATUS,
    Binding,
    KernelSpec,
    PushValues,
    SpecValues,
    register,
)
from qopt.numerics import sequential_sum, torch_sum_last

F32 = np.float32
MAX_GROUPS = 65535

UNARY_OPS = {
    "identity": 0,
    "relu": 1,
    "silu": 2,
    "sigmoid": 3,
    "tanh": 4,
    "exp": 5,
    "log": 6,
    "sqrt": 7,
    "rsqrt": 8,
    "reciprocal": 9,
    "sin": 10,
    "cos": 11,
    "erf": 12,
    "neg": 13,
    "abs": 14,
    "gelu": 15,
    "gelu_tanh": 16,
    "floor": 17,
    "ceil": 18,
    "round": 19,
    "clamp": 20,
    "leaky_relu": 21,
    "hardswish": 22,
    "hardsigmoid": 23,
    "logical_not": 24,
    "cast_f32_i32": 25,
    "cast_i32_f32": 26,
    "to_bool": 27,
    "square": 28,
}
UNARY_INT_OPS = (
    "identity",
    "relu",
    "neg",
    "abs",
    "clamp",
    "logical_not",
    "cast_i32_f32",
    "to_bool",
)
BINARY_OPS = {
    "add": 0,
    "sub": 1,
    "mul": 2,
    "div": 3,
    "pow": 4,
    "maximum": 5,
    "minimum": 6,
    "eq": 7,
    "ne": 8,
    "lt": 9,
    "le": 10,
    "gt": 11,
    "ge": 12,
    "logical_and": 13,
    "logical_or": 14,
    "remainder": 15,
    "floor_divide": 16,
    "bitwise_and": 17,
    "bitwise_or": 18,
    "bitwise_xor": 19,
}
BINARY_BOOL_OPS = tuple(range(7, 15))
REDUCE_OPS = {"sum": 0, "mean": 1, "max": 2, "min": 3, "argmax": 4, "argmin": 5}
POOL_OPS = {"max": 0, "avg": 1}
MAPPINGS = {"asymmetric": 0, "symmetric": 1, "symmetric_no_clipping_err": 2}
CONV_ACT = {"none": 0, "static": 1, "quantized": 2}

RANK = 6
DOCS: dict[str, str] = {}
"""Each kernel's bindings / push / spec summary (also its `__doc__`)."""


def _doc(spec: KernelSpec, text: str) -> None:
    DOCS[spec.name] = text
    object.__setattr__(spec, "__doc__", text)  # the registry's KernelSpec is frozen


def _ceil(a: int, b: int) -> int:
    return -(-int(a) // int(b))


def _groups(n: int, per: int) -> int:
    return max(1, min(_ceil(n, per), MAX_GROUPS))


def _words(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a).reshape(-1)
    assert a.dtype.itemsize == 4, f"buffers hold 4-byte words, got {a.dtype}"
    return a.view(np.uint32)


def _f32(a: np.ndarray) -> np.ndarray:
    return _words(a).view(np.float32)


def _i32(a: np.ndarray) -> np.ndarray:
    return _words(a).view(np.int32)


def _store(buffers: dict[str, np.ndarray], name: str, values: np.ndarray, offset: int = 0) -> None:
    """Write `values` (4-byte dtype) bit for bit into buffer `name` at `offset` words."""
    v = _words(np.asarray(values))
    out = buffers.get(name)
    if out is None or out.size < offset + v.size:
        fresh = np.zeros(offset + v.size, dtype=np.uint32)
        if out is not None:
            fresh[: out.size] = _words(out)
        out = fresh.view(out.dtype if out is not None else np.float32)
        buffers[name] = out
    out.reshape(-1).view(np.uint32)[offset : offset + v.size] = v


def _spec(spec: SpecValues, name: str, default: int) -> int:
    return int(spec.get(name, default))


def _b(name: str, dtype: str, writes: bool = False, packed: str | None = None) -> Binding:
    return Binding(name, dtype, writes, packed)


def _push(*names: str, kind: str = "u32") -> tuple[tuple[str, str], ...]:
    return tuple((n, kind) for n in names)


def _shape6(push: PushValues, prefix: str) -> tuple[int, ...]:
    return tuple(int(push[f"{prefix}{i}"]) for i in range(RANK))


def _strided_index(push: PushValues, dims: tuple[int, ...], stride_prefix: str) -> np.ndarray:
    """Flat element offsets (without base offset) of a 6-D index space."""
    strides = _shape6(push, stride_prefix)
    idx = np.zeros(dims, dtype=np.int64)
    for axis, (d, s) in enumerate(zip(dims, strides, strict=True)):
        shape = [1] * RANK
        shape[axis] = d
        idx = idx + (np.arange(d, dtype=np.int64) * s).reshape(shape)
    return idx.reshape(-1)


def elementwise_push(shape: tuple[int, ...], **strides: tuple[int, ...]) -> dict[str, int]:
    """Push values `d0..d5` and `<prefix>0..5` strides for a <= 6-D broadcast, e.g.
    `elementwise_push(out.shape, sa=a_strides, sb=b_strides)` (strides in elements,
    0 for broadcast dims); also sets `n`."""
    pad = RANK - len(shape)
    if pad < 0:
        raise ValueError(f"rank {len(shape)} > {RANK}")
    values: dict[str, int] = {"n": int(np.prod(shape, dtype=np.int64))}
    for i, d in enumerate((1,) * pad + tuple(shape)):
        values[f"d{i}"] = int(d)
    for prefix, st in strides.items():
        for i, s in enumerate((0,) * pad + tuple(st)):
            values[f"{prefix}{i}"] = int(s)
    return values


def broadcast_strides(shape: tuple[int, ...], out_shape: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of a contiguous `shape` broadcast to `out_shape` (0 = broadcast)."""
    shape = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(0 if d == 1 else acc)
        acc *= d
    return tuple(
        0 if d == 1 and o != 1 else s
        for d, o, s in zip(shape, out_shape, reversed(strides), strict=True)
    )


def _grid_workgroups(count: Callable[[PushValues], int], wg: str = "WG") -> Any:
    def workgroups(push: PushValues, spec: SpecValues) -> tuple[int, int, int]:
        return (_groups(count(push), _spec(spec, wg, 64)), 1, 1)

    return workgroups


def _rows_workgroups(push: PushValues, spec: SpecValues) -> tuple[int, int, int]:
    return (max(1, min(int(push["rows"]), MAX_GROUPS)), 1, 1)


# ----- buffer extents ----------------------------------------------------------------------
# Each kernel's `extents(push, spec)` mirrors the index expressions of its shader in exact
# integers: one more than the highest 4-byte word of each binding a dispatch can read or
# write (0 for a binding it does not touch). Every shader loop is bounded by push constants
# (grid-stride loops, clamped tiles), so the workgroup count never widens an extent. Push
# values the shaders cannot index with safely (a divisor of 0, a 32-bit index or loop bound
# that would wrap) raise ValueError; `_guarded` adds the kernel name and the wrap check.

Extents = dict[str, int]
ExtentsFn = Callable[[PushValues, SpecValues], Extents]
U32_LIMIT = 1 << 32
"""The shaders index with uint32: an extent above 2^32 words means an index wrapped."""
FLAG = (0, 1)
WG_RANGE = (1, 1024)
"""Local size x (WG): lavapipe and desktop GPUs accept 1024 (Vulkan guarantees 128)."""
TILE_RANGE = (1, 8)
"""NPW / MT (linear_qw, matmul): they size private arrays (NPW * MT floats)."""
GROUP_RANGE = (1, 2**31 - 1)
"""GROUP_SIZE: any positive int (the per-channel kernels default to 2^30)."""
AFFINE_BITS = (4, 8)
LUT_BITS = (1, 2, 4, 8)


def _guarded(name: str, fn: ExtentsFn) -> ExtentsFn:
    """`fn` with its ValueErrors naming kernel `name`, refusing extents past 2^32 words."""

    def extents(push: PushValues, spec: SpecValues) -> Extents:
        try:
            found = fn(push, spec)
            for binding, words in found.items():
                if words < 0:
                    raise ValueError(f"binding {binding} gets a negative extent {words}")
                if words > U32_LIMIT:
                    raise ValueError(
                        f"binding {binding} would be indexed up to word {words - 1}: "
                        "past 2^32 the shader's uint32 index wraps"
                    )
        except ValueError as e:
            raise ValueError(f"kernel {name}: {e}") from None
        return found

    extents.__doc__ = fn.__doc__
    extents.__name__ = fn.__name__
    return extents


def _ints(push: PushValues, *names: str) -> tuple[int, ...]:
    return tuple(int(push[n]) for n in names)


def _count(value: int, what: str) -> int:
    """A loop bound the shader computes in uint32 (`p.n * p.D`, ...): it must not wrap."""
    if value >= U32_LIMIT:
        raise ValueError(f"{what} = {value} does not fit 32 bits")
    return value


def _nonzero(push: PushValues, *names: str) -> None:
    """Push constants the shader divides by (reached: the caller knows there is work)."""
    for n in names:
        if int(push[n]) == 0:
            raise ValueError(f"push constant {n} is 0 and the shader divides by it")


def _one_of(spec: SpecValues, name: str, allowed: tuple[int, ...]) -> int:
    value = int(spec[name])
    if value not in allowed:
        raise ValueError(f"specialization constant {name} = {value} is not one of {allowed}")
    return value


def _max_digits(n: int, dims: tuple[int, ...], weights: list[Callable[[int], int]]) -> int:
    """max over i < n (n >= 1, dims >= 1) of sum_k weights[k](digit k of i), the digits of i
    in the mixed radix `dims` (last fastest; the first one modulo dims[0], as the shaders'
    `rem % d[k]; rem /= d[k]` leaves it), for nondecreasing weights. Beyond n - 1 itself,
    the best index below it lowers one nonzero digit of n - 1 and maxes every later one."""
    if n >= int(np.prod(dims, dtype=object)):
        return sum(w(d - 1) for w, d in zip(weights, dims, strict=True))
    digits, rem = [], n - 1
    for d in reversed(dims):
        digits.append(rem % d)
        rem //= d
    digits.reverse()
    best = sum(w(t) for w, t in zip(weights, digits, strict=True))
    prefix = 0
    for k, (w, t) in enumerate(zip(weights, digits, strict=True)):
        if t > 0:
            rest = sum(wj(dj - 1) for wj, dj in zip(weights[k + 1 :], dims[k + 1 :], strict=True))
            best = max(best, prefix + w(t - 1) + rest)
        prefix += w(t)
    return best


def _strided_extent(n: int, dims: tuple[int, ...], strides: tuple[int, ...], offset: int) -> int:
    """Words read or written at `offset + idx . strides` for the first n indices idx of the
    6-D space `dims` (binary / where / copy_strided: `idx = rem % d[k]`, uint32 sums)."""
    if n == 0:
        return 0
    if 0 in dims:
        raise ValueError(f"a dimension of size 0 in {list(dims)} with n = {n}")
    return offset + _max_digits(n, dims, [lambda i, s=s: i * s for s in strides]) + 1


def _per_element(*names: str) -> ExtentsFn:
    def extents(push: PushValues, spec: SpecValues) -> Extents:
        return dict.fromkeys(names, int(push["n"]))

    extents.__doc__ = f"Element i < n of each of {', '.join(names)} (`for (i < p.n)`, `[i]`)."
    return extents


def _rows_cols(push: PushValues) -> tuple[int, int]:
    return int(push["rows"]), int(push["cols"])


def _quant(x: np.ndarray, inv: float, zp: int, qmin: int, qmax: int, zp_first: bool = False):
    v = x.astype(F32) * F32(inv)
    r = np.round(v + F32(zp)) if zp_first else np.round(v) + F32(zp)
    return np.clip(r, F32(qmin), F32(qmax)).astype(np.int64)


def _requant(y: np.ndarray, push: PushValues, requant: bool) -> np.ndarray:
    y = np.minimum(np.maximum(y.astype(F32), F32(push["clamp_min"])), F32(push["clamp_max"]))
    if not requant:
        return y.astype(F32)
    q = _quant(y, push["out_inv_scale"], push["out_zp"], push["out_qmin"], push["out_qmax"])
    return q.astype(np.int32)


def erf_f32(v: np.ndarray) -> np.ndarray:
    """The shaders' float erf (Eigen's rational approximation), in f32."""
    x = np.clip(v.astype(F32), F32(-4), F32(4))
    x2 = x * x
    num = x2 * F32(-2.72614225801306e-10) + F32(2.77068142495902e-08)
    for c in (
        -2.10102402082508e-06,
        -5.69250639462346e-05,
        -7.34990630326855e-04,
        -2.95459980854025e-03,
        -1.60960333262415e-02,
    ):
        num = num * x2 + F32(c)
    num = num * x
    den = x2 * F32(-1.45660718464996e-05) + F32(-2.13374055278905e-04)
    for c in (-1.68282697438203e-03, -7.37332916720468e-03, -1.42647390514189e-02):
        den = den * x2 + F32(c)
    return (num / den).astype(F32)


# ----- elementwise -----------------------------------------------------------------------


def _unary_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    op = _spec(spec, "OP", 0)
    n = int(push["n"])
    names = {v: k for k, v in UNARY_OPS.items()}
    name = names[op]
    if _spec(spec, "DTYPE", 0) == 1:
        v = _i32(buffers["x"])[:n].astype(np.int64)
        if name == "cast_i32_f32":
            _store(buffers, "y", v.astype(F32))
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
        _store(buffers, "y", r.astype(np.int32))
        return
    x = _f32(buffers["x"])[:n]
    a, b = F32(push.get("a", 0.0)), F32(push.get("b", 0.0))
    with np.errstate(all="ignore"):
        if name in ("logical_not", "to_bool", "cast_f32_i32"):
            r = {
                "logical_not": lambda: (x == 0).astype(np.int32),
                "to_bool": lambda: (x != 0).astype(np.int32),
                "cast_f32_i32": lambda: np.trunc(x).astype(np.int32),
            }[name]()
            _store(buffers, "y", r)
            return
        one = F32(1)
        fns: dict[str, Callable[[], np.ndarray]] = {
            "identity": lambda: x,
            "relu": lambda: np.maximum(x, F32(0)),
            "silu": lambda: x / (one + np.exp(-x)),
            "sigmoid": lambda: one / (one + np.exp(-x)),
            "tanh": lambda: np.tanh(np.clip(x, F32(-15), F32(15))),
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
            "gelu": lambda: F32(0.5) * x * (one + erf_f32(x * F32(0.70710678118654752))),
            "gelu_tanh": lambda: (
                F32(0.5)
                * x
                * (
                    one
                    + np.tanh(
                        np.clip(
                            F32(0.7978845608028654) * (x + F32(0.044715) * x * x * x),
                            F32(-15),
                            F32(15),
                        )
                    )
                )
            ),
            "floor": lambda: np.floor(x),
            "ceil": lambda: np.ceil(x),
            "round": lambda: np.round(x),
            "clamp": lambda: np.minimum(np.maximum(x, a), b),
            "leaky_relu": lambda: np.where(x > 0, x, x * a),
            "hardswish": lambda: x * np.clip(x + F32(3), F32(0), F32(6)) / F32(6),
            "hardsigmoid": lambda: np.clip(x + F32(3), F32(0), F32(6)) / F32(6),
            "square": lambda: x * x,
        }
        _store(buffers, "y", np.asarray(fns[name](), dtype=F32))


def _always(spec: SpecValues) -> bool:
    return True


# Unary ops whose GLSL builtins are not correctly rounded (exp, tanh, sin, log, ...).
_TRANSCENDENTAL = {
    "silu",
    "sigmoid",
    "tanh",
    "exp",
    "log",
    "sin",
    "cos",
    "erf",
    "gelu",
    "gelu_tanh",
}


def _unary_exact(spec: SpecValues) -> bool:
    names = {v: k for k, v in UNARY_OPS.items()}
    return names[_spec(spec, "OP", 0)] not in _TRANSCENDENTAL


UNARY = register(
    KernelSpec(
        name="unary",
        glsl="unary.glsl",
        bindings=(_b("x", "f32"), _b("y", "f32", True)),
        push=(("n", "u32"), ("a", "f32"), ("b", "f32")),
        spec=(("OP", 0), ("DTYPE", 0), ("WG", 64)),
        workgroups=_grid_workgroups(lambda p: int(p["n"])),
        reference=_unary_ref,
        exact=_unary_exact,
        extents=_guarded("unary", _per_element("x", "y")),
        spec_bounds={"OP": (0, max(UNARY_OPS.values())), "DTYPE": FLAG, "WG": WG_RANGE},
    )
)
_doc(
    UNARY,
    """y = op(x) over n 32-bit words. spec OP (UNARY_OPS), DTYPE (0 f32 in,
1 i32 in: only UNARY_INT_OPS), WG. push n, a (clamp min / leaky slope), b (clamp max).
logical_not / to_bool / cast_f32_i32 write i32; cast_i32_f32 (DTYPE 1) writes f32.""",
)


def _binary_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    op = _spec(spec, "OP", 0)
    dims = _shape6(push, "d")
    ia = int(push["a_off"]) + _strided_index(push, dims, "sa")
    ib = int(push["b_off"]) + _strided_index(push, dims, "sb")
    alpha = push.get("alpha", 1.0)
    if _spec(spec, "DTYPE", 0) == 1:
        x, y = _i32(buffers["a"])[ia].astype(np.int64), _i32(buffers["b"])[ib].astype(np.int64)
        al = int(np.trunc(alpha))
        with np.errstate(all="ignore"):
            r = {
                0: lambda: x + al * y,
                1: lambda: x - al * y,
                2: lambda: x * y,
                3: lambda: np.floor_divide(x, y),
                16: lambda: np.floor_divide(x, y),
                4: lambda: np.round(np.power(x.astype(F32), y.astype(F32))).astype(np.int64),
                5: lambda: np.maximum(x, y),
                6: lambda: np.minimum(x, y),
                7: lambda: x == y,
                8: lambda: x != y,
                9: lambda: x < y,
                10: lambda: x <= y,
                11: lambda: x > y,
                12: lambda: x >= y,
                13: lambda: (x != 0) & (y != 0),
                14: lambda: (x != 0) | (y != 0),
                15: lambda: np.mod(x, y),
                17: lambda: x & y,
                18: lambda: x | y,
                19: lambda: x ^ y,
            }[op]()
        _store(buffers, "out", np.asarray(r).astype(np.int64).astype(np.int32))
        return
    x, y = _f32(buffers["a"])[ia], _f32(buffers["b"])[ib]
    with np.errstate(all="ignore"):
        if op in BINARY_BOOL_OPS:
            r = {
                7: x == y,
                8: x != y,
                9: x < y,
                10: x <= y,
                11: x > y,
                12: x >= y,
                13: (x != 0) & (y != 0),
                14: (x != 0) | (y != 0),
            }[op]
            _store(buffers, "out", r.astype(np.int32))
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

        fns: dict[int, Callable[[], np.ndarray]] = {
            0: lambda: x + F32(alpha) * y,
            1: lambda: x - F32(alpha) * y,
            2: lambda: x * y,
            3: lambda: x / y,
            4: powf,
            5: lambda: np.maximum(x, y),
            6: lambda: np.minimum(x, y),
            15: lambda: x - np.floor(x / y) * y,
            16: lambda: np.floor(x / y),
        }
        _store(buffers, "out", np.asarray(fns[op](), dtype=F32))


def _binary_exact(spec: SpecValues) -> bool:
    """Every binary op is exact but float `pow` (GLSL's pow builtin is not correctly
    rounded)."""
    return not (_spec(spec, "OP", 0) == BINARY_OPS["pow"] and _spec(spec, "DTYPE", 0) == 0)


def _binary_extents(push: PushValues, spec: SpecValues) -> Extents:
    """binary.glsl: out[i] for i < n, a[a_off + idx . sa], b[b_off + idx . sb] (idx the
    6-D index of i)."""
    n, dims = int(push["n"]), _shape6(push, "d")
    return {
        "a": _strided_extent(n, dims, _shape6(push, "sa"), int(push["a_off"])),
        "b": _strided_extent(n, dims, _shape6(push, "sb"), int(push["b_off"])),
        "out": n,
    }


BINARY = register(
    KernelSpec(
        name="binary",
        glsl="binary.glsl",
        bindings=(_b("a", "f32"), _b("b", "f32"), _b("out", "f32", True)),
        push=(
            ("n", "u32"),
            *_push(*(f"d{i}" for i in range(RANK))),
            *_push(*(f"sa{i}" for i in range(RANK))),
            *_push(*(f"sb{i}" for i in range(RANK))),
            ("a_off", "u32"),
            ("b_off", "u32"),
            ("alpha", "f32"),
        ),
        spec=(("OP", 0), ("DTYPE", 0), ("WG", 64)),
        workgroups=_grid_workgroups(lambda p: int(p["n"])),
        reference=_binary_ref,
        exact=_binary_exact,
        extents=_guarded("binary", _binary_extents),
        spec_bounds={"OP": (0, max(BINARY_OPS.values())), "DTYPE": FLAG, "WG": WG_RANGE},
    )
)
_doc(
    BINARY,
    """out[i] = op(a[a_off + idx.sa], b[b_off + idx.sb]) over the 6-D index
space d0..d5 (`elementwise_push`). spec OP (BINARY_OPS), DTYPE (0 f32, 1 i32), WG;
push n, d*, sa*, sb*, a_off, b_off, alpha (add/sub). Comparisons/logical write i32 0/1;
i32 div is floor division, i32 remainder is Python's mod.""",
)


def _where_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    dims = _shape6(push, "d")
    c = _words(buffers["cond"])[_strided_index(push, dims, "sc")]
    a = _words(buffers["a"])[_strided_index(push, dims, "sa")]
    b = _words(buffers["b"])[_strided_index(push, dims, "sb")]
    _store(buffers, "out", np.where(c != 0, a, b).astype(np.uint32))


def _where_extents(push: PushValues, spec: SpecValues) -> Extents:
    """where.glsl: out[i] for i < n, cond[idx . sc], a[idx . sa], b[idx . sb] (both a and b
    counted: either may be read)."""
    n, dims = int(push["n"]), _shape6(push, "d")
    return {
        "cond": _strided_extent(n, dims, _shape6(push, "sc"), 0),
        "a": _strided_extent(n, dims, _shape6(push, "sa"), 0),
        "b": _strided_extent(n, dims, _shape6(push, "sb"), 0),
        "out": n,
    }


WHERE = register(
    KernelSpec(
        name="where",
        glsl="where.glsl",
        bindings=(_b("cond", "i32"), _b("a", "f32"), _b("b", "f32"), _b("out", "f32", True)),
        push=(
            ("n", "u32"),
            *_push(*(f"d{i}" for i in range(RANK))),
            *_push(*(f"sc{i}" for i in range(RANK))),
            *_push(*(f"sa{i}" for i in range(RANK))),
            *_push(*(f"sb{i}" for i in range(RANK))),
        ),
        spec=(("WG", 64),),
        workgroups=_grid_workgroups(lambda p: int(p["n"])),
        reference=_where_ref,
        exact=_always,
        extents=_guarded("where", _where_extents),
        spec_bounds={"WG": WG_RANGE},
    )
)
_doc(
    WHERE,
    """out[i] = cond[idx.sc] != 0 ? a[idx.sa] : b[idx.sb] (32-bit words of any
type); push n, d0..d5, sc*, sa*, sb*; spec WG.""",
)


def _copy_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    dims = _shape6(push, "d")
    src = _words(buffers["x"])[int(push["in_off"]) + _strided_index(push, dims, "si")]
    dst = int(push["out_off"]) + _strided_index(push, dims, "so")
    out = buffers["y"]
    words = out.reshape(-1).view(np.uint32)
    words[dst] = src


def _copy_extents(push: PushValues, spec: SpecValues) -> Extents:
    """copy_strided.glsl: y[out_off + idx . so] = x[in_off + idx . si] for the first n
    indices idx of the 6-D space d."""
    n, dims = int(push["n"]), _shape6(push, "d")
    return {
        "x": _strided_extent(n, dims, _shape6(push, "si"), int(push["in_off"])),
        "y": _strided_extent(n, dims, _shape6(push, "so"), int(push["out_off"])),
    }


COPY_STRIDED = register(
    KernelSpec(
        name="copy_strided",
        glsl="copy_strided.glsl",
        bindings=(_b("x", "f32"), _b("y", "f32", True)),
        push=(
            ("n", "u32"),
            ("in_off", "u32"),
            ("out_off", "u32"),
            *_push(*(f"d{i}" for i in range(RANK))),
            *_push(*(f"si{i}" for i in range(RANK))),
            *_push(*(f"so{i}" for i in range(RANK))),
        ),
        spec=(("WG", 64),),
        workgroups=_grid_workgroups(lambda p: int(p["n"])),
        reference=_copy_ref,
        exact=_always,
        extents=_guarded("copy_strided", _copy_extents),
        spec_bounds={"WG": WG_RANGE},
    )
)
_doc(
    COPY_STRIDED,
    """y[out_off + idx.so] = x[in_off + idx.si] for every idx of the 6-D
space d0..d5 (32-bit words): view/permute/transpose/slice/select/expand/repeat/flatten,
and cat by writing each input into its slice of y (y is read-write: the words of y
outside the written set are kept). push n, in_off, out_off, d*, si*, so*; spec WG.""",
)


def _fill_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    n = int(push["n"])
    i = np.arange(n)
    if _spec(spec, "MODE", 0) == 0:
        start = np.uint32(push["start"]).view(F32)
        step = np.uint32(push["step"]).view(F32)
        _store(buffers, "y", (start + i.astype(F32) * step).astype(F32))
    else:
        start = int(np.uint32(push["start"]).view(np.int32))
        step = int(np.uint32(push["step"]).view(np.int32))
        _store(buffers, "y", (start + i * step).astype(np.int32))


FILL = register(
    KernelSpec(
        name="fill",
        glsl="fill.glsl",
        bindings=(_b("y", "f32", True),),
        push=(("n", "u32"), ("start", "u32"), ("step", "u32")),
        spec=(("MODE", 0), ("WG", 64)),
        workgroups=_grid_workgroups(lambda p: int(p["n"])),
        reference=_fill_ref,
        exact=_always,
        extents=_guarded("fill", _per_element("y")),
        spec_bounds={"MODE": FLAG, "WG": WG_RANGE},
    )
)
_doc(
    FILL,
    """y[i] = start + i * step (arange; step 0 = fill). MODE 0 f32, 1 i32; start
and step are pushed as raw 32-bit words (`word_of(value, dtype)`).""",
)


def word_of(value: float, dtype: str = "f32") -> int:
    """The 32-bit word of a scalar (for push constants declared as raw words)."""
    np_type = {"f32": np.float32, "i32": np.int32, "u32": np.uint32}[dtype]
    return int(np.asarray(value, dtype=np_type).view(np.uint32))


# ----- row kernels -----------------------------------------------------------------------


def _rows(buffers: dict[str, np.ndarray], name: str, push: PushValues) -> np.ndarray:
    rows, cols = int(push["rows"]), int(push["cols"])
    return _f32(buffers[name])[: rows * cols].reshape(rows, cols)


def _reduce_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    x = _rows(buffers, "x", push)
    op = _spec(spec, "OP", 0)
    if op in (0, 1):
        r = torch_sum_last(x)  # torch's CPU order, as the kernel adds
        if op == 1:
            r = r / F32(x.shape[1])
    elif op in (4, 5):
        # torch: the first extreme; NaN is the extreme (numpy's argmax/argmin agree)
        index = np.argmax(x, axis=1) if op == 4 else np.argmin(x, axis=1)
        _store(buffers, "y", index.astype(np.int32).view(F32))
        return
    else:
        r = x.max(axis=1) if op == 2 else x.min(axis=1)
    _store(buffers, "y", r.astype(F32))


def _reduce_extents(push: PushValues, spec: SpecValues) -> Extents:
    """reduce_rows.glsl: row r < rows reads x[r * cols + c] for c < cols (the chains
    `base + i * 32 + t` with i < cols / 32, the leftover vectors `base + v * 8 + t` with
    v < cols / 8 and the scalar tail all stay below cols) and writes y[r] (also when
    cols = 0)."""
    rows, cols = _rows_cols(push)
    return {"x": rows * cols, "y": rows}


REDUCE_ROWS = register(
    KernelSpec(
        name="reduce_rows",
        glsl="reduce_rows.glsl",
        bindings=(_b("x", "f32"), _b("y", "f32", True)),
        push=_push("rows", "cols"),
        spec=(("OP", 0),),
        local_size=(32, 1, 1),
        workgroups=_rows_workgroups,
        reference=_reduce_ref,
        exact=_always,
        extents=_guarded("reduce_rows", _reduce_extents),
        spec_bounds={"OP": (0, max(REDUCE_OPS.values()))},
    )
)
_doc(
    REDUCE_ROWS,
    """y[r] = reduce(x[r, :]) over the last dim of [rows, cols]; OP
(REDUCE_OPS: sum, mean, max, min). Other reduction dims: permute with copy_strided first.""",
)


def _softmax_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    x = _rows(buffers, "x", push).astype(np.float64)
    z = x - x.max(axis=1, keepdims=True)
    lse = np.log(np.exp(z).sum(axis=1, keepdims=True))
    r = z - lse if _spec(spec, "LOG", 0) else np.exp(z - lse)
    _store(buffers, "y", r.astype(F32))


def _softmax_extents(push: PushValues, spec: SpecValues) -> Extents:
    """softmax_rows.glsl: x[r * cols + c] and y[r * cols + c] for r < rows, c < cols."""
    rows, cols = _rows_cols(push)
    return {"x": rows * cols, "y": rows * cols}


SOFTMAX_ROWS = register(
    KernelSpec(
        name="softmax_rows",
        glsl="softmax_rows.glsl",
        bindings=(_b("x", "f32"), _b("y", "f32", True)),
        push=_push("rows", "cols"),
        spec=(("LOG", 0),),
        workgroups=_rows_workgroups,
        reference=_softmax_ref,
        extents=_guarded("softmax_rows", _softmax_extents),
        spec_bounds={"LOG": FLAG},
    )
)
_doc(SOFTMAX_ROWS, "softmax (LOG = 1: log_softmax) over the last dim of [rows, cols].")


def _layer_norm_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    x = _rows(buffers, "x", push).astype(np.float64)
    cols = x.shape[1]
    if _spec(spec, "RMS", 0):
        y = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + float(F32(push["eps"])))
    else:
        mean = x.mean(axis=1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
        y = (x - mean) / np.sqrt(var + float(F32(push["eps"])))
    if _spec(spec, "HAS_WEIGHT", 1):
        y = y * _f32(buffers["weight"])[:cols]
    if _spec(spec, "HAS_BIAS", 1):
        y = y + _f32(buffers["bias"])[:cols]
    _store(buffers, "y", y.astype(F32))


def _layer_norm_extents(push: PushValues, spec: SpecValues) -> Extents:
    """layer_norm_rows.glsl: x[r * cols + c], y[r * cols + c] (r < rows, c < cols),
    w[c] (HAS_WEIGHT), bias[c] (HAS_BIAS)."""
    rows, cols = _rows_cols(push)
    per_col = cols if rows else 0
    return {
        "x": rows * cols,
        "weight": per_col if int(spec["HAS_WEIGHT"]) == 1 else 0,
        "bias": per_col if int(spec["HAS_BIAS"]) == 1 else 0,
        "y": rows * cols,
    }


LAYER_NORM_ROWS = register(
    KernelSpec(
        name="layer_norm_rows",
        glsl="layer_norm_rows.glsl",
        bindings=(_b("x", "f32"), _b("weight", "f32"), _b("bias", "f32"), _b("y", "f32", True)),
        push=(("rows", "u32"), ("cols", "u32"), ("eps", "f32")),
        spec=(("HAS_WEIGHT", 1), ("HAS_BIAS", 1), ("RMS", 0)),
        workgroups=_rows_workgroups,
        reference=_layer_norm_ref,
        extents=_guarded("layer_norm_rows", _layer_norm_extents),
        spec_bounds={"HAS_WEIGHT": FLAG, "HAS_BIAS": FLAG, "RMS": FLAG},
    )
)
_doc(
    LAYER_NORM_ROWS,
    """layer_norm (RMS = 0; biased variance) or rms_norm (RMS = 1) over
the last dim of [rows, cols], optional weight/bias [cols]; push rows, cols, eps.""",
)


# ----- matmul, conv, pooling, gather, attention ---------------------------------------------


def _matmul_workgroups(push: PushValues, spec: SpecValues) -> tuple[int, int, int]:
    m, n, batch = int(push["M"]), int(push["N"]), int(push["batch"])
    mt = _spec(spec, "MT", 1) if _spec(spec, "TRANS_B", 1) else 1
    return (_groups(n, _spec(spec, "WG", 64)), _groups(m, mt), max(1, min(batch, MAX_GROUPS)))


def _matmul_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    m, n, k, batch = (int(push[x]) for x in ("M", "N", "K", "batch"))
    a_bs, b_bs = int(push["a_bs"]), int(push["b_bs"])
    a, b = _f32(buffers["a"]).astype(np.float64), _f32(buffers["b"]).astype(np.float64)
    out = np.empty((batch, m, n), dtype=np.float64)
    for z in range(batch):
        az = a[z * a_bs : z * a_bs + m * k].reshape(m, k)
        bz = b[z * b_bs : z * b_bs + n * k]
        bz = bz.reshape(n, k).T if _spec(spec, "TRANS_B", 1) else bz.reshape(k, n)
        out[z] = az @ bz
    if _spec(spec, "HAS_BIAS", 0):
        out = out + _f32(buffers["bias"])[:n]
    _store(buffers, "out", out.astype(F32))


def _matmul_extents(push: PushValues, spec: SpecValues) -> Extents:
    """matmul.glsl: for z < batch, m < M, n < N: a[z*a_bs + m*K + k], b[z*b_bs + k*N + n]
    (TRANS_B 0) or b[z*b_bs + n*K + k] (TRANS_B 1: rows clamped to M - 1, columns to
    N - 1; the vec4 path reads a4/b4 at the same words, 16-byte aligned as it requires
    K, a_bs, b_bs % 4 == 0), bias[n] (HAS_BIAS), out[z*M*N + m*N + n]. Both layouts of b
    end at word (batch - 1) * b_bs + K * N."""
    m, n, k, batch, a_bs, b_bs = _ints(push, "M", "N", "K", "batch", "a_bs", "b_bs")
    ext = dict.fromkeys(("a", "b", "bias", "out"), 0)
    if 0 in (m, n, batch):
        return ext
    ext["out"] = batch * m * n
    if int(spec["HAS_BIAS"]) == 1:
        ext["bias"] = n
    if k:
        ext["a"] = (batch - 1) * a_bs + m * k
        ext["b"] = (batch - 1) * b_bs + n * k
    return ext


MATMUL = register(
    KernelSpec(
        name="matmul",
        glsl="matmul.glsl",
        bindings=(_b("a", "f32"), _b("b", "f32"), _b("bias", "f32"), _b("out", "f32", True)),
        push=_push("M", "N", "K", "batch", "a_bs", "b_bs"),
        spec=(("TRANS_B", 1), ("HAS_BIAS", 0), ("NPW", 1), ("MT", 1), ("WG", 64)),
        workgroups=_matmul_workgroups,
        reference=_matmul_ref,
        extents=_guarded("matmul", _matmul_extents),
        spec_bounds={
            "TRANS_B": FLAG,
            "HAS_BIAS": FLAG,
            "NPW": TILE_RANGE,
            "MT": TILE_RANGE,
            "WG": WG_RANGE,
        },
    )
)
_doc(
    MATMUL,
    """out[z] = a[z] @ (TRANS_B ? b[z].T : b[z]) (+ bias), a [batch, M, K] (batch
stride a_bs), b [batch, K, N] or [batch, N, K] (stride b_bs, 0 = shared), out contiguous
[batch, M, N]. TRANS_B = 1 is the GEMV/linear path (one column x MT rows per
invocation, 16-byte loads when K and the batch strides are multiples of 4; NPW unused);
TRANS_B = 0 is one output per invocation. workgroups (ceil(N/WG), ceil(M/MT) or M, batch).""",
)


def conv_out(size: int, kernel: int, stride: int, pad: int, dilation: int) -> int:
    return (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1


def _conv_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    import torch  # the reference of a float conv is torch's own (exact up to summation order)

    x, w, bias = _conv_arrays(buffers, push)
    has_bias = _spec(spec, "HAS_BIAS", 0)
    y = _torch_conv(torch, x, w, bias if has_bias else None, push)
    _store(buffers, "y", y.astype(F32))


def _conv_arrays(buffers: dict[str, np.ndarray], push: PushValues):
    n, c, h, w_ = (int(push[k]) for k in ("N", "C", "H", "W"))
    oc, kh, kw, g = (int(push[k]) for k in ("OC", "KH", "KW", "groups"))
    x = _f32(buffers["x"])[: n * c * h * w_].reshape(n, c, h, w_)
    w = _f32(buffers["w"])[: oc * (c // g) * kh * kw].reshape(oc, c // g, kh, kw)
    return x, w, _f32(buffers["bias"])[:oc]


def _torch_conv(torch: Any, x: np.ndarray, w: np.ndarray, bias: Any, push: PushValues):
    y = torch.nn.functional.conv2d(
        torch.from_numpy(np.asarray(x, dtype=np.float64)),
        torch.from_numpy(np.asarray(w, dtype=np.float64)),
        None if bias is None else torch.from_numpy(np.asarray(bias, dtype=np.float64)),
        stride=(int(push["sh"]), int(push["sw"])),
        padding=(int(push["ph"]), int(push["pw"])),
        dilation=(int(push["dh"]), int(push["dw"])),
        groups=int(push["groups"]),
    )
    return y.numpy()


def _conv_extents(push: PushValues, spec: SpecValues, quantized: bool) -> Extents:
    """conv2d.glsl / conv2d_q8.glsl: output i < N*OC*OH*OW (n, oc, oh, ow), g = oc / (OC /
    groups), channels g*cg + c (c < cg = C / groups; OC need not divide evenly, so g can
    reach (OC - 1) / ocg); x[((n*C + g*cg + c)*H + ih)*W + iw] only for 0 <= ih < H,
    0 <= iw < W (int checks); tap k = (c*KH + kh)*KW + kw of w[((oc*cg + c)*KH + kh)*KW
    + kw] (float) or of the int8 row w[oc*row_words + k/4] (q8); scales[oc], zeros[oc]
    (HAS_ZERO_POINT), bias[oc] (HAS_BIAS), y[i]."""
    n, c, h, w, oc, oh, ow, kh, kw = _ints(push, "N", "C", "H", "W", "OC", "OH", "OW", "KH", "KW")
    groups = int(push["groups"])
    total = _count(n * oc * oh * ow, "N * OC * OH * OW")
    names = ("x", "w", "scales", "zeros", "bias", "y") if quantized else ("x", "w", "bias", "y")
    ext = dict.fromkeys(names, 0)
    _nonzero(push, "groups")  # cg = C / groups runs before the loop
    if total == 0:
        return ext
    cg, ocg = c // groups, oc // groups
    if ocg == 0:
        raise ValueError(f"OC = {oc} < groups = {groups}: the shader divides by OC / groups")
    ext["y"] = total
    taps = cg * kh * kw
    if taps and h and w:
        channels = ((oc - 1) // ocg + 1) * cg  # of the last image, read by the last group
        ext["x"] = ((n - 1) * c + channels) * h * w
        if quantized:
            ext["w"] = (oc - 1) * int(push["row_words"]) + (taps - 1) // 4 + 1
        else:
            ext["w"] = oc * taps
    if quantized:
        ext["scales"] = oc
        if int(spec["HAS_ZERO_POINT"]) == 1:
            ext["zeros"] = oc
    if int(spec["HAS_BIAS"]) == 1:
        ext["bias"] = oc
    return ext


def _conv2d_extents(push: PushValues, spec: SpecValues) -> Extents:
    """conv2d.glsl (float weights [OC, C / groups, KH, KW]): `_conv_extents`."""
    return _conv_extents(push, spec, False)


def _conv2d_q8_extents(push: PushValues, spec: SpecValues) -> Extents:
    """conv2d_q8.glsl (int8 weight rows of row_words words): `_conv_extents`."""
    return _conv_extents(push, spec, True)


CONV2D = register(
    KernelSpec(
        name="conv2d",
        glsl="conv2d.glsl",
        bindings=(_b("x", "f32"), _b("w", "f32"), _b("bias", "f32"), _b("y", "f32", True)),
        push=(
            *_push("N", "C", "H", "W", "OC", "OH", "OW", "KH", "KW"),
            *_push("sh", "sw", "ph", "pw", "dh", "dw", kind="i32"),
            ("groups", "u32"),
        ),
        spec=(("HAS_BIAS", 0), ("WG", 64)),
        workgroups=_grid_workgroups(
            lambda p: int(p["N"]) * int(p["OC"]) * int(p["OH"]) * int(p["OW"])
        ),
        reference=_conv_ref,
        extents=_guarded("conv2d", _conv2d_extents),
        spec_bounds={"HAS_BIAS": FLAG, "WG": WG_RANGE},
    )
)
_doc(CONV2D, """Float NCHW conv2d (stride/pad/dilation/groups, optional bias).""")


def _pool_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    planes, h, w = int(push["planes"]), int(push["H"]), int(push["W"])
    oh_n, ow_n = int(push["OH"]), int(push["OW"])
    kh, kw, sh, sw = (int(push[k]) for k in ("KH", "KW", "sh", "sw"))
    ph, pw, dh, dw = (int(push[k]) for k in ("ph", "pw", "dh", "dw"))
    x = _f32(buffers["x"])[: planes * h * w].reshape(planes, h, w)
    out = np.empty((planes, oh_n, ow_n), dtype=F32)
    is_max = _spec(spec, "OP", 0) == 0
    include_pad = _spec(spec, "COUNT_INCLUDE_PAD", 1)
    div_override = int(push["divisor_override"])
    for oh in range(oh_n):
        for ow in range(ow_n):
            h0, w0 = oh * sh - ph, ow * sw - pw
            if is_max:
                hs = [h0 + i * dh for i in range(kh) if 0 <= h0 + i * dh < h]
                ws = [w0 + j * dw for j in range(kw) if 0 <= w0 + j * dw < w]
                win = x[:, hs][:, :, ws].reshape(planes, -1)
                out[:, oh, ow] = win.max(axis=1) if win.shape[1] else -np.inf
            else:
                h1, w1 = min(h0 + kh, h + ph), min(w0 + kw, w + pw)
                pool = (h1 - h0) * (w1 - w0)
                hs_, ws_, he, we = max(h0, 0), max(w0, 0), min(h1, h), min(w1, w)
                s = sequential_sum(x[:, hs_:he, ws_:we])  # torch's row-major f32 order
                div = div_override or (pool if include_pad else (he - hs_) * (we - ws_))
                out[:, oh, ow] = s / F32(div)
    _store(buffers, "y", out)


def _pool_extents(push: PushValues, spec: SpecValues) -> Extents:
    """pool2d.glsl: output i < planes*OH*OW reads x[plane * uint(H*W) + uint(ih*W + iw)]
    only for 0 <= ih < H, 0 <= iw < W (max: the bounds checks; avg: the window clipped
    to the input), in int32 arithmetic; writes y[i]."""
    planes, h, w, oh, ow = _ints(push, "planes", "H", "W", "OH", "OW")
    total = _count(planes * oh * ow, "planes * OH * OW")
    x = 0
    if total and h > 0 and w > 0:
        if h * w >= 1 << 31:
            raise ValueError(f"H * W = {h * w} overflows the shader's int32")
        x = planes * h * w
    return {"x": x, "y": total}


POOL2D = register(
    KernelSpec(
        name="pool2d",
        glsl="pool2d.glsl",
        bindings=(_b("x", "f32"), _b("y", "f32", True)),
        push=(
            ("planes", "u32"),
            ("H", "i32"),
            ("W", "i32"),
            ("OH", "u32"),
            ("OW", "u32"),
            *_push("KH", "KW", "sh", "sw", "ph", "pw", "dh", "dw", "divisor_override", kind="i32"),
        ),
        spec=(("OP", 0), ("COUNT_INCLUDE_PAD", 1), ("WG", 64)),
        workgroups=_grid_workgroups(lambda p: int(p["planes"]) * int(p["OH"]) * int(p["OW"])),
        reference=_pool_ref,
        exact=_always,
        extents=_guarded("pool2d", _pool_extents),
        spec_bounds={"OP": (0, max(POOL_OPS.values())), "COUNT_INCLUDE_PAD": FLAG, "WG": WG_RANGE},
    )
)
_doc(
    POOL2D,
    """max (OP 0) / avg (OP 1) pool2d over [planes, H, W] -> [planes, OH, OW];
OH/OW computed by the caller as torch does (ceil_mode included); avg divisor as torch
(COUNT_INCLUDE_PAD, divisor_override when nonzero).""",
)


def _adaptive_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    planes, h, w, oh_n, ow_n = (int(push[k]) for k in ("planes", "H", "W", "OH", "OW"))
    x = _f32(buffers["x"])[: planes * h * w].reshape(planes, h, w)
    out = np.empty((planes, oh_n, ow_n), dtype=F32)
    for oh in range(oh_n):
        hs, he = oh * h // oh_n, _ceil((oh + 1) * h, oh_n)
        for ow in range(ow_n):
            ws, we = ow * w // ow_n, _ceil((ow + 1) * w, ow_n)
            # torch: row-major sum, then / height / width (f32)
            total = sequential_sum(x[:, hs:he, ws:we])
            out[:, oh, ow] = total / F32(he - hs) / F32(we - ws)
    _store(buffers, "y", out)


def _adaptive_extents(push: PushValues, spec: SpecValues) -> Extents:
    """adaptive_avg_pool2d.glsl: output i < planes*OH*OW (plane, oh, ow) reads
    x[plane*H*W + h*W + w] for h in [oh*H / OH, ceil((oh + 1)*H / OH)) (inside [0, H),
    likewise w), computed in uint32; writes y[i]."""
    planes, h, w, oh, ow = _ints(push, "planes", "H", "W", "OH", "OW")
    total = _count(planes * oh * ow, "planes * OH * OW")
    if total == 0:
        return {"x": 0, "y": 0}
    _count(oh * (h + 1) - 1, "OH * H + OH - 1")  # the window end (oh + 1) * H + OH - 1
    _count(ow * (w + 1) - 1, "OW * W + OW - 1")
    return {"x": planes * h * w, "y": total}


ADAPTIVE_AVG_POOL2D = register(
    KernelSpec(
        name="adaptive_avg_pool2d",
        glsl="adaptive_avg_pool2d.glsl",
        bindings=(_b("x", "f32"), _b("y", "f32", True)),
        push=_push("planes", "H", "W", "OH", "OW"),
        spec=(("WG", 64),),
        workgroups=_grid_workgroups(lambda p: int(p["planes"]) * int(p["OH"]) * int(p["OW"])),
        reference=_adaptive_ref,
        exact=_always,
        extents=_guarded("adaptive_avg_pool2d", _adaptive_extents),
        spec_bounds={"WG": WG_RANGE},
    )
)
_doc(ADAPTIVE_AVG_POOL2D, "adaptive_avg_pool2d over [planes, H, W] -> [planes, OH, OW].")


def _row_index(
    buffers: dict[str, np.ndarray], idx: np.ndarray, v: int
) -> tuple[np.ndarray, np.ndarray]:
    """Rows of `idx` in a table of `v` rows (a negative index in [-v, 0) reads row
    idx + v) and which of them are read (the others give 0). Any index outside [0, v),
    the range torch's embedding and index_select accept, sets the status word (as the
    shaders' atomicOr): a program with one is an error, whatever the row read."""
    raw = idx.astype(np.int64)
    r = np.where(raw < 0, raw + v, raw)
    ok = (r >= 0) & (r < v)
    if bool(((raw < 0) | (raw >= v)).any()):
        status = buffers.get(STATUS)
        word = np.uint32(0) if status is None else _words(status)[0]
        _store(buffers, STATUS, np.array([word | np.uint32(1)], np.uint32))
    return np.where(ok, r, 0), ok


def _status() -> Binding:
    """The index status word (registry.STATUS): last binding, one u32, written."""
    return _b(STATUS, "u32", True)


def _gather_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    n, d, v = int(push["n"]), int(push["D"]), int(push["V"])
    table = _words(buffers["table"])[: v * d].reshape(v, d)
    rows, ok = _row_index(buffers, _i32(buffers["idx"])[:n], v)
    _store(buffers, "y", np.where(ok[:, None], table[rows], np.uint32(0)).astype(np.uint32))


def _index_rows(v: int) -> None:
    """Row indices read from a buffer are checked in the shader as `r < int(p.V)` (after
    `r += int(p.V)` for negative r): V must be a valid int32."""
    if v >= 1 << 31:
        raise ValueError(f"V = {v} does not fit the shader's int32 row check")


def _gather_extents(push: PushValues, spec: SpecValues) -> Extents:
    """gather_rows.glsl: output i < n*D reads idx[i / D] and, for a row r in [0, V)
    (checked in the shader), table[r*D + i % D]; writes y[i], and status[0] for an
    index outside [0, V)."""
    n, d, v = _ints(push, "n", "D", "V")
    total = _count(n * d, "n * D")
    _index_rows(v)
    return {"table": v * d if total else 0, "idx": n if total else 0, "y": total, STATUS: 1}


GATHER_ROWS = register(
    KernelSpec(
        name="gather_rows",
        glsl="gather_rows.glsl",
        bindings=(_b("table", "f32"), _b("idx", "i32"), _b("y", "f32", True), _status()),
        push=_push("n", "D", "V"),
        spec=(("WG", 64),),
        workgroups=_grid_workgroups(lambda p: int(p["n"]) * int(p["D"])),
        reference=_gather_ref,
        exact=_always,
        extents=_guarded("gather_rows", _gather_extents),
        spec_bounds={"WG": WG_RANGE},
    )
)
_doc(
    GATHER_ROWS,
    """y[i, :] = table[idx[i], :] ([V, D] 32-bit words; an index in [-V, 0)
reads row idx + V, one outside [-V, V) reads 0; any index outside [0, V) sets
status[0] = 1, an error for the program): embedding, index_select on dim 0,
gathers of precomputed offsets.""",
)


def _sdpa_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    bh, heads, lq, s, e, ev = (int(push[k]) for k in ("BH", "H", "L", "S", "E", "EV"))
    q = _f32(buffers["q"])[: bh * lq * e].reshape(bh, lq, e).astype(np.float64)
    k = _f32(buffers["k"])[: bh * s * e].reshape(bh, s, e).astype(np.float64)
    v = _f32(buffers["v"])[: bh * s * ev].reshape(bh, s, ev).astype(np.float64)
    scores = (q @ k.transpose(0, 2, 1)) * float(F32(push["scale"]))
    if _spec(spec, "HAS_MASK", 0):
        mb, mh, ml, ms = (int(push[x]) for x in ("mb", "mh", "ml", "ms"))
        b_i = (np.arange(bh) // heads)[:, None, None]
        h_i = (np.arange(bh) % heads)[:, None, None]
        idx = b_i * mb + h_i * mh + np.arange(lq)[None, :, None] * ml + np.arange(s) * ms
        scores = scores + _f32(buffers["mask"])[idx].astype(np.float64)
    if _spec(spec, "CAUSAL", 0):
        scores = np.where(np.arange(s)[None, :] <= np.arange(lq)[:, None], scores, -np.inf)
    with np.errstate(invalid="ignore"):
        m = scores.max(axis=-1, keepdims=True)
        p = np.exp(scores - m)
        out = (p / p.sum(axis=-1, keepdims=True)) @ v
    _store(buffers, "out", out.astype(F32))


def _sdpa_extents(push: PushValues, spec: SpecValues) -> Extents:
    """sdpa.glsl: query row = bh*L + l < BH*L reads q[row*E + e], keys s < S (CAUSAL:
    s <= l, so s < min(S, L)) of k[(bh*S + s)*E + e] and v[(bh*S + s)*EV + e], the mask
    at (bh / H)*mb + (bh % H)*mh + l*ml + s*ms (HAS_MASK), and reads/writes
    out[row*EV + e]."""
    bh, heads, lq, s, e, ev = _ints(push, "BH", "H", "L", "S", "E", "EV")
    rows = _count(bh * lq, "BH * L")
    ext = dict.fromkeys(("q", "k", "v", "mask", "out"), 0)
    if rows == 0:
        return ext
    ext["out"] = rows * ev
    causal = int(spec["CAUSAL"]) == 1
    keys = min(s, lq) if causal else s  # keys a row can reach: s < keys
    if keys == 0:
        return ext
    ext["q"] = rows * e
    ext["k"] = ((bh - 1) * s + keys) * e
    ext["v"] = ((bh - 1) * s + keys) * ev
    if int(spec["HAS_MASK"]) == 1:
        _nonzero(push, "H")
        mb, mh, ml, ms = _ints(push, "mb", "mh", "ml", "ms")
        head_max = _max_digits(bh, (-(-bh // heads), heads), [lambda b: b * mb, lambda h: h * mh])
        ext["mask"] = head_max + (lq - 1) * ml + (keys - 1) * ms + 1
    return ext


SDPA = register(
    KernelSpec(
        name="sdpa",
        glsl="sdpa.glsl",
        bindings=(
            _b("q", "f32"),
            _b("k", "f32"),
            _b("v", "f32"),
            _b("mask", "f32"),
            _b("out", "f32", True),
        ),
        push=(
            *_push("BH", "H", "L", "S", "E", "EV"),
            ("scale", "f32"),
            *_push("mb", "mh", "ml", "ms"),
        ),
        spec=(("HAS_MASK", 0), ("CAUSAL", 0), ("WG", 64)),
        workgroups=_grid_workgroups(lambda p: int(p["BH"]) * int(p["L"])),
        reference=_sdpa_ref,
        extents=_guarded("sdpa", _sdpa_extents),
        spec_bounds={"HAS_MASK": FLAG, "CAUSAL": FLAG, "WG": WG_RANGE},
    )
)
_doc(
    SDPA,
    """scaled_dot_product_attention on rows: q [BH, L, E], k [BH, S, E], v [BH, S,
EV] -> out [BH, L, EV]; scale pushed; optional additive float mask read at
b*mb + h*mh + l*ml + s*ms (b = bh / H, h = bh % H; 0 strides broadcast; boolean masks
become 0/-inf at compile time); CAUSAL = torch's is_causal (top-left aligned). Heads
of k/v must match q's (expand GQA first). One invocation per query row.""",
)


# ----- standalone quantization --------------------------------------------------------------


def _qpt_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    n = int(push["n"])
    x = _f32(buffers["x"])[:n]
    q = _quant(
        x,
        push["inv_scale"],
        push["zp"],
        push["qmin"],
        push["qmax"],
        bool(_spec(spec, "ZP_BEFORE_ROUND", 0)),
    )
    _store(buffers, "q", q.astype(np.int32))


QUANTIZE_PER_TENSOR = register(
    KernelSpec(
        name="quantize_per_tensor",
        glsl="quantize_per_tensor.glsl",
        bindings=(_b("x", "f32"), _b("q", "i32", True)),
        push=(("n", "u32"), ("inv_scale", "f32"), ("zp", "i32"), ("qmin", "i32"), ("qmax", "i32")),
        spec=(("ZP_BEFORE_ROUND", 0), ("WG", 64)),
        workgroups=_grid_workgroups(lambda p: int(p["n"])),
        reference=_qpt_ref,
        exact=_always,
        extents=_guarded("quantize_per_tensor", _per_element("x", "q")),
        spec_bounds={"ZP_BEFORE_ROUND": FLAG, "WG": WG_RANGE},
    )
)
_doc(
    QUANTIZE_PER_TENSOR,
    """q = clamp(roundEven(x * inv_scale) + zp, qmin, qmax) in f32
(inv_scale = f32(1 / scale) computed in double by the host, as PT2E does); bit-exact.""",
)


def _dequantize_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    n = int(push["n"])
    dims = [int(push[f"d{i}"]) for i in range(4)]
    blocks = [int(push[f"b{i}"]) for i in range(4)]
    pstr = [int(push[f"ps{i}"]) for i in range(4)]
    idx = np.indices(dims).reshape(4, -1)
    blk = sum((idx[j] // blocks[j]) * pstr[j] for j in range(4))
    bits = _spec(spec, "BITS", 32)
    if bits == 32:
        v = _i32(buffers["data"])[:n].astype(np.int64)
    else:
        from qopt.backends.vulkan.packing import unpack_bits

        rows = n // dims[3]
        words = _words(buffers["data"])[: rows * int(push["row_words"])]
        v = unpack_bits(words.reshape(rows, -1), bits, dims[3], int(push["lo"])).reshape(-1)
    f = v.astype(F32)
    if _spec(spec, "HAS_ZERO_POINT", 0):
        f = f - _i32(buffers["zeros"])[blk].astype(F32)
    _store(buffers, "y", (f * _f32(buffers["scales"])[blk]).astype(F32))


def _dequantize_extents(push: PushValues, spec: SpecValues) -> Extents:
    """dequantize.glsl: element i < n (4-D index idx of d0..d3) writes y[i] and reads
    scales / zeros (HAS_ZERO_POINT) at blk = sum_j (idx_j / b_j) * ps_j, and data[i]
    (BITS 32) or the packed word data[(i / d3) * row_words + (i % d3) / (32 / BITS)]."""
    n = int(push["n"])
    bits = _one_of(spec, "BITS", (4, 8, 32))
    ext = dict.fromkeys(("data", "scales", "zeros", "y"), 0)
    if n == 0:
        return ext
    dims = tuple(int(push[f"d{j}"]) for j in range(4))
    _nonzero(push, *(f"d{j}" for j in range(4)), *(f"b{j}" for j in range(4)))
    blocks = [(int(push[f"b{j}"]), int(push[f"ps{j}"])) for j in range(4)]
    blk = _max_digits(n, dims, [lambda i, b=b, s=s: (i // b) * s for b, s in blocks])
    ext["y"] = n
    ext["scales"] = blk + 1
    if int(spec["HAS_ZERO_POINT"]) == 1:
        ext["zeros"] = blk + 1
    if bits == 32:
        ext["data"] = n
    else:
        cols, row_words, vpw = dims[3], int(push["row_words"]), 32 // bits
        row, col = divmod(n - 1, cols)  # the last element; the row before may end further
        last = row * row_words + col // vpw
        if row:
            last = max(last, (row - 1) * row_words + (cols - 1) // vpw)
        ext["data"] = last + 1
    return ext


DEQUANTIZE = register(
    KernelSpec(
        name="dequantize",
        glsl="dequantize.glsl",
        bindings=(_b("data", "i32"), _b("scales", "f32"), _b("zeros", "i32"), _b("y", "f32", True)),
        push=(
            ("n", "u32"),
            *_push(*(f"d{i}" for i in range(4))),
            *_push(*(f"b{i}" for i in range(4))),
            *_push(*(f"ps{i}" for i in range(4))),
            ("row_words", "u32"),
            ("lo", "i32"),
        ),
        spec=(("BITS", 32), ("HAS_ZERO_POINT", 0), ("WG", 64)),
        workgroups=_grid_workgroups(lambda p: int(p["n"])),
        reference=_dequantize_ref,
        exact=_always,
        extents=_guarded("dequantize", _dequantize_extents),
        spec_bounds={"BITS": (4, 32), "HAS_ZERO_POINT": FLAG, "WG": WG_RANGE},
    )
)
_doc(
    DEQUANTIZE,
    """y = (v - zp[blk]) * scale[blk] in f32 over a rank <= 4 shape d0..d3
(leading 1s) with block sizes b0..b3 and parameter strides ps0..ps3 (row-major over the
block grid); BITS 32: v = data (i32 per element); BITS 4/8: data packed with
packing.pack_bits along the last dim (row_words, lo). Bit-exact.""",
)


def _choose_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    x = _rows(buffers, "x", push)
    qmin, qmax = int(push["qmin"]), int(push["qmax"])
    eps = F32(push["eps"])
    mn = np.minimum(x.min(axis=1), F32(0))
    mx = np.maximum(x.max(axis=1), F32(0))
    mapping = _spec(spec, "MAPPING", 0)
    with np.errstate(all="ignore"):
        if mapping == 0:
            scale = np.maximum((mx - mn) / F32(qmax - qmin), eps)
            zp = np.clip(F32(qmin) - np.round(mn / scale), F32(qmin), F32(qmax))
        else:
            if mapping == 1:
                scale = np.maximum(-mn, mx) / F32(F32(qmax - qmin) / F32(2))
            else:
                smin, smax = mn / F32(qmin), mx / F32(qmax)
                scale = np.where(smin > smax, smin, smax)
            scale = np.maximum(scale, eps)
            zp = np.full_like(scale, int((qmax + qmin + 1) / 2))
    _store(buffers, "scale", scale.astype(F32))
    _store(buffers, "zp", zp.astype(np.int32))


def _choose_extents(push: PushValues, spec: SpecValues) -> Extents:
    """choose_qparams_rows.glsl: row r < rows reads x[r * cols + c] (c < cols) and writes
    scale_out[r], zp_out[r]."""
    rows, cols = _rows_cols(push)
    return {"x": rows * cols, "scale": rows, "zp": rows}


CHOOSE_QPARAMS_ROWS = register(
    KernelSpec(
        name="choose_qparams_rows",
        glsl="choose_qparams_rows.glsl",
        bindings=(_b("x", "f32"), _b("scale", "f32", True), _b("zp", "i32", True)),
        push=(("rows", "u32"), ("cols", "u32"), ("qmin", "i32"), ("qmax", "i32"), ("eps", "f32")),
        spec=(("MAPPING", 0),),
        workgroups=_rows_workgroups,
        reference=_choose_ref,
        exact=_always,
        extents=_guarded("choose_qparams_rows", _choose_extents),
        spec_bounds={"MAPPING": (0, max(MAPPINGS.values()))},
    )
)
_doc(
    CHOOSE_QPARAMS_ROWS,
    """Per-row (per-token; per-tensor: rows = 1) scale f32 / zp i32
as quant.choose_qparams computes them in f32; MAPPING (MAPPINGS). Bit-exact (with an
IEEE-exact float divide, as lavapipe has).""",
)


def _quantize_rows_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    x = _rows(buffers, "x", push)
    rows = x.shape[0]
    scale = _f32(buffers["scale"])[:rows]
    zp = _i32(buffers["zp"])[:rows].astype(F32)
    inv = (F32(1) / scale).astype(F32)
    v = x * inv[:, None]
    if _spec(spec, "ZP_BEFORE_ROUND", 0):
        r = np.round(v + zp[:, None])
    else:
        r = np.round(v) + zp[:, None]
    q = np.clip(r, F32(push["qmin"]), F32(push["qmax"]))
    _store(buffers, "q", q.astype(np.int32))


def _quantize_rows_extents(push: PushValues, spec: SpecValues) -> Extents:
    """quantize_rows.glsl: element i < rows*cols reads x[i], scales[i / cols], zps[i / cols]
    and writes q[i]."""
    rows, cols = _rows_cols(push)
    total = _count(rows * cols, "rows * cols")
    per_row = rows if total else 0
    return {"x": total, "scale": per_row, "zp": per_row, "q": total}


QUANTIZE_ROWS = register(
    KernelSpec(
        name="quantize_rows",
        glsl="quantize_rows.glsl",
        bindings=(_b("x", "f32"), _b("scale", "f32"), _b("zp", "i32"), _b("q", "i32", True)),
        push=(("rows", "u32"), ("cols", "u32"), ("qmin", "i32"), ("qmax", "i32")),
        spec=(("ZP_BEFORE_ROUND", 0), ("WG", 64)),
        workgroups=_grid_workgroups(lambda p: int(p["rows"]) * int(p["cols"])),
        reference=_quantize_rows_ref,
        exact=_always,
        extents=_guarded("quantize_rows", _quantize_rows_extents),
        spec_bounds={"ZP_BEFORE_ROUND": FLAG, "WG": WG_RANGE},
    )
)
_doc(
    QUANTIZE_ROWS,
    """Dynamic per-row quantization: q = clamp(roundEven(x * f32(1 /
scale[r])) + zp[r], qmin, qmax) in f32 (qfused.quantize_dynamic). Bit-exact.""",
)


# ----- fused quantized kernels ----------------------------------------------------------------


def _fields(
    buffers: dict[str, np.ndarray], name: str, rows: int, row_words: int, bits: int, cols: int
) -> np.ndarray:
    from qopt.backends.vulkan.packing import unpack_bits

    words = _words(buffers[name])[: rows * row_words].reshape(rows, row_words)
    return unpack_bits(words, bits, cols)


def _affine_weight(
    buffers: dict[str, np.ndarray],
    rows: int,
    cols: int,
    row_words: int,
    ngroups: int,
    bits: int,
    group: int,
    has_zp: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(field - zero) int64 [rows, cols], scales f32 [rows, ngroups], group index per col."""
    f = _fields(buffers, "w", rows, row_words, bits, cols)
    g = np.minimum(np.arange(cols) // group, ngroups - 1)
    if has_zp:
        z = _i32(buffers["zeros"])[: rows * ngroups].reshape(rows, ngroups).astype(np.int64)
    else:
        z = np.full((rows, ngroups), 1 << (bits - 1), dtype=np.int64)
    s = _f32(buffers["scales"])[: rows * ngroups].reshape(rows, ngroups)
    return f - z[:, g], s, g


def _linear_qw_workgroups(push: PushValues, spec: SpecValues) -> tuple[int, int, int]:
    per = _spec(spec, "NPW", 4) * _spec(spec, "WG", 64)
    return (_groups(int(push["N"]), per), _groups(int(push["M"]), _spec(spec, "MT", 1)), 1)


def _linear_qw_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    m, n, k = int(push["M"]), int(push["N"]), int(push["K"])
    wz, s, g = _affine_weight(
        buffers,
        n,
        k,
        int(push["row_words"]),
        int(push["ngroups"]),
        _spec(spec, "WBITS", 4),
        _spec(spec, "GROUP_SIZE", 32),
        _spec(spec, "HAS_ZERO_POINT", 0),
    )
    w = wz.astype(np.float64) * s[:, g].astype(np.float64)
    x = _f32(buffers["x"])[: m * k].reshape(m, k).astype(np.float64)
    y = x @ w.T
    if _spec(spec, "HAS_BIAS", 0):
        y = y + _f32(buffers["bias"])[:n]
    _store(buffers, "out", y.astype(F32))


def _linear_qw_extents(push: PushValues, spec: SpecValues) -> Extents:
    """linear_qw.glsl. cpr = row_words / 4 chunks (uvec4 w4[n*cpr + c]) per weight row,
    VPC = 128 / WBITS values per chunk; rows n0 + r clamped to N - 1, x rows m0 + mm to
    M - 1; nfast = K / VPC when groups align with chunks and K % 4 == 0, else 0.
    - gemm_sym / gemv_sym (NPW <= 2 and MT in 2..4, or NPW <= 4 and MT 1; nfast == cpr):
      x as vec4 xv[m*K/4 + c*VPC/4 + j] (words below (M - 1)*K + cpr*VPC), group
      g = c*VPC / GROUP_SIZE of scales / zeros[n*ngroups + g], or scales[n] when
      ngroups == 1 (also read when cpr == 0);
    - the scalar GEMV (NPW = MT = 1) and the tiled loop: fast chunks c < nfast read
      x4(m*K + c*VPC + ...) (below (M - 1)*K + nfast*VPC) and group c*VPC / GROUP_SIZE
      (the tiled loop clamps it to ngroups - 1: bounded by the unclamped value); the
      other chunks read x[m*K + k] for k < K only and groups min(k / GROUP_SIZE,
      ngroups - 1) for k < cpr*VPC;
    bias[n] (HAS_BIAS) and out[m*N + n] for n < N, m < M in every path."""
    wbits = _one_of(spec, "WBITS", AFFINE_BITS)
    group, npw, mt = (int(spec[x]) for x in ("GROUP_SIZE", "NPW", "MT"))
    m, n, k, row_words, ngroups = _ints(push, "M", "N", "K", "row_words", "ngroups")
    ext = dict.fromkeys(("x", "w", "scales", "zeros", "bias", "out"), 0)
    if m == 0 or n == 0:
        return ext
    _nonzero(push, "ngroups")
    ext["out"] = m * n
    if int(spec["HAS_BIAS"]) == 1:
        ext["bias"] = n
    vpc, cpr = 128 // wbits, row_words // 4
    whole_row = ngroups == 1
    nfast = k // vpc if (group % vpc == 0 or whole_row) and k % 4 == 0 else 0
    if cpr:
        ext["w"] = 4 * n * cpr
    x = params = 0  # words of x, of scales / zeros (indexed alike)
    if nfast == cpr and ((npw <= 2 and 2 <= mt <= 4) or (npw <= 4 and mt == 1)):
        if cpr:
            x = (m - 1) * k + cpr * vpc
            params = (n - 1) * ngroups + (0 if whole_row else (cpr - 1) * vpc // group) + 1
        ext["scales"] = n if whole_row else params
    else:
        if nfast:
            x = (m - 1) * k + nfast * vpc
            params = (n - 1) * ngroups + (0 if whole_row else (nfast - 1) * vpc // group) + 1
        if cpr > nfast:
            if k > nfast * vpc:
                x = max(x, (m - 1) * k + min(k, cpr * vpc))
            last_group = min((cpr * vpc - 1) // group, ngroups - 1)
            params = max(params, (n - 1) * ngroups + last_group + 1)
        ext["scales"] = params
    ext["x"] = x
    if int(spec["HAS_ZERO_POINT"]) == 1:
        ext["zeros"] = params
    return ext


def _linear_qw_spec(name: str, wbits: int, group: int) -> KernelSpec:
    return KernelSpec(
        name=name,
        glsl="linear_qw.glsl",
        bindings=(
            _b("x", "f32"),
            _b("w", "u32", packed="q"),
            _b("scales", "f32"),
            _b("zeros", "i32"),
            _b("bias", "f32"),
            _b("out", "f32", True),
        ),
        push=_push("M", "N", "K", "row_words", "ngroups"),
        spec=(
            ("WBITS", wbits),
            ("GROUP_SIZE", group),
            ("HAS_ZERO_POINT", 0),
            ("HAS_BIAS", 0),
            ("NPW", 4),
            ("MT", 1),
            ("WG", 64),
        ),
        workgroups=_linear_qw_workgroups,
        reference=_linear_qw_ref,
        extents=_guarded(name, _linear_qw_extents),
        spec_bounds={
            "WBITS": AFFINE_BITS,
            "GROUP_SIZE": GROUP_RANGE,
            "HAS_ZERO_POINT": FLAG,
            "HAS_BIAS": FLAG,
            "NPW": TILE_RANGE,
            "MT": TILE_RANGE,
            "WG": WG_RANGE,
        },
    )


_LINEAR_QW_DOC = """Weight-only quantized linear: out[m, n] = sum_k x[m, k] * (field - z) * s
(+ bias). Bindings x f32 [M, K], w u32 [N, row_words] (packing.pack_affine: fields
value - lo, 128-bit padded rows), scales f32 [N, ngroups], zeros i32 [N, ngroups]
(zp - lo; HAS_ZERO_POINT), bias f32 [N] (HAS_BIAS), out f32 [M, N]. Push M, N, K,
row_words, ngroups. Spec WBITS (4 or 8), GROUP_SIZE (any; 128-bit chunks inside one
group take the fast path), HAS_ZERO_POINT, HAS_BIAS, NPW (output columns per
invocation), MT (rows of x per invocation), WG (invocations per workgroup; see
linear_qw.glsl); workgroups (ceil(N / (WG*NPW)), ceil(M/MT), 1)."""
LINEAR_Q4GSW = register(_linear_qw_spec("linear_q4gsw", 4, 32))
_doc(LINEAR_Q4GSW, _LINEAR_QW_DOC + "\nint4 per-group; q4gaw = HAS_ZERO_POINT 1.")
LINEAR_Q8CSW = register(_linear_qw_spec("linear_q8csw", 8, 1 << 30))
_doc(LINEAR_Q8CSW, _LINEAR_QW_DOC + "\nint8 per-channel (ngroups 1, GROUP_SIZE >= K).")


def _linear_q8ta_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    m, n, k = int(push["M"]), int(push["N"]), int(push["K"])
    wz, s, _ = _affine_weight(
        buffers, n, k, int(push["row_words"]), 1, 8, 1 << 30, _spec(spec, "HAS_ZERO_POINT", 0)
    )
    if _spec(spec, "INPUT_QUANTIZED", 0):
        xq = _i32(buffers["x"])[: m * k].astype(np.int64)
    else:
        xq = _quant(
            _f32(buffers["x"])[: m * k],
            push["in_inv_scale"],
            push["in_zp"],
            push["in_qmin"],
            push["in_qmax"],
        )
    acc = (xq.reshape(m, k) - int(push["in_zp"])) @ wz.T
    ws = (F32(push["in_scale"]) * s[:, 0]).astype(F32)
    y = acc.astype(F32) * ws
    if _spec(spec, "HAS_BIAS", 0):
        y = y + _f32(buffers["bias"])[:n]
    _store(buffers, "out", _requant(y, push, bool(_spec(spec, "REQUANT", 0))))


_STATIC_IO = (
    ("in_inv_scale", "f32"),
    ("in_zp", "i32"),
    ("in_qmin", "i32"),
    ("in_qmax", "i32"),
    ("in_scale", "f32"),
    ("out_inv_scale", "f32"),
    ("out_zp", "i32"),
    ("out_qmin", "i32"),
    ("out_qmax", "i32"),
    ("clamp_min", "f32"),
    ("clamp_max", "f32"),
)


def static_io_push(
    act: tuple[float, int, int, int] | None,
    requant: tuple[float, int, int, int] | None = None,
    clamp_min: float | None = None,
    clamp_max: float | None = None,
) -> dict[str, float | int]:
    """Push values of the static-activation kernels from (scale, zp, qmin, qmax) tuples:
    inverse scales as PT2E computes them (1 / scale in double, then f32)."""
    values: dict[str, float | int] = {
        "clamp_min": -np.inf if clamp_min is None else clamp_min,
        "clamp_max": np.inf if clamp_max is None else clamp_max,
    }
    for prefix, q in (("in", act), ("out", requant)):
        scale, zp, qmin, qmax = q if q is not None else (1.0, 0, -128, 127)
        values[f"{prefix}_inv_scale"] = float(F32(1.0 / scale))
        values[f"{prefix}_zp"], values[f"{prefix}_qmin"], values[f"{prefix}_qmax"] = zp, qmin, qmax
        if prefix == "in":
            values["in_scale"] = float(F32(scale))
    return values


def _linear_q8ta_extents(push: PushValues, spec: SpecValues) -> Extents:
    """linear_q8ta.glsl: output i = m*N + n < M*N reads x[m*K + k] and the int8 field
    w[n*row_words + k/4] for k < K, zeros[n] (HAS_ZERO_POINT), scales[n], bias[n]
    (HAS_BIAS); writes o[i]."""
    m, n, k, row_words = _ints(push, "M", "N", "K", "row_words")
    total = _count(m * n, "M * N")
    ext = dict.fromkeys(("x", "w", "scales", "zeros", "bias", "out"), 0)
    if total == 0:
        return ext
    ext["out"] = total
    ext["scales"] = n
    if int(spec["HAS_ZERO_POINT"]) == 1:
        ext["zeros"] = n
    if int(spec["HAS_BIAS"]) == 1:
        ext["bias"] = n
    if k:
        ext["x"] = m * k
        ext["w"] = (n - 1) * row_words + (k - 1) // 4 + 1
    return ext


LINEAR_Q8TA_Q8CSW = register(
    KernelSpec(
        name="linear_q8ta_q8csw",
        glsl="linear_q8ta.glsl",
        bindings=(
            _b("x", "f32"),
            _b("w", "u32", packed="q"),
            _b("scales", "f32"),
            _b("zeros", "i32"),
            _b("bias", "f32"),
            _b("out", "f32", True),
        ),
        push=(*_push("M", "N", "K", "row_words"), *_STATIC_IO),
        spec=(
            ("INPUT_QUANTIZED", 0),
            ("HAS_ZERO_POINT", 0),
            ("HAS_BIAS", 0),
            ("REQUANT", 0),
            ("WG", 64),
        ),
        workgroups=_grid_workgroups(lambda p: int(p["M"]) * int(p["N"])),
        reference=_linear_q8ta_ref,
        exact=_always,
        extents=_guarded("linear_q8ta_q8csw", _linear_q8ta_extents),
        spec_bounds={
            "INPUT_QUANTIZED": FLAG,
            "HAS_ZERO_POINT": FLAG,
            "HAS_BIAS": FLAG,
            "REQUANT": FLAG,
            "WG": WG_RANGE,
        },
    )
)
_doc(
    LINEAR_Q8TA_Q8CSW,
    """Static per-tensor activation x int8 per-channel weight linear
(REQUANT = 1 is linear_q8ta_q8csw_q8to / ET q8ta_linear): x f32 quantized in-kernel (or
i32 when INPUT_QUANTIZED), exact int32 dot products, y = f32(acc) * (in_scale * s[n])
(+ bias), clamp, optional requant to i32. w: pack_affine int8 (lo -128). Push from
`static_io_push`. Bit-exact.""",
)


def _linear_dq8ca_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    m, n, k = int(push["M"]), int(push["N"]), int(push["K"])
    ng = int(push["ngroups"])
    group = _spec(spec, "GROUP_SIZE", 32)
    wz, s, g = _affine_weight(
        buffers,
        n,
        k,
        int(push["row_words"]),
        ng,
        _spec(spec, "WBITS", 4),
        group,
        _spec(spec, "HAS_ZERO_POINT", 0),
    )
    xq = _i32(buffers["xq"])[: m * k].reshape(m, k).astype(np.int64)
    xq = xq - _i32(buffers["x_zp"])[:m].astype(np.int64)[:, None]
    y = np.zeros((m, n), dtype=F32)
    for gi in range(ng):
        cols = g == gi
        acc = xq[:, cols] @ wz[:, cols].T
        y = (y + acc.astype(F32) * s[:, gi]).astype(F32)
    y = y * _f32(buffers["x_scale"])[:m][:, None]
    if _spec(spec, "HAS_BIAS", 0):
        y = y + _f32(buffers["bias"])[:n]
    _store(buffers, "out", y.astype(F32))


def _linear_dq8ca_extents(push: PushValues, spec: SpecValues) -> Extents:
    """linear_dq8ca.glsl: output i = m*N + n < M*N reads x_zp[m], x_scale[m], for each
    g < ngroups zeros[n*ngroups + g] (HAS_ZERO_POINT) and scales[n*ngroups + g], and for
    k in [g*GROUP_SIZE, min(K, (g + 1)*GROUP_SIZE)) (always below K, also if the uint32
    group bounds wrap) xq[m*K + k] and the field w[n*row_words + k / (32 / WBITS)];
    bias[n] (HAS_BIAS); writes o[i]."""
    wbits = _one_of(spec, "WBITS", AFFINE_BITS)
    group = int(spec["GROUP_SIZE"])
    m, n, k, row_words, ngroups = _ints(push, "M", "N", "K", "row_words", "ngroups")
    total = _count(m * n, "M * N")
    names = ("xq", "x_scale", "x_zp", "w", "scales", "zeros", "bias", "out")
    ext = dict.fromkeys(names, 0)
    if total == 0:
        return ext
    ext["out"] = total
    ext["x_scale"] = ext["x_zp"] = m
    if int(spec["HAS_BIAS"]) == 1:
        ext["bias"] = n
    if ngroups:
        ext["scales"] = n * ngroups
        if int(spec["HAS_ZERO_POINT"]) == 1:
            ext["zeros"] = n * ngroups
        covered = ngroups * group
        last_k = min(k, covered) - 1 if covered < U32_LIMIT else k - 1
        if last_k >= 0:
            ext["xq"] = (m - 1) * k + last_k + 1
            ext["w"] = (n - 1) * row_words + last_k // (32 // wbits) + 1
    return ext


def _linear_dq8ca_spec(name: str, wbits: int, group: int) -> KernelSpec:
    return KernelSpec(
        name=name,
        glsl="linear_dq8ca.glsl",
        bindings=(
            _b("xq", "i32"),
            _b("x_scale", "f32"),
            _b("x_zp", "i32"),
            _b("w", "u32", packed="q"),
            _b("scales", "f32"),
            _b("zeros", "i32"),
            _b("bias", "f32"),
            _b("out", "f32", True),
        ),
        push=_push("M", "N", "K", "row_words", "ngroups"),
        spec=(
            ("WBITS", wbits),
            ("GROUP_SIZE", group),
            ("HAS_ZERO_POINT", 0),
            ("HAS_BIAS", 0),
            ("WG", 64),
        ),
        workgroups=_grid_workgroups(lambda p: int(p["M"]) * int(p["N"])),
        reference=_linear_dq8ca_ref,
        exact=_always,
        extents=_guarded(name, _linear_dq8ca_extents),
        spec_bounds={
            "WBITS": AFFINE_BITS,
            "GROUP_SIZE": GROUP_RANGE,
            "HAS_ZERO_POINT": FLAG,
            "HAS_BIAS": FLAG,
            "WG": WG_RANGE,
        },
    )


_DQ8CA_DOC = """Dynamic per-row int8 activation linear: xq i32 [M, K], x_scale f32 [M],
x_zp i32 [M] (choose_qparams_rows + quantize_rows), weight as linear_q4gsw/q8csw;
per-group exact int32 accumulation, y = (sum_g f32(acc_g) * s[n, g]) * x_scale[m] (+ bias)
in f32 in group order (the reference reproduces that order)."""
LINEAR_DQ8CA_Q4GSW = register(_linear_dq8ca_spec("linear_dq8ca_q4gsw", 4, 32))
_doc(LINEAR_DQ8CA_Q4GSW, _DQ8CA_DOC)
LINEAR_DQ8CA_Q8CSW = register(_linear_dq8ca_spec("linear_dq8ca_q8csw", 8, 1 << 30))
_doc(LINEAR_DQ8CA_Q8CSW, _DQ8CA_DOC)


def _lut_table(
    buffers: dict[str, np.ndarray],
    rows: int,
    cols: int,
    push: PushValues,
    spec: SpecValues,
    block_rows: str,
    block_cols: str,
    col_groups: str,
) -> np.ndarray:
    codes = _fields(buffers, "codes", rows, int(push["row_words"]), _spec(spec, "FBITS", 4), cols)
    br, bc, gc, lut = (int(push[x]) for x in (block_rows, block_cols, col_groups, "L"))
    base = (np.arange(rows)[:, None] // br) * gc + (np.arange(cols)[None, :] // bc)
    # a code >= L (pack_lut never writes one) reads the palette's last entry, as the shaders
    return _f32(buffers["codebook"])[base * lut + np.minimum(codes, lut - 1)]


def _linear_lut_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    m, n, k = int(push["M"]), int(push["N"]), int(push["K"])
    w = _lut_table(buffers, n, k, push, spec, "BN", "BK", "GK").astype(np.float64)
    y = _f32(buffers["x"])[: m * k].reshape(m, k).astype(np.float64) @ w.T
    if _spec(spec, "HAS_BIAS", 0):
        y = y + _f32(buffers["bias"])[:n]
    _store(buffers, "out", y.astype(F32))


def _lut_rows_extents(
    push: PushValues,
    spec: SpecValues,
    rows: int,
    cols: int,
    block_rows: str,
    block_cols: str,
    col_groups: str,
) -> tuple[int, int]:
    """(codes, codebook) words of the LUT kernels reading rows r < rows, columns j < cols:
    the field codes[r*row_words + j / (32 / FBITS)], and the palette entry cb[((r / BR)*GC
    + j / BC)*L + min(code, L - 1)] (the shaders clamp the code read from the buffer)."""
    fbits = _one_of(spec, "FBITS", LUT_BITS)
    if rows == 0 or cols == 0:
        return 0, 0
    _nonzero(push, block_rows, block_cols, "L")
    br, bc, gc, lut = _ints(push, block_rows, block_cols, col_groups, "L")
    codes = (rows - 1) * int(push["row_words"]) + (cols - 1) // (32 // fbits) + 1
    palette = (rows - 1) // br * gc + (cols - 1) // bc
    return codes, (palette + 1) * lut


def _linear_lut_extents(push: PushValues, spec: SpecValues) -> Extents:
    """linear_lut.glsl: output i = m*N + n < M*N reads x[m*K + k], the codes of weight row n
    and its palettes (`_lut_rows_extents`, k < K), bias[n] (HAS_BIAS); writes o[i]."""
    m, n, k = _ints(push, "M", "N", "K")
    total = _count(m * n, "M * N")
    ext = dict.fromkeys(("x", "codes", "codebook", "bias", "out"), 0)
    if total == 0:
        return ext
    _nonzero(push, "BN")  # cbrow = (n / BN) * GK, also when K = 0
    ext["out"] = total
    if int(spec["HAS_BIAS"]) == 1:
        ext["bias"] = n
    ext["codes"], ext["codebook"] = _lut_rows_extents(push, spec, n, k, "BN", "BK", "GK")
    ext["x"] = m * k
    return ext


LINEAR_LUT = register(
    KernelSpec(
        name="linear_lut",
        glsl="linear_lut.glsl",
        bindings=(
            _b("x", "f32"),
            _b("codes", "u32", packed="lut"),
            _b("codebook", "f32"),
            _b("bias", "f32"),
            _b("out", "f32", True),
        ),
        push=_push("M", "N", "K", "row_words", "BN", "BK", "GK", "L"),
        spec=(("FBITS", 4), ("HAS_BIAS", 0), ("WG", 64)),
        workgroups=_grid_workgroups(lambda p: int(p["M"]) * int(p["N"])),
        reference=_linear_lut_ref,
        extents=_guarded("linear_lut", _linear_lut_extents),
        spec_bounds={"FBITS": (1, 8), "HAS_BIAS": FLAG, "WG": WG_RANGE},
    )
)
_doc(
    LINEAR_LUT,
    """LUT weight linear (qfused #lut, any block [BN, BK]: per-row palettes
BK = K, LUT per K-block BN = N): packing.pack_lut gives codes (FBITS fields), codebook
f32 [N/BN, K/BK, L], BN/BK (block_rows/cols), GK (col_groups), L (lut_size).""",
)


def _embedding_q_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    n, d, v = int(push["n"]), int(push["D"]), int(push["V"])
    rows, ok = _row_index(buffers, _i32(buffers["idx"])[:n], v)
    wz, s, g = _affine_weight(
        buffers,
        v,
        d,
        int(push["row_words"]),
        int(push["ngroups"]),
        _spec(spec, "WBITS", 4),
        _spec(spec, "GROUP_SIZE", 32),
        _spec(spec, "HAS_ZERO_POINT", 0),
    )
    out = wz[rows].astype(F32) * s[rows][:, g]
    _store(buffers, "out", np.where(ok[:, None], out, F32(0)).astype(F32))


def _embedding_q_extents(push: PushValues, spec: SpecValues) -> Extents:
    """embedding_q.glsl: output i < n*D reads idx[i / D] and, for a row r in [0, V)
    (checked in the shader), column d = i % D: the field w[r*row_words + d / (32 /
    WBITS)], scales / zeros (HAS_ZERO_POINT) [r*ngroups + d / GROUP_SIZE] (not clamped
    to ngroups - 1); writes o[i], and status[0] for an index outside [0, V)."""
    wbits = _one_of(spec, "WBITS", AFFINE_BITS)
    n, d, v, row_words, ngroups = _ints(push, "n", "D", "V", "row_words", "ngroups")
    total = _count(n * d, "n * D")
    _index_rows(v)
    ext = dict.fromkeys(("idx", "w", "scales", "zeros", "out"), 0)
    ext[STATUS] = 1
    if total == 0:
        return ext
    ext["idx"], ext["out"] = n, total
    if v:
        ext["w"] = (v - 1) * row_words + (d - 1) // (32 // wbits) + 1
        ext["scales"] = (v - 1) * ngroups + (d - 1) // int(spec["GROUP_SIZE"]) + 1
        if int(spec["HAS_ZERO_POINT"]) == 1:
            ext["zeros"] = ext["scales"]
    return ext


def _embedding_q_spec(name: str, wbits: int, group: int) -> KernelSpec:
    return KernelSpec(
        name=name,
        glsl="embedding_q.glsl",
        bindings=(
            _b("idx", "i32"),
            _b("w", "u32", packed="q"),
            _b("scales", "f32"),
            _b("zeros", "i32"),
            _b("out", "f32", True),
            _status(),
        ),
        push=_push("n", "D", "V", "row_words", "ngroups"),
        spec=(("WBITS", wbits), ("GROUP_SIZE", group), ("HAS_ZERO_POINT", 0), ("WG", 64)),
        workgroups=_grid_workgroups(lambda p: int(p["n"]) * int(p["D"])),
        reference=_embedding_q_ref,
        exact=_always,
        extents=_guarded(name, _embedding_q_extents),
        spec_bounds={
            "WBITS": AFFINE_BITS,
            "GROUP_SIZE": GROUP_RANGE,
            "HAS_ZERO_POINT": FLAG,
            "WG": WG_RANGE,
        },
    )


_EMB_DOC = """Quantized embedding: out[i, d] = (f32(field) - f32(z)) * s for row idx[i] of a
pack_affine [V, D] table (scales [V, ngroups], zeros zp - lo with HAS_ZERO_POINT).
Bit-exact with qfused's embedding (data - zp in f32, times scale). Indices as
gather_rows: [-V, 0) from the end, outside [-V, V) reads 0; outside [0, V) sets
status[0] = 1."""
EMBEDDING_Q4GSW = register(_embedding_q_spec("embedding_q4gsw", 4, 32))
_doc(EMBEDDING_Q4GSW, _EMB_DOC)
EMBEDDING_Q8CSW = register(_embedding_q_spec("embedding_q8csw", 8, 1 << 30))
_doc(EMBEDDING_Q8CSW, _EMB_DOC)


def _embedding_lut_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    n, d, v = int(push["n"]), int(push["D"]), int(push["V"])
    rows, ok = _row_index(buffers, _i32(buffers["idx"])[:n], v)
    table = _lut_table(buffers, v, d, push, spec, "BV", "BD", "GD")
    _store(buffers, "out", np.where(ok[:, None], table[rows], F32(0)).astype(F32))


def _embedding_lut_extents(push: PushValues, spec: SpecValues) -> Extents:
    """embedding_lut.glsl: output i < n*D reads idx[i / D] and, for a row r in [0, V)
    (checked in the shader), the codes and palettes of row r (`_lut_rows_extents`,
    columns d < D); writes o[i], and status[0] for an index outside [0, V)."""
    n, d, v = _ints(push, "n", "D", "V")
    total = _count(n * d, "n * D")
    _index_rows(v)
    ext = dict.fromkeys(("idx", "codes", "codebook", "out"), 0)
    ext[STATUS] = 1
    if total == 0:
        return ext
    ext["idx"], ext["out"] = n, total
    ext["codes"], ext["codebook"] = _lut_rows_extents(push, spec, v, d, "BV", "BD", "GD")
    return ext


EMBEDDING_LUT = register(
    KernelSpec(
        name="embedding_lut",
        glsl="embedding_lut.glsl",
        bindings=(
            _b("idx", "i32"),
            _b("codes", "u32", packed="lut"),
            _b("codebook", "f32"),
            _b("out", "f32", True),
            _status(),
        ),
        push=_push("n", "D", "V", "row_words", "BV", "BD", "GD", "L"),
        spec=(("FBITS", 4), ("WG", 64)),
        workgroups=_grid_workgroups(lambda p: int(p["n"]) * int(p["D"])),
        reference=_embedding_lut_ref,
        exact=_always,
        extents=_guarded("embedding_lut", _embedding_lut_extents),
        spec_bounds={"FBITS": (1, 8), "WG": WG_RANGE},
    )
)
_doc(
    EMBEDDING_LUT,
    """LUT embedding (pack_lut of the [V, D] table; BV/BD block, GD col
groups, L entries). Bit-exact. Indices as gather_rows (status[0] = 1 outside [0, V)).""",
)


def _conv_q8_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    import torch

    n, c, h, w_ = (int(push[k]) for k in ("N", "C", "H", "W"))
    oc, kh, kw, groups = (int(push[k]) for k in ("OC", "KH", "KW", "groups"))
    cg = c // groups
    kk = cg * kh * kw
    wz, s, _ = _affine_weight(
        buffers, oc, kk, int(push["row_words"]), 1, 8, 1 << 30, _spec(spec, "HAS_ZERO_POINT", 0)
    )
    wz = wz.reshape(oc, cg, kh, kw)
    act = _spec(spec, "ACT", 1)
    x = _words(buffers["x"])[: n * c * h * w_]
    if act == 0:
        acc = _torch_conv(torch, x.view(F32).reshape(n, c, h, w_), wz, None, push)
        y = acc.astype(F32) * s[:, 0][None, :, None, None]
    else:
        if act == 2:
            xq = x.view(np.int32).astype(np.int64)
        else:
            xq = _quant(
                x.view(F32), push["in_inv_scale"], push["in_zp"], push["in_qmin"], push["in_qmax"]
            )
        xc = (xq - int(push["in_zp"])).reshape(n, c, h, w_)
        acc = np.rint(_torch_conv(torch, xc, wz, None, push)).astype(np.int64)  # exact in f64
        ws = (F32(push["in_scale"]) * s[:, 0]).astype(F32)
        y = acc.astype(F32) * ws[None, :, None, None]
    if _spec(spec, "HAS_BIAS", 0):
        y = y + _f32(buffers["bias"])[:oc][None, :, None, None]
    _store(buffers, "y", _requant(y, push, bool(_spec(spec, "REQUANT", 1))))


CONV2D_Q8TA_Q8CSW_Q8TO = register(
    KernelSpec(
        name="conv2d_q8ta_q8csw_q8to",
        glsl="conv2d_q8.glsl",
        bindings=(
            _b("x", "f32"),
            _b("w", "u32", packed="q"),
            _b("scales", "f32"),
            _b("zeros", "i32"),
            _b("bias", "f32"),
            _b("y", "f32", True),
        ),
        push=(
            *_push("N", "C", "H", "W", "OC", "OH", "OW", "KH", "KW"),
            *_push("sh", "sw", "ph", "pw", "dh", "dw", kind="i32"),
            *_push("groups", "row_words"),
            *_STATIC_IO,
        ),
        spec=(("ACT", 1), ("HAS_ZERO_POINT", 0), ("HAS_BIAS", 0), ("REQUANT", 1), ("WG", 64)),
        workgroups=_grid_workgroups(
            lambda p: int(p["N"]) * int(p["OC"]) * int(p["OH"]) * int(p["OW"])
        ),
        reference=_conv_q8_ref,
        exact=_always,
        extents=_guarded("conv2d_q8ta_q8csw_q8to", _conv2d_q8_extents),
        spec_bounds={
            "ACT": (0, max(CONV_ACT.values())),
            "HAS_ZERO_POINT": FLAG,
            "HAS_BIAS": FLAG,
            "REQUANT": FLAG,
            "WG": WG_RANGE,
        },
    )
)
_doc(
    CONV2D_Q8TA_Q8CSW_Q8TO,
    """Quantized conv2d, per-OC int8 weights (pack_affine of
[OC, ICg*KH*KW] in OIHW order): ACT 1 static (x f32 quantized in-kernel), 2 x already
i32, 0 weight-only (conv2d_q8csw, float accumulate); exact int32 accumulation over
in-bounds taps, y = f32(acc) * (in_scale * s[oc]) (+ bias), clamp, REQUANT (default 1;
0 = conv2d_q8ta_q8csw, f32 out). ET alias q8ta_conv2d. Integer outputs bit-exact.""",
)


def _add_q8_ref(buffers: dict[str, np.ndarray], push: PushValues, spec: SpecValues) -> None:
    n = int(push["n"])

    def deq(name: str, quantized: int, prefix: str) -> np.ndarray:
        words = _words(buffers[name])[:n]
        if quantized:
            q = words.view(np.int32).astype(np.int64)
        else:
            q = _quant(
                words.view(F32),
                push[f"{prefix}_inv_scale"],
                push[f"{prefix}_zp"],
                push[f"{prefix}_qmin"],
                push[f"{prefix}_qmax"],
            )
        return (q - int(push[f"{prefix}_zp"])).astype(F32) * F32(push[f"{prefix}_scale"])

    da = deq("a", _spec(spec, "A_QUANTIZED", 0), "a")
    db = deq("b", _spec(spec, "B_QUANTIZED", 0), "b")
    y = da + db * F32(push["alpha"])
    _store(buffers, "out", _requant(y, push, bool(_spec(spec, "REQUANT", 1))))


ADD_Q8TA_Q8TA_Q8TO = register(
    KernelSpec(
        name="add_q8ta_q8ta_q8to",
        glsl="add_q8ta.glsl",
        bindings=(_b("a", "f32"), _b("b", "f32"), _b("out", "f32", True)),
        push=(
            ("n", "u32"),
            ("a_inv_scale", "f32"),
            ("a_zp", "i32"),
            ("a_qmin", "i32"),
            ("a_qmax", "i32"),
            ("a_scale", "f32"),
            ("b_inv_scale", "f32"),
            ("b_zp", "i32"),
            ("b_qmin", "i32"),
            ("b_qmax", "i32"),
            ("b_scale", "f32"),
            ("alpha", "f32"),
            ("out_inv_scale", "f32"),
            ("out_zp", "i32"),
            ("out_qmin", "i32"),
            ("out_qmax", "i32"),
            ("clamp_min", "f32"),
            ("clamp_max", "f32"),
        ),
        spec=(("A_QUANTIZED", 0), ("B_QUANTIZED", 0), ("REQUANT", 1), ("WG", 64)),
        workgroups=_grid_workgroups(lambda p: int(p["n"])),
        reference=_add_q8_ref,
        exact=_always,
        extents=_guarded("add_q8ta_q8ta_q8to", _per_element("a", "b", "out")),
        spec_bounds={"A_QUANTIZED": FLAG, "B_QUANTIZED": FLAG, "REQUANT": FLAG, "WG": WG_RANGE},
    )
)
_doc(
    ADD_Q8TA_Q8TA_Q8TO,
    """Quantized add (ET q8ta_add): out = requant(clamp(dq(a) + alpha *
dq(b))); operands f32 (quantized in-kernel) or i32 (A_/B_QUANTIZED); same shapes (expand
broadcasts with copy_strided). relu = clamp_min 0. Bit-exact.""",
)


def all_specs() -> Mapping[str, KernelSpec]:
    from qopt.backends.vulkan.registry import kernels

    return kernels()
