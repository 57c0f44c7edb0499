"""The package's shape, counted: module sizes, imports made inside functions, and the
lazy registries' references.

- Every module of `qopt/` has at most `MAX_LINES` lines: a longer one holds more than
  one responsibility and is split by them.
- qopt's own modules are imported at module level. A function-level import of one is
  allowed only where laziness is the point (a command that must not load the compiler,
  or one target that must not load the other), at most `MAX_LAZY_QOPT_IMPORTS` in all.
  A module with several such imports declares them once at its top instead, as
  `registry.LazyModule("qopt....")` (under `if TYPE_CHECKING:`'s real import): those
  are counted too, at most `MAX_LAZY_MODULES`.
- Heavy optional third-party packages (torch, coremltools, vulkan, ...) may be imported
  inside the function that needs them; their count per package is printed (run with
  `-s`) and bounded by `LAZY_THIRD_PARTY`, so a new one is a visible decision.
- The registries (passes, dialects, frontends, interpreter tables) name their objects by
  `"module:Name"` (qopt/registry.py): each reference resolves, to a module no higher in
  the layers than its registry.
"""

from __future__ import annotations

import ast
import collections
from pathlib import Path

import pytest

from tests.unit.test_layering import LAYERS, layer

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "qopt"
MODULES = sorted(PACKAGE.rglob("*.py"))

MAX_LINES = 900

#: Function-level imports of qopt's own modules, in all: each where laziness is the point
#: (the driver loads one target, not both; the Vulkan package's loader its artifact; a
#: `.qvk`'s check the compiler only for host segments; the frontend torch).
MAX_LAZY_QOPT_IMPORTS = 7

#: `LazyModule("qopt....")` declarations, in all: the API (`import qopt` loads no xDSL),
#: qopt-opt (`--help` loads no pass), qopt-run and the Vulkan artifact (a `.qvk` runs
#: without the compiler).
MAX_LAZY_MODULES = 27

#: Function-level imports of third-party packages, by top-level package: the most each
#: may have (heavy optional packages, imported where they are needed).
LAZY_THIRD_PARTY = {
    "torch": 25,
    "coremltools": 17,
    "sympy": 14,
    "torchao": 6,
    "xdsl": 6,
    "google": 2,
    "transformers": 1,
    "vulkan": 1,
    "scipy": 1,
}


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def function_imports(path: Path) -> list[tuple[int, str]]:
    """(line, top-level package) of each import statement inside a function of `path`
    (each statement once, however deeply its functions nest; a relative import counts
    as qopt's)."""
    found: list[tuple[int, str]] = []
    stack: list[tuple[ast.AST, bool]] = [(ast.parse(path.read_text()), False)]
    while stack:
        node, in_function = stack.pop()
        if in_function and isinstance(node, ast.Import):
            found.append((node.lineno, node.names[0].name.split(".")[0]))
        elif in_function and isinstance(node, ast.ImportFrom):
            found.append((node.lineno, "qopt" if node.level else (node.module or "").split(".")[0]))
        inside = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        stack.extend((child, inside) for child in ast.iter_child_nodes(node))
    return sorted(found)


STDLIB = frozenset(__import__("sys").stdlib_module_names)


def test_modules_are_at_most_max_lines() -> None:
    long = {_rel(p): n for p in MODULES if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them by responsibility): {long}"


def test_function_level_qopt_imports_are_few() -> None:
    lazy = [
        f"{_rel(p)}:{line}" for p in MODULES for line, top in function_imports(p) if top == "qopt"
    ]
    by_file = collections.Counter(entry.rpartition(":")[0] for entry in lazy)
    print(f"\nfunction-level qopt imports: {len(lazy)}: {dict(by_file.most_common())}")
    assert len(lazy) <= MAX_LAZY_QOPT_IMPORTS, (
        f"{len(lazy)} function-level imports of qopt modules (at most "
        f"{MAX_LAZY_QOPT_IMPORTS}): import qopt's modules at module level\n" + "\n".join(lazy)
    )


def lazy_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) of each `LazyModule("qopt...")` call in `path`."""
    return sorted(
        (node.lineno, node.args[0].value)
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "LazyModule"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and str(node.args[0].value).startswith("qopt")
    )


def test_lazy_modules_are_counted() -> None:
    """A LazyModule is a function-level import declared once: bounded the same way."""
    lazy = [f"{_rel(p)}:{line}: {name}" for p in MODULES for line, name in lazy_modules(p)]
    by_file = collections.Counter(entry.split(":")[0] for entry in lazy)
    print(f"\nLazyModule declarations: {len(lazy)}: {dict(by_file.most_common())}")
    assert len(lazy) <= MAX_LAZY_MODULES, (
        f"{len(lazy)} LazyModule declarations (at most {MAX_LAZY_MODULES}): import qopt's "
        "modules at module level where laziness is not the point\n" + "\n".join(lazy)
    )


def test_function_level_third_party_imports_are_counted() -> None:
    counts: collections.Counter[str] = collections.Counter()
    for path in MODULES:
        for _, top in function_imports(path):
            if top != "qopt" and top not in STDLIB:
                counts[top] += 1
    print(f"\nfunction-level third-party imports by package: {dict(counts.most_common())}")
    over = {
        package: f"{count} > {LAZY_THIRD_PARTY.get(package, 0)}"
        for package, count in counts.items()
        if count > LAZY_THIRD_PARTY.get(package, 0)
    }
    assert not over, (
        f"more function-level imports than LAZY_THIRD_PARTY allows: {over}; import the "
        "package at module level, or raise its bound if start-up time needs it lazy"
    )


def test_function_imports_counts_each_statement_once(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "import os\n"
        "def f():\n"
        "    from qopt import errors\n"
        "    def g():\n"
        "        import torch\n"
        "        from . import x\n"
    )
    assert function_imports(source) == [(3, "qopt"), (5, "torch"), (6, "qopt")]


def _registries() -> list[tuple[str, str, str]]:
    """(registry module, name, reference) of every lazy registry entry."""
    from qopt.dialects import DIALECTS
    from qopt.frontend import FRONTENDS
    from qopt.interpreters import TABLES
    from qopt.lowering import PASSES

    entries = [("qopt.dialects", n, r) for n, r in DIALECTS.items()]
    entries += [("qopt.frontend", n, r) for n, r in FRONTENDS.items()]
    entries += [("qopt.lowering", n, r) for n, r in PASSES.items()]
    entries += [("qopt.interpreters", n, r) for n, refs in TABLES.items() for r in refs]
    return entries


@pytest.mark.parametrize(("registry", "name", "reference"), _registries())
def test_registry_references_resolve_and_point_down(
    registry: str, name: str, reference: str
) -> None:
    from qopt.registry import resolve

    module = reference.partition(":")[0]
    assert layer(module) <= layer(registry), (
        f"{registry}[{name!r}] names {reference}, in layer {LAYERS[layer(module)][0]}, "
        f"above {LAYERS[layer(registry)][0]}"
    )
    value = resolve(reference)
    assert value is not None
    if registry == "qopt.lowering":
        assert value.name == name, f"{reference} is the pass {value.name!r}, listed as {name!r}"
    if registry == "qopt.dialects":
        assert value.name == name, f"{reference} is the dialect {value.name!r}"
