"""The model zoo: every (architecture x scheme x target) cell against torch.

Builds each architecture of `qopt.zoo` (tiny `transformers` configs, seeded
random weights), quantizes it under every scheme of `qopt.examples`, exports it,
and runs it on each target -- `interp` (the fused import level interpreted),
`coreml` (the .mlpackage saved, read back and interpreted) and `vulkan` (run on
the Vulkan device) -- against the quantized torch model on fresh inputs. A cell
is `pass` (relative L2 error within `qopt.zoo.tolerance`; max abs error shown),
`wrong`, `unsupported` (a QoptError: its first line names the op), `crash` (any
other exception: a bug) or `n/a` (torch/torchao cannot produce the pair).

Each architecture runs in a child process (a hang or a fatal error costs one
row, not the run); every cell is appended to a JSON-lines file as it finishes,
so an interrupted run resumes with `--resume`. The table is written to
docs/zoo.md and printed.

    .venv/bin/python benchmarks/zoo.py                      # everything
    .venv/bin/python benchmarks/zoo.py --arch llama bert --scheme float w4g32
    .venv/bin/python benchmarks/zoo.py --table-only         # rewrite docs/zoo.md from the results
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "zoo_results.jsonl"
TABLE = ROOT / "docs" / "zoo.md"
if str(ROOT) not in sys.path:  # this checkout's qopt, not another installed one
    sys.path.insert(0, str(ROOT))

SYMBOL = {"pass": "✓", "unsupported": "U", "wrong": "✗", "crash": "!", "n/a": "-", "timeout": "T"}


def _run_architecture(arch: str, schemes: list[str], targets: list[str], out: Path) -> None:
    """Child process: every cell of one architecture, appended to `out`."""
    warnings.filterwarnings("ignore")
    from qopt import zoo

    done = _load(out)
    for scheme in schemes:
        todo = [t for t in targets if (arch, scheme, t) not in done]
        if not todo:
            continue
        start = time.perf_counter()
        try:
            ep, inputs = zoo.export(arch, scheme)
        except zoo.NotApplicable as exc:
            for target in todo:
                _append(out, arch, scheme, target, {"status": "n/a", "detail": str(exc)}, 0.0)
            continue
        export_s = time.perf_counter() - start
        for target in todo:
            start = time.perf_counter()
            with tempfile.TemporaryDirectory() as workdir:
                cell = zoo.check(ep, inputs, scheme, target, workdir)
            cell["export_s"] = round(export_s, 2)
            _append(out, arch, scheme, target, cell, time.perf_counter() - start)


def _append(out: Path, arch: str, scheme: str, target: str, cell: dict[str, Any], secs: float):
    row = {"arch": arch, "scheme": scheme, "target": target, **cell, "secs": round(secs, 2)}
    row["when"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    row["branch"] = _branch()
    with out.open("a") as f:
        f.write(json.dumps(row) + "\n")
    extra = f" rel={cell['rel']:.2e}" if "rel" in cell else ""
    print(
        f"{arch:16} {scheme:13} {target:7} {cell['status']:11} {secs:6.1f}s{extra} "
        f"{cell.get('detail', '')}",
        flush=True,
    )


def _branch() -> str:
    """The checkout's git branch (recorded with each cell), or "?" outside git."""
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "--abbrev-ref", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return "?"
    return proc.stdout.strip() or "?"


def _load(path: Path) -> dict[tuple[str, str, str], dict[str, Any]]:
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                rows[row["arch"], row["scheme"], row["target"]] = row
    return rows


def _cell_text(row: dict[str, Any] | None) -> str:
    if row is None:
        return "not run"
    status = row["status"]
    if status == "pass":
        return f"pass {row['max_abs']:.1e}"
    if status == "wrong":
        if "rel" in row:
            return f"**wrong** rel {row['rel']:.1e} (max abs {row['max_abs']:.1e})"
        return f"**wrong** {row['detail']}"
    detail = str(row.get("detail", "")).replace("|", "\\|").replace("\n", " ")
    return f"{status}: {detail}" if detail else status


