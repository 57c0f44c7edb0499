"""The Vulkan artifact: a vkc program bound to a Vulkan device, callable.

`VulkanArtifact(program)` opens the device (runtime.VulkanDevice: an explicit
`device`, else `$QOPT_VULKAN_DEVICE`, else the first compute-capable one; leased
from pool.py, which reuses a device another artifact of this process closed, with
its pipelines) on first use, creates the pipelines and uploads the constant buffers once, and
allocates the memory slots, input uploads and index status words every session
shares (calls run one at a time: a lock orders them).

Program state (a KV cache) lives in sessions: `artifact.session()` allocates the
program's state buffers on the device and fills them with their initial values;
`session.run(*inputs, method=None)` runs one method (`prefill`, `decode`, or the
only one) on them, so what a call leaves in the state is what the next call
reads, without any upload or download of the state; `reset()` writes the initial
values again, `read_state(name)` downloads one on demand. Each session records
each method's dispatches into one command buffer once (on its first call), bound
to its own state buffers: two sessions never share state. A call writes the
inputs, zeroes the method's index status words, submits that command buffer,
waits, raises QoptError naming the op if a kernel found an index out of range
(the first such dispatch), and reads the outputs back. Calling the artifact
itself, `artifact(*inputs, method=None)`, runs one call on a fresh state (its own
session, reset before each call). `close()` frees every buffer and command buffer
(also on `with` exit) and gives the device back to the pool; the sessions of a closed
artifact cannot run any more.

Host segments (`vkc.host_call`, the host fallback for ops without a kernel) split a
method's dispatches into several command buffers: a call submits the dispatches
before a segment and waits, checks their index status words, downloads the buffers
the segment reads (once each; a constant is read from the program's host copy),
runs the segment with the reference interpreter (qopt/backends/vulkan/host.py),
uploads its results (once each) and goes on with the next command buffer.
`artifact.fallback_ops` lists the ops run so, with their transfer bytes.
"""

from __future__ import annotations

import os
import threading
import weakref
from math import prod
from typing import TYPE_CHECKING, Any, Self

import numpy as np

from qopt import arguments
from qopt.backends import format_bytes, format_method, format_tensor
from qopt.backends.vulkan import pool
from qopt.backends.vulkan.program import (
    BundleProgram,
    FallbackOp,
    HostCall,
    Method,
    StatusCheck,
    abi_numpy,
)
from qopt.backends.vulkan.qvk import bundle_bytes, fill_spirv, read_bundle, write_bundle
from qopt.backends.vulkan.runtime import Dispatch
from qopt.errors import QoptError
from qopt.inputs import check_inputs, input_shapes
from qopt.kernels import kernel_spec
from qopt.kernels.abi import narrow
from qopt.limits import DEFAULT_LIMITS, Limits
from qopt.registry import LazyModule
from qopt.variants import logical_methods

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from qopt import report as _report
    from qopt.backends.vulkan import bundle as _bundle
    from qopt.backends.vulkan import host as _host
    from qopt.report import CompileReport
else:
    # The compiler side, imported when used: loading and running a `.qvk` imports no
    # IR (tests/unit/test_layering.py). `compile_artifact` builds the program from a
    # vkc module (bundle.py); a host segment runs in the interpreter (host.py).
    _report = LazyModule("qopt.report")
    _bundle = LazyModule("qopt.backends.vulkan.bundle")
    _host = LazyModule("qopt.backends.vulkan.host")

ABI = {"f32": np.float32, "i32": np.int32, "u32": np.uint32}


