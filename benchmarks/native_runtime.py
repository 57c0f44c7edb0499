"""The native runtime (runtime/, C: libqvk through ctypes) vs qopt's Python runtime on
the same `.qvk`, printed side by side in one run.

A Llama-shaped KV-cache decoder (`qopt.examples.build_kv_llama`) under w4g32, compiled
once with `prefill` (of `--prefill` tokens) and `decode`; for each runtime:
- load: reading and checking the bundle (the Python loader also re-verifies each
  kernel's SPIR-V; the native one compares it with its catalogue), and the session:
  device, buffers, constants uploaded, pipelines;
- per call, `--runs` calls each after a warm-up: wall time of prefill and of one decode
  step over the cache, GPU time (timestamp queries; equal work: the same dispatches),
  and host time per dispatch (wall minus GPU, over the dispatches of the call);
- peak resident memory of loading: each runtime loads the bundle and opens a session in
  a fresh process (this script again, `--load-only`), which prints its peak resident size
  (ru_maxrss) before and after, so that the compile's memory does not hide it.
Ratios: Python / native wall time. The outputs are compared bit for bit on the way. The
CPU model, the load average and the Vulkan device are printed first (lavapipe runs the
kernels on the CPU: its timings depend on the machine and on what else runs there).

    python benchmarks/native_runtime.py [--quick | --tiny] [--runs 10] [--prefill 64]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import qopt
from benchmarks.machine import machine_line
from qopt.backends.vulkan.native import NativeBundle, native_library
from qopt.backends.vulkan.runtime import vulkan_available
from qopt.examples import apply_scheme, build_kv_llama
from qopt.logs import quiet_third_party_logs

FULL = {"vocab_size": 32000, "dim": 2048, "n_layers": 4, "n_heads": 16, "hidden_dim": 5632,
        "max_seq_len": 512}  # fmt: skip
TINY = {"vocab_size": 64, "dim": 32, "n_layers": 2, "n_heads": 4, "hidden_dim": 64,
        "max_seq_len": 40}  # fmt: skip
QUICK = {"vocab_size": 4096, "dim": 256, "n_layers": 2, "n_heads": 8, "hidden_dim": 704,
         "max_seq_len": 128}  # fmt: skip


def rss_mib() -> float:
    """This process's peak resident size: VmHWM where /proc exists (ru_maxrss is
    inherited from the parent across fork on Linux: a child started by a large process
    would report the parent's peak), else ru_maxrss."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load_only(which: str, path: str) -> int:
    """In a fresh process: load `path` with one runtime and open a session; print
    {load, session, rss_before, rss_after} (seconds, MiB) as JSON."""
    before = rss_mib()
    t0 = time.perf_counter()
    if which == "native":
        bundle: Any = NativeBundle.open(path)
    else:
        bundle = qopt.load(path)
    t1 = time.perf_counter()
    session = bundle.session()
    t2 = time.perf_counter()
    after = rss_mib()
    device = session.device_name if which == "native" else ""
    print(json.dumps({"load": t1 - t0, "session": t2 - t1, "rss_before": before,
                      "rss_after": after, "device": device}))  # fmt: skip
    session.close()
    bundle.close()
    return 0


