"""convert-to-vkc rule of scaled_dot_product_attention: the sdpa kernel, with a
boolean mask turned into an additive float mask.

Key/value heads grouped (`enable_gqa`) or broadcast over the query heads are read
in place: the kernel's G maps query head bh to key/value head bh / G, so an LLM's
KV cache is never copied per query head. A `repeat_interleave` of the key/value
heads (ExecuTorch's GQA) whose only uses are sdpa keys and values is the same
grouping: its rule (views.py) leaves it to sdpa (`absorbs_repeat`), which reads the
repeated tensor's source. Only a batch broadcast is a strided copy.

Attention over a KV cache (more keys than queries) under an additive mask whose last
dim is the keys reads only the keys the mask leaves open: a `mask_bound` dispatch
computes on the device 1 + the last key that some mask row does not set to -inf (the
cache rows in use: position + 1 for a causal mask built from the position), once per
mask value (every layer reads the same mask), and the sdpa (`BOUNDED = 1`) loops its
keys to it. Every key past the bound is -inf in every row, a key the kernel skips
anyway, so the result is the same bits whatever the mask's form (a causal mask from
the position, a boolean or additive mask, a sliding window); a mask broadcast over the
keys, or attention without a mask or with no more keys than queries, reads every key
as before.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.ir import SSAValue

from qopt.dialects.aten import layers
from qopt.dialects.aten import shape as sh
from qopt.dialects.aten.base import flag, integer, norm_dim
from qopt.dialects.tensors import numel, shape_of
from qopt.lowering.convert_to_vkc.lowering import (
    Buf,
    Lowering,
    RuleTable,
    broadcast_strides,
    copy_strided,
    pad6,
    unsupported,
)

RULES = RuleTable()

Sdpa = layers.ScaledDotProductAttentionOp


def absorbs_repeat(op: sh.RepeatInterleaveOp) -> bool:
    """Whether sdpa reads this repeat_interleave's source instead: a repeat of the
    heads (dim 1) of a 4-d tensor used only as sdpa keys or values."""
    dims = shape_of(op.input)
    if op.dim is None or len(dims) != 4 or norm_dim(integer(op.dim), 4) != 1:
        return False
    uses = list(op.result.uses)
    return bool(uses) and all(
        isinstance(use.operation, Sdpa) and use.index in (1, 2) for use in uses
    )


def _kv_source(lw: Lowering, op: Sdpa, value: SSAValue) -> tuple[Buf, Sequence[int], bool]:
    """k or v as (buffer, dims [B', H', S, E], grouping allowed): an absorbed
    repeat_interleave is its source, its heads grouped."""
    owner = value.owner
    if isinstance(owner, sh.RepeatInterleaveOp) and value in lw.kv_groups:
        return lw.kv_groups[value], shape_of(owner.input), True
    return lw.buffer(value), shape_of(value), flag(op.enable_gqa)


def _kv_heads(
    lw: Lowering, op: Sdpa, value: SSAValue, bh: tuple[int, int]
) -> tuple[Buf, Sequence[int], int]:
    """k or v for the query's [B, H] heads: (buffer, its dims, G) with query head
    b*H + h reading key/value head (b*H + h) // G of the buffer; a strided copy only
    when the batch broadcasts."""
    kv, dims, gqa = _kv_source(lw, op, value)
    b, h = bh
    if len(dims) != 4:
        raise unsupported(op, f"sdpa with a rank-{len(dims)} key/value", "reshape to 4-d")
    kb, kh, s, e = dims
    if kb not in (1, b) or not (kh in (1, h) or (gqa and h % kh == 0)):
        raise unsupported(
            op, f"sdpa key/value heads {[kb, kh]} for query heads {[b, h]}", "expand k/v"
        )
    if kb == b:
        return kv, dims, h // kh
    return _expanded(lw, kv, dims, bh), (b, h, s, e), 1


def _expanded(lw: Lowering, kv: Buf, dims: Sequence[int], bh: tuple[int, int]) -> Buf:
    """k or v [B', H', S, E] copied to the query's [B, H] heads: [B, H', G, S, E] with
    stride 0 on G (and on B if broadcast), flattened to [B, H, S, E]."""
    kb, kh, s, e = dims
    b, h = bh
    group = h // kh
    strides = [0 if kb == 1 else kh * s * e, 0 if kh == 1 else s * e, 0, e, 1]
    return lw.view(copy_strided(lw, kv, (b, kh, group, s, e), strides), (b, h, s, e))


def _bool_mask_to_float(lw: Lowering, mask: Buf, dims: Sequence[int]) -> Buf:
    zero = lw.constant(np.zeros(1, np.float32), "f32")
    neg = lw.constant(np.full(1, -np.inf, np.float32), "f32")
    out = lw.alloc(tuple(dims), "f32")
    strides = [broadcast_strides(tuple(dims), tuple(dims)), [0] * len(dims), [0] * len(dims)]
    d, sc, sa, sb = pad6(tuple(dims), *strides)
    lw.dispatch("where", [mask, zero, neg, out], [numel(dims), *d, *sc, *sa, *sb])
    return out


SDPA_MAX_REG = 128
"""The largest head dim (E = EV) whose query row and output accumulator sdpa keeps in
registers (its REG variant: on lavapipe every storage load and store is a loop over
the SIMD lanes, and the row-major variant loads and stores its output row per key;
REG halves the kernel's time at 64 tokens, head dim 128)."""


@RULES(Sdpa)
def lower_sdpa(lw: Lowering, op: Sdpa) -> Sequence[Buf]:
    q_dims, k_dims, v_dims = shape_of(op.query), shape_of(op.key), shape_of(op.value)
    out_dims = shape_of(op.result)
    if len(q_dims) != 4 or len(out_dims) != 4 or q_dims[:-2] != out_dims[:-2]:
        raise unsupported(
            op, "sdpa whose query is broadcast or not 4-d", "reshape q to [B, H, L, E]"
        )
    b, h, l, e = q_dims
    s, ev = k_dims[-2], v_dims[-1]
    scale = op.scale.value.data if op.scale is not None else 1.0 / float(np.sqrt(e))
    q = lw.buffer(op.query)
    k, k_src, k_group = _kv_heads(lw, op, op.key, (b, h))
    v, v_src, v_group = _kv_heads(lw, op, op.value, (b, h))
    if k_group != v_group:  # one G for both: every head of each, in the query's order
        k = k if k_group == 1 else _expanded(lw, k, k_src, (b, h))
        v = v if v_group == 1 else _expanded(lw, v, v_src, (b, h))
    group = k_group if k_group == v_group else 1
    mask_value = op.attn_mask
    mb = mh = ml = ms = 0
    if mask_value is not None:
        m_dims = shape_of(mask_value)
        mask = lw.buffer(mask_value)
        if mask.dtype != "f32":
            # A boolean mask keeps True positions: as torch does, turn it into an
            # additive float mask, where(mask, 0, -inf).
            mask = _bool_mask_to_float(lw, mask, m_dims or (1,))
        strides = broadcast_strides(m_dims, (b, h, l, s))
        mb, mh, ml, ms = strides
        bound = _key_bound(lw, mask_value, mask, s) if s > l and ms == 1 else None
    else:
        mask = q
        bound = None
    out = lw.alloc((b, h, l, ev), "f32")
    causal = int(flag(op.is_causal))
    lw.dispatch(
        "sdpa",
        [q, k, v, mask, out, q if bound is None else bound],
        [b * h, h, l, s, e, ev, group, scale, mb, mh, ml, ms],
        {
            "HAS_MASK": int(mask_value is not None),
            "CAUSAL": causal,
            "REG": e if e == ev and 0 < e <= SDPA_MAX_REG else 0,
            "BOUNDED": int(bound is not None),
        },
    )
    return [out]


def _key_bound(lw: Lowering, value: SSAValue, mask: Buf, keys: int) -> Buf:
    """The one-word buffer `mask_bound` fills with the keys mask `value` (its float
    buffer `mask`, last dim `keys`) leaves open, made once per mask value."""
    found = lw.mask_bounds.get(value)
    if found is None:
        found = lw.alloc((1,), "u32")
        lw.dispatch("mask_bound", [mask, found], [mask.numel // keys, keys])
        lw.mask_bounds[value] = found
    return found
