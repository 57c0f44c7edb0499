"""What the Vulkan host fallback costs per call, on the Vulkan device.

For a model `linear -> relu -> OP -> linear` at a few widths, prints side by side,
in one run (calls interleaved, medians of `--runs` after a warm-up):
- device: OP = a unary op with a kernel (`torch.neg`), everything on the device,
  one submission;
- fallback: OP = `torch.cumsum` (no Vulkan kernel), compiled with fallback=True:
  two submissions with a host segment between them (its input downloaded once,
  its result uploaded once);
- the bytes the segment moves per call (`artifact.fallback_ops`) and the ratio
  fallback / device of the wall time per call.

    python benchmarks/host_fallback.py [--runs 21] [--widths 64,1024,4096]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import qopt
from qopt.backends.vulkan.runtime import vulkan_available


class _Model(torch.nn.Module):
    def __init__(self, width: int, op: Callable[[torch.Tensor], torch.Tensor]):
        super().__init__()
        self.op = op
        self.first = torch.nn.Linear(width, width)
        self.second = torch.nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.second(self.op(torch.relu(self.first(x))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--widths", default="64,1024,4096")
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args()
    reason = vulkan_available()
    if reason is not None:
        sys.exit(f"no Vulkan device: {reason}")
    print(
        f"{'width':>6} {'device ms':>10} {'fallback ms':>12} {'ratio':>6} {'down B':>8} {'up B':>8}"
    )
    for width in (int(w) for w in args.widths.split(",")):
        torch.manual_seed(0)
        x = torch.randn(args.batch, width)
        artifacts = {}
        for name, op, fallback in (
            ("device", torch.neg, False),
            ("fallback", lambda h: torch.cumsum(h, dim=-1), True),
        ):
            ep = torch.export.export(_Model(width, op).eval(), (x,))
            artifacts[name] = qopt.compile(ep, target="vulkan", fallback=fallback)
            artifacts[name](x)  # warm-up: device, pipelines, command buffers
        times: dict[str, list[float]] = {name: [] for name in artifacts}
        for _ in range(args.runs):
            for name, artifact in artifacts.items():
                start = time.perf_counter()
                artifact(x)
                times[name].append(time.perf_counter() - start)
        device = statistics.median(times["device"]) * 1e3
        fallback = statistics.median(times["fallback"]) * 1e3
        (op,) = artifacts["fallback"].fallback_ops
        print(
            f"{width:>6} {device:>10.3f} {fallback:>12.3f} {fallback / device:>6.2f} "
            f"{op.download_bytes:>8} {op.upload_bytes:>8}"
        )
        for artifact in artifacts.values():
            artifact.close()


if __name__ == "__main__":
    main()
