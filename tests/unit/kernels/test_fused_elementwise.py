"""fused_elementwise (and reduce_rows' PRE): the generated shader is the generator's
output, the program checks refuse malformed programs, and on the Vulkan device (under
the validation layer) a fused program equals its reference bit for bit where every op
is exact, and equals the unfused kernels run one after the other."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from qopt.backends.vulkan.registry import kernels
from qopt.backends.vulkan.runtime import Dispatch, VulkanDevice
from qopt.kernels.elementwise import (
    FUSED_ELEMENTWISE,
    FUSED_INSTRS,
    FUSED_LEAVES,
    FUSED_SPEC,
    fused_glsl_path,
)
from qopt.kernels.fused_glsl import generate
from qopt.kernels.opcodes import BINARY_OPS, DTYPES, FUSED_OPS, REDUCE_OPS, UNARY_OPS

F32 = np.float32
RNG = np.random.default_rng(7)
BIN = FUSED_OPS["binary"]


def run_kernel(
    dev: VulkanDevice,
    name: str,
    inputs: dict[str, np.ndarray],
    outputs: dict[str, tuple[type, int]],
    push: dict,
    spec: dict,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Kernel `name` on the device and its numpy reference: (device, reference) outputs
    by binding name (a binding given no array gets a 4-word buffer of zeros)."""
    kspec = kernels()[name]
    host: dict[str, np.ndarray] = {}
    for b in kspec.bindings:
        if b.name in inputs:
            host[b.name] = np.ascontiguousarray(inputs[b.name]).reshape(-1).copy()
        elif b.name in outputs:
            host[b.name] = np.zeros(outputs[b.name][1], dtype=outputs[b.name][0])
        else:
            host[b.name] = np.zeros(4, dtype=F32)
    bufs = {k: dev.upload(v) for k, v in host.items()}
    dev.run([Dispatch(name, bufs, push, spec)])
    got = {k: dev.download(bufs[k], dtype, (count,)) for k, (dtype, count) in outputs.items()}
    kspec.reference(host, push, kspec.spec_values(spec))
    ref = {k: host[k].view(np.uint32).view(dt)[:count] for k, (dt, count) in outputs.items()}
    for b in bufs.values():
        b.free()
    return got, ref


def program(
    dims: tuple[int, ...],
    leaves: list[tuple],
    instrs: list[tuple[int, int, int, int, float, float]],
    res: int,
    out: tuple[int, tuple[int, ...]],
) -> tuple[dict[str, int], dict[str, int | float]]:
    """(spec, push) of a fused program: leaves (binding, offset, strides[, (axis, lo,
    n) window]), instructions (op, dtype, a, b, push a, push b[, select axis, split]),
    the result register and the output map."""
    spec = dict(FUSED_SPEC)
    n = int(np.prod(dims))
    push: dict[str, int | float] = {"n": n}
    for k in range(FUSED_INSTRS):
        push[f"a{k}"] = push[f"b{k}"] = 0.0
    for k, d in enumerate(dims):
        spec[f"D{k}"] = d
    for i, (buf, off, strides, *window) in enumerate(leaves):
        spec[f"L{i}_BUF"], spec[f"L{i}_OFF"] = buf, off
        for k, s in enumerate(strides):
            spec[f"L{i}_S{k}"] = s
        if window:
            spec[f"L{i}_AX"], spec[f"L{i}_LO"], spec[f"L{i}_N"] = window[0]
    for k, (op, dt, a, b, pa, pb, *select) in enumerate(instrs):
        spec.update({f"I{k}_OP": op, f"I{k}_DT": dt, f"I{k}_A": a, f"I{k}_B": b})
        push[f"a{k}"], push[f"b{k}"] = pa, pb
        if select:
            spec[f"I{k}_X"], spec[f"I{k}_Y"] = select
    spec["RES"] = res
    spec["OUT_OFF"] = out[0]
    for k, s in enumerate(out[1]):
        spec[f"OS{k}"] = s
    return spec, push


def test_shader_is_the_generators_output() -> None:
    assert fused_glsl_path().read_text() == generate(), "run python -m qopt.kernels.fused_glsl"


def test_malformed_programs_are_refused() -> None:
    dims = (1, 1, 1, 1, 2, 3)
    rm = (0, 0, 0, 0, 3, 1)
    good_spec, push = program(
        dims, [(0, 0, rm)], [(UNARY_OPS["neg"], 0, 0, 0, 0.0, 0.0)], FUSED_LEAVES, (0, rm)
    )
    assert FUSED_ELEMENTWISE.extents is not None
    assert FUSED_ELEMENTWISE.extents(push, good_spec) == {
        "in0": 6,
        "in1": 0,
        "in2": 0,
        "in3": 0,
        "y": 6,
    }
    unread = {**good_spec, "I0_A": 1}  # leaf 1 is unused
    unknown = {**good_spec, "I0_OP": max(UNARY_OPS.values()) + 1}  # below FUSED_BINARY
    no_int = {**good_spec, "I0_OP": UNARY_OPS["exp"], "I0_DT": DTYPES["i32"]}
    dangling = {**good_spec, "RES": FUSED_LEAVES + 1}
    for spec, words in ((unread, "not written"), (unknown, "unknown op"), (no_int, "no i32"),
                        (dangling, "nothing writes")):  # fmt: skip
        with pytest.raises(ValueError, match=words):
            FUSED_ELEMENTWISE.extents(push, spec)
    with pytest.raises(ValueError, match="holds 5"):
        FUSED_ELEMENTWISE.check_dispatch(push, good_spec, [1, 1, 1], [5, 1, 1, 1, 6])


