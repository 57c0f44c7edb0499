"""qopt's layers point one way, checked on the import graph.

Every module belongs to one layer; it may import (at module level or inside a
function: no lazy import hides an edge) only from its own layer or below:

    core        errors, limits, logs, dtypes, inputs, resources, context, version,
                files, report (the compile report every stage fills), dialects (the
                IR), kernels (the Vulkan kernel catalogue as data)
    semantics   numerics, interpreters (incl. the kernels' numpy references)
    transforms  frontend, lowering
    targets     backends (CoreML emit/read, Vulkan compile/bundle/run)
    driver      the public API (qopt/__init__.py), tools, demos, examples, testing, zoo,
                conformance

and no import cycle exists between modules. Within a layer, two finer rules: the
kernel catalogue imports only itself and qopt.errors (it is data the dialect, the
references and the runtime share), and the Vulkan runtime modules (bundle loading,
runtime, artifact, SPIR-V) import no semantics and no passes, so a deployed
runtime carries no compiler.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "qopt"

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "core",
        (
            "qopt.errors",
            "qopt.arguments",
            "qopt.limits",
            "qopt.logs",
            "qopt.dtypes",
            "qopt.inputs",
            "qopt.resources",
            "qopt.context",
            "qopt.dialects",
            "qopt.kernels",
            "qopt.version",
            "qopt.files",
            "qopt.report",
        ),
    ),
    ("semantics", ("qopt.numerics", "qopt.interpreters")),
    ("transforms", ("qopt.frontend", "qopt.lowering")),
    ("targets", ("qopt.backends",)),
    (
        "driver",
        (
            "qopt",  # the package's own __init__: the public API
            "qopt.tools",
            "qopt.demo",
            "qopt.demo_coreml",
            "qopt.demo_llm",
            "qopt.demo_vulkan",
            "qopt.examples",
            "qopt.generation",
            "qopt.testing",
            "qopt.zoo",
            "qopt.conformance",
        ),
    ),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer(name: str) -> int:
    """The layer of module `name`: the longest prefix that names it."""
    best: tuple[int, int] | None = None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and (
                best is None or len(prefix) > best[1]
            ):
                best = (index, len(prefix))
    if best is None:
        raise AssertionError(f"{name} belongs to no layer: add it to LAYERS")
    return best[0]


def resolve(name: str) -> str | None:
    """The qopt module an import of `name` loads (`qopt.a.b.f` -> `qopt.a.b`)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, module) of every qopt module `path` imports, anywhere in the file."""
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            if name == "qopt" or name.startswith("qopt."):
                target = resolve(name)
                if target is not None:
                    yield node.lineno, target


EDGES = {
    name: {target for _, target in imports(path) if target != name}
    for name, path in MODULES.items()
}


def test_every_module_has_a_layer() -> None:
    for name in MODULES:
        layer(name)


def test_imports_point_down() -> None:
    upward = []
    for name, path in MODULES.items():
        for line, target in imports(path):
            if layer(target) > layer(name):
                upward.append(
                    f"{path.relative_to(ROOT)}:{line}: {name} ({LAYERS[layer(name)][0]}) "
                    f"imports {target} ({LAYERS[layer(target)][0]})"
                )
    assert not upward, "imports that point up a layer:\n" + "\n".join(upward)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles() -> None:
    """Between modules, and between packages (a package cycle through two modules that
    never import each other still couples the packages)."""
    assert cycles(EDGES) == []
    packages: dict[str, set[str]] = {}
    for name, targets in EDGES.items():
        here = ".".join(name.split(".")[:3])
        for target in targets:
            there = ".".join(target.split(".")[:3])
            if here != there and "qopt" not in (name, target):
                packages.setdefault(here, set()).add(there)
    assert cycles(packages) == []


def _within(name: str, *prefixes: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


@pytest.mark.parametrize(
    ("modules", "allowed", "forbidden"),
    [
        # The kernel catalogue: data, shared by the dialect, references and runtime.
        (("qopt.kernels",), ("qopt.kernels", "qopt.errors"), ()),
        # The Vulkan runtime carries no compiler.
        (
            (
                "qopt.backends.vulkan.bundle",
                "qopt.backends.vulkan.runtime",
                "qopt.backends.vulkan.artifact",
                "qopt.backends.vulkan.spirv",
            ),
            None,
            ("qopt.interpreters", "qopt.numerics", "qopt.lowering", "qopt.frontend"),
        ),
    ],
)
def test_finer_rules(
    modules: tuple[str, ...], allowed: tuple[str, ...] | None, forbidden: tuple[str, ...]
) -> None:
    bad = []
    for name in MODULES:
        if not _within(name, *modules):
            continue
        for target in EDGES[name]:
            if (allowed is not None and not _within(target, *allowed)) or _within(
                target, *forbidden
            ):
                bad.append(f"{name} imports {target}")
    assert not bad, "\n".join(bad)


def test_a_compile_imports_only_what_its_target_needs() -> None:
    """A fresh process compiling for one target imports neither xDSL's interpreter
    tables (`xdsl.interpreters` loads them all: ~0.4 s; folding needs no `func` table)
    nor the other target's dialect and semantics (a cold small compile paid both)."""
    import subprocess
    import sys

    source = ROOT / "tests" / "lit" / "tools" / "qopt-run.mlir"
    script = (
        "import os, sys\n"
        "from qopt.tools.qopt_opt import main\n"
        f"sys.argv = ['qopt-opt', {str(source)!r}, '-p', sys.argv[1], '-o', os.devnull]\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    for pipeline, own, unwanted in (
        ("qopt-vulkan", "vkc", "coreml"),
        ("qopt-coreml", "coreml", "vkc"),
    ):
        done = subprocess.run(
            [sys.executable, "-c", script, pipeline],
            capture_output=True, text=True, check=True, timeout=120,
        )  # fmt: skip
        modules = done.stdout.split()
        assert f"qopt.dialects.{own}" in modules, pipeline
        assert f"qopt.interpreters.{unwanted}" not in modules, pipeline
        assert f"qopt.dialects.{unwanted}" not in modules, pipeline
        assert not [m for m in modules if m.startswith("xdsl.interpreters")], pipeline
