"""Kernel variants on this device: decode (seq 1) of a Llama-shaped decoder with the
base kernels against every variant the device can run (QOPT_VK_VARIANTS=base vs all),
in one process, calls interleaved, medians.

The model is `qopt.examples.TinyLlama` (`--quick`: dim 256, 2 layers; default dim 2048,
FFN 5632, 16 heads, 4 layers, vocab 32000, as benchmarks/e2e.py), quantized under each
`--schemes` entry (default w4g32 and w8c: the weight-only linears, whose decode
dispatches have the cooperative GEMV variant). One compiled `.qvk` is loaded twice, once
per mode, so both run the same program; each repeat calls base then variants. It prints
the device line and its properties, which variant each kernel got, and the ratio
variants / base (below 1.00x: the variants are faster here). What `auto` (the default)
picks is what `report` says for the base-mode load's device.

    python benchmarks/variants.py [--quick] [--schemes w4g32 w8c] [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import qopt
from qopt.backends.vulkan.runtime import vulkan_available
from qopt.examples import LlamaConfig, TinyLlama, apply_scheme
from qopt.kernels.variants import variants_of
from qopt.logs import quiet_third_party_logs

FULL = {"vocab_size": 32000, "dim": 2048, "n_layers": 4, "n_heads": 16, "hidden_dim": 5632}
QUICK = {"vocab_size": 4096, "dim": 256, "n_layers": 2, "n_heads": 8, "hidden_dim": 704}


def _load(path: str, mode: str) -> tuple[Any, Any]:
    """The `.qvk` at `path` loaded with its device opened under QOPT_VK_VARIANTS=mode,
    and a session of it."""
    old = os.environ.get("QOPT_VK_VARIANTS")
    os.environ["QOPT_VK_VARIANTS"] = mode
    try:
        artifact = qopt.load(path)
        session = artifact.session()
    finally:
        if old is None:
            os.environ.pop("QOPT_VK_VARIANTS")
        else:
            os.environ["QOPT_VK_VARIANTS"] = old
    return artifact, session


def main() -> None:
    quiet_third_party_logs()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a small model (dim 256, 2 layers)")
    parser.add_argument("--schemes", nargs="*", default=["w4g32", "w8c"])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    if (reason := vulkan_available()) is not None:
        sys.exit(f"no Vulkan device: {reason}")
    config = dict(QUICK if args.quick else FULL, max_seq_len=1)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        float_model = TinyLlama(LlamaConfig(**config)).eval()
    params = sum(p.numel() for p in float_model.parameters())
    load = os.getloadavg()
    print(f"TinyLlama {config} ({params / 1e6:.0f}M parameters), decode (seq 1), "
          f"{args.repeats} interleaved repeats, medians; load average {load[0]:.1f} "
          f"on {os.cpu_count()} CPUs")  # fmt: skip
    tokens = torch.randint(
        0, config["vocab_size"], (1, 1), generator=torch.Generator().manual_seed(1)
    )
    ids = tokens.numpy()
    rows = []
    tmp = tempfile.mkdtemp(prefix="qopt-variants-")
    for scheme in args.schemes:
        model = apply_scheme(float_model, scheme, (tokens,))
        with torch.no_grad():
            exported = torch.export.export(model, (tokens,), strict=False)
        path = str(Path(tmp) / f"{scheme}.qvk")
        qopt.compile(exported, target="vulkan").save(path)
        loaded = {mode: _load(path, mode) for mode in ("base", "all")}
        times: dict[str, list[float]] = {"base": [], "all": []}
        outs = {}
        for mode, (_, session) in loaded.items():
            outs[mode] = session.run(ids)[0]  # warm-up: records the command buffer
        for _ in range(args.repeats):
            for mode, (_, session) in loaded.items():
                t0 = time.perf_counter()
                session.run(ids)
                times[mode].append(time.perf_counter() - t0)
        base_artifact = loaded["base"][0]
        kernels = sorted({entry.kernel for entry in base_artifact.program.kernels})
        dev_all = loaded["all"][0].device
        print(f"{scheme}:")
        for line in dev_all.variant_report(kernels):
            print(f"  [all]  {line}")
        dev_base = base_artifact.device
        props = dev_base.props
        picks = sorted({v.name for k in kernels for v in variants_of(k)
                        if v.needs.met(props) and props.device_type in v.prefer})  # fmt: skip
        print(
            f"  [auto] on {dev_base.name} (the default) picks: {', '.join(picks) or 'no variant'}"
        )
        diff = float(abs(outs["all"] - outs["base"]).max() / max(abs(outs["base"]).max(), 1e-9))
        b, v = statistics.median(times["base"]), statistics.median(times["all"])
        rows.append((scheme, b, v, diff))
        for artifact, session in loaded.values():
            session.close()
            artifact.close()
    print(f"\n{'scheme':<8} {'base':>9} {'variants':>9} {'ratio':>7}  max |diff| / max |base|")
    for scheme, b, v, diff in rows:
        print(f"{scheme:<8} {b:>8.4f}s {v:>8.4f}s {v / b:>6.2f}x  {diff:.2e}")
    print("ratio = variants / base wall time of one decode call (below 1.00x: variants faster)")


if __name__ == "__main__":
    main()