class VulkanArtifact:
    """`artifact(*inputs) -> tuple[np.ndarray, ...]`, run on the Vulkan device;
    `artifact.session()` for calls that keep the program's state."""

    def __init__(
        self,
        program: BundleProgram,
        module: ModuleOp | None = None,
        device: str | int | None = None,
        validation: bool | None = None,
    ):
        self.program = program
        self.module = module
        self._device_choice = device
        self._validation = validation
        self._device: Any = None
        self._shared: list[Any] = []
        """Per buffer id, the device buffer every session uses (None: a state buffer,
        each session's own)."""
        self._checks: dict[str, list[StatusCheck]] = {}
        self._fresh: VulkanSession | None = None
        self._sessions: weakref.WeakSet[VulkanSession] = weakref.WeakSet()
        self._lock = threading.RLock()
        self.last_times: list[float] | None = None
        self.report: CompileReport | None = None
        """What the compile did (`qopt.compile`; None for a loaded bundle)."""

    # ----- files ------------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        return bundle_bytes(self.program)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the `.qvk` bundle (atomically)."""
        write_bundle(self.program, path)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        device: str | int | None = None,
        limits: Limits = DEFAULT_LIMITS,
    ) -> VulkanArtifact:
        """A `.qvk` bundle, checked whole before anything reaches a device."""
        return cls(read_bundle(path, limits), None, device)

    @property
    def kernel_names(self) -> list[str]:
        return self.program.kernel_names()

    @property
    def fallback_ops(self) -> list[FallbackOp]:
        """Every op the program runs on the host (compiled with fallback=True), with
        the bytes its host segment downloads and uploads per call (one line each with
        `str()`); empty when every op has a Vulkan kernel."""
        return self.program.fallback_ops()

    def __repr__(self) -> str:
        program = self.program
        constants = sum(c.nbytes for c in program.constants)
        spirv = sum(len(k.spirv or b"") for k in program.kernels)
        lines = [
            f"VulkanArtifact({len(program.steps)} dispatches of {len(self.kernel_names)} "
            f"kernels, constants {format_bytes(constants)}, SPIR-V {format_bytes(spirv)})"
        ]
        for method in program.methods:
            inputs = [format_tensor(None, t.dtype, t.shape) for t in program.method_inputs(method)]
            outputs = [
                format_tensor(None, t.dtype, t.shape) for t in program.method_outputs(method)
            ]
            lines.append("  " + format_method(method.name, inputs, outputs))
        if program.states:
            lines.append(f"  states: {', '.join(self.state_names)}")
        lines.extend(f"  {op}" for op in self.fallback_ops)
        return "\n".join(lines)

    @property
    def methods(self) -> list[str]:
        """The program's entry points (`forward`, or `prefill` and `decode`), in order
        (a method compiled at several sizes listed once)."""
        return logical_methods(self.program.method_names())

    @property
    def state_names(self) -> list[str]:
        """The program's states (its mutated buffers' fully qualified names)."""
        return [s.name for s in self.program.states]

    # ----- running ----------------------------------------------------------------------

    @property
    def device(self) -> Any:
        if self._device is None:
            self._open()
        return self._device

    def _open(self) -> None:
        program = self.program
        dev = pool.lease(self._device_choice, self._validation)
        try:
            self._install_spirv(dev)
            shared: list[Any] = []
            slots = [dev.buffer(max(n, 4)) for n in program.slots]
            for record in program.buffers:
                kind = record["kind"]
                if kind == "constant":
                    shared.append(dev.upload(program.constants[record["constant"]]))
                elif kind == "slot":
                    shared.append(slots[record["slot"]])
                elif kind == "state":
                    shared.append(None)
                else:
                    shared.append(dev.buffer(max(int(record["nbytes"]), 4)))
            for entry in program.kernels:  # every pipeline now, not on a session's first call
                dev.pipeline(kernel_spec(entry.kernel), entry.spec)
        except BaseException:
            dev.close()
            raise
        self._shared = shared
        self._checks = {m.name: program.status_checks(m) for m in program.methods}
        self._device = dev

    def _install_spirv(self, dev: Any) -> None:
        """Use the bundle's own SPIR-V (checked on load) for its kernels."""
        fill_spirv(self.program)
        for entry in self.program.kernels:
            dev.shader_module(entry.glsl, entry.spirv)

    def session(self, _owned: bool = False) -> VulkanSession:
        """A new session: the program's state buffers on the device, at their initial
        values (see the module docstring)."""
        session = VulkanSession(self, _owned)
        self._sessions.add(session)
        return session

    def __call__(self, *inputs: Any, method: str | None = None) -> tuple[np.ndarray, ...]:
        """One call of `method` (the only one, or `forward`, by default) on a fresh state."""
        with self._lock:
            if self._fresh is None or self._fresh.closed:
                self._fresh = self.session(_owned=True)
            elif self.program.states:
                self._fresh.reset()
            return self._fresh.run(*inputs, method=method)

    def gpu_seconds(self) -> float | None:
        """Sum of the dispatches' GPU time (timestamps) of the last call."""
        return None if self.last_times is None else float(sum(self.last_times))

    def close(self) -> None:
        with self._lock:
            for session in list(self._sessions):
                session.close()
            self._fresh = None
            if self._device is not None:
                pool.give_back(self._device)  # its buffers freed, its pipelines kept
                self._device = None
            self._shared = []

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class VulkanSession:
    """Calls of a Vulkan artifact's methods on one state kept on the device (see the
    module docstring): `run(*inputs, method=None)`, `reset()`, `read_state(name)`,
    `methods`, `state_names`, `close()`."""

    def __init__(self, artifact: VulkanArtifact, owned: bool = False):
        # The artifact's own session (`artifact(...)`'s) refers to it weakly: no cycle
        # keeps a dropped artifact, and the device it leased, alive until a collection.
        self._strong: VulkanArtifact | None = None if owned else artifact
        self._weak = weakref.ref(artifact)
        self._device = device = artifact.device
        program = artifact.program
        self.closed = False
        self._states = [device.buffer(4 * max(prod(s.shape), 1)) for s in program.states]
        self._buffers = list(artifact._shared)
        for entry, buf in zip(program.states, self._states, strict=True):
            self._buffers[entry.buffer] = buf
        self._recorded: dict[str, Any] = {}
        self._write_initial()

    @property
    def _artifact(self) -> VulkanArtifact:
        artifact = self._strong if self._strong is not None else self._weak()
        if artifact is None:
            raise QoptError("this session's artifact is gone: keep the artifact to run it")
        return artifact

    @property
    def methods(self) -> list[str]:
        return self._artifact.methods

    @property
    def function_names(self) -> list[str]:
        """The program's functions (a method's size variants each by its own name)."""
        return self._artifact.program.method_names()

    @property
    def state_names(self) -> list[str]:
        return self._artifact.state_names

    def _alive(self) -> VulkanArtifact:
        artifact = self._artifact
        if self.closed or artifact._device is not self._device:
            raise QoptError(
                "this Vulkan session is closed (or its artifact was): start a new one with "
                "artifact.session()"
            )
        return artifact

    def _write_initial(self) -> None:
        program = self._artifact.program
        for entry, buf in zip(program.states, self._states, strict=True):
            if entry.initial is None:
                assert buf.view is not None
                buf.view[:] = 0
            else:
                buf.write(program.constants[entry.initial])

    def reset(self) -> None:
        """Every state back to its initial value (written into the state buffers)."""
        with self._alive()._lock:
            self._write_initial()

    def read_state(self, name: str) -> np.ndarray:
        """A copy of the current value of state `name` (downloaded from the device), in
        its shape and dtype."""
        artifact = self._alive()
        entry = artifact.program.state(arguments.name(name, "read_state's name"))
        with artifact._lock:
            buf = self._states[artifact.program.states.index(entry)]
            words = buf.read(abi_numpy(entry.dtype), max(prod(entry.shape), 1))
        count = prod(entry.shape)
        return words[:count].astype(np.dtype(entry.dtype)).reshape(tuple(entry.shape))

    def _recording(self, method: Method) -> list[Any]:
        """The parts of `method` on this session's buffers (recorded once): command
        buffers of its dispatches, and the host segments between them (HostCall)."""
        recorded = self._recorded.get(method.name)
        if recorded is None:
            program = self._artifact.program
            steps = program.method_steps(method)
            calls = program.method_host_calls(method)

            def record(lo: int, hi: int) -> Any:
                dispatches = []
                for step in steps[lo:hi]:
                    entry = program.kernels[step.kernel]
                    dispatches.append(
                        Dispatch(
                            kernel_spec(entry.kernel),
                            [self._buffers[i] for i in step.buffers],
                            push=step.push,
                            spec=entry.spec,
                            groups=(step.groups[0], step.groups[1], step.groups[2]),
                        )
                    )
                return self._device.program(dispatches, timestamps=True)

            if not calls:
                recorded = [record(0, len(steps))]
            else:  # command buffers between the host segments
                recorded = []
                cuts = sorted({0, *(c.at for c in calls), len(steps)})
                try:
                    for lo, hi in zip(cuts, [*cuts[1:], len(steps)], strict=True):
                        recorded.extend(c for c in calls if c.at == lo)
                        if hi > lo:
                            recorded.append(record(lo, hi))
                except BaseException:
                    for part in recorded:
                        if not isinstance(part, HostCall):
                            part.close()
                    raise
            self._recorded[method.name] = recorded
        return recorded

    def _host_call(self, call: HostCall) -> None:
        """Run host segment `call`: download what it reads, run it, upload its results."""
        _host.run_host_call(
            self._artifact.program,
            call,
            lambda b, dtype, count: self._buffers[b].read(dtype, count),
            lambda b, words: self._buffers[b].write(words),
        )

    def run(self, *inputs: Any, method: str | None = None) -> tuple[np.ndarray, ...]:
        """Run `method` (the only one, or `forward`, by default) on numpy or torch inputs;
        its state updates stay on the device for the next call."""
        artifact = self._alive()
        program = artifact.program
        m = program.method(arguments.optional_name(method, "method"), input_shapes(inputs))
        tensors = program.method_inputs(m)
        signature = [(tuple(t.shape), np.dtype(t.dtype)) for t in tensors]
        what = "the Vulkan program" if len(program.methods) == 1 else f"method {m.name}"
        arrays = check_inputs(inputs, signature, what)
        staged = [
            _to_abi(array, tensor.dtype, i)
            for i, (array, tensor) in enumerate(zip(arrays, tensors, strict=True))
        ]
        with artifact._lock:
            recorded = self._recording(m)
            for tensor, data in zip(tensors, staged, strict=True):
                self._buffers[tensor.buffer].write(data)
            zero = np.zeros(1, np.uint32)
            checks = artifact._checks[m.name]
            for check in checks:
                self._buffers[check.buffer].write(zero)
            times: list[float] | None = []
            for part in recorded:
                if isinstance(part, HostCall):
                    self._host_call(part)
                    continue
                part_times = part.submit()
                times = None if times is None or part_times is None else times + part_times
                for check in checks:  # before a host segment reads what they guard
                    if int(self._buffers[check.buffer].read(np.uint32, 1)[0]) != 0:
                        raise check.error()
            artifact.last_times = times
            outputs = []
            for tensor in program.method_outputs(m):
                want = np.dtype(tensor.dtype)
                raw = self._buffers[tensor.buffer].read(abi_numpy(tensor.dtype), prod(tensor.shape))
                outputs.append(raw.astype(want).reshape(tuple(tensor.shape)))
        return tuple(outputs)

    def close(self) -> None:
        """Free this session's state buffers and command buffers (idempotent)."""
        if self.closed:
            return
        self.closed = True
        if self._device is None or self._device._closed:
            return
        for recorded in self._recorded.values():
            for part in recorded:
                if not isinstance(part, HostCall):
                    part.close()
        self._recorded.clear()
        for buf in self._states:
            buf.free()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def _to_abi(array: np.ndarray, dtype: str, index: int) -> np.ndarray:
    want = np.dtype(dtype)
    if want.kind == "f":
        return np.ascontiguousarray(array, dtype=np.float32).reshape(-1)
    return narrow(array.astype(want, copy=False), np.dtype(np.int32), f"input {index}")


def compile_artifact(
    module: ModuleOp, device: str | int | None = None, validation: bool | None = None
) -> VulkanArtifact:
    """A vkc module as a callable artifact (its kernels compiled to SPIR-V now). The
    compile side (bundle.py, which reads the IR) is imported here, not by loading."""
    with _report.phase("program build"):
        program = _bundle.program_from_module(module)
    _bundle.compile_spirv(program)
    return VulkanArtifact(program, module, device, validation)
