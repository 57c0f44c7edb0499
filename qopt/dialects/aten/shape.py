"""aten ops: shape family (filled in by its owner)."""

from __future__ import annotations

OPS: list[type] = []
