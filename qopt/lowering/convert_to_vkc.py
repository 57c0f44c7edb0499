"""`convert-to-vkc`: aten + qfused + quant (the mid level) -> vkc kernel calls.

The pass rewrites the body of every function into straight-line vkc code, in
stages (each stage's invariant is what the next one relies on):

1. Constant folding. An op whose operands are all compile-time constants
   (weights, masks, rope tables, iota, weight dequantization) is evaluated with
   the reference interpreter; its value stays a numpy array and becomes a
   `vkc.constant` only where a kernel reads it.
2. Lowering, op by op (`RULES`): each remaining op becomes one or more
   dispatches of the registered kernels (qopt/backends/vulkan/registry.py):
   fused quantized ops onto their fused kernels with weights repacked by
   packing.py; float ops onto the generic kernels; views that keep the
   row-major order onto `vkc.view`, every other layout change (permute,
   transpose, slice, cat, expand) onto `copy_strided`; reductions over a dim
   other than the last through a transposing copy. An op without a rule is a
   QoptError naming the op, its location and what to do. A kernel that indexes
   a table with values read from a buffer (gather_rows, the embeddings) gets its
   own status buffer per dispatch (`vkc.alloc {status, what = "'aten.embedding'
   at model.py:12"}`, added by `Lowering.dispatch`): an out-of-range index is an
   error naming that op at run time, never silent zeros.
3. Buffer planning: transient buffers whose lifetimes do not overlap share a
   memory slot (`vkc.alloc {slot = n}`; status buffers keep their own memory);
   the function records its planned and unplanned bytes (`vkc.planned_bytes`,
   `vkc.unplanned_bytes`).
4. Barriers: a `vkc.barrier` goes before each dispatch that touches memory an
   earlier dispatch since the last barrier wrote (or read, for a write).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    f32,
    i32,
    i64,
)
from xdsl.interpreter import Interpreter
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass

from qopt.dialects import vkc
from qopt.dialects.dtypes import numpy_dtype, tensor_type, ui32
from qopt.errors import QoptError, where

log = logging.getLogger("qopt.vkc")

NP_OF = {"f32": np.dtype(np.float32), "i32": np.dtype(np.int32), "u32": np.dtype(np.uint32)}
ELEM_OF = {"f32": f32, "i32": i32, "u32": ui32}


@dataclass(eq=False)
class Buf:
    """A tensor living in a device buffer (row-major, ABI element type)."""

    value: SSAValue
    shape: tuple[int, ...]
    dtype: str  # f32 | i32 | u32

    @property
    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


Value = Buf | np.ndarray


def _shape(value: SSAValue) -> tuple[int, ...]:
    type = value.type
    assert isinstance(type, TensorType)
    return tuple(type.get_shape())


def _np_dtype(value: SSAValue) -> np.dtype:
    type = value.type
    assert isinstance(type, TensorType)
    return numpy_dtype(type.get_element_type())


def abi_dtype(value: SSAValue) -> str:
    """The buffer dtype a tensor travels as: f32 for floats, i32 otherwise."""
    return "f32" if _np_dtype(value).kind == "f" else "i32"


def unsupported(op: Operation, what: str, remedy: str) -> QoptError:
    return QoptError(f"convert-to-vkc: {where(op)}: {what}; {remedy}")


@dataclass
class Lowering:
    """Builds the vkc body of one function."""

    module: ModuleOp
    ops: list[Operation] = field(default_factory=list)
    values: dict[SSAValue, Value] = field(default_factory=dict)
    kernel_ops: dict[tuple[str, tuple[tuple[str, int], ...]], vkc.KernelOp] = field(
        default_factory=dict
    )
    constant_cache: dict[tuple[int, str, str], Buf] = field(default_factory=dict)
    keep_alive: list[np.ndarray] = field(default_factory=list)
    counter: int = 0
    current: Operation | None = None

    # ----- building blocks -------------------------------------------------------------

    def fresh(self, hint: str) -> str:
        self.counter += 1
        return f"{hint}_{self.counter}"

    def alloc(self, shape: Sequence[int], dtype: str) -> Buf:
        shape = tuple(int(d) for d in shape) or (1,)
        op = vkc.AllocOp(result_types=[vkc.BufferType.get(shape, ELEM_OF[dtype])])
        self.ops.append(op)
        return Buf(op.result, shape, dtype)

    def status_buffer(self) -> Buf:
        """A fresh one-word index status buffer for one dispatch, naming the op being
        lowered (and its source location) for the run-time error."""
        what = where(self.current) if self.current is not None else "a Vulkan dispatch"
        op = vkc.AllocOp(
            properties={"status": UnitAttr(), "what": StringAttr(what)},
            result_types=[vkc.BufferType.get((1,), ui32)],
        )
        self.ops.append(op)
        return Buf(op.result, (1,), "u32")

    def view(self, buf: Buf, shape: Sequence[int]) -> Buf:
        shape = tuple(int(d) for d in shape) or (1,)
        if shape == buf.shape:
            return buf
        type = buf.value.type
        assert isinstance(type, vkc.BufferType)
        new_type = vkc.BufferType.get(shape, type.element_type, type.layout.data)
        op = vkc.ViewOp(operands=[buf.value], result_types=[new_type])
        self.ops.append(op)
        return Buf(op.result, shape, buf.dtype)

    def constant(self, array: np.ndarray, dtype: str, layout: str = vkc.ROW_MAJOR) -> Buf:
        """A constant buffer holding `array` converted to the ABI type `dtype`
        (u32 arrays are packed words, kept bit for bit)."""
        from qopt.resources import make_resource

        key = (id(array), dtype, layout)
        if key in self.constant_cache:
            return self.constant_cache[key]
        self.keep_alive.append(array)
        source = np.asarray(array)
        if dtype == "u32":
            words = np.ascontiguousarray(source).reshape(-1).view(np.uint32)
        elif dtype == "i32":
            from qopt.interpreters.vkc import narrow

            words = narrow(source, np.dtype(np.int32), "a constant")
        else:
            words = np.ascontiguousarray(source, dtype=np.float32).reshape(-1)
        shape = tuple(source.shape) if dtype != "u32" and source.ndim else (words.size,)
        words = words if words.size else np.zeros(1, words.dtype)
        shape = shape if words.size == int(np.prod(shape, dtype=np.int64)) else (words.size,)
        type = tensor_type(words.dtype, [words.size])
        attr = make_resource(self.fresh("vkc_const"), words, type)
        op = vkc.ConstantOp(
            properties={"value": attr},
            result_types=[vkc.BufferType.get(shape, ELEM_OF[dtype], layout)],
        )
        self.ops.append(op)
        buf = Buf(op.result, shape, dtype)
        self.constant_cache[key] = buf
        return buf

    def buffer(self, value: SSAValue) -> Buf:
        """The operand `value` as a device buffer (constants are uploaded)."""
        found = self.values[value]
        if isinstance(found, Buf):
            return found
        array = np.asarray(found)
        buf = self.constant(array, abi_dtype(value))
        self.values[value] = buf
        return buf

    def kernel_symbol(self, name: str, spec_values: dict[str, int]) -> vkc.KernelOp:
        from qopt.backends.vulkan.registry import kernels
        from qopt.backends.vulkan.spirv import kernel_source

        spec = kernels().get(name)
        if spec is None:
            assert self.current is not None
            raise unsupported(
                self.current,
                f"needs the Vulkan kernel '{name}', which is not registered",
                "add the kernel to qopt/backends/vulkan/kernel_specs.py",
            )
        full = {n: int(spec_values.get(n, default)) for n, default in spec.spec}
        key = (name, tuple(sorted(full.items())))
        if key in self.kernel_ops:
            return self.kernel_ops[key]
        try:
            source_hash = hashlib.sha256(kernel_source(spec.glsl).encode()).hexdigest()[:16]
        except QoptError:
            source_hash = "missing"
        suffix = "_".join(str(v) for v in full.values() if v != 0)
        symbol = f"{name}_{len([k for k in self.kernel_ops if k[0] == name])}"
        del suffix
        op = vkc.KernelOp(
            properties={
                "sym_name": StringAttr(symbol),
                "kernel": StringAttr(name),
                "glsl": StringAttr(spec.glsl),
                "entry": StringAttr("main"),
                "hash": StringAttr(source_hash),
                "local_size": DenseArrayBase.from_list(i64, list(spec.local_size)),
                "spec": DictionaryAttr({k: IntegerAttr(v, i64) for k, v in full.items()}),
                "bindings": ArrayAttr(
                    [
                        StringAttr(f"{b.name}:{b.dtype}" + (":w" if b.writes else ""))
                        for b in spec.bindings
                    ]
                ),
                "push": ArrayAttr([StringAttr(f"{n}:{k}") for n, k in spec.push]),
            }
        )
        self.kernel_ops[key] = op
        return op

    def dispatch(
        self,
        name: str,
        buffers: Sequence[Buf] | dict[str, Buf],
        push: Sequence[int | float] | dict[str, int | float],
        spec_values: dict[str, int] | None = None,
    ) -> None:
        """Dispatch kernel `name`: buffers in binding order (or by binding name),
        push constants in block order (or by name); workgroups from the kernel's
        `workgroups(push, spec)`. A kernel's status binding (always the last) gets a
        fresh status buffer here (`status_buffer`): the rules leave it out."""
        from qopt.backends.vulkan.registry import kernels

        kernel_op = self.kernel_symbol(name, spec_values or {})
        spec = kernels()[name]
        binding_names = [b.name for b in spec.bindings]
        push_names = [n for n, _ in spec.push]
        status = spec.status_index
        if status is not None:
            status_name = binding_names[status]
            if isinstance(buffers, dict):
                buffers = {**buffers, status_name: self.status_buffer()}
            elif len(buffers) == len(binding_names) - 1:
                buffers = [*buffers, self.status_buffer()]
        if not isinstance(buffers, dict):
            if len(buffers) != len(binding_names):
                raise QoptError(
                    f"convert-to-vkc: kernel {name} has bindings {binding_names}, "
                    f"the lowering gave {len(buffers)} buffers"
                )
            buffers = dict(zip(binding_names, buffers, strict=True))
        if not isinstance(push, dict):
            if len(push) != len(push_names):
                raise QoptError(
                    f"convert-to-vkc: kernel {name} has push constants {push_names}, "
                    f"the lowering gave {len(push)} values"
                )
            push = dict(zip(push_names, push, strict=True))
        missing = [n for n in binding_names if n not in buffers]
        missing += [n for n in push_names if n not in push]
        extra = [n for n in buffers if n not in binding_names]
        extra += [n for n in push if n not in push_names]
        if missing or extra:
            raise QoptError(
                f"convert-to-vkc: internal mismatch with kernel {name}: missing {missing}, "
                f"unexpected {extra}"
            )
        values = kernel_op.spec_values()
        groups = tuple(int(g) for g in spec.workgroups(push, values))
        push_attrs: dict[str, Attribute] = {}
        for pname, kind in spec.push:
            v = push[pname]
            if kind == "f32":
                push_attrs[pname] = FloatAttr(float(np.float32(v)), f32)
            elif kind == "u32":
                push_attrs[pname] = IntegerAttr(int(v), i64)
            else:
                push_attrs[pname] = IntegerAttr(int(v), i32)
        op = vkc.DispatchOp(
            operands=[[buffers[b.name].value for b in spec.bindings]],
            properties={
                "kernel": SymbolRefAttr(kernel_op.sym_name.data),
                "push": DictionaryAttr(push_attrs),
                "workgroups": DenseArrayBase.from_list(i64, [max(1, g) for g in groups]),
            },
        )
        self.ops.append(op)


# ----- the rules -------------------------------------------------------------------------

Rule = Callable[[Lowering, Operation], Sequence[Value]]
RULES: dict[str, Rule] = {}


def rule(*names: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for name in names:
            if name in RULES:
                raise ValueError(f"two convert-to-vkc rules for {name}")
            RULES[name] = fn
        return fn

    return register


# (the rules themselves live in qopt/lowering/vkc_rules.py, imported by the pass)


# ----- the pass ----------------------------------------------------------------------------


def _fold(interpreter: Interpreter, op: Operation, args: Sequence[Any]) -> list[np.ndarray]:
    results = interpreter.run_op(op, tuple(args))
    return [np.asarray(r) for r in results]


def lower_function(module: ModuleOp, function: func.FuncOp) -> dict[str, int]:
    """Rewrite `function`'s body into vkc ops (in place); returns memory stats."""
    from qopt.interpreters import make_interpreter
    from qopt.interpreters.builtin import constant_array
    from qopt.lowering import vkc_fused, vkc_rules  # noqa: F401  (fill RULES)

    lowering = Lowering(module)
    interpreter = make_interpreter(module)
    block = function.body.block
    for arg in block.args:
        type = arg.type
        assert isinstance(type, TensorType)
        dtype = abi_dtype(arg)
        shape = tuple(type.get_shape()) or (1,)
        op = vkc.InputOp(operands=[arg], result_types=[vkc.BufferType.get(shape, ELEM_OF[dtype])])
        lowering.ops.append(op)
        lowering.values[arg] = Buf(op.result, shape, dtype)

    returned: Sequence[SSAValue] = ()
    for op in list(block.ops):
        if isinstance(op, func.ReturnOp):
            returned = list(op.operands)
            break
        lowering.current = op
        if isinstance(op, arith.ConstantOp):
            lowering.values[op.result] = np.asarray(constant_array(op))
            continue
        operand_values = [lowering.values[o] for o in op.operands]
        if all(isinstance(v, np.ndarray) for v in operand_values):
            for result, value in zip(
                op.results, _fold(interpreter, op, operand_values), strict=True
            ):
                lowering.values[result] = value
            continue
        fn = RULES.get(op.name)
        if fn is None:
            raise unsupported(
                op,
                "has no Vulkan lowering",
                "run fuse-quant first, rewrite the model without this op, or add a rule "
                "to qopt/lowering/vkc_rules.py",
            )
        results = fn(lowering, op)
        for result, value in zip(op.results, results, strict=True):
            lowering.values[result] = value

    outputs: list[SSAValue] = []
    for value in returned:
        found = lowering.values[value]
        buf = found if isinstance(found, Buf) else lowering.buffer(value)
        type = value.type
        assert isinstance(type, TensorType)
        out = vkc.OutputOp(operands=[buf.value], result_types=[type])
        lowering.ops.append(out)
        outputs.append(out.result)

    stats = plan_buffers(lowering.ops)
    symbols = {k.sym_name.data: k.kernel.data for k in lowering.kernel_ops.values()}
    ops = insert_barriers(lowering.ops, symbols)

    # Replace the body: new ops, then the return.
    old_ops = list(block.ops)
    for op in reversed(old_ops):
        op.detach()
    for op in ops:
        block.add_op(op)
    block.add_op(func.ReturnOp(*outputs))
    for op in old_ops:
        op.drop_all_references()
    for op in old_ops:
        op.erase(safe_erase=False)

    # Kernel symbols at the top of the module, before the function.
    body = module.body.block
    first = body.first_op
    for kernel_op in lowering.kernel_ops.values():
        if first is None:
            body.add_op(kernel_op)
        else:
            body.insert_op_before(kernel_op, first)
    function.attributes["vkc.planned_bytes"] = IntegerAttr(stats["planned"], i64)
    function.attributes["vkc.unplanned_bytes"] = IntegerAttr(stats["unplanned"], i64)
    return stats


