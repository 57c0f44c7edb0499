"""Check a Vulkan program dispatch by dispatch against the kernels' numpy references.

`check_dispatches(program, inputs)` runs the program's steps on the host with
each kernel's reference and, for every step, runs that one dispatch on the
device from the reference's own state before it, then compares every buffer the
kernel writes. Each step therefore starts from identical inputs, so a
difference names the kernel that computes differently on this device (rather
than the first place an upstream difference became visible). Used by
`qopt-run --check-dispatches` and the Vulkan tests.

Host segments (the host fallback) run on the host memory at their place, as the
artifact runs them between its submissions; only dispatches are compared.

Index status words (the "status" buffers of gather_rows and the embeddings) start
at 0 and are compared like any written binding; when the reference and the device
agree that a dispatch found an index out of range, the check stops with the
QoptError the artifact raises for it (the program has no result on such inputs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from qopt.backends.vulkan import pool
from qopt.backends.vulkan.artifact import _to_abi
from qopt.backends.vulkan.host import run_host_call
from qopt.backends.vulkan.program import BundleProgram, Method
from qopt.backends.vulkan.runtime import Dispatch
from qopt.inputs import check_inputs
from qopt.interpreters.kernels import kernel

_WORD = {"f32": np.float32, "i32": np.int32, "u32": np.uint32}


@dataclass
class StepReport:
    """How one dispatch's device result compares with its numpy reference."""

    step: int
    kernel: str
    binding: str
    count: int
    """Elements that differ."""
    max_abs: float
    """Largest absolute difference (as float64; integer buffers compare as integers)."""
    max_ulp: int
    """Largest distance in units of the last place (f32 bindings; 0 for integer ones)."""
    example: tuple[int, float, float] | None
    """(flat index, device value, reference value) of the largest difference."""
    max_rel: float = 0.0
    """`max_abs` relative to the largest reference magnitude in the binding."""
    exact: bool = False
    """Whether the kernel is declared bit-exact (`KernelSpec.exact`): then any
    report is a bug in the kernel or its reference."""

    def __str__(self) -> str:
        where = ""
        if self.example is not None:
            i, got, want = self.example
            where = f"; e.g. [{i}] device {got!r} vs reference {want!r}"
        ulp = f", {self.max_ulp} ulp" if self.max_ulp else ""
        kind = " (declared exact)" if self.exact else ""
        return (
            f"step {self.step} {self.kernel}{kind}: {self.binding} differs in {self.count} "
            f"element(s), max |diff| {self.max_abs:.3g} ({self.max_rel:.2g} relative){ulp}{where}"
        )


