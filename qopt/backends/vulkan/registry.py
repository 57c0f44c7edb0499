"""The Vulkan kernels as the runtime and the tests see them: the catalogue
(qopt.kernels: each kernel's interface) with the numpy references attached
(qopt.interpreters.kernels). A thin re-export; the definitions live there."""

from __future__ import annotations

from qopt.interpreters.kernels import kernel, kernels
from qopt.kernels import (
    MAX_WORKGROUPS,
    STATUS,
    Binding,
    KernelSpec,
    PushValues,
    SpecValues,
    index_error_message,
    is_status_binding,
)

__all__ = [
    "MAX_WORKGROUPS",
    "STATUS",
    "Binding",
    "KernelSpec",
    "PushValues",
    "SpecValues",
    "index_error_message",
    "is_status_binding",
    "kernel",
    "kernels",
]