def _root(value: SSAValue) -> SSAValue:
    while isinstance(value.owner, vkc.ViewOp):
        value = value.owner.source
    return value


def plan_buffers(ops: list[Operation]) -> dict[str, int]:
    """Give every transient buffer a memory slot shared with buffers whose
    lifetimes do not overlap (greedy, best fit); returns planned/unplanned bytes."""
    first: dict[SSAValue, int] = {}
    last: dict[SSAValue, int] = {}
    allocs: list[vkc.AllocOp] = []
    for index, op in enumerate(ops):
        if isinstance(op, vkc.AllocOp):
            if not op.is_status:  # a status buffer keeps its own memory (never a slot)
                allocs.append(op)
            continue
        if isinstance(op, vkc.DispatchOp | vkc.OutputOp):
            for operand in op.operands:
                root = _root(operand)
                if isinstance(root.owner, vkc.AllocOp):
                    first.setdefault(root, index)
                    last[root] = len(ops) if isinstance(op, vkc.OutputOp) else index
    slots: list[list[int]] = []  # [size, busy until]
    unplanned = 0
    order = sorted(
        (a for a in allocs if a.result in first), key=lambda a: (first[a.result], -_bytes(a))
    )
    for alloc in order:
        need = _bytes(alloc)
        unplanned += need
        start, end = first[alloc.result], last[alloc.result]
        free = [i for i, (_, busy) in enumerate(slots) if busy < start]
        fitting = [i for i in free if slots[i][0] >= need]
        if fitting:
            chosen = min(fitting, key=lambda i: slots[i][0])
        elif free:
            chosen = max(free, key=lambda i: slots[i][0])
        else:
            slots.append([0, -1])
            chosen = len(slots) - 1
        slots[chosen][0] = max(slots[chosen][0], need)
        slots[chosen][1] = end
        alloc.properties["slot"] = IntegerAttr(chosen, i64)
    planned = sum(size for size, _ in slots)
    log.info("buffer plan: %d bytes in %d slots (unplanned %d)", planned, len(slots), unplanned)
    return {"planned": planned, "unplanned": unplanned, "slots": len(slots)}


