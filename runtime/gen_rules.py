"""Translate each kernel's Python rules (`KernelSpec.extents`, `KernelSpec.workgroups`)
into C, for the native runtime's catalogue (run by gen_catalogue.py at build time).

The rules in qopt/kernels are ordinary Python functions over the push-constant and
specialization-constant mappings. This is a partial evaluator over their source (the
`ast` of each function, read from its module file, never executed on run-time values):
everything that does not depend on a push or specialization value (names, tuples of
binding names, loop ranges, f-string text, helper tables) is computed here, in Python;
every value that does is a C expression over `P[i]` (push constant i) and `S[j]`
(specialization constant j, defaults filled in), in 64-bit integers whose `+ - * // %`
are checked (an overflow or a division by zero refuses the dispatch; Python's floor
division and modulo). Branches on run-time values are if-converted: both arms are
translated under their path condition and the values merged with `c ? a : b`; every
check that can fail (an overflow, a `raise ValueError(...)`) is gated by the path
condition under which the Python code would reach it, so the C function refuses exactly
where the Python function raises, with the same message text. `try` / `except
ValueError as e` (the kernel name prefix of `guarded`) and `continue` are handled the
same way.

The subset: integer arithmetic (`+ - * // %`, unary `-`), comparisons, `and`/`or`/`not`,
conditional expressions, `if`, `for` over sequences of static length, comprehensions,
tuples / lists / dicts with static keys, calls of other Python functions and lambdas
(inlined), `min max sum any all divmod abs int len range zip enumerate reversed`,
`numpy.prod`, f-strings, `raise ValueError(...)`. Anything else on a run-time value (a
`while`, `**`, shifts, a run-time dict key, a string built from a run-time value other
than by choosing among static strings, ...) stops the build with a `RuleError` naming
the kernel, the file and the line: a rule is translated whole or the build fails.
"""

from __future__ import annotations

import ast
import builtins
import functools
import types
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np


class RuleError(Exception):
    """A rule uses Python outside the translatable subset."""


class Dyn:
    """An int64 run-time value: a C expression (a temporary, `P[i]`, `S[j]` or a literal)."""

    __slots__ = ("c",)

    def __init__(self, c: str) -> None:
        self.c = c

    def __deepcopy__(self, memo: object) -> Dyn:
        return self

    def _refuse(self, *args: object) -> Any:
        raise RuleError("a run-time value used where the translator cannot follow it")

    __bool__ = __index__ = __int__ = __hash__ = __eq__ = __lt__ = __gt__ = _refuse  # type: ignore[assignment]
    __le__ = __ge__ = __ne__ = _refuse  # type: ignore[assignment]


class DynMap:
    """The push or specialization mapping of a dispatch: static keys, run-time values."""

    def __init__(self, array: str, names: list[str], usable: set[str]) -> None:
        self.array, self.names, self.usable = array, names, usable

    def __getitem__(self, key: object) -> Dyn:
        if not isinstance(key, str) or key not in self.names:
            raise RuleError(f"{self.array}[{key!r}]: not a constant of the kernel")
        if key not in self.usable:
            raise RuleError(f"{key} is a float push constant: rules take integers only")
        return Dyn(f"{self.array}[{self.names.index(key)}]")

    def get(self, key: str, default: object = None) -> object:
        return self[key] if key in self.names else default

    def __contains__(self, key: object) -> bool:
        return key in self.names

    def __iter__(self) -> Any:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def keys(self) -> list[str]:
        return list(self.names)


class DynSet:
    """A set of static elements whose membership depends on run-time values."""

    def __init__(self, presence: dict[Any, Any]) -> None:
        self.presence = presence

    def add(self, item: object) -> None:
        if isinstance(item, Dyn):
            raise RuleError("a run-time value added to a set")
        self.presence[item] = True


class Choice:
    """`a if cond else b` for values that cannot be merged into one C expression (static
    strings, containers of different shapes): operations distribute over the two arms."""

    def __init__(self, cond: Dyn, a: object, b: object) -> None:
        self.cond, self.a, self.b = cond, a, b


class Poison:
    """A value only some paths define (an error if used)."""

    def __init__(self, why: str) -> None:
        self.why = why


class Msg:
    """A message: static text and run-time parts (Dyn: `%lld`; CStr: `%s`)."""

    def __init__(self, parts: list[object]) -> None:
        self.parts = parts


class CStr:
    def __init__(self, c: str) -> None:
        self.c = c


class Exc:
    """A `ValueError(message)` being raised."""

    def __init__(self, kind: type, msg: Msg) -> None:
        self.kind, self.msg = kind, msg


class Closure:
    """A lambda or nested def of translated code."""

    def __init__(self, node: ast.AST, frame: Frame, defaults: list[object]) -> None:
        self.node, self.frame, self.defaults = node, frame, defaults

    def __deepcopy__(self, memo: object) -> Closure:
        return self


NOTHING = object()


class Frame:
    def __init__(self, vars: dict[str, Any], parent: Frame | None, globs: dict[str, Any]) -> None:
        self.vars, self.parent, self.globals = vars, parent, globs
        self.ret: object = NOTHING
        self.ret_pc: object = False
        self.pending: list[tuple[object, list[tuple[dict[str, Any], object, object]]]] = []


class _Try:
    def __init__(self, handler: ast.ExceptHandler, frame: Frame, depth: int) -> None:
        self.handler, self.frame, self.depth = handler, frame, depth
        self.pending: list[tuple[object, list[tuple[dict[str, Any], object, object]]]] = []


class _Loop:
    def __init__(self) -> None:
        self.pending: list[tuple[object, list[tuple[dict[str, Any], object, object]]]] = []


def _is_static(value: object) -> bool:
    if isinstance(value, Dyn | DynMap | DynSet | Choice | Poison | Msg | Closure | Exc):
        return False
    if isinstance(value, list | tuple | set | frozenset):
        return all(_is_static(v) for v in value)
    if isinstance(value, dict):
        return all(_is_static(v) for v in value.values())
    return True


@functools.cache
def _module_ast(filename: str) -> ast.Module:
    with open(filename, encoding="utf-8") as f:
        return ast.parse(f.read(), filename)


def _function_ast(fn: types.FunctionType) -> ast.FunctionDef | ast.Lambda:
    code = fn.__code__
    found: list[ast.FunctionDef | ast.Lambda] = []
    for node in ast.walk(_module_ast(code.co_filename)):
        if isinstance(node, ast.FunctionDef) and node.name == code.co_name:
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            if first == code.co_firstlineno:
                found.append(node)
        elif isinstance(node, ast.Lambda) and code.co_name == "<lambda>":
            if node.lineno == code.co_firstlineno:
                found.append(node)
    if len(found) != 1:
        raise RuleError(f"cannot find the source of {fn.__qualname__} ({len(found)} candidates)")
    return found[0]


