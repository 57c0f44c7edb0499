"""linear_qw's and linear_dq8ca's gemm_tile and linear_lut's tiles on a grid that covers
M x N (one tile per invocation, outside the grid-stride loops) and on a smaller grid (the
loops: what a dispatch whose workgroup count was capped at MAX_WORKGROUPS runs): the same
bits, and the kernel's reference (bit for bit for linear_dq8ca, within linear_qw's and
linear_lut's tolerance)."""

from __future__ import annotations

import numpy as np
import pytest

from qopt.backends.vulkan.registry import kernels
from qopt.backends.vulkan.runtime import Dispatch, VulkanDevice
from qopt.interpreters import quant as iq
from qopt.kernels.packing import pack_affine, pack_lut
from qopt.kernels.qlinear import lut_uniform, x_uniform

F32 = np.float32
RNG = np.random.default_rng(2026)


@pytest.fixture
def dev(validated_device: VulkanDevice) -> VulkanDevice:
    """The validated device of tests/unit/kernels/conftest.py."""
    return validated_device


def _inputs(name: str, bits: int, m: int, n: int, k: int, group: int) -> dict[str, np.ndarray]:
    qmin, qmax = (-8, 7) if bits == 4 else (-128, 127)
    data = RNG.integers(qmin, qmax + 1, (n, k))
    s = (RNG.random((n, k // group)) * 0.1 + 0.01).astype(F32)
    zp = RNG.integers(-3, 4, (n, k // group))
    p = pack_affine(data, s, zp, qmin, qmax, group)
    x = RNG.standard_normal((m, k)).astype(F32)
    common = {"w": p.weight, "scales": p.scales, "zeros": p.zeros,
              "bias": RNG.standard_normal(n).astype(F32)}  # fmt: skip
    if not name.startswith("linear_dq8ca"):
        return {"x": x, **common}
    xs, xz = iq.choose_qparams(x, (1, k), -128, 127, "asymmetric", 1e-7, F32, np.int32)
    xq = iq.quantize(x, xs, xz, (1, k), -128, 127, np.int32, F32)
    return {"xq": xq, "x_scale": xs.reshape(-1), "x_zp": xz.reshape(-1), **common}


def _covering_and_capped(
    dev: VulkanDevice,
    name: str,
    host: dict[str, np.ndarray],
    push: dict[str, int],
    spec: dict[str, int],
    tile: tuple[int, int, int],
) -> tuple[np.ndarray, np.ndarray]:
    """Runs kernel `name` on the covering grid and on three capped ones, asserts they give
    the same bits, and returns (the device's out, the reference's out)."""
    kspec = kernels()[name]
    m, n = push["M"], push["N"]
    full = kspec.workgroups(push, kspec.spec_values(spec))
    assert full[0] * tile[0] * tile[2] >= n
    assert full[1] * tile[1] >= m
    outs = []
    for groups in (None, (1, 1, 1), (2, 1, 1), (1, 2, 1)):
        bufs = {key: dev.upload(v) for key, v in host.items()}
        dev.run([Dispatch(name, bufs, push, spec, groups)])
        outs.append(dev.download(bufs["out"], F32, (m * n,)))
        for b in bufs.values():
            b.free()
    for got in outs[1:]:
        np.testing.assert_array_equal(got.view(np.uint32), outs[0].view(np.uint32))
    ref = {key: v.copy() for key, v in host.items()}
    assert kspec.reference is not None
    kspec.reference(ref, push, kspec.spec_values(spec))
    return outs[0], ref["out"]


@pytest.mark.parametrize(
    "name,bits,group,m,tile",
    [
        ("linear_q4gsw", 4, 32, 11, (6, 4, 2)),  # 3 row blocks, the last one partial
        ("linear_q8csw", 8, 64, 1, (5, 1, 2)),  # NPW > 4 at M = 1: gemm_tile
        ("linear_dq8ca_q4gsw", 4, 32, 11, (6, 4, 2)),
    ],
)
def test_gemm_tile_grid_covering_or_capped(dev, name, bits, group, m, tile) -> None:
    n, k = 45, 64
    spec = {"WBITS": bits, "GROUP_SIZE": group, "HAS_ZERO_POINT": 1, "HAS_BIAS": 1,
            "NPW": tile[0], "MT": tile[1], "WG": tile[2]}  # fmt: skip
    push = {"M": m, "N": n, "K": k, "row_words": k * bits // 32, "ngroups": k // group}
    kspec = kernels()[name]
    inputs = _inputs(name, bits, m, n, k, group)
    host = {b.name: np.ascontiguousarray(inputs.get(b.name, np.zeros(4, F32))).reshape(-1)
            for b in kspec.bindings if b.name != "out"}  # fmt: skip
    host["out"] = np.zeros(m * n, F32)
    got, ref = _covering_and_capped(dev, name, host, push, spec, tile)
    if name.startswith("linear_dq8ca"):
        np.testing.assert_array_equal(got, ref)
    else:
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "path,m,k,tile",
    [
        ("vec4_uniform", 1, 64, (8, 1, 2)),  # tile_v4, codebook and x in uniform blocks
        ("vec4_uniform", 11, 64, (4, 4, 2)),  # tile_v4, 3 row blocks, the last partial
        ("vec4_texel", 11, 64, (4, 4, 2)),  # tile_v4, x through the texel view
        ("palette", 11, 64, (8, 4, 2)),  # tile_palette (storage codebook)
        ("tail", 5, 62, (4, 2, 2)),  # K % 4 != 0: tile, in the loops on every grid
    ],
)
def test_lut_tile_grid_covering_or_capped(dev, path, m, k, tile) -> None:
    """linear_lut: its fast paths once per invocation on a covering grid, `tile` in the
    grid-stride loops on a capped one: the same bits, and the reference's values."""
    n, block = 45, 16 if k % 16 == 0 else k
    codes = RNG.integers(0, 16, (n, k))
    book = RNG.standard_normal((1, k // block, 16, 1)).astype(F32)
    p = pack_lut(codes, book, 4)
    entries = np.concatenate([p.codebook.reshape(-1), np.zeros((-p.codebook.size) % 4, F32)])
    x = RNG.standard_normal((m, k)).astype(F32)
    spec = {"FBITS": 4, "HAS_BIAS": 1, "NPW": tile[0], "MT": tile[1], "WG": tile[2]}
    if path.startswith("vec4"):
        spec |= lut_uniform(p.codebook.size)
        spec |= x_uniform(m, k) if path == "vec4_uniform" else {"X_TEXEL": 1}
    push = {"M": m, "N": n, "K": k, "row_words": p.row_words, "BN": p.block_rows,
            "BK": p.block_cols, "GK": p.col_groups, "L": p.lut_size}  # fmt: skip
    host = {"x": x.reshape(-1), "codes": p.codes.reshape(-1), "codebook": entries,
            "bias": RNG.standard_normal(n).astype(F32), "out": np.zeros(m * n, F32)}  # fmt: skip
    got, ref = _covering_and_capped(dev, "linear_lut", host, push, spec, tile)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
