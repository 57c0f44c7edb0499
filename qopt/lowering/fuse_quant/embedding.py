"""fuse-quant patterns: the embedding family (filled in by its owner)."""

from __future__ import annotations

from xdsl.pattern_rewriter import RewritePattern

from qopt.lowering.fuse_quant.report import FusionLog


def patterns(log: FusionLog) -> list[RewritePattern]:
    return []
