"""Named pipelines: everything from the import level down to one target.

xDSL has no pipeline registry, so each pipeline is a ModulePass (docs/style.md):
`passes()` lists its registered sub-passes, options forwarded, and `apply` runs
them in order, verifying the module after each. These classes are the one
definition of each target's pass order: `qopt-opt -p qopt-coreml` and `qopt.compile`
(`qopt.driver.compile_coreml` / `compile_vulkan`) run them, then hand the lowered
module to the target.

    qopt-coreml{target=iOS18 compute-precision=fp16 states=state
                dynamic-activations=quantized output-names=...}
        [name-outputs{names=...} when output-names are given,]
        fuse-quant, fold-constants, fuse-quant-fixpoint, record-source-hash,
        [externalize-states when states=io,] expand-dynamic-windows,
        check-mid-level{target=coreml}, compose{target=coreml},
        convert-to-coreml{target=... prepare=false},
        coreml-canonicalize[, coreml-fp16 when compute-precision=fp16]

    qopt-vulkan{fallback=false fuse-elementwise=true fuse-norms=true merge-siblings=true
                fuse-row-quant=true fold-copies=true}
        fuse-quant, fold-constants, fuse-quant-fixpoint, expand-dynamic-windows,
        check-mid-level{target=vulkan}, compose{target=vulkan},
        fold-constants{target=vulkan},
        convert-to-vkc{prepare=false schedule=false fallback=...},
        [vkc-fuse-elementwise,] [vkc-fuse-norms,] [vkc-merge-siblings,]
        [vkc-fuse-row-quant,] [vkc-fold-copies,] vkc-plan-buffers, vkc-insert-barriers

A conversion only converts: what it needs done first (the preparation its
`preparation()` lists) and after it (buffer planning, barriers) are passes of their
own in the list, each visible to `--print-ir-after`, `--time-passes` and
`--list-passes`.

`qopt-opt` runs a pipeline as its sub-passes (`sub_passes`), so that
`--print-between-passes`, `--print-ir-after` and `--time-passes` show each one; under
a compile report (qopt.report) each sub-pass is a phase nested under the pipeline.

Every option of `qopt.compile` has a pipeline option of the same name
(`minimum-deployment-target` is `target` too); the `.pt2` frontend takes
`trust_pickle` and `dynamic_sizes` (`-f 'pt2{dynamic_sizes=1,8}'`), qopt-opt
`--trust-pickle`, `--limits` and `-v` (`verbose`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from qopt.errors import QoptError
from qopt.lowering import PASSES
from qopt.lowering.fold_constants import FoldConstantsPass
from qopt.lowering.fuse_fixpoint import FuseQuantFixpointPass
from qopt.lowering.fuse_quant import FuseQuantPass
from qopt.lowering.name_outputs import NameOutputsPass
from qopt.registry import resolve
from qopt.report import active_report
from qopt.resources import release_unreferenced

COMPUTE_PRECISIONS = ("fp16", "fp32")
"""`compute-precision` of qopt-coreml: fp16 (default, as `ct.convert`) or fp32 (exact
checks against torch)."""


def run_passes(
    passes: Sequence[ModulePass], ctx: Context, module: ModuleOp, name: str | None = None
) -> None:
    """Apply `passes` in order, verifying `module` after each and dropping the weight
    blobs it no longer names (`release_unreferenced`); each pass is a phase of the
    active compile report (qopt.report), nested under `name` (the pipeline's)."""
    report = active_report()
    if report is None:
        for sub_pass in passes:
            sub_pass.apply(ctx, module)
            module.verify()
            release_unreferenced(module)
        return
    with report.phase(name) if name is not None else contextlib.nullcontext():
        for sub_pass in passes:
            with report.phase(sub_pass.name):
                sub_pass.apply(ctx, module)
                module.verify()
                release_unreferenced(module)
    report.record_target_ops(module)


def target_pass(name: str) -> Any:
    """The class of the registered pass `name` (PASSES). A pipeline names its target's
    passes so: building one target's pipeline imports that target's passes and
    dialect, never the other's (the passes both run are imported above)."""
    return resolve(PASSES[name])


def sub_passes(module_pass: ModulePass) -> list[ModulePass] | None:
    """The registered passes a pipeline runs, in order (None for a plain pass):
    `qopt-opt` runs a pipeline as them, so `--print-between-passes`,
    `--print-ir-after` and `--time-passes` see each one."""
    if isinstance(module_pass, QoptCoremlPipeline | QoptVulkanPipeline):
        return module_pass.passes()
    return None


@dataclass(frozen=True)
class QoptCoremlPipeline(ModulePass):
    """`fuse-quant`, `fold-constants`, `fuse-quant-fixpoint` (the two again until
    neither changes the module), convert-to-coreml's preparation (`record-source-hash`,
    `externalize-states` for `states=io`, `expand-dynamic-windows`, `check-mid-level`,
    `compose`), `convert-to-coreml{prepare=false}`, `coreml-canonicalize`, then
    `coreml-fp16` for fp16 compute."""

    name = "qopt-coreml"

    target: str = "iOS18"
    """Minimum deployment target (iOS16, iOS17 or iOS18)."""

    compute_precision: str = "fp16"
    """fp16 (default, as coremltools' `ct.convert`) or fp32 (`compute-precision` on the
    command line)."""
    states: str = "state"
    """Program state as Core ML states (`state`, iOS18) or extra inputs and outputs
    (`io`), as convert-to-coreml's option."""

    dynamic_activations: str = "quantized"
    """quantized (torch's dynamic activation quantizers, in MIL float ops) or float
    (`dynamic-activations` on the command line)."""

    minimum_deployment_target: str | None = None
    """`qopt.compile`'s name for `target` (either may be given; both must agree)."""

    output_names: tuple[str, ...] = ()
    """Names of the outputs of a single-method program (`name-outputs`; default: the
    exported program's, recorded at import)."""

    @property
    def deployment_target(self) -> str:
        given = self.minimum_deployment_target
        if given is not None and given != self.target and self.target != "iOS18":
            raise QoptError(
                f"qopt-coreml: target={self.target} and minimum-deployment-target={given} "
                "disagree: give one of them"
            )
        return self.target if given is None else given

    def passes(self) -> list[ModulePass]:
        if self.compute_precision not in COMPUTE_PRECISIONS:
            raise QoptError(
                f"qopt-coreml: compute_precision must be 'fp32' or 'fp16', got "
                f"'{self.compute_precision}'"
            )
        passes: list[ModulePass] = [NameOutputsPass(self.output_names)] if self.output_names else []
        convert = target_pass("convert-to-coreml")(
            target=self.deployment_target,
            states=self.states,
            dynamic_activations=self.dynamic_activations,
            prepare=False,
        )
        passes += [
            FuseQuantPass(),
            FoldConstantsPass(),
            FuseQuantFixpointPass(),
            *convert.preparation(),
            convert,
            target_pass("coreml-canonicalize")(),
        ]
        if self.compute_precision == "fp16":
            passes.append(target_pass("coreml-fp16")())
        return passes

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_passes(self.passes(), ctx, op, self.name)


@dataclass(frozen=True)
class QoptVulkanPipeline(ModulePass):
    """`fuse-quant`, `fold-constants`, `fuse-quant-fixpoint` (the two again until
    neither changes the module), convert-to-vkc's preparation
    (`expand-dynamic-windows`, `check-mid-level`, `compose`,
    `fold-constants{target=vulkan}`),
    `convert-to-vkc{prepare=false schedule=false}`,
    `vkc-fuse-elementwise` (unless `fuse-elementwise=false`), `vkc-fuse-norms` (unless
    `fuse-norms=false`), `vkc-merge-siblings` (unless `merge-siblings=false`),
    `vkc-fuse-row-quant` (unless `fuse-row-quant=false`), `vkc-fold-copies` (unless
    `fold-copies=false`), then `vkc-plan-buffers` and `vkc-insert-barriers`."""

    name = "qopt-vulkan"

    fallback: bool = False
    """Run ops without a Vulkan kernel on the host (convert-to-vkc's option of the same
    name; `qopt.compile(..., fallback=True)`, `qopt-opt --host-fallback`)."""
    fuse_elementwise: bool = True
    """Run vkc-fuse-elementwise (`fuse-elementwise=false` on the command line: one
    dispatch per elementwise op, as convert-to-vkc lowers them)."""
    fuse_norms: bool = True
    """Run vkc-fuse-norms (`fuse-norms=false`: an RMSNorm stays a reduce_rows and an
    elementwise dispatch, a residual add before it its own dispatch)."""
    merge_siblings: bool = True
    """Run vkc-merge-siblings (`merge-siblings=false`: one dispatch per linear)."""
    fuse_row_quant: bool = True
    """Run vkc-fuse-row-quant (`fuse-row-quant=false`: an 8da4w linear's per-token
    quantization stays a dispatch of its own)."""
    fold_copies: bool = True
    """Run vkc-fold-copies (`fold-copies=false`: every copy_strided stays a dispatch)."""

    def passes(self) -> list[ModulePass]:
        convert = target_pass("convert-to-vkc")
        optional = (
            (self.fuse_elementwise, "vkc-fuse-elementwise"),
            (self.fuse_norms, "vkc-fuse-norms"),
            (self.merge_siblings, "vkc-merge-siblings"),
            (self.fuse_row_quant, "vkc-fuse-row-quant"),
            (self.fold_copies, "vkc-fold-copies"),
        )
        fuse: list[ModulePass] = [target_pass(name)() for wanted, name in optional if wanted]
        return [
            FuseQuantPass(),
            FoldConstantsPass(),
            FuseQuantFixpointPass(),
            *convert.preparation(),
            convert(schedule=False, fallback=self.fallback, prepare=False),
            *fuse,
            target_pass("vkc-plan-buffers")(),
            target_pass("vkc-insert-barriers")(),
        ]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        run_passes(self.passes(), ctx, op, self.name)


__all__ = [
    "COMPUTE_PRECISIONS",
    "QoptCoremlPipeline",
    "QoptVulkanPipeline",
    "run_passes",
    "sub_passes",
]
