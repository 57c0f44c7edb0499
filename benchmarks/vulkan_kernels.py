"""Weight-only quantized linear on the Vulkan device vs qopt's unfused path and torch CPU.

For int4 per-group (g32) and int8 per-channel weights at (N, K) = (4096, 4096) and
(11008, 4096), M = 1 and 16, prints side by side, in one run:
- fused: `linear_q4gsw` / `linear_q8csw`, GPU timestamps, median of `--runs` after warm-up;
- unfused: qopt's `dequantize` kernel then the float `matmul` kernel (same device);
- torch CPU in this process: `F.linear` on float weights, `_weight_int4pack_mm_for_cpu`
  (after `_convert_weight_to_int4pack_for_cpu`), `_weight_int8pack_mm`;
- the memory floor: bytes the fused kernel must read and write / the device's copy
  bandwidth, measured with the `unary` identity kernel on a 64 MiB buffer several times
  during the run (one sample before each case) and taken as the median of the samples;
- ratios: unfused / fused, torch int4-or-int8 / fused, fused / floor.
Then (`--others`, on by default) the other fused kernels at M = 1 and 16, each against
torch float (`F.linear`, `F.embedding`, `F.conv2d`) and its floor: linear_lut (4-bit
per-row palettes), linear_q8ta_q8csw (static int8 activations), linear_dq8ca_q4gsw
(dynamic int8 activations; the linear dispatch alone), matmul (float linear),
embedding_q4gsw (M tokens of an N-row table), conv2d / conv2d_q8ta_q8csw (M images).
Each kernel is timed by GPU timestamps (wall, median) and by the process CPU seconds
per run (lavapipe's work, less sensitive to other load on the machine); the table
prints fused/floor, fused/torch f32 and M=16 / M=1 from the CPU seconds and from wall.
The spec constants a kernel lacks (an older catalogue) are dropped, so the same script
measures a tree before and after a kernel change.
Targets (lavapipe, M = 1): int4 >= 2x unfused and >= 2.5x torch int4; int8 >= 2x
unfused and >= 1.2x torch int8.

`--llama` measures the weight-only kernels at the shapes of benchmarks/e2e.py's model
instead ((N, K) = (2048, 2048), (5632, 2048), (2048, 5632), (32000, 2048); M = 1, 16, 64),
and linear_lut there under e2e's codebook4 weights (torchao's block [-1, 16]: one 16-entry
palette per 16 columns, shared by all rows) with the specialization convert-to-vkc picks
(`lut_tile`, `lut_uniform`, `x_uniform` where the tree has them), against torch float
`F.linear` and the floor (`--no-lut` skips it, `--only-lut` runs only it).

    python benchmarks/vulkan_kernels.py [--quick] [--llama] [--runs 15] [--tune]
        [--device NAME] [--no-others] [--only-others] [--no-lut] [--only-lut]
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

from qopt.backends.vulkan.runtime import Buffer, Dispatch, VulkanDevice, vulkan_available
from qopt.kernels import kernel_spec
from qopt.kernels.packing import pack_affine, pack_lut
from qopt.kernels.push import conv_out, static_io_push

# (NPW, MT, WG) at M = 1 before linear_tile covered M = 1 (the register-tiled GEMV, chosen
# with --tune on lavapipe); the benchmarks time what convert-to-vkc picks
# (qopt.kernels.qlinear.linear_tile; the spec defaults before it)
M1_TILE = (4, 1, 64)
TUNE_CANDIDATES = [(4, 1, 64), (4, 1, 128), (4, 1, 32), (2, 1, 64), (1, 1, 64), (8, 1, 64)]
TUNE_CANDIDATES_M16 = [
    (16, 8, 32),
    (16, 8, 64),
    (8, 8, 64),
    (8, 4, 64),
    (4, 4, 64),
    (8, 2, 64),
    (4, 8, 64),
    (4, 1, 64),
]


def known_spec(kernel: str, spec: dict[str, int]) -> dict[str, int]:
    """`spec` without the constants kernel `kernel` does not have (an older catalogue)."""
    names = {name for name, _ in kernel_spec(kernel).spec}
    return {k: v for k, v in spec.items() if k in names}


def picked_extras(m: int, k: int) -> dict[str, int]:
    """The other specialization convert-to-vkc gives linear_qw / linear_dq8ca for x of
    M x K: `x_uniform` (x through a uniform block) and `w_texel` (weights through a texel
    view), where this catalogue has them."""
    import qopt.kernels.qlinear as qlinear

    out: dict[str, int] = {}
    for name, args in (("x_uniform", (m, k)), ("w_texel", ())):
        pick = getattr(qlinear, name, None)
        if pick is not None:
            out.update(pick(*args))
    return out


def tile_of(m: int, kind: str = "linear_tile") -> dict[str, int]:
    """The NPW / MT convert-to-vkc picks for M rows (qopt.kernels.qlinear's `kind`
    function where it exists: linear_tile, lut_tile, q8ta_tile)."""
    import qopt.kernels.qlinear as qlinear

    pick = getattr(qlinear, kind, None)
    return pick(m) if pick is not None else {}


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


def cpu_per_run(dev: VulkanDevice, dispatches: list[Dispatch], runs: int) -> tuple[float, float]:
    """(median GPU-timestamp seconds, process CPU seconds per run): lavapipe runs the
    dispatches on this process's threads, so the CPU seconds count its work whatever
    else loads the machine."""
    with dev.program(dispatches, timestamps=True) as prog:
        prog.submit()
        t0 = time.process_time()
        wall = [sum(prog.submit() or [float("nan")]) for _ in range(runs)]
        return statistics.median(wall), (time.process_time() - t0) / runs


def copy_bandwidth(dev: VulkanDevice, runs: int) -> float:
    n = 16 << 20  # 64 MiB of f32
    src = dev.upload(np.ones(n, dtype=np.float32))
    dst = dev.buffer(4 * n)
    t = gpu_median(dev, [Dispatch("unary", [src, dst], {"n": n, "a": 0.0, "b": 0.0})], runs)
    src.free()
    dst.free()
    return 2 * 4 * n / t


class Bandwidth:
    """Copy-bandwidth samples taken during the run; the floor uses their median."""

    def __init__(self, dev: VulkanDevice, runs: int):
        self.dev, self.runs, self.samples = dev, runs, []

    def sample(self) -> None:
        self.samples.append(copy_bandwidth(self.dev, self.runs))

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


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

    def fused(self, x: Buffer, out: Buffer, m: int, tile: tuple[int, int, int]) -> Dispatch:
        npw, mt, wg = tile
        p = self.packed
        return Dispatch(
            "linear_q4gsw" if self.bits == 4 else "linear_q8csw",
            [x, self.w, self.s, self.dummy, self.dummy, out],
            {"M": m, "N": self.n, "K": self.k, "row_words": p.row_words, "ngroups": p.ngroups},
            known_spec(
                "linear_q4gsw",
                {
                    "WBITS": self.bits,
                    "GROUP_SIZE": self.group,
                    "NPW": npw,
                    "MT": mt,
                    "WG": wg,
                    **picked_extras(m, self.k),
                },
            ),
        )

    def unfused(self, x: Buffer, out: Buffer, m: int) -> list[Dispatch]:
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


class Other:
    """One of the other fused kernels at one shape: builds its buffers once, then the
    dispatch for M rows (tokens, images), its floor bytes and torch's float op."""

    def __init__(self, dev: VulkanDevice, kind: str, n: int, k: int, rng: np.random.Generator):
        self.dev, self.kind, self.n, self.k, self.rng = dev, kind, n, k, rng
        self.bufs: list[Buffer] = []
        self.dummy = self.keep(dev.buffer(16))
        if kind == "linear_lut":
            codes = rng.integers(0, 16, size=(n, k))
            book = rng.standard_normal((n, 1, 16, 1)).astype(np.float32)
            self.lut = pack_lut(codes, book, 4)
            self.w = self.keep(dev.upload(self.lut.codes))
            self.s = self.keep(dev.upload(self.lut.codebook))
            self.wbytes = self.lut.codes.nbytes + self.lut.codebook.nbytes
            self.w_float = torch.from_numpy(book[:, 0, :, 0][np.arange(n)[:, None], codes])
        elif kind in ("linear_q8ta_q8csw", "linear_dq8ca_q4gsw", "embedding_q4gsw"):
            bits = 8 if kind == "linear_q8ta_q8csw" else 4
            g = k if bits == 8 else 32
            lo = -(1 << (bits - 1))
            data = rng.integers(lo, -lo, size=(n, k), dtype=np.int8)
            scale = (rng.random((n, k // g), dtype=np.float32) * 0.02 + 0.001).astype(np.float32)
            self.aff = pack_affine(data, scale, None, lo, -lo - 1, g)
            self.group = g
            self.w = self.keep(dev.upload(self.aff.weight))
            self.s = self.keep(dev.upload(self.aff.scales))
            self.wbytes = self.aff.weight.nbytes + self.aff.scales.nbytes
            self.w_float = torch.from_numpy(data.astype(np.float32) * np.repeat(scale, g, axis=1))
        elif kind == "matmul":
            wf = rng.standard_normal((n, k), dtype=np.float32)
            self.w = self.keep(dev.upload(wf))
            self.wbytes = wf.nbytes
            self.w_float = torch.from_numpy(wf)
        elif kind in ("conv2d", "conv2d_q8ta_q8csw_q8to"):
            # n output channels from k input channels, 3x3, on 14x14 images
            self.hw = 14
            if kind == "conv2d":
                wf = rng.standard_normal((n, k, 3, 3), dtype=np.float32) * 0.1
                self.w = self.keep(dev.upload(wf))
                self.wbytes = wf.nbytes
                self.w_float = torch.from_numpy(wf)
            else:
                data = rng.integers(-128, 128, size=(n, k * 9), dtype=np.int8)
                scale = (rng.random((n, 1), dtype=np.float32) * 0.002 + 1e-4).astype(np.float32)
                self.aff = pack_affine(data, scale, None, -128, 127)
                self.w = self.keep(dev.upload(self.aff.weight))
                self.s = self.keep(dev.upload(self.aff.scales))
                self.wbytes = self.aff.weight.nbytes + self.aff.scales.nbytes
                self.w_float = torch.from_numpy((data * scale).reshape(n, k, 3, 3))
        else:
            raise ValueError(kind)

    def keep(self, buf: Buffer) -> Buffer:
        self.bufs.append(buf)
        return buf

    def case(self, m: int) -> tuple[list[Dispatch], int, Callable[[], object], list[Buffer]]:
        """(dispatches, floor bytes, torch float op, buffers to free) for M = m."""
        dev, n, k, kind = self.dev, self.n, self.k, self.kind
        if kind in ("conv2d", "conv2d_q8ta_q8csw_q8to"):
            hw = self.hw
            x_np = self.rng.standard_normal((m, k, hw, hw), dtype=np.float32)
            oh = conv_out(hw, 3, 1, 1, 1)
            out_words = m * n * oh * oh
            x, out = dev.upload(x_np), dev.buffer(4 * out_words)
            push: dict[str, float | int] = {
                "N": m, "C": k, "H": hw, "W": hw, "OC": n, "OH": oh, "OW": oh, "KH": 3,
                "KW": 3, "sh": 1, "sw": 1, "ph": 1, "pw": 1, "dh": 1, "dw": 1, "groups": 1,
            }  # fmt: skip
            tile = known_spec(kind, conv_tile_of(n, oh))
            if kind == "conv2d":
                d = Dispatch("conv2d", [x, self.w, self.dummy, out], push, tile)
            else:
                push |= {"row_words": self.aff.row_words}
                push |= static_io_push((0.05, 0, -128, 127))
                d = Dispatch(kind, [x, self.w, self.s, self.dummy, self.dummy, out], push,
                             {"ACT": 1, "REQUANT": 0, **tile})  # fmt: skip
            xt = torch.from_numpy(x_np)
            return (
                [d],
                self.wbytes + x_np.nbytes + 4 * out_words,
                lambda: F.conv2d(xt, self.w_float, padding=1),
                [x, out],
            )
        if kind == "embedding_q4gsw":
            idx = self.rng.integers(0, n, size=m).astype(np.int32)
            x, out, status = dev.upload(idx), dev.buffer(4 * m * k), dev.buffer(4)
            p = self.aff
            push = {"n": m, "D": k, "V": n, "row_words": p.row_words, "ngroups": p.ngroups}
            d = Dispatch(kind, [x, self.w, self.s, self.dummy, out, status], push,
                         {"WBITS": 4, "GROUP_SIZE": 32})  # fmt: skip
            row_bytes = 4 * p.row_words + 4 * p.ngroups
            it = torch.from_numpy(idx.astype(np.int64))
            return (
                [d],
                m * row_bytes + 4 * m * k + idx.nbytes,
                lambda: F.embedding(it, self.w_float),
                [x, out, status],
            )
        x_np = self.rng.standard_normal((m, k), dtype=np.float32)
        out = dev.buffer(4 * m * n)
        xt = torch.from_numpy(x_np)
        floor = self.wbytes + x_np.nbytes + 4 * m * n
        free: list[Buffer] = [out]
        if kind == "linear_lut":
            p = self.lut
            x = dev.upload(x_np)
            push = {"M": m, "N": n, "K": k, "row_words": p.row_words, "BN": p.block_rows,
                    "BK": p.block_cols, "GK": p.col_groups, "L": p.lut_size}  # fmt: skip
            d = Dispatch(kind, [x, self.w, self.s, self.dummy, out], push,
                         known_spec(kind, {"FBITS": 4, **tile_of(m, "lut_tile")}))  # fmt: skip
        elif kind == "linear_q8ta_q8csw":
            x = dev.upload(x_np)
            push = {"M": m, "N": n, "K": k, "row_words": self.aff.row_words}
            push |= static_io_push((0.05, 0, -128, 127))
            d = Dispatch(kind, [x, self.w, self.s, self.dummy, self.dummy, out], push,
                         known_spec(kind, tile_of(m, "q8ta_tile")))  # fmt: skip
        elif kind == "linear_dq8ca_q4gsw":
            xq = self.rng.integers(-128, 128, size=(m, k)).astype(np.int32)
            x = dev.upload(xq)
            xs = dev.upload(np.full(m, 0.05, np.float32))
            xz = dev.upload(np.zeros(m, np.int32))
            free += [xs, xz]
            p = self.aff
            push = {"M": m, "N": n, "K": k, "row_words": p.row_words, "ngroups": p.ngroups}
            spec = known_spec(
                kind, {"WBITS": 4, "GROUP_SIZE": 32, **dq8ca_tile(m), **picked_extras(m, k)}
            )
            d = Dispatch(kind, [x, xs, xz, self.w, self.s, self.dummy, self.dummy, out], push,
                         spec)  # fmt: skip
        else:  # matmul: float linear
            x = dev.upload(x_np)
            push = {"M": m, "N": n, "K": k, "batch": 1, "a_bs": m * k, "b_bs": 0}
            spec = known_spec("matmul", {"TRANS_B": 1, **matmul_tile(m)})
            d = Dispatch("matmul", [x, self.w, self.dummy, out], push, spec)
        free.append(x)
        return [d], floor, lambda: F.linear(xt, self.w_float), free

    def free(self) -> None:
        for b in self.bufs:
            b.free()


def dq8ca_tile(m: int) -> dict[str, int]:
    try:
        from qopt.kernels.qlinear import dq8ca_tile as pick
    except ImportError:
        return {"NPW": 4, "MT": 1}
    return pick(m)


def conv_tile_of(out_channels: int, out_width: int) -> dict[str, int]:
    try:
        from qopt.kernels.linalg import conv_tile
    except ImportError:
        return {}
    return conv_tile(out_channels, 1, out_width)


def matmul_tile(m: int) -> dict[str, int]:
    try:
        from qopt.kernels.linalg import matmul_tile as pick
    except ImportError:
        return {}
    return pick(m)


OTHER_KINDS = (
    "linear_lut",
    "linear_q8ta_q8csw",
    "linear_dq8ca_q4gsw",
    "matmul",
    "embedding_q4gsw",
    "conv2d",
    "conv2d_q8ta_q8csw_q8to",
)


def lut_spec(m: int, k: int, entries: int, field_bits: int, block_cols: int) -> dict[str, int]:
    """The linear_lut specialization convert-to-vkc picks for M rows of x and a codebook
    of `entries` values (the catalogue's own functions where this tree has them)."""
    import qopt.kernels.qlinear as qlinear

    spec: dict[str, int] = {"FBITS": field_bits}
    vec4 = getattr(qlinear, "lut_vec4", None)
    uniform = getattr(qlinear, "lut_uniform", None)
    uniforms: dict[str, int] = {}
    if vec4 is not None and uniform is not None and vec4(field_bits, block_cols, k):
        uniforms = {**uniform(entries), **qlinear.x_uniform(m, k)}
    palette = "CB_UBO" not in uniforms and qlinear.lut_palette(field_bits, block_cols, k)
    return known_spec("linear_lut", {**spec, **qlinear.lut_tile(m, palette), **uniforms})


def run_lut(
    dev: VulkanDevice,
    bw: Bandwidth,
    shapes: list[tuple[int, int]],
    ms: tuple[int, ...],
    runs: int,
    rng: np.random.Generator,
) -> None:
    """linear_lut under codebook4 weights (4-bit codes, one 16-entry palette per 16
    columns) at `shapes` and M in `ms`: GPU-timestamp and CPU ms, the floor (codes,
    codebook, x and out bytes at the median copy bandwidth), torch float F.linear."""
    rows = []
    for n, k in shapes:
        codes = rng.integers(0, 16, size=(n, k))
        book = rng.standard_normal((1, k // 16, 16, 1)).astype(np.float32)
        p = pack_lut(codes, book, 4)
        entries = np.concatenate([p.codebook, np.zeros((-p.codebook.size) % 4, np.float32)])
        w, cb, dummy = dev.upload(p.codes), dev.upload(entries), dev.buffer(16)
        w_float = book[0, :, :, 0][np.arange(k)[None, :] // 16, codes]
        wt = torch.from_numpy(w_float)
        for m in ms:
            bw.sample()
            x_np = rng.standard_normal((m, k), dtype=np.float32)
            x, out = dev.upload(x_np), dev.buffer(4 * m * n)
            push = {"M": m, "N": n, "K": k, "row_words": p.row_words, "BN": p.block_rows,
                    "BK": p.block_cols, "GK": p.col_groups, "L": p.lut_size}  # fmt: skip
            spec = lut_spec(m, k, p.codebook.size, p.field_bits, p.block_cols)
            d = Dispatch("linear_lut", [x, w, cb, dummy, out], push, spec)
            wall, cpu = cpu_per_run(dev, [d], runs)
            y = dev.download(out, np.float32, (m, n))
            ref = x_np.astype(np.float64) @ w_float.astype(np.float64).T
            err = np.abs(y - ref).max() / max(np.abs(ref).max(), 1e-30)
            assert err < 1e-4, f"linear_lut result wrong: rel err {err}"
            xt = torch.from_numpy(x_np)
            t_f32 = cpu_median(lambda: F.linear(xt, wt), runs)
            floor_bytes = p.codes.nbytes + entries.nbytes + x_np.nbytes + 4 * m * n
            rows.append((n, k, m, wall, cpu, t_f32, floor_bytes, spec))
            x.free()
            out.free()
        for b in (w, cb, dummy):
            b.free()
    bwm = bw.median
    print(
        f"\nlinear_lut, codebook4 blocks [-1, 16] (floor at the median copy bandwidth of "
        f"{len(bw.samples)} samples, {bwm / 1e9:.2f} GB/s; cpu = process CPU ms per run)"
    )
    header = (
        f"{'N x K':>11}{'M':>4}{'wall ms':>9}{'cpu ms':>9}{'floor':>8}{'torch f32':>10}"
        f"  {'wall/flr':>8}{'fus/tf32':>9}{'M/M1':>12}  spec"
    )
    print(header)
    print("-" * len(header))
    m1: dict[tuple[int, int], tuple[float, float]] = {}
    for n, k, m, wall, cpu, t_f32, floor_bytes, spec in rows:
        floor = floor_bytes / bwm
        ratio = ""
        if m == 1:
            m1[(n, k)] = (cpu, wall)
        elif (n, k) in m1:
            ratio = f"{cpu / m1[(n, k)][0]:.1f}c/{wall / m1[(n, k)][1]:.1f}w"
        tile = {a: b for a, b in spec.items() if a in ("NPW", "MT", "WG", "CB_UBO", "X_UBO")}
        print(
            f"{f'{n}x{k}':>11}{m:>4}{wall * 1e3:>9.2f}{cpu * 1e3:>9.2f}{floor * 1e3:>8.2f}"
            f"{t_f32 * 1e3:>10.2f}  {wall / floor:>8.1f}{wall / t_f32:>9.2f}{ratio:>12}  {tile}",
            flush=True,
        )


def run_others(dev: VulkanDevice, bw: Bandwidth, quick: bool, runs: int) -> None:
    """The other fused kernels at M = 1 and 16: one table, printed at the end with the
    floor from the median of the bandwidth samples."""
    rng = np.random.default_rng(1)
    n, k = (1024, 1024) if quick else (4096, 4096)
    rows = []
    for kind in OTHER_KINDS:
        shape = (64, 64) if kind.startswith("conv2d") else (n, k)
        if kind.startswith("conv2d") and not quick:
            shape = (128, 128)
        case = Other(dev, kind, *shape, rng)
        times: dict[int, tuple[float, float, float, int]] = {}
        for m in (1, 16):
            bw.sample()
            dispatches, floor_bytes, torch_op, free = case.case(m)
            wall, cpu = cpu_per_run(dev, dispatches, runs)
            t_torch = cpu_median(torch_op, runs)
            times[m] = (wall, cpu, t_torch, floor_bytes)
            for b in free:
                b.free()
        case.free()
        rows.append((kind, shape, times))
    floor_bw = bw.median
    print(
        f"\nother fused kernels (floor at the median copy bandwidth of {len(bw.samples)} "
        f"samples, {floor_bw / 1e9:.2f} GB/s; cpu = process CPU ms per run)"
    )
    header = (
        f"{'kernel':<23}{'shape':>11}{'M':>4}{'wall ms':>9}{'cpu ms':>8}{'floor':>8}"
        f"{'torch f32':>10}  {'wall/flr':>8}{'cpu/flr':>8}{'fus/tf32':>9}{'M16/M1':>13}"
    )
    print(header)
    print("-" * len(header))
    for kind, shape, times in rows:
        for m, (wall, cpu, t_torch, floor_bytes) in times.items():
            floor = floor_bytes / floor_bw
            ratio = ""
            if m == 16:
                ratio = f"{times[16][1] / times[1][1]:.1f}c/{times[16][0] / times[1][0]:.1f}w"
            print(
                f"{kind:<23}{f'{shape[0]}x{shape[1]}':>11}{m:>4}{wall * 1e3:>9.2f}"
                f"{cpu * 1e3:>8.2f}{floor * 1e3:>8.2f}{t_torch * 1e3:>10.2f}  "
                f"{wall / floor:>8.1f}{cpu / floor:>8.1f}{wall / t_torch:>9.2f}{ratio:>13}",
                flush=True,
            )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small shapes, few runs")
    ap.add_argument("--runs", type=int, default=None)
    ap.add_argument("--tune", action="store_true", help="try tile configs, use the best")
    ap.add_argument("--llama", action="store_true", help="e2e.py's Llama shapes, M 1/16/64")
    ap.add_argument("--device", default=None)
    ap.add_argument("--no-others", action="store_true", help="only linear_q4gsw / q8csw")
    ap.add_argument("--only-others", action="store_true", help="skip linear_q4gsw / q8csw")
    ap.add_argument("--no-lut", action="store_true", help="--llama: skip linear_lut")
    ap.add_argument("--only-lut", action="store_true", help="--llama: only linear_lut")
    args = ap.parse_args(argv)
    reason = vulkan_available(args.device)
    if reason:
        print(f"skipped: {reason}")
        return 0
    runs = args.runs or (5 if args.quick else 15)
    shapes = [(1024, 1024), (2752, 1024)] if args.quick else [(4096, 4096), (11008, 4096)]
    ms = (1, 16)
    if args.llama:
        shapes = [(2048, 2048), (5632, 2048), (2048, 5632), (32000, 2048)]
        ms = (1, 16, 64)
    rng = np.random.default_rng(0)
    dev = VulkanDevice(args.device)
    print(f"device: {dev.name}; torch {torch.__version__}, {torch.get_num_threads()} threads")
    bw = Bandwidth(dev, max(3, runs // 3))
    with dev:
        if args.llama and args.only_lut:
            run_lut(dev, bw, shapes, ms, runs, rng)
            return 0
        if not args.only_others:
            run_weight_only(dev, bw, shapes, rng, runs, args.tune, ms)
        if args.llama and not args.no_lut:
            run_lut(dev, bw, shapes, ms, runs, rng)
        if not args.no_others:
            run_others(dev, bw, args.quick, runs)
    return 0


def run_weight_only(
    dev: VulkanDevice,
    bw: Bandwidth,
    shapes: list[tuple[int, int]],
    rng: np.random.Generator,
    runs: int,
    tune: bool,
    ms: tuple[int, ...] = (1, 16),
) -> None:
    results = []
    verdicts = []
    for bits in (4, 8):
        for n, k in shapes:
            case = Case(dev, bits, n, k, rng)
            for m in ms:
                bw.sample()
                x_np = rng.standard_normal((m, k), dtype=np.float32)
                x = dev.upload(x_np)
                out = dev.buffer(4 * m * n)
                picked = tile_of(m)
                tile = (picked.get("NPW", 4), picked.get("MT", 1), picked.get("WG", 64))
                if tune:
                    cands = TUNE_CANDIDATES if m == 1 else TUNE_CANDIDATES_M16
                    timed = [
                        (cpu_per_run(dev, [case.fused(x, out, m, t)], max(3, runs // 3))[1], t)
                        for t in cands
                    ]
                    tile = min(timed)[1]
                t_fused, c_fused = cpu_per_run(dev, [case.fused(x, out, m, tile)], runs)
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
                floor_bytes = case.weight_bytes + x_np.nbytes + 4 * m * n
                results.append(
                    (bits, n, k, m, t_fused, c_fused, t_unf, t_f32, t_q, floor_bytes, tile)
                )
                x.free()
                out.free()
            case.free()
    bwm = bw.median
    print(
        f"copy bandwidth (unary identity, 64 MiB): median {bwm / 1e9:.2f} GB/s of "
        f"{len(bw.samples)} samples ({min(bw.samples) / 1e9:.2f}..{max(bw.samples) / 1e9:.2f})\n"
    )
    header = (
        f"{'kernel':<13}{'N x K':>12}{'M':>4}{'fused ms':>10}{'cpu ms':>8}{'unfused':>9}"
        f"{'torch f32':>10}{'torch q':>9}{'floor':>8}  {'unf/fus':>7}{'tq/fus':>7}"
        f"{'fus/tf32':>9}{'fus/flr':>8}{'M/M1':>12}  tile"
    )
    print(header)
    print("-" * len(header))
    cpu_m1: dict[tuple[int, int, int], tuple[float, float]] = {}
    for bits, n, k, m, t_fused, c_fused, t_unf, t_f32, t_q, floor_bytes, tile in results:
        floor = floor_bytes / bwm
        name = "linear_q4gsw" if bits == 4 else "linear_q8csw"
        if m == 1:
            cpu_m1[(bits, n, k)] = (c_fused, t_fused)
            ratio = ""
        else:
            c1, t1 = cpu_m1[(bits, n, k)]
            ratio = f"{c_fused / c1:.1f}c/{t_fused / t1:.1f}w"
        print(
            f"{name:<13}{f'{n}x{k}':>12}{m:>4}{t_fused * 1e3:>10.2f}{c_fused * 1e3:>8.2f}"
            f"{t_unf * 1e3:>9.2f}{t_f32 * 1e3:>10.2f}{t_q * 1e3:>9.2f}"
            f"{floor * 1e3:>8.2f}  {t_unf / t_fused:>7.2f}{t_q / t_fused:>7.2f}"
            f"{t_fused / t_f32:>9.2f}{t_fused / floor:>8.1f}{ratio:>12}  {tile}",
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
    print("\ntargets (lavapipe, same run):")
    for v in verdicts:
        print("  " + v)
    print("  M=16 / M=1 (target <= 4x): M/M1 of the M = 16 rows (c = CPU seconds, w = wall)")


if __name__ == "__main__":
    sys.exit(main())
