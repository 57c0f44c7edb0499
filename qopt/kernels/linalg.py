"""Linear algebra and pooling kernels: matmul, conv2d, pool2d, adaptive_avg_pool2d."""

from __future__ import annotations

from qopt.kernels.extents import (
    FLAG,
    TILE_RANGE,
    WG_RANGE,
    always,
    conv_extents,
    count,
    grid_workgroups,
    group_count,
    guarded,
    ints,
    spec_int,
)
from qopt.kernels.opcodes import POOL_OPS
from qopt.kernels.spec import (
    MAX_WORKGROUPS,
    Extents,
    KernelSpec,
    PushValues,
    SpecValues,
    binding,
    push_of,
)


def matmul_tile(m: int) -> dict[str, int]:
    """NPW / MT of the TRANS_B = 1 matmul (linear) for M rows of a, measured on lavapipe:
    M = 1 4 columns per invocation (each a vec4 feeds 4 columns); M > 1 8 columns x up to
    8 rows (balanced over ceil(M / 8) row blocks, as qlinear's tiles)."""
    if m <= 1:
        return {"NPW": 4, "MT": 1}
    blocks = -(-m // 8)
    return {"NPW": 8, "MT": -(-m // blocks)}


def _matmul_workgroups(push: PushValues, spec: SpecValues) -> tuple[int, int, int]:
    m, n, batch = int(push["M"]), int(push["N"]), int(push["batch"])
    trans_b = spec_int(spec, "TRANS_B", 1)
    mt = spec_int(spec, "MT", 1) if trans_b else 1
    npw = spec_int(spec, "NPW", 1) if trans_b else 1
    return (
        group_count(n, spec_int(spec, "WG", 64) * npw),
        group_count(m, mt),
        max(1, min(batch, MAX_WORKGROUPS)),
    )


def _matmul_extents(push: PushValues, spec: SpecValues) -> Extents:
    """matmul.glsl: for z < batch, m < M, n < N: a[z*a_bs + m*K + k], b[z*b_bs + k*N + n]
    (TRANS_B 0) or b[z*b_bs + n*K + k] (TRANS_B 1: rows clamped to M - 1, columns to
    N - 1; the vec4 path reads a4/b4 at the same words, 16-byte aligned as it requires
    K, a_bs, b_bs % 4 == 0), bias[n] (HAS_BIAS), out[z*M*N + m*N + n]. Both layouts of b
    end at word (batch - 1) * b_bs + K * N."""
    m, n, k, batch, a_bs, b_bs = ints(push, "M", "N", "K", "batch", "a_bs", "b_bs")
    ext: Extents = dict.fromkeys(("a", "b", "bias", "out"), 0)
    if 0 in (m, n, batch):
        return ext
    ext["out"] = batch * m * n
    if int(spec["HAS_BIAS"]) == 1:
        ext["bias"] = n
    if k:
        ext["a"] = (batch - 1) * a_bs + m * k
        ext["b"] = (batch - 1) * b_bs + n * k
    return ext


MATMUL = KernelSpec(
    name="matmul",
    glsl="matmul.glsl",
    bindings=(
        binding("a", "f32"),
        binding("b", "f32"),
        binding("bias", "f32"),
        binding("out", "f32", True),
    ),
    push=push_of("M", "N", "K", "batch", "a_bs", "b_bs"),
    spec=(("TRANS_B", 1), ("HAS_BIAS", 0), ("NPW", 1), ("MT", 1), ("WG", 64)),
    workgroups=_matmul_workgroups,
    extents=guarded("matmul", _matmul_extents),
    spec_bounds={
        "TRANS_B": FLAG,
        "HAS_BIAS": FLAG,
        "NPW": TILE_RANGE,
        "MT": TILE_RANGE,
        "WG": WG_RANGE,
    },
    doc="""out[z] = a[z] @ (TRANS_B ? b[z].T : b[z]) (+ bias), a [batch, M, K] (batch
stride a_bs), b [batch, K, N] or [batch, N, K] (stride b_bs, 0 = shared), out contiguous
[batch, M, N]. TRANS_B = 1 is the GEMV/linear path (NPW columns x MT rows per
invocation, 16-byte loads when K and the batch strides are multiples of 4; `matmul_tile`
gives the tile for M); TRANS_B = 0 is one output per invocation. workgroups
(ceil(N/(WG*NPW)), ceil(M/MT), batch) for TRANS_B = 1, (ceil(N/WG), M, batch) else.""",
)


CONV_TILE_BOUNDS = {"OCT": (1, 8), "OWT": (1, 8)}
"""Ranges of the conv2d kernels' tile constants (named accumulators in the shaders)."""


def conv_tile(out_channels: int, groups: int, out_width: int) -> dict[str, int]:
    """OCT / OWT of the conv2d kernels: the most output channels (8, 4, 2, 1) that divide
    the channels per group (a tile inside one group shares its x taps; one straddling a
    group boundary falls back to one output at a time) and up to 8 output columns,
    balanced over the ceil(OW / 8) column blocks of a row (OW = 14 takes two tiles of 7).
    Each tap loads OCT weights and OWT x values for OCT * OWT products; on lavapipe
    every load is a loop over the SIMD lanes, so the biggest tile wins although its 64
    accumulators spill (OCT 8 x OWT 8 ~1.4x faster than 8 x 4)."""
    per_group = max(1, out_channels // max(1, groups))
    oct_ = next(t for t in (8, 4, 2, 1) if per_group % t == 0)
    blocks = -(-max(1, out_width) // 8)
    return {"OCT": oct_, "OWT": -(-max(1, out_width) // blocks)}


def conv_workgroups(push: PushValues, spec: SpecValues) -> tuple[int, int, int]:
    """ceil(N * ceil(OC/OCT) * OH * ceil(OW/OWT) / WG) workgroups (the conv2d kernels'
    grid-stride over output tiles)."""
    oct_, owt = spec_int(spec, "OCT", 1), spec_int(spec, "OWT", 1)
    tiles = (
        int(push["N"])
        * group_count(int(push["OC"]), oct_)
        * int(push["OH"])
        * group_count(int(push["OW"]), owt)
    )
    return (min(MAX_WORKGROUPS, group_count(tiles, spec_int(spec, "WG", 64))), 1, 1)


def _conv2d_extents(push: PushValues, spec: SpecValues) -> Extents:
    """conv2d.glsl (float weights [OC, C / groups, KH, KW]): `conv_extents`."""
    return conv_extents(push, spec, False)


CONV2D = KernelSpec(
    name="conv2d",
    glsl="conv2d.glsl",
    bindings=(
        binding("x", "f32"),
        binding("w", "f32"),
        binding("bias", "f32"),
        binding("y", "f32", True),
    ),
    push=(
        *push_of("N", "C", "H", "W", "OC", "OH", "OW", "KH", "KW"),
        *push_of("sh", "sw", "ph", "pw", "dh", "dw", kind="i32"),
        ("groups", "u32"),
    ),
    spec=(("HAS_BIAS", 0), ("WG", 64), ("OCT", 1), ("OWT", 1)),
    workgroups=conv_workgroups,
    extents=guarded("conv2d", _conv2d_extents),
    spec_bounds={"HAS_BIAS": FLAG, "WG": WG_RANGE, **CONV_TILE_BOUNDS},
    doc="""Float NCHW conv2d (stride/pad/dilation/groups, optional bias). OCT output
channels x OWT output columns per invocation (`conv_tile`); workgroups
ceil(N * ceil(OC/OCT) * OH * ceil(OW/OWT) / WG).""",
)


def _pool_extents(push: PushValues, spec: SpecValues) -> Extents:
    """pool2d.glsl: output i < planes*OH*OW reads x[plane * uint(H*W) + uint(ih*W + iw)]
    only for 0 <= ih < H, 0 <= iw < W (max: the bounds checks; avg: the window clipped
    to the input), in int32 arithmetic; writes y[i]."""
    planes, h, w, oh, ow = ints(push, "planes", "H", "W", "OH", "OW")
    total = count(planes * oh * ow, "planes * OH * OW")
    x = 0
    if total and h > 0 and w > 0:
        if h * w >= 1 << 31:
            raise ValueError(f"H * W = {h * w} overflows the shader's int32")
        x = planes * h * w
    return {"x": x, "y": total}


POOL2D = KernelSpec(
    name="pool2d",
    glsl="pool2d.glsl",
    bindings=(binding("x", "f32"), binding("y", "f32", True)),
    push=(
        ("planes", "u32"),
        ("H", "i32"),
        ("W", "i32"),
        ("OH", "u32"),
        ("OW", "u32"),
        *push_of("KH", "KW", "sh", "sw", "ph", "pw", "dh", "dw", "divisor_override", kind="i32"),
    ),
    spec=(("OP", POOL_OPS["max"]), ("COUNT_INCLUDE_PAD", 1), ("WG", 64)),
    workgroups=grid_workgroups(lambda p: int(p["planes"]) * int(p["OH"]) * int(p["OW"])),
    exact=always,
    extents=guarded("pool2d", _pool_extents),
    spec_bounds={
        "OP": (min(POOL_OPS.values()), max(POOL_OPS.values())),
        "COUNT_INCLUDE_PAD": FLAG,
        "WG": WG_RANGE,
    },
    doc="""max (OP 0) / avg (OP 1) pool2d over [planes, H, W] -> [planes, OH, OW];
OH/OW computed by the caller as torch does (ceil_mode included); avg divisor as torch
(COUNT_INCLUDE_PAD, divisor_override when nonzero).""",
)


def _adaptive_extents(push: PushValues, spec: SpecValues) -> Extents:
    """adaptive_avg_pool2d.glsl: output i < planes*OH*OW (plane, oh, ow) reads
    x[plane*H*W + h*W + w] for h in [oh*H / OH, ceil((oh + 1)*H / OH)) (inside [0, H),
    likewise w), computed in uint32; writes y[i]."""
    planes, h, w, oh, ow = ints(push, "planes", "H", "W", "OH", "OW")
    total = count(planes * oh * ow, "planes * OH * OW")
    if total == 0:
        return {"x": 0, "y": 0}
    count(oh * (h + 1) - 1, "OH * H + OH - 1")  # the window end (oh + 1) * H + OH - 1
    count(ow * (w + 1) - 1, "OW * W + OW - 1")
    return {"x": planes * h * w, "y": total}


ADAPTIVE_AVG_POOL2D = KernelSpec(
    name="adaptive_avg_pool2d",
    glsl="adaptive_avg_pool2d.glsl",
    bindings=(binding("x", "f32"), binding("y", "f32", True)),
    push=push_of("planes", "H", "W", "OH", "OW"),
    spec=(("WG", 64),),
    workgroups=grid_workgroups(lambda p: int(p["planes"]) * int(p["OH"]) * int(p["OW"])),
    exact=always,
    extents=guarded("adaptive_avg_pool2d", _adaptive_extents),
    spec_bounds={"WG": WG_RANGE},
    doc="adaptive_avg_pool2d over [planes, H, W] -> [planes, OH, OW].",
)


SPECS = (MATMUL, CONV2D, POOL2D, ADAPTIVE_AVG_POOL2D)
