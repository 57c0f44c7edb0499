"""One forward of a Llama-shaped decoder: qopt on Vulkan next to torch, in one run.

The model is `qopt.examples.TinyLlama` (token embedding, RMSNorm, rotary attention,
SiLU-gated MLP, LM head), by default dim 2048, FFN 5632, 16 heads, 4 layers, vocab
32000 (336M parameters), quantized under each `--schemes` entry (default w4g32,
8da4w, codebook4). For every scheme it compiles one Vulkan artifact with a method
per sequence length (`--seqs`, default 1 and 64; the weights are shared) and prints,
for one forward at each length:

- qopt: wall time of one call (median of `--repeats`), GPU time (the dispatches'
  timestamps), host time (wall - GPU) and dispatches per call;
- torch float eager and torchao eager on the quantized model (same process,
  `torch.get_num_threads()` threads), medians of the same number of repeats;
- ExecuTorch's XNNPACK runtime on CPU (8da4w): only where `executorch` is installed
  with its XNNPACK backend; otherwise the column says why it is empty.

Ratios: qopt / torch float and qopt / torchao (below 1.0 = qopt faster). Calls of
the three are interleaved, so background load hits them alike.

Per scheme and length it also prints the work of one call from the compiled program
(`qopt.backends.vulkan.work.method_work`, the same on any device): the bytes the
dispatches read against the bytes they must read (packed weights, scales, the cache
rows in use; goal <= 1.1x) and the dispatches per layer.

It prints which kernel variant (`qopt.kernels.variants`, picked at load from the
device's properties; QOPT_VK_VARIANTS=base / all to force) each kernel got on this
device; benchmarks/variants.py compares base and variants.

With `--profile N` it also prints, per scheme and length, the N kernels with the most
GPU time per call (dispatch timestamps, median over the repeats, summed over that
kernel's dispatches) and the host time outside the GPU.

    python benchmarks/e2e.py [--quick] [--schemes w4g32 8da4w codebook4] [--seqs 1 64]
                             [--profile N]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import qopt
from benchmarks.machine import machine_line
from qopt.backends.vulkan.runtime import vulkan_available
from qopt.backends.vulkan.work import method_work
from qopt.examples import LlamaConfig, TinyLlama, apply_scheme
from qopt.logs import quiet_third_party_logs

FULL = {"vocab_size": 32000, "dim": 2048, "n_layers": 4, "n_heads": 16, "hidden_dim": 5632}
QUICK = {"vocab_size": 4096, "dim": 256, "n_layers": 2, "n_heads": 8, "hidden_dim": 704}


def executorch_runner(model: torch.nn.Module, example: tuple[torch.Tensor, ...]) -> Any:
    """A callable running `model` through ExecuTorch's XNNPACK delegate, or the
    reason there is none (a string)."""
    try:
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import (
            XnnpackPartitioner,
        )
        from executorch.exir import to_edge_transform_and_lower
        from executorch.runtime import Runtime
    except ImportError as error:
        return f"executorch is not installed ({error.name})"
    try:
        ep = torch.export.export(copy.deepcopy(model), example, strict=False)
        program = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()])
        buffer = program.to_executorch().buffer
        method = Runtime.get().load_program(buffer).load_method("forward")
    except Exception as error:  # a benchmark column, not a result
        return f"ExecuTorch lowering failed: {type(error).__name__}: {error}"
    return lambda *inputs: method.execute(list(inputs))


def median_time(call: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def print_profile(
    artifact: Any, method: str, per_dispatch: list[list[float]], walls: list[float], top: int
) -> None:
    """The `top` kernels by GPU time per call of `method` (medians over the repeats)."""
    program = artifact.program
    steps = program.method_steps(program.method(method))
    if not per_dispatch or any(len(times) != len(steps) for times in per_dispatch):
        print(f"  {method}: no per-dispatch timestamps")
        return
    medians = [statistics.median(column) for column in zip(*per_dispatch, strict=True)]
    by_kernel: dict[str, list[float]] = {}
    for step, seconds in zip(steps, medians, strict=True):
        entry = program.kernels[step.kernel]
        by_kernel.setdefault(entry.kernel, []).append(seconds)
    gpu = sum(medians)
    host = statistics.median(w - sum(t) for w, t in zip(walls, per_dispatch, strict=True))
    print(f"  {method}: GPU {gpu * 1e3:.2f} ms in {len(steps)} dispatches, host (wall - GPU, "
          f"median) {host * 1e3:.2f} ms")  # fmt: skip
    ranked = sorted(by_kernel.items(), key=lambda item: -sum(item[1]))
    for name, times in ranked[:top]:
        total = sum(times)
        print(f"    {name:<24} {len(times):>3} x {total / len(times) * 1e3:8.3f} ms = "
              f"{total * 1e3:8.2f} ms ({total / gpu:5.1%})")  # fmt: skip


def main() -> None:
    quiet_third_party_logs()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a small model (dim 256, 2 layers)")
    parser.add_argument("--schemes", nargs="*", default=["w4g32", "8da4w", "codebook4"])
    parser.add_argument("--seqs", nargs="*", type=int, default=[1, 64])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--profile", type=int, default=0, metavar="N", help="print the N costliest kernels"
    )
    args = parser.parse_args()
    if (reason := vulkan_available()) is not None:
        sys.exit(f"no Vulkan device: {reason}")
    config = dict(QUICK if args.quick else FULL, max_seq_len=max(args.seqs))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        float_model = TinyLlama(LlamaConfig(**config)).eval()
    params = sum(p.numel() for p in float_model.parameters())
    print(f"TinyLlama {config} ({params / 1e6:.0f}M parameters), torch threads "
          f"{torch.get_num_threads()}, {args.repeats} repeats, medians")  # fmt: skip
    print(machine_line())
    inputs = {
        seq: torch.randint(
            0, config["vocab_size"], (1, seq), generator=torch.Generator().manual_seed(seq)
        )
        for seq in args.seqs
    }
    rows = []
    for scheme in args.schemes:
        model = apply_scheme(float_model, scheme, (inputs[args.seqs[0]],))
        t0 = time.perf_counter()
        with torch.no_grad():
            methods = {
                f"seq{seq}": torch.export.export(copy.deepcopy(model), (tokens,), strict=False)
                for seq, tokens in inputs.items()
            }
        export_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        artifact = qopt.compile(methods, target="vulkan")
        compile_s = time.perf_counter() - t0
        print(f"{scheme}: export {export_s:.1f}s, Vulkan compile {compile_s:.1f}s, "
              f"Vulkan device: {artifact.device.name}")  # fmt: skip
        for seq in inputs:
            work = method_work(artifact.program, f"seq{seq}", position=0)
            print(f"  seq {seq}: dispatches read {work.read_bytes / 1e6:.2f} MB per call, "
                  f"must read {work.needed_bytes / 1e6:.2f} MB (packed weights, scales, "
                  f"cache rows in use): {work.ratio:.3f}x; {work.dispatches} dispatches, "
                  f"{work.per_layer:.0f} per layer")  # fmt: skip
        et = executorch_runner(model, (inputs[args.seqs[0]],)) if scheme == "8da4w" else None
        session = artifact.session()
        for seq, tokens in inputs.items():
            method = f"seq{seq}"
            ids = tokens.numpy()
            start, stop = artifact.program.method(method).steps
            session.run(ids, method=method)  # warm-up: records the command buffer
            walls, gpus, floats, quants = [], [], [], []
            per_dispatch: list[list[float]] = []
            with torch.no_grad():
                float_model(tokens)  # warm-up
                model(tokens)
                for _ in range(args.repeats):
                    t0 = time.perf_counter()
                    session.run(ids, method=method)
                    walls.append(time.perf_counter() - t0)
                    gpus.append(artifact.gpu_seconds() or float("nan"))
                    per_dispatch.append(list(artifact.last_times or []))
                    floats.append(median_time(lambda: float_model(tokens), 1))
                    quants.append(median_time(lambda: model(tokens), 1))
            if args.profile:
                print_profile(artifact, method, per_dispatch, walls, args.profile)
            et_s: float | str = "-"
            if et is not None and not isinstance(et, str) and seq == args.seqs[0]:
                runner = et
                et_s = median_time(lambda: runner(tokens), args.repeats)
            elif isinstance(et, str):
                et_s = et
            rows.append((scheme, seq, statistics.median(walls), statistics.median(gpus),
                         stop - start, statistics.median(floats), statistics.median(quants),
                         et_s))  # fmt: skip
        # which kernel variant each kernel got on this device (qopt.kernels.variants)
        kernels = sorted({entry.kernel for entry in artifact.program.kernels})
        for line in artifact.device.variant_report(kernels):
            print(f"  {line}")
        artifact.close()
    print()
    print(f"{'scheme':<10} {'seq':>4} {'qopt':>8} {'gpu':>8} {'host':>7} {'disp':>5} "
          f"{'torch f':>8} {'torchao':>8} {'vs f':>6} {'vs ao':>6}  "
          "executorch xnnpack")  # fmt: skip
    reasons = []
    for scheme, seq, wall, gpu, disp, flt, quant, et_s in rows:
        if isinstance(et_s, float):
            et_text = f"{et_s:.4f}s ({wall / et_s:.2f}x)"
        elif et_s != "-":
            if et_s not in reasons:
                reasons.append(et_s)
            et_text = f"n/a [{reasons.index(et_s) + 1}]"
        else:
            et_text = "-"
        print(f"{scheme:<10} {seq:>4} {wall:>7.4f}s {gpu:>7.4f}s {max(wall - gpu, 0):>6.4f}s "
              f"{disp:>5} {flt:>7.4f}s {quant:>7.4f}s {wall / flt:>5.2f}x {wall / quant:>5.2f}x  "
              f"{et_text}")  # fmt: skip
    for index, reason in enumerate(reasons, 1):
        print(f"[{index}] {reason}")
    print("\nvs f / vs ao = qopt's wall time over torch float eager's / torchao eager's "
          "(below 1.00x: qopt faster); host = wall - GPU time")  # fmt: skip


if __name__ == "__main__":
    main()
