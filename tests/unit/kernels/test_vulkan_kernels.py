"""Every Vulkan kernel: spirv-val passes; on the Vulkan device (run under the Khronos
validation layer when it is installed) each kernel equals its numpy reference on small
random inputs (f32: rel err < 1e-5; integer outputs exact), and each reference equals an
independent torch/numpy computation of the op. Without a Vulkan device the device
tests are skipped with the reason."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.ao.quantization.fx import _decomposed  # noqa: F401  (quantized_decomposed ops)

from qopt.backends.vulkan.registry import kernels
from qopt.backends.vulkan.runtime import Dispatch, VulkanDevice, VulkanError, vulkan_available
from qopt.backends.vulkan.spirv import compile_glsl, compile_kernel
from qopt.interpreters.kernels.common import quantize as ref_quantize
from qopt.kernels.opcodes import (
    BINARY_BOOL_OPS,
    BINARY_OPS,
    MAPPINGS,
    POOL_OPS,
    REDUCE_OPS,
    UNARY_INT_OPS,
    UNARY_OPS,
)
from qopt.kernels.packing import (
    pack_affine,
    pack_bits,
    pack_lut,
    pad_to,
    unpack_affine,
    unpack_bits,
)
from qopt.kernels.push import (
    broadcast_strides,
    conv_out,
    elementwise_push,
    static_io_push,
    word_of,
)
from qopt.kernels.source import (
    INCLUDE_DIR,
    KERNEL_DIR,
    kernel_source,
    opcode_defines,
    with_includes,
)

F32 = np.float32
RNG = np.random.default_rng(1234)
HAVE_TOOLS = shutil.which("glslangValidator") and shutil.which("spirv-val")


# ----- compile + spirv-val (no device needed) --------------------------------------------


@pytest.mark.skipif(not HAVE_TOOLS, reason="glslangValidator/spirv-val not installed")
@pytest.mark.parametrize("glsl", sorted(p.name for p in KERNEL_DIR.glob("*.glsl")))
def test_spirv_val(glsl: str) -> None:
    spirv = compile_kernel(glsl)  # the prebuilt set (validated when built) or compiled
    from qopt.backends.vulkan.spirv import validate_spirv

    validate_spirv(spirv, glsl)
    assert spirv[:4] == b"\x03\x02\x23\x07"


def test_every_spec_has_its_source_and_doc() -> None:
    for name, spec in kernels().items():
        assert (KERNEL_DIR / spec.glsl).is_file(), name
        assert spec.__doc__
        assert spec.doc == spec.__doc__, name
        assert len(spec.push) * 4 <= 128, name


def test_shaders_name_their_op_codes() -> None:
    """The op-code tables (qopt/kernels/opcodes.py) are the only definition of the codes:
    the shaders compare their op selectors against the generated names, never numbers,
    and every name they use is generated."""
    defined = set(re.findall(r"#define (\w+) ", opcode_defines()))
    selector = r"\b(OP|ACT|MAPPING|DTYPE|MODE|op|dt)\s*(==|!=|>=|<=|<|>)\s*"
    for path in sorted([*KERNEL_DIR.glob("*.glsl"), *INCLUDE_DIR.glob("*.glsl")]):
        text = path.read_text()
        assert not re.search(selector + r"\d", text), path.name
        for name in re.findall(selector + r"(\w+)", text):
            assert name[2] in defined, (path.name, name[2])
        if path.parent == KERNEL_DIR:
            assert kernel_source(path.name).count("#define UNARY_RELU 1\n") == 1


def test_elementwise_op_bodies_are_one_snippet() -> None:
    """unary, binary and fused_elementwise compile the same unary_op / binary_op: the
    snippet glsl/include/elementwise_ops.glsl, inserted once in each; a missing or
    nested include is a QoptError."""
    snippet = (INCLUDE_DIR / "elementwise_ops.glsl").read_text().rstrip("\n")
    for glsl in ("unary.glsl", "binary.glsl", "fused_elementwise.glsl"):
        assert (KERNEL_DIR / glsl).read_text().count('#include "elementwise_ops.glsl"\n') == 1
        source = kernel_source(glsl)
        assert source.count(snippet) == 1, glsl
        assert source.count("uint unary_op(") == 1, glsl
        assert not re.search(r"^#include", source, re.MULTILINE), glsl
    from qopt.errors import QoptError

    with pytest.raises(QoptError, match=r"includes no_such\.glsl"):
        with_includes('#version 450\n#include "no_such.glsl"\n', "k.glsl")


def test_op_code_ranges_the_shaders_rely_on() -> None:
    """binary.glsl tests `OP >= BINARY_EQ && OP <= BINARY_LOGICAL_OR` for the 0/1 ops and
    reduce_rows.glsl `OP >= REDUCE_ARGMAX` / `OP >= REDUCE_MAX` for index / max-min."""
    assert BINARY_BOOL_OPS == tuple(range(BINARY_OPS["eq"], BINARY_OPS["logical_or"] + 1))
    assert {REDUCE_OPS["argmax"], REDUCE_OPS["argmin"]} == {
        v for v in REDUCE_OPS.values() if v >= REDUCE_OPS["argmax"]
    }
    assert {v for v in REDUCE_OPS.values() if v >= REDUCE_OPS["max"]} == {
        REDUCE_OPS[k] for k in ("max", "min", "argmax", "argmin")
    }


@pytest.mark.skipif(not HAVE_TOOLS, reason="glslangValidator not installed")
def test_compile_error_is_a_qopt_error() -> None:
    from qopt.errors import QoptError

    with pytest.raises(QoptError, match="glslangValidator failed"):
        compile_glsl("#version 450\nvoid main() { undefined_thing; }\n", "bad.glsl")


def test_packing_round_trip() -> None:
    for bits, lo in ((4, -8), (8, -128), (2, 0), (1, 0), (4, 0)):
        v = RNG.integers(lo, lo + (1 << bits), size=(5, 37))
        w = pack_bits(v, bits, lo)
        assert w.dtype == np.uint32
        assert (w.shape[1] * 32) % 128 == 0
        assert np.array_equal(unpack_bits(w, bits, 37, lo), v)
    # q4gsw order: even element in the low nibble, value + 8
    assert pack_bits(np.array([[1, -2] + [0] * 30]), 4, -8)[0, 0] & 0xFF == (6 << 4) | 9
    assert pack_bits(np.array([[1, 0, 1, 1] + [0] * 28]), 1)[0, 0] == 0b1101
    assert pack_bits(np.array([[3, 0, 2] + [0] * 13]), 2)[0, 0] == (2 << 4) | 3
    assert pack_bits(np.zeros((3, 0), np.int8), 4).shape == (3, 0)
    for bad in (8, -9):
        with pytest.raises(ValueError, match=r"outside \[-8, 7\]"):
            pack_bits(np.array([[0, bad]]), 4, -8)
    data = RNG.integers(-8, 8, size=(6, 64))
    s = RNG.random((6, 2), dtype=F32)
    zp = RNG.integers(-3, 3, size=(6, 2))
    p = pack_affine(data, s, zp, -8, 7)
    expect = (data - np.repeat(zp, 32, 1)) * np.repeat(s.astype(np.float64), 32, 1)
    assert np.array_equal(unpack_affine(p), expect)


def test_packing_bytes_without_padding() -> None:
    """int8 / uint8 rows that fill whole 128-bit chunks are packed from the bytes
    themselves: the same words as from wider integers, the input left as it was."""
    for bits, lo in ((4, -8), (8, -128), (2, 0), (1, 0), (4, 0), (8, 0), (2, -2)):
        cols = 128 // bits * 3
        wide = RNG.integers(lo, lo + (1 << bits), size=(7, cols))
        narrow = wide.astype(np.int8 if lo < 0 else np.uint8)
        words = pack_bits(narrow, bits, lo)
        assert np.array_equal(narrow, wide)
        assert np.array_equal(words, pack_bits(wide, bits, lo))
        per_word = 32 // bits
        fields = (wide - lo).astype(np.uint64).reshape(7, -1, per_word)
        shifts = np.arange(per_word, dtype=np.uint64) * np.uint64(bits)
        expect = (fields << shifts).sum(axis=-1)  # field i of a word at bit bits * i
        assert words.dtype == np.uint32
        assert np.array_equal(words, expect)


# ----- device tests -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dev(validated_device: VulkanDevice) -> VulkanDevice:
    """The validated device of tests/unit/kernels/conftest.py."""
    return validated_device


def run_kernel(
    dev: VulkanDevice,
    name: str,
    inputs: dict[str, np.ndarray],
    outputs: dict[str, tuple[type, int]],
    push: dict,
    spec: dict | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Run kernel `name` on the device and its reference; (device, reference) outputs."""
    kspec = kernels()[name]
    spec = spec or {}
    bufs = {}
    host: dict[str, np.ndarray] = {}
    for b in kspec.bindings:
        if b.name in inputs:
            arr = np.ascontiguousarray(inputs[b.name]).reshape(-1)
            assert arr.dtype.itemsize == 4, (b.name, arr.dtype)
            bufs[b.name] = dev.upload(arr)
            host[b.name] = arr.copy()
        elif b.name in outputs:
            dtype, count = outputs[b.name]
            init = np.zeros(count, dtype=dtype)
            if b.name in inputs:
                init = inputs[b.name]
            bufs[b.name] = dev.upload(init)
            host[b.name] = init.copy()
        else:  # an unused optional binding
            bufs[b.name] = dev.buffer(16)
            host[b.name] = np.zeros(4, dtype=F32)
    dev.run([Dispatch(name, bufs, push, spec)])
    got = {k: dev.download(bufs[k], dtype, (count,)) for k, (dtype, count) in outputs.items()}
    kspec.reference(host, push, {n: spec.get(n, d) for n, d in kspec.spec})
    ref = {
        k: host[k].reshape(-1).view(np.uint32).view(dtype)[:count]
        for k, (dtype, count) in outputs.items()
    }
    for b in bufs.values():
        b.free()
    return got, ref


def close(got: np.ndarray, ref: np.ndarray, tol: float = 1e-5) -> None:
    assert got.shape == ref.shape
    if got.dtype.kind in "iu":
        assert np.array_equal(got, ref), np.flatnonzero(got != ref)[:10]
        return
    same_nan = np.isnan(got) == np.isnan(ref)
    assert same_nan.all()
    g, r = got[~np.isnan(got)], ref[~np.isnan(ref)]
    fin = np.isfinite(r)
    assert np.array_equal(g[~fin], r[~fin])
    scale = max(np.abs(r[fin]).max(initial=0.0), 1e-30)
    err = np.abs(g[fin].astype(np.float64) - r[fin]).max(initial=0.0) / scale
    assert err <= tol if tol == 0 else err < tol, err


def tclose(ref: np.ndarray, expect: np.ndarray | torch.Tensor, tol: float = 1e-5) -> None:
    """Reference vs an independent torch/numpy computation."""
    e = expect.detach().numpy() if isinstance(expect, torch.Tensor) else np.asarray(expect)
    close(np.asarray(ref).reshape(-1), e.reshape(-1).astype(np.asarray(ref).dtype), tol)


