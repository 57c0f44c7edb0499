"""Named pipelines: everything from the import level down to one target.

xDSL has no pipeline registry, so each pipeline is a ModulePass (STYLE.md §1.3):
`passes()` lists its registered sub-passes, options forwarded, and `apply` runs
them in order, verifying the module after each. These classes are the one
definition of each target's pass order: `qopt-opt -p qopt-coreml`, `qopt.compile`
and `qopt.backends.coreml.compile_coreml` all run them.

    qopt-coreml{target=iOS18 compute-precision=fp32}
        fuse-quant, fold-constants, convert-to-coreml{target=...}
        [, coreml-fp16 when compute-precision=fp16]
    qopt-vulkan{fallback=false fuse-elementwise=true}
        fuse-quant, fold-constants, convert-to-vkc{schedule=false fallback=...},
        [vkc-fuse-elementwise,] vkc-plan-buffers, vkc-insert-barriers
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from qopt.errors import QoptError

COMPUTE_PRECISIONS = ("fp32", "fp16")
"""`compute-precision` of qopt-coreml: fp32 (default, exact checks) or fp16."""


def run_passes(passes: Sequence[ModulePass], ctx: Context, module: ModuleOp) -> None:
    """Apply `passes` in order, verifying `module` after each."""
    for sub_pass in passes:
        sub_pass.apply(ctx, module)
        module.verify()


@dataclass(frozen=True)
class QoptCoremlPipeline(ModulePass):
    """`fuse-quant`, `fold-constants`, `convert-to-coreml`, then `coreml-fp16` for
    fp16 compute."""

    name = "qopt-coreml"

    target: str = "iOS18"
    """Minimum deployment target (iOS16, iOS17 or iOS18)."""

    compute_precision: str = "fp32"
    """fp32 or fp16 (`compute-precision` on the command line)."""
    states: str = "state"
    """Program state as Core ML states (`state`, iOS18) or extra inputs and outputs
    (`io`), as convert-to-coreml's option."""

    dynamic_activations: str = "quantized"
    """quantized (torch's dynamic activation quantizers, in MIL float ops) or float
    (`dynamic-activations` on the command line)."""

    def passes(self) -> list[ModulePass]:
        from qopt.lowering.convert_to_coreml import ConvertToCoremlPass
        from qopt.lowering.coreml_fp16 import CoremlFp16Pass
        from qopt.lowering.fold_constants import FoldConstantsPass
        from qopt.lowering.fuse_quant import FuseQuantPass

        if self.compute_precision not in COMPUTE_PRECISIONS:
            raise QoptError(
                f"qopt-coreml: compute_precision must be 'fp32' or 'fp16', got "
                f"'{self.compute_precision}'"
            )
        passes: list[ModulePass] = [
            FuseQuantPass(),
            FoldConstantsPass(),
            ConvertToCoremlPass(
                target=self.target,
                states=self.states,
                dynamic_activations=self.dynamic_activations,
            ),
        ]
        if self.compute_precision == "fp16":
            passes.append(CoremlFp16Pass())
        return passes

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_passes(self.passes(), ctx, op)


@dataclass(frozen=True)
class QoptVulkanPipeline(ModulePass):
    """`fuse-quant`, `fold-constants`, `convert-to-vkc{schedule=false}`,
    `vkc-fuse-elementwise` (unless `fuse-elementwise=false`), then `vkc-plan-buffers`
    and `vkc-insert-barriers`."""

    name = "qopt-vulkan"

    fallback: bool = False
    """Run ops without a Vulkan kernel on the host (convert-to-vkc's option of the same
    name; `qopt.compile(..., fallback=True)`, `qopt-opt --host-fallback`)."""
    fuse_elementwise: bool = True
    """Run vkc-fuse-elementwise (`fuse-elementwise=false` on the command line: one
    dispatch per elementwise op, as convert-to-vkc lowers them)."""

    def passes(self) -> list[ModulePass]:
        from qopt.lowering.convert_to_vkc import ConvertToVkcPass
        from qopt.lowering.fold_constants import FoldConstantsPass
        from qopt.lowering.fuse_quant import FuseQuantPass
        from qopt.lowering.vkc_fuse_elementwise import VkcFuseElementwisePass
        from qopt.lowering.vkc_insert_barriers import VkcInsertBarriersPass
        from qopt.lowering.vkc_plan_buffers import VkcPlanBuffersPass

        fuse: list[ModulePass] = [VkcFuseElementwisePass()] if self.fuse_elementwise else []
        return [
            FuseQuantPass(),
            FoldConstantsPass(),
            ConvertToVkcPass(schedule=False, fallback=self.fallback),
            *fuse,
            VkcPlanBuffersPass(),
            VkcInsertBarriersPass(),
        ]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_passes(self.passes(), ctx, op)


__all__ = ["COMPUTE_PRECISIONS", "QoptCoremlPipeline", "QoptVulkanPipeline", "run_passes"]
