"""Elementwise kernels: unary, binary, where, copy_strided, fill."""

from __future__ import annotations

from qopt.kernels.extents import (
    RANK,
    WG_RANGE,
    always,
    grid_workgroups,
    guarded,
    per_element,
    shape6,
    spec_int,
    strided_extent,
)
from qopt.kernels.opcodes import BINARY_OPS, DTYPES, UNARY_OPS, opcode_name
from qopt.kernels.spec import Extents, KernelSpec, PushValues, SpecValues, binding, push_of

_TRANSCENDENTAL = {
    "silu",
    "sigmoid",
    "tanh",
    "exp",
    "log",
    "log10",
    "log2",
    "sin",
    "cos",
    "tan",
    "erf",
    "gelu",
    "gelu_tanh",
}
"""Unary ops whose GLSL builtins are not correctly rounded (exp, tanh, sin, log, ...)."""


def _unary_exact(spec: SpecValues) -> bool:
    """Every unary op is exact but those whose GLSL builtins are not correctly rounded."""
    return (
        opcode_name(UNARY_OPS, spec_int(spec, "OP", UNARY_OPS["identity"])) not in _TRANSCENDENTAL
    )


UNARY = KernelSpec(
    name="unary",
    glsl="unary.glsl",
    bindings=(binding("x", "f32"), binding("y", "f32", True)),
    push=(("n", "u32"), ("a", "f32"), ("b", "f32")),
    spec=(("OP", UNARY_OPS["identity"]), ("DTYPE", DTYPES["f32"]), ("WG", 64)),
    workgroups=grid_workgroups(lambda p: int(p["n"])),
    exact=_unary_exact,
    extents=guarded("unary", per_element("x", "y")),
    spec_bounds={
        "OP": (min(UNARY_OPS.values()), max(UNARY_OPS.values())),
        "DTYPE": (min(DTYPES.values()), max(DTYPES.values())),
        "WG": WG_RANGE,
    },
    doc="""y = op(x) over n 32-bit words. spec OP (UNARY_OPS), DTYPE (0 f32 in,
1 i32 in: only UNARY_INT_OPS), WG. push n, a (clamp min / leaky slope / shrink
lambda), b (clamp max).
logical_not / to_bool / cast_f32_i32 write i32; cast_i32_f32 (DTYPE 1) writes f32.""",
)


def _binary_exact(spec: SpecValues) -> bool:
    """Every binary op is exact but float `pow` (GLSL's pow builtin is not correctly
    rounded)."""
    is_pow = spec_int(spec, "OP", BINARY_OPS["add"]) == BINARY_OPS["pow"]
    return not (is_pow and spec_int(spec, "DTYPE", DTYPES["f32"]) == DTYPES["f32"])


def _binary_extents(push: PushValues, spec: SpecValues) -> Extents:
    """binary.glsl: out[i] for i < n, a[a_off + idx . sa], b[b_off + idx . sb] (idx the
    6-D index of i)."""
    n, dims = int(push["n"]), shape6(push, "d")
    return {
        "a": strided_extent(n, dims, shape6(push, "sa"), int(push["a_off"])),
        "b": strided_extent(n, dims, shape6(push, "sb"), int(push["b_off"])),
        "out": n,
    }


BINARY = KernelSpec(
    name="binary",
    glsl="binary.glsl",
    bindings=(binding("a", "f32"), binding("b", "f32"), binding("out", "f32", True)),
    push=(
        ("n", "u32"),
        *push_of(*(f"d{i}" for i in range(RANK))),
        *push_of(*(f"sa{i}" for i in range(RANK))),
        *push_of(*(f"sb{i}" for i in range(RANK))),
        ("a_off", "u32"),
        ("b_off", "u32"),
        ("alpha", "f32"),
    ),
    spec=(("OP", BINARY_OPS["add"]), ("DTYPE", DTYPES["f32"]), ("WG", 64)),
    workgroups=grid_workgroups(lambda p: int(p["n"])),
    exact=_binary_exact,
    extents=guarded("binary", _binary_extents),
    spec_bounds={
        "OP": (min(BINARY_OPS.values()), max(BINARY_OPS.values())),
        "DTYPE": (min(DTYPES.values()), max(DTYPES.values())),
        "WG": WG_RANGE,
    },
    doc="""out[i] = op(a[a_off + idx.sa], b[b_off + idx.sb]) over the 6-D index
space d0..d5 (`elementwise_push`). spec OP (BINARY_OPS), DTYPE (0 f32, 1 i32), WG;
push n, d*, sa*, sb*, a_off, b_off, alpha (add/sub). Comparisons/logical write i32 0/1;
i32 div is floor division, i32 remainder is Python's mod.""",
)


