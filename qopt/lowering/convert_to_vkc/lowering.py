"""The machinery convert-to-vkc's rules share: `Lowering` (builds one function's vkc
body: buffers, constants, kernel symbols, dispatches), `Buf`, the rule tables'
types (`RuleTable`) and the kernel-call building blocks every family uses
(strided copies, unary and binary dispatches, dtype casts).

Every vkc op built here carries the location of the op being lowered
(`Lowering.current`), so a vkc-level error (a verifier message through
`qopt.errors.where`, a status buffer's `what`) names the user's source line.
Kernel interfaces come from the catalogue (qopt.kernels): buffers and push values
are checked against the kernel's declared bindings and push block, so a change of
interface shows as a clear error; op codes come from qopt.kernels.opcodes. A
`vkc.kernel` records the content hash of the GLSL it is compiled from (with its
generated op-code block: qopt.kernels.source); nothing comes from the backend.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseResourceAttr,
    DictionaryAttr,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.traits import SymbolTable

from qopt.dialects import vkc
from qopt.dialects.ml_program import GlobalOp
from qopt.dialects.tensors import dtype_of, numel, shape_of
from qopt.dtypes import tensor_type, ui32
from qopt.errors import QoptError, where
from qopt.kernels import KernelSpec, catalogue
from qopt.kernels.abi import narrow
from qopt.kernels.opcodes import BINARY_OPS, DTYPES, UNARY_OPS
from qopt.lowering import rules
from qopt.lowering.vkc_rewrite import (
    KernelKey,
    kernel_key,
    kernel_symbol_op,
    push_attributes,
    specialization,
)
from qopt.resources import make_resource, resource_references, weights_of

MAX_RANK = 6


@dataclass(eq=False)
class Buf:
    """A tensor living in a device buffer (row-major, ABI element type)."""

    value: SSAValue
    shape: tuple[int, ...]
    dtype: str  # f32 | i32 | u32 (qopt.kernels.abi)

    @property
    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


Value = Buf | np.ndarray
"""What a lowered value is: a device buffer, or a compile-time numpy array."""


def abi_dtype(value: SSAValue) -> str:
    """The buffer dtype a tensor travels as: f32 for floats, i32 otherwise."""
    return "f32" if dtype_of(value).kind == "f" else "i32"


def unsupported(op: Operation, what: str, remedy: str) -> QoptError:
    return QoptError(f"convert-to-vkc: {where(op)}: {what}; {remedy}")


@dataclass(frozen=True)
class Checkpoint:
    """A point of a `Lowering` to return to (`Lowering.checkpoint`, `rollback`)."""

    ops: int
    values: int
    operands: dict[SSAValue, Value]
    tables: dict[str, int]
    stores: int
    shared: int | None
    releases: int


@dataclass
class Lowering:
    """Builds the vkc body of one function."""

    module: ModuleOp
    ops: list[Operation] = field(default_factory=list)
    values: dict[SSAValue, Value] = field(default_factory=dict)
    kernel_ops: dict[KernelKey, vkc.KernelOp] = field(default_factory=dict)
    constant_cache: dict[tuple[int, str, str], Buf] = field(default_factory=dict)
    keep_alive: list[np.ndarray] = field(default_factory=list)
    counter: int = 0
    current: Operation | None = None
    """The op being lowered: every vkc op built now carries its location."""
    shared_constants: dict[tuple[str, ...], DenseResourceAttr] | None = None
    """Constant blobs by content, shared by every function the pass lowers (the
    methods of one module: a weight repacked the same way is stored once); None for
    a module with one function."""
    state_buffers: dict[str, Buf] = field(default_factory=dict)
    """The state buffer (`vkc.state`) of each global the function reads or writes."""
    in_place: set[Operation] = field(default_factory=set)
    """index_put / index_copy ops that write their state buffer in place (the cache
    update `global_load -> index_put -> global_store` of one global: state.py)."""
    kv_groups: dict[SSAValue, Buf] = field(default_factory=dict)
    """repeat_interleave results that sdpa reads as grouped key/value heads, by the
    buffer of their source (attention.py: no copy per query head)."""
    mask_bounds: dict[SSAValue, Buf] = field(default_factory=dict)
    """The `mask_bound` result of each attention mask value (attention.py: computed
    once, read by the sdpa of every layer)."""
    stores: list[tuple[str, SSAValue, Operation]] = field(default_factory=list)
    """State writes that are copies (global, stored value, the global_store), emitted
    after every other dispatch of the function (`state.finish`)."""
    releases: list[tuple[Operation, SSAValue]] = field(default_factory=list)
    """Constants a rule repacked (`release`), by the op whose rule asked: their blobs
    are dropped once that op is lowered (at what the next op's lowering does first:
    its checkpoint, a release or an emitted op)."""
    references: dict[str, int] | None = None
    """How many times the module names each blob (`resource_references`), counted at
    the first release."""

    # ----- undo (the host fallback) ----------------------------------------------------

    def checkpoint(self, op: Operation) -> Checkpoint:
        """What `rollback` needs to undo a rule's work on `op` (everything a rule
        adds is appended, so lengths and the operands' values are enough). The ops
        lowered before `op` are done: the constants their rules repacked are dropped."""
        self._drop_released()
        return Checkpoint(
            len(self.ops),
            len(self.values),
            {o: self.values[o] for o in op.operands if o in self.values},
            {
                name: len(getattr(self, name))
                for name in (
                    "constant_cache",
                    "kernel_ops",
                    "state_buffers",
                    "kv_groups",
                    "mask_bounds",
                )
            },
            len(self.stores),
            None if self.shared_constants is None else len(self.shared_constants),
            len(self.releases),
        )

    def rollback(self, mark: Checkpoint) -> None:
        """Undo what a rule did since `mark` (a rule that refused its op part way)."""
        dropped = self.ops[mark.ops :]
        del self.ops[mark.ops :]
        for op in reversed(dropped):
            op.drop_all_references()
        for key in list(self.values)[mark.values :]:
            del self.values[key]
        self.values.update(mark.operands)
        for name, count in mark.tables.items():
            table: dict[Any, Any] = getattr(self, name)
            for key in list(table)[count:]:
                del table[key]
        del self.stores[mark.stores :]
        del self.releases[mark.releases :]
        if self.shared_constants is not None and mark.shared is not None:
            for key in list(self.shared_constants)[mark.shared :]:
                del self.shared_constants[key]

    # ----- releasing repacked weights -----------------------------------------------

    def release(self, value: SSAValue) -> None:
        """`value`, a compile-time constant the op being lowered repacked into a constant
        buffer of its own (a quantized weight packed into int4 words), is not needed
        once that op is lowered: its blob is then dropped from the module's weights,
        so the original and the packed copy of every weight are not all held at once
        (the peak memory of a compile). Only a blob no other op names and `value` no
        other op reads is dropped; a rule that refuses its op (the host fallback's
        rollback) takes its releases back."""
        self._drop_released()
        if self.current is not None:
            self.releases.append((self.current, value))

    def _drop_released(self) -> None:
        """Drop the blobs released by the ops lowered before the current one."""
        kept: list[tuple[Operation, SSAValue]] = []
        for op, value in self.releases:
            if op is self.current:
                kept.append((op, value))
            else:
                self._drop(value)
        self.releases = kept

    def _drop(self, value: SSAValue) -> None:
        owner = value.owner
        if not isinstance(owner, arith.ConstantOp) or not value.has_one_use():
            return
        attr = owner.value
        if not isinstance(attr, DenseResourceAttr):
            return
        store = weights_of(self.module)
        if not store.releasable:
            return
        if self.references is None:
            self.references = resource_references(self.module)
        key = attr.resource_handle.data
        if self.references.get(key) != 1:
            return
        store.release(key)
        self.values.pop(value, None)

    # ----- building blocks -------------------------------------------------------------

    def emit(self, op: Operation) -> None:
        """Append `op` to the body, at the location of the op being lowered (an op
        built for a later op than a release's drops the blobs released before it)."""
        if self.releases:
            self._drop_released()
        if self.current is not None:
            op.location = self.current.location
        self.ops.append(op)

    def fresh(self, hint: str) -> str:
        self.counter += 1
        return f"{hint}_{self.counter}"

    def alloc(self, shape: Sequence[int], dtype: str) -> Buf:
        shape = tuple(int(d) for d in shape) or (1,)
        op = vkc.AllocOp(result_types=[vkc.BufferType.get(shape, vkc.BINDING_DTYPES[dtype])])
        self.emit(op)
        return Buf(op.result, shape, dtype)

    def status_buffer(self, what: str | None = None) -> Buf:
        """A fresh one-word index status buffer for one dispatch, naming the op being
        lowered (and its source location), or `what`, for the run-time error."""
        if what is None:
            what = where(self.current) if self.current is not None else "a Vulkan dispatch"
        op = vkc.AllocOp(
            properties={"status": UnitAttr(), "what": StringAttr(what)},
            result_types=[vkc.BufferType.get((1,), ui32)],
        )
        self.emit(op)
        return Buf(op.result, (1,), "u32")

    def view(self, buf: Buf, shape: Sequence[int]) -> Buf:
        shape = tuple(int(d) for d in shape) or (1,)
        if shape == buf.shape:
            return buf
        type = buf.value.type
        assert isinstance(type, vkc.BufferType)
        new_type = vkc.BufferType.get(shape, type.element_type, type.layout.data)
        op = vkc.ViewOp(operands=[buf.value], result_types=[new_type])
        self.emit(op)
        return Buf(op.result, shape, buf.dtype)

    def constant(self, array: np.ndarray, dtype: str, layout: str = vkc.ROW_MAJOR) -> Buf:
        """A constant buffer holding `array` converted to the ABI type `dtype`
        (u32 arrays are packed words, kept bit for bit)."""
        key = (id(array), dtype, layout)
        if key in self.constant_cache:
            return self.constant_cache[key]
        self.keep_alive.append(array)
        source = np.asarray(array)
        if dtype == "u32":
            words = np.ascontiguousarray(source).reshape(-1).view(np.uint32)
        elif dtype == "i32":
            words = narrow(source, np.dtype(np.int32), "a constant")
        else:
            words = np.ascontiguousarray(source, dtype=np.float32).reshape(-1)
        shape = tuple(source.shape) if dtype != "u32" and source.ndim else (words.size,)
        words = words if words.size else np.zeros(1, words.dtype)
        shape = shape if words.size == int(np.prod(shape, dtype=np.int64)) else (words.size,)
        type = tensor_type(words.dtype, [words.size])
        attr = self._resource(words, type, (words.dtype.str, str(shape), layout))
        op = vkc.ConstantOp(
            properties={"value": attr},
            result_types=[vkc.BufferType.get(shape, vkc.BINDING_DTYPES[dtype], layout)],
        )
        self.emit(op)
        buf = Buf(op.result, shape, dtype)
        self.constant_cache[key] = buf
        return buf

    def _resource(self, words: np.ndarray, type: Any, key: tuple[str, ...]) -> DenseResourceAttr:
        """The blob of a constant buffer: a fresh one, or (methods sharing weights) the
        one already made for the same words."""
        if self.shared_constants is None:
            return make_resource(self.fresh("vkc_const"), words, type, weights_of(self.module))
        digest = (*key, hashlib.sha256(np.ascontiguousarray(words).data).hexdigest())
        attr = self.shared_constants.get(digest)
        if attr is None:
            attr = make_resource(self.fresh("vkc_const"), words, type, weights_of(self.module))
            self.shared_constants[digest] = attr
        return attr

    def state_buffer(self, name: str) -> Buf:
        """The device buffer of state `name` (a mutable `ml_program.global` of the module),
        one `vkc.state` per function."""
        found = self.state_buffers.get(name)
        if found is not None:
            return found
        target = SymbolTable.lookup_symbol(self.module, name)
        if not isinstance(target, GlobalOp) or not target.mutable:
            raise QoptError(f"convert-to-vkc: @{name} is not a mutable ml_program.global")
        shape = tuple(int(d) for d in target.type.get_shape()) or (1,)
        try:
            element = vkc.abi_element(target.type.get_element_type())
        except ValueError as e:
            raise QoptError(f"convert-to-vkc: state @{name}: {e}") from None
        op = vkc.StateOp(
            properties={"global": SymbolRefAttr(name)},
            result_types=[vkc.BufferType.get(shape, element)],
        )
        self.emit(op)
        buf = Buf(op.result, shape, vkc.dtype_name(element))
        self.state_buffers[name] = buf
        return buf

    def buffer(self, value: SSAValue) -> Buf:
        """The operand `value` as a device buffer (constants are uploaded)."""
        found = self.values[value]
        if isinstance(found, Buf):
            return found
        array = np.asarray(found)
        if (
            array.size == 0
            and self.current is not None
            and not isinstance(self.current, func.ReturnOp)
        ):
            raise unsupported(
                self.current,
                f"an operand of zero-size shape {list(array.shape)} read by a kernel (Vulkan "
                "buffers are never empty; zero-size values fold only into ops whose every "
                "operand is known at compile time)",
                "rewrite the model without the empty tensor",
            )
        buf = self.constant(array, abi_dtype(value))
        self.values[value] = buf
        return buf

    def kernel_spec(self, name: str) -> KernelSpec:
        """The catalogue's kernel `name` (a QoptError naming the op if it has none)."""
        spec = catalogue().get(name)
        if spec is None:
            assert self.current is not None
            raise unsupported(
                self.current,
                f"needs the Vulkan kernel '{name}', which is not in the kernel catalogue",
                "add the kernel to qopt/kernels/",
            )
        return spec

    def kernel_symbol(self, name: str, spec_values: dict[str, int]) -> vkc.KernelOp:
        """The `vkc.kernel` symbol of kernel `name` specialised with `spec_values` (one
        per variant; it takes the location of the op that first asks for it)."""
        spec = self.kernel_spec(name)
        full = specialization(spec, spec_values)
        key = kernel_key(name, full)
        if key in self.kernel_ops:
            return self.kernel_ops[key]
        symbol = f"{name}_{len([k for k in self.kernel_ops if k[0] == name])}"
        op = kernel_symbol_op(spec, full, symbol)
        if self.current is not None:
            op.location = self.current.location
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
        kernel_op = self.kernel_symbol(name, spec_values or {})
        spec = self.kernel_spec(name)
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
        push_attrs = push_attributes(spec, {pname: push[pname] for pname, _ in spec.push})
        op = vkc.DispatchOp(
            operands=[[buffers[b.name].value for b in spec.bindings]],
            properties={
                "kernel": SymbolRefAttr(kernel_op.sym_name.data),
                "push": DictionaryAttr(push_attrs),
                "workgroups": DenseArrayBase.from_list(i64, [max(1, g) for g in groups]),
            },
        )
        self.emit(op)


# ----- rule tables -------------------------------------------------------------------------

OpT = TypeVar("OpT", bound=Operation)
Results = Sequence[Value]
"""A rule's results: per result of the op, the buffer (or compile-time array) holding it."""
Rule = Callable[[Lowering, OpT], Results]
"""A rule lowers one op of its class (the `OpT` it is registered for)."""
Rules = dict[type[Operation], Callable[[Lowering, Any], Results]]


class RuleTable(rules.RuleTable[Lowering, Results]):
    """One family's rules by op class: `@RULES(el.AddOp, el.SubOp)` registers a rule
    typed by those classes (qopt/lowering/rules.py). A class ruled twice is an error,
    here and when the pass merges the families (`convert_to_vkc.get_rules`)."""

    pass_name = "convert-to-vkc"


# ----- shapes and strides ------------------------------------------------------------------


def row_major(dims: Sequence[int]) -> tuple[int, ...]:
    strides: list[int] = []
    acc = 1
    for d in reversed(dims):
        strides.append(acc)
        acc *= d
    return tuple(reversed(strides))


def pad6(dims: Sequence[int], *strides: Sequence[int]) -> list[list[int]]:
    """Dims and strides padded to 6 (leading 1s / 0s), size-1 dims merged out."""
    if len(dims) > MAX_RANK:
        raise QoptError(
            f"a rank-{len(dims)} tensor: the Vulkan kernels address at most {MAX_RANK} dims"
        )
    pad = MAX_RANK - len(dims)
    return [[1] * pad + list(dims)] + [[0] * pad + list(s) for s in strides]


def broadcast_strides(src: Sequence[int], out: Sequence[int]) -> list[int]:
    """Strides reading a row-major `src` broadcast to `out` (0 on broadcast dims)."""
    base = row_major(src)
    pad = len(out) - len(src)
    strides = [0] * pad
    for d, (size, stride) in enumerate(zip(src, base, strict=True)):
        strides.append(0 if size == 1 and out[pad + d] != 1 else stride)
    return strides


# ----- kernel calls every family uses --------------------------------------------------------


def dtype_code(dtype: str) -> int:
    """The DTYPE a unary/binary kernel computes in for buffers of `dtype`."""
    return DTYPES["f32"] if dtype == "f32" else DTYPES["i32"]


def copy_strided(
    lw: Lowering,
    src: Buf,
    dims: Sequence[int],
    src_strides: Sequence[int],
    src_offset: int = 0,
    out: Buf | None = None,
    out_strides: Sequence[int] | None = None,
    out_offset: int = 0,
) -> Buf:
    """out[out_offset + idx . out_strides] = src[src_offset + idx . src_strides]."""
    if out is None:
        out = lw.alloc(dims, src.dtype)
    if out_strides is None:
        out_strides = row_major(dims)
    d, si, so = pad6(dims, src_strides, out_strides)
    lw.dispatch("copy_strided", [src, out], [numel(dims), src_offset, out_offset, *d, *si, *so])
    return out


def unary(
    lw: Lowering, x: Buf, op: str, a: float = 0.0, b: float = 0.0, out_dtype: str = ""
) -> Buf:
    """The unary kernel's op `op` (a UNARY_OPS name) over `x`."""
    out = lw.alloc(x.shape, out_dtype or x.dtype)
    lw.dispatch(
        "unary", [x, out], [x.numel, a, b], {"OP": UNARY_OPS[op], "DTYPE": dtype_code(x.dtype)}
    )
    return out


def binary(
    lw: Lowering,
    a: Buf,
    b: Buf,
    op: str,
    out_shape: Sequence[int],
    out_dtype: str,
    alpha: float = 1.0,
) -> Buf:
    """The binary kernel's op `op` (a BINARY_OPS name), broadcasting a and b."""
    out = lw.alloc(out_shape, out_dtype)
    d, sa, sb = pad6(
        out_shape, broadcast_strides(a.shape, out_shape), broadcast_strides(b.shape, out_shape)
    )
    lw.dispatch(
        "binary",
        [a, b, out],
        [numel(out_shape), *d, *sa, *sb, 0, 0, alpha],
        {"OP": BINARY_OPS[op], "DTYPE": dtype_code(a.dtype)},
    )
    return out


def same_dtype(lw: Lowering, buf: Buf, dtype: str) -> Buf:
    if buf.dtype == dtype:
        return buf
    return unary(lw, buf, "cast_i32_f32" if dtype == "f32" else "cast_f32_i32", out_dtype=dtype)


def operand_shape_buf(lw: Lowering, value: SSAValue) -> Buf:
    """The operand as a buffer with the operand's (tensor) shape."""
    buf = lw.buffer(value)
    return lw.view(buf, shape_of(value) or (1,)) if buf.shape != (shape_of(value) or (1,)) else buf