def measure_load(which: str, path: str) -> dict[str, Any]:
    r = subprocess.run(
        [sys.executable, __file__, "--load-only", which, path],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(r.stdout.strip().splitlines()[-1])


def timed_calls(
    session: Any,
    calls: list[tuple[str, tuple[np.ndarray, ...]]],
    runs: int,
    gpu: Callable[[], float],
) -> tuple[float, float, tuple[np.ndarray, ...]]:
    """(median wall s, median GPU s, last outputs) of `runs` repetitions of `calls`
    (each a (method, inputs) pair; the state reset before each repetition)."""
    walls: list[float] = []
    gpus: list[float] = []
    out: tuple[np.ndarray, ...] = ()
    wall = 0.0
    for r in range(runs + 1):
        session.reset()
        for method, inputs in calls:
            t0 = time.perf_counter()
            out = session.run(*inputs, method=method)
            wall = time.perf_counter() - t0
        if r:  # the first repetition records the command buffers
            walls.append(wall)
            gpus.append(gpu())
    return statistics.median(walls), statistics.median(gpus), out


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small decoder (dim 256)")
    parser.add_argument("--tiny", action="store_true", help="the demo's decoder (dim 32)")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--prefill", type=int, default=64)
    parser.add_argument("--bundle", help="a bundle an earlier run compiled (same options)")
    parser.add_argument("--load-only", nargs=2, metavar=("native|python", "BUNDLE"),
                        help=argparse.SUPPRESS)  # fmt: skip
    args = parser.parse_args()
    quiet_third_party_logs()
    for reason in (vulkan_available(), native_library()):
        if reason is not None:
            print(f"skipped: {reason}")
            return 0
    if args.load_only:
        return load_only(*args.load_only)
    print(machine_line())
    config = TINY if args.tiny else QUICK if args.quick else FULL
    prompt = torch.arange(args.prefill).reshape(1, -1) % config["vocab_size"]
    example = (prompt, torch.arange(args.prefill))
    if args.bundle:  # compiled by an earlier run (it prints where): same size and --prefill
        path = args.bundle
    else:
        model = apply_scheme(build_kv_llama(**config), "w4g32", example)
        with torch.no_grad():
            methods = {
                "prefill": torch.export.export(copy.deepcopy(model), example, strict=False),
                "decode": torch.export.export(
                    copy.deepcopy(model), (torch.tensor([[1]]), torch.tensor([0])), strict=False
                ),
            }
        tmp = tempfile.mkdtemp(prefix="qopt-native-bench-")
        path = f"{tmp}/model.qvk"
        qopt.compile(methods, target="vulkan").save(path)
        print(f"bundle: {path} (--bundle reuses it)")
    size = Path(path).stat().st_size
    print(
        f"decoder dim {config['dim']}, {config['n_layers']} layers, vocab {config['vocab_size']}, "
        f"w4g32; bundle {size / 2**20:.1f} MiB; prefill {args.prefill} tokens; {args.runs} runs"
    )
    prefill = [("prefill", (prompt.numpy(), np.arange(args.prefill)))]
    decode = [*prefill, ("decode", (np.array([[7]]), np.array([args.prefill])))]
    rows = {}
    for which in ("native", "python"):
        m = measure_load(which, path)
        rows[which] = [m["load"], m["session"], m["rss_before"], m["rss_after"]]
        if m["device"]:
            print(f"Vulkan device: {m['device']}")
    bundle = NativeBundle.open(path)
    native = bundle.session()
    artifact = qopt.load(path)
    python = artifact.session()

    def native_gpu() -> float:
        return native.timings()["gpu_seconds"]

    def python_gpu() -> float:
        return artifact.gpu_seconds() or 0.0

    dispatches = {m: len(artifact.program.method_steps(artifact.program.method(m, s)))
                  for m, s in (("prefill", [(1, args.prefill), (args.prefill,)]),
                               ("decode", [(1, 1), (1,)]))}  # fmt: skip
    results = {}
    for name, calls, method in (("prefill", prefill, "prefill"), ("decode", decode, "decode")):
        n_wall, n_gpu, n_out = timed_calls(native, calls, args.runs, native_gpu)
        p_wall, p_gpu, p_out = timed_calls(python, calls, args.runs, python_gpu)
        same = all(a.tobytes() == b.tobytes() for a, b in zip(n_out, p_out, strict=True))
        results[name] = (n_wall, n_gpu, p_wall, p_gpu, dispatches[method], same)
    print()
    print("| | load (read + check) | session (device, buffers, pipelines) | peak RSS before "
          "loading | peak RSS after load + session |")  # fmt: skip
    print("|---|---|---|---|---|")
    for name, (load, open_, before, after) in rows.items():
        print(f"| {name} | {load * 1e3:.1f} ms | {open_ * 1e3:.1f} ms | {before:.1f} MiB | "
              f"{after:.1f} MiB (+{after - before:.1f}) |")  # fmt: skip
    print()
    print("| call | dispatches | native wall | Python wall | Python / native | native GPU | "
          "Python GPU | host per dispatch (native / Python) | bit-identical |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for name, (n_wall, n_gpu, p_wall, p_gpu, count, same) in results.items():
        n_host = (n_wall - n_gpu) / count * 1e6
        p_host = (p_wall - p_gpu) / count * 1e6
        print(
            f"| {name} | {count} | {n_wall * 1e3:.2f} ms | {p_wall * 1e3:.2f} ms | "
            f"{p_wall / n_wall:.2f}x | {n_gpu * 1e3:.2f} ms | {p_gpu * 1e3:.2f} ms | "
            f"{n_host:.0f} / {p_host:.0f} us | {'yes' if same else 'NO'} |"
        )
    print()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("(Wall time per call: the decode row times the decode step only, after a prefill; "
          "medians. GPU time from timestamp queries: the same dispatches on both.)")  # fmt: skip
    native.close()
    bundle.close()
    artifact.close()
    return 0 if all(r[-1] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
