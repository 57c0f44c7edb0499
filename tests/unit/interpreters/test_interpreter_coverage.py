"""Every op of every qopt dialect has reference semantics: an `@impl` in one of the
interpreter's function sets (`qopt.interpreters.all_functions()`), or a callable
impl for a function-like op. The xDSL ops qopt builds (the `arith` / `func` op
classes named in qopt/'s source) are held to the same rule, since every qopt level
contains them.

An op without semantics is listed by name. A declaration-only op is exempted in
`EXEMPT`, with the reason; an exemption that is no longer needed fails too.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from xdsl.interpreter import InterpreterFunctions
from xdsl.ir import Operation

import qopt
from qopt.dialects import get_all_dialects
from qopt.dialects.ml_program import GlobalOp
from qopt.dialects.vkc import KernelOp
from qopt.interpreters import all_functions

EXEMPT: dict[type[Operation], str] = {
    KernelOp: "a symbol declaration at module level (the kernel's source, signature and "
    "specialisation): never executed itself; `vkc.dispatch` looks it up and runs the "
    "kernel's numpy reference",
    GlobalOp: "a state declaration at module level: never executed itself; its initial "
    "value seeds a session's State, which global_load / global_store read and write",
}

XDSL_DIALECTS = ("arith", "func")
"""The xDSL dialects qopt's levels share (qopt/context.py loads them with qopt's)."""


def implemented() -> set[type[Operation]]:
    ops: set[type[Operation]] = set()
    for functions in all_functions():
        cls = type(functions)
        ops |= {op_type for op_type, _ in cls._impls()}  # pyright: ignore[reportPrivateUsage]
        ops |= {op_type for op_type, _ in cls._callable_impls()}  # pyright: ignore[reportPrivateUsage]
    return ops


def qopt_op_classes() -> dict[str, list[type[Operation]]]:
    return {name: list(factory().operations) for name, factory in get_all_dialects().items()}


def xdsl_ops_qopt_uses() -> set[type[Operation]]:
    """`arith` / `func` op classes that qopt/'s source names, as `arith.ConstantOp`
    (module imported from xdsl.dialects) or `from xdsl.dialects.func import FuncOp`."""
    modules = {d: importlib.import_module(f"xdsl.dialects.{d}") for d in XDSL_DIALECTS}
    named: list[object] = []
    for path in Path(qopt.__file__).parent.rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        bound: dict[str, str] = {}  # local name -> dialect module it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "xdsl.dialects":
                bound |= {a.asname or a.name: a.name for a in node.names if a.name in modules}
            elif isinstance(node, ast.ImportFrom) and node.module in {
                f"xdsl.dialects.{d}" for d in XDSL_DIALECTS
            }:
                module = modules[node.module.rsplit(".", 1)[1]]
                named += [getattr(module, a.name, None) for a in node.names]
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in bound
            ):
                named.append(getattr(modules[bound[node.value.id]], node.attr, None))
    return {c for c in named if isinstance(c, type) and issubclass(c, Operation)}


def test_every_qopt_op_has_semantics() -> None:
    impls = implemented()
    missing = [
        op.name
        for ops in qopt_op_classes().values()
        for op in ops
        if op not in impls and op not in EXEMPT
    ]
    assert not missing, f"ops without an interpreter @impl: {missing}"


def test_xdsl_ops_qopt_uses_have_semantics() -> None:
    used = xdsl_ops_qopt_uses()
    assert {op.name for op in used} >= {"arith.constant", "func.func", "func.return"}
    missing = sorted(op.name for op in used - implemented())
    assert not missing, f"xDSL ops qopt builds without an interpreter @impl: {missing}"


def test_exemptions_are_needed() -> None:
    """An exempt op is a qopt op that really has no impl (else drop the exemption)."""
    all_ops = {op for ops in qopt_op_classes().values() for op in ops}
    impls = implemented()
    for op, reason in EXEMPT.items():
        assert op in all_ops, op.name
        assert op not in impls, f"{op.name} has an @impl now: remove its exemption"
        assert reason


def test_no_impl_for_an_op_qopt_does_not_have() -> None:
    """qopt's own function sets implement only ops of qopt's dialects or the xDSL ops
    qopt uses (a stale @impl for a removed or renamed op fails here)."""
    known = {op for ops in qopt_op_classes().values() for op in ops} | xdsl_ops_qopt_uses()
    stale = sorted(
        op.name
        for functions in all_functions()
        if type(functions).__module__.startswith("qopt.")
        for op, _ in type(functions)._impls()  # pyright: ignore[reportPrivateUsage]
        if op not in known
    )
    assert not stale, stale


def test_function_sets_are_interpreter_functions() -> None:
    assert all(isinstance(f, InterpreterFunctions) for f in all_functions())