def summary(rows: dict[tuple[str, str, str], dict[str, Any]]) -> list[str]:
    """The legend and the grid: one row per architecture, one column per scheme,
    each cell three marks (interp, coreml, vulkan)."""
    from qopt import zoo
    from qopt.examples import SCHEMES

    archs = [a for a in zoo.ARCHITECTURES if any(k[0] == a for k in rows)]
    schemes = [s for s in SCHEMES if any(k[1] == s for k in rows)]
    counts: dict[str, int] = {}
    for row in rows.values():
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    missing = len(archs) * len(schemes) * len(zoo.TARGETS) - sum(counts.values())
    if missing > 0:
        counts["not run"] = missing
    lines = [
        f"{len(archs)} architectures x {len(schemes)} schemes x 3 targets; cells: "
        + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        + ".",
        "",
        "Each cell: interp / coreml / vulkan. ✓ pass, ✗ wrong, U unsupported (QoptError),",
        "! crash, - n/a (torch/torchao cannot apply the scheme), T timeout, · not run.",
        "",
        "| architecture | family | " + " | ".join(f"`{s}`" for s in schemes) + " |",
        "|---|---|" + "---|" * len(schemes),
    ]
    for arch in archs:
        cells = []
        for scheme in schemes:
            marks = [rows.get((arch, scheme, t)) for t in zoo.TARGETS]
            cells.append("".join(SYMBOL[m["status"]] if m else "·" for m in marks))
        lines.append(f"| {arch} | {zoo.FAMILIES[arch]} | " + " | ".join(cells) + " |")
    return lines


def reasons(rows: dict[tuple[str, str, str], dict[str, Any]]) -> list[str]:
    """Every distinct reason a cell does not pass, with the cells it covers."""
    groups: dict[tuple[str, str], list[str]] = {}
    for (arch, scheme, target), row in rows.items():
        if row["status"] == "pass":
            continue
        detail = _cell_text(row)
        if row["status"] == "n/a":  # one reason for every scheme it stops
            detail = re.sub(r"^n/a: \S+ fails in torch/torchao: ", "torch/torchao fails: ", detail)
            detail = re.sub(r"^n/a: ", "", detail)
        key = (row["status"], detail)
        what = f"{arch}/{scheme}" if row["status"] == "n/a" else f"{arch}/{scheme}/{target}"
        if what not in groups.setdefault(key, []):
            groups[key].append(what)
    lines = []
    for (status, detail), cells in sorted(groups.items()):
        shown = ", ".join(cells[:6]) + (f" and {len(cells) - 6} more" if len(cells) > 6 else "")
        text = detail if status != "n/a" else f"n/a: {detail}"
        lines.append(f"- {text} ({shown})")
    return lines


def provenance(rows: dict[tuple[str, str, str], dict[str, Any]]) -> list[str]:
    """When and on which branch the cells ran: one line per (branch, day), with the
    architectures whose cells it holds (a table merged from several runs says which
    cells are older than the code)."""
    groups: dict[tuple[str, str], dict[str, int]] = {}
    for (arch, _, _), row in rows.items():
        when = str(row.get("when", "unknown"))
        stamp = re.fullmatch(r"(\d{4}-\d\d-\d\d) \d\d:\d\d UTC", when)
        key = (str(row.get("branch", "?")), stamp.group(1) if stamp else when)
        groups.setdefault(key, {})
        groups[key][arch] = groups[key].get(arch, 0) + 1
    lines = []
    for (branch, day), archs in sorted(groups.items(), key=lambda kv: kv[0][1], reverse=True):
        cells = sum(archs.values())
        lines.append(f"- {day}, branch `{branch}`: {cells} cells ({', '.join(archs)})")
    return lines


