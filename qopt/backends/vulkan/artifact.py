"""The Vulkan artifact: a vkc program bound to a Vulkan device, callable.

`VulkanArtifact(program)` opens the device (runtime.VulkanDevice: an explicit
`device`, else `$QOPT_VULKAN_DEVICE`, else the first compute-capable one) on
first use, creates the pipelines, uploads the constant buffers and records
every dispatch of a call into one command buffer once. A call writes the
inputs, zeroes every index status word, submits that command buffer, waits,
raises QoptError naming the op if a kernel found an index out of range (the
first such dispatch), and reads the outputs back.
`close()` frees every Vulkan object (also on `with` exit).
"""

from __future__ import annotations

import os
from typing import Any, Self

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from qopt.backends.vulkan.bundle import (
    BundleProgram,
    StatusCheck,
    bundle_bytes,
    program_from_module,
    read_bundle,
    write_atomically,
)
from qopt.dialects.tensors import numel
from qopt.inputs import check_inputs
from qopt.kernels import kernel_spec
from qopt.kernels.abi import narrow
from qopt.limits import DEFAULT_LIMITS, Limits

ABI = {"f32": np.float32, "i32": np.int32, "u32": np.uint32}


class VulkanArtifact:
    """`artifact(*inputs) -> tuple[np.ndarray, ...]`, run on the Vulkan device."""

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
        self._recorded: Any = None
        self._inputs: list[Any] = []
        self._outputs: list[Any] = []
        self._status: list[tuple[Any, StatusCheck]] = []
        self.last_times: list[float] | None = None

    # ----- files ------------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        return bundle_bytes(self.program)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the `.qvk` bundle (atomically)."""
        write_atomically(path, self.to_bytes())

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

    # ----- running ----------------------------------------------------------------------

    @property
    def device(self) -> Any:
        if self._device is None:
            self._open()
        return self._device

    def _open(self) -> None:
        from qopt.backends.vulkan.runtime import Dispatch, VulkanDevice

        program = self.program
        dev = VulkanDevice(self._device_choice, validation=self._validation)
        try:
            self._install_spirv(dev)
            buffers: list[Any] = []
            slots = [dev.buffer(max(n, 4)) for n in program.slots]
            for record in program.buffers:
                kind = record["kind"]
                if kind == "constant":
                    buffers.append(dev.upload(program.constants[record["constant"]]))
                elif kind == "slot":
                    buffers.append(slots[record["slot"]])
                else:
                    buffers.append(dev.buffer(max(int(record["nbytes"]), 4)))
            dispatches = []
            for step in program.steps:
                entry = program.kernels[step.kernel]
                spec = kernel_spec(entry.kernel)
                dispatches.append(
                    Dispatch(
                        spec,
                        [buffers[i] for i in step.buffers],
                        push=step.push,
                        spec=entry.spec,
                        groups=(step.groups[0], step.groups[1], step.groups[2]),
                    )
                )
            self._recorded = dev.program(dispatches, timestamps=True)
            self._inputs = [buffers[t.buffer] for t in program.inputs]
            self._outputs = [buffers[t.buffer] for t in program.outputs]
            self._status = [(buffers[c.buffer], c) for c in program.status_checks()]
        except BaseException:
            dev.close()
            raise
        self._device = dev

    def _install_spirv(self, dev: Any) -> None:
        """Use the bundle's own SPIR-V (checked on load) for its kernels."""
        from qopt.backends.vulkan.spirv import compile_kernel

        for entry in self.program.kernels:
            if entry.spirv is None:
                entry.spirv = compile_kernel(entry.glsl)
            dev.shader_module(entry.glsl, entry.spirv)

    def __call__(self, *inputs: Any) -> tuple[np.ndarray, ...]:
        program = self.program
        signature = [(tuple(t.shape), np.dtype(t.dtype)) for t in program.inputs]
        arrays = check_inputs(inputs, signature, "the Vulkan program")
        staged = [
            _to_abi(array, tensor.dtype, i)
            for i, (array, tensor) in enumerate(zip(arrays, program.inputs, strict=True))
        ]
        self.device
        for buf, data in zip(self._inputs, staged, strict=True):
            buf.write(data)
        zero = np.zeros(1, np.uint32)
        for buf, _ in self._status:
            buf.write(zero)
        self.last_times = self._recorded.submit()
        for buf, check in self._status:
            if int(buf.read(np.uint32, 1)[0]) != 0:
                raise check.error()
        outputs = []
        for buf, tensor in zip(self._outputs, program.outputs, strict=True):
            want = np.dtype(tensor.dtype)
            raw = buf.read(np.float32 if want.kind == "f" else np.int32, numel(tensor.shape))
            outputs.append(raw.astype(want).reshape(tuple(tensor.shape)))
        return tuple(outputs)

    def gpu_seconds(self) -> float | None:
        """Sum of the dispatches' GPU time (timestamps) of the last call."""
        return None if self.last_times is None else float(sum(self.last_times))

    def close(self) -> None:
        if self._recorded is not None:
            self._recorded.close()
            self._recorded = None
        if self._device is not None:
            self._device.close()
            self._device = None

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
    """A vkc module as a callable artifact (its kernels compiled to SPIR-V now)."""
    from qopt.backends.vulkan.bundle import compile_spirv

    program = program_from_module(module)
    compile_spirv(program)
    return VulkanArtifact(program, module, device, validation)
