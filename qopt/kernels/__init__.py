"""The Vulkan kernel catalogue: every kernel's interface as data (the IR-core layer).

One `KernelSpec` per kernel (qopt/kernels/spec.py): bindings, push constants,
specialization constants and their ranges, local size, workgroup counts and buffer
extents; the op-code tables of the multi-op kernels (opcodes.py) and the weight
layouts the kernels read (packing.py). One module per kernel family exports its
`SPECS`; `catalogue()` merges them (a kernel named twice, or a misplaced status
binding, is an error). The vkc dialect's verifier, the convert-to-vkc lowering, the
`.qvk` loader and the runtime read this table; the numpy references are attached by
the semantics layer (`qopt.interpreters.kernels.kernels()`). The GLSL sources are
under glsl/ (source.py makes what is compiled); their SPIR-V is compiled once, at
set-up, by build.py (`python -m qopt.kernels.build`) into spirv/ and read by
prebuilt.py; the runtime lives in qopt/backends/vulkan/.

This package imports numpy and qopt.errors only: nothing from the dialects,
interpreters, lowering or backends.
"""

from __future__ import annotations

import functools

from qopt.kernels import attention, elementwise, gather, linalg, qconv, qlinear, quant, rows
from qopt.kernels.spec import (
    MAX_WORKGROUPS,
    STATUS,
    Binding,
    KernelSpec,
    PushValues,
    SpecValues,
    check_status_binding,
    index_error_message,
    is_status_binding,
)

FAMILIES = (elementwise, rows, linalg, attention, gather, quant, qlinear, qconv)
"""The kernel family modules, each with its `SPECS`."""


@functools.cache
def _build() -> dict[str, KernelSpec]:
    table: dict[str, KernelSpec] = {}
    for family in FAMILIES:
        for spec in family.SPECS:
            if spec.name in table:
                raise ValueError(f"kernel {spec.name} is declared twice")
            check_status_binding(spec)
            table[spec.name] = spec
    return table


def catalogue() -> dict[str, KernelSpec]:
    """Every kernel's interface by name (a fresh dict over the shared specs)."""
    return dict(_build())


def kernel_spec(name: str) -> KernelSpec:
    """The interface of kernel `name` (KeyError naming it if there is none)."""
    table = _build()
    if name not in table:
        raise KeyError(f"no Vulkan kernel named {name}")
    return table[name]


__all__ = [
    "MAX_WORKGROUPS",
    "STATUS",
    "Binding",
    "KernelSpec",
    "PushValues",
    "SpecValues",
    "catalogue",
    "index_error_message",
    "is_status_binding",
    "kernel_spec",
]