class Translator:
    """Translates one call of a rule into the body of a C function."""

    def __init__(self, kernel: str) -> None:
        self.kernel = kernel
        self.lines: list[str] = []
        self.n = 0
        self.pc: object = True
        self.frames: list[Frame] = []
        self.tries: list[_Try] = []
        self.loops: list[_Loop] = []
        self.where = ""

    # ---- C emission ------------------------------------------------------------------

    def fail(self, why: str) -> RuleError:
        return RuleError(f"kernel {self.kernel}: {self.where}: {why}")

    def c(self, v: object) -> str:
        if isinstance(v, Dyn):
            return v.c
        if isinstance(v, bool):
            return str(int(v))
        if isinstance(v, int):
            if not -(2**63) < v < 2**63:
                raise self.fail(f"the constant {v} does not fit 64 bits")
            return f"INT64_C({v})" if abs(v) >= 2**31 else str(v)
        raise self.fail(f"{type(v).__name__} value where an integer is needed")

    def refusal(self, what: str) -> str:
        """The message of a dispatch Python's rule would fail on with an exception other than
        ValueError (the same words as the C helpers' overflow and division refusals)."""
        return f"kernel {self.kernel}: {what} in its rules with these push constants"

    def tmp(self, expr: str) -> Dyn:
        name = f"t{self.n}"
        self.n += 1
        self.lines.append(f"  const int64_t {name} = {expr};")
        return Dyn(name)

    def pcc(self) -> str:
        return self.c(self.pc)

    # ---- boolean / integer helpers ------------------------------------------------------

    def land(self, a: object, b: object) -> object:
        if a is False or b is False:
            return False
        if a is True:
            return b
        if b is True:
            return a
        return self.tmp(f"({self.c(a)} && {self.c(b)})")

    def lor(self, a: object, b: object) -> object:
        if a is True or b is True:
            return True
        if a is False:
            return b
        if b is False:
            return a
        return self.tmp(f"({self.c(a)} || {self.c(b)})")

    def lnot(self, a: object) -> object:
        if isinstance(a, bool):
            return not a
        return self.tmp(f"(!{self.c(a)})")

    def intval(self, v: object) -> object:
        if isinstance(v, Choice):
            return self.lift(self.intval, v)
        if isinstance(v, Dyn) or (isinstance(v, int) and not isinstance(v, bool)):
            return v
        if isinstance(v, bool):
            return int(v)
        if isinstance(v, Poison):
            raise self.fail(v.why)
        raise self.fail(f"{type(v).__name__} value where an integer is needed")

    def arith(self, op: str, a: object, b: object) -> object:
        if isinstance(a, Choice) or isinstance(b, Choice):
            return self.lift(lambda x, y: self.arith(op, x, y), a, b)
        if not (isinstance(a, Dyn) or isinstance(b, Dyn)):
            if isinstance(a, int) and isinstance(b, int) and op in ("div", "mod") and b == 0:
                self.emit_fail(Msg([self.refusal("an integer division by zero")]))
                return 0
            try:
                return {
                    "add": lambda: a + b,  # type: ignore[operator]
                    "sub": lambda: a - b,  # type: ignore[operator]
                    "mul": lambda: a * b,  # type: ignore[operator]
                    "div": lambda: a // b,  # type: ignore[operator]
                    "mod": lambda: a % b,  # type: ignore[operator]
                }[op]()
            except TypeError as e:
                raise self.fail(str(e)) from None
        a, b = self.intval(a), self.intval(b)
        return self.tmp(f"qx_{op}(X, {self.pcc()}, {self.c(a)}, {self.c(b)})")

    def compare(self, op: type, a: object, b: object) -> object:
        if isinstance(a, Choice) or isinstance(b, Choice):
            return self.lift(lambda x, y: self.compare(op, x, y), a, b)
        if op in (ast.In, ast.NotIn):
            found = self.contains(b, a)
            return found if op is ast.In else self.lnot(found)
        if op in (ast.Is, ast.IsNot):
            if isinstance(a, Dyn) or isinstance(b, Dyn):
                return (
                    op is ast.IsNot
                    if b is None or a is None
                    else self._bad("`is` on a run-time value")
                )
            return (a is b) if op is ast.Is else (a is not b)
        if not (isinstance(a, Dyn) or isinstance(b, Dyn)):
            if not (_is_static(a) and _is_static(b)):
                raise self.fail("comparison of containers holding run-time values")
            return {
                ast.Lt: lambda: a < b,  # type: ignore[operator]
                ast.LtE: lambda: a <= b,  # type: ignore[operator]
                ast.Gt: lambda: a > b,  # type: ignore[operator]
                ast.GtE: lambda: a >= b,  # type: ignore[operator]
                ast.Eq: lambda: a == b,
                ast.NotEq: lambda: a != b,
            }[op]()
        if op in (ast.Eq, ast.NotEq) and not all(
            isinstance(x, Dyn | int) for x in (a, b)
        ):  # an integer against a string / None / tuple: never equal
            return op is ast.NotEq
        sym = {
            ast.Lt: "<",
            ast.LtE: "<=",
            ast.Gt: ">",
            ast.GtE: ">=",
            ast.Eq: "==",
            ast.NotEq: "!=",
        }
        if op not in sym:
            raise self.fail(f"comparison {op.__name__}")
        a, b = self.intval(a), self.intval(b)
        return self.tmp(f"({self.c(a)} {sym[op]} {self.c(b)})")

    def _bad(self, why: str) -> Any:
        raise self.fail(why)

    def contains(self, container: object, item: object) -> object:
        if isinstance(container, DynMap):
            if isinstance(item, Dyn):
                raise self.fail("a run-time key looked up in the push / spec mapping")
            return item in container
        if isinstance(container, DynSet):
            if not isinstance(item, Dyn):
                return container.presence.get(item, False)
            found: object = False
            for elem, present in container.presence.items():
                found = self.lor(found, self.land(self.compare(ast.Eq, item, elem), present))
            return found
        if not isinstance(item, Dyn) and _is_static(container):
            return item in container  # type: ignore[operator]
        if isinstance(container, dict):
            elems: Iterable[object] = list(container)
        elif isinstance(container, list | tuple | set | frozenset | range):
            elems = container
        else:
            raise self.fail(f"`in` on {type(container).__name__}")
        found = False
        for elem in elems:
            found = self.lor(found, self.compare(ast.Eq, item, elem))
        return found

    def truth(self, v: object) -> object:
        if isinstance(v, Choice):
            return self.lift(self.truth, v)
        if isinstance(v, Dyn):
            return self.tmp(f"({v.c} != 0)")
        if isinstance(v, Poison):
            raise self.fail(v.why)
        if isinstance(v, DynMap):
            return len(v) > 0
        if isinstance(v, DynSet):
            found: object = False
            for present in v.presence.values():
                found = self.lor(found, present)
            return found
        if isinstance(v, list | tuple | dict):
            return len(v) > 0
        if isinstance(v, Msg | Closure | Exc):
            return True
        return bool(v)

    # ---- merging values under a condition ---------------------------------------------

    def select(
        self, cond: object, a: object, b: object, memo: dict[Any, Any] | None = None
    ) -> object:
        if cond is True:
            return a
        if cond is False:
            return b
        if memo is None:
            memo = {}
        if a is NOTHING:
            return b
        if b is NOTHING or a is b:
            return a
        key = (id(a), id(b))
        if key in memo:
            return memo[key]
        if isinstance(a, Dyn | int) and isinstance(b, Dyn | int):
            if not isinstance(a, Dyn) and not isinstance(b, Dyn) and a == b and type(a) is type(b):
                return a
            a, b = self.intval(a), self.intval(b)
            return self.tmp(f"({self.c(cond)} ? {self.c(a)} : {self.c(b)})")
        if isinstance(a, list | tuple) and type(a) is type(b) and len(a) == len(b):  # type: ignore[arg-type]
            if isinstance(a, list):
                out: list[object] = []
                memo[key] = out
                out.extend(self.select(cond, x, y, memo) for x, y in zip(a, b, strict=True))  # type: ignore[arg-type]
                return out
            return tuple(self.select(cond, x, y, memo) for x, y in zip(a, b, strict=True))  # type: ignore[arg-type]
        if isinstance(a, dict) and isinstance(b, dict) and list(a) == list(b):
            merged: dict[object, object] = {}
            memo[key] = merged
            for k in a:
                merged[k] = self.select(cond, a[k], b[k], memo)
            return merged
        if isinstance(a, DynSet) and isinstance(b, DynSet):
            keys = list(dict.fromkeys([*a.presence, *b.presence]))
            out_set = DynSet({})
            memo[key] = out_set
            for k in keys:
                out_set.presence[k] = self.select(
                    cond, a.presence.get(k, False), b.presence.get(k, False), memo
                )
            return out_set
        if _is_static(a) and _is_static(b) and type(a) is type(b):
            try:
                if a == b:
                    return a
            except Exception:
                pass
        # keep chains of choices linear (a chain of returns, `opcode_name`)
        if isinstance(a, Choice) and a.b is b:
            return Choice(self.land(cond, a.cond), a.a, b)  # type: ignore[arg-type]
        if isinstance(a, Choice) and a.a is b:
            return Choice(self.land(cond, self.lnot(a.cond)), a.b, b)  # type: ignore[arg-type]
        if isinstance(b, Choice) and b.a is a:
            return Choice(self.lor(cond, b.cond), a, b.b)  # type: ignore[arg-type]
        if isinstance(b, Choice) and b.b is a:
            return Choice(self.land(self.lnot(cond), b.cond), b.a, a)  # type: ignore[arg-type]
        return Choice(cond, a, b)  # type: ignore[arg-type]

    def lift(self, fn: Callable[..., object], *args: object) -> object:
        """fn over the arms of the first Choice among args, merged."""
        i = next(i for i, a in enumerate(args) if isinstance(a, Choice))
        choice = args[i]
        assert isinstance(choice, Choice)
        saved = self.pc
        results = []
        for arm, cond in ((choice.a, choice.cond), (choice.b, self.lnot(choice.cond))):
            self.pc = self.land(saved, cond)
            if self.pc is False:
                results.append(NOTHING)
                continue
            results.append(fn(*args[:i], arm, *args[i + 1 :]))
        self.pc = saved
        return self.select(choice.cond, results[0], results[1])

    # ---- state snapshots (if-conversion) -----------------------------------------------

    def snapshot(self, depth: int | None = None) -> list[tuple[dict[str, Any], object, object]]:
        memo: dict[int, object] = {}
        frames = self.frames if depth is None else self.frames[:depth]
        return [(self._copy(f.vars, memo), self._copy(f.ret, memo), f.ret_pc) for f in frames]  # type: ignore[misc]

    def _copy(self, v: object, memo: dict[int, object]) -> object:
        if id(v) in memo:
            return memo[id(v)]
        if isinstance(v, list):
            out: list[object] = []
            memo[id(v)] = out
            out.extend(self._copy(x, memo) for x in v)
            return out
        if isinstance(v, dict):
            d: dict[object, object] = {}
            memo[id(v)] = d
            for k, x in v.items():
                d[k] = self._copy(x, memo)
            return d
        if isinstance(v, DynSet):
            s = DynSet({})
            memo[id(v)] = s
            s.presence = dict(v.presence)
            return s
        if isinstance(v, tuple):
            return tuple(self._copy(x, memo) for x in v)
        return v

    def restore(self, snap: list[tuple[dict[str, Any], object, object]]) -> None:
        for frame, (vars, ret, ret_pc) in zip(self.frames, snap, strict=False):
            frame.vars, frame.ret, frame.ret_pc = vars, ret, ret_pc

    def merge_into(
        self,
        cond: object,
        a: list[tuple[dict[str, Any], object, object]],
        a_live: object,
        b: list[tuple[dict[str, Any], object, object]],
        b_live: object,
        merge_ret: bool = True,
    ) -> None:
        """Frames := a where cond holds, b elsewhere (a_live / b_live: whether any path
        reaches the end of each side)."""
        memo: dict[Any, Any] = {}
        for frame, (va, ra, pa), (vb, rb, pb) in zip(self.frames, a, b, strict=False):
            if a_live is False:
                vars = vb
            elif b_live is False:
                vars = va
            else:
                vars = {}
                for name in dict.fromkeys([*va, *vb]):
                    if name in va and name in vb:
                        vars[name] = self.select(cond, va[name], vb[name], memo)
                    else:
                        vars[name] = Poison(f"{name} is defined on some paths only")
            frame.vars = vars
            if merge_ret:  # (a path that returned rejoins: the return value is already merged)
                frame.ret = self.select(cond, ra, rb, memo)
            frame.ret_pc = self.lor(pa, pb)

    # ---- statements -------------------------------------------------------------------

    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    def run_block(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            if self.pc is False:
                return
            self.where = f"{self.frame.globals.get('__name__', '?')} line {stmt.lineno}"
            self.stmt(stmt)

    def stmt(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant):
                return  # a docstring
            self.expr(s.value)
        elif isinstance(s, ast.Assign):
            value = self.expr(s.value)
            for target in s.targets:
                self.assign(target, value)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self.assign(s.target, self.expr(s.value))
        elif isinstance(s, ast.AugAssign):
            op = self.binop_name(s.op)
            load = self.expr(_as_load(s.target))
            self.assign(s.target, self.arith(op, load, self.expr(s.value)))
        elif isinstance(s, ast.Return):
            value = self.expr(s.value) if s.value is not None else None
            frame = self.frame
            frame.ret = self.select(self.pc, value, frame.ret)
            frame.ret_pc = self.lor(frame.ret_pc, self.pc)
            frame.pending.append((self.pc, self.snapshot()))  # rejoins at the call's end
            self.pc = False
        elif isinstance(s, ast.If):
            self.if_stmt(s)
        elif isinstance(s, ast.For):
            self.for_stmt(s)
        elif isinstance(s, ast.Raise):
            if s.exc is None:
                raise self.fail("a bare raise")
            exc = self.expr(s.exc)
            if not isinstance(exc, Exc):
                raise self.fail("raise of something other than ValueError(message)")
            self.raise_exc(exc)
        elif isinstance(s, ast.Try):
            self.try_stmt(s)
        elif isinstance(s, ast.Continue):
            if not self.loops:
                raise self.fail("continue outside a loop")
            self.loops[-1].pending.append((self.pc, self.snapshot()))
            self.pc = False
        elif isinstance(s, ast.Pass):
            return
        elif isinstance(s, ast.FunctionDef):
            if s.decorator_list:
                raise self.fail("a decorated nested function")
            self.frame.vars[s.name] = Closure(s, self.frame, self.elements(s.args.defaults))
        else:
            raise self.fail(f"statement {type(s).__name__}")

    def if_stmt(self, s: ast.If) -> None:
        cond = self.truth(self.expr(s.test))
        if isinstance(cond, bool):
            self.run_block(s.body if cond else s.orelse)
            return
        base = self.pc
        start = self.snapshot()
        self.pc = self.land(base, cond)
        self.run_block(s.body)
        a, a_live = self.snapshot(), self.pc
        self.restore(start)
        self.pc = self.land(base, self.lnot(cond))
        self.run_block(s.orelse)
        b, b_live = self.snapshot(), self.pc
        self.merge_into(cond, a, a_live, b, b_live)
        self.pc = self.lor(a_live, b_live)

    def join_pending(self, pending: list[tuple[object, list[Any]]]) -> None:
        for pc, snap in pending:
            here, live = self.snapshot(), self.pc
            self.merge_into(pc, snap, pc, here, live, merge_ret=False)
            self.pc = self.lor(live, pc)
        pending.clear()

    def for_stmt(self, s: ast.For) -> None:
        if s.orelse:
            raise self.fail("for ... else")
        items = self.static_iter(self.expr(s.iter))
        loop = _Loop()
        self.loops.append(loop)
        try:
            for item in items:
                if self.pc is False:
                    break
                self.assign(s.target, item)
                self.run_block(s.body)
                self.join_pending(loop.pending)
        finally:
            self.loops.pop()

    def try_stmt(self, s: ast.Try) -> None:
        if s.orelse or s.finalbody or len(s.handlers) != 1:
            raise self.fail("try with else / finally / several handlers")
        handler = s.handlers[0]
        kind = self.expr(handler.type) if handler.type is not None else None
        if kind is not ValueError:
            raise self.fail("only `except ValueError` is translated")
        entry = _Try(handler, self.frame, len(self.frames))
        self.tries.append(entry)
        try:
            self.run_block(s.body)
        finally:
            self.tries.pop()
        self.join_pending(entry.pending)

    def raise_exc(self, exc: Exc) -> None:
        handler = next((t for t in reversed(self.tries) if issubclass(exc.kind, ValueError)), None)
        if handler is None:
            self.emit_fail(exc.msg)
            self.pc = False
            return
        saved_frames, saved_tries = self.frames, self.tries
        self.frames = saved_frames[: handler.depth]
        self.tries = saved_tries[: saved_tries.index(handler)]
        try:
            if handler.handler.name:
                self.frame.vars[handler.handler.name] = exc.msg
            self.run_block(handler.handler.body)
            if self.pc is not False:  # the handler falls through: join after the try
                handler.pending.append((self.pc, self.snapshot()))
        finally:
            self.frames, self.tries = saved_frames, saved_tries
        self.pc = False

    def emit_fail(self, msg: Msg) -> None:
        fmt, args = self.format_c(msg)
        extra = "".join(f", {a}" for a in args)
        self.lines.append(f"  qx_fail(X, {self.pcc()}, {_c_string(fmt)}{extra});")

    def format_c(self, msg: Msg) -> tuple[str, list[str]]:
        fmt, args = [], []
        for part in msg.parts:
            if isinstance(part, str):
                fmt.append(part.replace("%", "%%"))
            elif isinstance(part, Dyn):
                fmt.append("%lld")
                args.append(f"(long long){part.c}")
            elif isinstance(part, CStr):
                fmt.append("%s")
                args.append(part.c)
            else:
                raise self.fail("message part")
        return "".join(fmt), args

    # ---- assignment -------------------------------------------------------------------

    def assign(self, target: ast.expr, value: object) -> None:
        if isinstance(target, ast.Name):
            self.frame.vars[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List):
            items = self.static_iter(value)
            if len(items) != len(target.elts):
                raise self.fail(f"unpacking {len(items)} values into {len(target.elts)}")
            for t, v in zip(target.elts, items, strict=True):
                self.assign(t, v)
        elif isinstance(target, ast.Subscript):
            container = self.expr(target.value)
            index = self.expr(target.slice)
            if isinstance(container, dict) and isinstance(index, Msg):
                hits = self.key_hits(container, index)
                for k, hit in hits.items():
                    container[k] = self.select(hit, value, container[k])
            elif isinstance(container, dict):
                if not _is_static(index):
                    raise self.fail("a run-time dict key")
                container[index] = value
            elif isinstance(container, list):
                if isinstance(index, Dyn):
                    self.dyn_index_check(index, len(container))
                    for i in range(len(container)):
                        hit = self.lor(
                            self.compare(ast.Eq, index, i),
                            self.compare(ast.Eq, index, i - len(container)),
                        )
                        container[i] = self.select(hit, value, container[i])
                else:
                    container[index] = value  # type: ignore[index]
            else:
                raise self.fail(f"item assignment into {type(container).__name__}")
        else:
            raise self.fail(f"assignment to {type(target).__name__}")

    def key_hits(self, container: dict[Any, Any], key: Msg) -> dict[Any, object]:
        """For a key built from one run-time integer (`f"in{b}"`): the condition under which
        it equals each static key of `container`; a key matching none refuses the dispatch
        (Python: a KeyError)."""
        dyns = [i for i, p in enumerate(key.parts) if not isinstance(p, str)]
        if len(dyns) != 1 or not isinstance(key.parts[dyns[0]], Dyn):
            raise self.fail("a dict key built from run-time values other than one integer")
        prefix = "".join(key.parts[: dyns[0]])  # type: ignore[arg-type]
        suffix = "".join(key.parts[dyns[0] + 1 :])  # type: ignore[arg-type]
        value = key.parts[dyns[0]]
        hits: dict[Any, object] = {}
        for k in container:
            if not isinstance(k, str) or len(k) <= len(prefix) + len(suffix):
                continue
            middle = k[len(prefix) : len(k) - len(suffix)]
            if k.startswith(prefix) and k.endswith(suffix) and str(_canonical(middle)) == middle:
                hit = self.compare(ast.Eq, value, int(middle))
                if hit is not False:
                    hits[k] = hit
        none: object = True
        for hit in hits.values():
            none = self.land(none, self.lnot(hit))
        if none is not False:
            saved = self.pc
            self.pc = self.land(saved, none)
            self.emit_fail(Msg([self.refusal("a key missing from a dict")]))
            self.pc = saved
        return hits

    def dyn_index_check(self, index: Dyn, n: int) -> None:
        bad = self.lor(self.compare(ast.Lt, index, -n), self.compare(ast.GtE, index, n))
        if bad is not False:
            saved = self.pc
            self.pc = self.land(saved, bad)
            self.emit_fail(Msg([self.refusal("an index out of range")]))
            self.pc = saved

    # ---- expressions ------------------------------------------------------------------

    def static_iter(self, value: object) -> list[object]:
        if isinstance(value, Choice | Dyn | Poison | DynSet):
            raise self.fail("iteration over a run-time value")
        if isinstance(value, DynMap):
            return list(value.names)
        try:
            return list(value)  # type: ignore[call-overload]
        except TypeError:
            raise self.fail(f"iteration over {type(value).__name__}") from None

    def lookup(self, name: str) -> object:
        frame: Frame | None = self.frame
        while frame is not None:
            if name in frame.vars:
                value = frame.vars[name]
                if isinstance(value, Poison):
                    raise self.fail(value.why)
                return value
            frame = frame.parent
        globs = self.frame.globals
        if name in globs:
            return globs[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise self.fail(f"unknown name {name}")

    @staticmethod
    def binop_name(op: ast.operator) -> str:
        names = {
            ast.Add: "add",
            ast.Sub: "sub",
            ast.Mult: "mul",
            ast.FloorDiv: "div",
            ast.Mod: "mod",
        }
        return names.get(type(op), type(op).__name__)

    def expr(self, e: ast.expr) -> Any:
        if isinstance(e, ast.Constant):
            return e.value
        if isinstance(e, ast.Name):
            return self.lookup(e.id)
        if isinstance(e, ast.Attribute):
            obj = self.expr(e.value)
            if isinstance(obj, Choice):
                return self.lift(lambda o: getattr(o, e.attr), obj)
            if isinstance(obj, Dyn | Poison):
                raise self.fail(f"attribute {e.attr} of a run-time value")
            try:
                return getattr(obj, e.attr)
            except AttributeError:
                raise self.fail(f"no attribute {e.attr}") from None
        if isinstance(e, ast.BinOp):
            a, b = self.expr(e.left), self.expr(e.right)
            op = self.binop_name(e.op)
            if op in ("add", "sub", "mul", "div", "mod"):
                if op in ("add", "mul") and not (
                    isinstance(a, Dyn | int | Choice) and isinstance(b, Dyn | int | Choice)
                ):
                    if _is_static(a) and _is_static(b):
                        return a + b if op == "add" else a * b
                    if isinstance(a, list | tuple) and isinstance(b, list | tuple) and op == "add":
                        return a + b
                return self.arith(op, a, b)
            if (
                _is_static(a)
                and _is_static(b)
                and not isinstance(a, Dyn)
                and not isinstance(b, Dyn)
            ):
                return {
                    "Pow": lambda: a**b,
                    "LShift": lambda: a << b,
                    "RShift": lambda: a >> b,
                    "BitOr": lambda: a | b,
                    "BitAnd": lambda: a & b,
                }.get(op, lambda: self._bad(f"operator {op}"))()
            raise self.fail(f"operator {op} on a run-time value")
        if isinstance(e, ast.UnaryOp):
            v = self.expr(e.operand)
            if isinstance(e.op, ast.Not):
                return self.lnot(self.truth(v))
            if isinstance(e.op, ast.USub):
                if isinstance(v, Dyn | Choice):
                    return self.arith("sub", 0, v)
                return -v
            if isinstance(e.op, ast.UAdd):
                return v
            if not isinstance(v, Dyn | Choice):
                return ~v
            raise self.fail("operator ~ on a run-time value")
        if isinstance(e, ast.BoolOp):
            return self.boolop(e)
        if isinstance(e, ast.Compare):
            result: object = True
            left = self.expr(e.left)
            for op, right_node in zip(e.ops, e.comparators, strict=True):
                right = self.expr(right_node)
                result = self.land(result, self.compare(type(op), left, right))
                left = right
            return result
        if isinstance(e, ast.IfExp):
            cond = self.truth(self.expr(e.test))
            if isinstance(cond, bool):
                return self.expr(e.body if cond else e.orelse)
            saved = self.pc
            self.pc = self.land(saved, cond)
            a = self.expr(e.body) if self.pc is not False else NOTHING
            self.pc = self.land(saved, self.lnot(cond))
            b = self.expr(e.orelse) if self.pc is not False else NOTHING
            self.pc = saved
            return self.select(cond, a, b)
        if isinstance(e, ast.Tuple):
            return tuple(self.elements(e.elts))
        if isinstance(e, ast.List):
            return self.elements(e.elts)
        if isinstance(e, ast.Set):
            items = self.elements(e.elts)
            if not _is_static(items):
                raise self.fail("a set of run-time values")
            return set(items)
        if isinstance(e, ast.Dict):
            out: dict[object, object] = {}
            for k, v in zip(e.keys, e.values, strict=True):
                if k is None:
                    out.update(self.expr(v))
                    continue
                key = self.expr(k)
                if not _is_static(key):
                    raise self.fail("a run-time dict key")
                out[key] = self.expr(v)
            return out
        if isinstance(e, ast.Subscript):
            return self.subscript(self.expr(e.value), e.slice)
        if isinstance(e, ast.Call):
            fn = self.expr(e.func)
            args = self.elements(e.args)
            kwargs: dict[str, object] = {}
            for kw in e.keywords:
                if kw.arg is None:
                    raise self.fail("**kwargs")
                kwargs[kw.arg] = self.expr(kw.value)
            return self.call(fn, args, kwargs)
        if isinstance(e, ast.JoinedStr):
            return self.fstring(e)
        if isinstance(e, ast.Lambda):
            defaults = self.elements(e.args.defaults)
            return Closure(e, self.frame, defaults)
        if isinstance(e, ast.ListComp | ast.GeneratorExp | ast.SetComp | ast.DictComp):
            return self.comprehension(e)
        if isinstance(e, ast.Starred):
            raise self.fail("a starred expression here")
        raise self.fail(f"expression {type(e).__name__}")

    def elements(self, nodes: list[ast.expr]) -> list[object]:
        out: list[object] = []
        for node in nodes:
            if isinstance(node, ast.Starred):
                out.extend(self.static_iter(self.expr(node.value)))
            else:
                out.append(self.expr(node))
        return out

    def boolop(self, e: ast.BoolOp) -> object:
        value = self.expr(e.values[0])
        saved = self.pc
        for node in e.values[1:]:
            t = self.truth(value)
            go_on = t if isinstance(e.op, ast.And) else self.lnot(t)
            if go_on is False:
                break
            self.pc = self.land(saved, go_on)
            nxt = self.expr(node)
            self.pc = saved
            value = self.select(go_on, nxt, value)
        return value

    def subscript(self, container: object, index_node: ast.expr) -> object:
        if isinstance(index_node, ast.Slice):
            parts = [self.expr(p) if p is not None else None for p in
                     (index_node.lower, index_node.upper, index_node.step)]  # fmt: skip
            if not _is_static(parts) or isinstance(container, Dyn | Choice | DynMap):
                raise self.fail("a run-time slice")
            return container[slice(*parts)]  # type: ignore[index]
        index = self.expr(index_node)
        if isinstance(container, Choice):
            return self.lift(lambda c: self.subscript_value(c, index), container)
        return self.subscript_value(container, index)

    def subscript_value(self, container: object, index: object) -> object:
        if isinstance(index, Choice):
            return self.lift(lambda i: self.subscript_value(container, i), index)
        if isinstance(container, DynMap):
            if isinstance(index, Dyn):
                raise self.fail("a run-time key looked up in the push / spec mapping")
            try:
                return container[index]
            except RuleError as e:
                raise self.fail(str(e)) from None
        if isinstance(container, dict) and isinstance(index, Msg):
            hits = self.key_hits(container, index)
            if not hits:
                return 0
            found: object = NOTHING
            for k, hit in hits.items():
                found = self.select(hit, container[k], found)
            return found
        if isinstance(container, list | tuple) and isinstance(index, Dyn):
            n = len(container)
            if n == 0:
                raise self.fail("run-time index into an empty sequence")
            self.dyn_index_check(index, n)
            value: object = container[-1]
            for i in range(n - 1):
                hit = self.lor(self.compare(ast.Eq, index, i), self.compare(ast.Eq, index, i - n))
                value = self.select(hit, container[i], value)
            return value
        if isinstance(index, Dyn) or isinstance(container, Dyn | Poison):
            raise self.fail("a run-time subscript")
        try:
            return container[index]  # type: ignore[index]
        except (KeyError, IndexError, TypeError) as e:
            raise self.fail(f"subscript {index!r}: {type(e).__name__}") from None

    def fstring(self, e: ast.JoinedStr) -> object:
        parts: list[object] = []
        for value in e.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
                continue
            assert isinstance(value, ast.FormattedValue)
            v = self.expr(value.value)
            spec = ""
            if value.format_spec is not None:
                spec_value = self.fstring(value.format_spec)
                if not isinstance(spec_value, str):
                    raise self.fail("a run-time format spec")
                spec = spec_value
            parts.extend(self.format_value(v, value.conversion, spec))
        merged: list[object] = []
        for p in parts:
            if isinstance(p, str) and merged and isinstance(merged[-1], str):
                merged[-1] += p  # type: ignore[operator]
            else:
                merged.append(p)
        if all(isinstance(p, str) for p in merged):
            return "".join(merged)  # type: ignore[arg-type]
        return Msg(merged)

    def format_value(self, v: object, conversion: int, spec: str) -> list[object]:
        if isinstance(v, Msg):
            return list(v.parts)
        if _is_static(v) and not isinstance(v, Msg):
            if conversion == ord("r"):
                v = repr(v)
            elif conversion == ord("s"):
                v = str(v)
            return [format(v, spec)]
        if spec:
            raise self.fail("a format spec on a run-time value")
        if isinstance(v, Dyn):
            return [v]
        if isinstance(v, Choice):
            return [CStr(self.c_string_choice(v))]
        if isinstance(v, list | tuple):
            out: list[object] = ["[" if isinstance(v, list) else "("]
            for i, x in enumerate(v):
                if i:
                    out.append(", ")
                out.extend(self.format_value(x, ord("r"), ""))
            if isinstance(v, tuple) and len(v) == 1:
                out.append(",")
            out.append("]" if isinstance(v, list) else ")")
            return out
        raise self.fail(f"formatting a {type(v).__name__}")

    def c_string_choice(self, v: object) -> str:
        if isinstance(v, Choice):
            return f"({v.cond.c} ? {self.c_string_choice(v.a)} : {self.c_string_choice(v.b)})"
        if isinstance(v, str):
            return _c_string(v)
        if isinstance(v, int) and not isinstance(v, bool):
            return _c_string(str(v))
        raise self.fail(f"formatting a choice of {type(v).__name__}")

    def comprehension(self, e: ast.ListComp | ast.GeneratorExp | ast.SetComp | ast.DictComp,
                      first: object = NOTHING) -> object:  # fmt: skip
        if first is NOTHING:
            first = self.expr(e.generators[0].iter)  # in the enclosing scope, as Python does
        if isinstance(first, Choice):
            return self.lift(lambda it: self.comprehension(e, it), first)
        frame = Frame({}, self.frame, self.frame.globals)
        self.frames.append(frame)
        results: list[tuple[object, object, object]] = []  # (filter, key / element, value)
        saved = self.pc
        try:
            self._generators(e, list(e.generators), True, results, first)
        finally:
            self.frames.pop()
            self.pc = saved
        dyn_filter = any(f is not True for f, _, _ in results)
        if isinstance(e, ast.SetComp):
            if not dyn_filter and _is_static([x for _, x, _ in results]):
                return {x for _, x, _ in results}
            presence: dict[object, object] = {}
            for f, x, _ in results:
                if not _is_static(x):
                    raise self.fail("a set of run-time values")
                presence[x] = self.lor(presence.get(x, False), f)
            return DynSet(presence)
        if dyn_filter:
            raise self.fail("a list, tuple or dict comprehension filtered on a run-time value")
        if isinstance(e, ast.DictComp):
            out: dict[object, object] = {}
            for _, k, v in results:
                if not _is_static(k):
                    raise self.fail("a run-time dict key")
                out[k] = v
            return out
        return [x for _, x, _ in results]

    def _generators(
        self,
        e: Any,
        gens: list[ast.comprehension],
        filt: object,
        results: list[tuple[object, object, object]],
        first: object,
    ) -> None:
        base = self.pc
        if not gens:
            self.pc = self.land(base, filt)
            if isinstance(e, ast.DictComp):
                results.append((filt, self.expr(e.key), self.expr(e.value)))
            else:
                results.append((filt, self.expr(e.elt), None))
            self.pc = base
            return
        gen = gens[0]
        iterable = first if first is not NOTHING else self.expr(gen.iter)
        for item in self.static_iter(iterable):
            self.assign(gen.target, item)
            here: object = filt
            for test in gen.ifs:
                self.pc = self.land(base, here)
                here = self.land(here, self.truth(self.expr(test)))
                self.pc = base
                if here is False:
                    break
            if here is not False:
                self._generators(e, gens[1:], here, results, NOTHING)

    # ---- calls ------------------------------------------------------------------------

    def call(self, fn: object, args: list[object], kwargs: dict[str, object]) -> object:
        if isinstance(fn, Choice):
            return self.lift(lambda f: self.call(f, args, kwargs), fn)
        if isinstance(fn, Closure):
            return self.inline(fn.node, args, kwargs, {}, fn.frame, fn.frame.globals, fn.defaults)
        handler = self.builtin(fn)
        native = not isinstance(fn, types.FunctionType) or handler is not None
        if native and any(isinstance(a, Choice) for a in [*args, *kwargs.values()]):
            i = (
                next(i for i, a in enumerate(args) if isinstance(a, Choice))
                if any(isinstance(a, Choice) for a in args)
                else None
            )
            if i is None:
                raise self.fail("a run-time choice passed by keyword")
            return self.lift(lambda *a: self.call(fn, list(a), kwargs), *args)
        if handler is not None:
            return handler(args, kwargs)
        if isinstance(fn, types.FunctionType):
            if _is_static(args) and _is_static(kwargs):
                try:
                    return fn(*args, **kwargs)
                except ValueError as e:
                    self.raise_exc(Exc(ValueError, Msg([str(e)])))
                    return NOTHING
                except Exception as e:  # reported as a translation failure
                    raise self.fail(f"{fn.__qualname__}: {type(e).__name__}: {e}") from None
            node = _function_ast(fn)
            cells = {
                name: cell.cell_contents
                for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=True)
            }
            return self.inline(node, args, kwargs, cells, None, fn.__globals__,
                               list(fn.__defaults__ or ()), fn.__kwdefaults__ or {})  # fmt: skip
        if isinstance(fn, type) and issubclass(fn, ValueError):
            if len(args) != 1 or kwargs:
                raise self.fail("ValueError takes one message")
            msg = args[0]
            if isinstance(msg, str):
                msg = Msg([msg])
            if not isinstance(msg, Msg):
                raise self.fail("ValueError of something other than a string")
            return Exc(fn, msg)
        if callable(fn) and not any(
            isinstance(a, Choice | Poison) for a in [*args, *kwargs.values()]
        ):
            try:
                return fn(*args, **kwargs)
            except RuleError as e:
                raise self.fail(
                    f"{getattr(fn, '__name__', fn)}() on a run-time value: {e}"
                ) from None
            except Exception as e:
                raise self.fail(f"{getattr(fn, '__name__', fn)}: {type(e).__name__}: {e}") from None
        raise self.fail(f"call of {fn!r}")

    def inline(
        self,
        node: ast.AST,
        args: list[object],
        kwargs: dict[str, object],
        cells: dict[str, object],
        parent: Frame | None,
        globs: dict[str, Any],
        defaults: list[object],
        kwdefaults: dict[str, object] | None = None,
    ) -> object:
        assert isinstance(node, ast.FunctionDef | ast.Lambda)
        a = node.args
        if a.kwarg is not None or a.posonlyargs:
            raise self.fail("**kwargs / positional-only parameters")
        names = [p.arg for p in a.args]
        bound: dict[str, object] = dict(cells)
        positional = list(args)
        for i, name in enumerate(names):
            if positional:
                bound[name] = positional.pop(0)
            elif name in kwargs:
                bound[name] = kwargs.pop(name)
            else:
                j = i - (len(names) - len(defaults))
                if j < 0:
                    raise self.fail(f"missing argument {name}")
                bound[name] = defaults[j]
        if a.vararg is not None:
            bound[a.vararg.arg] = tuple(positional)
        elif positional:
            raise self.fail("too many arguments")
        for p in a.kwonlyargs:
            if p.arg in kwargs:
                bound[p.arg] = kwargs.pop(p.arg)
            elif kwdefaults and p.arg in kwdefaults:
                bound[p.arg] = kwdefaults[p.arg]
            else:
                raise self.fail(f"missing keyword argument {p.arg}")
        if kwargs:
            raise self.fail(f"unexpected keyword arguments {sorted(kwargs)}")
        if len(self.frames) > 64:
            raise self.fail("calls nested too deeply (recursion?)")
        frame = Frame(bound, parent, globs)
        self.frames.append(frame)
        entry_pc, where = self.pc, self.where
        try:
            if isinstance(node, ast.Lambda):
                return self.expr(node.body)
            self.run_block(node.body)
            if self.pc is not False:  # falls off the end: returns None
                frame.ret = self.select(self.pc, None, frame.ret)
            self.join_pending(frame.pending)
            return None if frame.ret is NOTHING else frame.ret
        finally:
            self.frames.pop()
            self.where = where
            if isinstance(node, ast.Lambda):
                self.pc = entry_pc

    def builtin(self, fn: object) -> Callable[[list[object], dict[str, object]], object] | None:
        table: dict[object, Callable[[list[object], dict[str, object]], object]] = {
            int: self._int,
            min: lambda a, k: self._minmax(a, k, ast.Lt),
            max: lambda a, k: self._minmax(a, k, ast.Gt),
            sum: self._sum,
            any: lambda a, k: self._anyall(a, True),
            all: lambda a, k: self._anyall(a, False),
            divmod: lambda a, k: (self.arith("div", a[0], a[1]), self.arith("mod", a[0], a[1])),
            abs: self._abs,
            np.prod: self._prod,
            bool: lambda a, k: self.truth(a[0]),
        }
        try:
            return table.get(fn)
        except TypeError:
            return None

    def _int(self, args: list[object], kwargs: dict[str, object]) -> object:
        if len(args) != 1 or kwargs:
            raise self.fail("int() with a base")
        v = args[0]
        if isinstance(v, Dyn | Choice):
            return self.intval(v)
        return int(v)  # type: ignore[call-overload]

    def _items(self, args: list[object]) -> list[object]:
        return self.static_iter(args[0]) if len(args) == 1 else list(args)

    def _minmax(self, args: list[object], kwargs: dict[str, object], op: type) -> object:
        if kwargs:
            raise self.fail("min / max with keywords")
        items = self._items(args)
        if not items:
            raise self.fail("min / max of nothing")
        best = items[0]
        for x in items[1:]:
            better = self.compare(op, x, best)
            best = self.select(better, x, best)
        return best

    def _sum(self, args: list[object], kwargs: dict[str, object]) -> object:
        total: object = args[1] if len(args) > 1 else kwargs.get("start", 0)
        for x in self.static_iter(args[0]):
            total = self.arith("add", total, x)
        return total

    def _prod(self, args: list[object], kwargs: dict[str, object]) -> object:
        if set(kwargs) - {"dtype"} or kwargs.get("dtype", object) is not object:
            raise self.fail("numpy.prod other than with dtype=object (exact integers)")
        total: object = 1
        for x in self.static_iter(args[0]):
            total = self.arith("mul", total, x)
        return total

    def _anyall(self, args: list[object], is_any: bool) -> object:
        acc: object = not is_any
        for x in self.static_iter(args[0]):
            t = self.truth(x)
            acc = self.lor(acc, t) if is_any else self.land(acc, t)
        return acc

    def _abs(self, args: list[object], kwargs: dict[str, object]) -> object:
        v = args[0]
        if isinstance(v, Dyn | Choice):
            return self.select(self.compare(ast.Lt, v, 0), self.arith("sub", 0, v), v)
        return abs(v)  # type: ignore[arg-type]


def _canonical(text: str) -> int | None:
    try:
        return int(text) if text.lstrip("-").isdigit() else None
    except ValueError:
        return None


def _as_load(target: ast.expr) -> ast.expr:
    node = ast.parse(ast.unparse(target), mode="eval").body
    return ast.copy_location(node, target)


def _c_string(text: str) -> str:
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= ord(ch) < 127 and ch != "?":
            out.append(ch)
        else:
            out.extend(f"\\{b:03o}" for b in ch.encode())
    return '"' + "".join(out) + '"'


def translate(
    kernel: str,
    fn: Callable[..., object] | None,
    push: DynMap,
    spec: DynMap,
    shape: Callable[[Translator, object], list[str]],
    absent: str,
) -> list[str]:
    """The C statements of one rule: `fn(push, spec)` translated, then `shape` turning
    its value into the assignments of the outputs. `fn` None: a rule that always refuses
    with `absent`."""
    t = Translator(kernel)
    if fn is None:
        t.emit_fail(Msg([absent]))
        return t.lines
    t.frames.append(Frame({}, None, {"__name__": "rule"}))
    t.where = f"{getattr(fn, '__qualname__', fn)}"
    value = t.call(fn, [push, spec], {})
    if t.pc is not False:
        t.lines.extend(shape(t, value))
    return t.lines


HELPERS = r"""
/* checked 64-bit arithmetic of the translated rules: an overflow or a division by zero
   on a live path (pc != 0) refuses the dispatch; on a dead path it gives 0 */
static int64_t qx_bad(qvk_rule_ctx *X, int64_t pc, const char *what) {
  if (pc && !X->failed) {
    X->failed = 1;
    snprintf(X->msg, sizeof X->msg, "kernel %s: %s in its rules with these push constants",
             X->kernel, what);
  }
  return 0;
}
static int64_t qx_add(qvk_rule_ctx *X, int64_t pc, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return qx_bad(X, pc, "a 64-bit integer overflow");
  return r;
}
static int64_t qx_sub(qvk_rule_ctx *X, int64_t pc, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return qx_bad(X, pc, "a 64-bit integer overflow");
  return r;
}
static int64_t qx_mul(qvk_rule_ctx *X, int64_t pc, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return qx_bad(X, pc, "a 64-bit integer overflow");
  return r;
}
static int64_t qx_div(qvk_rule_ctx *X, int64_t pc, int64_t a, int64_t b) {
  if (b == 0) return qx_bad(X, pc, "an integer division by zero");
  if (a == INT64_MIN && b == -1) return qx_bad(X, pc, "a 64-bit integer overflow");
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) q--;
  return q;
}
static int64_t qx_mod(qvk_rule_ctx *X, int64_t pc, int64_t a, int64_t b) {
  if (b == 0) return qx_bad(X, pc, "an integer division by zero");
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
__attribute__((format(printf, 3, 4)))
static void qx_fail(qvk_rule_ctx *X, int64_t pc, const char *fmt, ...) {
  if (!pc || X->failed) return;
  X->failed = 1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(X->msg, sizeof X->msg, fmt, ap);
  va_end(ap);
}
"""


def _maps(spec: Any) -> tuple[DynMap, DynMap]:
    ints = {n for n, kind in spec.push if kind != "f32"}
    spec_names = [n for n, _ in spec.spec]
    return (
        DynMap("P", [n for n, _ in spec.push], ints),
        DynMap("S", spec_names, set(spec_names)),
    )


def scalar_rule(cname: str, spec: Any, fn: Callable[..., object]) -> list[str]:
    """C function `cname` of an integer rule `fn(push, spec)` of kernel `spec` (a kernel
    variant's `applies`): its value in A[0]."""
    push, specs = _maps(spec)

    def shape(t: Translator, value: object) -> list[str]:
        return [f"  A[0] = {t.c(t.intval(value))};"]

    body = translate(spec.name, fn, push, specs, shape, "")
    lines = [
        f"static int {cname}(const int64_t *P, const int64_t *S, int64_t *A, qvk_rule_ctx *X) {{",
        "  (void)P; (void)S; (void)A;",
    ]
    lines.extend(body)
    lines.append("  return X->failed ? -1 : 0;")
    lines.append("}")
    return lines


def kernel_rules(index: int | str, spec: Any) -> list[str]:
    """C functions `rules_extents_<index>` and `rules_workgroups_<index>` of a KernelSpec."""
    push_names = [n for n, _ in spec.push]
    ints = {n for n, kind in spec.push if kind != "f32"}
    spec_names = [n for n, _ in spec.spec]
    push, specs = DynMap("P", push_names, ints), DynMap("S", spec_names, set(spec_names))
    bindings = [b.name for b in spec.bindings]

    def extents_shape(t: Translator, value: object) -> list[str]:
        out = []
        for j, name in enumerate(bindings):
            try:
                v = t.intval(t.subscript_value(value, name))
            except RuleError as e:
                raise RuleError(f"kernel {spec.name}: extents of binding {name}: {e}") from None
            out.append(f"  E[{j}] = {t.c(v)};")
        return out

    def workgroups_shape(t: Translator, value: object) -> list[str]:
        items = t.static_iter(value)
        if len(items) != 3:
            raise RuleError(f"kernel {spec.name}: workgroups gives {len(items)} counts, not 3")
        return [f"  W[{j}] = {t.c(t.intval(v))};" for j, v in enumerate(items)]

    lines = []
    for what, fn, out, shape in (
        ("extents", spec.extents, "E", extents_shape),
        ("workgroups", spec.workgroups, "W", workgroups_shape),
    ):
        body = translate(spec.name, fn, push, specs, shape,
                         f"kernel {spec.name} declares no buffer extents")  # fmt: skip
        lines.append(
            f"static int rules_{what}_{index}(const int64_t *P, const int64_t *S, int64_t *{out}, "
            "qvk_rule_ctx *X) {"
        )
        lines.append(f"  (void)P; (void)S; (void){out};")
        lines.extend(body)
        lines.append("  return X->failed ? -1 : 0;")
        lines.append("}")
    return lines
