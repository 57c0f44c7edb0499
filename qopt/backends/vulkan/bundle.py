"""The `.qvk` bundle: one versioned file holding a vkc program ready to run.

Layout (little endian):

    b"QVKB"  u32 version  u32 manifest_bytes  manifest (UTF-8 JSON)  blobs...

The manifest lists every blob (SPIR-V of each kernel, compiled at bundle time
by spirv.py; each constant buffer's packed bytes; each state's initial value) by
offset, size and SHA-256, and holds the dispatch program: input and output
buffers, memory slots, and the dispatches in order (kernel, buffers in binding
order, push constants, workgroups; a barrier between dependent dispatches is
implied, the runtime puts one between every two). `load_bundle` checks the magic,
version, sizes and every hash and raises QoptError on a mismatch.

Buffer kinds: "input" (an argument's upload buffer), "constant", "slot" (a
transient buffer in shared memory slot `slot`), "alloc" (a transient buffer with
its own memory), "status" (since version 2: the 4-byte index status word of one
dispatch, bound at that dispatch's status binding only; `what` names the op it
guards; zeroed before each run and checked after it, artifact.py) and "state"
(since version 3: the device buffer of program state `states[state]`, a KV cache:
one per session, allocated and initialised when the session starts, kept across
its calls, never uploaded or read back by a call).

Version 3 bundles hold several entry points (methods: `prefill` and `decode` of
an LLM) sharing kernels, constants, memory slots and states: `methods` lists each
method's name and its ranges [start, stop) of `steps`, `inputs` and `outputs`
(consecutive, in order, covering each list); an input buffer names its method and
its position among that method's arguments. `states` lists each state: its name
(the global's, the buffer's fully qualified name), buffer id, tensor shape and
dtype, and the constant holding its initial value in 32-bit words (null: zeros).
Dispatches write only transient and state buffers.

Version 4 bundles hold host segments (`host_calls`, the host fallback of
convert-to-vkc for ops without a kernel): each names its method, the dispatch
`at` it runs before (its position among the method's dispatches; the method's
count: after the last), the buffers it `reads` and `writes`, the ops it runs
(`ops`: one printable line each, for reports and errors) and its IR: the MLIR
text of one `func.func` whose arguments are the tensors read (in `reads` order)
and whose results are the tensors written (in `writes` order). The IR is data:
it is parsed with qopt's own dialects (never evaluated as code), bounded by the
limits, verified, and every op in it must be one of `vkc.host_op_allowed` (aten
and quant ops, whose reference semantics the runtime runs). A bundle without
host segments is written as version 3, which older readers read.

The manifest also names the qopt that wrote the bundle (`qopt_version`, since qopt
0.1.0; informative: a reader checks the format `version`, and ignores it).

`program_from_module` reads a vkc module (every public function a method) into
the same `BundleProgram`, so `compile_vulkan` and a loaded bundle run through one
executor (artifact.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseResourceAttr, ModuleOp, TensorType
from xdsl.ir import SSAValue
from xdsl.utils.target import Target

from qopt.backends.vulkan.host import segment_text
from qopt.dialects import vkc
from qopt.dialects.signature import logical_methods, pick_function
from qopt.dialects.tensors import numel
from qopt.dtypes import numpy_dtype
from qopt.errors import QoptError, one_line, where
from qopt.files import temp_file_beside
from qopt.kernels import catalogue, index_error_message
from qopt.kernels.abi import narrow
from qopt.limits import DEFAULT_LIMITS, Limits
from qopt.report import active_report
from qopt.resources import elements_array
from qopt.version import qopt_version

MAGIC = b"QVKB"
VERSION = 4
"""2: the "status" buffer kind (index status words of gather_rows and the embeddings);
3: methods (several entry points) and states (the "state" buffer kind); 4: host
segments (`host_calls`)."""
MIN_VERSION = 3
"""The oldest version this qopt reads (a bundle is written as the oldest version
that holds what it uses: 3 without host segments)."""
MAX_WHAT = 400
"""Longest `what` of a status buffer a bundle may carry (it goes into an error message)."""
MAX_NAME = 400
"""Longest name of a method or state a bundle may carry."""
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
class StateEntry:
    """Program state: the device buffer `buffer` of the global `name`, a tensor of
    `shape` and `dtype` (numpy name) held in 32-bit ABI words, starting from constant
    `initial` (None: zeros)."""

    name: str
    buffer: int
    shape: list[int]
    dtype: str
    initial: int | None = None


@dataclass
class HostCall:
    """A host segment of method `method`, run before its dispatch `at`: it reads
    buffers `reads` into the arguments of the function in `ir` (MLIR text), runs it
    with the reference interpreter and writes its results into buffers `writes`;
    `ops` describes the ops it runs (`'aten.cumsum' at model.py:12`)."""

    method: int
    at: int
    reads: list[int]
    writes: list[int]
    ir: str
    ops: list[str]
    segment: Any = field(default=None, compare=False, repr=False)
    """The parsed `ir` (a `HostSegmentIR`), set by `check_program`."""

    def manifest(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "at": self.at,
            "reads": self.reads,
            "writes": self.writes,
            "ir": self.ir,
            "ops": self.ops,
        }


@dataclass(frozen=True)
class FallbackOp:
    """One op a Vulkan program runs on the host (`artifact.fallback_ops`): `op`
    (`'aten.cumsum' at model.py:12`), its method, its host segment (index among the
    program's segments) and the bytes that segment moves per call: `download_bytes`
    read back from the device, `upload_bytes` written to it (shared by the ops of one
    segment; constants are read from the host's copy, not downloaded)."""

    op: str
    method: str
    segment: int
    download_bytes: int
    upload_bytes: int

    def __str__(self) -> str:
        return (
            f"host fallback: {self.op} (method {self.method}, host segment {self.segment}: "
            f"{self.download_bytes} bytes down, {self.upload_bytes} bytes up per call)"
        )


@dataclass
class Method:
    """An entry point: its steps, inputs and outputs as [start, stop) ranges of the
    program's lists."""

    name: str
    steps: list[int]
    inputs: list[int]
    outputs: list[int]


@dataclass
class BundleProgram:
    """A vkc module as plain data: what the runtime needs to run its methods."""

    kernels: list[KernelEntry] = field(default_factory=list)
    buffers: list[dict[str, Any]] = field(default_factory=list)
    """Per buffer id: {"kind": "input"|"constant"|"slot"|"alloc"|"status"|"state",
    "nbytes": n, ...} ("status": 4 bytes and `what`, the op its dispatch's index check
    guards; "input": `index` and `method`; "state": `state`, its index in `states`)."""
    constants: list[np.ndarray] = field(default_factory=list)
    slots: list[int] = field(default_factory=list)
    inputs: list[Tensor] = field(default_factory=list)
    outputs: list[Tensor] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    states: list[StateEntry] = field(default_factory=list)
    methods: list[Method] = field(default_factory=list)
    host_calls: list[HostCall] = field(default_factory=list)
    """Host segments, by method and then position (version 4)."""

    def method_host_calls(self, method: Method) -> list[HostCall]:
        index = self.methods.index(method)
        return [h for h in self.host_calls if h.method == index]

    def transfer_bytes(self, call: HostCall) -> tuple[int, int]:
        """(download, upload) bytes of one host segment per call: its non-constant
        reads, its writes."""
        down = sum(
            int(self.buffers[b]["nbytes"])
            for b in call.reads
            if self.buffers[b]["kind"] != "constant"
        )
        return down, sum(int(self.buffers[b]["nbytes"]) for b in call.writes)

    def fallback_ops(self) -> list[FallbackOp]:
        """Every op the program runs on the host, with its segment's transfer bytes."""
        found = []
        for i, call in enumerate(self.host_calls):
            down, up = self.transfer_bytes(call)
            name = self.methods[call.method].name
            found.extend(FallbackOp(op, name, i, down, up) for op in call.ops)
        return found

    def kernel_names(self) -> list[str]:
        return sorted({k.kernel for k in self.kernels})

    def method_names(self) -> list[str]:
        return [m.name for m in self.methods]

    def method(self, name: str | None = None, shapes: Sequence[Sequence[int]] = ()) -> Method:
        """Method `name`; by default the only one, or `forward` (QoptError otherwise). A
        method compiled at several sizes (functions `<name>__<size>`) gives the size
        variant whose inputs have `shapes` (qopt/dialects/signature.py)."""
        names = self.method_names()
        logical = logical_methods(names)
        if name is None:
            if len(logical) == 1:
                name = logical[0]
            elif "forward" in logical:
                name = "forward"
            else:
                raise QoptError(
                    f"the program has several methods ({', '.join(logical)}): name one with method="
                )
        by_name = {m.name: m for m in self.methods}

        def arg_shapes(function: str) -> list[tuple[int, ...]]:
            return [tuple(t.shape) for t in self.method_inputs(by_name[function])]

        return by_name[pick_function(name, names, arg_shapes, shapes)]

    def method_steps(self, method: Method) -> list[Step]:
        return self.steps[method.steps[0] : method.steps[1]]

    def method_inputs(self, method: Method) -> list[Tensor]:
        return self.inputs[method.inputs[0] : method.inputs[1]]

    def method_outputs(self, method: Method) -> list[Tensor]:
        return self.outputs[method.outputs[0] : method.outputs[1]]

    def state(self, name: str) -> StateEntry:
        """State `name` (QoptError listing the states if there is none)."""
        for entry in self.states:
            if entry.name == name:
                return entry
        known = ", ".join(e.name for e in self.states) or "none"
        raise QoptError(f"the program has no state named {name!r} (its states: {known})")

    def status_checks(self, method: Method | None = None) -> list[StatusCheck]:
        """Every status buffer of `method` (default: every method) with the step that
        sets it (its position in its method), in step order."""
        found = []
        for m in self.methods if method is None else [method]:
            for index, step in enumerate(self.method_steps(m)):
                for b in step.buffers:
                    record = self.buffers[b]
                    if record["kind"] == "status":
                        kernel = self.kernels[step.kernel].kernel
                        found.append(StatusCheck(b, str(record.get("what", "")), index, kernel))
        return found


@dataclass(frozen=True)
class StatusCheck:
    """A status buffer (`buffer` id), the op it guards (`what`) and its dispatch."""

    buffer: int
    what: str
    step: int
    kernel: str

    def error(self) -> QoptError:
        """The error for a set status word (one line)."""
        return QoptError(index_error_message(self.what, self.step, self.kernel))


def abi_numpy(dtype: str) -> np.dtype:
    """The 32-bit words a tensor of numpy dtype `dtype` travels in (float32 for floats,
    int32 otherwise)."""
    return np.dtype(np.float32 if np.dtype(dtype).kind == "f" else np.int32)


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
    """Fill in the SPIR-V of every kernel (glslangValidator, validated, cached)."""
    from qopt.backends.vulkan.spirv import compile_kernel
    from qopt.report import phase

    if all(entry.spirv is not None for entry in program.kernels):
        return
    with phase("kernel compile"):
        for entry in program.kernels:
            if entry.spirv is None:
                entry.spirv = compile_kernel(entry.glsl)


def _sha(data: bytes | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()


#: Below this many bytes in all, `_digests` hashes in this thread.
PARALLEL_HASH_BYTES = 16 << 20


def _digests(blobs: Sequence[memoryview]) -> list[str]:
    """The SHA-256 of each blob, in order: several at once on threads when they are
    large (hashlib releases the GIL while it hashes, so the constant buffers of a
    large model hash on every core)."""
    total = sum(b.nbytes for b in blobs)
    workers = min(len(blobs), os.cpu_count() or 1, 8)
    if total < PARALLEL_HASH_BYTES or workers < 2:
        return [_sha(b) for b in blobs]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_sha, blobs))


def _constant_views(program: BundleProgram) -> list[memoryview]:
    """Each constant buffer's bytes (the bytes tobytes() gives), a view of its array."""
    return [np.ascontiguousarray(words).data.cast("B") for words in program.constants]


def bundle_parts(
    program: BundleProgram, digests: Sequence[str] | None = None
) -> list[bytes | memoryview]:
    """The `.qvk` file contents of `program` (compiling its kernels if needed), as the
    pieces that concatenate to it: the header and manifest, then each blob (SPIR-V,
    constant buffers) and its padding. Constant buffers are views of the program's
    arrays, not copies: writing the pieces one after the other (`write_bundle`) never
    holds the file in memory. `digests`: the constant buffers' SHA-256 (hex), in
    order, when the caller has them (else computed here)."""
    compile_spirv(program)
    blobs: list[bytes | memoryview] = []
    offset = 0

    def add(data: bytes | memoryview, digest: str | None = None) -> dict[str, Any]:
        nonlocal offset
        size = data.nbytes if isinstance(data, memoryview) else len(data)
        record = {"offset": offset, "size": size, "sha256": digest or _sha(data)}
        blobs.append(data)
        offset += size
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
    raws = _constant_views(program)
    constants = [
        {"dtype": words.dtype.name, **add(raw, digest)}
        for words, raw, digest in zip(
            program.constants, raws, _digests(raws) if digests is None else digests, strict=True
        )
    ]
    manifest = {
        "magic": "qopt-vkbundle",
        "qopt_version": qopt_version(),
        "kernels": kernels,
        "constants": constants,
        "buffers": program.buffers,
        "slots": program.slots,
        "inputs": [vars(t) for t in program.inputs],
        "outputs": [vars(t) for t in program.outputs],
        "steps": [vars(s) for s in program.steps],
        "states": [vars(e) for e in program.states],
        "methods": [vars(m) for m in program.methods],
    }
    version = VERSION if program.host_calls else MIN_VERSION
    if program.host_calls:
        manifest["host_calls"] = [h.manifest() for h in program.host_calls]
    manifest["version"] = version
    text = json.dumps(manifest, sort_keys=True).encode()
    return [_HEADER.pack(MAGIC, version, len(text)) + text, *blobs]


def bundle_bytes(program: BundleProgram) -> bytes:
    """The `.qvk` file contents of `program` (compiling its kernels if needed)."""
    return b"".join(bundle_parts(program))


def write_bundle(program: BundleProgram, path: str | os.PathLike[str]) -> int:
    """Write the `.qvk` file of `program` atomically, piece by piece (`bundle_parts`:
    no copy of the constant buffers); returns its size in bytes.

    Large constants (`PARALLEL_HASH_BYTES` in all) are written while threads hash
    them: the header and manifest, whose length does not depend on the digests (each
    is 64 hex digits), are laid out with placeholder digests, the blobs written after
    that many bytes, and the real header and manifest written at the front last (the
    same bytes as `bundle_bytes`)."""
    compile_spirv(program)
    raws = _constant_views(program)
    workers = min(len(raws), os.cpu_count() or 1, 8)
    if sum(r.nbytes for r in raws) < PARALLEL_HASH_BYTES or workers < 2:
        parts = bundle_parts(program)
        write_atomically(path, parts)
        return sum(p.nbytes if isinstance(p, memoryview) else len(p) for p in parts)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_sha, raw) for raw in raws]
        draft = bundle_parts(program, ["0" * 64] * len(raws))
        head_size = len(draft[0])

        def head() -> bytes:
            final = bundle_parts(program, [f.result() for f in futures])
            return bytes(final[0])  # write_atomically checks its size

        write_atomically(path, draft[1:], head=(head_size, head))
    return head_size + sum(p.nbytes if isinstance(p, memoryview) else len(p) for p in draft[1:])


