"""Compile time and memory of `import_program` + `fuse` as graphs grow (docs/architecture.md).

A benchmark, not a test: it prints one table and the ratios the performance
contract asks for, side by side in one run.

Models: deep MLPs of 10, 100 and 1000 `Linear(256, 256)` layers (ReLU between)
and the built-in Llama-style decoder (`qopt.examples`), each under `w4g32`
(torchao int4 weight-only, group 32) and `pt2e_static` (PT2E, XNNPACK-style
static int8; calibrated on one batch). Per row: the time to quantize and to
`torch.export.export` the quantized model, the time of `qopt.import_program`
and of `qopt.fuse` (best of 3), both as ops per second and microseconds per op (ops = ops in
the module before fusion), the bytes of the imported weights, the tracemalloc
peak of import + fuse (a separate, untimed run) and the process's max RSS so far.

Checks, as ratios from 100 to 1000 layers:
  * per-op import and fuse time stay within 1.5x ("flat": no pass rescans the
    whole module per match);
  * import + fuse of the 1000-layer MLP takes less time than its export.

    .venv/bin/python benchmarks/compile_time.py            # everything (~4 min)
    .venv/bin/python benchmarks/compile_time.py --quick    # 10 and 100 layers only
    .venv/bin/python benchmarks/compile_time.py --skip-pt2e-1000
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import time
import tracemalloc
from dataclasses import dataclass, field

import torch
import torch.nn as nn

import qopt
from qopt.examples import apply_scheme, build_model, quantize_model
from qopt.lowering.fuse_quant import report

SCHEMES = ("w4g32", "pt2e_static")
FLAT_LIMIT = 1.5
WIDTH = 256
BATCH = 4


@dataclass
class Row:
    model: str
    layers: int | None
    scheme: str
    ops: int = 0
    quantize_s: float = 0.0
    export_s: float = 0.0
    import_s: float = 0.0
    fuse_s: float = 0.0
    weight_bytes: int = 0
    peak_bytes: int = 0
    max_rss_bytes: int = 0
    quant_before: int = 0
    quant_after: int = 0
    kernels: dict[str, int] = field(default_factory=dict)

    @property
    def import_us(self) -> float:
        return self.import_s / self.ops * 1e6

    @property
    def fuse_us(self) -> float:
        return self.fuse_s / self.ops * 1e6


def deep_mlp(layers: int, seed: int = 0) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """`layers` x Linear(256, 256) with a ReLU between consecutive layers."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        mods: list[nn.Module] = []
        for i in range(layers):
            mods.append(nn.Linear(WIDTH, WIDTH))
            if i < layers - 1:
                mods.append(nn.ReLU())
        model = nn.Sequential(*mods).eval()
        x = torch.randn(BATCH, WIDTH)
    return model, (x,)


def quantized(model_name: str, layers: int | None, scheme: str) -> tuple[nn.Module, tuple]:
    if layers is None:
        model, inputs = build_model(model_name)
        return quantize_model(model_name, scheme, model, inputs), inputs
    model, inputs = deep_mlp(layers)
    # PT2E calibrates on the example batch alone (one batch).
    return apply_scheme(model, scheme, inputs, [inputs]), inputs


def count_ops(module) -> int:
    return sum(1 for op in module.walk() if op is not module)


def weight_bytes(module) -> int:
    from xdsl.dialects.arith import ConstantOp
    from xdsl.dialects.builtin import DenseResourceAttr

    from qopt.resources import resource_array, weights_of

    total = 0
    for op in module.walk():
        if isinstance(op, ConstantOp) and isinstance(op.value, DenseResourceAttr):
            array = resource_array(op.value, weights_of(op))
            total += 0 if array is None else array.nbytes
    return total


def max_rss_bytes() -> int:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024  # Linux reports KiB


def measure(model_name: str, layers: int | None, scheme: str, repeat: int) -> Row:
    row = Row(model_name, layers, scheme)
    t0 = time.perf_counter()
    qmodel, inputs = quantized(model_name, layers, scheme)
    t1 = time.perf_counter()
    with torch.no_grad():
        ep = torch.export.export(qmodel, inputs, strict=False)
    t2 = time.perf_counter()
    row.quantize_s, row.export_s = t1 - t0, t2 - t1

    # Best of `repeat` (the machine may be shared): import and fuse afresh each time.
    row.import_s = row.fuse_s = float("inf")
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        module = qopt.import_program(ep)
        t1 = time.perf_counter()
        row.ops = count_ops(module)
        row.quant_before = report.quant_op_count(module)
        t2 = time.perf_counter()
        qopt.fuse(module)
        t3 = time.perf_counter()
        row.import_s, row.fuse_s = min(row.import_s, t1 - t0), min(row.fuse_s, t3 - t2)
        row.quant_after = report.quant_op_count(module)
        row.kernels = dict(report.kernel_counts(module))
        del module

    # Memory in a second, untimed run (tracemalloc slows Python down several-fold).
    gc.collect()
    tracemalloc.start()
    try:
        module = qopt.import_program(ep)
        row.weight_bytes = weight_bytes(module)
        qopt.fuse(module)
        row.peak_bytes = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    row.max_rss_bytes = max_rss_bytes()
    del module, ep, qmodel
    gc.collect()
    return row


