"""The `.qvk` bundle: one versioned file holding a vkc program ready to run.

Layout (little endian):

    b"QVKB"  u32 version  u32 manifest_bytes  manifest (UTF-8 JSON)  blobs...

The manifest lists every blob (SPIR-V of each kernel, compiled at bundle time
by spirv.py; each constant buffer's packed bytes) by offset, size and SHA-256,
and holds the dispatch program: input and output buffers, memory slots, and the
dispatches in order (kernel, buffers in binding order, push constants,
workgroups; a barrier between dependent dispatches is implied, the runtime puts
one between every two). `load_bundle` checks the magic, version, sizes and
every hash and raises QoptError on a mismatch.

`program_from_module` reads a vkc module into the same `BundleProgram`, so
`compile_vulkan` and a loaded bundle run through one executor (artifact.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile
from dataclasses import dataclass, field
from typing import IO, Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import SSAValue
from xdsl.utils.target import Target

from qopt.dialects import vkc
from qopt.dialects.dtypes import numpy_dtype
from qopt.errors import QoptError

MAGIC = b"QVKB"
VERSION = 1
_HEADER = struct.Struct("<4sII")


@dataclass
class KernelEntry:
    kernel: str
    glsl: str
    spec: dict[str, int]
    spirv: bytes | None = None


@dataclass
class Tensor:
    buffer: int
    shape: list[int]
    dtype: str  # numpy dtype name of the tensor
    index: int = 0  # position among the function's arguments / results


@dataclass
class Step:
    kernel: int
    buffers: list[int]
    push: dict[str, int | float]
    groups: list[int]


@dataclass
class BundleProgram:
    """A vkc function as plain data: what the runtime needs to run it."""

    kernels: list[KernelEntry] = field(default_factory=list)
    buffers: list[dict[str, Any]] = field(default_factory=list)
    """Per buffer id: {"kind": "input"|"constant"|"slot"|"alloc", "nbytes": n, ...}."""
    constants: list[np.ndarray] = field(default_factory=list)
    slots: list[int] = field(default_factory=list)
    inputs: list[Tensor] = field(default_factory=list)
    outputs: list[Tensor] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)

    def kernel_names(self) -> list[str]:
        return sorted({k.kernel for k in self.kernels})


def _entry(module: ModuleOp, name: str = "forward") -> func.FuncOp:
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    for f in functions:
        if f.sym_name.data == name:
            return f
    if len(functions) == 1:
        return functions[0]
    raise QoptError(f"the vkc module has no function @{name}")


def program_from_module(module: ModuleOp, function: str = "forward") -> BundleProgram:
    """The dispatch program of a vkc module (after convert-to-vkc)."""
    from qopt.interpreters.vkc import constant_words

    program = BundleProgram()
    kernel_index: dict[str, int] = {}
    for op in module.ops:
        if isinstance(op, vkc.KernelOp):
            kernel_index[op.sym_name.data] = len(program.kernels)
            program.kernels.append(KernelEntry(op.kernel.data, op.glsl.data, op.spec_values()))
    f = _entry(module, function)
    ids: dict[SSAValue, int] = {}
    slot_sizes: dict[int, int] = {}
    args = list(f.body.block.args)

    def new_buffer(value: SSAValue, record: dict[str, Any]) -> None:
        ids[value] = len(program.buffers)
        program.buffers.append(record)

    for op in f.body.block.ops:
        if isinstance(op, vkc.InputOp):
            type = op.result.type
            assert isinstance(type, vkc.BufferType)
            index = args.index(op.tensor)  # pyright: ignore[reportArgumentType]
            new_buffer(op.result, {"kind": "input", "index": index, "nbytes": type.nbytes})
            tensor = op.tensor.type
            assert isinstance(tensor, TensorType)
            program.inputs.append(
                Tensor(
                    ids[op.result],
                    list(tensor.get_shape()),
                    numpy_dtype(tensor.get_element_type()).name,
                    index,
                )
            )
        elif isinstance(op, vkc.ConstantOp):
            words = constant_words(op)
            new_buffer(
                op.result,
                {"kind": "constant", "constant": len(program.constants), "nbytes": words.nbytes},
            )
            program.constants.append(words)
        elif isinstance(op, vkc.AllocOp):
            type = op.result.type
            assert isinstance(type, vkc.BufferType)
            if op.slot is None:
                new_buffer(op.result, {"kind": "alloc", "nbytes": type.nbytes})
            else:
                slot = op.slot.value.data
                slot_sizes[slot] = max(slot_sizes.get(slot, 0), type.nbytes)
                new_buffer(op.result, {"kind": "slot", "slot": slot, "nbytes": type.nbytes})
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
                    len(program.outputs),
                )
            )
        elif isinstance(op, vkc.BarrierOp | func.ReturnOp):
            continue
        else:
            raise QoptError(
                f"'{op.name}' is not a vkc op: run convert-to-vkc (or the qopt-vulkan "
                "pipeline) before writing a Vulkan bundle"
            )
    program.slots = [slot_sizes.get(i, 4) for i in range(max(slot_sizes, default=-1) + 1)]
    program.inputs.sort(key=lambda t: t.index)
    return program


def compile_spirv(program: BundleProgram) -> None:
    """Fill in the SPIR-V of every kernel (glslangValidator, validated, cached)."""
    from qopt.backends.vulkan.spirv import compile_kernel

    for entry in program.kernels:
        if entry.spirv is None:
            entry.spirv = compile_kernel(entry.glsl)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def bundle_bytes(program: BundleProgram) -> bytes:
    """The `.qvk` file contents of `program` (compiling its kernels if needed)."""
    compile_spirv(program)
    blobs: list[bytes] = []
    offset = 0

    def add(data: bytes) -> dict[str, Any]:
        nonlocal offset
        record = {"offset": offset, "size": len(data), "sha256": _sha(data)}
        blobs.append(data)
        offset += len(data)
        pad = (-offset) % 8
        if pad:
            blobs.append(b"\0" * pad)
            offset += pad
        return record

    spirv_blobs: dict[str, dict[str, Any]] = {}
    kernels = []
    for entry in program.kernels:
        assert entry.spirv is not None
        if entry.glsl not in spirv_blobs:
            spirv_blobs[entry.glsl] = add(entry.spirv)
        kernels.append(
            {
                "kernel": entry.kernel,
                "glsl": entry.glsl,
                "spec": entry.spec,
                "spirv": spirv_blobs[entry.glsl],
            }
        )
    constants = []
    for words in program.constants:
        constants.append({"dtype": words.dtype.name, **add(words.tobytes())})
    manifest = {
        "magic": "qopt-vkbundle",
        "version": VERSION,
        "kernels": kernels,
        "constants": constants,
        "buffers": program.buffers,
        "slots": program.slots,
        "inputs": [vars(t) for t in program.inputs],
        "outputs": [vars(t) for t in program.outputs],
        "steps": [vars(s) for s in program.steps],
    }
    text = json.dumps(manifest, sort_keys=True).encode()
    return _HEADER.pack(MAGIC, VERSION, len(text)) + text + b"".join(blobs)


def load_bundle(data: bytes, path: str = "<bundle>") -> BundleProgram:
    """Parse and check a `.qvk` file; QoptError if anything does not match."""
    if len(data) < _HEADER.size:
        raise QoptError(f"'{path}' is not a qopt Vulkan bundle: too short")
    magic, version, size = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise QoptError(f"'{path}' is not a qopt Vulkan bundle (bad magic {magic!r})")
    if version != VERSION:
        raise QoptError(
            f"'{path}' is a version {version} Vulkan bundle; this qopt reads version "
            f"{VERSION}: recompile it with `qopt-opt ... -t vkbundle`"
        )
    start = _HEADER.size + size
    if start > len(data):
        raise QoptError(f"'{path}' is truncated (manifest)")
    try:
        manifest = json.loads(data[_HEADER.size : start].decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise QoptError(f"'{path}' has a corrupted manifest: {e}") from None
    blobs = data[start:]

    def blob(record: dict[str, Any], what: str) -> bytes:
        lo, n = int(record["offset"]), int(record["size"])
        chunk = blobs[lo : lo + n]
        if len(chunk) != n:
            raise QoptError(f"'{path}' is truncated ({what})")
        if _sha(chunk) != record["sha256"]:
            raise QoptError(f"'{path}' is corrupted: the hash of {what} does not match")
        return chunk

    try:
        program = BundleProgram()
        for k in manifest["kernels"]:
            program.kernels.append(
                KernelEntry(k["kernel"], k["glsl"], dict(k["spec"]), blob(k["spirv"], k["kernel"]))
            )
        for i, c in enumerate(manifest["constants"]):
            raw = blob(c, f"constant {i}")
            program.constants.append(np.frombuffer(raw, dtype=np.dtype(c["dtype"])).copy())
        program.buffers = list(manifest["buffers"])
        program.slots = [int(s) for s in manifest["slots"]]
        program.inputs = [Tensor(**t) for t in manifest["inputs"]]
        program.outputs = [Tensor(**t) for t in manifest["outputs"]]
        program.steps = [Step(**s) for s in manifest["steps"]]
    except (KeyError, TypeError, ValueError) as e:
        if isinstance(e, QoptError):
            raise
        raise QoptError(f"'{path}' has a corrupted manifest: {e!r}") from None
    return program


def read_bundle(path: str | os.PathLike[str]) -> BundleProgram:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise QoptError(f"cannot read Vulkan bundle '{path}': {e.strerror}") from None
    return load_bundle(data, str(path))


def write_atomically(path: str | os.PathLike[str], data: bytes) -> None:
    """Write `data` under a temporary name and rename it into place."""
    target = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(target)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save_module(module: ModuleOp, path: str | os.PathLike[str]) -> int:
    """Write the `.qvk` bundle of a vkc module; returns its size in bytes."""
    data = bundle_bytes(program_from_module(module))
    write_atomically(path, data)
    return len(data)


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
        data = bundle_bytes(program_from_module(module))
        output.flush()
        binary.write(data)
        binary.flush()
