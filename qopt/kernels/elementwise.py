"""Elementwise kernels: unary, binary, where, copy_strided, fill."""

from __future__ import annotations

from pathlib import Path

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
from qopt.kernels.opcodes import (
    BINARY_OPS,
    DTYPES,
    FUSED_OPS,
    UNARY_INT_OPS,
    UNARY_OPS,
    opcode_name,
)
from qopt.kernels.source import KERNEL_DIR
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
    "sinh",
    "expm1",
    "log1p",
    "cosh",
    "asin",
    "acos",
    "atan",
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
logical_not / to_bool / cast_f32_i32 / signbit write i32; cast_i32_f32 (DTYPE 1) writes f32.""",
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


# ----- fused_elementwise ---------------------------------------------------------------

FUSED_INPUTS = 4
"""Input bindings of fused_elementwise (in0 .. in3; an unused one is bound to any buffer)."""
FUSED_LEAVES = 6
"""Leaf loads (registers 0 .. FUSED_LEAVES - 1)."""
FUSED_INSTRS = 10
"""Instruction slots (instruction k writes register FUSED_LEAVES + k)."""
FUSED_REGISTERS = FUSED_LEAVES + FUSED_INSTRS
_S32 = (0, 2**31 - 1)


def _fused_spec() -> tuple[tuple[str, int], ...]:
    spec: list[tuple[str, int]] = [("WG", 64)]
    spec += [(f"D{k}", 1) for k in range(RANK)]
    for leaf in range(FUSED_LEAVES):
        spec += [(f"L{leaf}_BUF", -1), (f"L{leaf}_OFF", 0)]
        spec += [(f"L{leaf}_S{k}", 0) for k in range(RANK)]
        spec += [(f"L{leaf}_AX", -1), (f"L{leaf}_LO", 0), (f"L{leaf}_N", 1)]
    spec += [("OUT_OFF", 0)] + [(f"OS{k}", 0) for k in range(RANK)]
    for k in range(FUSED_INSTRS):
        spec += [(f"I{k}_OP", FUSED_OPS["none"]), (f"I{k}_DT", DTYPES["f32"])]
        spec += [(f"I{k}_A", 0), (f"I{k}_B", 0), (f"I{k}_X", 0), (f"I{k}_Y", 0)]
    spec.append(("RES", 0))
    return tuple(spec)


FUSED_SPEC = _fused_spec()
"""fused_elementwise's specialization constants, in constant_id order."""


def _fused_bounds() -> dict[str, tuple[int, int]]:
    bounds: dict[str, tuple[int, int]] = {}
    for name, _ in FUSED_SPEC:
        if name == "WG":
            bounds[name] = WG_RANGE
        elif name.startswith("D"):
            bounds[name] = (1, _S32[1])
        elif name.endswith("_BUF"):
            bounds[name] = (-1, FUSED_INPUTS - 1)
        elif name.endswith("_AX"):
            bounds[name] = (-1, RANK - 1)
        elif name.endswith("_X"):
            bounds[name] = (0, RANK - 1)
        elif name.endswith("_N"):
            bounds[name] = (1, _S32[1])
        elif name.endswith("_OP"):
            bounds[name] = (FUSED_OPS["none"], FUSED_OPS["select"])
        elif name.endswith("_DT"):
            bounds[name] = (min(DTYPES.values()), max(DTYPES.values()))
        elif name.endswith(("_A", "_B")) or name == "RES":
            bounds[name] = (0, FUSED_REGISTERS - 1)
        else:
            bounds[name] = _S32
    return bounds


def fused_glsl_path() -> Path:
    """Where the generated shader lives (scripts/gen_fused_elementwise.py writes it)."""
    return KERNEL_DIR / "fused_elementwise.glsl"


def fused_dims(spec: SpecValues) -> tuple[int, ...]:
    return tuple(spec_int(spec, f"D{k}", 1) for k in range(RANK))


def fused_strides(spec: SpecValues, prefix: str) -> tuple[int, ...]:
    return tuple(spec_int(spec, f"{prefix}{k}", 0) for k in range(RANK))


