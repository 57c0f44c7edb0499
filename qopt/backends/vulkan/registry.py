"""The kernel registry: the contract between qopt's Vulkan kernels and the rest.

Each GLSL 450 compute shader in `kernels/` is described by one `KernelSpec`:
its storage-buffer bindings (in binding order), its push-constant block (in
declaration order, 4-byte scalars), its specialization constants (variants of
one shader: op codes, bit widths, group sizes, flags, tile sizes), its local
size, how many workgroups a dispatch needs, and a numpy reference that computes
exactly what the shader computes on the same packed buffers. The reference is
what the vkc interpreter runs, so vkc IR can be checked without a device, and
what the kernel tests compare the device against.

Buffer ABI (every binding is a std430 storage buffer of 4-byte words):
- float tensors: float32, row-major;
- integer and boolean activation tensors (indices, masks, quantized
  activations): int32 per element, row-major (int64 indices are narrowed to
  int32 at compile time; booleans are 0/1);
- constant weight buffers: packed by `qopt.backends.vulkan.packing` into the
  layout the kernel reads (int4 eight per uint32 word, int8 four per word, LUT
  codes at their bit width, scales/codebooks float32, zero points int32).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

PushValues = Mapping[str, int | float]
SpecValues = Mapping[str, int]


@dataclass(frozen=True)
class Binding:
    name: str
    dtype: str  # "f32" | "i32" | "u32" (raw 32-bit words)
    writes: bool = False
    packed: str | None = None
    """For weight bindings: the layout prefix its constant must carry (`q` for
    q4/q8 words, `lut` for packed codebook indices); the vkc verifier rejects any
    other buffer there."""


@dataclass(frozen=True)
class KernelSpec:
    name: str
    """Kernel name, e.g. `linear_q4gsw` (ExecuTorch nomenclature where one exists)."""
    glsl: str
    """File name under qopt/backends/vulkan/kernels/."""
    bindings: tuple[Binding, ...]
    push: tuple[tuple[str, str], ...]
    """Push-constant block: (name, "i32" | "u32" | "f32") in declaration order."""
    spec: tuple[tuple[str, int], ...] = ()
    """Specialization constants: (name, default) in constant_id order 0, 1, 2, ...
    (constant_id 0..2 may be the local size x/y/z if `local_size_from_spec`)."""
    local_size: tuple[int, int, int] = (64, 1, 1)
    workgroups: Callable[[PushValues, SpecValues], tuple[int, int, int]] = field(
        default=lambda push, spec: (1, 1, 1)
    )
    reference: Callable[[dict[str, np.ndarray], PushValues, SpecValues], None] = field(
        default=lambda buffers, push, spec: None
    )
    """Writes the kernel's outputs into `buffers` (flat numpy arrays by binding name)."""
    exact: Callable[[SpecValues], bool] = field(default=lambda spec: False)
    """Whether the device computes what `reference` computes bit for bit (given the
    specialization values): integer arithmetic, or f32 adds/multiplies/divides/square
    roots (correctly rounded in Vulkan's float32 rules for these kernels' operands) in
    the reference's order, under `precise`. Kernels that accumulate floats in their own
    tiling order or call transcendental builtins (exp, tanh, ...) are not; the tests
    check both kinds dispatch by dispatch on the local device (qopt.backends.vulkan.bisect)."""

    def spec_values(self, given: SpecValues) -> dict[str, int]:
        """`given` over the specialization constants' defaults."""
        values = {name: default for name, default in self.spec}
        values.update(given)
        return values

    def run_reference(
        self, buffers: Sequence[np.ndarray], push: PushValues, spec: SpecValues
    ) -> None:
        """Run `reference` on `buffers` (in binding order), writing every written
        binding back into its array in place."""
        named = {b.name: array for b, array in zip(self.bindings, buffers, strict=True)}
        given = dict(named)
        self.reference(named, push, self.spec_values(spec))
        for binding in self.bindings:
            result, original = named[binding.name], given[binding.name]
            if binding.writes and result is not original:
                original[...] = np.asarray(result).reshape(-1).astype(original.dtype, copy=False)

    def push_bytes(self, values: PushValues) -> bytes:
        words = []
        for name, kind in self.push:
            value = values[name]
            words.append(
                np.asarray(
                    value, dtype={"i32": np.int32, "u32": np.uint32, "f32": np.float32}[kind]
                )
            )
        return b"".join(w.tobytes() for w in words)


_KERNELS: dict[str, KernelSpec] = {}


def register(spec: KernelSpec) -> KernelSpec:
    if spec.name in _KERNELS:
        raise ValueError(f"kernel {spec.name} registered twice")
    _KERNELS[spec.name] = spec
    return spec


def kernels() -> dict[str, KernelSpec]:
    """Every kernel (imports the spec modules on first use)."""
    from qopt.backends.vulkan import kernel_specs  # noqa: F401  (registers the specs)

    return dict(_KERNELS)


def kernel(name: str) -> KernelSpec:
    table = kernels()
    if name not in table:
        raise KeyError(f"no Vulkan kernel named {name}")
    return table[name]