@pytest.fixture(scope="module")
def dev(validated_device: VulkanDevice) -> VulkanDevice:
    return validated_device


def test_fused_program_on_device(dev: VulkanDevice) -> None:
    # y[1 + 2*i + j*8] (i < 3, j < 4: a strided, partial output) =
    #   ((x^T[i, j] * w[j] + b) - clamp(x^T, -0.5, 0.5)) as f32, then i32 ops on c
    # x is [4, 3] read transposed, w broadcast along i, b a scalar
    dims = (1, 1, 1, 1, 3, 4)
    x = RNG.standard_normal((4, 3)).astype(F32)
    w = RNG.standard_normal(4).astype(F32)
    b = np.array([0.25], F32)
    c = RNG.integers(-9, 9, (3, 4)).astype(np.int32)
    leaves = [
        (0, 0, (0, 0, 0, 0, 1, 3)),  # x^T
        (1, 0, (0, 0, 0, 0, 0, 1)),  # w
        (2, 0, (0, 0, 0, 0, 0, 0)),  # b
        (3, 0, (0, 0, 0, 0, 4, 1)),  # c
    ]
    L = FUSED_LEAVES
    mul, add, sub = (BIN + BINARY_OPS[k] for k in ("mul", "add", "sub"))
    instrs = [
        (mul, 0, 0, 1, 1.0, 0.0),  # r6 = x * w
        (add, 0, L, 2, 1.0, 0.0),  # r7 = r6 + b
        (UNARY_OPS["clamp"], 0, 0, 0, -0.5, 0.5),  # r8 = clamp(x)
        (sub, 0, L + 1, L + 2, 1.0, 0.0),  # r9 = r7 - r8
        (UNARY_OPS["cast_f32_i32"], 0, L + 3, 0, 0.0, 0.0),  # r10 = int(r9)
        (BIN + BINARY_OPS["mul"], 1, L + 4, 3, 1.0, 0.0),  # r11 = r10 * c (i32)
        (UNARY_OPS["cast_i32_f32"], 1, L + 5, 0, 0.0, 0.0),  # r12 = float(r11)
    ]
    spec, push = program(dims, leaves, instrs, L + 6, (1, (0, 0, 0, 0, 2, 8)))
    y0 = np.full(32, -7.0, F32)
    got, ref = run_kernel(
        dev,
        "fused_elementwise",
        {"in0": x, "in1": w, "in2": b, "in3": c, "y": y0},
        {"y": (np.uint32, 32)},
        push,
        spec,
    )
    np.testing.assert_array_equal(got["y"], ref["y"])  # exact ops: bit for bit
    xt = x.T
    r9 = (xt * w + b[0]) - np.clip(xt, F32(-0.5), F32(0.5))
    expect = y0.copy()
    expect[1 + 2 * np.arange(3)[:, None] + 8 * np.arange(4)[None, :]] = (
        np.trunc(r9).astype(np.int32) * c
    ).astype(F32)
    np.testing.assert_array_equal(ref["y"].view(F32), expect)


def test_fused_silu_gate_matches_unfused_kernels(dev: VulkanDevice) -> None:
    n = 257
    a, g = RNG.standard_normal(n).astype(F32), RNG.standard_normal(n).astype(F32)
    rm = (0, 0, 0, 0, 0, 1)
    instrs = [
        (UNARY_OPS["silu"], 0, 0, 0, 0.0, 0.0),
        (BIN + BINARY_OPS["mul"], 0, FUSED_LEAVES, 1, 1.0, 0.0),
    ]
    spec, push = program(
        (1, 1, 1, 1, 1, n), [(0, 0, rm), (1, 0, rm)], instrs, FUSED_LEAVES + 1, (0, rm)
    )
    got, ref = run_kernel(
        dev, "fused_elementwise", {"in0": a, "in1": g}, {"y": (F32, n)}, push, spec
    )
    silu, _ = run_kernel(
        dev, "unary", {"x": a}, {"y": (F32, n)}, {"n": n, "a": 0.0, "b": 0.0},
        {"OP": UNARY_OPS["silu"]},
    )  # fmt: skip
    ones = {f"{p}{k}": v for p, v in (("d", 1), ("sa", 0), ("sb", 0)) for k in range(5)}
    bpush = {"n": n, **ones, "d5": n, "sa5": 1, "sb5": 1, "a_off": 0, "b_off": 0, "alpha": 1.0}
    unfused, _ = run_kernel(
        dev, "binary", {"a": silu["y"], "b": g}, {"out": (F32, n)}, bpush,
        {"OP": BINARY_OPS["mul"]},
    )  # fmt: skip
    np.testing.assert_array_equal(got["y"], unfused["out"])  # the same shader code
    np.testing.assert_allclose(
        ref["y"],
        (torch.nn.functional.silu(torch.from_numpy(a)) * torch.from_numpy(g)).numpy(),
        1e-5,
        1e-6,
    )


