"""The `vkc` dialect: a program of Vulkan kernel calls (DESIGN.md §1).

A vkc module holds

- kernel symbols at module level, `vkc.kernel @sym {kernel = "linear_q4gsw", ...}`:
  the catalogue kernel (qopt/kernels/), its GLSL file and content hash, entry
  point, local size, specialization constants, and its signature as typed
  attributes: storage-buffer bindings in binding order
  (`#vkc.binding<"x", f32>`, `#vkc.binding<"out", f32, write>`) and the
  push-constant block (`#vkc.push<"n", ui32>`);
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

Buffers follow the kernel ABI of qopt/kernels/spec.py: f32 for float tensors, i32
for integer, boolean and quantized activations, ui32 words for packed weights. The
verifiers check every kernel symbol and dispatch of a catalogue kernel against its
interface (qopt.kernels, imported directly: the catalogue is part of the IR layer);
their messages name the op and its source location (`qopt.errors.where`), which
convert-to-vkc copies from the op each vkc op lowers. Semantics (numpy, each
dispatch running its kernel's reference) are in qopt/interpreters/vkc.py.

Layout: `types.py` holds `!vkc.buffer`, `#vkc.binding` and `#vkc.push`; `ops.py`
the operations.
"""

from __future__ import annotations

from xdsl.ir import Dialect

from qopt.dialects.vkc.ops import (
    AllocOp,
    BarrierOp,
    ConstantOp,
    DispatchOp,
    InputOp,
    KernelOp,
    OutputOp,
    ViewOp,
    root_buffer,
)
from qopt.dialects.vkc.types import (
    BINDING_DTYPES,
    PUSH_KINDS,
    ROW_MAJOR,
    BindingAttr,
    BufferType,
    PushAttr,
    abi_element,
    binding_accepts,
    dtype_name,
)

Vkc = Dialect(
    "vkc",
    [KernelOp, InputOp, OutputOp, ConstantOp, AllocOp, ViewOp, DispatchOp, BarrierOp],
    [BufferType, BindingAttr, PushAttr],
)

__all__ = [
    "BINDING_DTYPES",
    "PUSH_KINDS",
    "ROW_MAJOR",
    "AllocOp",
    "BarrierOp",
    "BindingAttr",
    "BufferType",
    "ConstantOp",
    "DispatchOp",
    "InputOp",
    "KernelOp",
    "OutputOp",
    "PushAttr",
    "ViewOp",
    "Vkc",
    "abi_element",
    "binding_accepts",
    "dtype_name",
    "root_buffer",
]
