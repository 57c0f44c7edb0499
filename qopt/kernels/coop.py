"""Cooperative GEMV variants (`qopt.kernels.variants`) for decode (M = 1): of the
weight-only quantized linears linear_q4gsw / linear_q8csw (below) and of the dynamic
int8-activation linears linear_dq8ca_q4gsw / linear_dq8ca_q8csw (8da4w; the second part
of this module: include/dq8ca_coop.glsl, whose header says how it keeps the base's bits).

linear_q4gsw / linear_q8csw (linear_qw.glsl):
linear_qw_coop.glsl, a workgroup of 64 invocations per `QW_COOP_ROWS` output rows, the
K reduction of each row split over the lanes of a subgroup and summed with subgroupAdd
(it needs subgroup arithmetic in the compute stage).

The base's M = 1 tile (`qlinear.linear_tile`: 16 weight rows per invocation, 512 rows per
workgroup) suits lavapipe, which runs an invocation per SIMD lane and gathers each lane's
loads; on a GPU it leaves 4 workgroups for a 2048-row projection and every lane walking
its own weight rows (uncoalesced). The cooperative shape is the usual GPU GEMV: adjacent
lanes read adjacent 16-byte weight chunks of one row and there is a workgroup per 16 rows.
On lavapipe (a CPU device) it was measured slower than the base at the 336M decoder's
shapes (see `qopt.kernels.variants.VARIANTS`), so it is preferred on GPU device types only;
`QOPT_VK_VARIANTS=all` runs it on lavapipe (tests, benchmarks/variants.py).

Its reads lie inside the base's extents (`qlinear._linear_qw_extents`, the path where
every chunk is fast, which `qw_coop_applies` requires): x vec4s below cpr * VPC / 4
(<= K / 4), weight chunks n * cpr + c for n < N, c < cpr, scales / zeros at
n * ngroups + c * VPC // GROUP_SIZE (or n with one group per row), bias[n], out[n]."""

from __future__ import annotations

from qopt.kernels.extents import group_count, ints
from qopt.kernels.spec import PushValues, SpecValues

QW_COOP_ROWS = 16
"""Output rows per workgroup of linear_qw_coop.glsl (its ROWS)."""


def qw_coop_workgroups(push: PushValues, spec: SpecValues) -> tuple[int, int, int]:
    return (group_count(int(push["N"]), QW_COOP_ROWS), 1, 1)


def _qw_all_chunks_fast(push: PushValues, spec: SpecValues) -> bool:
    """Whether every 128-bit chunk of a linear_qw weight row lies in one group and inside
    K (its fast path), for a dispatch of at least one row and one output."""
    m, n, k, row_words, ngroups = ints(push, "M", "N", "K", "row_words", "ngroups")
    vpc = 128 // int(spec["WBITS"])
    aligned = int(spec["GROUP_SIZE"]) % vpc == 0 or ngroups == 1
    nfast = k // vpc if aligned and k % 4 == 0 else 0
    return m >= 1 and n >= 1 and ngroups >= 1 and nfast == row_words // 4


def qw_coop_applies(push: PushValues, spec: SpecValues) -> int:
    """1 for a dispatch with one row of x (decode) whose every 128-bit weight chunk lies in
    one group and inside K (linear_qw's fast path: the only one the variant has)."""
    return 1 if int(push["M"]) == 1 and _qw_all_chunks_fast(push, spec) else 0


# ----- linear_dq8ca (8da4w and the dynamic int8 schemes): include/dq8ca_coop.glsl ------
# A workgroup of 64 per 64 output rows; each subgroup R = min(S, 32) rows at a time, lane l
# the chunks l, l + S, ... of each (coalesced), the exact int32 chunk sums folded in the
# base's order (group sums, then f32 in group order) through shared memory, or added with
# subgroupAdd when a row is one group. Bit-identical to the base (the kernel is declared
# exact). Its reads are the base's chunked-path words at M = 1 (`qlinear._dq8ca_fast`, which
# `dq8ca_coop_applies` requires): xq below K, x_scale[0] / x_zp[0], w chunks n * cpr + c,
# scales / zeros [n * ngroups + c * VPC // GROUP_SIZE], bias[n], out[n] for n < N.

DQ8CA_COOP_ROWS = 64
"""Output rows per workgroup of the cooperative linear_dq8ca GEMV (its ROWS)."""
DQ8CA_COOP_SHARED = 2112 * 4
"""Bytes of its shared array (PART ints: R * (S + 1) chunk sums per subgroup, R = min(S,
32) rows of S lanes, for subgroup sizes up to 64)."""


def dq8ca_coop_workgroups(push: PushValues, spec: SpecValues) -> tuple[int, int, int]:
    return (group_count(int(push["N"]), DQ8CA_COOP_ROWS), 1, 1)


def dq8ca_coop_applies(push: PushValues, spec: SpecValues) -> int:
    """1 for a dispatch with one row of x (decode) on linear_dq8ca's chunked path (every
    128-bit chunk inside one group, rows of exactly K fields: the only path the variant
    has) with at least one chunk per row."""
    m, n, k, row_words = ints(push, "M", "N", "K", "row_words")
    vpc = 128 // int(spec["WBITS"])
    group = int(spec["GROUP_SIZE"])
    fast = group % vpc == 0 and row_words % 4 == 0 and (row_words // 4) * vpc == k
    return 1 if m == 1 and n >= 1 and k >= 1 and fast else 0


def dq8ca_f16_applies(push: PushValues, spec: SpecValues) -> int:
    """`dq8ca_coop_applies`, for symmetric int4 weights only: there each product of a
    weight field (-8..7) and an int8 activation difference (-255..255) is an integer of
    magnitude <= 2040, exact in f16 (11 significant bits), so f16 products give the
    int32 variant's bits."""
    symmetric_int4 = int(spec["WBITS"]) == 4 and int(spec["HAS_ZERO_POINT"]) == 0
    return dq8ca_coop_applies(push, spec) if symmetric_int4 else 0


def _gemm_tile_path(push: PushValues, spec: SpecValues) -> bool:
    """Whether linear_qw runs this dispatch through its gemm_tile: WBITS 4 or 8, MT > 1
    or NPW > 4, every 128-bit chunk of a weight row inside one group and inside K."""
    if int(spec["WBITS"]) not in (4, 8) or (int(spec["MT"]) <= 1 and int(spec["NPW"]) <= 4):
        return False
    return _qw_all_chunks_fast(push, spec)


QW_SMEM_TILE = 32
"""Rows of x and weight rows per workgroup of linear_qw_smem.glsl (its BM and BN)."""
QW_SMEM_BYTES = 2 * QW_SMEM_TILE * 33 * 4
"""Its shared memory: x and decoded weights, 32 rows of 33 floats each."""


def qw_smem_workgroups(push: PushValues, spec: SpecValues) -> tuple[int, int, int]:
    return (
        group_count(int(push["N"]), QW_SMEM_TILE),
        group_count(int(push["M"]), QW_SMEM_TILE),
        1,
    )


def qw_smem_applies(push: PushValues, spec: SpecValues) -> int:
    """1 for a prefill dispatch (M > 1) that linear_qw runs through its gemm_tile (WBITS 4
    or 8, every 128-bit chunk in one group and inside K: the only path of
    linear_qw_smem.glsl)."""
    m = int(push["M"])
    return 1 if m > 1 and _gemm_tile_path(push, spec) else 0
