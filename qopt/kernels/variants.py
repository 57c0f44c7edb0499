"""Per-device kernel variants, picked when a program is loaded (never stored in a `.qvk`).

A `KernelVariant` is another shader for a catalogue kernel (its *base*): the same
bindings, push constants, specialization constants (constant ids), uniform and texel
views, so any dispatch of the base can run it unchanged, with its own GLSL source, local
size and workgroup rule (`workgroups`, translated into C like the base's rules). It reads
at most the words the base's `extents` allow (the base's checks still guard every
dispatch; each variant's module says why its reads lie inside them, and
tests/unit/vulkan/test_variants.py runs it on the local device against the base).

Which variant a dispatch gets is one rule, `choose`, over data:

- the device's properties (`DeviceProps`: type, subgroup size / stages / operations,
  maxComputeSharedMemorySize, shaderFloat16 / shaderInt8), queried by both runtimes
  when they open a device;
- each variant's requirements (`Needs`) and the device types it is preferred on
  (`prefer`: where it was measured, or is known, to win);
- the dispatch: `applies(push, spec)` (an int rule translated into C like the others:
  e.g. "M == 1 and every chunk on the fast path");
- the mode (`QOPT_VK_VARIANTS`: `auto`, the default: a variant where it is preferred;
  `base`: never a variant; `all`: every variant the device can run, preferred or not,
  for tests and benchmarks).

The first variant of the kernel (in `VARIANTS` order) that passes wins; none: the base.
runtime/gen_catalogue.py writes this table and `applies` / `workgroups` into the native
runtime's catalogue, and its `choose` (runtime/src/session.c, `choose_variant`) is this
function over the same data, so the Python and native runtimes pick the same variant on
the same device and stay bit-identical (tests/unit/runtime checks both).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterable
from contextlib import contextmanager
from dataclasses import dataclass, replace

from qopt.errors import QoptError
from qopt.kernels import coop
from qopt.kernels.spec import KernelSpec, PushValues, SpecValues

# VkPhysicalDeviceType
DEVICE_OTHER, DEVICE_INTEGRATED_GPU, DEVICE_DISCRETE_GPU, DEVICE_VIRTUAL_GPU, DEVICE_CPU = range(5)
GPU_TYPES = (DEVICE_INTEGRATED_GPU, DEVICE_DISCRETE_GPU, DEVICE_VIRTUAL_GPU)
"""The device types a GPU-shaped variant is preferred on (lavapipe is DEVICE_CPU)."""

# VkSubgroupFeatureFlagBits
SUBGROUP_BASIC = 0x1
SUBGROUP_VOTE = 0x2
SUBGROUP_ARITHMETIC = 0x4
SUBGROUP_BALLOT = 0x8
SUBGROUP_SHUFFLE = 0x10
STAGE_COMPUTE = 0x20
"""VK_SHADER_STAGE_COMPUTE_BIT."""

MODES = ("auto", "base", "all")
MODE_ENV = "QOPT_VK_VARIANTS"


@dataclass(frozen=True)
class DeviceProps:
    """What a variant's choice reads of a device (both runtimes query the same fields)."""

    device_type: int
    subgroup_size: int = 1
    subgroup_stages: int = 0
    subgroup_ops: int = 0
    shared_bytes: int = 0
    float16: bool = False
    int8: bool = False

    def describe(self) -> str:
        ops = [
            name
            for bit, name in (
                (SUBGROUP_BASIC, "basic"),
                (SUBGROUP_VOTE, "vote"),
                (SUBGROUP_ARITHMETIC, "arithmetic"),
                (SUBGROUP_BALLOT, "ballot"),
                (SUBGROUP_SHUFFLE, "shuffle"),
            )
            if self.subgroup_ops & bit
        ]
        kind = {0: "other", 1: "integrated GPU", 2: "discrete GPU", 3: "virtual GPU", 4: "CPU"}
        compute = "" if self.subgroup_stages & STAGE_COMPUTE else " (not in compute)"
        return (
            f"{kind.get(self.device_type, str(self.device_type))}, subgroup "
            f"{self.subgroup_size} [{' '.join(ops) or 'none'}]{compute}, shared memory "
            f"{self.shared_bytes} B, fp16 {int(self.float16)}, int8 {int(self.int8)}"
        )


