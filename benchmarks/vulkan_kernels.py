"""Weight-only quantized linear on the Vulkan device vs qopt's unfused path and torch CPU.

For int4 per-group (g32) and int8 per-channel weights at (N, K) = (4096, 4096) and
(11008, 4096), M = 1 and 16, prints side by side, in one run:
- fused: `linear_q4gsw` / `linear_q8csw`, GPU timestamps, median of `--runs` after warm-up;
- unfused: qopt's `dequantize` kernel then the float `matmul` kernel (same device);
- torch CPU in this process: `F.linear` on float weights, `_weight_int4pack_mm_for_cpu`
  (after `_convert_weight_to_int4pack_for_cpu`), `_weight_int8pack_mm`;
- the memory floor: bytes the fused kernel must read / the device's copy bandwidth
  (measured with the `unary` identity kernel on a 64 MiB buffer);
- ratios: unfused / fused, torch int4-or-int8 / fused, fused / floor.
Targets (lavapipe, M = 1): int4 >= 2x unfused and >= 2.5x torch int4; int8 >= 2x
unfused and >= 1.2x torch int8.

    python benchmarks/vulkan_kernels.py [--quick] [--runs 15] [--tune] [--device NAME]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qopt.backends.vulkan.runtime import Dispatch, VulkanDevice, vulkan_available
from qopt.kernels.packing import pack_affine

# (NPW, MT, WG) per (bits, M is 1): chosen with --tune on lavapipe (2 cores)
DEFAULT_TILES = {
    (4, True): (4, 1, 64),
    (8, True): (4, 1, 64),
    (4, False): (4, 1, 64),
    (8, False): (4, 1, 64),
}
TUNE_CANDIDATES = [(4, 1, 64), (4, 1, 128), (4, 1, 32), (2, 1, 64), (1, 1, 64)]
TUNE_CANDIDATES_M16 = [(2, 4, 64), (1, 4, 64), (2, 2, 64), (2, 4, 32), (4, 1, 64), (1, 8, 64)]


def gpu_median(dev: VulkanDevice, dispatches: list[Dispatch], runs: int, warmup: int = 2) -> float:
    """Median over runs of the summed per-dispatch GPU time (seconds)."""
    with dev.program(dispatches, timestamps=True) as prog:
        for _ in range(warmup):
            prog.submit()
        times = [sum(prog.submit() or [float("nan")]) for _ in range(runs)]
    return statistics.median(times)


def cpu_median(fn: Callable[[], object], runs: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def copy_bandwidth(dev: VulkanDevice, runs: int) -> float:
    n = 16 << 20  # 64 MiB of f32
    src = dev.upload(np.ones(n, dtype=np.float32))
    dst = dev.buffer(4 * n)
    t = gpu_median(dev, [Dispatch("unary", [src, dst], {"n": n, "a": 0.0, "b": 0.0})], runs)
    src.free()
    dst.free()
    return 2 * 4 * n / t


class Case:
    def __init__(self, dev: VulkanDevice, bits: int, n: int, k: int, rng: np.random.Generator):
        self.dev, self.bits, self.n, self.k = dev, bits, n, k
        if bits == 4:
            self.group = 32
            data = rng.integers(-8, 8, size=(n, k), dtype=np.int8)
            scale = (rng.random((n, k // 32), dtype=np.float32) * 0.02 + 0.001).astype(np.float32)
            self.packed = pack_affine(data, scale, None, -8, 7, 32)
        else:
            self.group = k
            data = rng.integers(-128, 128, size=(n, k), dtype=np.int8)
            scale = (rng.random((n, 1), dtype=np.float32) * 0.002 + 0.0001).astype(np.float32)
            self.packed = pack_affine(data, scale, None, -128, 127, k)
        self.data, self.scale = data, scale
        p = self.packed
        self.w = dev.upload(p.weight)
        self.s = dev.upload(p.scales)
        self.dummy = dev.buffer(16)
        self.wf = dev.buffer(4 * n * k)  # the unfused path's dequantized weight
        # torch operands
        g = self.group
        self.w_float = torch.from_numpy(data.astype(np.float32) * np.repeat(scale, g, axis=1))
        if bits == 4:
            self.t_packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(
                torch.from_numpy(data.astype(np.int32) + 8), 1
            )
            s_t = torch.from_numpy(scale).t()
            self.t_sz = torch.stack([s_t, torch.zeros_like(s_t)], dim=-1).contiguous()
        else:
            self.t_w8 = torch.from_numpy(data)
            self.t_s8 = torch.from_numpy(scale[:, 0].copy())

    @property
    def weight_bytes(self) -> int:
        p = self.packed
        return p.weight.nbytes + p.scales.nbytes

    def fused(self, x: object, out: object, m: int, tile: tuple[int, int, int]) -> Dispatch:
        npw, mt, wg = tile
        p = self.packed
        return Dispatch(
            "linear_q4gsw" if self.bits == 4 else "linear_q8csw",
            [x, self.w, self.s, self.dummy, self.dummy, out],
            {"M": m, "N": self.n, "K": self.k, "row_words": p.row_words, "ngroups": p.ngroups},
            {
                "WBITS": self.bits,
                "GROUP_SIZE": self.group,
                "NPW": npw,
                "MT": mt,
                "WG": wg,
            },
        )

    def unfused(self, x: object, out: object, m: int) -> list[Dispatch]:
        p = self.packed
        n, k = self.n, self.k
        gs = self.group
        deq = Dispatch(
            "dequantize",
            [self.w, self.s, self.dummy, self.wf],
            {
                "n": n * k,
                "d0": 1,
                "d1": 1,
                "d2": n,
                "d3": k,
                "b0": 1,
                "b1": 1,
                "b2": 1,
                "b3": gs,
                "ps0": 0,
                "ps1": 0,
                "ps2": p.ngroups,
                "ps3": 1,
                "row_words": p.row_words,
                "lo": p.lo,
            },
            {"BITS": self.bits},
        )
        mm = Dispatch(
            "matmul",
            [x, self.wf, self.dummy, out],
            {"M": m, "N": n, "K": k, "batch": 1, "a_bs": 0, "b_bs": 0},
            {"TRANS_B": 1, "MT": 1 if m == 1 else 4},
        )
        return [deq, mm]

    def free(self) -> None:
        for b in (self.w, self.s, self.dummy, self.wf):
            b.free()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small shapes, few runs")
    ap.add_argument("--runs", type=int, default=None)
    ap.add_argument("--tune", action="store_true", help="try tile configs, use the best")
    ap.add_argument("--device", default=None)
    args = ap.parse_args(argv)
    reason = vulkan_available(args.device)
    if reason:
        print(f"skipped: {reason}")
        return 0
    runs = args.runs or (5 if args.quick else 15)
    shapes = [(1024, 1024), (2752, 1024)] if args.quick else [(4096, 4096), (11008, 4096)]
    rng = np.random.default_rng(0)
    dev = VulkanDevice(args.device)
    print(f"device: {dev.name}; torch {torch.__version__}, {torch.get_num_threads()} threads")
    bw = copy_bandwidth(dev, runs)
    print(f"copy bandwidth (unary identity, 64 MiB): {bw / 1e9:.2f} GB/s\n")
    header = (
        f"{'kernel':<13}{'N x K':>12}{'M':>4}{'fused ms':>10}{'unfused':>9}{'torch f32':>10}"
        f"{'torch q':>9}{'floor':>8}  {'unf/fus':>7}{'tq/fus':>7}{'fus/flr':>8}  tile"
    )
    print(header)
    print("-" * len(header))
    verdicts = []
    with dev:
        for bits in (4, 8):
            for n, k in shapes:
                case = Case(dev, bits, n, k, rng)
                for m in (1, 16):
                    x_np = rng.standard_normal((m, k), dtype=np.float32)
                    x = dev.upload(x_np)
                    out = dev.buffer(4 * m * n)
                    tile = DEFAULT_TILES[(bits, m == 1)]
                    if args.tune:
                        cands = TUNE_CANDIDATES if m == 1 else TUNE_CANDIDATES_M16
                        timed = [
                            (gpu_median(dev, [case.fused(x, out, m, t)], max(3, runs // 3)), t)
                            for t in cands
                        ]
                        tile = min(timed)[1]
                    t_fused = gpu_median(dev, [case.fused(x, out, m, tile)], runs)
                    y = dev.download(out, np.float32, (m, n))
                    ref = x_np.astype(np.float64) @ case.w_float.numpy().astype(np.float64).T
                    err = np.abs(y - ref).max() / max(np.abs(ref).max(), 1e-30)
                    assert err < 1e-4, f"fused result wrong: rel err {err}"
                    t_unf = gpu_median(dev, case.unfused(x, out, m), max(3, runs // 2))
                    xt = torch.from_numpy(x_np)
                    t_f32 = cpu_median(lambda: F.linear(xt, case.w_float), runs)
                    if bits == 4:
                        t_q = cpu_median(
                            lambda: torch.ops.aten._weight_int4pack_mm_for_cpu(
                                xt, case.t_packed, 32, case.t_sz
                            ),
                            runs,
                        )
                    else:
                        t_q = cpu_median(
                            lambda: torch.ops.aten._weight_int8pack_mm(xt, case.t_w8, case.t_s8),
                            runs,
                        )
                    floor = (case.weight_bytes + x_np.nbytes + 4 * m * n) / bw
                    name = "linear_q4gsw" if bits == 4 else "linear_q8csw"
                    print(
                        f"{name:<13}{f'{n}x{k}':>12}{m:>4}{t_fused * 1e3:>10.2f}"
                        f"{t_unf * 1e3:>9.2f}{t_f32 * 1e3:>10.2f}{t_q * 1e3:>9.2f}"
                        f"{floor * 1e3:>8.2f}  {t_unf / t_fused:>7.2f}{t_q / t_fused:>7.2f}"
                        f"{t_fused / floor:>8.1f}  {tile}",
                        flush=True,
                    )
                    if m == 1:
                        need_q = 2.5 if bits == 4 else 1.2
                        ok = t_unf / t_fused >= 2 and t_q / t_fused >= need_q
                        verdicts.append(
                            f"{name} {n}x{k} M=1: {t_unf / t_fused:.2f}x unfused (target 2x), "
                            f"{t_q / t_fused:.2f}x torch int{bits} (target {need_q}x) -> "
                            f"{'MET' if ok else 'NOT MET'}"
                        )
                    x.free()
                    out.free()
                case.free()
    print("\ntargets (lavapipe, same run):")
    for v in verdicts:
        print("  " + v)
    return 0


if __name__ == "__main__":
    sys.exit(main())
