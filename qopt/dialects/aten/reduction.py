"""aten ops: reduction family (filled in by its owner)."""

from __future__ import annotations

OPS: list[type] = []
