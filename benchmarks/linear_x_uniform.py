"""linear_q4gsw / linear_q8csw at M = 1 (or --m): x read through storage loads (X_UBO 0) vs the
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

from vulkan_kernels import Case, cpu_per_run

from qopt.backends.vulkan.runtime import Dispatch, VulkanDevice
from qopt.kernels.qlinear import X_UNIFORM_BYTES, linear_tile

SHAPES = [(2048, 2048), (5632, 2048), (2048, 5632), (32000, 2048)]
"""(N, K): e2e.py's Llama-shaped q/o/k/v, gate/up, down and lm-head projections."""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--bits", type=int, nargs="+", default=[4])
    ap.add_argument("--m", type=int, default=1, help="rows of x (M > 1: linear_tile's tile)")
    ap.add_argument("--dq8ca", action="store_true", help="linear_dq8ca_* (int8 x) instead")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    dev = VulkanDevice()
    print(f"device {dev.name}; maxUniformBufferRange {dev.max_uniform_range}; M = {args.m}")
    print(
        f"{'kernel':<19}{'N x K':>12}{'ssbo ms':>9}{'ubo ms':>9}{'ratio':>7}"
        f"{'ssbo cpu':>10}{'ubo cpu':>9}{'ratio':>7}  bits equal"
    )
    for bits in args.bits:
        for n, k in SHAPES:
            m = args.m
            if 4 * m * k > X_UNIFORM_BYTES:
                continue
            case = Case(dev, bits, n, k, rng)
            outs = [dev.buffer(4 * m * n), dev.buffer(4 * m * n)]
            t = linear_tile(m)
            tile = (t["NPW"], t["MT"], t.get("WG", 64))
            if args.dq8ca:
                xs = [dev.upload(rng.integers(-128, 128, (m, k)).astype(np.int32))]
                xs += [dev.upload(np.full(m, 0.01, np.float32)), dev.upload(np.zeros(m, np.int32))]
                base = Dispatch(
                    f"linear_dq8ca_q{bits}{'gsw' if bits == 4 else 'csw'}",
                    [*xs, case.w, case.s, case.dummy, case.dummy, outs[0]],
                    {
                        "M": m,
                        "N": n,
                        "K": k,
                        "row_words": case.packed.row_words,
                        "ngroups": case.packed.ngroups,
                    },
                    {
                        "WBITS": bits,
                        "GROUP_SIZE": case.group,
                        "NPW": tile[0],
                        "MT": tile[1],
                        "WG": tile[2],
                    },
                )
            else:
                xs = [dev.upload(rng.standard_normal((m, k), dtype=np.float32))]
                base = case.fused(xs[0], outs[0], m, tile)
                base = Dispatch(base.kernel, base.buffers, base.push, {**base.spec, "X_UBO": 0})
            assert isinstance(base.buffers, list)
            ubo = Dispatch(
                base.kernel,
                [*base.buffers[:-1], outs[1]],
                base.push,
                {**base.spec, "X_UBO": 1, "XU_VEC4": m * k // 4},
            )
            gpu: list[list[float]] = [[], []]
            cpu: list[list[float]] = [[], []]
            for _ in range(args.repeats):
                for i, d in enumerate((base, ubo)):
                    g, c = cpu_per_run(dev, [d], args.runs)
                    gpu[i].append(g)
                    cpu[i].append(c)
            ys = [dev.download(o, np.float32, (m * n,)) for o in outs]
            same = np.array_equal(ys[0].view(np.uint32), ys[1].view(np.uint32))
            g0, g1 = (statistics.median(t) * 1e3 for t in gpu)
            c0, c1 = (statistics.median(t) * 1e3 for t in cpu)
            print(
                f"{base.kernel:<19}{f'{n}x{k}':>12}{g0:>9.3f}{g1:>9.3f}{g1 / g0:>7.2f}"
                f"{c0:>10.3f}{c1:>9.3f}{c1 / c0:>7.2f}  {same}"
            )
            for x in xs:
                x.free()
            for o in outs:
                o.free()
            case.free()
    dev.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
