"""The vkc dialect's operations: kernel symbols, buffers, dispatches, barriers."""

from __future__ import annotations

import weakref

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    DictionaryAttr,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, SymbolOpInterface, SymbolTable
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.hints import isa

from qopt.dialects.ml_program import GlobalOp
from qopt.dialects.tensors import numel
from qopt.dialects.vkc.types import (
    ROW_MAJOR,
    BindingAttr,
    BufferType,
    PushAttr,
    abi_element,
    binding_accepts,
)
from qopt.dtypes import ui32
from qopt.errors import where
from qopt.kernels import MAX_WORKGROUPS, catalogue
from qopt.kernels.abi import NUMPY_DTYPES
from qopt.resources import elements_array


def _buffer(value: SSAValue) -> BufferType:
    type = value.type
    assert isinstance(type, BufferType)
    return type


def _error(op: Operation, message: str) -> VerifyException:
    """A verifier error naming the op and, when it has one, its source location."""
    return VerifyException(f"{where(op)}: {message}")


def _check_tensor_buffer(op: Operation, tensor: Attribute, buffer: BufferType, what: str) -> None:
    if not isa(tensor, TensorType):
        raise _error(op, f"{what} must be a tensor, got {tensor}")
    count = numel(tensor)
    if max(count, 1) != buffer.numel:
        raise _error(
            op, f"{what} {tensor} has {count} elements but the buffer holds {buffer.numel}"
        )
    try:
        want = abi_element(tensor.get_element_type())
    except ValueError as e:
        raise _error(op, str(e)) from None
    if want != buffer.element_type:
        raise _error(op, f"{what} {tensor} travels as {want} buffers, not {buffer.element_type}")


# ----- kernel symbols ---------------------------------------------------------------


@irdl_op_definition
class KernelOp(IRDLOperation):
    """A compute kernel the program dispatches: catalogue kernel `kernel` (qopt.kernels),
    compiled from `glsl` (content hash `hash` of the source as compiled) with `spec`
    specialization constants; `bindings` (`#vkc.binding`, in binding order) and `push`
    (`#vkc.push`, in block order) are its signature, checked against the catalogue
    when the kernel is one of qopt's. See qopt/kernels/glsl/<glsl>."""

    name = "vkc.kernel"
    sym_name = prop_def(SymbolNameConstraint())
    kernel = prop_def(StringAttr)
    glsl = prop_def(StringAttr)
    entry = prop_def(StringAttr)
    hash = prop_def(StringAttr)
    local_size = prop_def(DenseArrayBase[IntegerType])
    spec = prop_def(DictionaryAttr)
    bindings = prop_def(ArrayAttr[BindingAttr])
    push = prop_def(ArrayAttr[PushAttr])

    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(SymbolOpInterface())
    assembly_format = "$sym_name attr-dict"

    def binding_list(self) -> list[tuple[str, str, bool]]:
        """(name, dtype, writes) of every binding, in binding order."""
        return [(b.binding.data, b.dtype, b.writes) for b in self.bindings.data]

    def push_list(self) -> list[tuple[str, str]]:
        """(name, kind) of every push constant, in block order."""
        return [(p.constant.data, p.kind) for p in self.push.data]

    def spec_values(self) -> dict[str, int]:
        values: dict[str, int] = {}
        for key, attr in self.spec.data.items():
            assert isinstance(attr, IntegerAttr)
            values[key] = int(attr.value.data)
        return values

    def verify_(self) -> None:
        local = tuple(self.local_size.get_values())
        if len(local) != 3 or any(int(v) < 1 for v in local):
            raise _error(self, f"local_size must be 3 positive sizes, got {list(local)}")
        bindings = self.binding_list()
        if len({b[0] for b in bindings}) != len(bindings):
            raise _error(self, "binding names must be unique")
        push = self.push_list()
        if len({p[0] for p in push}) != len(push):
            raise _error(self, "push constant names must be unique")
        for key, attr in self.spec.data.items():
            if not isinstance(attr, IntegerAttr):
                raise _error(self, f"specialization constant {key} must be an integer")
        self.check_registered()

    def check_registered(self) -> None:
        """The signature must be the catalogue kernel's (when it is one of qopt's)."""
        spec = catalogue().get(self.kernel.data)
        if spec is None:
            return
        want_bindings = ArrayAttr([BindingAttr.of(b) for b in spec.bindings])
        if self.bindings != want_bindings:
            raise _error(self, f"bindings of kernel {self.kernel.data} are {want_bindings}")
        want_push = ArrayAttr([PushAttr.get(n, k) for n, k in spec.push])
        if self.push != want_push:
            raise _error(self, f"push constants of kernel {self.kernel.data} are {want_push}")
        try:
            spec.check_spec(self.spec_values())
        except ValueError as e:
            raise _error(self, str(e)) from None


