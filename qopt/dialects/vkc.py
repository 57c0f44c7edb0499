"""The `vkc` dialect: a program of Vulkan kernel calls (DESIGN.md §1).

A vkc module holds

- kernel symbols, `vkc.kernel @sym {kernel = "linear_q4gsw", ...}` at module
  level: the registered kernel (qopt/backends/vulkan/registry.py), its GLSL file
  and content hash, entry point, local size, specialization constants, and its
  signature (storage-buffer bindings in binding order, push-constant block);
- a function `@forward` whose arguments and results are tensors and whose body
  is straight-line code over device buffers (`!vkc.buffer<4x64xf32>`, optionally
  with a packed layout: `!vkc.buffer<512xui32, "q4gsw">`):
  `vkc.input` (an argument uploaded, integers narrowed to i32), `vkc.constant`
  (a buffer initialised once from a `dense_resource` blob: weights repacked for
  their kernel), `vkc.alloc` (a transient buffer, optionally placed in a memory
  slot shared with buffers whose lifetimes do not overlap; or, with `status`, the
  one-word index status buffer of one dispatch, zeroed before each run and checked
  after it: `what` names the op it guards), `vkc.view` (the same
  memory with another shape), `vkc.dispatch` (a kernel call: bound buffers,
  push constants, workgroup counts), `vkc.barrier` (a compute-to-compute memory
  barrier) and `vkc.output` (a buffer read back as a result tensor).

Buffers follow the kernel ABI of registry.py: f32 for float tensors, i32 for
integer, boolean and quantized activations, ui32 words for packed weights.
Semantics (numpy, each dispatch running its kernel's reference) are in
qopt/interpreters/vkc.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    DictionaryAttr,
    Float32Type,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    f32,
    i32,
    i64,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import SymbolOpInterface, SymbolTable
from xdsl.utils.exceptions import VerifyException

from qopt.dialects.dtypes import is_bool, is_float, is_int, ui32

ROW_MAJOR = "row_major"
MAX_WORKGROUPS = 65535
"""Workgroup count limit per dimension (Vulkan's guaranteed maxComputeWorkGroupCount)."""
BINDING_DTYPES = {"f32": f32, "i32": i32, "u32": ui32}
PUSH_KINDS = ("i32", "u32", "f32")


def dtype_name(elem: Attribute) -> str:
    """`f32`, `i32` or `u32` for a buffer element type (ValueError otherwise)."""
    for name, attr in BINDING_DTYPES.items():
        if elem == attr:
            return name
    raise ValueError(f"buffer elements must be f32, i32 or ui32, got {elem}")


def abi_element(elem: Attribute) -> Attribute:
    """The buffer element type a tensor element type travels as (registry ABI)."""
    if is_float(elem):
        return f32
    if is_int(elem) or is_bool(elem):
        if isinstance(elem, IntegerType) and elem.signedness.data == Signedness.UNSIGNED:
            if elem.width.data == 32:
                return ui32
        return i32
    raise ValueError(f"no Vulkan buffer type for tensor elements {elem}")


@irdl_attr_definition
class BufferType(ParametrizedAttribute, TypeAttribute):
    """A device storage buffer: its logical shape, element type and layout.

    `!vkc.buffer<16x64xf32>` is row-major; a packed constant names the layout its
    kernel reads, `!vkc.buffer<2048xui32, "q4gsw">`."""

    name = "vkc.buffer"
    shape: ArrayAttr[IntAttr]
    element_type: Attribute
    layout: StringAttr

    @staticmethod
    def get(shape: Sequence[int], element: Attribute, layout: str = ROW_MAJOR) -> BufferType:
        return BufferType(ArrayAttr([IntAttr(int(d)) for d in shape]), element, StringAttr(layout))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        parser.parse_punctuation("<")
        dims, elem = parser.parse_ranked_shape()
        layout = ROW_MAJOR
        if parser.parse_optional_punctuation(","):
            layout = parser.parse_str_literal()
        parser.parse_punctuation(">")
        return (ArrayAttr([IntAttr(d) for d in dims]), elem, StringAttr(layout))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        for d in self.dims:
            printer.print_string(f"{d}x")
        printer.print_attribute(self.element_type)
        if self.layout.data != ROW_MAJOR:
            printer.print_string(f', "{self.layout.data}"')
        printer.print_string(">")

    def verify(self) -> None:
        if any(d < 1 for d in self.dims):
            raise VerifyException(f"buffer dimensions must be positive, got {list(self.dims)}")
        try:
            dtype_name(self.element_type)
        except ValueError as e:
            raise VerifyException(str(e)) from None

    @property
    def dims(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.shape.data)

    @property
    def numel(self) -> int:
        n = 1
        for d in self.dims:
            n *= d
        return n

    @property
    def dtype(self) -> str:
        return dtype_name(self.element_type)

    @property
    def nbytes(self) -> int:
        return 4 * self.numel


def _buffer(value: SSAValue) -> BufferType:
    type = value.type
    assert isinstance(type, BufferType)
    return type


def _tensor_dims(type: TensorType) -> tuple[int, ...]:
    return tuple(type.get_shape())


def _check_tensor_buffer(tensor: Attribute, buffer: BufferType, what: str) -> None:
    if not isinstance(tensor, TensorType):
        raise VerifyException(f"{what} must be a tensor, got {tensor}")
    numel = 1
    for d in _tensor_dims(tensor):
        numel *= d
    if max(numel, 1) != buffer.numel:
        raise VerifyException(
            f"{what} {tensor} has {numel} elements but the buffer holds {buffer.numel}"
        )
    try:
        want = abi_element(tensor.get_element_type())
    except ValueError as e:
        raise VerifyException(str(e)) from None
    if want != buffer.element_type:
        raise VerifyException(
            f"{what} {tensor} travels as {want} buffers, not {buffer.element_type}"
        )


def binding_accepts(dtype: str, buffer: BufferType) -> bool:
    """A `u32` binding reads raw 32-bit words (packed weights, or any tensor for
    the type-generic kernels); an `f32`/`i32` binding reads a row-major tensor of
    32-bit numbers (the kernel's DTYPE constant picks the interpretation)."""
    if dtype == "u32":
        return True
    return buffer.dtype in ("f32", "i32") and buffer.layout.data == ROW_MAJOR


def _packed_bindings(kernel: str) -> dict[str, str]:
    """Binding name -> packed layout prefix, from the registered kernel (if any)."""
    try:
        from qopt.backends.vulkan.registry import kernels

        spec = kernels().get(kernel)
    except ImportError:  # the kernel specs are not installed: nothing to check against
        return {}
    if spec is None:
        return {}
    return {b.name: b.packed for b in spec.bindings if b.packed is not None}


# ----- kernel symbols ---------------------------------------------------------------


def _split_binding(text: str) -> tuple[str, str, bool]:
    """`x:f32` (read) or `y:f32:w` (written) -> (name, dtype, writes)."""
    parts = text.split(":")
    if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] != "w"):
        raise VerifyException(f"binding '{text}' must be 'name:dtype' or 'name:dtype:w'")
    if parts[1] not in BINDING_DTYPES:
        raise VerifyException(f"binding '{text}' has dtype {parts[1]}: use f32, i32 or u32")
    return parts[0], parts[1], len(parts) == 3


