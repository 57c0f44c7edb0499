"""convert-to-vkc rule of scaled_dot_product_attention: the sdpa kernel, with key /
value heads broadcast (or grouped, `enable_gqa`) by a strided copy and a boolean
mask turned into an additive float mask."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from qopt.dialects.aten import layers
from qopt.dialects.aten.base import flag
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


def _kv_heads(lw: Lowering, op: Sdpa, kv: Buf, dims: Sequence[int], bh: tuple[int, int]) -> Buf:
    """k or v [B', H', S, E] in the query's [B, H] heads: as is when they match; a
    strided copy when B'/H' broadcast (size 1) or serve H / H' consecutive query
    heads each (`enable_gqa`: head h reads kv head h // (H / H'))."""
    b, h = bh
    if len(dims) != 4:
        raise unsupported(op, f"sdpa with a rank-{len(dims)} key/value", "reshape to 4-d")
    kb, kh, s, e = dims
    if (kb, kh) == (b, h):
        return kv
    gqa = flag(op.enable_gqa)
    if kb not in (1, b) or not (kh in (1, h) or (gqa and h % kh == 0)):
        raise unsupported(
            op, f"sdpa key/value heads {[kb, kh]} for query heads {[b, h]}", "expand k/v"
        )
    group = h // kh
    # [B, H', G, S, E] with stride 0 on G (and on B if broadcast), flattened to [B, H, S, E]
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
    k = _kv_heads(lw, op, lw.buffer(op.key), k_dims, (b, h))
    v = _kv_heads(lw, op, lw.buffer(op.value), v_dims, (b, h))
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
    else:
        mask = q
    out = lw.alloc((b, h, l, ev), "f32")
    causal = int(flag(op.is_causal))
    lw.dispatch(
        "sdpa",
        [q, k, v, mask, out],
        [b * h, h, l, s, e, ev, scale, mb, mh, ml, ms],
        {"HAS_MASK": int(mask_value is not None), "CAUSAL": causal},
    )
    return [out]