# ----- buffers ------------------------------------------------------------------------


@irdl_op_definition
class InputOp(IRDLOperation):
    """Upload a program argument into a device buffer (integers narrowed to i32,
    which must hold every value, booleans as 0/1)."""

    name = "vkc.input"
    tensor = operand_def(TensorType)
    result = result_def(BufferType)
    assembly_format = "$tensor attr-dict `:` type($tensor) `->` type($result)"

    def verify_(self) -> None:
        _check_tensor_buffer(self, self.tensor.type, _buffer(self.result), "input")


@irdl_op_definition
class OutputOp(IRDLOperation):
    """Read a device buffer back as a result tensor."""

    name = "vkc.output"
    buffer = operand_def(BufferType)
    result = result_def(TensorType)
    assembly_format = "$buffer attr-dict `:` type($buffer) `->` type($result)"

    def verify_(self) -> None:
        _check_tensor_buffer(self, self.result.type, _buffer(self.buffer), "output")


@irdl_op_definition
class ConstantOp(IRDLOperation):
    """A buffer uploaded once, holding `value` (a `dense_resource` blob of packed
    words, or a small dense literal) reinterpreted as the buffer's elements."""

    name = "vkc.constant"
    value = prop_def(DenseResourceAttr | DenseIntOrFPElementsAttr)
    result = result_def(BufferType)
    assembly_format = "$value attr-dict `:` type($result)"

    def verify_(self) -> None:
        type = self.value.type
        assert isa(type, TensorType)
        buffer = _buffer(self.result)
        if numel(type) != buffer.numel or type.get_element_type() != buffer.element_type:
            raise _error(
                self,
                f"constant value {type} does not match buffer {buffer} "
                "(same element count and element type)",
            )

    def words(self) -> np.ndarray:
        """The value as a flat array of the buffer's element type (QoptError if a
        `dense_resource` blob was elided from a printout)."""
        dtype = NUMPY_DTYPES[_buffer(self.result).dtype]
        array = elements_array(self.value, self)
        return np.ascontiguousarray(array).reshape(-1).view(dtype)


@irdl_op_definition
class AllocOp(IRDLOperation):
    """A transient buffer; `slot` places it in a memory slot shared with buffers
    whose lifetimes do not overlap (absent: its own memory; vkc-plan-buffers assigns
    slots).

    `status` marks the index status buffer of one dispatch (`!vkc.buffer<1xui32>`,
    its own memory, bound only at that dispatch's status binding): the runtime zeroes
    it before each run and raises an error naming `what` (the guarded op and its
    source location) when the kernel set it."""

    name = "vkc.alloc"
    slot = opt_prop_def(IntegerAttr)
    status = opt_prop_def(UnitAttr)
    what = opt_prop_def(StringAttr)
    result = result_def(BufferType)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "attr-dict `:` type($result)"

    @property
    def is_status(self) -> bool:
        return self.status is not None

    def verify_(self) -> None:
        if self.slot is not None and self.slot.value.data < 0:
            raise _error(self, "slot must be non-negative")
        if not self.is_status:
            if self.what is not None:
                raise _error(self, "'what' names the op a status buffer guards: add 'status'")
            return
        type = _buffer(self.result)
        if type.dims != (1,) or type.element_type != ui32 or type.layout.data != ROW_MAJOR:
            raise _error(self, f"a status buffer is !vkc.buffer<1xui32>, got {type}")
        if self.slot is not None:
            raise _error(self, "a status buffer has its own memory: it takes no slot")
        users = [use.operation for use in self.result.uses]
        if any(not isinstance(user, DispatchOp) for user in users) or len(users) > 1:
            raise _error(
                self,
                "a status buffer is bound by one dispatch only, at its status binding "
                f"(used by {', '.join(sorted({u.name for u in users}))}, {len(users)} use(s))",
            )


