"""Decode tokens/s at several cache positions: attention bounded by the position vs
attention over the whole cache, in one run on the Vulkan device.

A Llama-shaped KV-cache decoder (`qopt.examples.build_kv_llama`: grouped-query
attention, the cache in state buffers written at `input_pos`, the mask row
`mask[input_pos]`), by default dim 512, 4 layers, 8 query heads / 2 key-value heads
(head dim 64), FFN 1408, vocab 4096, cache 2048 rows, quantized w4g32, compiled once
for Vulkan (`decode`: one token). Two artifacts run the same program:

- bounded: as compiled, each sdpa loops over the cache rows in use (mask_bound
  computes 1 + the last key the mask row leaves open on the device);
- whole cache: the same program with every sdpa's `BOUNDED` turned off (the kernel
  then loops over all the rows, as before the bound existed; the mask_bound
  dispatch still runs, a few microseconds).

For each position (`--positions`, default 16 256 1024) it prints the least wall time
of one decode call over the repeats (calls of the two interleaved, so background load
hits both alike; the least is the call load disturbed least), tokens/s and the ratio,
the attention dispatches' device time per call (timestamps of sdpa and mask_bound, the
least over the repeats) and its ratio, and per token the bytes the dispatches read and
the bytes they must read (`qopt.backends.vulkan.work.method_work`: packed weights,
scales and the cache rows in use), with the CPU model, the Vulkan device and the load
average.

Last, one layer's decode sdpa dispatch alone at each position, bounded and not (the
attention's own cost, without the rest of the token around it).

    python benchmarks/decode_positions.py [--quick] [--positions 16 256 1024] [--repeats 9]
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import qopt
from benchmarks.machine import machine_line
from qopt.backends.vulkan.artifact import VulkanArtifact
from qopt.backends.vulkan.program import BundleProgram
from qopt.backends.vulkan.runtime import vulkan_available
from qopt.backends.vulkan.work import method_work
from qopt.examples import apply_scheme, build_kv_llama
from qopt.logs import quiet_third_party_logs

FULL = {"vocab_size": 4096, "dim": 512, "n_layers": 4, "n_heads": 8, "hidden_dim": 1408,
        "max_seq_len": 2048}  # fmt: skip
QUICK = {"vocab_size": 512, "dim": 128, "n_layers": 2, "n_heads": 4, "hidden_dim": 256,
         "max_seq_len": 512}  # fmt: skip


def whole_cache(program: BundleProgram) -> BundleProgram:
    """`program` with every sdpa looping over the whole cache (`BOUNDED = 0`)."""
    kernels = [
        dataclasses.replace(k, spec={**k.spec, "BOUNDED": 0}) if k.kernel == "sdpa" else k
        for k in program.kernels
    ]
    return dataclasses.replace(program, kernels=kernels)


def main() -> None:
    quiet_third_party_logs()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a tiny model, cache 512")
    parser.add_argument("--positions", nargs="*", type=int, default=[16, 256, 1024])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--scheme", default="w4g32")
    args = parser.parse_args()
    if (reason := vulkan_available()) is not None:
        sys.exit(f"no Vulkan device: {reason}")
    config = QUICK if args.quick else FULL
    cache = config["max_seq_len"]
    positions = [p for p in args.positions if 0 <= p < cache]
    if not positions:
        sys.exit(f"no position in [0, {cache}) among {args.positions}")
    example = (torch.tensor([[1]]), torch.tensor([0]))
    model = apply_scheme(build_kv_llama(update="index_put", **config), args.scheme, example)
    params = sum(p.numel() for p in build_kv_llama(update="index_put", **config).parameters())
    t0 = time.perf_counter()
    with torch.no_grad():
        ep = torch.export.export(copy.deepcopy(model), example, strict=False)
    bounded = qopt.compile(ep, target="vulkan")
    compile_s = time.perf_counter() - t0
    whole = VulkanArtifact(whole_cache(bounded.program))
    print(f"KV decoder {config} ({params / 1e6:.1f}M parameters), {args.scheme}, "
          f"2 key/value heads; export + compile {compile_s:.1f}s")  # fmt: skip
    print(machine_line())
    print(f"Vulkan device: {bounded.device.name}")
    artifacts = {"bounded": bounded, "whole": whole}
    sessions = {name: a.session() for name, a in artifacts.items()}
    attention = {  # per step of the method: an attention dispatch (sdpa, mask_bound)?
        name: [
            a.program.kernels[step.kernel].kernel in ("sdpa", "mask_bound")
            for step in a.program.method_steps(a.program.method())
        ]
        for name, a in artifacts.items()
    }
    token = np.array([[7]])
    rows = []
    for position in positions:
        pos = np.array([position])
        for session in sessions.values():
            session.run(token, pos)  # warm-up (records the command buffer)
        times: dict[str, list[float]] = {name: [] for name in sessions}
        attn: dict[str, list[float]] = {name: [] for name in sessions}
        for _ in range(args.repeats):
            for name, session in sessions.items():
                t0 = time.perf_counter()
                session.run(token, pos)
                times[name].append(time.perf_counter() - t0)
                owner = artifacts[name]
                stamps = owner.last_times or []
                attn[name].append(sum(t for t, k in zip(stamps, attention[name]) if k))
        medians = {name: min(t) for name, t in times.items()}  # least disturbed by load
        medians |= {f"attn {name}": min(t) for name, t in attn.items()}  # least disturbed
        work = {
            "bounded": method_work(bounded.program, position=position),
            "whole": method_work(whole.program, position=position),
        }
        rows.append((position, medians, work))
    print()
    print(f"{'position':>8} {'bounded':>9} {'whole':>9} {'tok/s b':>8} {'tok/s w':>8} "
          f"{'speedup':>7} {'attn b':>8} {'attn w':>8} {'attn x':>7}  {'read b':>8} "
          f"{'read w':>8} {'needed':>8} {'b/need':>6} {'w/need':>6} {'rows b':>6} "
          f"{'rows w':>6}")  # fmt: skip
    for position, medians, work in rows:
        b, w = medians["bounded"], medians["whole"]
        ab, aw = medians["attn bounded"], medians["attn whole"]
        wb, ww = work["bounded"], work["whole"]
        print(f"{position:>8} {b * 1e3:>7.2f}ms {w * 1e3:>7.2f}ms {1 / b:>8.1f} {1 / w:>8.1f} "
              f"{w / b:>6.2f}x {ab * 1e3:>6.2f}ms {aw * 1e3:>6.2f}ms {aw / ab:>6.2f}x  "
              f"{wb.read_bytes / 1e6:>6.2f}MB {ww.read_bytes / 1e6:>6.2f}MB "
              f"{wb.needed_bytes / 1e6:>6.2f}MB {wb.ratio:>5.2f}x {ww.ratio:>5.2f}x "
              f"{wb.cache_rows:>6} {ww.cache_rows:>6}")  # fmt: skip
    first = rows[0][2]["bounded"]
    print(f"\ndispatches per token {first.dispatches}, per layer {first.per_layer:.0f} "
          f"({first.layers} layers); speedup = whole-cache time / bounded time (wall, one "
          "decode call, the least of the repeats); attn = the attention dispatches' "
          "device time per call (sdpa and mask_bound, timestamps; the least of the "
          "repeats), attn x = whole / bounded; read / "
          "needed: bytes the dispatches read per token over the packed weights, scales "
          "and cache rows in use; rows: cache rows one sdpa reads per key/value head")  # fmt: skip
    bounded.close()
    whole.close()
    kernel_alone(config, positions, args.repeats)


def kernel_alone(config: dict[str, int], positions: list[int], repeats: int) -> None:
    """The decode sdpa dispatch of one layer alone (the decoder's heads and cache, random
    data, its mask row at each position), bounded and not, each recorded once and
    submitted `repeats * 3` times interleaved: the least wall time of each."""
    from qopt.backends.vulkan.runtime import Dispatch, VulkanDevice

    s, heads = config["max_seq_len"], config["n_heads"]
    e, group = config["dim"] // heads, heads // 2  # build_kv_llama: 2 key/value heads
    rng = np.random.default_rng(0)
    with VulkanDevice() as dev:
        q = dev.upload(rng.standard_normal(heads * e).astype(np.float32))
        k = dev.upload(rng.standard_normal(2 * s * e).astype(np.float32))
        v = dev.upload(rng.standard_normal(2 * s * e).astype(np.float32))
        out = dev.buffer(heads * e * 4)
        push = {"BH": heads, "H": heads, "L": 1, "S": s, "E": e, "EV": e, "G": group}
        push |= {"scale": float(e) ** -0.5, "mb": 0, "mh": 0, "ml": 0, "ms": 1}
        programs = {}
        for position in positions:
            mask = dev.upload(np.where(np.arange(s) <= position, 0.0, -np.inf).astype(np.float32))
            bound = dev.buffer(4)
            find = Dispatch("mask_bound", [mask, bound], {"rows": 1, "S": s})
            dev.run([find])
            for flag in (1, 0):
                spec = {"HAS_MASK": 1, "REG": e, "BOUNDED": flag}
                attend = Dispatch("sdpa", [q, k, v, mask, out, bound], push, spec)
                programs[position, flag] = dev.program([attend])
            programs[position, "find"] = dev.program([find])
        best = dict.fromkeys(programs, float("inf"))
        for _ in range(3 * repeats):
            for key, program in programs.items():
                t0 = time.perf_counter()
                program.submit()
                best[key] = min(best[key], time.perf_counter() - t0)
    print(f"\none layer's decode sdpa alone ({heads} query heads, 2 key/value heads, head "
          f"dim {e}, cache {s}; least wall time of {3 * repeats} submits):")  # fmt: skip
    for position in positions:
        b, w, f = best[position, 1], best[position, 0], best[position, "find"]
        print(f"  position {position:>5}: bounded {b * 1e3:.3f}ms, whole cache {w * 1e3:.3f}ms "
              f"({w / b:.2f}x); mask_bound {f * 1e3:.3f}ms (once per token)")  # fmt: skip


if __name__ == "__main__":
    main()