def warm_up() -> None:
    """Import + fuse a 2-layer MLP per scheme so first-use imports are not timed."""
    for scheme in SCHEMES:
        qmodel, inputs = quantized("mlp", 2, scheme)
        with torch.no_grad():
            ep = torch.export.export(qmodel, inputs, strict=False)
        qopt.fuse(qopt.import_program(ep))


HEADER = (
    f"{'model':<10} {'scheme':<12} {'ops':>6} {'quant s':>8} {'export s':>8} "
    f"{'import s':>8} {'fuse s':>7} {'imp op/s':>9} {'fuse op/s':>9} "
    f"{'imp us/op':>9} {'fuse us/op':>10} {'weights MiB':>11} {'peak MiB':>8} "
    f"{'maxRSS MiB':>10}  fused"
)


def _mib(n: int) -> float:
    return n / 2**20


def format_row(r: Row) -> str:
    label = r.model if r.layers is None else f"mlp-{r.layers}"
    kernels = ", ".join(f"{k} x{v}" for k, v in sorted(r.kernels.items())) or "none"
    return (
        f"{label:<10} {r.scheme:<12} {r.ops:>6} {r.quantize_s:>8.2f} {r.export_s:>8.2f} "
        f"{r.import_s:>8.3f} {r.fuse_s:>7.3f} {r.ops / r.import_s:>9.0f} "
        f"{r.ops / r.fuse_s:>9.0f} {r.import_us:>9.1f} {r.fuse_us:>10.1f} "
        f"{_mib(r.weight_bytes):>11.1f} {_mib(r.peak_bytes):>8.1f} "
        f"{_mib(r.max_rss_bytes):>10.0f}  {r.quant_before} quant -> {r.quant_after} left; "
        f"{kernels}"
    )


def checks(rows: list[Row], small: int, large: int) -> list[tuple[str, float, float, bool]]:
    """(description, ratio, limit, ok) per check and scheme."""
    by_key = {(r.scheme, r.layers): r for r in rows}
    out: list[tuple[str, float, float, bool]] = []
    for scheme in SCHEMES:
        lo, hi = by_key.get((scheme, small)), by_key.get((scheme, large))
        if lo is None or hi is None:
            continue
        for what, a, b in (
            ("import us/op", lo.import_us, hi.import_us),
            ("fuse   us/op", lo.fuse_us, hi.fuse_us),
        ):
            ratio = b / a
            out.append(
                (f"{scheme:<12} {what} {large} / {small} layers", ratio, FLAT_LIMIT, ratio <= 1.5)
            )
        ratio = (hi.import_s + hi.fuse_s) / hi.export_s
        out.append(
            (f"{scheme:<12} (import + fuse) / export, {large} layers", ratio, 1.0, ratio < 1.0)
        )
    return out


def main(argv: list[str] | None = None) -> int:
    from qopt.logs import quiet_third_party_logs

    quiet_third_party_logs()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 and 100 layers only")
    parser.add_argument(
        "--skip-pt2e-1000",
        action="store_true",
        help="skip the 1000-layer PT2E model (PT2E prepare/convert of it takes minutes)",
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="import + fuse runs per model (best is shown)"
    )
    parser.add_argument("--no-llama", action="store_true", help="skip the Llama-style model")
    args = parser.parse_args(argv)
    sizes = (10, 100) if args.quick else (10, 100, 1000)

    print(f"torch {torch.__version__}; MLPs of Linear({WIDTH}, {WIDTH}), batch {BATCH}")
    warm_up()
    print(HEADER)
    print("-" * len(HEADER))
    rows: list[Row] = []
    configs: list[tuple[str, int | None, str]] = [
        ("mlp", n, scheme) for scheme in SCHEMES for n in sizes
    ]
    if not args.no_llama:
        configs += [("llama", None, scheme) for scheme in SCHEMES]
    for model_name, layers, scheme in configs:
        if args.skip_pt2e_1000 and scheme == "pt2e_static" and layers == 1000:
            print(f"mlp-1000   {scheme:<12} skipped (--skip-pt2e-1000)")
            continue
        row = measure(model_name, layers, scheme, args.repeat)
        rows.append(row)
        print(format_row(row), flush=True)

    small, large = sizes[-2], sizes[-1]
    print()
    print(f"checks ({small} -> {large} layers):")
    if args.quick:
        print("  (--quick: 10 layers carry fixed per-module costs; the contract is 100 -> 1000)")
    failed = 0
    for what, ratio, limit, ok in checks(rows, small, large):
        cmp = "<=" if limit == FLAT_LIMIT else "<"
        print(f"  {what:<48} {ratio:6.2f}x  (must be {cmp} {limit:g})  {'ok' if ok else 'FAIL'}")
        failed += not ok
    print()
    print("all checks pass" if failed == 0 else f"{failed} check(s) FAILED")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