def _split_push(text: str) -> tuple[str, str]:
    parts = text.split(":")
    if len(parts) != 2 or parts[1] not in PUSH_KINDS:
        raise VerifyException(f"push constant '{text}' must be 'name:i32|u32|f32'")
    return parts[0], parts[1]


@irdl_op_definition
class KernelOp(IRDLOperation):
    """A compute kernel the program dispatches: registered kernel `kernel`,
    compiled from `glsl` (content hash `hash`) with `spec` specialization
    constants; `bindings` (`name:dtype[:w]`, in binding order) and `push`
    (`name:kind`, in block order) are its signature, checked against the
    registry. See qopt/backends/vulkan/kernels/<glsl>."""

    name = "vkc.kernel"
    sym_name = prop_def(SymbolNameConstraint())
    kernel = prop_def(StringAttr)
    glsl = prop_def(StringAttr)
    entry = prop_def(StringAttr)
    hash = prop_def(StringAttr)
    local_size = prop_def(DenseArrayBase)
    spec = prop_def(DictionaryAttr)
    bindings = prop_def(ArrayAttr[StringAttr])
    push = prop_def(ArrayAttr[StringAttr])

    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(SymbolOpInterface())
    assembly_format = "$sym_name attr-dict"

    def binding_list(self) -> list[tuple[str, str, bool]]:
        return [_split_binding(b.data) for b in self.bindings.data]

    def push_list(self) -> list[tuple[str, str]]:
        return [_split_push(p.data) for p in self.push.data]

    def spec_values(self) -> dict[str, int]:
        values: dict[str, int] = {}
        for key, attr in self.spec.data.items():
            assert isinstance(attr, IntegerAttr)
            values[key] = int(attr.value.data)
        return values

    def verify_(self) -> None:
        local = tuple(self.local_size.get_values())
        if len(local) != 3 or any(int(v) < 1 for v in local):
            raise VerifyException(f"local_size must be 3 positive sizes, got {list(local)}")
        bindings = self.binding_list()
        if len({b[0] for b in bindings}) != len(bindings):
            raise VerifyException("binding names must be unique")
        push = self.push_list()
        if len({p[0] for p in push}) != len(push):
            raise VerifyException("push constant names must be unique")
        for key, attr in self.spec.data.items():
            if not isinstance(attr, IntegerAttr):
                raise VerifyException(f"specialization constant {key} must be an integer")
        self.check_registered()

    def check_registered(self) -> None:
        """The signature must be the registered kernel's (when it is registered)."""
        from qopt.backends.vulkan.registry import kernels

        try:
            table = kernels()
        except ImportError:  # the kernel specs are not installed: nothing to check against
            return
        spec = table.get(self.kernel.data)
        if spec is None:
            return
        want_bindings = [(b.name, b.dtype, b.writes) for b in spec.bindings]
        if self.binding_list() != want_bindings:
            raise VerifyException(
                f"bindings of kernel {self.kernel.data} are "
                f"{[f'{n}:{d}' + (':w' if w else '') for n, d, w in want_bindings]}"
            )
        if self.push_list() != list(spec.push):
            raise VerifyException(
                f"push constants of kernel {self.kernel.data} are "
                f"{[f'{n}:{k}' for n, k in spec.push]}"
            )
        try:
            spec.check_spec(self.spec_values())
        except ValueError as e:
            raise VerifyException(str(e)) from None


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
        _check_tensor_buffer(self.tensor.type, _buffer(self.result), "input")


