"""numpy semantics of the `vkc` dialect.

Buffers are flat numpy arrays (float32, int32 or uint32). A `vkc.alloc` with a
`slot` is a view into that slot's memory, shared with every other buffer of the
slot, exactly as the runtime shares one device buffer: a buffer plan that lets
two live buffers overlap gives wrong results here too. A dispatch runs its
kernel's numpy `reference` (qopt/interpreters/kernels/) on the bound
buffers, so vkc IR can be checked without a device. A status buffer
(`vkc.alloc {status}`) starts at 0 on every call; when a dispatch's reference
sets it (an index out of range) the run stops with the QoptError the Vulkan
artifact raises for it.

A state buffer (`vkc.state @name`) is the session's value of that global
(`qopt.interpreters.ml_program.State`, shared with `ml_program` loads and stores):
the first `vkc.state` of a session (or after `reset`) turns the global's value into
a writable array of the buffer's 32-bit ABI type, which the dispatches then update
in place, as the device updates its state buffer; `State.read` gives it back in the
global's dtype. So `qopt.session(vkc_module)` keeps a KV cache between calls
exactly as a Vulkan session does.

A host segment (`vkc.host_call`, the fallback for ops without a kernel) reads its
`ins` buffers as tensors (`tensor_from_words`), runs its body with the reference
semantics of its ops and writes each result into its `outs` buffer
(`words_from_tensor`): the same two conversions the Vulkan runtime makes around
the segment between two submissions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.dialects.func import FuncOp
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.ir import Attribute, Operation

from qopt.dialects import vkc
from qopt.dialects.tensors import dtype_of, shape_of
from qopt.errors import QoptError, where
from qopt.interpreters.kernels import kernels
from qopt.interpreters.ml_program import State, state_of
from qopt.kernels import index_error_message
from qopt.kernels.abi import NUMPY_DTYPES, narrow


def buffer_dtype(type: vkc.BufferType) -> np.dtype:
    return NUMPY_DTYPES[type.dtype]


def tensor_from_words(words: np.ndarray, type: Attribute) -> np.ndarray:
    """The tensor of `type` held in a buffer's 32-bit ABI `words` (a copy: its first
    numel words, row-major, cast to the tensor's dtype)."""
    assert isinstance(type, TensorType)
    shape = tuple(int(d) for d in type.get_shape())
    count = int(np.prod(shape, dtype=np.int64))
    flat = np.asarray(words).reshape(-1)[:count]
    return flat.astype(dtype_of(type)).reshape(shape)


def words_from_tensor(array: Any, dtype: np.dtype, what: str) -> np.ndarray:
    """A tensor as flat 32-bit ABI words of `dtype` (integers must fit i32)."""
    return narrow(np.asarray(array), dtype, what).reshape(-1)


def run_host_call(interpreter: Interpreter, op: vkc.HostCallOp, buffers: list[np.ndarray]) -> None:
    """Run host segment `op` on its flat buffers (`ins` then `outs`, as bound): read
    every `ins` buffer, run the body, then write every `outs` buffer in place."""
    count = len(op.ins)
    args = [
        tensor_from_words(words, arg.type)
        for words, arg in zip(buffers[:count], op.body.block.args, strict=True)
    ]
    results = interpreter.run_ssacfg_region(op.body, tuple(args), "vkc.host_call")
    for i, (out, value, target) in enumerate(zip(op.outs, results, buffers[count:], strict=True)):
        type: Any = out.type
        what = f"result {i} of the host segment at {where(op)}"
        words = words_from_tensor(value, buffer_dtype(type), what)
        target.reshape(-1)[: words.size] = words


def slot_sizes(func: Operation) -> dict[int, int]:
    """Bytes of every memory slot of a function: its largest buffer."""
    sizes: dict[int, int] = {}
    for op in func.walk():
        if isinstance(op, vkc.AllocOp) and op.slot is not None:
            slot = op.slot.value.data
            nbytes = op.result.type.nbytes
            sizes[slot] = max(sizes.get(slot, 0), nbytes)
    return sizes


def run_dispatch(op: vkc.DispatchOp, buffers: list[np.ndarray]) -> None:
    """Run the kernel's numpy reference on `buffers` (written in place); QoptError if
    it set a status word (an index out of range), as the Vulkan artifact raises."""
    kernel_op = op.kernel_op()
    spec = kernels().get(kernel_op.kernel.data)
    if spec is None:
        raise QoptError(
            f"{where(op)}: no Vulkan kernel named '{kernel_op.kernel.data}' is registered"
        )
    spec.run_reference(buffers, op.push_values(), kernel_op.spec_values())
    check_status(op, buffers, kernel_op)


def status_what(buffer: Any) -> str | None:
    """The `what` of a status buffer operand (None for any other buffer)."""
    owner = getattr(buffer, "owner", None)
    if not isinstance(owner, vkc.AllocOp) or not owner.is_status:
        return None
    return owner.what.data if owner.what is not None else "a Vulkan index check"


