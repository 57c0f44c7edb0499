"""The GLSL source of each Vulkan kernel, as qopt compiles it (catalogue data).

Each kernel's shader is a file under `glsl/` here; what is compiled (and hashed
into a `vkc.kernel`) is that file with the op-code names of `opcodes.py`
(`#define UNARY_RELU 1`, ...: `opcode_defines`) inserted after its `#version`
line, so the shaders compare spec constants against the names of the one table
the lowering and the references use, and each line `#include "<snippet>"` replaced
by the file `glsl/include/<snippet>` (`with_includes`: the op bodies unary.glsl,
binary.glsl and fused_elementwise.glsl share, written once). Compiling to SPIR-V is
the Vulkan backend's (qopt/backends/vulkan/spirv.py).
"""

from __future__ import annotations

import re
from pathlib import Path

from qopt.errors import QoptError
from qopt.kernels.opcodes import OPCODE_TABLES

KERNEL_DIR = Path(__file__).parent / "glsl"
INCLUDE_DIR = KERNEL_DIR / "include"
"""The GLSL snippets kernels `#include` (not kernels themselves: no `main`)."""

_INCLUDE = re.compile(r'^#include "([\w.]+)"[ \t]*$', re.MULTILINE)


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


def with_includes(source: str, name: str = "kernel") -> str:
    """`source` with each line `#include "<snippet>"` replaced by the text of
    `INCLUDE_DIR/<snippet>` (one level: a snippet includes nothing; QoptError for a
    snippet that does not exist or includes another)."""

    def expand(match: re.Match[str]) -> str:
        path = INCLUDE_DIR / match.group(1)
        if not path.is_file():
            raise QoptError(
                f"Vulkan kernel {name} includes {match.group(1)}, which is not in {INCLUDE_DIR}"
            )
        text = path.read_text()
        if _INCLUDE.search(text):
            raise QoptError(
                f"GLSL snippet {match.group(1)} includes another: snippets nest no includes"
            )
        return text.rstrip("\n")

    return _INCLUDE.sub(expand, source)


def kernel_source(glsl_name: str) -> str:
    """The GLSL qopt compiles for `glsl/<glsl_name>` (op-code names defined, snippets
    included)."""
    path = KERNEL_DIR / glsl_name
    if not path.is_file():
        raise QoptError(f"no Vulkan kernel source {glsl_name} in {KERNEL_DIR}")
    return with_opcodes(with_includes(path.read_text(), glsl_name), glsl_name)
