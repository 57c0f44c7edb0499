"""benchmarks/llamacpp_anchor.py's GGUF writer: what llama.cpp reads is the torch model.

No llama.cpp build needed: the file is read back with PyPI's `gguf` reader (skipped,
with the reason, where `gguf` is not importable) and compared with the torch weights
after Q4_0 dequantization; the rotary row order is checked against torch's rotate-half
rotation on numbers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from benchmarks.llamacpp_anchor import (
    gguf_name,
    import_gguf,
    model_from_gguf,
    rope_from_pairs,
    rope_to_pairs,
    write_gguf,
)
from qopt.examples import LlamaConfig, TinyLlama, _rotate_half


@pytest.fixture(scope="module")
def gguf():
    module = import_gguf()
    if isinstance(module, str):
        pytest.skip(module)
    return module


def _tiny() -> TinyLlama:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(3)
        cfg = LlamaConfig(vocab_size=96, dim=64, n_layers=2, n_heads=4, hidden_dim=96,
                          max_seq_len=16, rope_theta=5000.0, norm_eps=1e-6)  # fmt: skip
        return TinyLlama(cfg).eval()


def _field(reader, key):
    field = reader.fields[key]
    return field.contents()


def test_gguf_metadata_and_weights_round_trip(gguf, tmp_path):
    model = _tiny()
    cfg = model.cfg
    path = tmp_path / "tiny.gguf"
    write_gguf(model, path, gguf)
    assert not list(tmp_path.glob("*.tmp"))  # written whole, then renamed
    reader = gguf.GGUFReader(str(path))
    assert _field(reader, "general.architecture") == "llama"
    assert _field(reader, "tokenizer.ggml.model") == "no_vocab"
    expected = {
        "llama.block_count": cfg.n_layers,
        "llama.embedding_length": cfg.dim,
        "llama.feed_forward_length": cfg.hidden_dim,
        "llama.attention.head_count": cfg.n_heads,
        "llama.attention.head_count_kv": cfg.n_heads,
        "llama.rope.dimension_count": cfg.head_dim,
        "llama.vocab_size": cfg.vocab_size,
    }
    for key, value in expected.items():
        assert _field(reader, key) == value, key
    assert _field(reader, "llama.rope.freq_base") == pytest.approx(cfg.rope_theta)
    assert _field(reader, "llama.attention.layer_norm_rms_epsilon") == pytest.approx(1e-6)

    tensors = {t.name: t for t in reader.tensors}
    state = model.state_dict()
    assert set(tensors) == {gguf_name(name) for name in state}
    q4_0 = gguf.GGMLQuantizationType.Q4_0
    for name, weight in state.items():
        tensor = tensors[gguf_name(name)]
        want = weight.numpy()
        assert tuple(int(d) for d in reversed(tensor.shape)) == want.shape, name
        got = np.asarray(gguf.quants.dequantize(tensor.data, tensor.tensor_type)).reshape(
            want.shape
        )
        if want.ndim == 1:
            assert tensor.tensor_type == gguf.GGMLQuantizationType.F32, name
            np.testing.assert_array_equal(got, want)
            continue
        assert tensor.tensor_type == q4_0, name
        if name.endswith(("wq.weight", "wk.weight")):
            got = rope_from_pairs(got, cfg.n_heads)
        # Q4_0: blocks of 32 along a row, scale d = (the value of largest magnitude) / -8;
        # every value within |d| (the clamp at +7 d), most within |d| / 2.
        blocks = want.reshape(want.shape[0], -1, 32)
        bound = np.abs(blocks).max(-1, keepdims=True) / 8 * (1 + 1e-3) + 1e-7
        error = np.abs(got.reshape(blocks.shape) - blocks)
        assert (error <= bound).all(), name
        assert error.mean() > 0, name  # quantized, not stored as float
        assert (error <= bound / 2).mean() > 0.9, name

    # The model llama.cpp runs: the torch model on these weights, close to the float one.
    on_q4 = model_from_gguf(model, path, gguf)
    tokens = torch.randint(0, cfg.vocab_size, (1, 8), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        q4_logits, float_logits = on_q4(tokens), model(tokens)
    assert not torch.equal(q4_logits, float_logits)
    # 4 bits per weight: ~10% relative error on these random weights, not more
    assert (q4_logits - float_logits).norm() < 0.2 * float_logits.norm()


def test_rope_row_order_matches_rotate_half():
    """llama.cpp's rotary (pairs (2i, 2i + 1)) on the permuted rows = torch's rotate-half
    rotation (pairs (i, i + d/2)) on the original rows, permuted."""
    n_heads, head_dim, dim, pos, theta = 3, 8, 16, 5, 10000.0
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((n_heads * head_dim, dim)).astype(np.float32)
    x = rng.standard_normal(dim).astype(np.float32)
    np.testing.assert_array_equal(rope_from_pairs(rope_to_pairs(weight, n_heads), n_heads), weight)

    inv_freq = theta ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    angle = pos * inv_freq
    # torch: rotate-half on heads of the original projection
    q = torch.from_numpy((weight @ x).reshape(n_heads, head_dim)).double()
    cos = torch.from_numpy(np.concatenate([np.cos(angle)] * 2))
    sin = torch.from_numpy(np.concatenate([np.sin(angle)] * 2))
    torch_rot = (q * cos + _rotate_half(q) * sin).numpy().reshape(-1)
    # llama.cpp's normal rope: rotate each adjacent pair (2i, 2i + 1) by angle i
    pairs = (rope_to_pairs(weight, n_heads) @ x).astype(np.float64).reshape(n_heads, -1, 2)
    c, s = np.cos(angle), np.sin(angle)
    rotated = np.stack(
        [pairs[..., 0] * c - pairs[..., 1] * s, pairs[..., 0] * s + pairs[..., 1] * c], axis=-1
    ).reshape(n_heads * head_dim, 1)
    np.testing.assert_allclose(
        rope_from_pairs(rotated, n_heads).reshape(-1), torch_rot, rtol=1e-5, atol=1e-5
    )
