"""Op-for-op parity with coremltools: qopt's `.mlpackage` beside `ct.convert`'s.

For every model that coremltools also converts -- the built-in examples
(`qopt.examples`: llama, mlp, convnet) and the zoo architectures (`qopt.zoo`) --
under `float` and one quantized scheme (`w4g32`, torchao int4 weight-only, group
32), the same exported program is compiled twice:

  qopt:         qopt.compile(ep, target="coreml")           (fp16 compute, iOS18)
  coremltools:  ct.convert(ep.run_decompositions({}), minimum_deployment_target=ct.target.iOS18)

and each package's MIL op histogram (every op of every function, `const` included),
its size on disk and the compile + save time are printed side by side, with the
ops whose counts differ. A model coremltools fails on is listed with its error
(it is not a parity row). Counts are read back from each package's spec, so both
columns count what the device loads.

    .venv/bin/python benchmarks/coreml_parity.py                     # everything (~5 min)
    .venv/bin/python benchmarks/coreml_parity.py --models ex:llama resnet --schemes float
    .venv/bin/python benchmarks/coreml_parity.py --write docs/coreml-parity.md

`--write` writes the table (markdown) besides printing it.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import logging
import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # this checkout's qopt, not another installed one
    sys.path.insert(0, str(ROOT))

EXAMPLES = ("ex:llama", "ex:mlp", "ex:convnet")
SCHEMES = ("float", "w4g32")


def histogram(path: str) -> collections.Counter[str]:
    """MIL op type -> count over every function and nested block of the package."""
    import coremltools as ct

    spec = ct.models.MLModel(path, skip_model_load=True).get_spec()
    counts: collections.Counter[str] = collections.Counter()

    def walk(block: Any) -> None:
        for op in block.operations:
            counts[op.type] += 1
            for inner in op.blocks:
                walk(inner)

    for function in spec.mlProgram.functions.values():
        for block in function.block_specializations.values():
            walk(block)
    return counts


def package_bytes(path: str) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def export(model: str, scheme: str) -> Any:
    """The exported program of `ex:<name>` (qopt.examples) or a zoo architecture."""
    if model.startswith("ex:"):
        from qopt.examples import export_model

        return export_model(model[3:], scheme)
    from qopt import zoo

    return zoo.export(model, scheme)[0]


def measure(model: str, scheme: str, workdir: str) -> dict[str, Any]:
    """One row: both packages' histograms, sizes and compile + save times."""
    import coremltools as ct

    import qopt

    try:
        ep = export(model, scheme)
    except Exception as exc:  # torch / torchao cannot produce the pair
        return {"error": f"export: {type(exc).__name__}: {_line(exc)}"}
    row: dict[str, Any] = {}
    qpath, cpath = os.path.join(workdir, "q.mlpackage"), os.path.join(workdir, "c.mlpackage")
    start = time.perf_counter()
    try:
        qopt.compile(ep, target="coreml").save(qpath)
    except qopt.QoptError as exc:
        return {"error": f"qopt: {_line(exc)}"}
    row["qopt_s"] = time.perf_counter() - start
    start = time.perf_counter()
    try:
        with contextlib.redirect_stderr(io.StringIO()):  # progress bars
            mlmodel: Any = ct.convert(
                ep.run_decompositions({}), minimum_deployment_target=ct.target.iOS18
            )
            mlmodel.save(cpath)
    except Exception as exc:
        return {"error": f"coremltools: {type(exc).__name__}: {_line(exc)}"}
    row["ct_s"] = time.perf_counter() - start
    row["qopt"], row["ct"] = histogram(qpath), histogram(cpath)
    row["qopt_bytes"], row["ct_bytes"] = package_bytes(qpath), package_bytes(cpath)
    shutil.rmtree(qpath)
    shutil.rmtree(cpath)
    return row


def _line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else ""
    return line if len(line) <= 120 else line[:117] + "..."


def differences(row: dict[str, Any]) -> str:
    q, c = row["qopt"], row["ct"]
    return ", ".join(f"{op} {q[op]}/{c[op]}" for op in sorted(set(q) | set(c)) if q[op] != c[op])


def table(rows: list[tuple[str, str, dict[str, Any]]]) -> list[str]:
    lines = [
        "| model | scheme | MIL ops qopt / ct | non-const ops qopt / ct | package KiB qopt / ct "
        "| compile s qopt / ct | ops that differ (qopt/ct) |",
        "|---|---|---|---|---|---|---|",
    ]
    failed = []
    for model, scheme, row in rows:
        if "error" in row:
            failed.append(f"- {model} {scheme}: {row['error']}")
            continue
        q, c = row["qopt"], row["ct"]
        lines.append(
            f"| {model} | {scheme} | {sum(q.values())} / {sum(c.values())} "
            f"| {sum(q.values()) - q['const']} / {sum(c.values()) - c['const']} "
            f"| {row['qopt_bytes'] / 1024:.1f} / {row['ct_bytes'] / 1024:.1f} "
            f"| {row['qopt_s']:.2f} / {row['ct_s']:.2f} | {differences(row)} |"
        )
    if failed:
        lines += ["", "Not compared (one of the two fails):", "", *failed]
    return lines


def main() -> int:
    from qopt import zoo

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--models", nargs="*", default=[*EXAMPLES, *zoo.ARCHITECTURES])
    parser.add_argument("--schemes", nargs="*", default=list(SCHEMES))
    parser.add_argument("--write", type=Path, help="also write the markdown table here")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    rows = []
    with tempfile.TemporaryDirectory(prefix="qopt-parity-") as workdir:
        for model in args.models:
            for scheme in args.schemes:
                row = measure(model, scheme, workdir)
                rows.append((model, scheme, row))
                print(table([(model, scheme, row)])[-1], flush=True)
    lines = table(rows)
    print("\n".join(lines))
    compared = [r for _, _, r in rows if "error" not in r]
    more = sum(sum(r["qopt"].values()) > sum(r["ct"].values()) for r in compared)
    print(f"\n{len(compared)} compared, qopt writes more MIL ops on {more}")
    if args.write is not None:
        args.write.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
