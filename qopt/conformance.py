"""Op conformance against torch, driven by torch's OpInfo database (issue 12).

Every sample input of every OpInfo in `torch.testing._internal.common_methods_invocations.op_db`
(in the dtypes asked for, that the op takes on CPU) becomes a `Case`: a small
`torch.nn.Module` whose graph inputs are the sample's tensors (nested lists of
tensors included) and whose other arguments are constants. A case is exported with
`torch.export`, run by torch eager for the reference, then run per target:

- `interp`: `qopt.import_program` then `qopt.interpret`;
- `coreml`: `qopt.compile(ep, "coreml", compute_precision="fp32")` (fp32: the exact
  check), saved as an `.mlpackage`, read back with `qopt.read_mlpackage` and
  interpreted (the way qopt checks Core ML numerics on a machine without Core ML).
  Core ML programs have no int64 or bool inputs and outputs: int64 is int32 and a
  bool output is fp32 (0 / 1) there, so the reference is compared in those types;
- `vulkan`: `qopt.compile(ep, "vulkan")` run on the Vulkan device (lavapipe here).

Each run is classified (`classify`): `pass` (same shapes and dtypes, integers and
bools exact, floats within `FLOAT_ATOL` / `FLOAT_RTOL` elementwise or `FLOAT_L2` in
relative L2 norm, NaN where torch has NaN, infinities equal), `unsupported` (a
`qopt.QoptError`: the coverage gap, a clean refusal), `wrong` (different numbers,
shapes or dtypes), `crash` (any other exception: a bug), `timeout` (the case ran
past its time limit). Cases qopt cannot be asked about are `skip`ped with a reason
(torch.export fails, a random op, an output that is not a tensor, ...): they are
not qopt's gap.

`benchmarks/conformance.py` runs the whole database and writes `docs/conformance.md`;
`tests/unit/semantics/test_conformance.py` runs a fixed sample of it.
"""

from __future__ import annotations

import re
import signal
import tempfile
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import torch
import torch.utils._pytree as pytree

import qopt
from qopt.errors import QoptError

TARGETS = ("interp", "coreml", "vulkan")
FORMS = ("export", "core")
"""The IR forms a case is imported in: `export`, the program `torch.export.export`
gives users as it comes (training IR: torch's export-preserved composite ops such as
`reshape_as`, `einsum`, `logsumexp` stay); `core`, that program after
`run_decompositions()` (core ATen)."""
STATUSES = ("pass", "unsupported", "wrong", "crash", "timeout")
DEFAULT_DTYPES = ("float32", "int64", "int32", "bool")

FLOAT_ATOL = 1e-5
FLOAT_RTOL = 1.3e-6
"""torch.testing's float32 tolerances (`assert_close`), elementwise."""
FLOAT_L2 = 1e-5
"""Or: the relative L2 error of the whole result (sums added in another order)."""


UNINITIALIZED = frozenset(
    {"empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided", "empty_permuted"}
)
"""OpInfos whose result is uninitialized memory: nothing to compare."""


class CaseTimeout(BaseException):
    """A case ran past its time limit (a BaseException: qopt's handlers never catch it)."""


@dataclass
class Case:
    """One OpInfo sample input as a module and its graph inputs."""

    op: str
    """The OpInfo's name, with its variant (`name.variant`)."""
    dtype: str
    index: int
    module: torch.nn.Module
    inputs: tuple[torch.Tensor, ...]
    description: str = ""

    @property
    def key(self) -> str:
        return f"{self.op}/{self.dtype}/{self.index}"


@dataclass
class Outcome:
    """What one target did with one case (`target` "export" for a skipped case)."""

    op: str
    dtype: str
    index: int
    target: str
    status: str
    detail: str = ""
    aten_ops: list[str] = field(default_factory=list)
    form: str = "export"
    """The IR form the case was imported in (`FORMS`)."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# ----- cases from op_db ------------------------------------------------------------------


def op_db() -> list[Any]:
    """torch's OpInfo database (imported on first use: it takes seconds)."""
    from torch.testing._internal.common_methods_invocations import op_db as db

    return list(db)


