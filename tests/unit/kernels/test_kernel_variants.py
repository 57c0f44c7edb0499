"""Per-device kernel variants (qopt.kernels.variants): the selection rule on made-up
device property sets, and every variant run on the local device (lavapipe has subgroups
and shared memory) against its kernel's numpy reference, within the kernel's tolerance,
and against the base kernel."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest

from qopt.backends.vulkan.registry import kernels
from qopt.backends.vulkan.runtime import Dispatch, VulkanDevice, vulkan_available
from qopt.backends.vulkan.spirv import compile_glsl
from qopt.errors import QoptError
from qopt.kernels import catalogue
from qopt.kernels.coop import qw_coop_applies
from qopt.kernels.packing import pack_affine
from qopt.kernels.qlinear import linear_tile, w_texel, x_uniform
from qopt.kernels.source import kernel_source
from qopt.kernels.variants import (
    DEVICE_CPU,
    DEVICE_DISCRETE_GPU,
    DEVICE_INTEGRATED_GPU,
    STAGE_COMPUTE,
    SUBGROUP_ARITHMETIC,
    SUBGROUP_BASIC,
    DeviceProps,
    choose,
    only,
    variant_mode,
    variants,
)

RNG = np.random.default_rng(26)
F32 = np.float32

GPU = DeviceProps(DEVICE_DISCRETE_GPU, 32, STAGE_COMPUTE, 0xFF, 49152, True, True)
LAVAPIPE = DeviceProps(DEVICE_CPU, 8, 0x30, 0xBF, 32768, True, True)
DECODE = {"M": 1, "N": 2048, "K": 2048, "row_words": 256, "ngroups": 64}
PREFILL = {**DECODE, "M": 64}
Q4 = {"WBITS": 4, "GROUP_SIZE": 32, "HAS_ZERO_POINT": 0, "HAS_BIAS": 0}


def _spec(kernel: str, **given: int) -> dict[str, int]:
    return catalogue()[kernel].spec_values({**Q4, **linear_tile(1), **given})


def test_every_variant_matches_its_base_interface() -> None:
    table = catalogue()
    assert variants(), "no kernel variants declared"
    for v in variants():
        base = table[v.base]
        k = v.kernel(base)
        assert k.name == f"{v.base}@{v.name}"
        assert k.glsl == v.glsl
        assert (k.bindings, k.push, k.spec, k.uniforms, k.texels) == (
            base.bindings,
            base.push,
            base.spec,
            base.uniforms,
            base.texels,
        )


@pytest.mark.parametrize(
    "props,mode,push,want",
    [
        (GPU, "auto", DECODE, "coop_gemv"),
        (DeviceProps(DEVICE_INTEGRATED_GPU, 64, 0x20, 0x7), "auto", DECODE, "coop_gemv"),
        (GPU, "base", DECODE, None),
        (GPU, "all", DECODE, "coop_gemv"),
        (LAVAPIPE, "auto", DECODE, None),  # not preferred on a CPU device
        (LAVAPIPE, "all", DECODE, "coop_gemv"),
        (None, "all", DECODE, None),
        # requirements: arithmetic missing, or subgroups not in the compute stage
        (DeviceProps(DEVICE_DISCRETE_GPU, 32, STAGE_COMPUTE, SUBGROUP_BASIC), "all", DECODE, None),
        (DeviceProps(DEVICE_DISCRETE_GPU, 32, 0x10, 0xFF), "auto", DECODE, None),
        (
            DeviceProps(DEVICE_DISCRETE_GPU, 4, 0x20, SUBGROUP_BASIC | SUBGROUP_ARITHMETIC),
            "auto",
            DECODE,
            "coop_gemv",
        ),
        # prefill (M > 1): the shared-memory GEMM on GPUs (not preferred on lavapipe), not
        # with too little shared memory
        (GPU, "auto", {**DECODE, "M": 2}, "smem_gemm"),
        (LAVAPIPE, "auto", {**DECODE, "M": 64}, None),
        (LAVAPIPE, "all", {**DECODE, "M": 64}, "smem_gemm"),
        (DeviceProps(DEVICE_DISCRETE_GPU, 32, STAGE_COMPUTE, 0xFF, 4096), "auto", PREFILL, None),
        # a K tail, groups inside a chunk: the base
        (GPU, "auto", {**PREFILL, "K": 2046}, None),
        (GPU, "auto", {**PREFILL, "ngroups": 512}, None),
        (GPU, "auto", {**DECODE, "K": 2046}, None),
        (GPU, "auto", {**DECODE, "ngroups": 512}, None),
        (GPU, "auto", {**DECODE, "N": 0}, None),
    ],
)
def test_choose(props, mode, push, want) -> None:
    given = {"GROUP_SIZE": 4 if push["ngroups"] == 512 else 32, **linear_tile(push["M"])}
    spec = _spec("linear_q4gsw", **given)
    got = choose("linear_q4gsw", props, push, spec, mode)
    assert (got.name if got else None) == want
    assert choose("linear_lut", props, {}, {}, mode) is None  # no variant


DQ_SPEC = {"WBITS": 4, "GROUP_SIZE": 32, "HAS_ZERO_POINT": 0, "HAS_BIAS": 0, **linear_tile(1)}


@pytest.mark.parametrize(
    "kernel,props,mode,push,given,want",
    [
        ("linear_dq8ca_q4gsw", GPU, "auto", DECODE, {}, "coop_gemv_f16"),
        ("linear_dq8ca_q4gsw", replace(GPU, float16=False), "auto", DECODE, {}, "coop_gemv"),
        ("linear_dq8ca_q4gsw", GPU, "auto", DECODE, {"HAS_ZERO_POINT": 1}, "coop_gemv"),
        ("linear_dq8ca_q4gsw", LAVAPIPE, "auto", DECODE, {}, None),
        ("linear_dq8ca_q4gsw", LAVAPIPE, "all", DECODE, {}, "coop_gemv_f16"),
        ("linear_dq8ca_q4gsw", GPU, "base", DECODE, {}, None),
        ("linear_dq8ca_q4gsw", GPU, "auto", {**DECODE, "M": 3}, {}, None),
        ("linear_dq8ca_q4gsw", GPU, "auto", {**DECODE, "K": 2040}, {}, None),
        ("linear_dq8ca_q4gsw", GPU, "auto", {**DECODE, "K": 0, "row_words": 0}, {}, None),
        # subgroups of 128 lanes, too little shared memory: the base
        ("linear_dq8ca_q4gsw", replace(GPU, subgroup_size=128), "auto", DECODE, {}, None),
        ("linear_dq8ca_q4gsw", replace(GPU, shared_bytes=8192), "auto", DECODE, {}, None),
        (
            "linear_dq8ca_q8csw",
            GPU,
            "auto",
            {**DECODE, "ngroups": 1, "row_words": 512},
            {"WBITS": 8, "GROUP_SIZE": 1 << 30},
            "coop_gemv",
        ),
    ],
)
def test_choose_dq8ca(kernel, props, mode, push, given, want) -> None:
    spec = catalogue()[kernel].spec_values({**DQ_SPEC, **given})
    got = choose(kernel, props, push, spec, mode)
    assert (got.name if got else None) == want


def test_only_restricts_the_table() -> None:
    spec = catalogue()["linear_dq8ca_q4gsw"].spec_values(DQ_SPEC)
    with only(["linear_dq8ca_q4gsw@coop_gemv"]):
        got = choose("linear_dq8ca_q4gsw", GPU, DECODE, spec, "auto")
        assert got is not None
        assert got.name == "coop_gemv"
        assert choose("linear_q4gsw", GPU, DECODE, spec, "auto") is None
    got = choose("linear_dq8ca_q4gsw", GPU, DECODE, spec, "auto")
    assert got is not None
    assert got.name == "coop_gemv_f16"
    with pytest.raises(QoptError, match="no kernel variant linear_q4gsw@fast"):
        with only(["linear_q4gsw@fast"]):
            pass


def test_applies_on_int8_whole_rows() -> None:
    push = {"M": 1, "N": 64, "K": 72, "row_words": 20, "ngroups": 1}  # K % 16 tail
    spec = _spec("linear_q8csw", WBITS=8, GROUP_SIZE=1 << 30)
    assert qw_coop_applies(push, spec) == 0
    push = {"M": 1, "N": 64, "K": 80, "row_words": 20, "ngroups": 1}
    assert qw_coop_applies(push, spec) == 1


def test_mode_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QOPT_VK_VARIANTS", "base")
    assert variant_mode() == "base"
    monkeypatch.delenv("QOPT_VK_VARIANTS")
    assert variant_mode() == "auto"
    with pytest.raises(QoptError, match="QOPT_VK_VARIANTS='fast': not a variant mode"):
        variant_mode("fast")


@pytest.fixture(scope="module")
def devices() -> Iterator[tuple[VulkanDevice, VulkanDevice]]:
    reason = vulkan_available()
    if reason:
        pytest.skip(reason)
    with VulkanDevice(variants="all") as var, VulkanDevice(variants="base") as base:
        yield var, base


def _run(dev: VulkanDevice, name: str, inputs: dict[str, np.ndarray], n: int, push, spec):
    kspec = kernels()[name]
    bufs = {}
    for b in kspec.bindings:
        if b.name == "out":
            bufs[b.name] = dev.upload(np.zeros(n, F32))
        elif b.name in inputs:
            bufs[b.name] = dev.upload(np.ascontiguousarray(inputs[b.name]).reshape(-1))
        else:
            bufs[b.name] = dev.buffer(16)
    dev.run([Dispatch(name, bufs, push, spec)])
    out = dev.download(bufs["out"], F32, (n,))
    for buf in bufs.values():
        buf.free()
    return out


@pytest.mark.parametrize(
    "name,bits,k,group,asym,bias,n,fast",
    [
        ("linear_q4gsw", 4, 256, 32, False, True, 37, True),
        ("linear_q4gsw", 4, 512, 64, True, False, 16, True),
        ("linear_q4gsw", 4, 96, 32, False, True, 70, False),  # fewer chunks than lanes
        ("linear_q8csw", 8, 160, 160, False, True, 33, True),
        ("linear_q8csw", 8, 64, 64, True, True, 17, False),
        ("linear_q8csw", 8, 256, 16, False, False, 40, True),  # int8 per-group
    ],
)
def test_variant_on_device(devices, name, bits, k, group, asym, bias, n, fast) -> None:
    """Each variant on the local device: the variant's dispatch count goes up, its output
    is within the kernel's tolerance of the reference and of the base's output."""
    var, base = devices
    qmin, qmax = (-8, 7) if bits == 4 else (-128, 127)
    data = RNG.integers(qmin, qmax + 1, (n, k))
    s = (RNG.random((n, k // group)) * 0.1 + 0.01).astype(F32)
    zp = RNG.integers(-3, 4, (n, k // group)) if asym else None
    p = pack_affine(data, s, zp, qmin, qmax, group)
    x = RNG.standard_normal((1, k)).astype(F32)
    inputs = {"x": x, "w": p.weight, "scales": p.scales, "bias": RNG.standard_normal(n).astype(F32)}
    if asym:
        inputs["zeros"] = p.zeros
    push = {"M": 1, "N": n, "K": k, "row_words": p.row_words, "ngroups": p.ngroups}
    spec = {"WBITS": bits, "GROUP_SIZE": group, "HAS_ZERO_POINT": int(asym), "HAS_BIAS": int(bias)}
    # the base's register-tiled GEMV (its M = 1 tile of linear_tile, NPW 16, takes lavapipe
    # tens of seconds to compile; the variant does not read NPW / MT / WG)
    spec |= {"NPW": 4, "MT": 1, "WG": 64}
    want = _run(base, name, inputs, n, push, spec)
    assert not base.variant_dispatches
    if fast:  # the uniform x block and the weight texel view, as convert-to-vkc sets them
        spec |= x_uniform(1, k) | w_texel()
    before = var.variant_dispatches.get((name, "coop_gemv"), 0)
    got = _run(var, name, inputs, n, push, spec)
    assert var.variant_dispatches[(name, "coop_gemv")] == before + 1
    kspec = kernels()[name]
    host = {key: np.ascontiguousarray(v).reshape(-1) for key, v in inputs.items()}
    host.setdefault("zeros", np.zeros(4, np.int32))
    host.setdefault("bias", np.zeros(4, F32))
    host["out"] = np.zeros(n, F32)
    kspec.reference(host, push, kspec.spec_values(spec))
    ref = np.asarray(host["out"], np.float64).reshape(-1)
    scale = np.abs(ref).max()
    assert np.abs(got - ref).max() / scale < 1e-5
    assert np.abs(got - want).max() / scale < 1e-5


def _dq8ca_case(bits: int, k: int, group: int, asym: bool, n: int, extreme: bool = False):
    """Inputs, push and spec values of a linear_dq8ca decode dispatch (M = 1); `extreme`:
    the activation differences and weight fields at their ends (|product| 2040 for int4)."""
    qmin, qmax = (-8, 7) if bits == 4 else (-128, 127)
    data = RNG.integers(qmin, qmax + 1, (n, k))
    if extreme:
        data[:, ::2] = qmin
    s = (RNG.random((n, -(-k // group))) * 0.1 + 0.01).astype(F32)
    zp = RNG.integers(-3, 4, s.shape) if asym else None
    p = pack_affine(data, s, zp, qmin, qmax, group)
    xq = RNG.integers(-128, 128, k).astype(np.int32)
    zx = int(RNG.integers(-128, 128))
    if extreme:
        xq[::2], zx = -128, 127
    inputs = {"xq": xq, "x_scale": np.array([0.03], F32), "x_zp": np.array([zx], np.int32),
              "w": p.weight, "scales": p.scales, "bias": RNG.standard_normal(n).astype(F32)}  # fmt: skip
    if asym:
        inputs["zeros"] = p.zeros
    push = {"M": 1, "N": n, "K": k, "row_words": p.row_words, "ngroups": p.ngroups}
    spec = {"WBITS": bits, "GROUP_SIZE": group, "HAS_ZERO_POINT": int(asym), "HAS_BIAS": 1}
    return inputs, push, spec | {"NPW": 4, "MT": 1, "WG": 64}


def _reference(name: str, inputs, push, spec, n: int) -> np.ndarray:
    kspec = kernels()[name]
    host = {key: np.ascontiguousarray(v).reshape(-1) for key, v in inputs.items()}
    host.setdefault("zeros", np.zeros(4, np.int32))
    host["out"] = np.zeros(n, F32)
    kspec.reference(host, push, kspec.spec_values(spec))
    return np.asarray(host["out"], F32)


DQ8CA_CASES = [
    ("linear_dq8ca_q4gsw", 4, 256, 32, False, 37),
    ("linear_dq8ca_q4gsw", 4, 512, 64, True, 70),  # asymmetric: int32 products only
    ("linear_dq8ca_q4gsw", 4, 96, 32, False, 130),  # fewer chunks than lanes
    ("linear_dq8ca_q4gsw", 4, 1024, 1024, False, 65),  # one group per row: subgroupAdd
    ("linear_dq8ca_q8csw", 8, 160, 160, False, 33),
    ("linear_dq8ca_q8csw", 8, 64, 64, True, 17),
    ("linear_dq8ca_q8csw", 8, 256, 16, False, 40),
]


@pytest.mark.parametrize("name,bits,k,group,asym,n", DQ8CA_CASES)
def test_dq8ca_variants_on_device(devices, name, bits, k, group, asym, n) -> None:
    """linear_dq8ca is declared exact: each of its variants that applies (one at a time,
    `only`) computes the reference's bits, with x and w read through storage and through
    the uniform block / texel view."""
    var, base = devices
    inputs, push, spec = _dq8ca_case(bits, k, group, asym, n, extreme=k == 256)
    ref = _reference(name, inputs, push, spec, n)
    assert _run(base, name, inputs, n, push, spec).tobytes() == ref.tobytes()
    ran = 0
    for v in variants():
        if v.base != name:
            continue
        for extra in ({}, x_uniform(1, k) | w_texel()):
            values = catalogue()[name].spec_values(spec | extra)
            with only([f"{name}@{v.name}"]):
                if choose(name, var.props, push, values, "all") is None:
                    continue
                before = var.variant_dispatches.get((name, v.name), 0)
                got = _run(var, name, inputs, n, push, spec | extra)
            assert var.variant_dispatches[(name, v.name)] == before + 1
            assert got.tobytes() == ref.tobytes(), (v.name, extra)
            ran += 1
    assert ran == (4 if bits == 4 and not asym else 2)


def test_dq8ca_serial_rows_on_device() -> None:
    """The variants' path for a subgroup that cannot cooperate (fewer lanes than
    gl_SubgroupSize, on some GPUs): built with COOP_SERIAL 1, the reference's bits."""
    reason = vulkan_available()
    if reason:
        pytest.skip(reason)
    for glsl, vname in (("linear_dq8ca_coop_f16.glsl", "coop_gemv_f16"),
                        ("linear_dq8ca_coop.glsl", "coop_gemv")):  # fmt: skip
        version, _, rest = kernel_source(glsl).partition("\n")
        serial = compile_glsl(f"{version}\n#define COOP_SERIAL 1\n{rest}", glsl)
        with VulkanDevice(variants="all") as dev:
            dev.shader_module(glsl, serial)
            for case in [c for c in DQ8CA_CASES if c[0] == "linear_dq8ca_q4gsw"][:3]:
                name, bits, k, group, asym, n = case
                inputs, push, spec = _dq8ca_case(bits, k, group, asym, n)
                with only([f"{name}@{vname}"]):
                    got = _run(dev, name, inputs, n, push, spec)
                if dev.variant_dispatches.get((name, vname)):
                    assert got.tobytes() == _reference(name, inputs, push, spec, n).tobytes()
            assert dev.variant_dispatches.get((name, vname), 0) >= 2


