"""The compile report: what a compile did, in kernel terms, and where its time went.

One `CompileReport` per compile (`qopt.compile`, one `qopt-opt` run), filled by the
stages while it is *active* (`with report.active():`, a context variable: nothing
outlives the compile or leaks into another one, and a pass applied outside any
compile records nothing):

- fuse-quant: quantized patterns fused, by kernel name, of those there were; the
  quant ops left unfused, grouped by reason (`record_fusion`);
- the weights at the mid level: bytes kept compressed (at their bit widths) against
  bytes left in float, and the float weights of linear / conv / embedding ops by
  name (a quantizer that skipped a layer shows here) (`record_weights`);
- the final program: ops per target op (CoreML MIL ops; Vulkan dispatches by
  kernel) (`record_target_ops`) and the ops that run on the host instead of the
  device (`fallback_ops`: filled by a target that has a host fallback);
- warnings (`warn`): the silent cliffs (a conversion of quant patterns fuse-quant
  would have fused; float weights next to quantized ones), also sent on at once
  (`qopt-opt: warning: ...` on stderr; a `QoptWarning` from `qopt.compile`);
- phases (`phase(name)`): load, import, each pass (nested under its pipeline),
  kernel compile, serialization, with their wall time and the peak RSS after
  them. With `verbose` each phase prints a progress line on stderr when it ends
  (`qopt: [  12.3 s, peak 1.2 GiB] convert-to-vkc 4.10 s`), so a long compile is
  never silent; `timing_tree()` is `qopt-opt --time-passes`' table.

`str(report)` is the human text (`qopt-opt -v`, `qopt.compile(..., verbose=True)`);
`to_dict()` / `to_json()` the same facts for tools (`qopt-opt --report-json FILE`).
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import json
import resource
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

from xdsl.dialects.builtin import ModuleOp

from qopt.errors import QoptWarning

REPORT_VERSION = 1
"""`version` of `to_dict()`: bumped when a field changes meaning."""

FLOAT_WEIGHT_WARN_BYTES = 64 * 1024
"""A float weight of a linear / conv / embedding op at least this large, in a
program whose other weights are quantized, is a warning (a layer the quantizer
skipped)."""

WEIGHT_OPS = frozenset(
    {"aten.linear", "aten.matmul", "aten.addmm", "aten.mm", "aten.bmm", "aten.embedding",
     "aten.conv2d"}
)  # fmt: skip
"""aten ops whose constant rank >= 2 operands are weights (a float one is a weight the
quantizer left in float)."""


@dataclass
class Phase:
    """One timed stage of a compile."""

    name: str
    depth: int
    """Nesting: a pass inside a pipeline is one deeper than the pipeline."""
    seconds: float = 0.0
    peak_rss: int = 0
    """Peak resident memory of the process when the phase ended, in bytes."""
    start: float = 0.0
    """Seconds since the compile started when the phase began."""


@dataclass
class FloatWeight:
    """A weight of a linear / conv / embedding op left in float."""

    name: str
    """The weight's resource name (the exported parameter's, e.g. `p_lm_head_weight`)."""
    shape: tuple[int, ...]
    dtype: str
    bytes: int
    used_by: str
    """The first op using it (`'aten.linear' at model.py:12`)."""


@dataclass
class CompileReport:
    """What one compile did (see the module docstring)."""

    target: str = ""
    """`coreml`, `vulkan`, or the passes run (`qopt-opt -p ...`)."""
    fused: collections.Counter[str] = field(default_factory=collections.Counter[str])
    """Fused ops by kernel name (`linear_q4gsw`: 18)."""
    patterns: int = 0
    """Quantized patterns found: the fused ones and those a pattern refused."""
    quant_ops: int = 0
    """Quant ops before fuse-quant."""
    quant_ops_left: int = 0
    """Quant ops left after it (they run unfused, correct but slower and larger)."""
    unfused: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    """Quant ops left, grouped by reason: reason -> `'quant.dequantize' at f.py:3
    (for 'aten.linear' at f.py:3)` lines, the largest group first."""
    compressed_weight_bytes: int = 0
    """Quantized weights (data at their bit widths, scales, zero points, codebooks)."""
    compressed_weights: int = 0
    float_weight_bytes: int = 0
    """Float weights of linear / conv / embedding / matmul ops."""
    float_weights: list[FloatWeight] = field(default_factory=list[FloatWeight])
    """Those weights, largest first."""
    other_constant_bytes: int = 0
    """Every other constant (biases, norms, folded masks and tables)."""
    target_ops: collections.Counter[str] = field(default_factory=collections.Counter[str])
    """Ops of the final program by target op (`coreml.linear`, or a Vulkan dispatch
    by kernel: `vkc.dispatch linear_q4gsw`)."""
    fallback_ops: list[str] = field(default_factory=list[str])
    """Ops that run on the host instead of the device (a target's host fallback),
    each with its location."""
    warnings: list[str] = field(default_factory=list[str])
    phases: list[Phase] = field(default_factory=list[Phase])

    verbose: bool = False
    """Print a progress line on `stream` as each phase ends."""
    stream: TextIO | None = None
    """Where progress lines go (None: `sys.stderr` at the time of printing)."""
    on_warning: Callable[[str], None] | None = None
    """Called with each warning as it is recorded (qopt-opt prints it on stderr)."""

    _started: float = field(default_factory=time.perf_counter, repr=False)
    _open: list[Phase] = field(default_factory=list[Phase], repr=False)

    # ----- activation -------------------------------------------------------------------

    @contextlib.contextmanager
    def active(self) -> Iterator[CompileReport]:
        """Make this the report the stages fill, for the `with` block."""
        token = _ACTIVE.set(self)
        try:
            yield self
        finally:
            _ACTIVE.reset(token)

    # ----- phases -----------------------------------------------------------------------

    def begin(self, name: str) -> None:
        phase = Phase(name, len(self._open), start=time.perf_counter() - self._started)
        self.phases.append(phase)
        self._open.append(phase)

    def end(self) -> Phase:
        phase = self._open.pop()
        phase.seconds = time.perf_counter() - self._started - phase.start
        phase.peak_rss = peak_rss()
        if self.verbose:
            elapsed = time.perf_counter() - self._started
            print(
                f"qopt: [{elapsed:7.1f} s, peak {format_size(phase.peak_rss):>9}] "
                f"{'  ' * phase.depth}{phase.name} {phase.seconds:.2f} s",
                file=self.stream or sys.stderr,
                flush=True,
            )
        return phase

    @property
    def depth(self) -> int:
        """Phases begun and not ended."""
        return len(self._open)

    def unwind(self, depth: int) -> None:
        """End the phases begun above `depth` (a pass that raised between callbacks)."""
        while len(self._open) > depth:
            self.end()

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        self.begin(name)
        try:
            yield
        finally:
            self.end()

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self._started

    def timing_tree(self) -> str:
        """The phases as MLIR's `--mlir-timing` prints its passes: wall time, share
        of the total, name indented by nesting."""
        total = self.elapsed
        rule = "===" + "-" * 73 + "==="
        lines = [
            rule,
            "... Execution time report ...".center(len(rule)).rstrip(),
            rule,
            f"  Total Execution Time: {total:.4f} seconds",
            "",
            "  ----Wall Time----  ----Name----",
        ]
        for phase in self.phases:
            share = 100.0 * phase.seconds / total if total > 0 else 0.0
            lines.append(
                f"  {phase.seconds:8.4f} ({share:5.1f}%)  {'  ' * phase.depth}{phase.name}"
            )
        rest = total - sum(p.seconds for p in self.phases if p.depth == 0)
        if self.phases and rest > 0:  # between phases: imports, option checks, setup
            lines.append(f"  {rest:8.4f} ({100.0 * rest / total:5.1f}%)  (rest)")
        lines.append(f"  {total:8.4f} (100.0%)  Total")
        return "\n".join(lines)

    # ----- what the stages record --------------------------------------------------------

    def warn(self, text: str) -> None:
        if text in self.warnings:
            return
        self.warnings.append(text)
        if self.on_warning is not None:
            self.on_warning(text)

    def record_fusion(
        self,
        fused: collections.Counter[str],
        patterns: int,
        quant_ops: int,
        unfused: dict[str, list[str]],
    ) -> None:
        self.fused.update(fused)
        self.patterns += patterns
        self.quant_ops += quant_ops
        self.quant_ops_left = sum(len(lines) for lines in unfused.values())
        self.unfused = dict(sorted(unfused.items(), key=lambda group: -len(group[1])))

    def record_weights(self, summary: WeightSummary) -> None:
        """Record the module's constants as classified (`weight_summary` of
        qopt/dialects/weights.py); a float weight of at least FLOAT_WEIGHT_WARN_BYTES
        next to quantized weights is a warning."""
        self.compressed_weight_bytes = summary.compressed_bytes
        self.compressed_weights = summary.compressed
        self.float_weight_bytes = sum(w.bytes for w in summary.float_weights)
        self.float_weights = summary.float_weights
        self.other_constant_bytes = summary.other_bytes
        large = [w for w in summary.float_weights if w.bytes >= FLOAT_WEIGHT_WARN_BYTES]
        if summary.compressed and large:
            shown = ", ".join(
                f"{w.name} ({w.dtype}{list(w.shape)}, {format_size(w.bytes)})" for w in large[:5]
            )
            more = f" and {len(large) - 5} more" if len(large) > 5 else ""
            self.warn(
                f"{len(large)} weight(s) of linear/conv/embedding ops left in float next to "
                f"quantized ones ({format_size(sum(w.bytes for w in large))}): {shown}{more}; "
                "the quantizer skipped them (a filter, or a layer type it does not "
                "handle, such as GPT-2's Conv1D): quantize them too, or accept the size"
            )

    def record_target_ops(self, module: ModuleOp) -> None:
        """Count the final program's ops by target op: Vulkan dispatches by kernel,
        CoreML ops by MIL op (constants left out)."""
        counts: collections.Counter[str] = collections.Counter()
        kernels = {
            op.properties["sym_name"]: op.properties["kernel"]
            for op in module.walk()
            if op.name == "vkc.kernel"
        }
        for op in module.walk():
            if op.name == "vkc.dispatch":
                symbol = getattr(op.properties.get("kernel"), "root_reference", None)
                kernel = getattr(kernels.get(symbol), "data", None) if symbol else None
                counts[f"vkc.dispatch {kernel or getattr(symbol, 'data', '?')}"] += 1
            elif op.name.startswith("coreml.") and op.name != "coreml.const":
                counts[op.name] += 1
        self.target_ops = counts

    # ----- output -----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": REPORT_VERSION,
            "target": self.target,
            "fusion": {
                "fused": sum(self.fused.values()),
                "patterns": self.patterns,
                "by_kernel": dict(sorted(self.fused.items())),
                "quant_ops": self.quant_ops,
                "quant_ops_left": self.quant_ops_left,
                "unfused_by_reason": self.unfused,
            },
            "weights": {
                "compressed_bytes": self.compressed_weight_bytes,
                "compressed_tensors": self.compressed_weights,
                "float_bytes": self.float_weight_bytes,
                "float_weights": [
                    {
                        "name": w.name,
                        "shape": list(w.shape),
                        "dtype": w.dtype,
                        "bytes": w.bytes,
                        "used_by": w.used_by,
                    }
                    for w in self.float_weights
                ],
                "other_constant_bytes": self.other_constant_bytes,
            },
            "target_ops": dict(sorted(self.target_ops.items())),
            "fallback_ops": list(self.fallback_ops),
            "warnings": list(self.warnings),
            "phases": [
                {
                    "name": p.name,
                    "depth": p.depth,
                    "start_s": round(p.start, 6),
                    "seconds": round(p.seconds, 6),
                    "peak_rss_bytes": p.peak_rss,
                }
                for p in self.phases
            ],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def __str__(self) -> str:
        lines = [f"qopt compile report{f' ({self.target})' if self.target else ''}"]
        kernels = ", ".join(f"{name} x{n}" for name, n in sorted(self.fused.items()))
        lines.append(
            f"  fused {sum(self.fused.values())} of {self.patterns} quantized pattern(s)"
            + (f": {kernels}" if kernels else "")
        )
        lines.append(f"  quant ops left unfused: {self.quant_ops_left} of {self.quant_ops}")
        for reason, ops in self.unfused.items():
            lines.append(f"    {len(ops)} not fused: {reason}")
            lines.extend(f"      {op}" for op in ops[:5])
            if len(ops) > 5:
                lines.append(f"      ... and {len(ops) - 5} more")
        lines.append(
            f"  weights: {format_size(self.compressed_weight_bytes)} compressed "
            f"({self.compressed_weights} tensor(s)), {format_size(self.float_weight_bytes)} "
            f"float ({len(self.float_weights)} tensor(s)), "
            f"{format_size(self.other_constant_bytes)} other constants"
        )
        for w in self.float_weights[:5]:
            lines.append(
                f"    float: {w.name} {w.dtype}{list(w.shape)} {format_size(w.bytes)} "
                f"(used by {w.used_by})"
            )
        if len(self.float_weights) > 5:
            lines.append(f"    ... and {len(self.float_weights) - 5} more")
        ops = ", ".join(f"{name} x{n}" for name, n in sorted(self.target_ops.items()))
        lines.append(f"  target ops ({sum(self.target_ops.values())}): {ops or 'none'}")
        lines.append(
            f"  fallback ops (on the host): {len(self.fallback_ops)}"
            + "".join(f"\n    {op}" for op in self.fallback_ops)
        )
        lines.append(f"  warnings: {len(self.warnings)}")
        lines.extend(f"    {text}" for text in self.warnings)
        top = [p for p in self.phases if p.depth == 0]
        if top:
            lines.append(
                f"  time: {sum(p.seconds for p in top):.2f} s ("
                + ", ".join(f"{p.name} {p.seconds:.2f} s" for p in top)
                + f"), peak RSS {format_size(max(p.peak_rss for p in self.phases))}"
            )
        return "\n".join(lines)


_ACTIVE: contextvars.ContextVar[CompileReport | None] = contextvars.ContextVar(
    "qopt_compile_report", default=None
)


def active_report() -> CompileReport | None:
    """The report of the compile running in this context, if any."""
    return _ACTIVE.get()


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """Time `name` as a phase of the active report (nothing without one)."""
    report = _ACTIVE.get()
    if report is None:
        yield
        return
    with report.phase(name):
        yield


def warn(text: str) -> None:
    """A warning of the active report, else a `QoptWarning`."""
    report = _ACTIVE.get()
    if report is not None:
        report.warn(text)
    else:
        warnings.warn(text, QoptWarning, stacklevel=3)


def peak_rss() -> int:
    """Peak resident memory of this process in bytes: Linux's VmHWM (/proc/self/status)
    where it exists, since ru_maxrss survives exec (a qopt-opt started by a process
    holding 3 GiB reported 3 GiB); else ru_maxrss (KiB on Linux, bytes on macOS)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024


def format_size(n: int) -> str:
    """`812 B`, `12.5 KiB`, `3.2 MiB`, `1.1 GiB`."""
    size = float(n)
    for unit in ("B", "KiB", "MiB"):
        if size < 1024:
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


# ----- weights -----------------------------------------------------------------------------


@dataclass
class WeightSummary:
    compressed_bytes: int = 0
    compressed: int = 0
    float_weights: list[FloatWeight] = field(default_factory=list[FloatWeight])
    other_bytes: int = 0


__all__ = [
    "FLOAT_WEIGHT_WARN_BYTES",
    "CompileReport",
    "FloatWeight",
    "Phase",
    "QoptWarning",
    "WeightSummary",
    "active_report",
    "format_size",
    "peak_rss",
    "phase",
    "warn",
]
