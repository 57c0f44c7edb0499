"""What fuse-quant did and did not fuse, and why."""

from __future__ import annotations

import collections
import sys
from dataclasses import dataclass, field
from typing import TextIO

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from qopt.dialects import qfused, quant
from qopt.dialects.weights import weight_summary
from qopt.errors import where
from qopt.lowering.fuse_quant.match import Reject
from qopt.report import active_report

QUANT_OPS = (
    quant.QuantizeOp,
    quant.DequantizeOp,
    quant.DequantizeCodebookOp,
    quant.ChooseQParamsOp,
)


@dataclass
class FusionLog:
    """Reasons recorded by the patterns, keyed by the quant op left unfused."""

    reasons: dict[Operation, str] = field(default_factory=dict)
    """Why the op was not fused (the first pattern's reason)."""
    anchors: dict[Operation, Operation] = field(default_factory=dict)
    """The op whose pattern gave the reason (the linear, conv ... it belongs to)."""
    replaced: dict[SSAValue, SSAValue] = field(default_factory=dict)
    """New fused result -> the value of the unfused graph it stands for (for
    op-by-op translation validation)."""

    def record(self, new: SSAValue, old: SSAValue) -> None:
        self.replaced[new] = self.replaced.pop(old, old)

    def reject(self, reject: Reject, anchor: Operation) -> None:
        op = reject.op if reject.op is not None else anchor
        if op not in self.reasons:
            self.reasons[op] = reject.reason
            self.anchors[op] = anchor

    def unfused_by_reason(self, module: ModuleOp) -> dict[str, list[tuple[Operation, str]]]:
        """Every quant op still in the module, grouped by the recorded (or inferred)
        reason, with what it was for (`for 'aten.linear' at ...`, or its users)."""
        groups: dict[str, list[tuple[Operation, str]]] = {}
        for op in module.walk():
            if not isinstance(op, QUANT_OPS):
                continue
            reason = self.reasons.get(op)
            if reason is not None:
                detail = f"for {where(self.anchors[op])}"
            else:
                reason = "no fusable pattern around it"
                users = sorted({use.operation.name for r in op.results for use in r.uses})
                detail = f"used by {', '.join(users) or 'nothing'}"
            groups.setdefault(reason, []).append((op, detail))
        return groups

    def unfused(self, module: ModuleOp) -> list[tuple[Operation, str]]:
        """Every quant op still in the module with its reason (and detail), in order."""
        lines = [
            (op, f"{reason} ({detail})")
            for reason, ops in self.unfused_by_reason(module).items()
            for op, detail in ops
        ]
        order = {op: i for i, op in enumerate(module.walk())}
        return sorted(lines, key=lambda line: order[line[0]])

    def print_report(
        self,
        module: ModuleOp,
        quant_before: int,
        kernels_before: collections.Counter[str],
        stream: TextIO = sys.stderr,
    ) -> None:
        """Totals (fused ops by kernel name, quant ops left of those there were), then
        the quant ops left, grouped by reason (the largest group first)."""
        fused = kernel_counts(module) - kernels_before
        groups = self.unfused_by_reason(module)
        left = sum(len(ops) for ops in groups.values())
        kernels = ", ".join(f"{name} x{n}" for name, n in sorted(fused.items()))
        print(
            f"fuse-quant: fused {fused.total()} op(s)"
            + (f" ({kernels})" if kernels else "")
            + f"; {left} of {quant_before} quant op(s) left unfused",
            file=stream,
        )
        for reason, ops in sorted(groups.items(), key=lambda group: -len(group[1])):
            print(f"fuse-quant: {len(ops)} not fused: {reason}", file=stream)
            for op, detail in ops:
                print(f"fuse-quant:   {where(op)} ({detail})", file=stream)

    def report_to(
        self,
        module: ModuleOp,
        quant_before: int,
        kernels_before: collections.Counter[str],
        rerun: bool = False,
    ) -> None:
        """Record what this run fused into the active compile report (if any): fused ops
        by kernel name of the patterns found (the fused ones and each op a pattern
        refused), the quant ops left grouped by reason. A `rerun` (fuse-quant again
        after fold-constants) adds only the ops it fused: its quant ops and refused
        patterns were counted by the first run."""
        report = active_report()
        if report is None:
            return
        fused = kernel_counts(module) - kernels_before
        groups = self.unfused_by_reason(module)
        refused = {
            self.anchors[op] for ops in groups.values() for op, _ in ops if op in self.anchors
        }
        report.record_fusion(
            fused,
            fused.total() + (0 if rerun else len(refused)),
            0 if rerun else quant_before,
            {
                reason: [f"{where(op)} ({detail})" for op, detail in ops]
                for reason, ops in groups.items()
            },
        )
        report.record_weights(weight_summary(module))

    def print_unfused(self, module: ModuleOp, stream: TextIO = sys.stderr) -> None:
        for op, reason in self.unfused(module):
            print(f"fuse-quant: {where(op)} not fused: {reason}", file=stream)


def kernel_counts(module: ModuleOp) -> collections.Counter[str]:
    """Fused ops in `module` by kernel name."""
    return collections.Counter(
        op.kernel.data for op in module.walk() if isinstance(op, qfused.QFusedOp)
    )


def quant_op_count(module: ModuleOp) -> int:
    return sum(isinstance(op, QUANT_OPS) for op in module.walk())