# -- elementwise


UNARY_TORCH = {
    "identity": lambda t: t,
    "relu": torch.relu,
    "silu": F.silu,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "exp": torch.exp,
    "log": torch.log,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "reciprocal": torch.reciprocal,
    "sin": torch.sin,
    "cos": torch.cos,
    "erf": torch.erf,
    "neg": torch.neg,
    "abs": torch.abs,
    "gelu": F.gelu,
    "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
    "floor": torch.floor,
    "ceil": torch.ceil,
    "round": torch.round,
    "clamp": lambda t: torch.clamp(t, -0.5, 0.75),
    "leaky_relu": lambda t: F.leaky_relu(t, 0.1),
    "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid,
    "square": torch.square,
    "log10": torch.log10,
    "log2": torch.log2,
    "tan": torch.tan,
    "hardshrink": lambda t: F.hardshrink(t, 0.5),
    "softshrink": lambda t: F.softshrink(t, 0.5),
    "sinh": torch.sinh,
    "cosh": torch.cosh,
    "trunc": torch.trunc,
    "sign": torch.sign,
    "asin": torch.asin,
    "acos": torch.acos,
    "atan": torch.atan,
    "expm1": torch.expm1,
    "log1p": torch.log1p,
    "logical_not": lambda t: torch.logical_not(t).int(),
    "to_bool": lambda t: (t != 0).int(),
    "cast_f32_i32": lambda t: t.int(),
    "signbit": lambda t: torch.signbit(t).int(),
}


def test_unary_f32(dev: VulkanDevice) -> None:
    n = 301
    x = (RNG.standard_normal(n) * 3).astype(F32)
    x[:6] = [0.5, 1.5, -2.5, 0.0, -0.0, 2.5]
    for name, op in UNARY_OPS.items():
        if name == "cast_i32_f32":
            continue
        xin = np.abs(x) + F32(0.1) if name in ("log", "log10", "log2", "sqrt", "rsqrt") else x
        xin = np.clip(x, -1.4, 1.4) if name == "tan" else xin  # away from the poles
        xin = np.clip(x / 4, -1, 1) if name in ("asin", "acos") else xin
        xin = np.abs(x) - F32(0.95) if name == "log1p" else xin
        int_out = name in ("logical_not", "to_bool", "cast_f32_i32", "signbit")
        dtype = np.int32 if int_out else F32
        a = {"leaky_relu": 0.1, "hardshrink": 0.5, "softshrink": 0.5}.get(name, -0.5)
        push = {"n": n, "a": a, "b": 0.75}
        got, ref = run_kernel(dev, "unary", {"x": xin}, {"y": (dtype, n)}, push, {"OP": op})
        tol = 2e-5 if name in ("sin", "cos", "tan", "exp", "tanh", "gelu_tanh") else 1e-5
        close(got["y"], ref["y"], tol)
        tclose(ref["y"], UNARY_TORCH[name](torch.from_numpy(xin)), 3e-6 if not int_out else 0)


def test_unary_i32(dev: VulkanDevice) -> None:
    n = 50
    x = RNG.integers(-20, 20, n).astype(np.int32)
    expect = {
        "identity": x,
        "relu": np.maximum(x, 0),
        "neg": -x,
        "abs": np.abs(x),
        "clamp": np.clip(x, -5, 7),
        "logical_not": (x == 0).astype(np.int32),
        "to_bool": (x != 0).astype(np.int32),
        "cast_i32_f32": x.astype(F32),
        "sign": np.sign(x),
        "signbit": (x < 0).astype(np.int32),
    }
    for name in UNARY_INT_OPS:
        dtype = F32 if name == "cast_i32_f32" else np.int32
        got, ref = run_kernel(
            dev,
            "unary",
            {"x": x},
            {"y": (dtype, n)},
            {"n": n, "a": -5.0, "b": 7.0},
            {"OP": UNARY_OPS[name], "DTYPE": 1},
        )
        close(got["y"], ref["y"])
        tclose(ref["y"], expect[name], 0)


BINARY_TORCH = {
    "add": lambda a, b: torch.add(a, b, alpha=2),
    "sub": lambda a, b: torch.sub(a, b, alpha=2),
    "mul": torch.mul,
    "div": torch.div,
    "pow": torch.pow,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "eq": torch.eq,
    "ne": torch.ne,
    "lt": torch.lt,
    "le": torch.le,
    "gt": torch.gt,
    "ge": torch.ge,
    "logical_and": torch.logical_and,
    "logical_or": torch.logical_or,
    "remainder": torch.remainder,
    "fmod": torch.fmod,
    "floor_divide": torch.floor_divide,
    "trunc_divide": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "bitwise_and": torch.bitwise_and,
    "bitwise_or": torch.bitwise_or,
    "bitwise_xor": torch.bitwise_xor,
    "bitwise_left_shift": torch.bitwise_left_shift,
    "bitwise_right_shift": torch.bitwise_right_shift,
}


@pytest.mark.parametrize("dtype", ["f32", "i32"])
def test_binary_broadcast(dev: VulkanDevice, dtype: str) -> None:
    ash, bsh, osh = (2, 3, 1, 5), (3, 4, 1), (2, 3, 4, 5)
    if dtype == "f32":
        a = RNG.standard_normal(ash).astype(F32)
        b = RNG.standard_normal(bsh).astype(F32)
        b[0, 0, 0] = a[0, 0, 0, 0]
    else:
        a = RNG.integers(-9, 9, ash).astype(np.int32)
        b = RNG.integers(1, 5, bsh).astype(np.int32) * RNG.choice([-1, 1], bsh).astype(np.int32)
    push = elementwise_push(osh, sa=broadcast_strides(ash, osh), sb=broadcast_strides(bsh, osh))
    push.update(a_off=0, b_off=0, alpha=2.0)
    n = push["n"]
    for name, op in BINARY_OPS.items():
        if dtype == "i32" and name == "div":
            continue
        if dtype == "f32" and name.startswith("bitwise"):
            continue  # integer-only (convert-to-vkc refuses float operands)
        aa = np.abs(a) + F32(0.5) if name == "pow" and dtype == "f32" else a
        bb = b
        if name == "pow" and dtype == "i32":
            bb = b * 2  # torch's powi: 9 ** 8 > 2 ** 24 exactly, 0 / +-1 for b < 0
        outd = np.int32 if (op in BINARY_BOOL_OPS or dtype == "i32") else F32
        got, ref = run_kernel(
            dev,
            "binary",
            {"a": aa, "b": bb},
            {"out": (outd, n)},
            push,
            {"OP": op, "DTYPE": int(dtype == "i32")},
        )
        close(got["out"], ref["out"], 2e-5 if name == "pow" else 1e-5)
        expect = BINARY_TORCH[name](torch.from_numpy(aa), torch.from_numpy(bb))
        if expect.dtype == torch.bool:
            expect = expect.int()
        tclose(ref["out"], expect, 1e-6 if outd == F32 else 0)


def test_where_copy_fill(dev: VulkanDevice) -> None:
    osh = (2, 3, 4)
    c = (RNG.random((3, 1)) > 0.5).astype(np.int32)
    a = RNG.standard_normal(osh).astype(F32)
    b = RNG.standard_normal((4,)).astype(F32)
    push = elementwise_push(
        osh,
        sc=broadcast_strides(c.shape, osh),
        sa=broadcast_strides(a.shape, osh),
        sb=broadcast_strides(b.shape, osh),
    )
    got, ref = run_kernel(dev, "where", {"cond": c, "a": a, "b": b}, {"out": (F32, 24)}, push)
    close(got["out"], ref["out"], 0)
    tclose(
        ref["out"],
        torch.where(torch.from_numpy(c).bool(), torch.from_numpy(a), torch.from_numpy(b)),
        0,
    )
    # permute (2, 0, 1) of a [2, 3, 4] tensor, written at offset 3 of a bigger buffer
    x = RNG.standard_normal((2, 3, 4)).astype(F32)
    perm = np.transpose(x, (2, 0, 1))
    push = elementwise_push(perm.shape, si=(1, 12, 4), so=(6, 3, 1))
    push.update(in_off=0, out_off=3)
    got, ref = run_kernel(dev, "copy_strided", {"x": x}, {"y": (F32, 30)}, push)
    close(got["y"], ref["y"], 0)
    tclose(ref["y"][3:27], perm.copy(), 0)
    # slice x[:, 1:, ::2]
    push = elementwise_push((2, 2, 2), si=(12, 4, 2), so=(4, 2, 1))
    push.update(in_off=4, out_off=0)
    got, ref = run_kernel(dev, "copy_strided", {"x": x}, {"y": (F32, 8)}, push)
    close(got["y"], ref["y"], 0)
    tclose(ref["y"], x[:, 1:, ::2].copy(), 0)
    for mode, start, step, expect in (
        (0, 0.5, 0.25, np.arange(10) * 0.25 + 0.5),
        (1, -3, 2, np.arange(10) * 2 - 3),
    ):
        dtype = F32 if mode == 0 else np.int32
        kind = "f32" if mode == 0 else "i32"
        push = {"n": 10, "start": word_of(start, kind), "step": word_of(step, kind)}
        got, ref = run_kernel(dev, "fill", {}, {"y": (dtype, 10)}, push, {"MODE": mode})
        close(got["y"], ref["y"], 0)
        tclose(ref["y"], expect.astype(dtype), 0)


# -- rows


def test_rows(dev: VulkanDevice) -> None:
    rows, cols = 5, 77
    x = RNG.standard_normal((rows, cols)).astype(F32)
    t = torch.from_numpy(x)
    push = {"rows": rows, "cols": cols}
    for name, op in REDUCE_OPS.items():
        if name.startswith("arg"):  # int32 indices written into the word buffer
            x[2, 5] = x[2, 60] = x[2].max() + 1  # a tie: the first wins
            got, ref = run_kernel(
                dev, "reduce_rows", {"x": x}, {"y": (np.int32, rows)}, push, {"OP": op}
            )
            np.testing.assert_array_equal(got["y"], ref["y"])
            t = torch.from_numpy(x)
            expect = t.argmax(1) if name == "argmax" else t.argmin(1)
            np.testing.assert_array_equal(ref["y"], expect.numpy())
            continue
        got, ref = run_kernel(dev, "reduce_rows", {"x": x}, {"y": (F32, rows)}, push, {"OP": op})
        close(got["y"], ref["y"])
        expect = {"sum": t.sum(1), "mean": t.mean(1), "max": t.amax(1), "min": t.amin(1)}[name]
        tclose(ref["y"], expect)
    for log in (0, 1):
        got, ref = run_kernel(
            dev, "softmax_rows", {"x": x}, {"y": (F32, x.size)}, push, {"LOG": log}
        )
        close(got["y"], ref["y"])
        tclose(ref["y"], F.log_softmax(t, -1) if log else F.softmax(t, -1))
    w = RNG.standard_normal(cols).astype(F32)
    b = RNG.standard_normal(cols).astype(F32)
    for hw, hb, rms in ((1, 1, 0), (0, 0, 0), (1, 0, 1)):
        got, ref = run_kernel(
            dev,
            "layer_norm_rows",
            {"x": x, "weight": w, "bias": b},
            {"y": (F32, x.size)},
            {**push, "eps": 1e-5},
            {"HAS_WEIGHT": hw, "HAS_BIAS": hb, "RMS": rms},
        )
        close(got["y"], ref["y"])
        tw = torch.from_numpy(w) if hw else None
        if rms:
            expect = F.rms_norm(t, (cols,), tw, 1e-5)
        else:
            expect = F.layer_norm(t, (cols,), tw, torch.from_numpy(b) if hb else None, 1e-5)
        tclose(ref["y"], expect)