def _bytes(alloc: vkc.AllocOp) -> int:
    type = alloc.result.type
    assert isinstance(type, vkc.BufferType)
    return type.nbytes


def _memory(value: SSAValue) -> object:
    root = _root(value)
    owner = root.owner
    if isinstance(owner, vkc.AllocOp) and owner.slot is not None:
        return ("slot", owner.slot.value.data)
    return root


def insert_barriers(ops: list[Operation], symbols: dict[str, str]) -> list[Operation]:
    """A barrier before each dispatch with a read-after-write, write-after-read or
    write-after-write hazard on memory touched since the last barrier."""
    from qopt.backends.vulkan.registry import kernels

    out: list[Operation] = []
    written: set[object] = set()
    read: set[object] = set()
    table = kernels()
    for op in ops:
        if isinstance(op, vkc.DispatchOp):
            spec = table[symbols[op.kernel.root_reference.data]]
            reads = {
                _memory(v) for b, v in zip(spec.bindings, op.buffers, strict=True) if not b.writes
            }
            writes = {
                _memory(v) for b, v in zip(spec.bindings, op.buffers, strict=True) if b.writes
            }
            if reads & written or writes & (written | read):
                out.append(vkc.BarrierOp())
                written, read = set(), set()
            written |= writes
            read |= reads
        out.append(op)
    return out


@dataclass(frozen=True)
class ConvertToVkcPass(ModulePass):
    """Lower aten + qfused + quant to vkc kernel calls (see the module docstring)."""

    name = "convert-to-vkc"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        functions = [f for f in op.ops if isinstance(f, func.FuncOp)]
        for function in functions:
            if any(isinstance(o, vkc.DispatchOp | vkc.InputOp) for o in function.walk()):
                continue  # already at the vkc level
            lower_function(op, function)


__all__ = ["RULES", "Buf", "ConvertToVkcPass", "Lowering", "abi_dtype", "rule", "unsupported"]
