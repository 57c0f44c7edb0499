"""LLM decoding on the Vulkan device vs torch eager, printed side by side in one run.

A Llama-shaped KV-cache decoder (`qopt.examples.build_kv_llama`, ExecuTorch style:
the cache in buffers written at `input_pos`, grouped-query attention), by default
dim 2048, 4 layers, vocab 32000, cache 512, under w4g32 and 8da4w, compiled once
with two methods (`prefill` of `--prefill` tokens, `decode` of one) into one
Vulkan artifact whose session keeps the caches on the device. For each scheme:
- prefill: wall time of one `prefill` call (qopt) and of the same call in torch
  eager on the quantized model;
- decode: tokens/s over `--steps` decode calls, for qopt on the device, torch eager
  on the same quantized model and torch eager on the float model;
- per-token host overhead: wall time outside the dispatches' GPU timestamps, as a
  share of the token's time; dispatches per token.
Ratios: qopt / torch (quantized) and qopt / torch (float) decode tokens/s.
Targets on lavapipe: decode >= 2x torch eager on the quantized model; host overhead
under 10% of a token's time.

    python benchmarks/decode.py [--quick] [--schemes w4g32 8da4w] [--steps 16] [--prefill 64]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import qopt
from qopt.backends.vulkan.runtime import vulkan_available
from qopt.examples import apply_scheme, build_kv_llama
from qopt.logs import quiet_third_party_logs

FULL = {"vocab_size": 32000, "dim": 2048, "n_layers": 4, "n_heads": 16, "hidden_dim": 5632,
        "max_seq_len": 512}  # fmt: skip
QUICK = {"vocab_size": 4096, "dim": 256, "n_layers": 2, "n_heads": 8, "hidden_dim": 704,
         "max_seq_len": 128}  # fmt: skip


def torch_decode(model: torch.nn.Module, prompt: torch.Tensor, steps: int) -> tuple[float, float]:
    """(prefill seconds, decode seconds per token) of torch eager on `model`."""
    model = copy.deepcopy(model)
    with torch.no_grad():
        t0 = time.perf_counter()
        logits = model(prompt, torch.arange(prompt.shape[1]))
        prefill = time.perf_counter() - t0
        token = int(logits[0, -1].argmax())
        times = []
        for position in range(prompt.shape[1], prompt.shape[1] + steps):
            t0 = time.perf_counter()
            logits = model(torch.tensor([[token]]), torch.tensor([position]))
            times.append(time.perf_counter() - t0)
            token = int(logits[0, -1].argmax())
    return prefill, statistics.median(times)


def main() -> None:
    quiet_third_party_logs()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a small model (dim 256)")
    parser.add_argument("--schemes", nargs="*", default=["w4g32", "8da4w"])
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--prefill", type=int, default=64)
    args = parser.parse_args()
    if (reason := vulkan_available()) is not None:
        sys.exit(f"no Vulkan device: {reason}")
    config = QUICK if args.quick else FULL
    torch.manual_seed(0)
    float_model = build_kv_llama(**config)
    prompt = torch.randint(0, config["vocab_size"], (1, args.prefill))
    print(f"model {config}, prefill {args.prefill}, {args.steps} decode steps")
    float_prefill, float_decode = torch_decode(float_model, prompt, args.steps)
    rows = []
    for scheme in args.schemes:
        example = (prompt, torch.arange(args.prefill))
        model = apply_scheme(float_model, scheme, example)
        t0 = time.perf_counter()
        with torch.no_grad():
            methods = {
                "prefill": torch.export.export(copy.deepcopy(model), example, strict=False),
                "decode": torch.export.export(
                    copy.deepcopy(model), (torch.tensor([[1]]), torch.tensor([0])), strict=False
                ),
            }
        artifact = qopt.compile(methods, target="vulkan")
        compile_s = time.perf_counter() - t0
        session = artifact.session()
        start, stop = artifact.program.method("decode").steps
        decode_steps = stop - start
        ids, positions = prompt.numpy(), np.arange(args.prefill)
        session.run(ids, positions, method="prefill")  # warm-up: records the command buffer
        session.reset()
        t0 = time.perf_counter()
        (logits,) = session.run(ids, positions, method="prefill")
        prefill_s = time.perf_counter() - t0
        token = int(logits[0, -1].argmax())
        walls, gpus = [], []
        for position in range(args.prefill, args.prefill + args.steps):
            t0 = time.perf_counter()
            (logits,) = session.run(
                np.array([[token]]), np.array([position]), method="decode"
            )
            walls.append(time.perf_counter() - t0)
            gpus.append(artifact.gpu_seconds() or float("nan"))
            token = int(logits[0, -1].argmax())
        wall, gpu = statistics.median(walls), statistics.median(gpus)
        torch_prefill, torch_token = torch_decode(model, prompt, args.steps)
        rows.append((scheme, compile_s, prefill_s, torch_prefill, wall, gpu, torch_token,
                     decode_steps))  # fmt: skip
        artifact.close()
    print()
    print(
        f"{'scheme':<8} {'compile':>8} {'prefill':>8} {'torch':>8} {'tok/s':>8} {'torch q':>8} "
        f"{'torch f':>8} {'vs q':>6} {'vs f':>6} {'host %':>7} {'disp':>5}"
    )
    for scheme, compile_s, prefill_s, torch_prefill, wall, gpu, torch_token, steps in rows:
        host = max(wall - gpu, 0.0) / wall
        print(
            f"{scheme:<8} {compile_s:>7.1f}s {prefill_s:>7.3f}s {torch_prefill:>7.3f}s "
            f"{1 / wall:>8.1f} {1 / torch_token:>8.1f} {1 / float_decode:>8.1f} "
            f"{torch_token / wall:>5.2f}x {float_decode / wall:>5.2f}x {100 * host:>6.1f}% "
            f"{steps:>5}"
        )
    print(
        f"\ntorch float prefill {float_prefill:.3f}s; tok/s = decode tokens per second "
        "(median step); host % = wall time outside the dispatches' GPU time"
    )


if __name__ == "__main__":
    main()