def opinfo_name(info: Any) -> str:
    variant = getattr(info, "variant_test_name", "")
    return f"{info.name}.{variant}" if variant else str(info.name)


class SampleModule(torch.nn.Module):
    """`fn(input, *args, **kwargs)` of one sample, with its tensors as forward's
    arguments and everything else constant."""

    def __init__(self, fn: Callable[..., Any], leaves: list[Any], spec: Any, slots: list[int]):
        super().__init__()
        self.fn = fn
        self.leaves = leaves
        self.spec = spec
        self.slots = slots

    def forward(self, *tensors: torch.Tensor) -> Any:
        leaves = list(self.leaves)
        for slot, tensor in zip(self.slots, tensors, strict=True):
            leaves[slot] = tensor
        first, args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        return self.fn(first, *args, **kwargs)


def case_from_sample(info: Any, dtype: str, index: int, sample: Any) -> Case:
    leaves, spec = pytree.tree_flatten((sample.input, tuple(sample.args), dict(sample.kwargs)))
    slots = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
    inputs = tuple(leaves[i].detach().clone() for i in slots)
    constants = [None if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves]
    module = SampleModule(info.op, constants, spec, slots)
    return Case(opinfo_name(info), dtype, index, module, inputs, str(sample.summary()))


def iter_cases(
    ops: Sequence[str] | None = None,
    dtypes: Sequence[str] = DEFAULT_DTYPES,
    max_samples: int | None = None,
    infos: Iterable[Any] | None = None,
) -> Iterator[Case | Outcome]:
    """Cases of every OpInfo whose name matches one of `ops` (regular expressions,
    `re.fullmatch` on `name.variant` or `name`; all when None), in each of `dtypes`
    the op takes on CPU; an `Outcome` (target "export", status "skip") where an op
    gives no samples."""
    for info in op_db() if infos is None else infos:
        name = opinfo_name(info)
        if ops is not None and not any(
            re.fullmatch(p, name) or re.fullmatch(p, str(info.name)) for p in ops
        ):
            continue
        supported = {str(d).removeprefix("torch.") for d in info.supported_dtypes("cpu")}
        for dtype in dtypes:
            if dtype not in supported:
                continue
            try:
                torch.manual_seed(0)
                samples = info.sample_inputs("cpu", getattr(torch, dtype), requires_grad=False)
                for index, sample in enumerate(samples):
                    if max_samples is not None and index >= max_samples:
                        break
                    yield case_from_sample(info, dtype, index, sample)
            except Exception as e:  # torch's own sample generator failing
                yield Outcome(name, dtype, -1, "export", "skip", f"samples fail: {_one_line(e)}")


# ----- comparison --------------------------------------------------------------------------


def coreml_io(want: np.ndarray) -> np.ndarray:
    """torch's result in the type a Core ML program returns it (outputs are fp16,
    fp32 or int32 there: other integers are int32, bools fp32 0 / 1)."""
    if want.dtype.kind in "iu" and want.dtype != np.int32:
        return want.astype(np.int32)
    if want.dtype == np.bool_:
        return want.astype(np.float32)
    return want


