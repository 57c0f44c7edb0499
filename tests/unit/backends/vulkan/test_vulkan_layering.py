"""The Vulkan target's layering, checked on the import graph (module-level and
function-level imports alike, so no lazy import hides an upward edge):

- the kernel catalogue (qopt/kernels/) is IR core: numpy, qopt.errors and itself;
- the vkc dialect (qopt/dialects/vkc/) imports the catalogue directly and nothing from
  the interpreters, the lowering or the backends;
- the kernels' numpy references (qopt/interpreters/kernels/) and the vkc interpreter
  import no lowering and no backend;
- the lowering imports no backend but the GLSL source it hashes (spirv.kernel_source);
- the Vulkan backend's bundle, runtime, artifact and SPIR-V compiler import neither
  semantics nor passes (the registry re-export and the dispatch bisector attach the
  references, which is what they are for).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]


def imports(path: Path) -> set[str]:
    """Every `qopt...` module `path` imports, anywhere in the file."""
    found: set[str] = set()
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in found if name == "qopt" or name.startswith("qopt.")}


def files(*patterns: str) -> list[Path]:
    return sorted(p for pattern in patterns for p in ROOT.glob(pattern))


def within(name: str, *prefixes: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


LAYERS = [
    # (files, allowed qopt imports: a name passes if it is within one of these)
    (("qopt/kernels/**/*.py",), ("qopt.kernels", "qopt.errors")),
]
FORBIDDEN = [
    # (files, forbidden prefixes, exceptions)
    (("qopt/dialects/vkc/**/*.py",), ("qopt.interpreters", "qopt.lowering", "qopt.backends"), ()),
    (
        ("qopt/interpreters/kernels/**/*.py", "qopt/interpreters/vkc.py"),
        ("qopt.lowering", "qopt.backends", "qopt.context", "qopt.resources"),
        (),
    ),
    (
        ("qopt/lowering/convert_to_vkc/**/*.py", "qopt/lowering/vkc_*.py"),
        ("qopt.backends",),
        ("qopt.backends.vulkan.spirv",),
    ),
    (
        (
            "qopt/backends/vulkan/bundle.py",
            "qopt/backends/vulkan/runtime.py",
            "qopt/backends/vulkan/artifact.py",
            "qopt/backends/vulkan/spirv.py",
        ),
        ("qopt.interpreters", "qopt.lowering"),
        (),
    ),
]


@pytest.mark.parametrize(("patterns", "allowed"), LAYERS)
def test_catalogue_is_ir_core(patterns: tuple[str, ...], allowed: tuple[str, ...]) -> None:
    paths = files(*patterns)
    assert paths
    bad = {
        (str(p.relative_to(ROOT)), name)
        for p in paths
        for name in imports(p)
        if name != "qopt" and not within(name, *allowed)
    }
    assert not bad


@pytest.mark.parametrize(("patterns", "forbidden", "exceptions"), FORBIDDEN)
def test_no_upward_imports(
    patterns: tuple[str, ...], forbidden: tuple[str, ...], exceptions: tuple[str, ...]
) -> None:
    paths = files(*patterns)
    assert paths
    bad = {
        (str(p.relative_to(ROOT)), name)
        for p in paths
        for name in imports(p)
        if within(name, *forbidden) and not within(name, *exceptions)
    }
    assert not bad
