"""Llama-shaped decoders of many shapes: qopt on Vulkan against torch float eager, per shape.

`benchmarks/e2e.py` measures one model (the 336M decoder); users have others. This sweep
builds `qopt.examples.TinyLlama` at each shape of `SHAPES` (dims 512-4096, FFN ratios
2.0-3.5, 4-32 heads, vocab 4000-32000; `--quick` a few small ones), quantizes it under each
`--schemes` entry (default w4g32, 8da4w, codebook4), compiles one Vulkan artifact per
scheme with a method per sequence length (`--seqs`, default 1 and 64) and prints, per
shape, scheme and length, the median wall time of one qopt call, of one torch float eager
forward (the calls interleaved, so background load hits both alike), their ratio
(below 1.00x: qopt faster), the same for this process's CPU time per call (lavapipe's
threads and torch's run in it: the ratio that holds on a loaded machine) and the `--top`
kernels with the most GPU time per call (dispatch timestamps, median over the repeats)
with the host time outside the GPU.
It prints the CPU, the Vulkan device and the load average before and after.

    python benchmarks/shapes.py [--quick] [--shapes NAME ...] [--schemes ...] [--seqs 1 64]
                                [--layers N] [--repeats N] [--top N] [--x-storage]
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import qopt
from benchmarks.machine import cpu_model
from qopt.backends.vulkan.artifact import VulkanArtifact
from qopt.backends.vulkan.runtime import vulkan_available
from qopt.examples import LlamaConfig, TinyLlama, apply_scheme
from qopt.logs import quiet_third_party_logs

# name: (dim, FFN hidden, heads, vocab); layers from --layers
SHAPES: dict[str, tuple[int, int, int, int]] = {
    "d512": (512, 1408, 8, 8000),
    "d768r3.5": (768, 2688, 12, 16000),
    "d1024": (1024, 2816, 8, 8000),
    "d1024h16": (1024, 4096, 16, 32000),
    "d1536": (1536, 4096, 12, 16000),
    "d2048": (2048, 5632, 16, 32000),
    "d3072": (3072, 8192, 24, 32000),
    "d4096": (4096, 11008, 32, 32000),
}
QUICK = ("d512", "d1024", "d2048")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def top_kernels(artifact, method: str, per_dispatch: list[list[float]], walls: list[float],
                top: int) -> list[str]:  # fmt: skip
    """Lines naming the `top` kernels by GPU time per call of `method` (medians)."""
    program = artifact.program
    steps = program.method_steps(program.method(method))
    if not per_dispatch or any(len(t) != len(steps) for t in per_dispatch):
        return ["    (no per-dispatch timestamps)"]
    medians = [statistics.median(col) for col in zip(*per_dispatch, strict=True)]
    by_kernel: dict[str, list[float]] = {}
    for step, seconds in zip(steps, medians, strict=True):
        by_kernel.setdefault(program.kernels[step.kernel].kernel, []).append(seconds)
    gpu = sum(medians) or float("nan")
    host = statistics.median(w - sum(t) for w, t in zip(walls, per_dispatch, strict=True))
    ranked = sorted(by_kernel.items(), key=lambda item: -sum(item[1]))[:top]
    parts = [f"{name} {len(t)}x {sum(t) * 1e3:.1f}ms ({sum(t) / gpu:.0%})" for name, t in ranked]
    return [f"    GPU {gpu * 1e3:.1f} ms in {len(steps)} dispatches, host {host * 1e3:.1f} ms: "
            + "; ".join(parts)]  # fmt: skip


def without_x_texel(artifact: VulkanArtifact) -> VulkanArtifact | None:
    """`artifact` with x read through storage (X_TEXEL 0) in every kernel that reads it
    through its texel view (the same bits), or None when no kernel does."""
    program = artifact.program
    if not any(int(k.spec.get("X_TEXEL", 0)) == 1 for k in program.kernels):
        return None
    kernels = [
        dataclasses.replace(k, spec={**k.spec, "X_TEXEL": 0}) if "X_TEXEL" in k.spec else k
        for k in program.kernels
    ]
    return VulkanArtifact(dataclasses.replace(program, kernels=kernels))


def main() -> None:
    quiet_third_party_logs()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    parser.add_argument("--shapes", nargs="*", choices=sorted(SHAPES), default=None)
    parser.add_argument("--schemes", nargs="*", default=["w4g32", "8da4w", "codebook4"])
    parser.add_argument("--seqs", nargs="*", type=int, default=[1, 64])
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--top", type=int, default=3, help="kernels listed per call")
    parser.add_argument(
        "--x-storage",
        action="store_true",
        help="also time each call with x read through storage (X_TEXEL 0), interleaved",
    )
    args = parser.parse_args()
    if (reason := vulkan_available()) is not None:
        sys.exit(f"no Vulkan device: {reason}")
    names = args.shapes or (list(QUICK) if args.quick else list(SHAPES))
    print(f"CPU: {cpu_model()} ({os.cpu_count()} cores), torch threads "
          f"{torch.get_num_threads()}; load average {load()}")  # fmt: skip
    device_printed = False
    rows = []
    for name in names:
        dim, hidden, heads, vocab = SHAPES[name]
        config = {"vocab_size": vocab, "dim": dim, "n_layers": args.layers, "n_heads": heads,
                  "hidden_dim": hidden, "max_seq_len": max(args.seqs)}  # fmt: skip
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            float_model = TinyLlama(LlamaConfig(**config)).eval()
        inputs = {
            seq: torch.randint(0, vocab, (1, seq), generator=torch.Generator().manual_seed(seq))
            for seq in args.seqs
        }
        print(f"\n{name}: dim {dim}, FFN {hidden}, {heads} heads, vocab {vocab}, "
              f"{args.layers} layers")  # fmt: skip
        for scheme in args.schemes:
            model = apply_scheme(float_model, scheme, (inputs[args.seqs[0]],))
            t0 = time.perf_counter()
            with torch.no_grad():
                methods = {
                    f"seq{seq}": torch.export.export(copy.deepcopy(model), (t,), strict=False)
                    for seq, t in inputs.items()
                }
            artifact = qopt.compile(methods, target="vulkan")
            compile_s = time.perf_counter() - t0
            if not device_printed:
                print(f"Vulkan device: {artifact.device.name}")
                device_printed = True
            session = artifact.session()
            storage = without_x_texel(artifact) if args.x_storage else None
            storage_session = storage.session() if storage is not None else None
            for seq, tokens in inputs.items():
                method = f"seq{seq}"
                ids = tokens.numpy()
                session.run(ids, method=method)  # warm-up: records the command buffer
                walls, floats, per_dispatch, cpus, fcpus, xs = [], [], [], [], [], []
                if storage_session is not None:
                    storage_session.run(ids, method=method)
                with torch.no_grad():
                    float_model(tokens)
                    for _ in range(args.repeats):
                        t0, c0 = time.perf_counter(), time.process_time()
                        session.run(ids, method=method)
                        walls.append(time.perf_counter() - t0)
                        cpus.append(time.process_time() - c0)
                        per_dispatch.append(list(artifact.last_times or []))
                        t0, c0 = time.perf_counter(), time.process_time()
                        float_model(tokens)
                        floats.append(time.perf_counter() - t0)
                        fcpus.append(time.process_time() - c0)
                        if storage_session is not None:
                            c0 = time.process_time()
                            storage_session.run(ids, method=method)
                            xs.append(time.process_time() - c0)
                wall, flt = statistics.median(walls), statistics.median(floats)
                cpu, fcpu = statistics.median(cpus), statistics.median(fcpus)
                rows.append((name, scheme, seq, wall / flt, cpu / fcpu))
                print(f"  {scheme:<9} seq {seq:>3}: qopt {wall * 1e3:8.1f} ms, torch float "
                      f"{flt * 1e3:7.1f} ms, {wall / flt:5.2f}x; CPU time {cpu * 1e3:.1f} / "
                      f"{fcpu * 1e3:.1f} ms, {cpu / fcpu:5.2f}x (compile {compile_s:.0f}s, "
                      f"load {load()})")  # fmt: skip
                if xs:
                    xcpu = statistics.median(xs)
                    print(f"    x through storage (X_TEXEL 0): CPU time {xcpu * 1e3:.1f} ms, "
                          f"{xcpu / fcpu:.2f}x torch float")  # fmt: skip
                for line in top_kernels(artifact, method, per_dispatch, walls, args.top):
                    print(line)
            if storage is not None:
                storage.close()
            artifact.close()
    print(f"\nqopt / torch float, wall time (CPU time of this process: lavapipe and torch "
          f"both run on its threads, so it holds under load); below 1.00x: qopt faster; "
          f"load average {load()}")  # fmt: skip
    schemes = args.schemes
    header = "".join(f" {s + ' s' + str(q):>16}" for s in schemes for q in args.seqs)
    print(f"{'shape':<10}{header}")
    table = {(n, s, q): (w, c) for n, s, q, w, c in rows}
    for name in names:
        cells = "".join(
            f" {table[name, s, q][0]:>6.2f}x ({table[name, s, q][1]:.2f}x)"
            for s in schemes
            for q in args.seqs
        )
        print(f"{name:<10}{cells}")


if __name__ == "__main__":
    main()
