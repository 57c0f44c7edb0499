"""qopt's passes and pipelines, registered lazily as xDSL does (`get_all_passes`)."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass

from qopt.registry import factories

#: Each pass and pipeline by its name: the class that implements it, as
#: "module:Class". Lazy loading is the point of xDSL's pass registry: `qopt-opt` imports
#: a pass's module (and the dialects and semantics it needs) only when it runs it.
PASSES: dict[str, str] = {
    "fuse-quant": "qopt.lowering.fuse_quant:FuseQuantPass",
    "fold-constants": "qopt.lowering.fold_constants:FoldConstantsPass",
    "fuse-quant-fixpoint": "qopt.lowering.fuse_fixpoint:FuseQuantFixpointPass",
    "convert-to-coreml": "qopt.lowering.convert_to_coreml:ConvertToCoremlPass",
    "coreml-canonicalize": "qopt.lowering.coreml_canonicalize:CoremlCanonicalizePass",
    "coreml-fp16": "qopt.lowering.coreml_fp16:CoremlFp16Pass",
    "convert-to-vkc": "qopt.lowering.convert_to_vkc:ConvertToVkcPass",
    "vkc-fuse-elementwise": "qopt.lowering.vkc_fuse_elementwise:VkcFuseElementwisePass",
    "vkc-fuse-norms": "qopt.lowering.vkc_fuse_norms:VkcFuseNormsPass",
    "vkc-fuse-row-quant": "qopt.lowering.vkc_fuse_row_quant:VkcFuseRowQuantPass",
    "vkc-fold-copies": "qopt.lowering.vkc_fold_copies:VkcFoldCopiesPass",
    "vkc-merge-siblings": "qopt.lowering.vkc_merge_siblings:VkcMergeSiblingsPass",
    "vkc-plan-buffers": "qopt.lowering.vkc_plan_buffers:VkcPlanBuffersPass",
    "vkc-insert-barriers": "qopt.lowering.vkc_insert_barriers:VkcInsertBarriersPass",
    "record-source-hash": "qopt.lowering.analyses:RecordSourceHashPass",
    "externalize-states": "qopt.lowering.external_state:ExternalizeStatesPass",
    "expand-dynamic-windows": "qopt.lowering.dynamic_windows:ExpandDynamicWindowsPass",
    "check-mid-level": "qopt.lowering.analyses:CheckMidLevelPass",
    "compose": "qopt.lowering.compose:ComposePass",
    "name-outputs": "qopt.lowering.name_outputs:NameOutputsPass",
    "qopt-coreml": "qopt.lowering.pipelines:QoptCoremlPipeline",
    "qopt-vulkan": "qopt.lowering.pipelines:QoptVulkanPipeline",
}


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """`{pass name: factory}`; each factory imports its pass module when called
    (`PASSES`, resolved by qopt/registry.py)."""
    return factories(PASSES)
