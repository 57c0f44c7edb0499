"""The `vkc` dialect: a program of Vulkan kernel calls (docs/ir.md).

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
  `vkc.input` (an argument uploaded, integers narrowed to i32), `vkc.state` (the
  device buffer of a mutable `ml_program.global`: program state such as a KV cache,
  kept on the device across calls and updated in place), `vkc.constant`
  (a buffer initialised once from a `dense_resource` blob: weights repacked for
  their kernel), `vkc.alloc` (a transient buffer, optionally placed in a memory
  slot shared with buffers whose lifetimes do not overlap; or, with `status`, the
  one-word index status buffer of one dispatch, zeroed before each run and checked
  after it: `what` names the op it guards), `vkc.view` (the same
  memory with another shape), `vkc.dispatch` (a kernel call: bound buffers,
  push constants, workgroup counts), `vkc.barrier` (a compute-to-compute memory
  barrier), `vkc.host_call` (the host fallback: a region of aten/quant ops, run
  by the reference interpreter between two submissions, reading its `ins` buffers
  and writing its `outs` buffers once each; ended by `vkc.host_yield`) and
  `vkc.output` (a buffer read back as a result tensor).

Buffers follow the kernel ABI of qopt/kernels/spec.py: f32 for float tensors, i32
for integer, boolean and quantized activations, ui32 words for packed weights. The
verifiers check every kernel symbol and dispatch of a catalogue kernel against its
interface (qopt.kernels, imported directly: the catalogue is part of the IR layer);
their messages name the op and its source location (`qopt.errors.where`), which
convert-to-vkc copies from the op each vkc op lowers. Semantics (numpy, each
dispatch running its kernel's reference) are in qopt/interpreters/vkc.py.

Program state: a vkc module keeps the `ml_program.global private mutable`
declarations of the level above (name, type, initial value); a function reaches a
global's device buffer with `vkc.state @name`, and dispatches update it in place
(a KV-cache write is a `scatter_dim` dispatch whose `out` is the state buffer):

    ml_program.global private mutable @layers.0.k_cache(dense<0.0> : tensor<1x2x40x8xf32>)
        : tensor<1x2x40x8xf32>
    func.func @decode(%tokens: tensor<1x1xi64>, %pos: tensor<1xi64>) -> tensor<1x1x64xf32> {
      %k = vkc.state @layers.0.k_cache : !vkc.buffer<1x2x40x8xf32>
      %p = vkc.input %pos : tensor<1xi64> -> !vkc.buffer<1xi32>
      vkc.dispatch @scatter_dim_0(%k_new, %p, %k, %status) {...}
      ...
    }

The verifier lets a dispatch write only transient (`vkc.alloc`) and state
(`vkc.state`) buffers, never an input upload or a constant.

Layout: `types.py` holds `!vkc.buffer`, `#vkc.binding` and `#vkc.push`; `ops.py`
the operations.
"""

from __future__ import annotations

from xdsl.ir import Dialect

from qopt.dialects.vkc.ops import (
    HOST_DIALECTS,
    AllocOp,
    BarrierOp,
    ConstantOp,
    DispatchOp,
    HostCallOp,
    HostYieldOp,
    InputOp,
    KernelOp,
    OutputOp,
    StateOp,
    ViewOp,
    host_op_allowed,
    root_buffer,
    writable,
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
    [
        KernelOp,
        InputOp,
        OutputOp,
        ConstantOp,
        AllocOp,
        StateOp,
        ViewOp,
        DispatchOp,
        BarrierOp,
        HostCallOp,
        HostYieldOp,
    ],
    [BufferType, BindingAttr, PushAttr],
)

__all__ = [
    "BINDING_DTYPES",
    "HOST_DIALECTS",
    "PUSH_KINDS",
    "ROW_MAJOR",
    "AllocOp",
    "BarrierOp",
    "BindingAttr",
    "BufferType",
    "ConstantOp",
    "DispatchOp",
    "HostCallOp",
    "HostYieldOp",
    "InputOp",
    "KernelOp",
    "OutputOp",
    "PushAttr",
    "StateOp",
    "ViewOp",
    "Vkc",
    "abi_element",
    "binding_accepts",
    "dtype_name",
    "host_op_allowed",
    "root_buffer",
    "writable",
]
