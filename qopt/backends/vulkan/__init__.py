"""The Vulkan target: GLSL kernels compiled to SPIR-V, the vkc program, its
bundle file and the runtime that runs it on a Vulkan 1.2 device."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from qopt.backends.vulkan.artifact import VulkanArtifact


def compile_vulkan(
    module: ModuleOp, device: str | int | None = None, validation: bool | None = None
) -> VulkanArtifact:
    """Run `qopt-vulkan` on `module` in place (import level, or already fused:
    fuse-quant leaves qfused ops as they are) and return the callable artifact
    (`.module`, `.save(path)`, `artifact(*inputs)`, `.close()`), its kernels
    compiled to SPIR-V. The device opens on the first call (`device`: index or
    name substring; default `$QOPT_VULKAN_DEVICE` or the first compute-capable one)."""
    from qopt.backends.vulkan.artifact import compile_artifact
    from qopt.context import make_context
    from qopt.lowering.pipelines import QoptVulkanPipeline

    QoptVulkanPipeline().apply(make_context(), module)
    return compile_artifact(module, device, validation)


def load_vulkan(path: Any, device: str | int | None = None) -> VulkanArtifact:
    """A `.qvk` bundle (checked on load) as a callable artifact."""
    from qopt.backends.vulkan.artifact import VulkanArtifact

    return VulkanArtifact.load(path, device)


__all__ = ["compile_vulkan", "load_vulkan"]
