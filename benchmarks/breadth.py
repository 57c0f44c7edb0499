"""Breadth of qopt over ordinary torch functions (issue 22, qopt/breadth.py).

Every function of `qopt.breadth.FUNCTIONS` as a small module, exported with plain
`torch.export.export`, run by torch eager and by each target (interpreter, CoreML read
back and interpreted, Vulkan on the device); pass / unsupported / wrong / crash per
target. Prints the counts and writes the table to `--out`.

    python benchmarks/breadth.py [--names 'topk|sort'] [--targets interp,coreml,vulkan]
        [--jsonl results.jsonl] [--before before.jsonl] [--out docs/breadth.md]

`--jsonl` appends one line per outcome; `--report-only` writes `--out` from it;
`--before` adds the counts of an earlier run (the code before a change) to the table.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from qopt.breadth import FAMILIES, FUNCTIONS, case
from qopt.conformance import STATUSES, TARGETS, Outcome, latest, run_case


def counts(outcomes: list[Outcome], targets: list[str]) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {t: {s: 0 for s in (*STATUSES, "skip")} for t in targets}
    for o in outcomes:
        if o.target == "export":
            for t in targets:
                table[t]["skip"] += 1
        elif o.target in table:
            table[o.target][o.status] += 1
    return table


def render(
    outcomes: list[Outcome], before: list[Outcome] | None, targets: list[str], header: str
) -> str:
    now = counts(outcomes, targets)
    lines = [header, ""]
    lines.append(
        "| target | pass | unsupported | wrong | crash | timeout | skipped |"
        + (" pass before |" if before else "")
    )
    lines.append("|---|--:|--:|--:|--:|--:|--:|" + ("--:|" if before else ""))
    old = counts(before, targets) if before else None
    for t in targets:
        row = now[t]
        lines.append(
            f"| {t} | "
            + " | ".join(str(row[s]) for s in (*STATUSES, "skip"))
            + " |"
            + (f" {old[t]['pass']} |" if old else "")
        )
    by_key: dict[str, dict[str, Outcome]] = {}
    for o in outcomes:
        by_key.setdefault(o.op, {})[o.target] = o
    lines += ["", "Per family (functions passing on interp / coreml / vulkan):", ""]
    lines.append("| family | functions | " + " | ".join(targets) + " |")
    lines.append("|---|--:|" + "--:|" * len(targets))
    for family in FAMILIES:
        names = [f.name for f in FUNCTIONS if f.family == family and f.name in by_key]
        passing = [
            sum(1 for n in names if by_key[n].get(t) and by_key[n][t].status == "pass")
            for t in targets
        ]
        lines.append(f"| {family} | {len(names)} | " + " | ".join(map(str, passing)) + " |")
    lines += ["", "## Every function", "", "| function | family | " + " | ".join(targets) + " |"]
    lines.append("|---|---|" + "---|" * len(targets))
    for f in FUNCTIONS:
        run = by_key.get(f.name)
        if run is None:
            continue
        if "export" in run:
            cells = [f"skip: {_cell(run['export'].detail)}"] * len(targets)
        else:
            cells = [_status(run.get(t)) for t in targets]
        lines.append(f"| `{f.name}` | {f.family} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def decomposed_ops() -> tuple[dict[str, str], dict[str, str]]:
    """The ops of the functions' exported programs that qopt imports through a
    decomposition (op -> where it came from), and those it still refuses (op -> why)."""
    import qopt
    from qopt.frontend.converters import get_converters
    from qopt.frontend.importer import Importer

    imported: dict[str, str] = {}
    refused: dict[str, str] = {}
    for function in FUNCTIONS:
        c = case(function)
        try:
            ep = torch.export.export(c.module, c.inputs)
        except Exception:  # not exportable (a skip in the table)
            continue
        importer = Importer(ep, get_converters())
        try:
            importer.run()
        except qopt.QoptError:
            pass
        for target, record in importer.decompositions.items():
            if record.imported:
                imported.setdefault(target, record.source)
            else:
                refused.setdefault(target, record.refusal())
    return imported, refused


def render_decompositions(imported: dict[str, str], refused: dict[str, str]) -> str:
    lines = [
        "",
        f"## Ops imported through their decomposition ({len(imported)})",
        "",
        "The functions' exported programs hold these ops, which have no converter of their "
        "own: each imports through torch's decomposition of it (qopt/frontend/decompose.py).",
        "",
        "| from | ops |",
        "|---|---|",
    ]
    for source in sorted(set(imported.values())):
        names = sorted(t for t, s in imported.items() if s == source)
        lines.append(f"| {source} | " + ", ".join(f"`{n}`" for n in names) + " |")
    lines += ["", f"Still refused ({len(refused)}):", ""]
    lines += [f"- `{t}`: {_cell(why)}" for t, why in sorted(refused.items())]
    return "\n".join(lines) + "\n"


def _status(o: Outcome | None) -> str:
    if o is None:
        return ""
    if o.status == "pass":
        return "pass"
    return f"{o.status}: {_cell(o.detail)}"


def _cell(text: str) -> str:
    text = re.sub(r" at [^ :]+\.py:\d+", "", text)
    return text.replace("|", "\\|").replace("\n", " ")[:160]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--names", help="regular expression on function names")
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--jsonl", default=None)
    parser.add_argument("--before", default=None, help="JSONL of an earlier run")
    parser.add_argument(
        "--before-label", default="an earlier run", help="what --before ran (a commit)"
    )
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    targets = [t for t in args.targets.split(",") if t]
    outcomes: list[Outcome] = []
    if args.report_only and args.jsonl:
        outcomes = [
            Outcome(**json.loads(line))
            for line in Path(args.jsonl).read_text().splitlines()
            if line
        ]
    else:
        sink = open(args.jsonl, "a") if args.jsonl else None
        try:
            for function in FUNCTIONS:
                if args.names and not re.fullmatch(args.names, function.name):
                    continue
                results = run_case(case(function), targets, seconds=args.time_limit)
                for o in results:
                    outcomes.append(o)
                    if sink is not None:
                        sink.write(json.dumps(o.to_json()) + "\n")
                        sink.flush()
                print(
                    f"{function.name:28} " + " ".join(f"{o.target}={o.status}" for o in results),
                    flush=True,
                )
        finally:
            if sink is not None:
                sink.close()
    outcomes = latest(outcomes)
    before = None
    if args.before:
        before = latest(
            [
                Outcome(**json.loads(line))
                for line in Path(args.before).read_text().splitlines()
                if line
            ]
        )
    table = counts(outcomes, targets)
    for t in targets:
        print(t, table[t])
    if args.out:
        header = (
            "# Breadth: ordinary torch functions\n\n"
            f"Generated by `benchmarks/breadth.py` on {datetime.date.today()} with torch "
            f"{torch.__version__}: {len(FUNCTIONS)} functions of `qopt/breadth.py`, each a "
            "small module exported with plain `torch.export.export` (no "
            "`run_decompositions`), checked against torch eager on every target. `unsupported` "
            "is a clean `QoptError`; `wrong` and `crash` are bugs."
        )
        if before:
            header += f" `pass before`: the same list on {args.before_label}."
        text = render(outcomes, before, targets, header)
        Path(args.out).write_text(text + render_decompositions(*decomposed_ops()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