def test_reduce_rows_squares(dev: VulkanDevice) -> None:
    for rows, cols in ((3, 5), (2, 300)):
        x = RNG.standard_normal((rows, cols)).astype(F32)
        for op in ("sum", "mean"):
            got, ref = run_kernel(
                dev, "reduce_rows", {"x": x}, {"y": (F32, rows)}, {"rows": rows, "cols": cols},
                {"OP": REDUCE_OPS[op], "PRE": 1},
            )  # fmt: skip
            np.testing.assert_array_equal(got["y"], ref["y"])
            sq, _ = run_kernel(
                dev, "reduce_rows", {"x": x * x}, {"y": (F32, rows)},
                {"rows": rows, "cols": cols}, {"OP": REDUCE_OPS[op]},
            )  # fmt: skip
            np.testing.assert_array_equal(got["y"], sq["y"])
            t = torch.from_numpy(x).pow(2)
            expect = t.sum(1) if op == "sum" else t.mean(1)
            np.testing.assert_array_equal(ref["y"], expect.numpy())


def test_fused_cat_pieces_on_device(dev: VulkanDevice) -> None:
    """rotate_half(x) * s = cat(-x[:, 4:], x[:, :4]) * s: two loads of x windowed to the
    halves of the last axis, a select on that index digit."""
    x = RNG.standard_normal((3, 8)).astype(F32)
    sin = RNG.standard_normal(8).astype(F32)
    rm, row = (0, 0, 0, 0, 8, 1), (0, 0, 0, 0, 0, 1)
    leaves = [(0, 4, rm, (5, 0, 4)), (0, 0, rm, (5, 4, 4)), (1, 0, row)]
    L = FUSED_LEAVES
    instrs = [
        (UNARY_OPS["neg"], 0, 0, 0, 0.0, 0.0),
        (FUSED_OPS["select"], 0, L, 1, 0.0, 0.0, 5, 4),
        (BIN + BINARY_OPS["mul"], 0, L + 1, 2, 1.0, 0.0),
    ]
    spec, push = program((1, 1, 1, 1, 3, 8), leaves, instrs, L + 2, (0, rm))
    assert FUSED_ELEMENTWISE.extents is not None
    assert FUSED_ELEMENTWISE.extents(push, spec)["in0"] == 24  # 4 + 2 * 8 + 3 + 1
    got, ref = run_kernel(
        dev, "fused_elementwise", {"in0": x, "in1": sin}, {"y": (F32, 24)}, push, spec
    )
    np.testing.assert_array_equal(got["y"], ref["y"])
    expect = np.concatenate([-x[:, 4:], x[:, :4]], axis=1) * sin
    np.testing.assert_array_equal(ref["y"].reshape(3, 8), expect)


def test_fused_integer_pow_wraps_as_torch(dev: VulkanDevice) -> None:
    """The fused kernel's i32 pow is binary.glsl's (the shared snippet's powi: squaring
    in int, wrapping), not float pow rounded: bit for bit torch's, overflow included
    (it once went through powf, wrong wherever the power passes 2**24)."""
    n = 64
    x = np.concatenate([[46341, -46341, 3, -7, 2**31 - 1, -(2**31)], RNG.integers(-60, 60, n - 6)])
    e = np.concatenate([[2, 2, 31, 11, 3, 1], RNG.integers(0, 12, n - 6)])
    x, e = x.astype(np.int32), e.astype(np.int32)
    rm = (0, 0, 0, 0, 0, 1)
    spec, push = program(
        (1, 1, 1, 1, 1, n),
        [(0, 0, rm), (1, 0, rm)],
        [(BIN + BINARY_OPS["pow"], DTYPES["i32"], 0, 1, 1.0, 0.0)],
        FUSED_LEAVES,
        (0, rm),
    )
    got, ref = run_kernel(
        dev, "fused_elementwise", {"in0": x, "in1": e}, {"y": (np.int32, n)}, push, spec
    )
    want = torch.pow(torch.from_numpy(x), torch.from_numpy(e)).numpy()
    np.testing.assert_array_equal(got["y"], want)
    np.testing.assert_array_equal(ref["y"], want)
