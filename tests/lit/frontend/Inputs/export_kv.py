"""Export qopt's ExecuTorch-style KV-cache decoder (`qopt.examples.build_kv_llama`)
to a .pt2 file.

usage: python export_kv.py UPDATE OUT.pt2 [--seq N] [--dynamic]

UPDATE is the cache write (index_put, index_copy, narrow); --seq the number of
tokens per call (default 1); --dynamic exports the token and position dims with
`torch.export.Dim("seq", min=1, max=31)`, as ExecuTorch's dynamic-shape prefill.
Used by the lit tests in tests/lit/frontend.
"""

import argparse
import warnings

warnings.filterwarnings("ignore")

import torch  # noqa: E402

from qopt.examples import build_kv_llama  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("update", choices=["index_put", "index_copy", "narrow"])
parser.add_argument("out")
parser.add_argument("--seq", type=int, default=1)
parser.add_argument("--dynamic", action="store_true")
args = parser.parse_args()

model = build_kv_llama(update=args.update, vocab_size=64, dim=32, n_layers=1, n_heads=4,
                       hidden_dim=64, max_seq_len=40)  # fmt: skip
inputs = (torch.zeros(1, args.seq, dtype=torch.int64), torch.arange(args.seq))
shapes = None
if args.dynamic:
    seq = torch.export.Dim("seq", min=1, max=31)
    shapes = ({1: seq}, {0: seq})
with torch.no_grad():
    ep = torch.export.export(model, inputs, dynamic_shapes=shapes, strict=False)
torch.export.save(ep, args.out)