def check_status(op: vkc.DispatchOp, buffers: list[np.ndarray], kernel_op: vkc.KernelOp) -> None:
    """QoptError (one line, naming the guarded op) if a status buffer of `op` is set."""
    for operand, array in zip(op.buffers, buffers, strict=True):
        what = status_what(operand)
        if what is not None and int(np.asarray(array).reshape(-1).view(np.uint32)[0]) != 0:
            raise QoptError(index_error_message(what, dispatch_index(op), kernel_op.kernel.data))


def dispatch_index(op: vkc.DispatchOp) -> int:
    """The dispatch's position among its function's dispatches (the Vulkan step)."""
    block = op.parent_block()
    if block is None:
        return 0
    index = 0
    for other in block.ops:
        if other is op:
            return index
        if isinstance(other, vkc.DispatchOp):
            index += 1
    return index


def state_buffer(state: State, op: vkc.StateOp) -> np.ndarray:
    """The flat, writable 32-bit buffer of state `op` in `state` (the session's value of
    the global, made the buffer's ABI type on first use: integers must fit i32)."""
    name = op.state_name
    type: Any = op.result.type
    dtype = buffer_dtype(type)
    current = state.values[name]
    if current.dtype != dtype or not current.flags.writeable:
        flat = narrow(np.asarray(current), dtype, f"the value of state @{name} ({where(op)})")
        current = flat.reshape(current.shape).copy()
        state.values[name] = current
    return current.reshape(-1)


@register_impls
class VkcFunctions(InterpreterFunctions):
    _slots: dict[tuple[int, int], np.ndarray]

    def __init__(self) -> None:
        super().__init__()
        self._slots = {}

    def slot_memory(self, op: vkc.AllocOp) -> np.ndarray:
        func = op.parent_op()
        while func is not None and not isinstance(func, FuncOp):
            func = func.parent_op()
        assert func is not None
        assert op.slot is not None
        slot = op.slot.value.data
        key = (id(func), slot)
        if key not in self._slots:
            self._slots[key] = np.zeros(slot_sizes(func)[slot], np.uint8)
        return self._slots[key]

    @impl(vkc.InputOp)
    def run_input(
        self, interpreter: Interpreter, op: vkc.InputOp, args: PythonValues
    ) -> PythonValues:
        dtype = buffer_dtype(op.result.type)
        return (narrow(np.asarray(args[0]), dtype, f"the input of {where(op)}").copy(),)

    @impl(vkc.ConstantOp)
    def run_constant(
        self, interpreter: Interpreter, op: vkc.ConstantOp, args: PythonValues
    ) -> PythonValues:
        return (op.words().copy(),)

    @impl(vkc.AllocOp)
    def run_alloc(
        self, interpreter: Interpreter, op: vkc.AllocOp, args: PythonValues
    ) -> PythonValues:
        type: Any = op.result.type
        dtype = buffer_dtype(type)
        if op.slot is None:
            return (np.zeros(type.numel, dtype),)
        memory = self.slot_memory(op)
        return (memory[: type.nbytes].view(dtype),)

    @impl(vkc.StateOp)
    def run_state(
        self, interpreter: Interpreter, op: vkc.StateOp, args: PythonValues
    ) -> PythonValues:
        return (state_buffer(state_of(interpreter), op),)

    @impl(vkc.ViewOp)
    def run_view(
        self, interpreter: Interpreter, op: vkc.ViewOp, args: PythonValues
    ) -> PythonValues:
        return (args[0],)

    @impl(vkc.DispatchOp)
    def run_dispatch(
        self, interpreter: Interpreter, op: vkc.DispatchOp, args: PythonValues
    ) -> PythonValues:
        run_dispatch(op, list(args))
        return ()

    @impl(vkc.BarrierOp)
    def run_barrier(
        self, interpreter: Interpreter, op: vkc.BarrierOp, args: PythonValues
    ) -> PythonValues:
        return ()

    @impl(vkc.HostCallOp)
    def run_host_call(
        self, interpreter: Interpreter, op: vkc.HostCallOp, args: PythonValues
    ) -> PythonValues:
        run_host_call(interpreter, op, list(args))
        return ()

    @impl_terminator(vkc.HostYieldOp)
    def run_host_yield(
        self, interpreter: Interpreter, op: vkc.HostYieldOp, args: PythonValues
    ) -> tuple[ReturnedValues, PythonValues]:
        return ReturnedValues(args), ()

    @impl(vkc.OutputOp)
    def run_output(
        self, interpreter: Interpreter, op: vkc.OutputOp, args: PythonValues
    ) -> PythonValues:
        out = np.asarray(args[0]).copy().astype(dtype_of(op.result))
        return (out.reshape(shape_of(op.result)),)
