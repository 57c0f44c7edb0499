"""How much of a PT2E-static program fuse-quant fuses, per model.

For each model (quantized with XNNPACK's quantizer, per channel, calibrated on two
random inputs, exported): quant ops before and after fuse-quant, fused ops by kernel
name, and the dequantize -> compute edges left (a dequantize of a run-time value
feeding an aten op that is not a pure layout op), counted by the op they feed. The
fuse-quant report (`qopt-opt -p 'fuse-quant{report=true}'`) says why each op stayed.

    python benchmarks/fuse_quant_coverage.py            # built-ins + EfficientNetLike
    python benchmarks/fuse_quant_coverage.py --transformers   # + tiny EfficientNet, RegNet
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import qopt
from qopt.dialects import quant
from qopt.examples import apply_scheme, build_efficientnet_like, export_model
from qopt.logs import quiet_third_party_logs
from qopt.lowering.fuse_quant import FuseQuantPass
from qopt.lowering.fuse_quant.report import kernel_counts, quant_op_count

LAYOUT = {"aten.view", "aten.permute", "aten.squeeze", "aten.unsqueeze", "aten.slice",
          "aten.expand", "aten.clone", "aten.cat", "aten.constant_pad_nd"}  # fmt: skip


def edges(module: Any) -> collections.Counter[str]:
    """Dequantize (of a run-time value) -> compute edges, by the compute op's name."""
    found: collections.Counter[str] = collections.Counter()
    for op in module.walk():
        if isinstance(op, quant.DequantizeOp) and op.input.owner.name != "arith.constant":
            for use in op.output.uses:
                name = use.operation.name
                if name.startswith("aten.") and name not in LAYOUT:
                    found[name] += 1
    return found


def _transformers_models() -> dict[str, tuple[torch.nn.Module, Any]]:
    import transformers as tf

    from qopt import zoo

    images = zoo._images((1, 3, 32, 32))  # pyright: ignore[reportPrivateUsage]
    effnet = tf.EfficientNetConfig(
        image_size=32, width_coefficient=0.25, depth_coefficient=0.2, hidden_dim=320, num_labels=10
    )
    regnet = tf.RegNetConfig(
        embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], groups_width=8, layer_type="y"
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return {
            "transformers EfficientNet": (
                zoo._First(tf.EfficientNetForImageClassification(effnet).eval()),  # pyright: ignore[reportPrivateUsage]
                images,
            ),
            "transformers RegNet": (
                zoo._First(tf.RegNetForImageClassification(regnet).eval()),  # pyright: ignore[reportPrivateUsage]
                images,
            ),
        }


def report(name: str, ep: torch.export.ExportedProgram) -> None:
    module = qopt.import_program(ep)
    before, edges_before = quant_op_count(module), edges(module)
    FuseQuantPass.run(module)
    fused = kernel_counts(module)
    left = edges(module)
    kernels = ", ".join(f"{k} x{n}" for k, n in sorted(fused.items()))
    feeding = ", ".join(f"{k} x{n}" for k, n in sorted(left.items()))
    print(
        f"{name}: {fused.total()} fused ({kernels}); quant ops {before} -> "
        f"{quant_op_count(module)}; dequantize -> compute edges {edges_before.total()} -> "
        f"{left.total()} ({feeding})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transformers", action="store_true", help="add tiny HF models")
    args = parser.parse_args()
    quiet_third_party_logs()
    for name in ("llama", "mlp", "convnet"):
        report(name, export_model(name, "pt2e_static"))
    models: dict[str, tuple[torch.nn.Module, Any]] = {}
    model, image = build_efficientnet_like(0)
    models["EfficientNetLike"] = (model, image)
    if args.transformers:
        models.update(_transformers_models())
    for name, (model, make) in models.items():
        quantized = apply_scheme(model, "pt2e_static", make(0), [make(1), make(2)])
        with torch.no_grad():
            report(name, torch.export.export(quantized, make(0), strict=False))


if __name__ == "__main__":
    main()