def mismatch(got: Any, want: np.ndarray) -> str | None:
    """None when `got` equals torch's `want` (integers and bools exactly, floats within
    the tolerances), else what differs."""
    if not isinstance(got, np.ndarray):
        return f"result is a {type(got).__name__}, not an array"
    if got.shape != want.shape:
        return f"shape {got.shape} != torch {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != torch {want.dtype}"
    if got.size == 0:
        return None
    if got.dtype.kind != "f":
        bad = int(np.count_nonzero(got != want))
        if bad == 0:
            return None
        at = tuple(int(i) for i in np.argwhere(got != want)[0])
        return f"{bad} of {got.size} elements differ (at {at}: {got[at]} != torch {want[at]})"
    g, w = got.astype(np.float64), want.astype(np.float64)
    nan_g, nan_w = np.isnan(g), np.isnan(w)
    if not np.array_equal(nan_g, nan_w):
        return f"NaN at {int(np.count_nonzero(nan_g != nan_w))} elements where torch differs"
    inf_w = np.isinf(w)
    if not np.array_equal(g[inf_w], w[inf_w]) or bool(np.isinf(g[~inf_w]).any()):
        return "infinities differ"
    finite = np.isfinite(w)
    gf, wf = g[finite], w[finite]
    if gf.size == 0:
        return None
    err = np.abs(gf - wf)
    if bool(np.all(err <= FLOAT_ATOL + FLOAT_RTOL * np.abs(wf))):
        return None
    norm = float(np.linalg.norm(wf))
    rel = float(np.linalg.norm(gf - wf)) / max(norm, 1e-30)
    if norm == 0:
        rel = float(np.max(np.abs(gf)))
    if rel <= FLOAT_L2:
        return None
    worst = int(np.argmax(err))
    return (
        f"max abs error {err[worst]:.3g} (got {gf[worst]:.7g}, torch {wf[worst]:.7g}), "
        f"relative L2 {rel:.3g}"
    )


def compare(got: Sequence[Any], want: Sequence[np.ndarray], target: str) -> str | None:
    if len(got) != len(want):
        return f"{len(got)} outputs, torch has {len(want)}"
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if (problem := mismatch(g, coreml_io(w) if target == "coreml" else w)) is not None:
            return f"output {i}: {problem}"
    return None


# ----- running -----------------------------------------------------------------------------


def _one_line(e: BaseException, limit: int = 300) -> str:
    """The message's first line (and the next one where the first ends in a colon:
    the importer's "1 unsupported op(s) ...:" then the op)."""
    text = [line.strip() for line in str(e).strip().splitlines()]
    first = text[0] if text else ""
    if first.endswith(":") and len(text) > 1:
        first = f"{first} {text[1]}"
    return first[:limit]


def _crash_detail(e: BaseException) -> str:
    """Type, message and the innermost qopt frame (else the innermost frame)."""
    frames = traceback.extract_tb(e.__traceback__)
    ours = [
        f for f in frames if "/qopt/" in f.filename and not f.filename.endswith("conformance.py")
    ]
    where = (ours or frames)[-1] if (ours or frames) else None
    at = f" at {Path(where.filename).name}:{where.lineno} ({where.name})" if where else ""
    return f"{type(e).__name__}: {_one_line(e)}{at}"


def classify(
    run: Callable[[], Sequence[Any]], want: Sequence[np.ndarray], target: str
) -> tuple[str, str]:
    """Run one target and classify what it did: (status, detail)."""
    try:
        got = run()
    except QoptError as e:
        return "unsupported", _one_line(e)
    except CaseTimeout:
        raise
    except Exception as e:
        return "crash", _crash_detail(e)
    try:
        problem = compare(list(got), want, target)
    except Exception as e:
        return "crash", f"while comparing: {_crash_detail(e)}"
    return ("pass", "") if problem is None else ("wrong", problem)