@irdl_op_definition
class OutputOp(IRDLOperation):
    """Read a device buffer back as a result tensor."""

    name = "vkc.output"
    buffer = operand_def(BufferType)
    result = result_def(TensorType)
    assembly_format = "$buffer attr-dict `:` type($buffer) `->` type($result)"

    def verify_(self) -> None:
        _check_tensor_buffer(self.result.type, _buffer(self.buffer), "output")


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
        assert isinstance(type, TensorType)
        buffer = _buffer(self.result)
        numel = 1
        for d in _tensor_dims(type):
            numel *= d
        if numel != buffer.numel or type.get_element_type() != buffer.element_type:
            raise VerifyException(
                f"constant value {type} does not match buffer {buffer} "
                "(same element count and element type)"
            )


STATUS_BINDING = "status"
"""The binding name of a kernel's index status word (registry.STATUS)."""


def is_status_binding(name: str, dtype: str, writes: bool) -> bool:
    """`status:u32:w`: the one-word index status a kernel sets when an index read from
    a buffer is out of range (registry.py)."""
    return name == STATUS_BINDING and dtype == "u32" and writes


@irdl_op_definition
class AllocOp(IRDLOperation):
    """A transient buffer; `slot` places it in a memory slot shared with buffers
    whose lifetimes do not overlap (absent: its own memory).

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
            raise VerifyException("slot must be non-negative")
        if not self.is_status:
            if self.what is not None:
                raise VerifyException("'what' names the op a status buffer guards: add 'status'")
            return
        type = _buffer(self.result)
        if type.dims != (1,) or type.element_type != ui32 or type.layout.data != ROW_MAJOR:
            raise VerifyException(f"a status buffer is !vkc.buffer<1xui32>, got {type}")
        if self.slot is not None:
            raise VerifyException("a status buffer has its own memory: it takes no slot")
        users = [use.operation for use in self.result.uses]
        if any(not isinstance(user, DispatchOp) for user in users) or len(users) > 1:
            raise VerifyException(
                "a status buffer is bound by one dispatch only, at its status binding "
                f"(used by {', '.join(sorted({u.name for u in users}))}, {len(users)} use(s))"
            )


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
            raise VerifyException(
                f"a view keeps the element count, element type and layout: {a} -> {b}"
            )


# ----- dispatches -------------------------------------------------------------------------


@irdl_op_definition
class DispatchOp(IRDLOperation):
    """Run kernel `kernel` on `buffers` (in binding order) with push constants
    `push` over `workgroups` (x, y, z) workgroups."""

    name = "vkc.dispatch"
    kernel = prop_def(SymbolRefAttr)
    buffers = var_operand_def(BufferType)
    push = prop_def(DictionaryAttr)
    workgroups = prop_def(DenseArrayBase)
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$kernel `(` $buffers `)` attr-dict `:` type($buffers)"

    def kernel_op(self) -> KernelOp:
        found = SymbolTable.lookup_symbol(self, self.kernel)
        if not isinstance(found, KernelOp):
            raise VerifyException(f"@{self.kernel.root_reference.data} is not a vkc.kernel")
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

    def verify_(self) -> None:
        groups = tuple(int(v) for v in self.workgroups.get_values())
        if len(groups) != 3 or any(not 1 <= g <= MAX_WORKGROUPS for g in groups):
            raise VerifyException(
                f"workgroups must be 3 counts in [1, {MAX_WORKGROUPS}], got {list(groups)}"
            )
        kernel = self.kernel_op()
        bindings = kernel.binding_list()
        if len(self.buffers) != len(bindings):
            raise VerifyException(
                f"kernel {kernel.kernel.data} has {len(bindings)} bindings "
                f"({', '.join(n for n, _, _ in bindings)}), got {len(self.buffers)} buffers"
            )
        packed = _packed_bindings(kernel.kernel.data)
        for (name, dtype, writes), buffer in zip(bindings, self.buffers, strict=True):
            if not binding_accepts(dtype, _buffer(buffer)):
                raise VerifyException(
                    f"binding {name} of kernel {kernel.kernel.data} takes {dtype} elements, "
                    f"got {buffer.type}"
                )
            owner = buffer.owner
            status_buffer = isinstance(owner, AllocOp) and owner.is_status
            if is_status_binding(name, dtype, writes) and not status_buffer:
                raise VerifyException(
                    f"binding {name} of kernel {kernel.kernel.data} takes a status buffer "
                    "(vkc.alloc {status} : !vkc.buffer<1xui32>)"
                )
            if status_buffer and not is_status_binding(name, dtype, writes):
                raise VerifyException(
                    f"binding {name} of kernel {kernel.kernel.data} is not a status binding: "
                    "a status buffer is bound only at the status binding of its dispatch"
                )
            prefix = packed.get(name)
            layout = _buffer(buffer).layout.data
            if prefix is not None and not (
                layout.startswith(prefix) and layout[len(prefix) :].isdigit()
            ):
                raise VerifyException(
                    f"binding {name} of kernel {kernel.kernel.data} takes weights packed in a "
                    f"'{prefix}<bits>' layout, got {buffer.type}"
                )
        push = kernel.push_list()
        names = [n for n, _ in push]
        if sorted(self.push.data) != sorted(names):
            raise VerifyException(
                f"kernel {kernel.kernel.data} takes push constants {names}, "
                f"got {sorted(self.push.data)}"
            )
        for name, kind in push:
            attr = self.push.data[name]
            if kind == "f32" and not (
                isinstance(attr, FloatAttr) and isinstance(attr.type, Float32Type)
            ):
                raise VerifyException(f"push constant {name} must be an f32 float attribute")
            if kind != "f32" and not (
                isinstance(attr, IntegerAttr) and attr.type in (i32, ui32, i64)
            ):
                raise VerifyException(f"push constant {name} must be an {kind} integer")
        self.check_extents(kernel)


    def check_extents(self, kernel: KernelOp) -> None:
        """Everything the dispatch can touch lies inside its buffers (with the
        registered kernel's `check_dispatch`: push constants, specialization values,
        workgroup counts and the words each binding can reach), so no program, parsed
        or lowered, gets an out-of-bounds dispatch past the verifier."""
        from qopt.backends.vulkan.registry import kernels

        try:
            spec = kernels().get(kernel.kernel.data)
        except ImportError:  # the kernel specs are not installed: nothing to check against
            return
        if spec is None:
            return
        words = [_buffer(b).numel for b in self.buffers]
        groups = [int(g) for g in self.workgroups.get_values()]
        try:
            spec.check_dispatch(self.push_values(), kernel.spec_values(), groups, words)
        except ValueError as e:
            raise VerifyException(str(e)) from None


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """Compute-to-compute memory barrier: every dispatch before it finishes its
    writes before any dispatch after it reads or writes."""

    name = "vkc.barrier"
    assembly_format = "attr-dict"


Vkc = Dialect(
    "vkc",
    [KernelOp, InputOp, OutputOp, ConstantOp, AllocOp, ViewOp, DispatchOp, BarrierOp],
    [BufferType],
)

__all__ = [
    "AllocOp",
    "BarrierOp",
    "BufferType",
    "ConstantOp",
    "DispatchOp",
    "InputOp",
    "KernelOp",
    "OutputOp",
    "ViewOp",
    "Vkc",
]