@irdl_op_definition
class StateOp(IRDLOperation):
    """The device buffer of program state `@global` (a mutable `ml_program.global` of
    the module: its name, type and initial value): `%k = vkc.state @layers.0.k_cache :
    !vkc.buffer<1x2x40x8xf32>`.

    The buffer holds the global's elements in the kernel ABI (f32 for floats, i32 for
    integers and booleans), row-major. It lives on the device for a whole session:
    allocated and initialised from the global's initial value when the session starts
    (and on reset), never uploaded or read back by a call; dispatches read it and
    write it in place, so what a call leaves in it is what the next call reads. Every
    function (method) of the module that names the global sees the same buffer; two
    sessions never share one. A state buffer has its own memory (vkc-plan-buffers
    never places it in a slot)."""

    name = "vkc.state"
    global_name = prop_def(SymbolRefAttr, prop_name="global")
    result = result_def(BufferType)
    assembly_format = "$global attr-dict `:` type($result)"

    @property
    def state_name(self) -> str:
        return self.global_name.string_value()

    def global_op(self) -> GlobalOp:
        """The `ml_program.global` this buffer holds (VerifyException if there is none)."""
        found = SymbolTable.lookup_symbol(self, self.global_name)
        if not isinstance(found, GlobalOp):
            raise _error(self, f"@{self.state_name} is not an ml_program.global")
        return found

    def verify_(self) -> None:
        target = self.global_op()
        if not target.mutable:
            raise _error(self, f"@{self.state_name} is not mutable: it is no program state")
        buffer = _buffer(self.result)
        if buffer.layout.data != ROW_MAJOR:
            raise _error(self, f"a state buffer is row-major, got {buffer}")
        _check_tensor_buffer(self, target.type, buffer, f"state @{self.state_name}")


@irdl_op_definition
class ViewOp(IRDLOperation):
    """The same memory seen with another shape (no copy)."""

    name = "vkc.view"
    source = operand_def(BufferType)
    result = result_def(BufferType)
    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def verify_(self) -> None:
        a, b = _buffer(self.source), _buffer(self.result)
        if a.numel != b.numel or a.element_type != b.element_type or a.layout != b.layout:
            raise _error(
                self, f"a view keeps the element count, element type and layout: {a} -> {b}"
            )


def root_buffer(value: SSAValue) -> SSAValue:
    """The buffer a (chain of) `vkc.view`(s) looks at."""
    while isinstance(value.owner, ViewOp):
        value = value.owner.source
    return value


def writable(value: SSAValue) -> bool:
    """Whether a dispatch may write buffer `value`: a transient buffer (`vkc.alloc`) or
    a state buffer (`vkc.state`), seen through any views; never an input upload or a
    constant."""
    return isinstance(root_buffer(value).owner, AllocOp | StateOp)


# ----- dispatches -------------------------------------------------------------------------


#: Kernel symbols found by `DispatchOp.kernel_op`, by symbol table op and name.
_KERNEL_SYMBOLS: weakref.WeakKeyDictionary[Operation, dict[str, Operation]] = (
    weakref.WeakKeyDictionary()
)


def _kernel_symbol(op: Operation, name: SymbolRefAttr) -> Operation | None:
    """`SymbolTable.lookup_symbol(op, name)` for a flat name, remembered: a remembered
    op is returned only while it is still in the table's block under that name."""
    table = op.parent_op()
    while table is not None and not table.has_trait(SymbolTable):
        table = table.parent_op()
    if table is None or name.nested_references.data:
        return SymbolTable.lookup_symbol(op, name)
    key = name.root_reference.data
    known = _KERNEL_SYMBOLS.setdefault(table, {})
    found = known.get(key)
    if found is not None and found.parent_op() is table:
        sym_name = found.get_attr_or_prop("sym_name")
        if isinstance(sym_name, StringAttr) and sym_name.data == key:
            return found
    found = SymbolTable.lookup_symbol(op, name)
    if found is not None:
        known[key] = found
    return found


