"""`method_work`: the bytes one call of a Vulkan program reads and must read, from the
program alone (no device): on a small KV-cache decoder, reads cover what is needed
(every packed weight and scale, the cache rows in use), and a decode step at position p
reads p + 1 cache rows per key/value head with the bounded attention, all of them
without it."""

from __future__ import annotations

import copy
import functools

import pytest
import torch

import qopt
from qopt.backends.vulkan.program import BundleProgram
from qopt.backends.vulkan.work import method_work
from qopt.errors import QoptError
from qopt.examples import apply_scheme, build_kv_llama

CONFIG = {"vocab_size": 64, "dim": 32, "n_layers": 2, "n_heads": 4, "hidden_dim": 64,
          "max_seq_len": 40}  # fmt: skip
KV_HEADS, HEAD_DIM = 2, 8  # build_kv_llama's n_kv_heads, dim / n_heads


@functools.cache
def program(scheme: str) -> BundleProgram:
    example = (torch.tensor([[1]]), torch.tensor([0]))
    model = apply_scheme(build_kv_llama(update="index_put", **CONFIG), scheme, example)
    with torch.no_grad():
        ep = torch.export.export(copy.deepcopy(model), example, strict=False)
    return qopt.compile(ep, target="vulkan").program


@pytest.mark.parametrize("scheme", ["float", "w4g32"])
def test_reads_cover_the_weights_and_the_cache_rows_in_use(scheme: str) -> None:
    prog = program(scheme)
    weights = sum(c.nbytes for c in prog.constants)
    layers = CONFIG["n_layers"]
    row = KV_HEADS * HEAD_DIM * 4  # bytes of one cache row of one key/value head set
    base = method_work(prog, position=0)
    assert base.layers == layers
    assert base.dispatches == len(prog.steps)
    assert base.per_layer < base.dispatches / 2
    for position in (0, 1, 20, CONFIG["max_seq_len"] - 1):
        work = method_work(prog, position=position)
        assert work.cache_rows == position + 1
        assert work.read_bytes >= work.needed_bytes
        # the constants read (all but the rows of gathered tables) and the caches' rows
        assert work.needed_bytes >= weights * 0.5 + 2 * layers * (position + 1) * row
        # per row: k and v of each layer and its mask word; mask_bound reads the masked
        # tail of the mask row and a word per thread (64), at most the row
        s = CONFIG["max_seq_len"]
        tail = 4 * (min(s, s - (position + 1) + 64) - min(s, s - 1 + 64))
        step = layers * (2 * row + 4)
        assert work.read_bytes - base.read_bytes == position * step + tail
        assert work.needed_bytes - base.needed_bytes == position * 2 * layers * row
    assert method_work(prog).cache_rows == CONFIG["max_seq_len"]


def test_unbounded_attention_reads_every_cache_row() -> None:
    prog = copy.deepcopy(program("float"))
    for entry in prog.kernels:
        if entry.kernel == "sdpa":
            entry.spec["BOUNDED"] = 0
    rows = CONFIG["max_seq_len"]
    early, late = method_work(prog, position=3), method_work(prog, position=rows - 1)
    assert early.cache_rows == late.cache_rows == rows
    assert early.needed_bytes < late.needed_bytes < late.read_bytes
    with pytest.raises(QoptError, match="negative"):
        method_work(prog, position=-1)