class time_limit:
    """Raise `CaseTimeout` in this (main) thread after `seconds` (0: no limit)."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.previous: Any = None

    def _expire(self, signum: int, frame: FrameType | None) -> None:
        raise CaseTimeout(f"ran past {self.seconds:g} s")

    def __enter__(self) -> None:
        if self.seconds > 0:
            self.previous = signal.signal(signal.SIGALRM, self._expire)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc: object) -> None:
        if self.seconds > 0:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)


class AfterCompile(RuntimeError):
    """A QoptError once a target compiled the case (saving, reading back or running
    what qopt compiled): a bug, not a refusal."""


class _compiled:
    def __init__(self, target: str):
        self.target = target

    def __enter__(self) -> None:
        pass

    def __exit__(self, kind: object, e: BaseException | None, tb: object) -> None:
        if isinstance(e, QoptError):
            raise AfterCompile(f"{self.target} compiled, then: {_one_line(e)}") from e


def _numpy_outputs(result: Any) -> list[np.ndarray] | str:
    leaves = pytree.tree_leaves(result)
    if not leaves:
        return "no outputs"
    out: list[np.ndarray] = []
    for leaf in leaves:
        if not isinstance(leaf, torch.Tensor):
            return f"an output is a {type(leaf).__name__}, not a tensor"
        if leaf.layout != torch.strided:
            return "a sparse output"
        if leaf.dtype not in (
            torch.float32,
            torch.int64,
            torch.int32,
            torch.bool,
            torch.int8,
            torch.uint8,
            torch.int16,
            torch.float16,
        ):
            return f"an output is {leaf.dtype}"
        out.append(leaf.detach().contiguous().numpy().copy())
    return out


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return all(
        x.shape == y.shape
        and x.dtype == y.dtype
        and np.array_equal(x, y, equal_nan=x.dtype.kind == "f")
        for x, y in zip(a, b, strict=True)
    )


def _aten_ops(ep: Any) -> list[str]:
    return sorted(
        {
            str(n.target)
            for n in ep.graph.nodes
            if n.op == "call_function" and str(n.target).startswith("aten.")
        }
    )


def run_case(
    case: Case,
    targets: Sequence[str] = TARGETS,
    seconds: float = 0.0,
    workdir: Path | None = None,
    form: str = "export",
) -> list[Outcome]:
    """Export `case` (in the IR `form`, `FORMS`), run torch eager for the reference
    and every target; one Outcome per target (or one skip)."""
    if form not in FORMS:
        raise ValueError(f"unknown IR form {form!r}: choose from {', '.join(FORMS)}")

    def outcome(
        target: str, status: str, detail: str = "", ops: list[str] | None = None
    ) -> Outcome:
        return Outcome(case.op, case.dtype, case.index, target, status, detail, ops or [], form)

    def skip(reason: str) -> list[Outcome]:
        return [outcome("export", "skip", reason)]

    if any(t.layout != torch.strided for t in case.inputs):
        return skip("a sparse input")
    if case.op.split(".")[0] in UNINITIALIZED:
        return skip("uninitialized output (torch.empty)")
    try:
        with time_limit(seconds):
            try:
                with torch.no_grad():
                    first = _numpy_outputs(case.module(*case.inputs))
                    if isinstance(first, str):
                        return skip(first)
                    second = _numpy_outputs(case.module(*case.inputs))
            except Exception as e:
                return skip(f"torch eager fails: {type(e).__name__}: {_one_line(e, 160)}")
            if isinstance(second, str) or not _same(first, second):
                return skip("random: two eager runs differ")
            try:
                ep = torch.export.export(case.module, case.inputs)
            except Exception as e:
                return skip(f"export fails: {type(e).__name__}: {_one_line(e, 160)}")
            if form == "core":
                try:
                    ep = ep.run_decompositions()
                except Exception as e:
                    return skip(
                        f"run_decompositions fails: {type(e).__name__}: {_one_line(e, 160)}"
                    )
    except CaseTimeout as e:
        return skip(f"torch timeout: {e}")
    want = first
    ops = _aten_ops(ep)
    inputs = tuple(t.contiguous() for t in case.inputs)
    results: list[Outcome] = []

    # one import decides for every target when it refuses (compile imports the same way)

    try:
        with time_limit(seconds):
            qopt.import_program(ep)
    except QoptError as e:
        return [outcome(t, "unsupported", _one_line(e), ops) for t in targets]
    except CaseTimeout as e:
        return [outcome(t, "timeout", str(e), ops) for t in targets]
    except Exception as e:
        return [outcome(t, "crash", _crash_detail(e), ops) for t in targets]

    def interp() -> Sequence[Any]:
        return qopt.interpret(qopt.import_program(ep), *inputs)

    def coreml() -> Sequence[Any]:
        artifact = qopt.compile(ep, "coreml", compute_precision="fp32")
        with tempfile.TemporaryDirectory(dir=workdir) as tmp, _compiled("coreml"):
            path = Path(tmp) / "case.mlpackage"
            artifact.save(path)
            return qopt.interpret(qopt.read_mlpackage(path), *inputs)

    def vulkan() -> Sequence[Any]:
        with qopt.compile(ep, "vulkan") as artifact, _compiled("vulkan"):
            return artifact(*inputs)

    runners = {"interp": interp, "coreml": coreml, "vulkan": vulkan}
    for target in targets:
        try:
            with time_limit(seconds):
                status, detail = classify(runners[target], want, target)
        except CaseTimeout as e:
            status, detail = "timeout", str(e)
        results.append(outcome(target, status, detail, ops))
    return results


# ----- the table -----------------------------------------------------------------------------


def latest(outcomes: Iterable[Outcome]) -> list[Outcome]:
    """The outcomes of each case's last run (a rerun of a case, in the order the
    outcomes were recorded, replaces all it had before: a skip or every target's)."""
    runs: dict[tuple[str, str, int, str], list[Outcome]] = {}
    for o in outcomes:
        key = (o.op, o.dtype, o.index, o.form)
        run = runs.get(key)
        if (
            run is None
            or o.target == "export"
            or any(r.target in (o.target, "export") for r in run)
        ):
            runs[key] = run = []
        run.append(o)
    return [o for run in runs.values() for o in run]


