"""The GLSL source of each Vulkan kernel, as qopt compiles it (catalogue data).

Each kernel's shader is a file under `glsl/` here; what is compiled (and hashed
into a `vkc.kernel`) is that file with the op-code names of `opcodes.py`
(`#define UNARY_RELU 1`, ...: `opcode_defines`) inserted after its `#version`
line, so the shaders compare spec constants against the names of the one table
the lowering and the references use. Compiling to SPIR-V is the Vulkan backend's
(qopt/backends/vulkan/spirv.py).
"""

from __future__ import annotations

from pathlib import Path

from qopt.errors import QoptError
from qopt.kernels.opcodes import OPCODE_TABLES

KERNEL_DIR = Path(__file__).parent / "glsl"


def opcode_defines() -> str:
    """`#define <PREFIX>_<NAME> <code>` for every entry of the op-code tables."""
    lines = ["// generated from qopt/kernels/opcodes.py (qopt.kernels.source)"]
    for prefix, table in OPCODE_TABLES.items():
        lines.extend(f"#define {prefix}_{name.upper()} {code}" for name, code in table.items())
    return "\n".join(lines) + "\n"


def with_opcodes(source: str, name: str = "kernel") -> str:
    """`source` with `opcode_defines()` inserted after its first line, `#version`."""
    first, newline, rest = source.partition("\n")
    if not first.startswith("#version"):
        raise QoptError(f"Vulkan kernel {name} must start with its #version line")
    return first + newline + opcode_defines() + rest


def kernel_source(glsl_name: str) -> str:
    """The GLSL qopt compiles for `glsl/<glsl_name>` (op-code names defined)."""
    path = KERNEL_DIR / glsl_name
    if not path.is_file():
        raise QoptError(f"no Vulkan kernel source {glsl_name} in {KERNEL_DIR}")
    return with_opcodes(path.read_text(), glsl_name)
