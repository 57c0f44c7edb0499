"""The compile road of the Python API, in the command line's shape: the driver runs a
target's pipeline, then hands the lowered module to the target, which makes the
artifact and runs no pass.

    qopt-opt x.pt2 -p qopt-vulkan -t vkbundle:  pt2 frontend, QoptVulkanPipeline, VkBundleTarget
    qopt.compile(ep, "vulkan"):                 import_program, QoptVulkanPipeline, compile_artifact

`compile_coreml` and `compile_vulkan` take a module at the import level (or already
fused: fuse-quant leaves qfused ops as they are) and change it in place. The pipeline
classes (qopt/lowering/pipelines.py) are the one definition of each target's pass
order, the same objects `qopt-opt -p qopt-coreml` / `-p qopt-vulkan` runs; the targets
(`qopt.backends.coreml.build_artifact`, `qopt.backends.vulkan.artifact.compile_artifact`)
import nothing from `qopt.lowering` (tests/unit/test_layering.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from qopt.context import make_context
from qopt.lowering.pipelines import QoptCoremlPipeline, QoptVulkanPipeline

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from qopt.backends.coreml import CoremlArtifact
    from qopt.backends.vulkan.artifact import VulkanArtifact


def compile_coreml(
    module: ModuleOp,
    minimum_deployment_target: str = "iOS18",
    compute_precision: str = "fp16",
    output_names: Sequence[str] | None = None,
    states: str = "state",
    dynamic_activations: str = "quantized",
) -> CoremlArtifact:
    """Run `qopt-coreml{target=... compute-precision=...}` on `module` in place, then
    build its MIL Program (one per method) as a `CoremlArtifact`. `compute_precision`
    is "fp16" (default, as `ct.convert`) or "fp32" (exact checks against torch).
    Outputs are named `output_names` (a single-method program), else as the module
    records (`qopt.output_names`: the exported program's), else `output_<i>`.
    `states="io"` passes program state (KV caches) as extra inputs and outputs of
    every call instead of Core ML states (which need iOS18). `dynamic_activations`
    "quantized" (default) quantizes dynamic-activation schemes' activations as torch
    does, with MIL float ops; "float" leaves them float (faster, not torch's values)."""
    # The target is imported here, not at the top: a Vulkan compile loads no coreml dialect.
    from qopt.backends.coreml import build_artifact

    pipeline = QoptCoremlPipeline(
        output_names=tuple(output_names or ()),
        target=minimum_deployment_target,
        compute_precision=compute_precision,
        states=states,
        dynamic_activations=dynamic_activations,
    )
    pipeline.apply(make_context(), module)
    return build_artifact(module, minimum_deployment_target, compute_precision)


def compile_vulkan(
    module: ModuleOp,
    device: str | int | None = None,
    validation: bool | None = None,
    fallback: bool = False,
) -> VulkanArtifact:
    """Run `qopt-vulkan{fallback=...}` on `module` in place and return the callable
    artifact (`.module`, `.save(path)`, `artifact(*inputs)`, `.close()`), its kernels
    compiled to SPIR-V. The device opens on the first call (`device`: index or name
    substring; default `$QOPT_VULKAN_DEVICE` or the first compute-capable one).
    `fallback`: ops without a Vulkan kernel run on the host (`artifact.fallback_ops`)
    instead of being an error."""
    # The target is imported here, not at the top: a CoreML compile loads no runtime.
    from qopt.backends.vulkan.artifact import compile_artifact

    QoptVulkanPipeline(fallback=fallback).apply(make_context(), module)
    return compile_artifact(module, device, validation)


__all__ = ["compile_coreml", "compile_vulkan"]