def table(rows: dict[tuple[str, str, str], dict[str, Any]]) -> str:
    from qopt import zoo
    from qopt.examples import SCHEMES

    archs = [a for a in zoo.ARCHITECTURES if any(k[0] == a for k in rows)]
    schemes = [s for s in SCHEMES if any(k[1] == s for k in rows)]
    lines = [
        "# Model zoo",
        "",
        "Generated by `benchmarks/zoo.py` (do not edit by hand): tiny `transformers`",
        "architectures (`qopt/zoo.py`, seeded random weights) under every scheme of",
        "`qopt.examples`, each run on the three targets against the quantized torch model",
        "on fresh inputs. `interp`: the fused import level interpreted; `coreml`: the",
        ".mlpackage saved, read back and interpreted; `vulkan`: run on the Vulkan device",
        "(lavapipe here). Pass = relative L2 error within `qopt.zoo.tolerance`; the number",
        "is the max abs error.",
        "",
        "## Summary",
        "",
        *summary(rows),
        "",
        "When the cells ran:",
        "",
        *provenance(rows),
        "",
        "## Why a cell does not pass",
        "",
        *reasons(rows),
        "",
        "## Cells",
        "",
        "| architecture | scheme | interp | coreml | vulkan |",
        "|---|---|---|---|---|",
    ]
    for arch in archs:
        for scheme in schemes:
            marks = [rows.get((arch, scheme, t)) for t in zoo.TARGETS]
            if all(m is None for m in marks):
                continue
            if all(m is not None and m["status"] == "n/a" for m in marks):
                lines.append(f"| {arch} | {scheme} | {_cell_text(marks[0])} | | |")
                continue
            lines.append(
                f"| {arch} | {scheme} | " + " | ".join(_cell_text(m) for m in marks) + " |"
            )
    return "\n".join(lines) + "\n"


README = ROOT / "README.md"
BEGIN, END = "<!-- zoo:begin -->", "<!-- zoo:end -->"


def update_readme(rows: dict[tuple[str, str, str], dict[str, Any]]) -> None:
    """Replace the README's text between the zoo markers by the summary grid and the
    reasons cells do not pass."""
    text = README.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"README.md has no {BEGIN} ... {END} section")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    body = "\n".join(
        [
            "",
            *summary(rows),
            "",
            "When the cells ran:",
            "",
            *provenance(rows),
            "",
            "Cells that do not pass:",
            "",
            *reasons(rows),
            "",
        ]
    )
    README.write_text(head + BEGIN + body + "\n" + END + tail)


def main() -> int:
    from qopt import zoo
    from qopt.examples import SCHEMES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", nargs="*", default=list(zoo.ARCHITECTURES))
    parser.add_argument("--scheme", nargs="*", default=list(SCHEMES))
    parser.add_argument("--target", nargs="*", default=list(zoo.TARGETS))
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--resume", action="store_true", help="keep the cells already in --results")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per architecture")
    parser.add_argument("--table-only", action="store_true")
    parser.add_argument("--readme", action="store_true", help="also update README.md's zoo table")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        (arch,) = args.arch
        _run_architecture(arch, args.scheme, args.target, args.results)
        return 0
    if not args.table_only:
        if not args.resume and args.results.exists():
            # drop only the cells this run redoes
            keep = {
                k: v
                for k, v in _load(args.results).items()
                if not (k[0] in args.arch and k[1] in args.scheme and k[2] in args.target)
            }
            args.results.write_text("".join(json.dumps(v) + "\n" for v in keep.values()))
        for arch in args.arch:
            cmd = [
                sys.executable,
                __file__,
                "--child",
                "--arch",
                arch,
                "--results",
                str(args.results),
                "--scheme",
                *args.scheme,
                "--target",
                *args.target,
            ]
            env = {
                **os.environ,
                "PYTHONPATH": os.pathsep.join(
                    p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
                ),
            }
            try:
                proc = subprocess.run(cmd, env=env, timeout=args.timeout)
                failed = proc.returncode != 0
                reason = f"the child process exited with {proc.returncode}"
            except subprocess.TimeoutExpired:
                failed, reason = True, f"over {args.timeout:.0f} s"
            if failed:  # the cells it did not finish
                done = _load(args.results)
                for scheme in args.scheme:
                    for target in args.target:
                        if (arch, scheme, target) not in done:
                            status = "timeout" if "over" in reason else "crash"
                            _append(
                                args.results,
                                arch,
                                scheme,
                                target,
                                {"status": status, "detail": reason},
                                0.0,
                            )
    text = table(_load(args.results))
    TABLE.parent.mkdir(exist_ok=True)
    TABLE.write_text(text)
    if args.readme:
        update_readme(_load(args.results))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
