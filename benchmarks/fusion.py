"""vkc-fuse-elementwise on the decode benchmark's model: dispatches and time per token
with and without the pass, in one run.

The Llama-shaped KV-cache decoder of benchmarks/decode.py (`build_kv_llama`, default
dim 2048, 4 layers, vocab 32000, cache 512) under one scheme, its one-token `decode`
method compiled twice through qopt-vulkan (every dispatch fusion off: `fuse-elementwise=false
fuse-norms=false merge-siblings=false fold-copies=false`, or on). The two
sessions decode the same tokens alternately (interleaved, so load on the machine hits
both alike); every step's logits must be bit-identical. Printed per variant:
dispatches per call and per decoder layer (the difference between 2- and 1-layer
models of the same shape), the median wall time per token, the median GPU time (the
dispatches' timestamps) and that of the kernels the pass merges, host time = wall -
GPU per call and per dispatch, split into Python (wall - submission: uploads, status
words, read-backs) and the driver's submission and fence wait beyond the GPU time; and
the time to record the command buffer and create its pipelines (once per session) per
dispatch.

    python benchmarks/fusion.py [--quick] [--scheme w4g32] [--steps 16]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import qopt
from qopt.backends.vulkan.artifact import VulkanArtifact, compile_artifact
from qopt.backends.vulkan.runtime import vulkan_available
from qopt.context import make_context
from qopt.dialects import vkc
from qopt.examples import apply_scheme, build_kv_llama
from qopt.logs import quiet_third_party_logs
from qopt.lowering.pipelines import QoptVulkanPipeline

FULL = {"vocab_size": 32000, "dim": 2048, "n_layers": 4, "n_heads": 16, "hidden_dim": 5632,
        "max_seq_len": 512}  # fmt: skip
QUICK = {"vocab_size": 4096, "dim": 256, "n_layers": 2, "n_heads": 8, "hidden_dim": 704,
         "max_seq_len": 128}  # fmt: skip
TOUCHED = {"unary", "binary", "copy_strided", "fused_elementwise", "reduce_rows", "rms_norm_rows"}
"""The kernels vkc-fuse-elementwise and vkc-fuse-norms merge or make (their GPU time is
the `ew ms` column)."""
SMALL = {"vocab_size": 256, "dim": 64, "n_heads": 4, "hidden_dim": 128, "max_seq_len": 16}
"""The per-layer count's models: same graph as the benchmark's, tiny."""


def decode_program(config: dict[str, int], scheme: str):
    torch.manual_seed(0)
    model = build_kv_llama(**config)
    example = (torch.tensor([[1]]), torch.tensor([0]))
    model = apply_scheme(model, scheme, example)
    with torch.no_grad():
        return torch.export.export(copy.deepcopy(model), example, strict=False)


def lowered(ep, fuse: bool):
    module = qopt.import_program(ep)
    QoptVulkanPipeline(fuse_elementwise=fuse, fuse_norms=fuse, merge_siblings=fuse).apply(
        make_context(), module
    )
    return module


def submit_seconds(session: Any) -> float:
    """vkQueueSubmit-to-fence time of the session's last call: the runtime's
    `Program.last_seconds` of the command buffers it recorded (one method here)."""
    total = 0.0
    for parts in session._recorded.values():
        for part in parts if isinstance(parts, list) else [parts]:
            total += getattr(part, "last_seconds", None) or 0.0
    return total


def kernel_kinds(artifact: VulkanArtifact) -> list[str]:
    """The kernel of each dispatch of the (one) method, in order."""
    program = artifact.program
    start, stop = program.methods[0].steps
    return [program.kernels[step.kernel].kernel for step in program.steps[start:stop]]


def dispatches(module) -> int:
    return sum(isinstance(op, vkc.DispatchOp) for op in module.walk())


def per_layer(scheme: str, fuse: bool) -> int:
    counts = [
        dispatches(lowered(decode_program({**SMALL, "n_layers": n}, scheme), fuse)) for n in (1, 2)
    ]
    return counts[1] - counts[0]


def main() -> None:
    quiet_third_party_logs()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a small model (dim 256)")
    parser.add_argument("--scheme", default="w4g32")
    parser.add_argument("--steps", type=int, default=16)
    args = parser.parse_args()
    if (reason := vulkan_available()) is not None:
        sys.exit(f"no Vulkan device: {reason}")
    config = QUICK if args.quick else FULL
    print(f"model {config}, scheme {args.scheme}, {args.steps} decode steps (seq 1)")
    ep = decode_program(config, args.scheme)
    variants: dict[bool, tuple[VulkanArtifact, int]] = {}
    for fuse in (False, True):
        t0 = time.perf_counter()
        module = lowered(ep, fuse)
        count = dispatches(module)
        variants[fuse] = (compile_artifact(module), count)
        print(f"fuse={fuse}: {count} dispatches, compiled in {time.perf_counter() - t0:.1f}s")
    sessions = {fuse: artifact.session() for fuse, (artifact, _) in variants.items()}
    record: dict[bool, float] = {}
    token = {fuse: np.array([[1]]) for fuse in variants}
    walls: dict[bool, list[float]] = {False: [], True: []}
    gpus: dict[bool, list[float]] = {False: [], True: []}
    submits: dict[bool, list[float]] = {False: [], True: []}
    touched: dict[bool, list[float]] = {False: [], True: []}
    kinds = {fuse: kernel_kinds(artifact) for fuse, (artifact, _) in variants.items()}
    for position in range(-1, args.steps):
        logits = {}
        for fuse in (False, True) if position % 2 else (True, False):
            artifact = variants[fuse][0]
            pos = np.array([max(position, 0)])
            t0 = time.perf_counter()
            (logits[fuse],) = sessions[fuse].run(token[fuse], pos)
            wall = time.perf_counter() - t0
            if position < 0:  # the first call records the command buffer
                record[fuse] = wall - (artifact.gpu_seconds() or 0.0)
                continue
            walls[fuse].append(wall)
            gpus[fuse].append(artifact.gpu_seconds() or float("nan"))
            submits[fuse].append(submit_seconds(sessions[fuse]))
            times = artifact.last_times or []
            touched[fuse].append(
                sum(t for t, k in zip(times, kinds[fuse], strict=True) if k in TOUCHED)
            )
        if position < 0:
            for s in sessions.values():
                s.reset()
            continue
        if logits[False].tobytes() != logits[True].tobytes():
            sys.exit(f"step {position}: fused and unfused logits differ")
        for fuse in variants:
            token[fuse] = np.array([[int(logits[fuse][0, -1].argmax())]])
    layers = {fuse: per_layer(args.scheme, fuse) for fuse in variants}
    print()
    print(
        f"{'fuse':<6} {'disp':>5} {'/layer':>7} {'ms/tok':>8} {'gpu ms':>8} {'ew ms':>7} "
        f"{'host ms':>8} "
        f"{'us/disp':>8} {'python':>7} {'submit':>7} {'record us/disp':>15}"
    )
    for fuse, (_, count) in variants.items():
        wall, gpu = statistics.median(walls[fuse]), statistics.median(gpus[fuse])
        python = statistics.median(w - s for w, s in zip(walls[fuse], submits[fuse], strict=True))
        driver = statistics.median(s - g for s, g in zip(submits[fuse], gpus[fuse], strict=True))
        host = max(
            statistics.median(w - g for w, g in zip(walls[fuse], gpus[fuse], strict=True)), 0.0
        )
        print(
            f"{fuse!s:<6} {count:>5} {layers[fuse]:>7} {1e3 * wall:>8.2f} {1e3 * gpu:>8.2f} "
            f"{1e3 * statistics.median(touched[fuse]):>7.2f} {1e3 * host:>8.2f} "
            f"{1e6 * host / count:>8.1f} {1e6 * python / count:>7.1f} "
            f"{1e6 * driver / count:>7.1f} {1e6 * record[fuse] / count:>15.1f}"
        )
    print(
        "ew ms = GPU time of the kernels the pass merges (unary, binary, copy_strided, "
        "fused_elementwise, reduce_rows, rms_norm_rows); us/disp = host time per dispatch "
        "(python: outside "
        "the submission; submit: the submission and fence wait beyond the GPU time)"
    )
    hosts = {
        fuse: statistics.median(w - g for w, g in zip(walls[fuse], gpus[fuse], strict=True))
        for fuse in variants
    }
    saved = variants[False][1] - variants[True][1]
    if saved > 0:
        marginal = (hosts[False] - hosts[True]) / saved
        print(
            f"marginal host cost per dispatch: {1e6 * marginal:.1f} us "
            f"(host time saved / dispatches saved; the rest of the host time is per call)"
        )
    speedup = statistics.median(walls[False]) / statistics.median(walls[True])
    print(f"\nfused / unfused time per token: {1 / speedup:.3f} (x{speedup:.2f} faster); "
          "logits bit-identical at every step")  # fmt: skip
    for artifact, _ in variants.values():
        artifact.close()


if __name__ == "__main__":
    main()
