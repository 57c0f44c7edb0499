"""Prefill (M rows of x) of the quantized linears, one kernel at a time, on this device:
the base kernel with the tile convert-to-vkc picks (`linear_tile` / `dq8ca_tile`, the
texel views of x and w) against every variant of it the device can run
(QOPT_VK_VARIANTS=all: e.g. linear_qw's shared-memory `smem_gemm`), dispatches
interleaved, medians of this process's CPU seconds per run (lavapipe runs the dispatches
on its threads: the measure that holds on a loaded machine), GFLOP per CPU second of the
base, and whether each variant gave the base's bits.

    python benchmarks/prefill_kernels.py [--m 64] [--repeats 5] [--runs 5]
        [--kernels linear_q4gsw linear_q8csw linear_dq8ca_q4gsw] [--shapes 2816x1024 ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from vulkan_kernels import Case, cpu_per_run

from benchmarks.machine import cpu_model
from qopt.backends.vulkan.runtime import Buffer, Dispatch, VulkanDevice, vulkan_available
from qopt.kernels.qlinear import dq8ca_tile, linear_tile, w_texel, x_texel, x_uniform
from qopt.kernels.variants import variants_of

SHAPES = ("1408x512", "512x1408", "2816x1024", "1024x2816", "2048x2048")
"""N x K: benchmarks/shapes.py's d512 / d1024 FFN projections and d2048's q/o."""
KERNELS = ("linear_q4gsw", "linear_q8csw", "linear_dq8ca_q4gsw")


def dispatches(
    dev: VulkanDevice, kernel: str, case: Case, m: int, copies: int, rng: np.random.Generator
) -> tuple[list[Dispatch], list[Buffer]]:
    """`copies` dispatches of `kernel` for M = m (each its own output), buffers to free."""
    n, k, p = case.n, case.k, case.packed
    push = {"M": m, "N": n, "K": k, "row_words": p.row_words, "ngroups": p.ngroups}
    dq8ca = kernel.startswith("linear_dq8ca")
    if dq8ca:
        xs = [dev.upload(rng.integers(-128, 128, (m, k)).astype(np.int32))]
        xs += [dev.upload(np.full(m, 0.01, np.float32)), dev.upload(np.zeros(m, np.int32))]
    else:
        xs = [dev.upload(rng.standard_normal((m, k), dtype=np.float32))]
    head = [*xs, case.w, case.s, case.dummy, case.dummy]
    tile = dq8ca_tile(m) if dq8ca else linear_tile(m)
    spec = {"WBITS": case.bits, "GROUP_SIZE": case.group, **tile, **w_texel()}
    spec |= x_uniform(m, k) | x_texel(m, k)
    outs = [dev.buffer(4 * m * n) for _ in range(copies)]
    return [Dispatch(kernel, [*head, o], push, spec) for o in outs], [*xs, *outs]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--m", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--kernels", nargs="+", default=list(KERNELS), choices=KERNELS)
    ap.add_argument("--shapes", nargs="+", default=list(SHAPES))
    args = ap.parse_args(argv)
    reason = vulkan_available()
    if reason:
        print(f"skipped: {reason}")
        return 0
    print(f"CPU: {cpu_model()}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with VulkanDevice(variants="base") as base, VulkanDevice(variants="all") as var:
        print(f"Vulkan device: {base.name}")
        for kernel in args.kernels:
            names = [v.name for v in variants_of(kernel)]
            for shape in args.shapes:
                n, k = (int(v) for v in shape.split("x"))
                bits = 8 if kernel == "linear_q8csw" else 4
                cases = [Case(dev, bits, n, k, np.random.default_rng(0)) for dev in (base, var)]
                d0, b0 = dispatches(base, kernel, cases[0], args.m, 1, np.random.default_rng(1))
                d1, b1 = dispatches(var, kernel, cases[1], args.m, 1, np.random.default_rng(1))
                cpu: list[list[float]] = [[], []]
                for _ in range(args.repeats):
                    for i, (dev, ds) in enumerate(((base, d0), (var, d1))):
                        cpu[i].append(cpu_per_run(dev, ds, args.runs)[1])
                c0, c1 = (statistics.median(t) * 1e3 for t in cpu)
                same = np.array_equal(b0[-1].read(np.uint32), b1[-1].read(np.uint32))
                got = ", ".join(f"{a}x{b}" for (kn, a), b in var.variant_dispatches.items()
                                if kn == kernel)  # fmt: skip
                var.variant_dispatches.clear()
                gflops = 2 * args.m * n * k / (c0 * 1e-3) / 1e9
                print(f"{kernel:<19}{shape:>10} M {args.m}: base {c0:7.2f} ms ({gflops:5.1f} "
                      f"GFLOP/CPU-s), variants [{got or 'none of: ' + (', '.join(names) or '-')}] "
                      f"{c1:7.2f} ms {c1 / c0:5.2f}x, same bits {same}", flush=True)  # fmt: skip
                for b in (*b0, *b1):
                    b.free()
                for c in cases:
                    c.free()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
