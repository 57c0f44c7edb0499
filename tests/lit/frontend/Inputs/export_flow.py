"""Export qopt's example MLP under one quantization flow to a .pt2 file.

usage: python export_flow.py FLOW OUT.pt2 [--model mlp|convnet|llama]

FLOW is one of qopt.examples.SCHEMES (float, pt2e_static, pt2e_dynamic, w4g32,
w8c, 8da4w, codebook4, codebook3). Used by the lit tests in tests/lit/frontend
and tests/lit/tools.
"""

import argparse
import warnings

warnings.filterwarnings("ignore")

import torch  # noqa: E402

from qopt import examples  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("flow", choices=examples.SCHEMES)
parser.add_argument("out")
parser.add_argument("--model", default="mlp", choices=examples.MODELS)
args = parser.parse_args()

ep = examples.export_model(args.model, args.flow, seed=0)
torch.export.save(ep, args.out)
