"""The Vulkan target: GLSL kernels compiled to SPIR-V, the vkc program, its
bundle file and the runtime that runs it on a Vulkan 1.2 device."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from qopt.backends.vulkan.artifact import VulkanArtifact


def compile_vulkan(
    module: ModuleOp,
    device: str | int | None = None,
    validation: bool | None = None,
    fallback: bool = False,
) -> VulkanArtifact:
    """Run `qopt-vulkan` on `module` in place (import level, or already fused:
    fuse-quant leaves qfused ops as they are) and return the callable artifact
    (`.module`, `.save(path)`, `artifact(*inputs)`, `.close()`), its kernels
    compiled to SPIR-V. The device opens on the first call (`device`: index or
    name substring; default `$QOPT_VULKAN_DEVICE` or the first compute-capable one).
    `fallback`: ops without a Vulkan kernel run on the host (`artifact.fallback_ops`)
    instead of being an error."""
    from qopt.backends.vulkan.artifact import compile_artifact
    from qopt.context import make_context
    from qopt.lowering.pipelines import QoptVulkanPipeline

    QoptVulkanPipeline(fallback=fallback).apply(make_context(), module)
    return compile_artifact(module, device, validation)


def load_vulkan(path: Any, device: str | int | None = None) -> VulkanArtifact:
    """A `.qvk` bundle (untrusted: checked whole on load) as an artifact: callable
    (`artifact(*inputs, method=None)`, one call on a fresh state), `.session()` for
    calls that keep the program's state on the device, `.methods`, `.state_names`."""
    from qopt.backends.vulkan.artifact import VulkanArtifact
    from qopt.errors import QoptError

    if not isinstance(path, str | os.PathLike):
        raise QoptError(f"a Vulkan bundle is read from a path, got {type(path).__name__}")
    return VulkanArtifact.load(path, device)


load_vulkan_artifact = load_vulkan
"""What `qopt.load(path)` calls for a `.qvk` file."""


__all__ = ["compile_vulkan", "load_vulkan", "load_vulkan_artifact"]