# -- matmul, conv, pool, gather, sdpa


def test_scatter_dim_strided_values(dev: VulkanDevice) -> None:
    """scatter_dim with VMAP = 1 reads vals[VOFF + p*VSP + s*VSS + q*VSQ]: the device
    bit for bit its reference, and both the scatter of that strided slice."""
    p, n, q, s = 2, 6, 4, 3
    src = RNG.standard_normal(64).astype(F32)
    spec = {"VMAP": 1, "VOFF": 5, "VSP": 1, "VSS": 16, "VSQ": 2}
    idx = np.array([4, 0, 2], np.int32)
    push = {"P": p, "N": n, "Q": q, "S": s}
    outs = {"out": (F32, p * n * q), "status": (np.uint32, 1)}
    got, ref = run_kernel(dev, "scatter_dim", {"vals": src, "idx": idx}, outs, push, spec)
    assert got["out"].tobytes() == ref["out"].tobytes()
    at = 5 + np.arange(p)[:, None, None] + 16 * np.arange(s)[None, :, None]
    vals = src[at + 2 * np.arange(q)[None, None, :]]
    expect = np.zeros((p, n, q), F32)
    expect[:, idx, :] = vals
    assert np.array_equal(ref["out"].reshape(p, n, q), expect)


def test_rms_norm_rows_sums_as_reduce_rows() -> None:
    """rms_norm_rows.glsl's chain_sum is reduce_rows.glsl's (the same cascade order)."""

    def chain_sum(glsl: str) -> str:
        text = kernel_source(glsl)
        start = text.index("float chain_sum(")
        return text[start : text.index("\n}\n", start)]

    assert chain_sum("rms_norm_rows.glsl") == chain_sum("reduce_rows.glsl")


def test_rms_norm_rows(dev: VulkanDevice) -> None:
    """rms_norm_rows: the device bit for bit its reference (rows shorter than 8, with a
    tail, and long ones; with and without the residual add and the h output), and the
    reference close to torch's RMSNorm of a + alpha * b."""
    for rows, cols in ((3, 5), (2, 77), (2, 300)):
        a = RNG.standard_normal((rows, cols)).astype(F32)
        b = RNG.standard_normal((rows, cols)).astype(F32)
        w = RNG.standard_normal(cols + 3).astype(F32)
        for has_add, has_h in ((0, 0), (1, 1), (1, 0)):
            push = {
                "rows": rows,
                "cols": cols,
                "alpha": 0.5,
                "eps": 1e-5,
                "w_off": 3,
                "qmin": 0,
                "qmax": 0,
                "q_eps": 0.0,
                "q_qmin": 0,
                "q_qmax": 0,
            }
            outs = {"y": (F32, a.size), "h": (F32, a.size if has_h else 4)}
            spec = {"HAS_ADD": has_add, "HAS_H": has_h}
            got, ref = run_kernel(dev, "rms_norm_rows", {"a": a, "b": b, "w": w}, outs, push, spec)
            assert got["y"].tobytes() == ref["y"].tobytes()
            assert got["h"].tobytes() == ref["h"].tobytes()
            h = torch.from_numpy(a + np.float32(0.5) * b if has_add else a)
            expect = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-5) * w[3:]
            tclose(ref["y"], expect)
            if has_h:
                tclose(ref["h"], h)


def test_rms_norm_rows_quantizes(dev: VulkanDevice) -> None:
    """rms_norm_rows with QUANT: the device bit for bit its reference, y as without
    QUANT, and scale / zp / q bit for bit quantize_rows_dynamic of that y (every
    mapping, both rounding orders)."""
    for rows, cols in ((3, 5), (2, 300)):
        a = RNG.standard_normal((rows, cols)).astype(F32)
        b = RNG.standard_normal((rows, cols)).astype(F32)
        w = RNG.standard_normal(cols).astype(F32)
        norm = {"rows": rows, "cols": cols, "alpha": 1.0, "eps": 1e-5, "w_off": 0}
        quant = {"qmin": -128, "qmax": 127, "eps": float(np.finfo(F32).eps)}
        words = {"scale": (F32, rows), "zp": (np.int32, rows), "q": (np.int32, a.size)}
        for mapping in MAPPINGS.values():
            for zp_first in (0, 1):
                push = {**norm, "qmin": -128, "qmax": 127, "q_eps": quant["eps"]}
                push.update({"q_qmin": -100, "q_qmax": 100})
                spec = {"HAS_ADD": 1, "HAS_H": 1, "QUANT": 1, "MAPPING": mapping}
                spec["ZP_BEFORE_ROUND"] = zp_first
                outs = {"y": (F32, a.size), "h": (F32, a.size), **words}
                got, ref = run_kernel(
                    dev, "rms_norm_rows", {"a": a, "b": b, "w": w}, outs, push, spec
                )
                for name in outs:
                    assert got[name].tobytes() == ref[name].tobytes(), name
                _, alone = run_kernel(
                    dev,
                    "quantize_rows_dynamic",
                    {"x": ref["y"].reshape(rows, cols)},
                    words,
                    {"rows": rows, "cols": cols, **quant, "q_qmin": -100, "q_qmax": 100},
                    {"MAPPING": mapping, "ZP_BEFORE_ROUND": zp_first},
                )
                for name in words:
                    assert alone[name].tobytes() == ref[name].tobytes(), name


@pytest.mark.parametrize(
    "trans_b,npw,mt,k",
    [(1, 4, 1, 45), (1, 3, 2, 45), (0, 4, 1, 45), (1, 8, 3, 44), (1, 1, 1, 44)],
)
def test_matmul(dev: VulkanDevice, trans_b: int, npw: int, mt: int, k: int) -> None:
    """TRANS_B 1: the GEMV (NPW = MT = 1) and the tile (M, N not multiples of it), with
    scalar (K = 45) and vec4 (K = 44) loads; TRANS_B 0."""
    batch, m, n = 2, 5, 7
    a = RNG.standard_normal((batch, m, k)).astype(F32)
    b = RNG.standard_normal((batch, n, k) if trans_b else (batch, k, n)).astype(F32)
    bias = RNG.standard_normal(n).astype(F32)
    push = {"M": m, "N": n, "K": k, "batch": batch, "a_bs": m * k, "b_bs": n * k}
    got, ref = run_kernel(
        dev,
        "matmul",
        {"a": a, "b": b, "bias": bias},
        {"out": (F32, batch * m * n)},
        push,
        {"TRANS_B": trans_b, "HAS_BIAS": 1, "NPW": npw, "MT": mt},
    )
    close(got["out"], ref["out"])
    tb = torch.from_numpy(b)
    expect = torch.from_numpy(a) @ (tb.transpose(1, 2) if trans_b else tb) + torch.from_numpy(bias)
    tclose(ref["out"], expect)


def _conv_push(x_shape, w_shape, stride, pad, dil, groups) -> dict:
    n, c, h, w = x_shape
    oc, _, kh, kw = w_shape
    oh = conv_out(h, kh, stride[0], pad[0], dil[0])
    ow = conv_out(w, kw, stride[1], pad[1], dil[1])
    return {
        "N": n,
        "C": c,
        "H": h,
        "W": w,
        "OC": oc,
        "OH": oh,
        "OW": ow,
        "KH": kh,
        "KW": kw,
        "sh": stride[0],
        "sw": stride[1],
        "ph": pad[0],
        "pw": pad[1],
        "dh": dil[0],
        "dw": dil[1],
        "groups": groups,
    }


def test_conv_pool_gather(dev: VulkanDevice) -> None:
    x = RNG.standard_normal((2, 4, 7, 6)).astype(F32)
    w = RNG.standard_normal((6, 2, 3, 2)).astype(F32)
    bias = RNG.standard_normal(6).astype(F32)
    push = _conv_push(x.shape, w.shape, (2, 1), (1, 1), (1, 2), 2)
    count = 2 * 6 * push["OH"] * push["OW"]
    got, ref = run_kernel(
        dev, "conv2d", {"x": x, "w": w, "bias": bias}, {"y": (F32, count)}, push, {"HAS_BIAS": 1}
    )
    close(got["y"], ref["y"])
    # tiles of 2 channels (3 per group: some straddle a group) x 4 columns (OW = 6)
    tiled, _ = run_kernel(
        dev,
        "conv2d",
        {"x": x, "w": w, "bias": bias},
        {"y": (F32, count)},
        push,
        {"HAS_BIAS": 1, "OCT": 2, "OWT": 4},
    )
    np.testing.assert_array_equal(tiled["y"], got["y"])  # the same sums in the same order
    # 8 columns (more than OW = 6: a tile tail) x 4 channels: some straddle a group
    wide, _ = run_kernel(
        dev,
        "conv2d",
        {"x": x, "w": w, "bias": bias},
        {"y": (F32, count)},
        push,
        {"HAS_BIAS": 1, "OCT": 4, "OWT": 8},
    )
    np.testing.assert_array_equal(wide["y"], got["y"])
    # stride and dilation 1 along the width (tile_s1: the x window shifted per tap), the
    # padding column on both sides; every tile sums as the one-output loop
    push1 = _conv_push(x.shape, w.shape, (2, 1), (1, 1), (2, 1), 2)
    count1 = 2 * 6 * push1["OH"] * push1["OW"]
    ins = {"x": x, "w": w, "bias": bias}
    base, ref1 = run_kernel(dev, "conv2d", ins, {"y": (F32, count1)}, push1, {"HAS_BIAS": 1})
    close(base["y"], ref1["y"])
    for oct_, owt in ((3, 8), (2, 3), (1, 2)):
        t1, _ = run_kernel(
            dev,
            "conv2d",
            ins,
            {"y": (F32, count1)},
            push1,
            {"HAS_BIAS": 1, "OCT": oct_, "OWT": owt},
        )
        np.testing.assert_array_equal(t1["y"], base["y"])
    tclose(
        ref["y"],
        F.conv2d(
            torch.from_numpy(x),
            torch.from_numpy(w),
            torch.from_numpy(bias),
            (2, 1),
            (1, 1),
            (1, 2),
            2,
        ),
    )
    t = torch.from_numpy(x)
    planes = 8
    for op, kw_, ceil, cip in (("max", {}, True, 1), ("avg", {}, True, 1), ("avg", {}, False, 0)):
        k_, s_, p_ = (3, 2), (2, 2), (1, 0)
        if op == "max":
            expect = F.max_pool2d(t, k_, s_, p_, (1, 1), ceil_mode=ceil)
        else:
            expect = F.avg_pool2d(t, k_, s_, p_, ceil_mode=ceil, count_include_pad=bool(cip))
        oh, ow = expect.shape[2:]
        push = {
            "planes": planes,
            "H": 7,
            "W": 6,
            "OH": oh,
            "OW": ow,
            "KH": 3,
            "KW": 2,
            "sh": 2,
            "sw": 2,
            "ph": 1,
            "pw": 0,
            "dh": 1,
            "dw": 1,
            "divisor_override": 0,
        }
        got, ref = run_kernel(
            dev,
            "pool2d",
            {"x": x},
            {"y": (F32, planes * oh * ow)},
            push,
            {"OP": POOL_OPS[op], "COUNT_INCLUDE_PAD": cip},
        )
        close(got["y"], ref["y"])
        tclose(ref["y"], expect)
    push = {"planes": planes, "H": 7, "W": 6, "OH": 3, "OW": 4}
    got, ref = run_kernel(dev, "adaptive_avg_pool2d", {"x": x}, {"y": (F32, planes * 12)}, push)
    close(got["y"], ref["y"])
    tclose(ref["y"], F.adaptive_avg_pool2d(t, (3, 4)))
    table = RNG.standard_normal((10, 6)).astype(F32)
    idx = np.array([3, 0, 9, -1, 4], dtype=np.int32)
    got, ref = run_kernel(
        dev,
        "gather_rows",
        {"table": table, "idx": idx},
        {"y": (F32, 30)},
        {"n": 5, "D": 6, "V": 10},
    )
    close(got["y"], ref["y"], 0)
    tclose(ref["y"], table[idx], 0)


