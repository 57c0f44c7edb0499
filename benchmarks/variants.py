"""Kernel variants on this device: decode (seq 1) of a Llama-shaped decoder with the
base kernels against each variant the device can run, one variant at a time
(QOPT_VK_VARIANTS=base vs all under `variants.only`), in one process, calls interleaved,
medians.

The model is `qopt.examples.TinyLlama` (`--quick`: dim 256, 2 layers; default dim 2048,
FFN 5632, 16 heads, 4 layers, vocab 32000, as benchmarks/e2e.py), quantized under each
`--schemes` entry (default w4g32, w8c and 8da4w: the weight-only linears, whose decode
dispatches have the cooperative GEMV `coop_gemv`, and 8da4w's linear_dq8ca, which has
`coop_gemv` and `coop_gemv_f16`). One compiled `.qvk` is loaded once per mode (the base,
then each variant name: every kernel of the program with a variant of that name runs it),
so all run the same program; each repeat calls them in turn. It prints the device line and
its properties, which variant each kernel got in each load, what `auto` (the default)
picks on this device, and per variant its time / the base's (below 1.00x: the variant is
faster here) and its largest difference from the base's logits (0: the same bits).

    python benchmarks/variants.py [--quick] [--schemes w4g32 w8c 8da4w] [--repeats 7]
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
from qopt.kernels.variants import only, variants_of
from qopt.logs import quiet_third_party_logs

FULL = {"vocab_size": 32000, "dim": 2048, "n_layers": 4, "n_heads": 16, "hidden_dim": 5632}
QUICK = {"vocab_size": 4096, "dim": 256, "n_layers": 2, "n_heads": 8, "hidden_dim": 704}


def _load(path: str, mode: str, names: frozenset[str], ids: Any) -> tuple[Any, Any, Any]:
    """The `.qvk` at `path` loaded with its device opened under QOPT_VK_VARIANTS=mode
    and only the variants `names` (`<kernel>@<variant>`), a session of it, and its logits
    on `ids` from the warm-up call that records the program (and so picks the variants)."""
    old = os.environ.get("QOPT_VK_VARIANTS")
    os.environ["QOPT_VK_VARIANTS"] = mode
    try:
        artifact = qopt.load(path)
        session = artifact.session()
        with only(names):
            out = session.run(ids)[0]
    finally:
        if old is None:
            os.environ.pop("QOPT_VK_VARIANTS")
        else:
            os.environ["QOPT_VK_VARIANTS"] = old
    return artifact, session, out


def main() -> None:
    quiet_third_party_logs()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a small model (dim 256, 2 layers)")
    parser.add_argument("--schemes", nargs="*", default=["w4g32", "w8c", "8da4w"])
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
        loaded = {"base": _load(path, "base", frozenset(), ids)}
        program = loaded["base"][0].program
        kernels = sorted({entry.kernel for entry in program.kernels})
        names = sorted({v.name for k in kernels for v in variants_of(k)})
        for name in names:
            picked = frozenset(f"{k}@{name}" for k in kernels
                               if any(v.name == name for v in variants_of(k)))  # fmt: skip
            loaded[name] = _load(path, "all", picked, ids)
        times: dict[str, list[float]] = {mode: [] for mode in loaded}
        for _ in range(args.repeats):
            for mode, (_, session, _) in loaded.items():
                t0 = time.perf_counter()
                session.run(ids)
                times[mode].append(time.perf_counter() - t0)
        print(f"{scheme}:")
        for name in names:
            for line in loaded[name][0].device.variant_report(kernels):
                print(f"  [{name}]  {line}")
        dev = loaded["base"][0].device
        props = dev.props
        prefer = sorted({f"{k}@{v.name}" for k in kernels for v in variants_of(k)
                         if v.needs.met(props) and props.device_type in v.prefer})  # fmt: skip
        print(
            f"  [auto] (the default) on {dev.name}: {', '.join(prefer) or 'the base kernels'}"
            + (" where they apply (the first of a kernel's that applies)" if prefer else "")
        )
        base_out = loaded["base"][2]
        b = statistics.median(times["base"])
        for name in names:
            out = loaded[name][2]
            diff = float(abs(out - base_out).max() / max(abs(base_out).max(), 1e-9))
            rows.append((scheme, name, b, statistics.median(times[name]), diff))
        for artifact, session, _ in loaded.values():
            session.close()
            artifact.close()
    print(f"\n{'scheme':<8} {'variant':<14} {'base':>9} {'variant':>9} {'ratio':>7}  "
          "max |diff| / max |base|")  # fmt: skip
    for scheme, name, b, v, diff in rows:
        print(f"{scheme:<8} {name:<14} {b:>8.4f}s {v:>8.4f}s {v / b:>6.2f}x  {diff:.2e}")
    print("ratio = variant / base wall time of one decode call (below 1.00x: variant faster)")


if __name__ == "__main__":
    main()
