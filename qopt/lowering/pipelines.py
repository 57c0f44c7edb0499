"""Named pipelines: everything from the import level down to one target.

xDSL has no pipeline registry, so each pipeline is a ModulePass whose `apply`
runs its sub-passes in order (STYLE.md §1.3). Options are forwarded.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass


@dataclass(frozen=True)
class QoptCoremlPipeline(ModulePass):
    """`fuse-quant`, `fold-constants`, then `convert-to-coreml`."""

    name = "qopt-coreml"

    target: str = "iOS18"
    """Minimum deployment target (iOS16, iOS17 or iOS18)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from qopt.lowering.convert_to_coreml import ConvertToCoremlPass
        from qopt.lowering.fold_constants import FoldConstantsPass
        from qopt.lowering.fuse_quant import FuseQuantPass

        FuseQuantPass().apply(ctx, op)
        FoldConstantsPass().apply(ctx, op)
        op.verify()
        ConvertToCoremlPass(target=self.target).apply(ctx, op)


@dataclass(frozen=True)
class QoptVulkanPipeline(ModulePass):
    """`fuse-quant`, `fold-constants`, then `convert-to-vkc`."""

    name = "qopt-vulkan"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from qopt.lowering.convert_to_vkc import ConvertToVkcPass
        from qopt.lowering.fold_constants import FoldConstantsPass
        from qopt.lowering.fuse_quant import FuseQuantPass

        FuseQuantPass().apply(ctx, op)
        FoldConstantsPass().apply(ctx, op)
        op.verify()
        ConvertToVkcPass().apply(ctx, op)
