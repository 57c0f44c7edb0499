"""linear_qw's and linear_dq8ca's gemm_tile on a grid that covers M x N (one tile per
invocation, outside the grid-stride loops) and on a smaller grid (the loops: what a
dispatch whose workgroup count was capped at MAX_WORKGROUPS runs): the same bits, and
the kernel's reference (bit for bit for linear_dq8ca, within linear_qw's tolerance)."""

from __future__ import annotations

import numpy as np
import pytest

from qopt.backends.vulkan.registry import kernels
from qopt.backends.vulkan.runtime import Dispatch, VulkanDevice
from qopt.interpreters import quant as iq
from qopt.kernels.packing import pack_affine

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
    kspec.reference(ref, push, kspec.spec_values(spec))
    if name.startswith("linear_dq8ca"):
        np.testing.assert_array_equal(outs[0], ref["out"])
    else:
        np.testing.assert_allclose(outs[0], ref["out"], rtol=1e-5, atol=1e-5)
