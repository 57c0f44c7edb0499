"""Cooperative GEMV variants (`qopt.kernels.variants`) of the weight-only quantized
linears linear_q4gsw / linear_q8csw (linear_qw.glsl) for decode (M = 1):
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


def qw_coop_applies(push: PushValues, spec: SpecValues) -> int:
    """1 for a dispatch with one row of x (decode) whose every 128-bit weight chunk lies in
    one group and inside K (linear_qw's fast path: the only one the variant has)."""
    m, n, k, row_words, ngroups = ints(push, "M", "N", "K", "row_words", "ngroups")
    vpc = 128 // int(spec["WBITS"])
    group = int(spec["GROUP_SIZE"])
    cpr = row_words // 4
    aligned = group % vpc == 0 or ngroups == 1
    nfast = k // vpc if aligned and k % 4 == 0 else 0
    return 1 if m == 1 and n >= 1 and ngroups >= 1 and nfast == cpr else 0


def _gemm_tile_path(push: PushValues, spec: SpecValues) -> bool:
    """Whether linear_qw runs this dispatch through its gemm_tile: WBITS 4 or 8, MT > 1
    or NPW > 4, every 128-bit chunk of a weight row inside one group and inside K."""
    m, n, k, row_words, ngroups = ints(push, "M", "N", "K", "row_words", "ngroups")
    bits = int(spec["WBITS"])
    if bits not in (4, 8) or (int(spec["MT"]) <= 1 and int(spec["NPW"]) <= 4):
        return False
    vpc = 128 // bits
    aligned = int(spec["GROUP_SIZE"]) % vpc == 0 or ngroups == 1
    nfast = k // vpc if aligned and k % 4 == 0 else 0
    return m >= 1 and n >= 1 and ngroups >= 1 and nfast == row_words // 4


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
