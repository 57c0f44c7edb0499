"""What fuse-quant did and did not fuse, and why."""

from __future__ import annotations

import collections
import sys
from dataclasses import dataclass, field
from typing import TextIO

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from qopt.dialects import qfused, quant
from qopt.errors import where
from qopt.lowering.fuse_quant.match import Reject

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
    replaced: dict[SSAValue, SSAValue] = field(default_factory=dict)
    """New fused result -> the value of the unfused graph it stands for (for
    op-by-op translation validation)."""

    def record(self, new: SSAValue, old: SSAValue) -> None:
        self.replaced[new] = self.replaced.pop(old, old)

    def reject(self, reject: Reject, anchor: Operation) -> None:
        op = reject.op if reject.op is not None else anchor
        self.reasons.setdefault(op, f"{reject.reason} (for {where(anchor)})")

    def unfused(self, module: ModuleOp) -> list[tuple[Operation, str]]:
        """Every quant op still in the module with the recorded (or inferred) reason."""
        out: list[tuple[Operation, str]] = []
        for op in module.walk():
            if not isinstance(op, QUANT_OPS):
                continue
            reason = self.reasons.get(op)
            if reason is None:
                users = sorted({use.operation.name for r in op.results for use in r.uses})
                reason = f"no fusable pattern around it (used by {', '.join(users) or 'nothing'})"
            out.append((op, reason))
        return out

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