#: Per dispatch, what its checks read when they last passed (`DispatchOp.verify_`).
_VERIFIED: weakref.WeakKeyDictionary[Operation, tuple[object, ...]] = weakref.WeakKeyDictionary()


@irdl_op_definition
class DispatchOp(IRDLOperation):
    """Run kernel `kernel` on `buffers` (in binding order) with push constants
    `push` over `workgroups` (x, y, z) workgroups."""

    name = "vkc.dispatch"
    kernel = prop_def(SymbolRefAttr)
    buffers = var_operand_def(BufferType)
    push = prop_def(DictionaryAttr)
    workgroups = prop_def(DenseArrayBase[IntegerType])
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$kernel `(` $buffers `)` attr-dict `:` type($buffers)"

    def kernel_op(self) -> KernelOp:
        """The `vkc.kernel` this dispatch calls (`SymbolTable.lookup_symbol`, which
        scans the module: remembered per module and name, and used again while it is
        still that module's op of that name, so passes that ask per dispatch stay
        linear)."""
        found = _kernel_symbol(self, self.kernel)
        if not isinstance(found, KernelOp):
            raise _error(self, f"@{self.kernel.root_reference.data} is not a vkc.kernel")
        return found

    def push_values(self) -> dict[str, int | float]:
        values: dict[str, int | float] = {}
        for key, attr in self.push.data.items():
            if isinstance(attr, FloatAttr):
                values[key] = float(attr.value.data)
            else:
                assert isinstance(attr, IntegerAttr)
                values[key] = int(attr.value.data)
        return values

    def _verified_inputs(self) -> tuple[object, ...]:
        """Everything `verify_` reads, as objects compared by identity: the dispatch's
        properties, the kernel op it names and that op's properties, and per buffer the
        value, its type, its defining op with that op's `status`, and the op defining
        the buffer it views. IR objects are immutable or change by replacement, so the
        same objects mean the same verdict."""
        kernel = _kernel_symbol(self, self.kernel)
        inputs: list[object] = [self.workgroups, self.kernel, self.push, kernel]
        if kernel is not None:
            inputs += [kernel.properties.get(k) for k in ("kernel", "bindings", "push", "spec")]
        for value in self.buffers:
            owner = value.owner
            status = owner.status if isinstance(owner, AllocOp) else None
            inputs += [value, value.type, owner, status, root_buffer(value).owner]
        return tuple(inputs)

    def verify_(self) -> None:
        """The checks below (`_verify_dispatch`), skipped when nothing they read changed
        since they last passed for this op (a pipeline verifies the module after every
        pass; most dispatches are untouched by most passes)."""
        inputs = self._verified_inputs()
        last = _VERIFIED.get(self)
        if last is not None and len(last) == len(inputs):
            if all(a is b for a, b in zip(last, inputs, strict=True)):
                return
        self._verify_dispatch()
        _VERIFIED[self] = inputs

    def _verify_dispatch(self) -> None:
        groups = tuple(int(v) for v in self.workgroups.get_values())
        if len(groups) != 3 or any(not 1 <= g <= MAX_WORKGROUPS for g in groups):
            raise _error(
                self, f"workgroups must be 3 counts in [1, {MAX_WORKGROUPS}], got {list(groups)}"
            )
        kernel = self.kernel_op()
        name = kernel.kernel.data
        bindings = kernel.bindings.data
        if len(self.buffers) != len(bindings):
            raise _error(
                self,
                f"kernel {name} has {len(bindings)} bindings "
                f"({', '.join(b.binding.data for b in bindings)}), got {len(self.buffers)} buffers",
            )
        spec = catalogue().get(name)
        packed = {b.name: b.packed for b in spec.bindings if b.packed} if spec else {}
        for binding, buffer in zip(bindings, self.buffers, strict=True):
            self._check_binding(name, binding, buffer, packed.get(binding.binding.data))
        push = kernel.push.data
        names = [p.constant.data for p in push]
        if sorted(self.push.data) != sorted(names):
            raise _error(
                self, f"kernel {name} takes push constants {names}, got {sorted(self.push.data)}"
            )
        for constant in push:
            attr = self.push.data[constant.constant.data]
            if constant.kind == "f32" and not (
                isa(attr, FloatAttr) and isinstance(attr.type, Float32Type)
            ):
                raise _error(
                    self, f"push constant {constant.constant.data} must be an f32 float attribute"
                )
            if constant.kind != "f32" and not (
                isa(attr, IntegerAttr) and attr.type in (i32, ui32, i64)
            ):
                raise _error(
                    self,
                    f"push constant {constant.constant.data} must be an {constant.kind} integer",
                )
        for binding, buffer in zip(bindings, self.buffers, strict=True):
            if binding.writes and not writable(buffer):
                owner = root_buffer(buffer).owner
                what = owner.name if isinstance(owner, Operation) else "a block argument"
                raise _error(
                    self,
                    f"binding {binding.binding.data} of kernel {name} writes a buffer of "
                    f"{what}: only transient (vkc.alloc) and state (vkc.state) buffers are "
                    "written",
                )
        self.check_extents(kernel)

    def _check_binding(
        self, kernel: str, binding: BindingAttr, buffer: SSAValue, packed: str | None
    ) -> None:
        name = binding.binding.data
        if not binding_accepts(binding.dtype, _buffer(buffer)):
            raise _error(
                self,
                f"binding {name} of kernel {kernel} takes {binding.dtype} elements, "
                f"got {buffer.type}",
            )
        owner = buffer.owner
        status_buffer = isinstance(owner, AllocOp) and owner.is_status
        if binding.is_status and not status_buffer:
            raise _error(
                self,
                f"binding {name} of kernel {kernel} takes a status buffer "
                "(vkc.alloc {status} : !vkc.buffer<1xui32>)",
            )
        if status_buffer and not binding.is_status:
            raise _error(
                self,
                f"binding {name} of kernel {kernel} is not a status binding: "
                "a status buffer is bound only at the status binding of its dispatch",
            )
        layout = _buffer(buffer).layout.data
        if packed is not None and not (
            layout.startswith(packed) and layout[len(packed) :].isdigit()
        ):
            raise _error(
                self,
                f"binding {name} of kernel {kernel} takes weights packed in a "
                f"'{packed}<bits>' layout, got {buffer.type}",
            )

    def check_extents(self, kernel: KernelOp) -> None:
        """Everything the dispatch can touch lies inside its buffers (with the
        catalogue kernel's `check_dispatch`: push constants, specialization values,
        workgroup counts and the words each binding can reach), so no program, parsed
        or lowered, gets an out-of-bounds dispatch past the verifier."""
        spec = catalogue().get(kernel.kernel.data)
        if spec is None:
            return
        words = [_buffer(b).numel for b in self.buffers]
        groups = [int(g) for g in self.workgroups.get_values()]
        try:
            spec.check_dispatch(self.push_values(), kernel.spec_values(), groups, words)
        except ValueError as e:
            raise _error(self, str(e)) from None


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """Compute-to-compute memory barrier: every dispatch before it finishes its
    writes before any dispatch after it reads or writes."""

    name = "vkc.barrier"
    assembly_format = "attr-dict"