@pytest.mark.parametrize(
    "name,bits,k,group,asym,bias,m,n",
    [
        ("linear_q4gsw", 4, 256, 32, False, True, 64, 70),  # tiles cut at N
        ("linear_q4gsw", 4, 512, 64, True, False, 37, 32),  # tiles cut at M
        ("linear_q4gsw", 4, 96, 96, False, False, 2, 5),  # one group per row
        ("linear_q8csw", 8, 160, 160, False, True, 33, 40),
        ("linear_q8csw", 8, 256, 16, True, False, 8, 17),  # int8 per-group, asymmetric
    ],
)
def test_smem_gemm_on_device(devices, name, bits, k, group, asym, bias, m, n) -> None:
    """The shared-memory prefill GEMM on the local device: chosen (mode all), the base
    gemm_tile's bits exactly (each output the same fma chain in the same k order), within
    the kernel's tolerance of the reference."""
    var, base = devices
    qmin, qmax = (-8, 7) if bits == 4 else (-128, 127)
    data = RNG.integers(qmin, qmax + 1, (n, k))
    s = (RNG.random((n, k // group)) * 0.1 + 0.01).astype(F32)
    zp = RNG.integers(-3, 4, (n, k // group)) if asym else None
    p = pack_affine(data, s, zp, qmin, qmax, group)
    x = RNG.standard_normal((m, k)).astype(F32)
    inputs = {"x": x, "w": p.weight, "scales": p.scales, "bias": RNG.standard_normal(n).astype(F32)}
    if asym:
        inputs["zeros"] = p.zeros
    push = {"M": m, "N": n, "K": k, "row_words": p.row_words, "ngroups": p.ngroups}
    spec = {"WBITS": bits, "GROUP_SIZE": group, "HAS_ZERO_POINT": int(asym), "HAS_BIAS": int(bias)}
    # a small gemm_tile for the base (its bits do not depend on the tile; linear_tile's
    # NPW 16 takes lavapipe seconds to compile), x and w through the texel views
    spec |= {"NPW": 2, "MT": 2, "WG": 64, "X_TEXEL": 1, **w_texel()}
    want = _run(base, name, inputs, m * n, push, spec)
    before = var.variant_dispatches.get((name, "smem_gemm"), 0)
    got = _run(var, name, inputs, m * n, push, spec)
    assert var.variant_dispatches[(name, "smem_gemm")] == before + 1
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    kspec = kernels()[name]
    host = {key: np.ascontiguousarray(v).reshape(-1) for key, v in inputs.items()}
    host.setdefault("zeros", np.zeros(4, np.int32))
    host.setdefault("bias", np.zeros(4, F32))
    host["out"] = np.zeros(m * n, F32)
    kspec.reference(host, push, kspec.spec_values(spec))
    ref = np.asarray(host["out"], np.float64).reshape(-1)
    assert np.abs(got - ref).max() / np.abs(ref).max() < 1e-5
