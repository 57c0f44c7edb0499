"""linear_q4gsw / linear_q8csw at M = 1: x read through storage loads (X_UBO 0) vs the
uniform block (X_UBO 1), interleaved in one run (medians of per-repeat medians), outputs
compared bit for bit.

    python benchmarks/linear_x_uniform.py [--repeats 5] [--runs 20] [--bits 4]
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

from qopt.backends.vulkan.runtime import Dispatch, VulkanDevice
from qopt.kernels.qlinear import x_uniform

SHAPES = [(2048, 2048), (5632, 2048), (2048, 5632), (32000, 2048)]
"""(N, K): e2e.py's Llama-shaped q/o/k/v, gate/up, down and lm-head projections."""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--bits", type=int, nargs="+", default=[4])
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    dev = VulkanDevice()
    print(f"device {dev.name}; maxUniformBufferRange {dev.max_uniform_range}")
    print(
        f"{'kernel':<13}{'N x K':>12}{'ssbo ms':>9}{'ubo ms':>9}{'ratio':>7}"
        f"{'ssbo cpu':>10}{'ubo cpu':>9}{'ratio':>7}  bits equal"
    )
    for bits in args.bits:
        for n, k in SHAPES:
            case = Case(dev, bits, n, k, rng)
            x = dev.upload(rng.standard_normal(k, dtype=np.float32))
            outs = [dev.buffer(4 * n), dev.buffer(4 * n)]
            base = case.fused(x, outs[0], 1, M1_TILE)
            assert isinstance(base.buffers, list)
            ubo = Dispatch(
                base.kernel,
                [*base.buffers[:5], outs[1]],
                base.push,
                {**base.spec, **x_uniform(1, k)},
            )
            gpu: list[list[float]] = [[], []]
            cpu: list[list[float]] = [[], []]
            for _ in range(args.repeats):
                for i, d in enumerate((base, ubo)):
                    g, c = cpu_per_run(dev, [d], args.runs)
                    gpu[i].append(g)
                    cpu[i].append(c)
            ys = [dev.download(o, np.float32, (n,)) for o in outs]
            same = np.array_equal(ys[0].view(np.uint32), ys[1].view(np.uint32))
            g0, g1 = (statistics.median(t) * 1e3 for t in gpu)
            c0, c1 = (statistics.median(t) * 1e3 for t in cpu)
            name = "linear_q4gsw" if bits == 4 else "linear_q8csw"
            print(
                f"{name:<13}{f'{n}x{k}':>12}{g0:>9.3f}{g1:>9.3f}{g1 / g0:>7.2f}"
                f"{c0:>10.3f}{c1:>9.3f}{c1 / c0:>7.2f}  {same}"
            )
            x.free()
            for o in outs:
                o.free()
            case.free()
    dev.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