def _where_extents(push: PushValues, spec: SpecValues) -> Extents:
    """where.glsl: out[i] for i < n, cond[idx . sc], a[idx . sa], b[idx . sb] (both a and b
    counted: either may be read)."""
    n, dims = int(push["n"]), shape6(push, "d")
    return {
        "cond": strided_extent(n, dims, shape6(push, "sc"), 0),
        "a": strided_extent(n, dims, shape6(push, "sa"), 0),
        "b": strided_extent(n, dims, shape6(push, "sb"), 0),
        "out": n,
    }


WHERE = KernelSpec(
    name="where",
    glsl="where.glsl",
    bindings=(
        binding("cond", "i32"),
        binding("a", "f32"),
        binding("b", "f32"),
        binding("out", "f32", True),
    ),
    push=(
        ("n", "u32"),
        *push_of(*(f"d{i}" for i in range(RANK))),
        *push_of(*(f"sc{i}" for i in range(RANK))),
        *push_of(*(f"sa{i}" for i in range(RANK))),
        *push_of(*(f"sb{i}" for i in range(RANK))),
    ),
    spec=(("WG", 64),),
    workgroups=grid_workgroups(lambda p: int(p["n"])),
    exact=always,
    extents=guarded("where", _where_extents),
    spec_bounds={"WG": WG_RANGE},
    doc="""out[i] = cond[idx.sc] != 0 ? a[idx.sa] : b[idx.sb] (32-bit words of any
type); push n, d0..d5, sc*, sa*, sb*; spec WG.""",
)


def _copy_extents(push: PushValues, spec: SpecValues) -> Extents:
    """copy_strided.glsl: y[out_off + idx . so] = x[in_off + idx . si] for the first n
    indices idx of the 6-D space d."""
    n, dims = int(push["n"]), shape6(push, "d")
    return {
        "x": strided_extent(n, dims, shape6(push, "si"), int(push["in_off"])),
        "y": strided_extent(n, dims, shape6(push, "so"), int(push["out_off"])),
    }


COPY_STRIDED = KernelSpec(
    name="copy_strided",
    glsl="copy_strided.glsl",
    bindings=(binding("x", "f32"), binding("y", "f32", True)),
    push=(
        ("n", "u32"),
        ("in_off", "u32"),
        ("out_off", "u32"),
        *push_of(*(f"d{i}" for i in range(RANK))),
        *push_of(*(f"si{i}" for i in range(RANK))),
        *push_of(*(f"so{i}" for i in range(RANK))),
    ),
    spec=(("WG", 64),),
    workgroups=grid_workgroups(lambda p: int(p["n"])),
    exact=always,
    extents=guarded("copy_strided", _copy_extents),
    spec_bounds={"WG": WG_RANGE},
    doc="""y[out_off + idx.so] = x[in_off + idx.si] for every idx of the 6-D
space d0..d5 (32-bit words): view/permute/transpose/slice/select/expand/repeat/flatten,
and cat by writing each input into its slice of y (y is read-write: the words of y
outside the written set are kept). push n, in_off, out_off, d*, si*, so*; spec WG.""",
)


FILL = KernelSpec(
    name="fill",
    glsl="fill.glsl",
    bindings=(binding("y", "f32", True),),
    push=(("n", "u32"), ("start", "u32"), ("step", "u32")),
    spec=(("MODE", DTYPES["f32"]), ("WG", 64)),
    workgroups=grid_workgroups(lambda p: int(p["n"])),
    exact=always,
    extents=guarded("fill", per_element("y")),
    spec_bounds={"MODE": (min(DTYPES.values()), max(DTYPES.values())), "WG": WG_RANGE},
    doc="""y[i] = start + i * step (arange; step 0 = fill). MODE 0 f32, 1 i32; start
and step are pushed as raw 32-bit words (`word_of(value, dtype)`).""",
)


SPECS = (UNARY, BINARY, WHERE, COPY_STRIDED, FILL)