def _int(value: Any, what: str, low: int = 0, high: int | None = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise QoptError(f"{what} must be an integer >= {low}, got {str(value)[:40]!r}")
    if high is not None and value > high:
        raise QoptError(f"{what} must be at most {high}, got {value}")
    return value


def _record(value: Any, what: str, keys: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict) or not keys <= set(value):
        raise QoptError(f"{what} must be an object with {', '.join(sorted(keys))}")
    return value


def _list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise QoptError(f"{what} must be a list")
    return value


#: Tensor dtypes a bundle's inputs and outputs may have (the ABI narrows them to words).
TENSOR_DTYPES = frozenset(
    {"float32", "float16", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"}
)
_CONSTANT_DTYPES = {"float32": np.float32, "int32": np.int32, "uint32": np.uint32}


def _verify_spirv(entry: KernelEntry, what: str) -> None:
    """The bundle's SPIR-V must be what qopt compiles from its own GLSL for the kernel;
    where glslang is missing, it must at least pass spirv-val."""
    from qopt.backends.vulkan.spirv import compile_kernel, have_tool, validate_spirv

    assert entry.spirv is not None
    if have_tool("glslangValidator"):
        if entry.spirv != compile_kernel(entry.glsl):
            raise QoptError(
                f"{what}: its SPIR-V is not qopt's compilation of {entry.glsl} (modified, or "
                "built by another qopt or glslang): recompile the bundle with "
                "`qopt-opt ... -t vkbundle`"
            )
        return
    if not have_tool("spirv-val"):
        raise QoptError(
            f"{what}: cannot verify its SPIR-V: install glslang-tools or spirv-tools "
            "(Debian/Ubuntu: `apt-get install glslang-tools spirv-tools`)"
        )
    validate_spirv(entry.spirv, f"{what} ({entry.glsl})")


def _name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= MAX_NAME or not value.isprintable():
        raise QoptError(f"{what} must be one printable line of 1 to {MAX_NAME} characters")
    return value


def _check_methods(program: BundleProgram, path: str) -> list[Method]:
    """Methods with unique names whose [start, stop) ranges cover the steps, inputs and
    outputs in order, consecutively."""
    methods = _list(program.methods, f"'{path}': methods")
    if not methods:
        raise QoptError(f"'{path}': the bundle has no method")
    ends = [0, 0, 0]
    totals = (len(program.steps), len(program.inputs), len(program.outputs))
    names: set[str] = set()
    for i, method in enumerate(methods):
        what = f"'{path}': method {i}"
        if not isinstance(method, Method):
            raise QoptError(f"{what} must be an object")
        name = _name(method.name, f"{what}'s name")
        if name in names:
            raise QoptError(f"{what}: a second method named {name!r}")
        names.add(name)
        for k, field_name in enumerate(("steps", "inputs", "outputs")):
            bounds = _list(getattr(method, field_name), f"{what}'s {field_name}")
            if len(bounds) != 2:
                raise QoptError(f"{what}'s {field_name} must be [start, stop]")
            lo = _int(bounds[0], f"{what}'s {field_name} start", ends[k], ends[k])
            ends[k] = _int(bounds[1], f"{what}'s {field_name} stop", lo, totals[k])
    if tuple(ends) != totals:
        raise QoptError(f"'{path}': the methods do not cover every step, input and output")
    return methods


def _check_states(program: BundleProgram, path: str, limits: Limits) -> None:
    """Each state names one "state" buffer (and each "state" buffer one state) of 4
    bytes per element of its tensor type; its initial value, when given, is a
    constant of exactly those bytes in the state's 32-bit ABI type."""
    states = _list(program.states, f"'{path}': states")
    names: set[str] = set()
    owner: dict[int, int] = {}
    for i, entry in enumerate(states):
        what = f"'{path}': state {i}"
        if not isinstance(entry, StateEntry):
            raise QoptError(f"{what} must be an object")
        name = _name(entry.name, f"{what}'s name")
        if name in names:
            raise QoptError(f"{what}: a second state named {name!r}")
        names.add(name)
        b = _int(entry.buffer, f"{what}'s buffer", 0, len(program.buffers) - 1)
        record = program.buffers[b]
        if record["kind"] != "state" or record.get("state") != i or b in owner:
            raise QoptError(f"{what}: buffer {b} is not its state buffer")
        owner[b] = i
        if entry.dtype not in TENSOR_DTYPES:
            raise QoptError(f"{what}: dtype {str(entry.dtype)[:20]!r} is not a tensor dtype")
        dims = _list(entry.shape, f"{what}'s shape")
        limits.check(f"{what}'s rank", len(dims), "max_tensor_rank")
        numel = 1
        for d in dims:
            numel *= _int(d, f"{what}'s dimension")
        limits.check(f"{what}'s elements", numel, "max_tensor_elements")
        nbytes = 4 * max(numel, 1)
        if record["nbytes"] != nbytes:
            raise QoptError(
                f"{what}: its buffer {b} holds {record['nbytes']} bytes, a {list(dims)} "
                f"{entry.dtype} state needs {nbytes} bytes"
            )
        if entry.initial is not None:
            c = _int(entry.initial, f"{what}'s initial value", 0, len(program.constants) - 1)
            words = program.constants[c]
            if words.nbytes != nbytes or words.dtype != abi_numpy(entry.dtype):
                raise QoptError(
                    f"{what}: its initial value (constant {c}: {words.nbytes} bytes of "
                    f"{words.dtype}) is not {nbytes} bytes of {abi_numpy(entry.dtype)}"
                )
    for i, record in enumerate(program.buffers):
        if record["kind"] == "state" and i not in owner:
            raise QoptError(f"'{path}': buffer {i} is a state buffer of no state")


def check_program(program: BundleProgram, path: str, limits: Limits = DEFAULT_LIMITS) -> None:
    """Check a whole dispatch program before any device runs it: kernels registered
    with in-range specialization values; buffer ids, kinds, sizes, slots and constants
    consistent; inputs and outputs inside their buffers; every dispatch with the
    kernel's push constants and positive, bounded workgroup counts, touching only
    words inside its buffers (KernelSpec.check_dispatch) and writing only transient
    and state buffers; every status buffer bound once, at a status binding, and every status
    binding given one; methods covering the steps, inputs and outputs; every state
    buffer sized by its state's type and initialised by a constant of that size;
    device memory within `limits`. QoptError (one line) otherwise."""
    table = catalogue()
    for i, entry in enumerate(program.kernels):
        what = f"'{path}': kernel {i}"
        spec = table.get(entry.kernel)
        if spec is None:
            raise QoptError(f"{what}: '{entry.kernel[:40]}' is not one of qopt's Vulkan kernels")
        if entry.glsl != spec.glsl:
            raise QoptError(
                f"{what}: {entry.kernel} is compiled from {spec.glsl}, not {entry.glsl[:40]}"
            )
        try:
            spec.check_spec(entry.spec)
        except ValueError as e:
            raise QoptError(f"{what}: {e}") from None
    methods = _check_methods(program, path)
    sizes = [0] * len(program.buffers)
    device_bytes = sum(int(c.nbytes) for c in program.constants)
    for i, n in enumerate(program.slots):
        device_bytes += max(_int(n, f"'{path}': slot {i}'s size"), 4)
    for i, record in enumerate(program.buffers):
        what = f"'{path}': buffer {i}"
        record = _record(record, what, {"kind", "nbytes"})
        nbytes = _int(record["nbytes"], f"{what}'s nbytes")
        if nbytes % 4:
            raise QoptError(f"{what}: nbytes {nbytes} is not a whole number of 4-byte words")
        kind = record["kind"]
        if kind == "constant":
            c = _int(record.get("constant"), f"{what}'s constant", 0, len(program.constants) - 1)
            if program.constants[c].nbytes != nbytes:
                raise QoptError(f"{what}: constant {c} holds {program.constants[c].nbytes} bytes")
        elif kind == "slot":
            slot = _int(record.get("slot"), f"{what}'s slot", 0, len(program.slots) - 1)
            if max(program.slots[slot], 4) < nbytes:
                raise QoptError(f"{what}: slot {slot} holds fewer than its {nbytes} bytes")
        elif kind == "input":
            m = _int(record.get("method"), f"{what}'s method", 0, len(methods) - 1)
            count = methods[m].inputs[1] - methods[m].inputs[0]
            _int(record.get("index"), f"{what}'s input index", 0, count - 1)
            device_bytes += max(nbytes, 4)
        elif kind in ("alloc", "state"):
            device_bytes += max(nbytes, 4)
        elif kind == "status":
            if nbytes != 4:
                raise QoptError(f"{what}: a status buffer holds 4 bytes, not {nbytes}")
            text = record.get("what")
            if not isinstance(text, str) or len(text) > MAX_WHAT or not text.isprintable():
                raise QoptError(
                    f"{what}: a status buffer's 'what' must be one printable line of at most "
                    f"{MAX_WHAT} characters"
                )
            device_bytes += 4
        else:
            raise QoptError(f"{what}: unknown kind {str(kind)[:20]!r}")
        sizes[i] = max(nbytes, 4) // 4
    limits.check(f"'{path}': the device memory it asks for", device_bytes, "max_device_bytes")
    _check_states(program, path, limits)

    def check_tensor(t: Tensor, what: str) -> int:
        _int(t.buffer, f"{what}'s buffer", 0, len(program.buffers) - 1)
        if t.dtype not in TENSOR_DTYPES:
            raise QoptError(f"{what}: dtype {str(t.dtype)[:20]!r} is not a tensor dtype")
        dims = _list(t.shape, f"{what}'s shape")
        limits.check(f"{what}'s rank", len(dims), "max_tensor_rank")
        numel = 1
        for d in dims:
            numel *= _int(d, f"{what}'s dimension")
        if max(numel, 1) > sizes[t.buffer]:
            raise QoptError(
                f"{what}: {numel} elements do not fit buffer {t.buffer} ({sizes[t.buffer]} words)"
            )
        return numel

    for m, method in enumerate(methods):
        first = method.inputs[0]
        for position, t in enumerate(program.method_inputs(method)):
            what = f"'{path}': input {first + position}"
            check_tensor(t, what)
            record = program.buffers[t.buffer]
            index = _int(t.index, f"{what}'s index", 0, position)
            if (
                record["kind"] != "input"
                or record.get("index") != index
                or record.get("method") != m
                or index != position
            ):
                raise QoptError(
                    f"{what}: buffer {t.buffer} is not the upload buffer of input {index} "
                    f"of method {method.name}"
                )
    for i, t in enumerate(program.outputs):
        check_tensor(t, f"'{path}': output {i}")
        if program.buffers[t.buffer]["kind"] == "status":
            raise QoptError(f"'{path}': output {i}: buffer {t.buffer} is a status buffer")
    status_users: dict[int, int] = {}
    limits.check(f"'{path}': the number of dispatches", len(program.steps), "max_dispatches")
    for i, step in enumerate(program.steps):
        what = f"'{path}': dispatch {i}"
        k = _int(step.kernel, f"{what}'s kernel", 0, len(program.kernels) - 1)
        entry = program.kernels[k]
        spec = table[entry.kernel]
        ids = _list(step.buffers, f"{what}'s buffers")
        for b in ids:
            _int(b, f"{what}'s buffer id", 0, len(program.buffers) - 1)
        if not isinstance(step.push, dict):
            raise QoptError(f"{what}: push constants must be an object")
        groups = _list(step.groups, f"{what}'s workgroups")
        try:
            spec.check_dispatch(step.push, entry.spec, groups, [sizes[b] for b in ids])
        except ValueError as e:
            raise QoptError(f"{what}: {e}") from None
        for binding, b in zip(spec.bindings, ids, strict=True):
            kind = program.buffers[b]["kind"]
            if binding.is_status and kind != "status":
                raise QoptError(
                    f"{what}: kernel {entry.kernel} binds {kind} buffer {b} at its status "
                    "binding (it takes a status buffer)"
                )
            if kind == "status" and not binding.is_status:
                raise QoptError(
                    f"{what}: kernel {entry.kernel} binds status buffer {b} at binding "
                    f"{binding.name} (a status buffer is bound only at a status binding)"
                )
            if kind == "status":
                if b in status_users:
                    raise QoptError(
                        f"{what}: status buffer {b} is also bound by dispatch {status_users[b]} "
                        "(each dispatch has its own)"
                    )
                status_users[b] = i
            elif binding.writes and kind not in ("alloc", "slot", "state"):
                raise QoptError(
                    f"{what}: kernel {entry.kernel} writes binding {binding.name} into "
                    f"{kind} buffer {b} (only transient and state buffers are written)"
                )
    _check_host_calls(program, path, methods, sizes, limits, device_bytes)


def _check_host_calls(
    program: BundleProgram,
    path: str,
    methods: list[Method],
    sizes: list[int],
    limits: Limits,
    device_bytes: int,
) -> None:
    """Host segments in method and position order, each reading buffers that are not
    status words and writing distinct transient buffers it does not read, its IR
    parsed and checked (`host.parse_segment`) with one tensor per buffer that fits
    it (a constant read must hold the tensor's ABI type) and whose values need no more
    host memory than the program's device memory (plus `expansion_slack_bytes`); sets
    each call's `segment`."""
    from qopt.backends.vulkan.host import parse_segment
    from qopt.dtypes import numpy_dtype

    calls = _list(program.host_calls, f"'{path}': host segments")
    steps = limits.tally(f"'{path}': its dispatches and host segments together", "max_dispatches")
    steps.add(len(program.steps) + len(calls))
    host_ops = limits.tally(f"'{path}': the ops of its host segments together", "max_graph_nodes")
    last = (0, 0)
    for i, call in enumerate(calls):
        what = f"'{path}': host segment {i}"
        if not isinstance(call, HostCall):
            raise QoptError(f"{what} must be an object")
        m = _int(call.method, f"{what}'s method", 0, len(methods) - 1)
        count = methods[m].steps[1] - methods[m].steps[0]
        at = _int(call.at, f"{what}'s position", 0, count)
        if (m, at) < last:
            raise QoptError(f"{what}: host segments must be in method and position order")
        last = (m, at)
        reads = _list(call.reads, f"{what}'s reads")
        writes = _list(call.writes, f"{what}'s writes")
        for b in (*reads, *writes):
            _int(b, f"{what}'s buffer id", 0, len(program.buffers) - 1)
        if any(program.buffers[b]["kind"] == "status" for b in reads):
            raise QoptError(f"{what}: it reads a status buffer (read only by its kernel)")
        if not writes or len(set(writes)) != len(writes) or set(writes) & set(reads):
            raise QoptError(f"{what}: it writes distinct buffers, at least one, none it reads")
        for b in writes:
            if program.buffers[b]["kind"] not in ("alloc", "slot"):
                raise QoptError(
                    f"{what}: it writes {program.buffers[b]['kind']} buffer {b} (a host segment "
                    "writes only transient buffers)"
                )
        ops = _list(call.ops, f"{what}'s ops")
        limits.check(f"{what}: its ops", len(ops), "max_graph_nodes")
        for text in ops:
            if not isinstance(text, str) or len(text) > MAX_WHAT or not text.isprintable():
                raise QoptError(
                    f"{what}: each of its ops is named by one printable line of at most "
                    f"{MAX_WHAT} characters"
                )
        segment = parse_segment(call.ir, what, limits, device_bytes + limits.expansion_slack_bytes)
        host_ops.add(sum(1 for _ in segment.module.walk()))  # what runs, not the names
        types = [(t, "argument") for t in segment.input_types]
        types += [(t, "result") for t in segment.result_types]
        if len(segment.input_types) != len(reads) or len(segment.result_types) != len(writes):
            raise QoptError(
                f"{what}: its function takes {len(segment.input_types)} tensors and gives "
                f"{len(segment.result_types)} for {len(reads)} buffers read and {len(writes)} "
                "written"
            )
        for (t, kind), b in zip(types, [*reads, *writes], strict=True):
            dims = [int(d) for d in t.get_shape()]
            limits.check(f"{what}'s rank", len(dims), "max_tensor_rank")
            numel = 1
            for d in dims:
                numel *= d
            limits.check(f"{what}'s elements", numel, "max_tensor_elements")
            try:
                dtype = numpy_dtype(t.get_element_type()).name
            except (ValueError, KeyError, TypeError):
                dtype = str(t.get_element_type())
            if dtype not in TENSOR_DTYPES:
                raise QoptError(f"{what}: a {kind} of dtype {dtype[:20]!r} is no tensor dtype")
            if max(numel, 1) > sizes[b]:
                raise QoptError(
                    f"{what}: a {kind} of {numel} elements does not fit buffer {b} "
                    f"({sizes[b]} words)"
                )
            record = program.buffers[b]
            if record["kind"] == "constant":
                words = program.constants[record["constant"]]
                if words.dtype != abi_numpy(dtype):
                    raise QoptError(
                        f"{what}: it reads constant buffer {b} ({words.dtype}) as {dtype}, "
                        f"which travels as {abi_numpy(dtype)}"
                    )
        call.segment = segment


def load_bundle(
    data: bytes, path: str = "<bundle>", limits: Limits = DEFAULT_LIMITS
) -> BundleProgram:
    """Parse and check a `.qvk` file (untrusted input): the header, every blob's size
    and hash, the SPIR-V (`_verify_spirv`) and the whole program (`check_program`).
    QoptError (one line) if anything does not match."""
    if len(data) < _HEADER.size:
        raise QoptError(f"'{path}' is not a qopt Vulkan bundle: too short")
    magic, version, size = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise QoptError(f"'{path}' is not a qopt Vulkan bundle (bad magic {magic!r})")
    if not MIN_VERSION <= version <= VERSION:
        raise QoptError(
            f"'{path}' is a version {version} Vulkan bundle; this qopt reads versions "
            f"{MIN_VERSION} to {VERSION}: recompile it with `qopt-opt ... -t vkbundle`"
        )
    limits.check(f"'{path}': its manifest's size", size, "max_manifest_bytes")
    start = _HEADER.size + size
    if start > len(data):
        raise QoptError(f"'{path}' is truncated (manifest)")
    try:
        manifest = json.loads(data[_HEADER.size : start].decode())
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise QoptError(f"'{path}' has a corrupted manifest: {type(e).__name__}") from None
    blobs = memoryview(data)[start:]
    manifest = _record(
        manifest,
        f"'{path}': the manifest",
        {"kernels", "constants", "buffers", "slots", "inputs", "outputs", "steps", "states",
         "methods"},
    )  # fmt: skip

    def blob(record: Any, what: str) -> bytes:
        record = _record(record, f"'{path}': {what}'s blob", {"offset", "size", "sha256"})
        lo = _int(record["offset"], f"'{path}': {what}'s offset")
        n = _int(record["size"], f"'{path}': {what}'s size")
        if lo + n > len(blobs):
            raise QoptError(f"'{path}' is truncated ({what})")
        chunk = bytes(blobs[lo : lo + n])
        if _sha(chunk) != record["sha256"]:
            raise QoptError(f"'{path}' is corrupted: the hash of {what} does not match")
        return chunk

    program = BundleProgram()
    for i, k in enumerate(_list(manifest["kernels"], f"'{path}': kernels")):
        k = _record(k, f"'{path}': kernel {i}", {"kernel", "glsl", "spec", "spirv"})
        if not isinstance(k["kernel"], str) or not isinstance(k["glsl"], str):
            raise QoptError(f"'{path}': kernel {i}'s names must be strings")
        spec_values = _record(k["spec"], f"'{path}': kernel {i}'s spec", set())
        spirv = blob(k["spirv"], f"kernel {i}")
        program.kernels.append(KernelEntry(k["kernel"], k["glsl"], dict(spec_values), spirv))
    for i, c in enumerate(_list(manifest["constants"], f"'{path}': constants")):
        c = _record(c, f"'{path}': constant {i}", {"dtype"})
        dtype = _CONSTANT_DTYPES.get(c["dtype"]) if isinstance(c["dtype"], str) else None
        if dtype is None:
            raise QoptError(f"'{path}': constant {i} has dtype {str(c['dtype'])[:20]!r}")
        raw = blob(c, f"constant {i}")
        if len(raw) % 4:
            raise QoptError(f"'{path}': constant {i} is not a whole number of words")
        program.constants.append(np.frombuffer(raw, dtype=dtype).copy())
    program.buffers = _list(manifest["buffers"], f"'{path}': buffers")
    program.slots = _list(manifest["slots"], f"'{path}': slots")
    try:
        program.inputs = [
            Tensor(**_record(t, f"'{path}': input", {"buffer", "shape", "dtype"}))
            for t in _list(manifest["inputs"], f"'{path}': inputs")
        ]
        program.outputs = [
            Tensor(**_record(t, f"'{path}': output", {"buffer", "shape", "dtype"}))
            for t in _list(manifest["outputs"], f"'{path}': outputs")
        ]
        program.steps = [
            Step(**_record(s, f"'{path}': dispatch", {"kernel", "buffers", "push", "groups"}))
            for s in _list(manifest["steps"], f"'{path}': dispatches")
        ]
        program.states = [
            StateEntry(
                **_record(e, f"'{path}': state", {"name", "buffer", "shape", "dtype", "initial"})
            )
            for e in _list(manifest["states"], f"'{path}': states")
        ]
        program.methods = [
            Method(**_record(m, f"'{path}': method", {"name", "steps", "inputs", "outputs"}))
            for m in _list(manifest["methods"], f"'{path}': methods")
        ]
        if "host_calls" in manifest and version < 4:
            raise QoptError(f"'{path}': host segments need a version 4 bundle")
        program.host_calls = [
            HostCall(
                **_record(
                    h, f"'{path}': host segment", {"method", "at", "reads", "writes", "ir", "ops"}
                )
            )
            for h in _list(manifest.get("host_calls", []), f"'{path}': host segments")
        ]
    except TypeError as e:  # unknown keys
        raise QoptError(f"'{path}' has a corrupted manifest: {e}") from None
    check_program(program, path, limits)
    for i, entry in enumerate(program.kernels):
        _verify_spirv(entry, f"'{path}': kernel {i} ({entry.kernel})")
    return program


def read_bundle(path: str | os.PathLike[str], limits: Limits = DEFAULT_LIMITS) -> BundleProgram:
    """A `.qvk` file, read whole (bounded by `max_manifest_bytes` plus its blobs) and
    checked by `load_bundle`."""
    if not isinstance(path, str | os.PathLike):
        raise QoptError(f"read_bundle takes a path, got {type(path).__name__}")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise QoptError(f"cannot read Vulkan bundle '{path}': {e.strerror}") from None
    return load_bundle(data, str(path), limits)


def write_atomically(
    path: str | os.PathLike[str],
    data: bytes | Sequence[bytes | memoryview],
    head: tuple[int, Callable[[], bytes]] | None = None,
) -> None:
    """Write `data` (bytes, or pieces written one after the other) under a temporary
    name and rename it into place. `head` (size, make): `data` goes after `size`
    bytes, and `make()` (called once `data` is written) gives those bytes."""
    target = os.fspath(path)
    fd, tmp = temp_file_beside(target)  # 0644 under umask 022, as open() would make it
    try:
        with os.fdopen(fd, "wb") as f:
            if head is not None:
                f.seek(head[0])
            for piece in [data] if isinstance(data, bytes) else data:
                f.write(piece)
            if head is not None:
                front = head[1]()
                if len(front) != head[0]:
                    raise AssertionError(f"write_atomically: head of {len(front)} bytes")
                f.seek(0)
                f.write(front)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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
        from qopt.report import phase

        with phase("serialization"):
            with phase("program build"):
                program = program_from_module(module)
            parts = bundle_parts(program)
        output.flush()
        for piece in parts:
            binary.write(piece)
        binary.flush()
