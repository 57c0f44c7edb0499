"""qopt's layers point one way, checked on the import graph.

Every module belongs to one layer; it may import (at module level or inside a
function: no lazy import hides an edge) only from its own layer or below:

    core        errors, limits, logs, dtypes, inputs, resources, context, version,
                files, report (the compile report every stage fills), variants (size
                variants by name), registry (lazy "module:Name" tables), dialects (the IR), kernels (the Vulkan kernel
                catalogue as data, its prebuilt SPIR-V and the command building it)
    semantics   numerics, interpreters (incl. the kernels' numpy references)
    transforms  frontend, lowering
    targets     backends (CoreML emit/read, Vulkan compile/bundle/run)
    driver      the public API (qopt/__init__.py), its compile road (driver: the pipeline,
                then the target) and options, tools, demos, examples, generation,
                testing, zoo, conformance

Every module is placed by name (its own or its package's; the root `qopt` places
only qopt/__init__.py), and no import cycle exists between modules. Within a layer,
two finer rules: the kernel catalogue imports only itself and qopt.errors (it is data
the dialect, the references and the runtime share), and the Vulkan runtime modules
(the `.qvk` format, its checks, runtime, artifact, SPIR-V) import no semantics and no
passes, so a deployed runtime carries no compiler. A target makes artifacts and runs
no pass: no `qopt.backends` module reaches `qopt.lowering` or `qopt.frontend`, directly
or through any chain of imports (`test_targets_run_no_passes`). Edges are not all: loading and
running a `.qvk` in a fresh process is checked for the modules it actually imports
(`test_loading_a_qvk_imports_no_compiler`).
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
            "qopt.variants",
            "qopt.registry",
        ),
    ),
    ("semantics", ("qopt.numerics", "qopt.interpreters")),
    ("transforms", ("qopt.frontend", "qopt.lowering")),
    ("targets", ("qopt.backends",)),
    (
        "driver",
        (
            "qopt",  # the package's own __init__ only: the public API
            "qopt.driver",
            "qopt.options",
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
            "qopt.breadth",
        ),
    ),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def places(prefix: str, name: str) -> bool:
    """Whether LAYERS' entry `prefix` places module `name`: the module of that name, and
    every module under it when it names a package other than the root (`qopt` places
    only qopt/__init__.py, so a new top-level module must be placed by name)."""
    return name == prefix or (prefix != "qopt" and name.startswith(prefix + "."))


def layer(name: str) -> int:
    """The layer of module `name`: the longest entry that places it."""
    best: tuple[int, int] | None = None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if places(prefix, name) and (best is None or len(prefix) > best[1]):
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
    unplaced = []
    for name in MODULES:
        try:
            layer(name)
        except AssertionError:
            unplaced.append(name)
    assert not unplaced, f"modules in no layer (add them to LAYERS): {unplaced}"


@pytest.mark.parametrize(
    "name", ["qopt.brand_new", "qopt.brand_new.sub", "qoptx", "qopt.toolsx", "numpy"]
)
def test_an_unplaced_module_has_no_layer(name: str) -> None:
    """No catch-all: a module LAYERS does not name (a new top-level module, a sibling
    whose name merely starts like a placed one) is in no layer, and the test above
    fails for it."""
    with pytest.raises(AssertionError, match="belongs to no layer"):
        layer(name)


def test_every_entry_places_a_module() -> None:
    """Each LAYERS entry names a module or package that exists (no stale entries)."""
    stale = [p for _, ps in LAYERS for p in ps if not any(places(p, m) for m in MODULES)]
    assert not stale, f"LAYERS entries that place no module: {stale}"


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
                "qopt.backends.vulkan.loader",
                "qopt.backends.vulkan.artifact",
                "qopt.backends.vulkan.spirv",
                "qopt.backends.vulkan.program",
                "qopt.backends.vulkan.checks",
                "qopt.backends.vulkan.qvk",
                "qopt.backends.vulkan.pool",
                "qopt.backends.vulkan.views",
            ),
            None,
            ("qopt.interpreters", "qopt.numerics", "qopt.lowering", "qopt.frontend"),
        ),
        # The `.qvk` format (data model, reader, writer) reads no IR: host segments'
        # IR is parsed by host.py, which checks.py imports only for them.
        (
            ("qopt.backends.vulkan.program", "qopt.backends.vulkan.qvk"),
            None,
            (
                "qopt.dialects",
                "qopt.context",
                "qopt.resources",
                "qopt.dtypes",
                "qopt.report",
                "qopt.backends.vulkan.bundle",
                "qopt.backends.vulkan.host",
            ),
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


def reachable(start: str, edges: dict[str, set[str]]) -> dict[str, str]:
    """Every module `start` imports through any chain of imports: {module: the module
    whose import reached it first} (a breadth-first walk over `edges`)."""
    seen: dict[str, str] = {}
    frontier = [start]
    while frontier:
        here = frontier.pop(0)
        for there in sorted(edges.get(here, ())):
            if there != start and there not in seen:
                seen[there] = here
                frontier.append(there)
    return seen


def chain(start: str, end: str, seen: dict[str, str]) -> str:
    path = [end]
    while path[-1] != start:
        path.append(seen[path[-1]])
    return " -> ".join(reversed(path))


def test_targets_run_no_passes() -> None:
    """A target turns a lowered module into an artifact: the driver (qopt.driver, the
    tools) runs the pipeline first. No `qopt.backends` module imports a pass or the
    frontend, directly or transitively."""
    bad = []
    for name in MODULES:
        if not _within(name, "qopt.backends"):
            continue
        seen = reachable(name, EDGES)
        for target in sorted(seen):
            if _within(target, "qopt.lowering", "qopt.frontend"):
                bad.append(chain(name, target, seen))
                break
    assert not bad, "targets that reach the passes:\n" + "\n".join(bad)


def test_reachable_follows_chains() -> None:
    """The transitive walk finds an edge two steps away (so the rule above can fail)."""
    edges = {"qopt.backends.x": {"qopt.dialects.y"}, "qopt.dialects.y": {"qopt.lowering.z"}}
    seen = reachable("qopt.backends.x", edges)
    assert chain("qopt.backends.x", "qopt.lowering.z", seen) == (
        "qopt.backends.x -> qopt.dialects.y -> qopt.lowering.z"
    )


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


#: The only xDSL modules a loaded `.qvk` may import: `QoptError`'s base class,
#: `xdsl.utils.exceptions.DiagnosticException` (no IR; xDSL's tools catch it).
XDSL_ALLOWED = {"xdsl", "xdsl.utils", "xdsl.utils.exceptions"}
COMPILER = ("qopt.dialects", "qopt.lowering", "qopt.interpreters", "qopt.numerics",
            "qopt.frontend", "qopt.context", "qopt.resources", "qopt.backends.vulkan.bundle",
            "qopt.backends.vulkan.host", "qopt.tools.qopt_opt")  # fmt: skip


def test_loading_a_qvk_imports_no_compiler(tmp_path: Path) -> None:
    """The transitive imports of loading and running a `.qvk` (`qopt.load` + a call,
    and `qopt-run x.qvk --device vulkan`) in a fresh process: no xDSL beyond
    `XDSL_ALLOWED`, no dialect, pass, interpreter or frontend, no torch. (A bundle
    with host segments is the exception: their IR is the interpreter's, test_vulkan_fallback.)"""
    import subprocess
    import sys

    source = ROOT / "tests" / "lit" / "tools" / "qopt-run.mlir"
    qvk, npz = tmp_path / "m.qvk", tmp_path / "in.npz"
    build = (
        "import sys, numpy as np\n"
        "from qopt.tools.qopt_opt import main\n"
        "np.savez(sys.argv[3], np.array([[1, -2, 3], [-4, 5, -6]], np.float32),\n"
        "         np.array([1, 2, 3], np.float32))\n"
        "try:\n    main([sys.argv[1], '-p', 'qopt-vulkan', '-t', 'vkbundle', '-o', sys.argv[2]])\n"
        "except SystemExit as e:\n    assert not e.code, e.code\n"
    )
    subprocess.run([sys.executable, "-c", build, str(source), str(qvk), str(npz)],
                   check=True, timeout=300, capture_output=True)  # fmt: skip
    api = (
        "import sys, numpy as np, qopt\n"
        "from qopt.backends.vulkan.runtime import vulkan_available\n"
        "artifact = qopt.load(sys.argv[1])\n"
        "if vulkan_available() is None:\n"
        "    arrays = np.load(sys.argv[2])\n"
        "    artifact(arrays['arr_0'], arrays['arr_1'])\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    cli = (
        "import sys\n"
        "from qopt.backends.vulkan.runtime import vulkan_available\n"
        "from qopt.tools.qopt_run import main\n"
        "if vulkan_available() is None:\n"
        "    try:\n        main([sys.argv[1], '--inputs', sys.argv[2], '--device', 'vulkan'])\n"
        "    except SystemExit as e:\n        assert not e.code, e.code\n"
        "else:\n"
        "    from qopt.backends.vulkan.artifact import VulkanArtifact\n"
        "    VulkanArtifact.load(sys.argv[1])\n"
        "print(' '.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    for name, script in (("qopt.load", api), ("qopt-run", cli)):
        done = subprocess.run([sys.executable, "-c", script, str(qvk), str(npz)],
                              capture_output=True, text=True, check=True, timeout=300)  # fmt: skip
        modules = (done.stdout if name == "qopt.load" else done.stderr).split()
        assert "qopt.backends.vulkan.qvk" in modules, name
        xdsl = sorted(m for m in modules if m.split(".")[0] == "xdsl")
        assert set(xdsl) <= XDSL_ALLOWED, f"{name} imports {xdsl}"
        compiler = [m for m in modules if _within(m, *COMPILER)]
        assert not compiler, f"{name} imports {compiler}"
        assert "torch" not in modules, name
