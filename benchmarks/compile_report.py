"""The compile report and progress lines of a large compile (issue 13 item 4).

Builds the Llama-shaped decoder of `qopt.examples` (`TinyLlama`) at the 336M-parameter
size (dim 2048, FFN 5632, vocab 32000, 4 layers, 16 heads) under w4g32, exports it
and saves it as `.pt2`, then runs `qopt-opt -v` on it for each target in a process
of its own (so that each peak RSS is that compile's): the progress line of each
phase as it ends, then the report (fused patterns by kernel, compressed against
float weight bytes, ops per target op, warnings, phase times).

A benchmark, not a test (minutes and several GiB):

    .venv/bin/python benchmarks/compile_report.py [--out DIR] [--targets vulkan coreml]
    .venv/bin/python benchmarks/compile_report.py --quick   # dim 256, seconds
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FULL = {"vocab_size": 32000, "dim": 2048, "n_layers": 4, "n_heads": 16, "hidden_dim": 5632,
        "max_seq_len": 64}  # fmt: skip
QUICK = {"vocab_size": 4096, "dim": 256, "n_layers": 2, "n_heads": 8, "hidden_dim": 704,
         "max_seq_len": 64}  # fmt: skip
PIPELINES = {
    "vulkan": ("qopt-vulkan", "vkbundle", "model.qvk"),
    "coreml": ("qopt-coreml", "mlpackage", "model.mlpackage"),
}


def export(config: dict[str, int], path: Path) -> int:
    """Build, quantize (w4g32), export and save the model; its parameter count."""
    import torch

    from qopt.examples import LlamaConfig, TinyLlama, apply_scheme, random_inputs

    torch.manual_seed(0)
    model = TinyLlama(LlamaConfig(**config)).eval()
    parameters = sum(p.numel() for p in model.parameters())
    (tokens,) = random_inputs("llama", 0)
    tokens = tokens % config["vocab_size"]
    quantized = apply_scheme(model, "w4g32", (tokens,))
    with torch.no_grad():
        ep = torch.export.export(quantized, (tokens,), strict=False)
    torch.export.save(ep, path)
    return parameters


def main() -> None:
    from qopt.logs import quiet_third_party_logs

    quiet_third_party_logs()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a small model (dim 256)")
    parser.add_argument("--out", type=Path, default=None, help="where the files go")
    parser.add_argument("--targets", nargs="*", default=list(PIPELINES), choices=list(PIPELINES))
    args = parser.parse_args()
    config = QUICK if args.quick else FULL
    out = args.out or Path(tempfile.mkdtemp(prefix="qopt-report-"))
    out.mkdir(parents=True, exist_ok=True)
    pt2 = out / "model.pt2"
    t0 = time.perf_counter()
    parameters = export(config, pt2)
    print(
        f"model {config}: {parameters / 1e6:.0f}M parameters, w4g32, exported and saved in "
        f"{time.perf_counter() - t0:.1f} s ({pt2.stat().st_size / 2**20:.0f} MiB .pt2)",
        flush=True,
    )
    tool = [sys.executable, "-m", "qopt.tools.qopt_opt"]
    for target in args.targets:
        pipeline, kind, name = PIPELINES[target]
        command = [*tool, str(pt2), "-p", pipeline, "-t", kind, "-o", str(out / name), "-v"]
        command += ["--report-json", str(out / f"report_{target}.json")]
        print(f"\n$ qopt-opt model.pt2 -p {pipeline} -t {kind} -o {name} -v", flush=True)
        t0 = time.perf_counter()
        subprocess.run(command, check=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
        print(f"({target}: {time.perf_counter() - t0:.1f} s wall, process start included)")


if __name__ == "__main__":
    main()
