"""A `.qvk` program as plain data: kernels, buffers, constants, methods, states,
dispatch steps and host segments (the format's data model; docs/qvk-format.md).

What `qopt.backends.vulkan.qvk` reads and writes, `checks.check_program` checks,
the compile side (`bundle.program_from_module`) builds from a vkc module and the
artifact (artifact.py) runs. Nothing here imports the IR.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qopt.errors import QoptError
from qopt.kernels import index_error_message
from qopt.variants import logical_methods, pick_function

MAX_WHAT = 400
"""Longest `what` of a status buffer a bundle may carry (it goes into an error message)."""
MAX_NAME = 400
"""Longest name of a method or state a bundle may carry."""
TENSOR_DTYPES = frozenset(
    {"float32", "float16", "float64", "int8", "int16", "int32", "int64", "uint8", "bool"}
)
"""Tensor dtypes a bundle's inputs, outputs and states may have (the ABI narrows them
to 32-bit words: `abi_numpy`)."""


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
        variant whose inputs have `shapes` (qopt/variants.py)."""
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