@dataclass(frozen=True)
class Needs:
    """A variant's requirements on the device: every bit of `subgroup_ops` supported in
    the compute stage, a subgroup size in [min_subgroup, max_subgroup], at least
    `shared_bytes` of shared memory, shaderFloat16 / shaderInt8 where asked."""

    subgroup_ops: int = 0
    min_subgroup: int = 1
    max_subgroup: int = 1 << 16
    shared_bytes: int = 0
    float16: bool = False
    int8: bool = False

    def met(self, props: DeviceProps) -> bool:
        if self.subgroup_ops and not props.subgroup_stages & STAGE_COMPUTE:
            return False
        return (
            props.subgroup_ops & self.subgroup_ops == self.subgroup_ops
            and self.min_subgroup <= props.subgroup_size <= self.max_subgroup
            and props.shared_bytes >= self.shared_bytes
            and (props.float16 or not self.float16)
            and (props.int8 or not self.int8)
        )


def _always(push: PushValues, spec: SpecValues) -> int:
    return 1


@dataclass(frozen=True)
class KernelVariant:
    name: str
    """Short name (`coop_gemv`); the variant kernel is `<base>@<name>`."""
    base: str
    """The catalogue kernel it replaces."""
    glsl: str
    """Its source under qopt/kernels/glsl/."""
    needs: Needs
    prefer: tuple[int, ...]
    """Device types (VkPhysicalDeviceType) where `auto` picks it."""
    workgroups: Callable[[PushValues, SpecValues], tuple[int, int, int]]
    applies: Callable[[PushValues, SpecValues], int] = _always
    """1 where this dispatch (push, complete spec values) can take the variant, else 0."""
    local_size: tuple[int, int, int] = (64, 1, 1)
    doc: str = ""

    def kernel(self, base: KernelSpec) -> KernelSpec:
        """The variant as a kernel: `base`'s interface, checks and reference, with this
        variant's name, source, local size and workgroup rule."""
        return replace(
            base,
            name=f"{base.name}@{self.name}",
            glsl=self.glsl,
            local_size=self.local_size,
            workgroups=self.workgroups,
        )


_ONLY: list[frozenset[str]] = []


def _table() -> tuple[KernelVariant, ...]:
    if _ONLY:
        return tuple(v for v in VARIANTS if f"{v.base}@{v.name}" in _ONLY[-1])
    return VARIANTS