def _ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| in f32 units in the last place (sign-magnitude ordered)."""
    ia = a.view(np.int32).astype(np.int64)
    ib = b.view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia)
    ib = np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
    return np.abs(ia - ib)


def _host_buffers(
    program: BundleProgram, inputs: Sequence[np.ndarray], method: Method | None = None
) -> list[np.ndarray]:
    """Host memory for every buffer id, slots sharing memory as on the device: the
    inputs of `method` (default: the program's default method), the states at their
    initial values."""
    method = program.method(None) if method is None else method
    owner = program.methods.index(method)
    slots = [np.zeros(max(n, 4), np.uint8) for n in program.slots]
    by_index = {t.index: (t, i) for i, t in enumerate(program.method_inputs(method))}
    memory: list[np.ndarray] = []
    for record in program.buffers:
        kind = record["kind"]
        nbytes = max(int(record["nbytes"]), 4)
        if kind == "constant":
            memory.append(np.ascontiguousarray(program.constants[record["constant"]]).copy())
        elif kind == "slot":
            memory.append(slots[record["slot"]])
        elif kind == "status":  # zero before the one dispatch that sets it
            memory.append(np.zeros(4, np.uint8))
        elif kind == "input" and record.get("method", 0) == owner:
            tensor, position = by_index[record["index"]]
            data = _to_abi(np.asarray(inputs[position]), tensor.dtype, position)
            raw = np.zeros(nbytes, np.uint8)
            raw[: data.nbytes] = data.view(np.uint8)
            memory.append(raw)
        elif kind == "state":
            raw = np.zeros(nbytes, np.uint8)
            initial = program.states[record["state"]].initial
            if initial is not None:
                raw[:] = program.constants[initial].view(np.uint8)
            memory.append(raw)
        else:
            memory.append(np.zeros(nbytes, np.uint8))
    return memory


_NAMES = {np.dtype(v): k for k, v in _WORD.items()}


def _write_words(memory: np.ndarray, words: np.ndarray) -> None:
    _words(memory, _NAMES[words.dtype])[: words.size] = words


def _words(memory: np.ndarray, dtype: str) -> np.ndarray:
    raw = memory.view(np.uint8)
    usable = raw[: raw.size // 4 * 4]
    return usable.view(_WORD[dtype])


def check_dispatches(
    program: BundleProgram,
    inputs: Sequence[Any],
    device: Any = None,
    stop_at_first: bool = False,
    method: str | None = None,
) -> list[StepReport]:
    """Every (step, written binding) of `method` (the default one: the only one, or
    `forward`) whose device result differs from the reference, on the initial state.

    `device`: an open `runtime.VulkanDevice` (else one is leased from pool.py here).
    Steps run one at a time (one submit each): slow, for diagnosis only.
    """
    entry_point = program.method(method)
    signature = [(tuple(t.shape), np.dtype(t.dtype)) for t in program.method_inputs(entry_point)]
    arrays = check_inputs(inputs, signature, "the Vulkan program")
    memory = _host_buffers(program, arrays, entry_point)
    status_checks = {(c.step, c.buffer): c for c in program.status_checks(entry_point)}
    own = device is None
    dev = pool.lease() if own else device  # (a device of the process's pool)
    reports: list[StepReport] = []
    calls = program.method_host_calls(entry_point)

    def host_calls_at(index: int) -> None:
        for call in calls:
            if call.at == index:
                run_host_call(
                    program,
                    call,
                    lambda b, dtype, count: _words(memory[b], _NAMES[dtype])[:count].copy(),
                    lambda b, words: _write_words(memory[b], words),
                )

    steps = program.method_steps(entry_point)
    try:
        for index, step in enumerate(steps):
            host_calls_at(index)
            entry = program.kernels[step.kernel]
            spec = kernel(entry.kernel)
            # The device runs this one dispatch from the reference's state.
            device_buffers = []
            for binding, buffer_id in zip(spec.bindings, step.buffers, strict=True):
                host = memory[buffer_id].view(np.uint8)
                buf = dev.buffer(max(host.nbytes, 4))
                buf.write(host)
                device_buffers.append(buf)
            try:
                dev.run(
                    [
                        Dispatch(
                            spec,
                            device_buffers,
                            push=step.push,
                            spec=entry.spec,
                            groups=(step.groups[0], step.groups[1], step.groups[2]),
                        )
                    ]
                )
                got = {
                    b.name: buf.read(np.uint8, memory[i].view(np.uint8).nbytes)
                    for b, buf, i in zip(spec.bindings, device_buffers, step.buffers, strict=True)
                    if b.writes
                }
            finally:
                for buf in device_buffers:
                    buf.free()
            # The reference advances the host state.
            spec.run_reference(
                [
                    _words(memory[i], b.dtype)
                    for b, i in zip(spec.bindings, step.buffers, strict=True)
                ],
                step.push,
                entry.spec,
            )
            flagged = None
            for b, buffer_id in zip(spec.bindings, step.buffers, strict=True):
                if not b.writes:
                    continue
                want = _words(memory[buffer_id], b.dtype)
                have = _words(got[b.name], b.dtype)
                report = _compare(index, entry.kernel, b.name, b.dtype, have, want)
                if report is not None:
                    report.exact = spec.exact(spec.spec_values(entry.spec))
                    reports.append(report)
                elif b.is_status and int(want[0]) != 0:
                    flagged = status_checks[(index, buffer_id)]
            if flagged is not None:
                raise flagged.error()
            if reports and stop_at_first:
                break
        else:
            host_calls_at(len(steps))
    finally:
        if own:
            pool.give_back(dev)
    return reports


def _compare(
    step: int, kernel_name: str, binding: str, dtype: str, have: np.ndarray, want: np.ndarray
) -> StepReport | None:
    if dtype == "f32":
        same = (have == want) | (np.isnan(have) & np.isnan(want))
    else:
        same = have == want
    if bool(same.all()):
        return None
    diff = np.abs(have.astype(np.float64) - want.astype(np.float64))
    diff = np.where(same, 0.0, np.nan_to_num(diff, nan=np.inf))
    worst = int(np.argmax(diff))
    ulp = int(_ulp_distance(have, want)[~same].max()) if dtype == "f32" else 0
    finite = np.abs(want[np.isfinite(want)].astype(np.float64))
    scale = float(finite.max()) if finite.size else 0.0
    return StepReport(
        step,
        kernel_name,
        binding,
        int((~same).sum()),
        float(diff[worst]),
        ulp,
        (worst, have[worst].item(), want[worst].item()),
        float(diff[worst]) / scale if scale > 0 else float("inf"),
    )
