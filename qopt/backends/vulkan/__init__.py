"""The Vulkan target: GLSL kernels compiled to SPIR-V, the vkc program, its
bundle file and the runtime that runs it on a Vulkan 1.2 device.

A target runs no pass: the driver (`qopt.driver.compile_vulkan`, what
`qopt.compile(ep, target="vulkan")` calls) runs `qopt-vulkan`
(qopt/lowering/pipelines.py) and hands the vkc module to
`artifact.compile_artifact`, as `qopt-opt -p qopt-vulkan -t vkbundle` hands it to
`bundle.VkBundleTarget`."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from qopt.errors import QoptError

if TYPE_CHECKING:
    from qopt.backends.vulkan.artifact import VulkanArtifact


def load_vulkan(path: Any, device: str | int | None = None) -> VulkanArtifact:
    """A `.qvk` bundle (untrusted: checked whole on load) as an artifact: callable
    (`artifact(*inputs, method=None)`, one call on a fresh state), `.session()` for
    calls that keep the program's state on the device, `.methods`, `.state_names`."""
    # Imported here: every `qopt.backends.vulkan.*` import runs this package first.
    from qopt.backends.vulkan.artifact import VulkanArtifact

    if not isinstance(path, str | os.PathLike):
        raise QoptError(f"a Vulkan bundle is read from a path, got {type(path).__name__}")
    return VulkanArtifact.load(path, device)


load_vulkan_artifact = load_vulkan
"""What `qopt.load(path)` calls for a `.qvk` file."""


__all__ = ["load_vulkan", "load_vulkan_artifact"]
