"""The numpy references of qopt's Vulkan kernels (their semantics), one module per
kernel family, and `kernels()`: the catalogue (qopt.kernels) with each kernel's
reference attached.

A reference computes exactly what its shader computes on the same packed buffers
(flat numpy arrays of 4-byte words by binding name; it writes the outputs in place):
the vkc interpreter runs it for every dispatch, so vkc IR can be checked without a
device, and the kernel tests compare the device against it. Integer-output kernels
are bit-exact with their reference (roundEven, the same f32 operation order, no FMA
contraction: the shaders use `precise`); float kernels match to float32 rounding
(different summation order, transcendental ulps).
"""

from __future__ import annotations

import dataclasses
import functools

from qopt.interpreters.kernels import (
    attention,
    elementwise,
    gather,
    linalg,
    qconv,
    qlinear,
    quant,
    rows,
)
from qopt.kernels import KernelSpec, catalogue
from qopt.kernels.spec import Reference

FAMILIES = (elementwise, rows, linalg, attention, gather, quant, qlinear, qconv)
"""The reference family modules, each with its `REFERENCES` by kernel name."""


def references() -> dict[str, Reference]:
    """Every kernel's reference by kernel name (a kernel named twice is an error)."""
    merged: dict[str, Reference] = {}
    for family in FAMILIES:
        for name, reference in family.REFERENCES.items():
            if name in merged:
                raise ValueError(f"two numpy references for kernel {name}")
            merged[name] = reference
    return merged


@functools.cache
def _attached() -> dict[str, KernelSpec]:
    specs = catalogue()
    refs = references()
    if missing := sorted(set(specs) - set(refs)):
        raise ValueError(f"kernels without a numpy reference: {missing}")
    if unknown := sorted(set(refs) - set(specs)):
        raise ValueError(f"numpy references of unknown kernels: {unknown}")
    return {name: dataclasses.replace(spec, reference=refs[name]) for name, spec in specs.items()}


def kernels() -> dict[str, KernelSpec]:
    """Every kernel's spec with its numpy reference attached."""
    return dict(_attached())


def kernel(name: str) -> KernelSpec:
    """Kernel `name` with its reference (KeyError naming it if there is none)."""
    table = _attached()
    if name not in table:
        raise KeyError(f"no Vulkan kernel named {name}")
    return table[name]


__all__ = ["kernel", "kernels", "references"]
