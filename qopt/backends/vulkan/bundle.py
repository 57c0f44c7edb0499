"""The compile side of the `.qvk` bundle: a vkc module as a `BundleProgram`
(`program_from_module`: every public function a method), its kernels' SPIR-V
(`compile_spirv`), `save_module` and the `-t vkbundle` target of qopt-opt.

The format itself (its normative specification is docs/qvk-format.md) lives apart,
so that loading a `.qvk` imports no IR: the data model in program.py, the checks in
checks.py, reading and writing in qvk.py. Their public names are re-exported here
for the code that imported them from this module.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import IO, Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseResourceAttr, ModuleOp, TensorType
from xdsl.ir import SSAValue
from xdsl.utils.target import Target

from qopt.backends.vulkan.checks import check_program, verify_spirv
from qopt.backends.vulkan.host import segment_text
from qopt.backends.vulkan.program import (
    MAX_NAME,
    MAX_WHAT,
    TENSOR_DTYPES,
    BundleProgram,
    FallbackOp,
    HostCall,
    KernelEntry,
    Method,
    StateEntry,
    StatusCheck,
    Step,
    Tensor,
    abi_numpy,
)
from qopt.backends.vulkan.qvk import (
    MAGIC,
    MIN_VERSION,
    PARALLEL_HASH_BYTES,
    VERSION,
    bundle_bytes,
    bundle_parts,
    fill_spirv,
    load_bundle,
    read_bundle,
    write_atomically,
    write_bundle,
)
from qopt.dialects import vkc
from qopt.dialects.tensors import numel
from qopt.dtypes import numpy_dtype
from qopt.errors import QoptError, one_line, where
from qopt.kernels.abi import narrow
from qopt.report import active_report, phase
from qopt.resources import elements_array

__all__ = [
    "MAGIC",
    "MAX_NAME",
    "MAX_WHAT",
    "MIN_VERSION",
    "PARALLEL_HASH_BYTES",
    "TENSOR_DTYPES",
    "VERSION",
    "BundleProgram",
    "FallbackOp",
    "HostCall",
    "KernelEntry",
    "Method",
    "StateEntry",
    "StatusCheck",
    "Step",
    "Tensor",
    "VkBundleTarget",
    "abi_numpy",
    "bundle_bytes",
    "bundle_parts",
    "check_program",
    "compile_spirv",
    "load_bundle",
    "program_from_module",
    "read_bundle",
    "save_module",
    "verify_spirv",
    "write_atomically",
    "write_bundle",
]


def program_from_module(module: ModuleOp) -> BundleProgram:
    """The dispatch program of a vkc module (after convert-to-vkc): every public
    function a method, sharing kernels, constants (by blob), slots and states."""
    program = BundleProgram()
    kernel_index: dict[str, int] = {}
    for op in module.ops:
        if isinstance(op, vkc.KernelOp):
            kernel_index[op.sym_name.data] = len(program.kernels)
            program.kernels.append(KernelEntry(op.kernel.data, op.glsl.data, op.spec_values()))
    functions = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    names = [  # the methods: public functions with a body, in order
        name
        for name, f in functions.items()
        if (f.sym_visibility is None or f.sym_visibility.data == "public") and not f.is_declaration
    ]
    if not names:
        raise QoptError("the vkc module has no function to run")
    slot_sizes: dict[int, int] = {}
    constant_ids: dict[str, int] = {}
    state_ids: dict[str, int] = {}

    def new_buffer(record: dict[str, Any]) -> int:
        program.buffers.append(record)
        return len(program.buffers) - 1

    def constant_buffer(op: vkc.ConstantOp) -> int:
        key = op.value.resource_handle.data if isinstance(op.value, DenseResourceAttr) else None
        if key is not None and key in constant_ids:
            return constant_ids[key]
        words = op.words()
        found = new_buffer(
            {"kind": "constant", "constant": len(program.constants), "nbytes": words.nbytes}
        )
        program.constants.append(words)
        if key is not None:
            constant_ids[key] = found
        return found

    def state_buffer(op: vkc.StateOp) -> int:
        name = op.state_name
        if name in state_ids:
            return state_ids[name]
        target = op.global_op()
        tensor = target.type
        dtype = numpy_dtype(tensor.get_element_type()).name
        if target.value is None:  # a state without an initial value starts at zeros
            words = np.zeros(max(numel(tensor.get_shape()), 1), abi_numpy(dtype))
        else:
            value = elements_array(target.value, target)
            words = narrow(value, abi_numpy(dtype), f"the initial value of @{name}")
        initial = None
        if words.view(np.uint32).any():  # bit for bit: -0.0 is kept
            initial = len(program.constants)
            program.constants.append(words)
        found = new_buffer(
            {"kind": "state", "state": len(program.states), "nbytes": 4 * max(words.size, 1)}
        )
        program.states.append(
            StateEntry(name, found, [int(d) for d in tensor.get_shape()], dtype, initial)
        )
        state_ids[name] = found
        return found

    for method_index, name in enumerate(names):
        f = functions[name]
        ids: dict[SSAValue, int] = {}
        args = list(f.body.block.args)
        starts = (len(program.steps), len(program.inputs), len(program.outputs))
        inputs: list[Tensor] = []
        for op in f.body.block.ops:
            if isinstance(op, vkc.InputOp):
                type = op.result.type
                assert isinstance(type, vkc.BufferType)
                index = next((i for i, a in enumerate(args) if a is op.tensor), None)
                if index is None:
                    raise QoptError(
                        f"{where(op)}: vkc.input of a value that is no function argument"
                    )
                ids[op.result] = new_buffer(
                    {"kind": "input", "index": index, "method": method_index, "nbytes": type.nbytes}
                )
                tensor = op.tensor.type
                assert isinstance(tensor, TensorType)
                inputs.append(
                    Tensor(
                        ids[op.result],
                        list(tensor.get_shape()),
                        numpy_dtype(tensor.get_element_type()).name,
                        index,
                    )
                )
            elif isinstance(op, vkc.ConstantOp):
                ids[op.result] = constant_buffer(op)
            elif isinstance(op, vkc.StateOp):
                ids[op.result] = state_buffer(op)
            elif isinstance(op, vkc.AllocOp):
                type = op.result.type
                assert isinstance(type, vkc.BufferType)
                if op.is_status:
                    what = op.what.data if op.what is not None else "a Vulkan index check"
                    what = one_line(what, MAX_WHAT)  # what a reader takes (`_check_buffers`)
                    ids[op.result] = new_buffer({"kind": "status", "nbytes": 4, "what": what})
                elif op.slot is None:
                    ids[op.result] = new_buffer({"kind": "alloc", "nbytes": type.nbytes})
                else:
                    slot = op.slot.value.data
                    slot_sizes[slot] = max(slot_sizes.get(slot, 0), type.nbytes)
                    ids[op.result] = new_buffer(
                        {"kind": "slot", "slot": slot, "nbytes": type.nbytes}
                    )
            elif isinstance(op, vkc.ViewOp):
                ids[op.result] = ids[op.source]
            elif isinstance(op, vkc.DispatchOp):
                program.steps.append(
                    Step(
                        kernel_index[op.kernel.root_reference.data],
                        [ids[b] for b in op.buffers],
                        op.push_values(),
                        [int(g) for g in op.workgroups.get_values()],
                    )
                )
            elif isinstance(op, vkc.OutputOp):
                tensor = op.result.type
                assert isinstance(tensor, TensorType)
                program.outputs.append(
                    Tensor(
                        ids[op.buffer],
                        list(tensor.get_shape()),
                        numpy_dtype(tensor.get_element_type()).name,
                        len(program.outputs) - starts[2],
                    )
                )
            elif isinstance(op, vkc.HostCallOp):
                program.host_calls.append(
                    HostCall(
                        method_index,
                        len(program.steps) - starts[0],
                        [ids[b] for b in op.ins],
                        [ids[b] for b in op.outs],
                        segment_text(op),
                        [where(o) for o in op.segment_ops()],
                    )
                )
            elif isinstance(op, vkc.BarrierOp | func.ReturnOp):
                continue
            else:
                raise QoptError(
                    f"'{op.name}' is not a vkc op: run convert-to-vkc (or the qopt-vulkan "
                    "pipeline) before writing a Vulkan bundle"
                )
        program.inputs.extend(sorted(inputs, key=lambda t: t.index))
        program.methods.append(
            Method(
                name,
                [starts[0], len(program.steps)],
                [starts[1], len(program.inputs)],
                [starts[2], len(program.outputs)],
            )
        )
    program.slots = [slot_sizes.get(i, 4) for i in range(max(slot_sizes, default=-1) + 1)]
    if (report := active_report()) is not None:  # the compile report lists them
        report.fallback_ops = [str(op) for op in program.fallback_ops()]
    return program


def compile_spirv(program: BundleProgram) -> None:
    """Fill in the SPIR-V of every kernel (the prebuilt set's; else glslangValidator,
    validated, cached), timed as the "kernel compile" phase."""
    if all(entry.spirv is not None for entry in program.kernels):
        return
    with phase("kernel compile"):
        fill_spirv(program)


def save_module(module: ModuleOp, path: str | os.PathLike[str]) -> int:
    """Write the `.qvk` bundle of a vkc module; returns its size in bytes."""
    return write_bundle(program_from_module(module), path)


@dataclass(frozen=True)
class VkBundleTarget(Target):
    """`qopt-opt ... -t vkbundle -o model.qvk`: the module (at the vkc level, or
    lowered with the qopt-vulkan pipeline first) as one `.qvk` file. The bytes go
    to the output stream's binary buffer, which qopt-opt renames into place."""

    name = "vkbundle"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        binary = getattr(output, "buffer", None)
        if binary is None:
            raise QoptError("-t vkbundle writes a binary file: give it an output file with -o")
        with phase("serialization"):
            with phase("program build"):
                program = program_from_module(module)
            parts = bundle_parts(program)
        output.flush()
        for piece in parts:
            binary.write(piece)
        binary.flush()