def fused_program(spec: SpecValues) -> list[tuple[int, int, int, int, int]]:
    """(register, op, dtype, a, b) of every used instruction, in order; ValueError when an
    instruction is unknown or reads a register nothing has written before it, or when RES
    names such a register."""
    defined = {leaf for leaf in range(FUSED_LEAVES) if spec_int(spec, f"L{leaf}_BUF", -1) >= 0}
    program: list[tuple[int, int, int, int, int]] = []
    unary, binary = set(UNARY_OPS.values()), set(BINARY_OPS.values())
    for k in range(FUSED_INSTRS):
        op = spec_int(spec, f"I{k}_OP", FUSED_OPS["none"])
        if op == FUSED_OPS["none"]:
            continue
        dtype = spec_int(spec, f"I{k}_DT", DTYPES["f32"])
        a, b = spec_int(spec, f"I{k}_A", 0), spec_int(spec, f"I{k}_B", 0)
        is_binary = op >= FUSED_OPS["binary"]
        if op == FUSED_OPS["select"]:
            pass
        elif (op - FUSED_OPS["binary"] if is_binary else op) not in (
            binary if is_binary else unary
        ):
            raise ValueError(f"instruction {k}: unknown op code {op}")
        if (
            dtype == DTYPES["i32"]
            and not is_binary
            and opcode_name(UNARY_OPS, op) not in UNARY_INT_OPS
        ):
            raise ValueError(f"instruction {k}: unary {opcode_name(UNARY_OPS, op)} has no i32 form")
        reads = (a, b) if is_binary else (a,)
        if any(r not in defined for r in reads):
            raise ValueError(f"instruction {k} reads a register not written before it")
        register = FUSED_LEAVES + k
        defined.add(register)
        program.append((register, op, dtype, a, b))
    if spec_int(spec, "RES", 0) not in defined:
        raise ValueError("RES names a register nothing writes")
    return program


def _fused_extents(push: PushValues, spec: SpecValues) -> Extents:
    """fused_elementwise.glsl: for i < n (digits idx of the 6-D space D), leaf l reads
    in<L_BUF>[L_OFF + idx . L_S]; y[OUT_OFF + idx . OS] is written."""
    fused_program(spec)
    n, dims = int(push["n"]), fused_dims(spec)
    ext: Extents = {f"in{b}": 0 for b in range(FUSED_INPUTS)}
    for leaf in range(FUSED_LEAVES):
        buf = spec_int(spec, f"L{leaf}_BUF", -1)
        if buf < 0:
            continue
        strides = fused_strides(spec, f"L{leaf}_S")
        offset, axis = spec_int(spec, f"L{leaf}_OFF", 0), spec_int(spec, f"L{leaf}_AX", -1)
        if axis < 0:
            words = strided_extent(n, dims, strides, offset)
        elif n == 0:
            words = 0
        else:  # digit `axis` clamped to [0, N): every digit at its largest (an upper bound)
            window = list(dims)
            window[axis] = spec_int(spec, f"L{leaf}_N", 1)
            words = offset + sum((d - 1) * s for d, s in zip(window, strides, strict=True)) + 1
        ext[f"in{buf}"] = max(ext[f"in{buf}"], words)
    ext["y"] = strided_extent(n, dims, fused_strides(spec, "OS"), spec_int(spec, "OUT_OFF", 0))
    return ext


def _fused_exact(spec: SpecValues) -> bool:
    """Exact unless an instruction is a transcendental unary op or a float pow."""
    for _, op, dtype, _, _ in fused_program(spec):
        if op == FUSED_OPS["select"]:
            continue
        if op >= FUSED_OPS["binary"]:
            if op - FUSED_OPS["binary"] == BINARY_OPS["pow"] and dtype == DTYPES["f32"]:
                return False
        elif opcode_name(UNARY_OPS, op) in _TRANSCENDENTAL:
            return False
    return True


FUSED_ELEMENTWISE = KernelSpec(
    name="fused_elementwise",
    glsl="fused_elementwise.glsl",
    bindings=(
        *(binding(f"in{b}", "u32") for b in range(FUSED_INPUTS)),
        binding("y", "u32", True),
    ),
    push=(("n", "u32"), *((f"{c}{k}", "f32") for k in range(FUSED_INSTRS) for c in "ab")),
    spec=FUSED_SPEC,
    workgroups=grid_workgroups(lambda p: int(p["n"])),
    exact=_fused_exact,
    extents=guarded("fused_elementwise", _fused_extents),
    spec_bounds=_fused_bounds(),
    doc="""A chain of unary/binary ops in one dispatch (vkc-fuse-elementwise): for
each i < n (6-D digits idx of D0..D5) leaf l loads in<L*_BUF>[L*_OFF + idx.L*_S]
(registers 0..5; with L*_AX >= 0 the digit on that axis is clamp(idx - L*_LO, 0,
L*_N - 1): a cat piece's window), instruction k computes r[6 + k] = op(r[I*_A],
r[I*_B]) as unary/binary do (I*_OP a UNARY_OPS code or FUSED_BINARY + a BINARY_OPS
code, I*_DT its DTYPE; push a<k>, b<k> the unary parameters or a<k> the binary
alpha) or, for FUSED_SELECT, idx[I*_X] < I*_Y ? r[I*_A] : r[I*_B], and
y[OUT_OFF + idx.OS] = r[RES] (other words of y kept). Bindings in0..in3 read raw
words; unused ones may be bound to any buffer.""",
)


SPECS = (UNARY, BINARY, WHERE, COPY_STRIDED, FILL, FUSED_ELEMENTWISE)