@contextmanager
def only(names: Iterable[str]) -> Generator[None]:
    """While the block runs, the variants are only those named (`<base>@<name>`), in this
    process's `choose` (the Python runtime's; the native runtime's table is fixed): how
    the tests and benchmarks/variants.py run a kernel's second variant where the first
    one also applies. A dispatch's variant is chosen when a program is recorded (a
    session's first run)."""
    wanted = frozenset(names)
    known = {f"{v.base}@{v.name}" for v in VARIANTS}
    if unknown := sorted(wanted - known):
        raise QoptError(
            f"no kernel variant {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    _ONLY.append(wanted)
    try:
        yield
    finally:
        _ONLY.pop()


def variants() -> tuple[KernelVariant, ...]:
    """Every variant, in the order `choose` tries them."""
    return _table()


def variants_of(kernel: str) -> tuple[KernelVariant, ...]:
    return tuple(v for v in _table() if v.base == kernel)


def variant_mode(value: str | None = None) -> str:
    """The mode from `value` (default: the environment's QOPT_VK_VARIANTS, unset: auto)."""
    if value is None:
        value = os.environ.get(MODE_ENV, "")
    mode = value.strip() or "auto"
    if mode not in MODES:
        raise QoptError(
            f"{MODE_ENV}={value!r}: not a variant mode; use auto (the default: variants where "
            "they are preferred), base (never a variant) or all (every variant the device runs)"
        )
    return mode


def choose(
    kernel: str, props: DeviceProps | None, push: PushValues, spec: SpecValues, mode: str
) -> KernelVariant | None:
    """The variant a dispatch of `kernel` (push values, complete spec values) runs on a
    device of `props` under `mode`, or None (the base)."""
    if mode == "base" or props is None:
        return None
    for v in variants_of(kernel):
        if not v.needs.met(props):
            continue
        if mode != "all" and props.device_type not in v.prefer:
            continue
        if int(v.applies(push, spec)) != 1:
            continue
        return v
    return None


def report(
    device: str,
    props: DeviceProps | None,
    mode: str,
    counts: dict[tuple[str, str], int],
    kernels: Iterable[str],
) -> list[str]:
    """Lines saying which variant each of `kernels` (those with variants) got on a device
    (`counts`: dispatches recorded with a variant, by (kernel, variant)) and why not."""
    lines = [f"kernel variants ({MODE_ENV}={mode}) on {device}: "
             f"{props.describe() if props else 'properties unknown'}"]  # fmt: skip
    for kernel in sorted(set(kernels)):
        options = variants_of(kernel)
        if not options:
            continue
        used = [f"{v.name} ({counts[kernel, v.name]} dispatches)" for v in options
                if counts.get((kernel, v.name))]  # fmt: skip
        if used:
            lines.append(f"  {kernel}: {', '.join(used)}")
            continue
        why: list[str] = []
        for v in options:
            if mode == "base" or props is None:
                why.append(f"{v.name}: mode base")
            elif not v.needs.met(props):
                why.append(f"{v.name}: the device lacks what it needs")
            elif mode == "auto" and props.device_type not in v.prefer:
                why.append(f"{v.name}: not preferred on this device type")
            else:
                why.append(f"{v.name}: no dispatch it applies to")
        lines.append(f"  {kernel}: base ({'; '.join(why)})")
    return lines


# ----- the variants (their rules: qopt/kernels/coop.py) ------------------------------

_QW_COOP_NEEDS = Needs(subgroup_ops=SUBGROUP_BASIC | SUBGROUP_ARITHMETIC)
_DQ8CA_COOP_NEEDS = Needs(
    subgroup_ops=SUBGROUP_BASIC | SUBGROUP_ARITHMETIC,
    max_subgroup=64,
    shared_bytes=coop.DQ8CA_COOP_SHARED,
)

_QW_COOP = tuple(
    KernelVariant(
        name="coop_gemv",
        base=base,
        glsl="linear_qw_coop.glsl",
        needs=_QW_COOP_NEEDS,
        prefer=GPU_TYPES,
        workgroups=coop.qw_coop_workgroups,
        applies=coop.qw_coop_applies,
        local_size=(64, 1, 1),
        doc="decode GEMV: a subgroup per 2 rows, K split over its lanes, subgroupAdd",
    )
    for base in ("linear_q4gsw", "linear_q8csw")
)
"""Measured on lavapipe (llvmpipe, 8-lane subgroups, 2-core AMD EPYC under load;
benchmarks/variants.py, decode of the Llama-shaped decoder, interleaved medians): dim 2048
(336M) 1.06x the base's time for w4g32 and 1.25x for w8c; dim 256 (--quick) 0.67x and
0.95x (0.34x / 0.75x in a second run). Four rows at a time per subgroup was no better.
Slower at the shapes that matter there, so preferred on GPU device types only (not
measured on a GPU: none was available)."""

_QW_SMEM = tuple(
    KernelVariant(
        name="smem_gemm",
        base=base,
        glsl="linear_qw_smem.glsl",
        needs=Needs(shared_bytes=coop.QW_SMEM_BYTES),
        prefer=GPU_TYPES,
        workgroups=coop.qw_smem_workgroups,
        applies=coop.qw_smem_applies,
        local_size=(64, 1, 1),
        doc="prefill GEMM: x and decoded weights staged in shared memory, 4x4 register tiles",
    )
    for base in ("linear_q4gsw", "linear_q8csw")
)
"""Preferred on GPU device types only: on lavapipe 22.3 every shared-memory load in a
loop is a per-lane scalar loop (10-17x the base's CPU time at M = 64)."""

_DQ8CA_F16 = KernelVariant(
    name="coop_gemv_f16",
    base="linear_dq8ca_q4gsw",
    glsl="linear_dq8ca_coop_f16.glsl",
    needs=replace(_DQ8CA_COOP_NEEDS, float16=True),
    prefer=GPU_TYPES,
    workgroups=coop.dq8ca_coop_workgroups,
    applies=coop.dq8ca_f16_applies,
    local_size=(64, 1, 1),
    doc="coop_gemv with the int4 x int8 products in f16 (exact: |p| <= 2040), f32 sums",
)

_DQ8CA_COOP = tuple(
    KernelVariant(
        name="coop_gemv",
        base=base,
        glsl="linear_dq8ca_coop.glsl",
        needs=_DQ8CA_COOP_NEEDS,
        prefer=GPU_TYPES,
        workgroups=coop.dq8ca_coop_workgroups,
        applies=coop.dq8ca_coop_applies,
        local_size=(64, 1, 1),
        doc="decode GEMV: a subgroup per 8-32 rows, K split over its lanes, chunk sums "
        "folded in the base's order through shared memory (exact)",
    )
    for base in ("linear_dq8ca_q4gsw", "linear_dq8ca_q8csw")
)

VARIANTS = (*_QW_COOP, *_QW_SMEM, _DQ8CA_F16, *_DQ8CA_COOP)
"""Every variant, in the order `choose` tries them (a kernel's f16 variant before its
int32 one: where both apply and the device has shaderFloat16, the f16 one).

linear_dq8ca's two keep the base's bits (the kernel is declared exact). Measured on
lavapipe (benchmarks/variants.py --schemes 8da4w, 2-core AMD EPYC, load ~10-12, interleaved
medians): decode of the 336M decoder 3.45x the base's time (coop_gemv) and 2.49x
(coop_gemv_f16); dim 256 (--quick) 1.95x / 1.93x. Preferred on GPU device types only
(not measured on a GPU: none was available)."""