@pytest.mark.parametrize("mask,causal,group", [(0, 0, 1), (1, 0, 1), (0, 1, 1), (1, 0, 3)])
def test_sdpa(dev: VulkanDevice, mask: int, causal: int, group: int) -> None:
    """group: query heads per key/value head (G; 3 = every query head of a batch reads
    one key/value head, as grouped-query attention reads its cache)."""
    b, h, lq, s, e = 2, 3, 4, 5, 8
    q = RNG.standard_normal((b, h, lq, e)).astype(F32)
    k = RNG.standard_normal((b, h // group, s, e)).astype(F32)
    v = RNG.standard_normal((b, h // group, s, e)).astype(F32)
    m = RNG.standard_normal((lq, s)).astype(F32)
    scale = 1 / np.sqrt(e)
    push = {
        "BH": b * h,
        "H": h,
        "L": lq,
        "S": s,
        "E": e,
        "EV": e,
        "G": group,
        "scale": scale,
        "mb": 0,
        "mh": 0,
        "ml": s,
        "ms": 1,
    }
    got, ref = run_kernel(
        dev,
        "sdpa",
        {"q": q, "k": k, "v": v, "mask": m},
        {"out": (F32, q.size)},
        push,
        {"HAS_MASK": mask, "CAUSAL": causal},
    )
    close(got["out"], ref["out"])
    tq = torch.from_numpy(q)
    tk, tv = (torch.from_numpy(a).repeat_interleave(group, 1) for a in (k, v))
    expect = F.scaled_dot_product_attention(
        tq, tk, tv, attn_mask=torch.from_numpy(m) if mask else None, is_causal=bool(causal)
    )
    tclose(ref["out"], expect)


@pytest.mark.parametrize("e,voff", [(8, 7), (8, 8), (6, 7), (132, 8)])
def test_sdpa_stride_maps(dev: VulkanDevice, e: int, voff: int) -> None:
    """VMAP / OMAP: v read out of a [S, heads, EV] layout with an offset and the output
    written as [L, heads, EV] (the transposes vkc-fold-copies folds in): the device bit
    for bit the row-major sdpa on the transposed copies, the reference close to it; REG
    (rows in registers) bit for bit the same, with and without the maps: named vec4s
    (e = 8; v through the mapped scalar loads at offset 7, as vec4s at offset 8) or the
    register array (e = 6, e = 132 > 128)."""
    h, lq, s = 3, 4, 5
    q = RNG.standard_normal((h, lq, e)).astype(F32)
    k = RNG.standard_normal((h, s, e)).astype(F32)
    raw = RNG.standard_normal(voff + s * h * e).astype(F32)  # v at offset voff: [s, h, e]
    v = raw[voff:].reshape(s, h, e).transpose(1, 0, 2)
    push = {"BH": h, "H": h, "L": lq, "S": s, "E": e, "EV": e, "G": 1, "scale": 0.5}
    push.update({"mb": 0, "mh": 0, "ml": 0, "ms": 0})
    plain, _ = run_kernel(
        dev, "sdpa", {"q": q, "k": k, "v": np.ascontiguousarray(v)}, {"out": (F32, q.size)}, push
    )
    maps = {"VMAP": 1, "VOFF": voff, "VSH": e, "VSS": h * e, "VSE": 1}
    maps.update({"OMAP": 1, "OOFF": 0, "OSH": e, "OSL": h * e, "OSE": 1})
    got, ref = run_kernel(
        dev, "sdpa", {"q": q, "k": k, "v": raw}, {"out": (F32, q.size)}, push, maps
    )
    moved = plain["out"].reshape(h, lq, e).transpose(1, 0, 2).reshape(-1)
    assert got["out"].tobytes() == moved.tobytes()
    close(got["out"], ref["out"])
    # REG: the rows in registers, the same operations (both layouts)
    regs, _ = run_kernel(
        dev,
        "sdpa",
        {"q": q, "k": k, "v": np.ascontiguousarray(v)},
        {"out": (F32, q.size)},
        push,
        {"REG": e},
    )
    assert regs["out"].tobytes() == plain["out"].tobytes()
    regs, _ = run_kernel(
        dev, "sdpa", {"q": q, "k": k, "v": raw}, {"out": (F32, q.size)}, push, {**maps, "REG": e}
    )
    assert regs["out"].tobytes() == moved.tobytes()


def test_mask_bound_and_bounded_sdpa(dev: VulkanDevice) -> None:
    """mask_bound gives 1 + the last key some mask row leaves open (its reference the
    same word) for causal rows at positions 0, middle and last, a sliding window, NaN
    (open), every key masked (0) and several rows; sdpa BOUNDED = 1 reading that word
    computes the same bits as sdpa over every key, at each position (one query row and
    a 3-row prefill; REG and the row-major path), its reference close to torch."""
    s, e, heads = 37, 8, 4
    keys = np.arange(s)
    inf = np.float32(-np.inf)

    def causal(last: int) -> np.ndarray:
        return np.where(keys <= last, 0.0, inf).astype(F32)

    window = np.where((keys <= 20) & (keys > 15), 0.0, inf).astype(F32)
    nan = causal(3)
    nan[30] = np.nan
    masks = {
        "first": (causal(0)[None], 1),
        "middle": (causal(18)[None], 19),
        "last": (causal(s - 1)[None], s),
        "window": (window[None], 21),
        "nan": (nan[None], 31),
        "closed": (np.full((1, s), inf, F32), 0),
        "prefill": (np.stack([causal(9), causal(10), causal(11)]), 12),
    }
    for what, (mask, want) in masks.items():
        rows = mask.shape[0]
        got, ref = run_kernel(
            dev, "mask_bound", {"mask": mask}, {"bound": (np.uint32, 1)}, {"rows": rows, "S": s}
        )
        assert int(got["bound"][0]) == int(ref["bound"][0]) == want, what
        if what in ("nan", "closed"):
            continue
        q = RNG.standard_normal((heads, rows, e)).astype(F32)
        k = RNG.standard_normal((heads // 2, s, e)).astype(F32)
        v = RNG.standard_normal((heads // 2, s, e)).astype(F32)
        push = {"BH": heads, "H": heads, "L": rows, "S": s, "E": e, "EV": e, "G": 2}
        push.update({"scale": 0.35, "mb": 0, "mh": 0, "ml": s, "ms": 1})
        inputs = {"q": q, "k": k, "v": v, "mask": mask, "bound": got["bound"]}
        for reg in (0, e):
            spec = {"HAS_MASK": 1, "REG": reg}
            full, _ = run_kernel(dev, "sdpa", inputs, {"out": (F32, q.size)}, push, spec)
            bounded, bref = run_kernel(
                dev, "sdpa", inputs, {"out": (F32, q.size)}, push, {**spec, "BOUNDED": 1}
            )
            assert bounded["out"].tobytes() == full["out"].tobytes(), (what, reg)
            close(bounded["out"], bref["out"])
        expect = F.scaled_dot_product_attention(
            torch.from_numpy(q)[None],
            torch.from_numpy(k)[None].repeat_interleave(2, 1),
            torch.from_numpy(v)[None].repeat_interleave(2, 1),
            attn_mask=torch.from_numpy(mask),
            scale=0.35,
        )
        tclose(bref["out"], expect)


# -- standalone quantization


def test_quantize_dequantize(dev: VulkanDevice) -> None:
    from qopt.interpreters import quant as iq

    x = (RNG.standard_normal(200) * 4).astype(F32)
    scale, zp = 0.05, 3
    x[:4] = [scale * 2.5, scale * -3.5, scale * 0.5, 1000.0]
    inv = float(F32(1.0 / scale))
    for zfirst in (0, 1):
        push = {"n": 200, "inv_scale": inv, "zp": zp, "qmin": -128, "qmax": 127}
        got, ref = run_kernel(
            dev,
            "quantize_per_tensor",
            {"x": x},
            {"q": (np.int32, 200)},
            push,
            {"ZP_BEFORE_ROUND": zfirst},
        )
        close(got["q"], ref["q"])
        if zfirst == 0:  # PT2E quantize_per_tensor
            expect = torch.ops.quantized_decomposed.quantize_per_tensor(
                torch.from_numpy(x), scale, zp, -128, 127, torch.int8
            ).int()
        else:  # zero point added before rounding (quantize_per_token's order)
            expect = np.clip(np.round(x.astype(np.float64) * inv + zp), -128, 127)
        tclose(ref["q"], expect.astype(np.int32) if isinstance(expect, np.ndarray) else expect, 0)
    # dequantize: i32 per-channel [4, 6] on axis 0, zero points
    q = RNG.integers(-128, 128, (4, 6)).astype(np.int32)
    s = RNG.random(4).astype(F32)
    z = RNG.integers(-5, 5, 4).astype(np.int32)
    push = {
        "n": 24,
        "d0": 1,
        "d1": 1,
        "d2": 4,
        "d3": 6,
        "b0": 1,
        "b1": 1,
        "b2": 1,
        "b3": 6,
        "ps0": 0,
        "ps1": 0,
        "ps2": 1,
        "ps3": 0,
        "row_words": 6,
        "lo": 0,
    }
    got, ref = run_kernel(
        dev,
        "dequantize",
        {"data": q, "scales": s, "zeros": z},
        {"y": (F32, 24)},
        push,
        {"BITS": 32, "HAS_ZERO_POINT": 1},
    )
    close(got["y"], ref["y"], 0)
    tclose(ref["y"], iq.dequantize(q, s, z, (1, 6), F32, F32), 0)
    # packed int4 per-group [3, 64] g32
    q4 = RNG.integers(-8, 8, (3, 64))
    s4 = RNG.random((3, 2)).astype(F32)
    p = pack_affine(q4, s4, None, -8, 7)
    push = {
        "n": 192,
        "d0": 1,
        "d1": 1,
        "d2": 3,
        "d3": 64,
        "b0": 1,
        "b1": 1,
        "b2": 1,
        "b3": 32,
        "ps0": 0,
        "ps1": 0,
        "ps2": 2,
        "ps3": 1,
        "row_words": p.row_words,
        "lo": p.lo,
    }
    got, ref = run_kernel(
        dev,
        "dequantize",
        {"data": p.weight, "scales": p.scales},
        {"y": (F32, 192)},
        push,
        {"BITS": 4},
    )
    close(got["y"], ref["y"], 0)
    tclose(ref["y"], iq.dequantize(q4, s4, None, (1, 32), F32, F32), 0)


@pytest.mark.parametrize("mapping", list(MAPPINGS))
def test_choose_qparams_and_quantize_rows(dev: VulkanDevice, mapping: str) -> None:
    from qopt.interpreters import quant as iq

    rows, cols = 6, 33
    x = (RNG.standard_normal((rows, cols)) * 3).astype(F32)
    x[1] = np.abs(x[1])
    x[2] = 0
    eps = float(np.finfo(F32).eps)
    push = {"rows": rows, "cols": cols, "qmin": -128, "qmax": 127, "eps": eps}
    got, ref = run_kernel(
        dev,
        "choose_qparams_rows",
        {"x": x},
        {"scale": (F32, rows), "zp": (np.int32, rows)},
        push,
        {"MAPPING": MAPPINGS[mapping]},
    )
    close(got["scale"], ref["scale"], 0)
    close(got["zp"], ref["zp"])
    es, ez = iq.choose_qparams(x, (1, cols), -128, 127, mapping, eps, F32, np.int32)
    tclose(ref["scale"], es, 0)
    tclose(ref["zp"], ez, 0)
    push = {"rows": rows, "cols": cols, "qmin": -128, "qmax": 127}
    got, ref = run_kernel(
        dev,
        "quantize_rows",
        {"x": x, "scale": es.reshape(-1), "zp": ez},
        {"q": (np.int32, x.size)},
        push,
    )
    close(got["q"], ref["q"])
    tclose(ref["q"], iq.quantize(x, es, ez, (1, cols), -128, 127, np.int32, F32), 0)
    # both in one dispatch: quantize_rows_dynamic, bit for bit the two
    for zp_first in (0, 1):
        got, ref = run_kernel(
            dev,
            "quantize_rows_dynamic",
            {"x": x},
            {"scale": (F32, rows), "zp": (np.int32, rows), "q": (np.int32, x.size)},
            {**push, "eps": eps, "q_qmin": -100, "q_qmax": 100},
            {"MAPPING": MAPPINGS[mapping], "ZP_BEFORE_ROUND": zp_first},
        )
        for name in ("scale", "zp", "q"):
            assert got[name].tobytes() == ref[name].tobytes(), name
        assert ref["scale"].tobytes() == es.reshape(-1).astype(F32).tobytes()
        expect = iq.quantize(x, es, ez, (1, cols), -100, 100, np.int32, F32)
        if not zp_first:
            tclose(ref["q"], expect, 0)


# -- fused


def _weight(bits: int, n: int, k: int, group: int, asym: bool):
    qmin, qmax = (-8, 7) if bits == 4 else (-128, 127)
    data = RNG.integers(qmin, qmax + 1, (n, k))
    s = (RNG.random((n, k // group)) * 0.1 + 0.01).astype(F32)
    zp = RNG.integers(-3, 4, (n, k // group)) if asym else None
    return data, s, zp, pack_affine(data, s, zp, qmin, qmax, group)


@pytest.mark.parametrize(
    "name,bits,k,group,asym,m,tile",
    [
        ("linear_q4gsw", 4, 96, 32, False, 1, (4, 1, 64)),
        ("linear_q4gsw", 4, 100, 4, True, 3, (3, 2, 32)),  # groups inside a chunk; K tail
        ("linear_q4gsw", 4, 64, 64, True, 5, (2, 4, 64)),
        ("linear_q8csw", 8, 72, 72, False, 1, (4, 1, 64)),
        ("linear_q8csw", 8, 48, 48, True, 4, (8, 2, 32)),
        # register-tiled path (MT 1, NPW <= 4, K a multiple of the chunk)
        ("linear_q4gsw", 4, 128, 32, False, 1, (4, 1, 64)),
        ("linear_q4gsw", 4, 128, 64, True, 2, (3, 1, 4)),
        ("linear_q4gsw", 4, 64, 32, False, 3, (1, 1, 8)),
        ("linear_q8csw", 8, 64, 64, False, 1, (4, 1, 64)),
        ("linear_q8csw", 8, 48, 48, True, 2, (2, 1, 4)),
        ("linear_q8csw", 8, 64, 16, False, 1, (4, 1, 2)),  # int8 per-group
        # prefill tile (gemm_tile: MT > 1 or NPW > 4): decoded words shared by MT rows,
        # M and N (11) not multiples of the tile
        ("linear_q4gsw", 4, 128, 32, False, 5, (2, 4, 64)),
        ("linear_q4gsw", 4, 128, 32, True, 3, (1, 2, 8)),
        ("linear_q4gsw", 4, 64, 64, False, 4, (2, 4, 4)),
        ("linear_q4gsw", 4, 64, 32, True, 11, (8, 8, 4)),
        ("linear_q8csw", 8, 64, 64, False, 7, (2, 3, 8)),
        ("linear_q8csw", 8, 48, 48, True, 2, (1, 4, 4)),
        ("linear_q8csw", 8, 64, 16, False, 6, (2, 2, 4)),
        ("linear_q8csw", 8, 80, 80, True, 13, (8, 7, 2)),
        # NPW 9..16 (gemm_tile's rows 8-15; the per-element loop's NPW * MT array) on
        # N = 37: three column blocks of 16, the last one clamped
        ("linear_q4gsw", 4, 128, 32, False, 9, (16, 5, 2)),
        ("linear_q4gsw", 4, 64, 32, True, 3, (13, 2, 1)),
        ("linear_q8csw", 8, 64, 64, False, 17, (16, 8, 1)),
        ("linear_q4gsw", 4, 100, 4, True, 3, (16, 2, 4)),
    ],
)
def test_linear_weight_only(dev, name, bits, k, group, asym, m, tile) -> None:
    n = 11 if tile[0] <= 8 else 37
    data, s, zp, p = _weight(bits, n, k, group, asym)
    x = RNG.standard_normal((m, k)).astype(F32)
    bias = RNG.standard_normal(n).astype(F32)
    inputs = {"x": x, "w": p.weight, "scales": p.scales, "bias": bias}
    if asym:
        inputs["zeros"] = p.zeros
    push = {"M": m, "N": n, "K": k, "row_words": p.row_words, "ngroups": p.ngroups}
    spec = {
        "WBITS": bits,
        "GROUP_SIZE": group,
        "HAS_ZERO_POINT": int(asym),
        "HAS_BIAS": 1,
        "NPW": tile[0],
        "MT": tile[1],
        "WG": tile[2],
    }
    got, ref = run_kernel(dev, name, inputs, {"out": (F32, m * n)}, push, spec)
    close(got["out"], ref["out"])
    z = np.zeros_like(s) if zp is None else zp
    w = (data - np.repeat(z, group, 1)) * np.repeat(s.astype(np.float64), group, 1)
    tclose(
        ref["out"],
        F.linear(
            torch.from_numpy(x).double(), torch.from_numpy(w), torch.from_numpy(bias).double()
        ),
    )


@pytest.mark.parametrize(
    "input_quantized,asym,requant,k,tile",
    [(0, 0, 1, 40, (4, 1)), (1, 1, 0, 42, (8, 2)), (0, 1, 1, 37, (3, 4))],  # K % 4 tails
)
def test_linear_q8ta(dev, input_quantized: int, asym: int, requant: int, k: int, tile) -> None:
    m, n = 3, 9
    data, s, zp, p = _weight(8, n, k, k, bool(asym))
    x = RNG.standard_normal((m, k)).astype(F32)
    bias = RNG.standard_normal(n).astype(F32)
    act, out_q = (0.02, 5, -128, 127), (0.05, -10, -128, 127)
    push = {
        "M": m,
        "N": n,
        "K": k,
        "row_words": p.row_words,
        **static_io_push(act, out_q if requant else None, clamp_min=0.0),
    }
    xq = ref_quantize(x, push["in_inv_scale"], 5, -128, 127).astype(np.int32)
    inputs = {
        "x": xq if input_quantized else x,
        "w": p.weight,
        "scales": p.scales,
        "bias": bias,
        "zeros": p.zeros if asym else np.zeros(1, np.int32),
    }
    spec = {
        "INPUT_QUANTIZED": input_quantized,
        "HAS_ZERO_POINT": asym,
        "HAS_BIAS": 1,
        "REQUANT": requant,
        "NPW": tile[0],
        "MT": tile[1],
        "WG": 2,
    }
    dtype = np.int32 if requant else F32
    got, ref = run_kernel(dev, "linear_q8ta_q8csw", inputs, {"out": (dtype, m * n)}, push, spec)
    np.testing.assert_array_equal(got["out"], ref["out"])  # bit-exact (exact=always)
    # independent: dequantize, float64 linear, relu, quantize (may differ by one step)
    z = np.zeros_like(s) if zp is None else zp
    xd = (xq.astype(np.float64) - 5) * float(F32(0.02))
    y = np.maximum(xd @ ((data - z) * s.astype(np.float64)).T + bias, 0)
    if requant:
        expect = np.clip(np.round(y / 0.05) - 10, -128, 127)
        assert np.abs(ref["out"] - expect.reshape(-1)).max() <= 1
    else:
        tclose(ref["out"], y)


@pytest.mark.parametrize(
    "bits,group,tile,x_ubo",
    [
        (4, 16, (4, 1), 0),
        (8, 64, (4, 1), 0),
        (4, 32, (4, 1), 0),
        (4, 32, (2, 4), 0),
        (8, 32, (8, 3), 0),
        (4, 32, (16, 5), 0),
        (8, 32, (13, 2), 0),
        (4, 32, (4, 1), 1),
        (8, 32, (8, 3), 1),
        (4, 16, (4, 1), 1),
    ],
)
def test_linear_dq8ca(dev, bits: int, group: int, tile: tuple[int, int], x_ubo: int) -> None:
    """The per-element loop (int4 groups of 16) and the chunked GEMV (NPW 4, MT 1) and
    gemm_tile (M = 5, N = 7 not multiples of the tile; int8 groups of two chunks; NPW
    above 8 on N = 37: gemm_tile's rows 8-15, the last block clamped) paths, bit for bit
    against the reference; with X_UBO xq read through the uniform block (the chunked
    paths; the per-element loop still reads the storage view)."""
    from qopt.interpreters import quant as iq

    m, n, k = 5, 7 if tile[0] <= 8 else 37, 64
    data, s, zp, p = _weight(bits, n, k, group, True)
    x = RNG.standard_normal((m, k)).astype(F32)
    xs, xz = iq.choose_qparams(x, (1, k), -128, 127, "asymmetric", 1e-7, F32, np.int32)
    xq = iq.quantize(x, xs, xz, (1, k), -128, 127, np.int32, F32)
    bias = RNG.standard_normal(n).astype(F32)
    name = "linear_dq8ca_q4gsw" if bits == 4 else "linear_dq8ca_q8csw"
    inputs = {
        "xq": xq,
        "x_scale": xs.reshape(-1),
        "x_zp": xz.reshape(-1),
        "w": p.weight,
        "scales": p.scales,
        "zeros": p.zeros,
        "bias": bias,
    }
    push = {"M": m, "N": n, "K": k, "row_words": p.row_words, "ngroups": p.ngroups}
    spec = {"WBITS": bits, "GROUP_SIZE": group, "HAS_ZERO_POINT": 1, "HAS_BIAS": 1}
    spec |= {"NPW": tile[0], "MT": tile[1]}
    if x_ubo:
        spec |= {"X_UBO": 1, "XU_VEC4": m * k // 4}
    got, ref = run_kernel(dev, name, inputs, {"out": (F32, m * n)}, push, spec)
    np.testing.assert_array_equal(got["out"], ref["out"])
    xd = (xq - xz).astype(np.float64) * xs.astype(np.float64)
    w = (data - np.repeat(zp, group, 1)) * np.repeat(s.astype(np.float64), group, 1)
    tclose(ref["out"], xd @ w.T + bias)


@pytest.mark.parametrize(
    "nbits,block,k,m,tile",
    [
        (4, (3, 16), 32, 2, (4, 1)),
        (3, (1, 36), 36, 3, (8, 2)),  # K tail (36 codes, 8 per word), M and N tile tails
        (2, (6, 8), 40, 5, (3, 3)),  # palette blocks narrower than a word (16 codes)
        # the palette path (blocks of whole words): 3 blocks of 2-bit codes; 3-bit codes
        # in 4-bit fields (8-entry palettes) at M = 1, NPW 8 over 6 rows
        (2, (2, 16), 48, 3, (8, 2)),
        (3, (3, 8), 24, 1, (8, 1)),
    ],
)
def test_lut_linear_and_embedding(dev, nbits: int, block, k: int, m: int, tile) -> None:
    from qopt.interpreters import quant as iq

    n = 6
    codes = RNG.integers(0, 2**nbits, (n, k))
    cb = RNG.standard_normal((n // block[0], k // block[1], 2**nbits, 1)).astype(F32)
    p = pack_lut(codes, cb, nbits)
    x = RNG.standard_normal((m, k)).astype(F32)
    push = {
        "M": m,
        "N": n,
        "K": k,
        "row_words": p.row_words,
        "BN": p.block_rows,
        "BK": p.block_cols,
        "GK": p.col_groups,
        "L": p.lut_size,
    }
    got, ref = run_kernel(
        dev,
        "linear_lut",
        {"x": x, "codes": p.codes, "codebook": p.codebook},
        {"out": (F32, m * n)},
        push,
        {"FBITS": p.field_bits, "NPW": tile[0], "MT": tile[1], "WG": 2},
    )
    close(got["out"], ref["out"])
    w = iq.dequantize_codebook(codes, cb, list(block), F32)
    tclose(ref["out"], x.astype(np.float64) @ w.T.astype(np.float64))
    idx = np.array([5, 0, 2, -1], dtype=np.int32)
    push = {
        "n": 4,
        "D": k,
        "V": n,
        "row_words": p.row_words,
        "BV": p.block_rows,
        "BD": p.block_cols,
        "GD": p.col_groups,
        "L": p.lut_size,
    }
    got, ref = run_kernel(
        dev,
        "embedding_lut",
        {"idx": idx, "codes": p.codes, "codebook": p.codebook},
        {"out": (F32, 4 * k)},
        push,
        {"FBITS": p.field_bits},
    )
    close(got["out"], ref["out"], 0)
    tclose(ref["out"], w[idx], 0)


def _lut_case(nbits: int, block: tuple[int, int], n: int, k: int, m: int):
    """(inputs, push) of linear_lut for random codes of an [n, k] weight in blocks `block`
    (-1: the whole dimension), the codebook padded to whole vec4s, and the x of M rows."""
    br, bc = (n if block[0] < 0 else block[0]), (k if block[1] < 0 else block[1])
    codes = RNG.integers(0, 2**nbits, (n, k))
    cb = RNG.standard_normal((n // br, k // bc, 2**nbits, 1)).astype(F32)
    p = pack_lut(codes, cb, nbits)
    x = RNG.standard_normal((m, k)).astype(F32)
    bias = RNG.standard_normal(n).astype(F32)
    inputs = {"x": x, "codes": p.codes, "codebook": pad_to(p.codebook, 4), "bias": bias}
    push = {"M": m, "N": n, "K": k, "row_words": p.row_words, "BN": p.block_rows}
    push |= {"BK": p.block_cols, "GK": p.col_groups, "L": p.lut_size}
    return inputs, push, p


@pytest.mark.parametrize(
    "nbits,block,k,m,tile",
    [
        (4, (-1, 16), 64, 1, (8, 1)),  # torchao's blocks: one palette per 16 columns, M = 1
        (3, (3, 8), 48, 3, (4, 2)),  # 8-entry palettes in 4-bit fields, M and N tile tails
        (8, (2, 8), 24, 2, (3, 2)),  # 8-bit codes: the vec4 path from storage too
        (1, (-1, -1), 64, 2, (2, 1)),  # one 2-entry palette: the codebook padded to a vec4
        (2, (6, 8), 40, 5, (3, 3)),  # palette blocks narrower than a word: storage reads
    ],
)
def test_lut_linear_uniform_codebook(dev, nbits, block, k, m, tile) -> None:
    """CB_UBO / X_UBO 1 (codebook and x through uniform blocks at descriptors 5 and 6,
    convert-to-vkc's `lut_uniform` / `x_uniform`) give the bits of the storage paths (the
    select tree, the storage lookups): the same entry for each code, the same sums."""
    from qopt.kernels.qlinear import lut_uniform, x_uniform

    n = 6
    inputs, push, p = _lut_case(nbits, block, n, k, m)
    spec = {"FBITS": p.field_bits, "HAS_BIAS": 1, "NPW": tile[0], "MT": tile[1], "WG": 2}
    storage, ref = run_kernel(dev, "linear_lut", inputs, {"out": (F32, m * n)}, push, spec)
    ubo = spec | lut_uniform(p.codebook.size) | x_uniform(m, k)
    assert ubo["CB_UBO"] == ubo["X_UBO"] == 1
    uniform, _ = run_kernel(dev, "linear_lut", inputs, {"out": (F32, m * n)}, push, ubo)
    np.testing.assert_array_equal(uniform["out"].view(np.uint32), storage["out"].view(np.uint32))
    close(uniform["out"], ref["out"])


def test_lut_uniform_limits() -> None:
    """The codebook's uniform block must cover the palettes read (extents) and fit
    MAX_UNIFORM_BYTES; `lut_uniform` picks it for codebooks of up to 16384 entries."""
    from qopt.kernels.qlinear import lut_uniform

    spec = kernels()["linear_lut"]
    push = {"M": 1, "N": 8, "K": 64, "row_words": 8, "BN": 8, "BK": 16, "GK": 4, "L": 16}
    words = [64, 64, 64, 0, 8]
    spec.check_dispatch(push, {"CB_UBO": 1, "CBU_VEC4": 16}, (1, 1, 1), words)
    with pytest.raises(ValueError, match="uniform block of 60 words"):
        spec.check_dispatch(push, {"CB_UBO": 1, "CBU_VEC4": 15}, (1, 1, 1), words)
    with pytest.raises(ValueError, match="binding codebook can touch 68 words"):
        spec.check_dispatch(push, {"CB_UBO": 1, "CBU_VEC4": 17}, (1, 1, 1), words)
    with pytest.raises(ValueError, match="uniform block of 12 words"):
        spec.check_dispatch(push, {"X_UBO": 1, "XU_VEC4": 3}, (1, 1, 1), words)
    assert lut_uniform(2048) == {"CB_UBO": 1, "CBU_VEC4": 512}
    assert lut_uniform(6) == {"CB_UBO": 1, "CBU_VEC4": 2}
    assert lut_uniform(16384) == {"CB_UBO": 1, "CBU_VEC4": 4096}
    assert lut_uniform(16385) == lut_uniform(0) == {}


def test_lut_uniform_codebook_over_the_device_limit(dev: VulkanDevice) -> None:
    """A codebook block past maxUniformBufferRange (lowered to 256 bytes) is turned off
    when the dispatch is recorded: the select-tree path writes the same bits."""
    from qopt.kernels.qlinear import lut_uniform

    inputs, push, p = _lut_case(4, (-1, 16), 8, 128, 1)
    spec = {"FBITS": 4, "NPW": 8, **lut_uniform(p.codebook.size)}
    names = ("x", "codes", "codebook", "bias")
    outs = []
    limit = dev.max_uniform_range
    for cap in (limit, 256):
        bufs = [dev.upload(inputs[name]) for name in names] + [dev.buffer(4 * 8)]
        dev.max_uniform_range = cap
        try:
            dev.run([Dispatch("linear_lut", bufs, push, spec)])
            outs.append(bufs[4].read(F32, 8))
        finally:
            dev.max_uniform_range = limit
            for b in bufs:
                b.free()
    assert outs[0].tobytes() == outs[1].tobytes()


@pytest.mark.parametrize(
    "bits,group,asym,d",
    [(4, 32, False, 64), (4, 12, True, 60), (8, 64, False, 64)],  # groups inside a word, D tail
)
def test_embedding_q(dev, bits: int, group: int, asym: bool, d: int) -> None:
    v = 9
    data, s, zp, p = _weight(bits, v, d, group, asym)
    idx = np.array([8, 0, 3, 3, -2], dtype=np.int32)
    name = "embedding_q4gsw" if bits == 4 else "embedding_q8csw"
    inputs = {"idx": idx, "w": p.weight, "scales": p.scales}
    if asym:
        inputs["zeros"] = p.zeros
    push = {"n": 5, "D": d, "V": v, "row_words": p.row_words, "ngroups": p.ngroups}
    spec = {"WBITS": bits, "GROUP_SIZE": group, "HAS_ZERO_POINT": int(asym)}
    got, ref = run_kernel(dev, name, inputs, {"out": (F32, 5 * d)}, push, spec)
    close(got["out"], ref["out"], 0)
    z = np.zeros_like(s) if zp is None else zp
    rows = idx % v
    expect = (data[rows].astype(F32) - np.repeat(z, group, 1)[rows].astype(F32)) * np.repeat(
        s, group, 1
    )[rows]
    tclose(ref["out"], expect, 0)


@pytest.mark.parametrize(
    "act,requant,tile",
    [(1, 1, (1, 1)), (2, 1, (3, 2)), (0, 0, (2, 4)), (1, 0, (8, 3)), (1, 1, (3, 8))],
)
def test_conv2d_q8(dev, act: int, requant: int, tile: tuple[int, int]) -> None:
    x = RNG.standard_normal((1, 4, 6, 5)).astype(F32)
    oc, groups = 6, 2
    data, s, zp, _ = _weight(8, oc, 2 * 3 * 3, 18, True)
    p = pack_affine(data, s, zp, -128, 127)
    push = _conv_push(x.shape, (oc, 2, 3, 3), (1, 2), (1, 1), (1, 1), groups)
    act_q, out_q = (0.03, -4, -128, 127), (0.2, 3, -128, 127)
    push.update(
        row_words=p.row_words, **static_io_push(act_q, out_q if requant else None, clamp_min=0.0)
    )
    xq = ref_quantize(x, push["in_inv_scale"], -4, -128, 127).astype(np.int32)
    bias = RNG.standard_normal(oc).astype(F32)
    inputs = {
        "x": xq if act == 2 else x,
        "w": p.weight,
        "scales": p.scales,
        "zeros": p.zeros,
        "bias": bias,
    }
    count = oc * push["OH"] * push["OW"]
    dtype = np.int32 if requant else F32
    spec = {"ACT": act, "HAS_ZERO_POINT": 1, "HAS_BIAS": 1, "REQUANT": requant}
    spec |= {"OCT": tile[0], "OWT": tile[1]}  # OC 6 in 2 groups, OW 3: tile tails, straddles
    got, ref = run_kernel(dev, "conv2d_q8ta_q8csw_q8to", inputs, {"y": (dtype, count)}, push, spec)
    if act:
        np.testing.assert_array_equal(got["y"], ref["y"])  # int32 sums: bit-exact
    else:
        close(got["y"], ref["y"])
    w = ((data - zp) * s.astype(np.float64)).reshape(oc, 2, 3, 3)
    xd = x.astype(np.float64) if act == 0 else (xq.astype(np.float64) + 4) * float(F32(0.03))
    y = (
        F.conv2d(
            torch.from_numpy(xd),
            torch.from_numpy(w),
            torch.from_numpy(bias).double(),
            (1, 2),
            (1, 1),
            (1, 1),
            groups,
        )
        .clamp_min(0)
        .numpy()
    )
    if requant:
        assert np.abs(ref["y"] - np.clip(np.round(y / 0.2) + 3, -128, 127).reshape(-1)).max() <= 1
    else:
        tclose(ref["y"], y)


def test_add_q8ta(dev: VulkanDevice) -> None:
    n = 64
    a = RNG.standard_normal(n).astype(F32)
    b = RNG.integers(-128, 128, n).astype(np.int32)
    push = {
        "n": n,
        "a_inv_scale": float(F32(1 / 0.02)),
        "a_zp": 1,
        "a_qmin": -128,
        "a_qmax": 127,
        "a_scale": 0.02,
        "b_inv_scale": float(F32(1 / 0.01)),
        "b_zp": -3,
        "b_qmin": -128,
        "b_qmax": 127,
        "b_scale": 0.01,
        "alpha": 1.0,
        "out_inv_scale": float(F32(1 / 0.03)),
        "out_zp": -128,
        "out_qmin": -128,
        "out_qmax": 127,
        "clamp_min": 0.0,
        "clamp_max": float("inf"),
    }
    spec = {"A_QUANTIZED": 0, "B_QUANTIZED": 1, "REQUANT": 1}
    got, ref = run_kernel(
        dev, "add_q8ta_q8ta_q8to", {"a": a, "b": b}, {"out": (np.int32, n)}, push, spec
    )
    close(got["out"], ref["out"])
    qd = torch.ops.quantized_decomposed
    ta = qd.dequantize_per_tensor(
        qd.quantize_per_tensor(torch.from_numpy(a), 0.02, 1, -128, 127, torch.int8),
        0.02,
        1,
        -128,
        127,
        torch.int8,
    )
    tb = (torch.from_numpy(b).float() + 3) * 0.01
    expect = qd.quantize_per_tensor(torch.relu(ta + tb), 0.03, -128, -128, 127, torch.int8)
    tclose(ref["out"], expect.int(), 0)


def test_mul_q8ta(dev: VulkanDevice) -> None:
    """MUL = 1 (qfused.mul): dq(a) * dq(b) requantized, bit for bit as torch's
    quantized_decomposed ops on the same integers (a squeeze-excitation gate)."""
    n = 4096
    a = RNG.standard_normal(n).astype(F32)
    b = RNG.integers(-128, 128, n).astype(np.int32)
    push = {
        "n": n,
        "a_inv_scale": float(F32(1 / 0.02)),
        "a_zp": 1,
        "a_qmin": -128,
        "a_qmax": 127,
        "a_scale": 0.02,
        "b_inv_scale": float(F32(1 / 0.0039)),
        "b_zp": -128,
        "b_qmin": -128,
        "b_qmax": 127,
        "b_scale": 0.0039,
        "alpha": 1.0,
        "out_inv_scale": float(F32(1 / 0.015)),
        "out_zp": 2,
        "out_qmin": -128,
        "out_qmax": 127,
        "clamp_min": float("-inf"),
        "clamp_max": float("inf"),
    }
    spec = {"A_QUANTIZED": 0, "B_QUANTIZED": 1, "REQUANT": 1, "MUL": 1}
    got, ref = run_kernel(
        dev, "add_q8ta_q8ta_q8to", {"a": a, "b": b}, {"out": (np.int32, n)}, push, spec
    )
    np.testing.assert_array_equal(got["out"], ref["out"])
    qd = torch.ops.quantized_decomposed
    ta = qd.dequantize_per_tensor(
        qd.quantize_per_tensor(torch.from_numpy(a), 0.02, 1, -128, 127, torch.int8),
        0.02,
        1,
        -128,
        127,
        torch.int8,
    )
    tb = qd.dequantize_per_tensor(
        torch.from_numpy(b).to(torch.int8), 0.0039, -128, -128, 127, torch.int8
    )
    expect = qd.quantize_per_tensor(ta * tb, 0.015, 2, -128, 127, torch.int8)
    np.testing.assert_array_equal(got["out"], expect.int().numpy())


def test_runtime_errors_and_timestamps(dev: VulkanDevice) -> None:
    x = dev.upload(np.ones(8, dtype=F32))
    with pytest.raises(VulkanError, match="buffers for bindings"):
        dev.run([Dispatch("unary", [x], {"n": 8, "a": 0.0, "b": 0.0})])
    with pytest.raises(VulkanError, match="no specialization constant"):
        dev.run([Dispatch("unary", [x, x], {"n": 8, "a": 0.0, "b": 0.0}, {"NOPE": 1})])
    y = dev.buffer(32)
    times = dev.run(
        [
            Dispatch("unary", [x, y], {"n": 8, "a": 0.0, "b": 0.0}, {"OP": 13}),
            Dispatch("unary", [y, x], {"n": 8, "a": 0.0, "b": 0.0}, {"OP": 1}),
        ],
        timestamps=True,
    )
    assert times is not None
    assert len(times) == 2
    assert all(t >= 0 for t in times)
    assert np.array_equal(dev.download(x), np.zeros(8, F32))  # relu(-1) after the barrier
    assert dev.validation_errors == []
    x.free()
    y.free()


def test_device_selection_errors() -> None:
    if vulkan_available():
        pytest.skip(vulkan_available())
    with pytest.raises(VulkanError, match="no Vulkan device name contains"):
        VulkanDevice("no-such-device-name")


def test_validation_layer_reports_errors(dev: VulkanDevice) -> None:
    """The messenger is live: an invalid call (a 0-byte buffer) is collected, then raised."""
    vk = dev.vk
    info = vk.VkBufferCreateInfo(
        size=0,
        usage=vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
        sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE,
    )
    try:
        handle = vk.vkCreateBuffer(dev.device, info, None)
        vk.vkDestroyBuffer(dev.device, handle, None)
    except Exception:
        pass
    assert any("size" in m for m in dev.validation_errors), dev.validation_errors
    with pytest.raises(VulkanError, match="validation errors"):
        dev._check_validation("a deliberate mistake")
    assert dev.validation_errors == []


@pytest.mark.parametrize(
    "bits,k,group,asym,m,tile",
    [
        (4, 128, 32, False, 1, (4, 1, 64)),  # gemv_sym, the M = 1 path
        (4, 256, 256, False, 1, (4, 1, 8)),  # gemv_sym, one group per row
        (4, 128, 64, True, 1, (3, 1, 4)),
        (8, 64, 64, False, 1, (4, 1, 2)),
        (4, 128, 32, True, 3, (2, 2, 8)),  # gemm_tile reads x through the block too
        (4, 100, 4, True, 2, (3, 2, 32)),  # per-element paths: storage reads only
    ],
)
def test_linear_weight_only_x_uniform(dev, bits, k, group, asym, m, tile) -> None:
    """X_UBO 1 (x through the uniform block at descriptor 6) gives the bits of X_UBO 0:
    the same loads feed the same arithmetic."""
    n = 11
    p = _weight(bits, n, k, group, asym)[3]
    x = RNG.standard_normal((m, k)).astype(F32)
    bias = RNG.standard_normal(n).astype(F32)
    inputs = {"x": x, "w": p.weight, "scales": p.scales, "bias": bias}
    if asym:
        inputs["zeros"] = p.zeros
    push = {"M": m, "N": n, "K": k, "row_words": p.row_words, "ngroups": p.ngroups}
    spec = {"WBITS": bits, "GROUP_SIZE": group, "HAS_ZERO_POINT": int(asym), "HAS_BIAS": 1}
    spec.update(NPW=tile[0], MT=tile[1], WG=tile[2])
    name = "linear_q4gsw" if bits == 4 else "linear_q8csw"
    storage, ref = run_kernel(dev, name, inputs, {"out": (F32, m * n)}, push, spec)
    ubo = dict(spec, X_UBO=1, XU_VEC4=-(-m * k // 4))
    uniform, _ = run_kernel(dev, name, inputs, {"out": (F32, m * n)}, push, ubo)
    np.testing.assert_array_equal(uniform["out"].view(np.uint32), storage["out"].view(np.uint32))
    close(uniform["out"], ref["out"])


def test_linear_x_uniform_limits() -> None:
    """The uniform block must cover x (extents) and fit MAX_UNIFORM_BYTES (spec range);
    convert-to-vkc's choice (`x_uniform`): K % 4 == 0 and x within 65536 bytes."""
    from qopt.kernels.qlinear import x_uniform

    spec = kernels()["linear_q4gsw"]
    push = {"M": 1, "N": 8, "K": 128, "row_words": 16, "ngroups": 4}
    words = [128, 128, 32, 0, 0, 8]
    spec.check_dispatch(push, {"X_UBO": 1, "XU_VEC4": 32}, (1, 1, 1), words)
    with pytest.raises(ValueError, match="uniform block of 124 words"):
        spec.check_dispatch(push, {"X_UBO": 1, "XU_VEC4": 31}, (1, 1, 1), words)
    with pytest.raises(ValueError, match="binding x can touch 132 words"):
        spec.check_dispatch(push, {"X_UBO": 1, "XU_VEC4": 33}, (1, 1, 1), words)
    with pytest.raises(ValueError, match="XU_VEC4 = 4097 is outside"):
        spec.check_dispatch(push, {"X_UBO": 1, "XU_VEC4": 4097}, (1, 1, 1), words)
    assert x_uniform(1, 2048) == {"X_UBO": 1, "XU_VEC4": 512}
    assert x_uniform(1, 16384) == {"X_UBO": 1, "XU_VEC4": 4096}
    assert x_uniform(8, 2048) == {"X_UBO": 1, "XU_VEC4": 4096}
    assert x_uniform(1, 16388) == x_uniform(1, 2046) == x_uniform(9, 2048) == {}


def test_uniform_view_over_the_device_limit_reads_storage(dev: VulkanDevice) -> None:
    """A uniform block past the device's maxUniformBufferRange (here lowered to 256 bytes)
    is turned off when the dispatch is recorded: the kernel reads x through its storage
    buffer and writes the same bits as the uniform path does within the limit."""
    k, n = 128, 8
    rng = np.random.default_rng(7)
    p = _weight(4, n, k, 32, False)[3]
    x = rng.standard_normal(k).astype(F32)
    push = {"M": 1, "N": n, "K": k, "row_words": p.row_words, "ngroups": p.ngroups}
    spec = {"WBITS": 4, "GROUP_SIZE": 32, "X_UBO": 1, "XU_VEC4": k // 4}
    outs = []
    limit = dev.max_uniform_range
    for cap in (limit, 256):
        bufs = [dev.upload(x), dev.upload(p.weight), dev.upload(p.scales)]
        bufs += [dev.buffer(16), dev.buffer(16), dev.buffer(4 * n)]
        dev.max_uniform_range = cap
        try:
            dev.run([Dispatch("linear_q4gsw", bufs, push, spec)])
            outs.append(bufs[5].read(F32, n))
        finally:
            dev.max_uniform_range = limit
            for b in bufs:
                b.free()
    assert outs[0].tobytes() == outs[1].tobytes()


def _texel_case(name: str, bits: int, n: int, k: int, group: int, asym: bool, m: int):
    """(inputs, push, spec) of a linear_qw or linear_dq8ca dispatch on random data."""
    p = _weight(bits, n, k, group, asym)[3]
    inputs = {"w": p.weight, "scales": p.scales, "bias": RNG.standard_normal(n).astype(F32)}
    if asym:
        inputs["zeros"] = p.zeros
    if name.startswith("linear_dq8ca"):
        inputs["xq"] = RNG.integers(-128, 128, (m, k)).astype(np.int32)
        inputs["x_scale"] = (RNG.random(m) * 0.1 + 0.01).astype(F32)
        inputs["x_zp"] = RNG.integers(-5, 6, m).astype(np.int32)
    else:
        inputs["x"] = RNG.standard_normal((m, k)).astype(F32)
    push = {"M": m, "N": n, "K": k, "row_words": p.row_words, "ngroups": p.ngroups}
    spec = {"WBITS": bits, "GROUP_SIZE": group, "HAS_ZERO_POINT": int(asym), "HAS_BIAS": 1}
    return inputs, push, spec


@pytest.mark.parametrize(
    "name,bits,k,group,asym,m,tile,x_ubo",
    [
        ("linear_q4gsw", 4, 128, 32, False, 1, (4, 1, 64), 0),  # gemv_sym
        ("linear_q4gsw", 4, 128, 32, True, 3, (5, 2, 4), 1),  # gemm_tile
        ("linear_q8csw", 8, 64, 64, False, 3, (5, 2, 2), 1),
        ("linear_dq8ca_q4gsw", 4, 64, 32, True, 2, (5, 1, 8), 1),  # gemm_tile
        ("linear_dq8ca_q8csw", 8, 64, 32, False, 2, (4, 1, 8), 0),  # gemv_fast
    ],
)
def test_weight_texel_view(dev, name, bits, k, group, asym, m, tile, x_ubo) -> None:
    """W_TEXEL 1 (the weight chunks fetched from the texel view bound after the uniform
    block) gives the bits of W_TEXEL 0 on the chunked paths (gemv_sym / gemv_fast and
    gemm_tile), with x through storage or the uniform block; linear_dq8ca's bits are the
    reference's, linear_qw's within tolerance."""
    n = 11
    inputs, push, spec = _texel_case(name, bits, n, k, group, asym, m)
    spec |= {"NPW": tile[0], "MT": tile[1], "WG": tile[2]}
    if x_ubo:
        spec |= {"X_UBO": 1, "XU_VEC4": m * k // 4}
    outs = []
    for texel in (0, 1):
        got, ref = run_kernel(
            dev, name, inputs, {"out": (F32, m * n)}, push, {**spec, "W_TEXEL": texel}
        )
        outs.append(got["out"].view(np.uint32))
    np.testing.assert_array_equal(outs[1], outs[0])
    if name.startswith("linear_dq8ca"):
        np.testing.assert_array_equal(got["out"], ref["out"])
    else:
        close(got["out"], ref["out"])


@pytest.mark.parametrize(
    "name,bits,k,group,asym,m,tile",
    [
        ("linear_q4gsw", 4, 128, 32, False, 3, (5, 2, 4)),  # gemm_tile, tile tails
        ("linear_q4gsw", 4, 64, 32, True, 9, (16, 5, 2)),  # convert-to-vkc's tile
        ("linear_q8csw", 8, 64, 64, False, 4, (4, 2, 2)),
        ("linear_dq8ca_q4gsw", 4, 64, 32, True, 3, (5, 2, 8)),
        ("linear_dq8ca_q8csw", 8, 64, 32, False, 2, (16, 2, 8)),
    ],
)
def test_x_texel_view(dev, name, bits, k, group, asym, m, tile) -> None:
    """X_TEXEL 1 (x's vec4s fetched from the texel view over x, the second texel view)
    gives the bits of X_TEXEL 0 (storage reads) on gemm_tile, with the weights through
    storage or their texel view; linear_dq8ca's bits are the reference's, linear_qw's
    within tolerance."""
    n = 11
    inputs, push, spec = _texel_case(name, bits, n, k, group, asym, m)
    spec |= {"NPW": tile[0], "MT": tile[1], "WG": tile[2]}
    outs = []
    for w_tex, x_tex in ((0, 0), (0, 1), (1, 1)):
        got, ref = run_kernel(
            dev,
            name,
            inputs,
            {"out": (F32, m * n)},
            push,
            {**spec, "W_TEXEL": w_tex, "X_TEXEL": x_tex},
        )
        outs.append(got["out"].view(np.uint32))
    np.testing.assert_array_equal(outs[1], outs[0])
    np.testing.assert_array_equal(outs[2], outs[0])
    if name.startswith("linear_dq8ca"):
        np.testing.assert_array_equal(got["out"], ref["out"])
    else:
        close(got["out"], ref["out"])


@pytest.mark.parametrize(
    "nbits,block,k,m,tile",
    [
        (4, (-1, 16), 64, 3, (4, 2)),  # torchao's blocks, M and N tile tails
        (8, (2, 8), 24, 2, (3, 2)),  # 8-bit codes
    ],
)
def test_lut_linear_x_texel_view(dev, nbits, block, k, m, tile) -> None:
    """linear_lut's vec4 path (codebook through its uniform block) with x through the
    texel view (X_TEXEL) gives the bits of storage reads of x."""
    from qopt.kernels.qlinear import lut_uniform

    n = 6
    inputs, push, p = _lut_case(nbits, block, n, k, m)
    spec = {"FBITS": p.field_bits, "HAS_BIAS": 1, "NPW": tile[0], "MT": tile[1], "WG": 2}
    spec |= lut_uniform(p.codebook.size)
    outs = []
    for x_tex in (0, 1):
        got, ref = run_kernel(
            dev, "linear_lut", inputs, {"out": (F32, m * n)}, push, spec | {"X_TEXEL": x_tex}
        )
        outs.append(got["out"].view(np.uint32))
    np.testing.assert_array_equal(outs[1], outs[0])
    close(got["out"], ref["out"])


def test_texel_view_choice_and_range() -> None:
    """convert-to-vkc's choice: the 16-row gemm_tile at every M (MT 1 at M = 1) with the
    weights through the texel view; W_TEXEL is a 0 / 1 flag (spec range)."""
    from qopt.kernels.qlinear import dq8ca_tile, linear_tile, w_texel, x_texel

    assert w_texel() == {"W_TEXEL": 1}
    assert linear_tile(1) == dq8ca_tile(1) == {"NPW": 16, "MT": 1, "WG": 32}
    assert linear_tile(9) == {"NPW": 16, "MT": 5, "WG": 32}
    # x through the texel view only where it does not fit the uniform block (K % 4 == 0)
    assert x_texel(1, 2048) == x_texel(8, 2048) == x_texel(64, 6) == {}
    assert x_texel(64, 1024) == x_texel(9, 2048) == {"X_TEXEL": 1}
    for name, x in (("linear_q4gsw", "x"), ("linear_dq8ca_q4gsw", "xq")):
        spec = kernels()[name]
        assert [(t.binding, t.flag) for t in spec.texels] == [("w", "W_TEXEL"), (x, "X_TEXEL")]
        for flag in ("W_TEXEL", "X_TEXEL"):
            with pytest.raises(ValueError, match=f"{flag} = 2 is outside"):
                spec.check_spec({flag: 2})
    assert [(t.binding, t.flag) for t in kernels()["linear_lut"].texels] == [("x", "X_TEXEL")]


def test_texel_view_off_where_the_device_cannot(dev: VulkanDevice, monkeypatch) -> None:
    """On a device without uniform texel buffers of R32G32B32A32_UINT, or whose
    maxTexelBufferElements is below the weight buffer's 16-byte texels, the runtime turns
    W_TEXEL off when it records the dispatch (`fit_texels`; the view is still bound, in
    R32_UINT where the format is missing): the kernel reads the storage buffer and writes
    the bits the texel path writes. At exactly the limit the texel path stays on."""
    from qopt.backends.vulkan.views import fit_texels

    name, n, k, m = "linear_q4gsw", 11, 128, 3
    inputs, push, spec = _texel_case(name, 4, n, k, 32, False, m)
    spec |= {"NPW": 5, "MT": 2, "WG": 4, "W_TEXEL": 1}
    kspec = kernels()[name]
    names = [b.name for b in kspec.bindings]
    texels = -(-inputs["w"].nbytes // 16)
    cases = [
        ("texel_format", True, 1),
        ("max_texel_elements", texels, 1),
        ("max_texel_elements", texels - 1, 0),
        ("texel_format", False, 0),
    ]
    outs = []
    for attr, value, flag in cases:
        with monkeypatch.context() as mp:
            mp.setattr(dev, attr, value)
            w = dev.upload(inputs["w"])
            try:
                bufs = [w] * len(names)  # only the viewed binding's size matters
                assert fit_texels(dev, kspec, spec, names, bufs)["W_TEXEL"] == flag, attr
            finally:
                w.free()
            got, _ = run_kernel(dev, name, inputs, {"out": (F32, m * n)}, push, spec)
        outs.append(got["out"].view(np.uint32))
    for out in outs[1:]:
        np.testing.assert_array_equal(out, outs[0])
