"""qopt's passes and pipelines, registered lazily as xDSL does (`get_all_passes`)."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """`{pass name: factory}`; each factory imports its pass module when called."""

    def get_fuse_quant() -> type[ModulePass]:
        from qopt.lowering.fuse_quant import FuseQuantPass

        return FuseQuantPass

    def get_fold_constants() -> type[ModulePass]:
        from qopt.lowering.fold_constants import FoldConstantsPass

        return FoldConstantsPass

    def get_fuse_quant_fixpoint() -> type[ModulePass]:
        from qopt.lowering.fuse_fixpoint import FuseQuantFixpointPass

        return FuseQuantFixpointPass

    def get_convert_to_coreml() -> type[ModulePass]:
        from qopt.lowering.convert_to_coreml import ConvertToCoremlPass

        return ConvertToCoremlPass

    def get_coreml_canonicalize() -> type[ModulePass]:
        from qopt.lowering.coreml_canonicalize import CoremlCanonicalizePass

        return CoremlCanonicalizePass

    def get_coreml_fp16() -> type[ModulePass]:
        from qopt.lowering.coreml_fp16 import CoremlFp16Pass

        return CoremlFp16Pass

    def get_convert_to_vkc() -> type[ModulePass]:
        from qopt.lowering.convert_to_vkc import ConvertToVkcPass

        return ConvertToVkcPass

    def get_vkc_fuse_elementwise() -> type[ModulePass]:
        from qopt.lowering.vkc_fuse_elementwise import VkcFuseElementwisePass

        return VkcFuseElementwisePass

    def get_vkc_fold_copies() -> type[ModulePass]:
        from qopt.lowering.vkc_fold_copies import VkcFoldCopiesPass

        return VkcFoldCopiesPass

    def get_vkc_fuse_norms() -> type[ModulePass]:
        from qopt.lowering.vkc_fuse_norms import VkcFuseNormsPass

        return VkcFuseNormsPass

    def get_vkc_fuse_row_quant() -> type[ModulePass]:
        from qopt.lowering.vkc_fuse_row_quant import VkcFuseRowQuantPass

        return VkcFuseRowQuantPass

    def get_vkc_merge_siblings() -> type[ModulePass]:
        from qopt.lowering.vkc_merge_siblings import VkcMergeSiblingsPass

        return VkcMergeSiblingsPass

    def get_vkc_plan_buffers() -> type[ModulePass]:
        from qopt.lowering.vkc_plan_buffers import VkcPlanBuffersPass

        return VkcPlanBuffersPass

    def get_vkc_insert_barriers() -> type[ModulePass]:
        from qopt.lowering.vkc_insert_barriers import VkcInsertBarriersPass

        return VkcInsertBarriersPass

    def get_expand_dynamic_windows() -> type[ModulePass]:
        from qopt.lowering.dynamic_windows import ExpandDynamicWindowsPass

        return ExpandDynamicWindowsPass

    def get_externalize_states() -> type[ModulePass]:
        from qopt.lowering.external_state import ExternalizeStatesPass

        return ExternalizeStatesPass

    def get_check_mid_level() -> type[ModulePass]:
        from qopt.lowering.analyses import CheckMidLevelPass

        return CheckMidLevelPass

    def get_record_source_hash() -> type[ModulePass]:
        from qopt.lowering.analyses import RecordSourceHashPass

        return RecordSourceHashPass

    def get_compose() -> type[ModulePass]:
        from qopt.lowering.compose import ComposePass

        return ComposePass

    def get_name_outputs() -> type[ModulePass]:
        from qopt.lowering.name_outputs import NameOutputsPass

        return NameOutputsPass

    def get_qopt_coreml() -> type[ModulePass]:
        from qopt.lowering.pipelines import QoptCoremlPipeline

        return QoptCoremlPipeline

    def get_qopt_vulkan() -> type[ModulePass]:
        from qopt.lowering.pipelines import QoptVulkanPipeline

        return QoptVulkanPipeline

    return {
        "fuse-quant": get_fuse_quant,
        "fold-constants": get_fold_constants,
        "fuse-quant-fixpoint": get_fuse_quant_fixpoint,
        "convert-to-coreml": get_convert_to_coreml,
        "coreml-canonicalize": get_coreml_canonicalize,
        "coreml-fp16": get_coreml_fp16,
        "convert-to-vkc": get_convert_to_vkc,
        "vkc-fuse-elementwise": get_vkc_fuse_elementwise,
        "vkc-fuse-norms": get_vkc_fuse_norms,
        "vkc-fuse-row-quant": get_vkc_fuse_row_quant,
        "vkc-fold-copies": get_vkc_fold_copies,
        "vkc-merge-siblings": get_vkc_merge_siblings,
        "vkc-plan-buffers": get_vkc_plan_buffers,
        "vkc-insert-barriers": get_vkc_insert_barriers,
        "record-source-hash": get_record_source_hash,
        "externalize-states": get_externalize_states,
        "expand-dynamic-windows": get_expand_dynamic_windows,
        "check-mid-level": get_check_mid_level,
        "compose": get_compose,
        "name-outputs": get_name_outputs,
        "qopt-coreml": get_qopt_coreml,
        "qopt-vulkan": get_qopt_vulkan,
    }