# ----- host fallback ----------------------------------------------------------------------

HOST_DIALECTS = ("aten", "quant")
"""The dialects whose ops a host segment (`vkc.host_call`) may hold: the ops with
reference semantics in qopt's interpreter that need no weights or program state."""


def host_op_allowed(name: str) -> bool:
    """Whether an op named `name` may run in a host segment (module docstring of
    `HostCallOp`): an op of `HOST_DIALECTS`, or the segment's terminator."""
    return name == HostYieldOp.name or name.split(".", 1)[0] in HOST_DIALECTS


@irdl_op_definition
class HostCallOp(IRDLOperation):
    """Ops without a Vulkan kernel, run on the host by qopt's reference interpreter
    between two device submissions (convert-to-vkc{fallback=true}):

        vkc.host_call ins(%x : !vkc.buffer<4xf32>) outs(%y : !vkc.buffer<4xf32>) {
        ^bb0(%a: tensor<4xf32>):
          %c = aten.cumsum %a {dim = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
          vkc.host_yield %c : tensor<4xf32>
        }

    The device work before it finishes; each `ins` buffer is read once (its 32-bit
    ABI words as the block argument's tensor type: a row-major tensor of as many
    elements); the body (isolated from above, only ops of `HOST_DIALECTS`) runs with
    the reference semantics; each value `vkc.host_yield` gives is written once into
    its `outs` buffer (narrowed to the buffer's ABI type: integers must fit i32); the
    device work after it starts then. An `outs` buffer is a transient buffer
    (`vkc.alloc`, no status) that no other operand of the call names."""

    name = "vkc.host_call"
    ins = var_operand_def(BufferType)
    outs = var_operand_def(BufferType)
    body = region_def("single_block")
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(IsolatedFromAbove())
    assembly_format = (
        "(`ins` `(` $ins^ `:` type($ins) `)`)? `outs` `(` $outs `:` type($outs) `)` $body attr-dict"
    )

    def transfer_bytes(self) -> tuple[int, int]:
        """(download, upload) bytes per call: the `ins` buffers that are no constants
        (a constant is read from the host's copy), the `outs` buffers."""
        down = sum(
            _buffer(v).nbytes for v in self.ins if not isinstance(root_buffer(v).owner, ConstantOp)
        )
        return down, sum(_buffer(v).nbytes for v in self.outs)

    def segment_ops(self) -> list[Operation]:
        """The ops the call runs on the host (its body without the terminator)."""
        return [op for op in self.body.block.ops if not isinstance(op, HostYieldOp)]

    def verify_(self) -> None:
        block = self.body.block
        if len(block.args) != len(self.ins):
            raise _error(
                self, f"the body takes {len(block.args)} tensors for {len(self.ins)} ins buffers"
            )
        for i, (arg, buffer) in enumerate(zip(block.args, self.ins, strict=True)):
            _check_tensor_buffer(self, arg.type, _buffer(buffer), f"argument {i} of the body")
            owner = buffer.owner
            if isinstance(owner, AllocOp) and owner.is_status:
                raise _error(self, f"ins buffer {i} is a status buffer (read only by its kernel)")
        yields = block.last_op
        if not isinstance(yields, HostYieldOp):
            raise _error(self, "the body ends with vkc.host_yield")
        if len(yields.values) != len(self.outs):
            raise _error(
                self, f"the body yields {len(yields.values)} tensors for {len(self.outs)} outs"
            )
        if not self.outs:
            raise _error(self, "a host call writes at least one buffer")
        named = [root_buffer(v) for v in self.ins]
        for i, (value, buffer) in enumerate(zip(yields.values, self.outs, strict=True)):
            _check_tensor_buffer(self, value.type, _buffer(buffer), f"result {i} of the body")
            owner = buffer.owner
            if not isinstance(owner, AllocOp) or owner.is_status:
                raise _error(
                    self,
                    f"outs buffer {i} must be a transient buffer (vkc.alloc), got "
                    f"{owner.name if isinstance(owner, Operation) else 'a block argument'}",
                )
            if buffer in named:
                raise _error(self, f"outs buffer {i} is named twice by the call")
            named.append(buffer)
        for op in block.ops:
            if not host_op_allowed(op.name):
                raise _error(
                    self,
                    f"'{op.name}' cannot run in a host segment (only ops of the "
                    f"{', '.join(HOST_DIALECTS)} dialects)",
                )


@irdl_op_definition
class HostYieldOp(IRDLOperation):
    """The results of a `vkc.host_call` body, one per `outs` buffer."""

    name = "vkc.host_yield"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator(), HasParent(HostCallOp))
    assembly_format = "($values^ `:` type($values))? attr-dict"
