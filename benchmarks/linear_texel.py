"""Weight loads through a texel view (W_TEXEL) in linear_q4gsw / linear_q8csw /
linear_dq8ca_q4gsw at the Llama shapes of benchmarks/e2e.py, M = 1 / 16 / 64, three
variants interleaved in one run (medians over --repeats of each variant's per-run CPU
seconds and GPU time):
- before: the tile convert-to-vkc picked before W_TEXEL (M = 1 the register-tiled GEMV,
  NPW 4, WG 64; M > 1 `linear_tile`), storage weight loads;
- after: `linear_tile` / `dq8ca_tile` with `w_texel` (what convert-to-vkc picks now);
- no texel: the same tile with storage weight loads (a device without texel buffers: the
  runtime's fallback), which must give the bits of "after".
x goes through the uniform block where `x_uniform` says so, in every variant.

    python benchmarks/linear_texel.py [--m 1 16 64] [--repeats 3] [--runs 5]
        [--kernels linear_q4gsw linear_q8csw linear_dq8ca_q4gsw] [--device NAME]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from vulkan_kernels import M1_TILE, Case, cpu_per_run

from qopt.backends.vulkan.runtime import Buffer, Dispatch, VulkanDevice, vulkan_available
from qopt.kernels.qlinear import dq8ca_tile, linear_tile, w_texel, x_uniform

SHAPES = [(2048, 2048), (5632, 2048), (2048, 5632), (32000, 2048)]
"""(N, K): e2e.py's Llama-shaped q/o/k/v, gate/up, down and lm-head projections."""
KERNELS = ("linear_q4gsw", "linear_q8csw", "linear_dq8ca_q4gsw")


def dispatches(
    dev: VulkanDevice, kernel: str, case: Case, m: int, rng: np.random.Generator
) -> tuple[list[Dispatch], list[Buffer]]:
    """(before, after, no texel) dispatches of `kernel` for M = m, and buffers to free."""
    n, k, p = case.n, case.k, case.packed
    push = {"M": m, "N": n, "K": k, "row_words": p.row_words, "ngroups": p.ngroups}
    dq8ca = kernel.startswith("linear_dq8ca")
    tile = dq8ca_tile(m) if dq8ca else linear_tile(m)
    old = dict(zip(("NPW", "MT", "WG"), M1_TILE, strict=True)) if m == 1 else tile
    if dq8ca:
        xs = [dev.upload(rng.integers(-128, 128, (m, k)).astype(np.int32))]
        xs += [dev.upload(np.full(m, 0.01, np.float32)), dev.upload(np.zeros(m, np.int32))]
        head = [*xs, case.w, case.s, case.dummy, case.dummy]
    else:
        xs = [dev.upload(rng.standard_normal((m, k), dtype=np.float32))]
        head = [xs[0], case.w, case.s, case.dummy, case.dummy]
    outs = [dev.buffer(4 * m * n) for _ in range(3)]
    base = {"WBITS": case.bits, "GROUP_SIZE": case.group, **x_uniform(m, k)}
    specs = [
        {**base, **old, "W_TEXEL": 0},
        {**base, **tile, **w_texel()},
        {**base, **tile, "W_TEXEL": 0},
    ]
    ds = [Dispatch(kernel, [*head, o], push, s) for o, s in zip(outs, specs, strict=True)]
    return ds, [*xs, *outs]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--m", type=int, nargs="+", default=[1, 16, 64])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--kernels", nargs="+", default=list(KERNELS), choices=KERNELS)
    ap.add_argument("--device", default=None)
    args = ap.parse_args(argv)
    reason = vulkan_available(args.device)
    if reason:
        print(f"skipped: {reason}")
        return 0
    rng = np.random.default_rng(0)
    dev = VulkanDevice(args.device)
    print(
        f"device {dev.name}; texel format {dev.texel_format}, maxTexelBufferElements "
        f"{dev.max_texel_elements}"
    )
    print(
        f"{'kernel':<19}{'N x K':>12}{'M':>4}{'before cpu':>11}{'after':>8}{'ratio':>7}"
        f"{'no texel':>9}{'ratio':>7}{'before gpu':>11}{'after':>8}{'ratio':>7}  "
        "after==no texel, after==before"
    )
    with dev:
        for kernel in args.kernels:
            bits = 8 if kernel == "linear_q8csw" else 4
            for n, k in SHAPES:
                case = Case(dev, bits, n, k, rng)
                for m in args.m:
                    ds, bufs = dispatches(dev, kernel, case, m, rng)
                    gpu: list[list[float]] = [[], [], []]
                    cpu: list[list[float]] = [[], [], []]
                    for _ in range(args.repeats):
                        for i, d in enumerate(ds):
                            g, c = cpu_per_run(dev, [d], args.runs)
                            gpu[i].append(g)
                            cpu[i].append(c)
                    ys = [b.read(np.uint32) for b in bufs[-3:]]
                    c0, c1, c2 = (statistics.median(t) * 1e3 for t in cpu)
                    g0, g1, _ = (statistics.median(t) * 1e3 for t in gpu)
                    print(
                        f"{kernel:<19}{f'{n}x{k}':>12}{m:>4}{c0:>11.2f}{c1:>8.2f}{c1 / c0:>7.2f}"
                        f"{c2:>9.2f}{c2 / c0:>7.2f}{g0:>11.2f}{g1:>8.2f}{g1 / g0:>7.2f}  "
                        f"{np.array_equal(ys[1], ys[2])}, {np.array_equal(ys[1], ys[0])}",
                        flush=True,
                    )
                    for b in bufs:
                        b.free()
                case.free()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
