"""Target backends: CoreML (`.mlpackage`) and Vulkan (SPIR-V kernels + runtime).

`format_bytes` and `format_method` write the sizes and method signatures of the
artifacts' `repr`, the same way for both targets."""

from __future__ import annotations

from collections.abc import Sequence


def format_bytes(n: int) -> str:
    """`n` bytes as `812 B`, `12.5 KiB`, `3.2 MiB`, `1.1 GiB`."""
    size = float(n)
    for unit in ("B", "KiB", "MiB"):
        if size < 1024:
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def format_tensor(name: str | None, dtype: str, shape: Sequence[int]) -> str:
    """`x: float32[4, 64]` (without a name: `float32[4, 64]`)."""
    text = f"{dtype}[{', '.join(str(d) for d in shape)}]"
    return text if name is None else f"{name}: {text}"


def format_method(name: str, inputs: Sequence[str], outputs: Sequence[str]) -> str:
    """`forward(x: float32[4, 64]) -> (y: float32[4, 32])`."""
    return f"{name}({', '.join(inputs)}) -> ({', '.join(outputs)})"


__all__ = ["format_bytes", "format_method", "format_tensor"]