def summarize(outcomes: Iterable[Outcome], targets: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per target: case counts by status, and ops counted by their worst status
    (an op passes when every case of it passes)."""
    rank = {s: i for i, s in enumerate(("pass", "unsupported", "timeout", "wrong", "crash"))}
    table: dict[str, dict[str, Any]] = {}
    for target in targets:
        cases: dict[str, int] = dict.fromkeys(STATUSES, 0)
        worst: dict[str, str] = {}
        for o in outcomes:
            if o.target != target:
                continue
            cases[o.status] += 1
            if o.op not in worst or rank[o.status] > rank[worst[o.op]]:
                worst[o.op] = o.status
        ops: dict[str, int] = dict.fromkeys(STATUSES, 0)
        for status in worst.values():
            ops[status] += 1
        passing = {o.op for o in outcomes if o.target == target and o.status == "pass"}
        table[target] = {"cases": cases, "ops": ops, "ops_any_pass": len(passing)}
    return table


def render_forms(outcomes: list[Outcome], targets: Sequence[str]) -> list[str]:
    """The counts per IR form and target (the cases run in both forms)."""
    keys = {form: {(o.op, o.dtype, o.index) for o in outcomes if o.form == form} for form in FORMS}
    both = keys["export"] & keys["core"]
    lines = [
        "| IR form | target | ops with a passing case | ops pass | ops unsupported "
        "| ops wrong | ops crash | cases pass | unsupported | wrong | crash |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for form in FORMS:
        chosen = [o for o in outcomes if o.form == form and (o.op, o.dtype, o.index) in both]
        table = summarize(chosen, targets)
        for t in targets:
            o, c = table[t]["ops"], table[t]["cases"]
            lines.append(
                f"| {form} | {t} | {table[t]['ops_any_pass']} | "
                + " | ".join(str(o[s]) for s in ("pass", "unsupported", "wrong", "crash"))
                + " | "
                + " | ".join(str(c[s]) for s in ("pass", "unsupported", "wrong", "crash"))
                + " |"
            )
    return lines


def render_markdown(outcomes: list[Outcome], targets: Sequence[str], header: str) -> str:
    forms = {o.form for o in outcomes}
    every = outcomes
    outcomes = [o for o in outcomes if o.form == "export"] or outcomes
    table = summarize(outcomes, targets)
    lines = [header, ""]
    if len(forms) > 1:
        lines += [
            "Both IR forms: `export` is the program `torch.export.export` gives users, as it "
            "comes (training IR, no `run_decompositions`); `core` is it after "
            "`run_decompositions()` (core ATen). Same cases in both:",
            "",
            *render_forms(every, targets),
            "",
            "The tables below are of the `export` form.",
            "",
        ]
    lines.append(
        "| target | ops with a passing case | ops pass | ops unsupported | ops wrong | ops crash "
        "| ops timeout | cases pass | unsupported | wrong | crash | timeout |"
    )
    lines.append("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for t in targets:
        o, c = table[t]["ops"], table[t]["cases"]
        lines.append(
            f"| {t} | {table[t]['ops_any_pass']} | "
            + " | ".join(str(o[s]) for s in STATUSES)
            + " | "
            + " | ".join(str(c[s]) for s in STATUSES)
            + " |"
        )
    skips = [o for o in outcomes if o.target == "export"]
    lines += [
        "",
        f"Skipped (not qopt's to run): {len(skips)} cases of "
        f"{len({o.op for o in skips})} ops, by reason:",
        "",
    ]
    reasons: dict[str, set[str]] = {}
    for o in skips:
        reason = re.sub(r":.*", "", o.detail)
        reasons.setdefault(reason, set()).add(o.op)
    for reason, names in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"- {reason}: {len(names)} ops")
    for bad in ("wrong", "crash", "timeout"):
        rows = [o for o in outcomes if o.status == bad]
        if rows:
            lines += [
                "",
                f"## {bad.capitalize()}",
                "",
                "| op | dtype | sample | target | detail |",
                "|---|---|--:|---|---|",
            ]
            for o in sorted(rows, key=lambda o: (o.op, o.dtype, o.index, o.target)):
                lines.append(
                    f"| `{o.op}` | {o.dtype} | {o.index} | {o.target} | {_cell(o.detail)} |"
                )
    imported: dict[tuple[str, str, int], str] = {}  # the import's refusal, every target's
    for o in outcomes:
        if o.target == targets[0] and o.status == "unsupported":
            imported[(o.op, o.dtype, o.index)] = o.detail
    for t in targets:
        rows = [o for o in outcomes if o.target == t and o.status == "unsupported"]
        by_op: dict[str, dict[str, set[str]]] = {}
        for o in rows:
            if t != targets[0] and imported.get((o.op, o.dtype, o.index)) == o.detail:
                continue  # refused by the import (or alike on every target): listed once
            by_op.setdefault(o.op, {}).setdefault(_generic(o.detail), set()).add(o.dtype)
        also = "" if t == targets[0] else f" (beyond the refusals {targets[0]} lists)"
        lines += [
            "",
            f"## Unsupported on {t}: {len(by_op)} ops{also}",
            "",
            "| op | dtypes | qopt's error |",
            "|---|---|---|",
        ]
        for op in sorted(by_op):
            for message, dts in sorted(by_op[op].items()):
                lines.append(f"| `{op}` | {', '.join(sorted(dts))} | {_cell(message)} |")
    return "\n".join(lines) + "\n"


def _generic(message: str) -> str:
    """A refusal's message without the user's file and line, node names, shapes and
    index lists (one row per kind of refusal)."""
    message = re.sub(r" at [^ :]+\.py:\d+", "", message)
    message = re.sub(r" \(node [^)]*\)", "", message)
    message = re.sub(r"tensor<[^>]*>", "tensor<...>", message)
    return re.sub(r"\[[-\d, ]*\]", "[...]", message)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")[:240]


__all__ = [
    "DEFAULT_DTYPES",
    "FORMS",
    "STATUSES",
    "TARGETS",
    "Case",
    "CaseTimeout",
    "Outcome",
    "classify",
    "compare",
    "iter_cases",
    "latest",
    "mismatch",
    "op_db",
    "render_forms",
    "render_markdown",
    "run_case",
    "summarize",
]
