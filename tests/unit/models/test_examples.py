"""Tests for qopt.examples: every (model, scheme) pair exports, and the exported
program computes exactly what the eager quantized module computes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

try:
    from qopt import examples as E
except ModuleNotFoundError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    from qopt import examples as E

PAIRS = [(m, s) for m in E.MODELS for s in E.SCHEMES]

# call_function targets that must appear in the exported graph of each scheme.
EXPECTED_OPS = {
    "float": set(),
    "pt2e_static": {
        "quantized_decomposed.quantize_per_tensor.default",
        "quantized_decomposed.dequantize_per_tensor.default",
        "quantized_decomposed.dequantize_per_channel.default",
    },
    "pt2e_dynamic": {
        "quantized_decomposed.choose_qparams.tensor",
        "quantized_decomposed.quantize_per_tensor.tensor",
        "quantized_decomposed.dequantize_per_tensor.tensor",
        "quantized_decomposed.dequantize_per_channel.default",
    },
    "w4g32": {"torchao.dequantize_affine.default", "export.access_subclass_inner_tensor.default"},
    "w8c": {"torchao.dequantize_affine.default", "export.access_subclass_inner_tensor.default"},
    "8da4w": {
        "torchao.choose_qparams_affine.default",
        "torchao.quantize_affine.default",
        "torchao.dequantize_affine.default",
    },
    "codebook4": {"quant.dequantize_codebook.default"},
    "codebook3": {"quant.dequantize_codebook.default"},
}
QUANT_NAMESPACES = ("quantized_decomposed.", "torchao.", "quant.", "export.")


def _targets(ep: torch.export.ExportedProgram) -> set[str]:
    return {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}


def _out(module, inputs) -> torch.Tensor:
    with torch.no_grad():
        return module(*inputs)


@pytest.fixture(scope="module")
def float_models():
    return {name: E.build_model(name, seed=0) for name in E.MODELS}


@pytest.mark.parametrize(("name", "scheme"), PAIRS, ids=[f"{m}-{s}" for m, s in PAIRS])
def test_export_matches_eager_quantized(name, scheme, float_models):
    reason = E.supported(name, scheme)
    if reason is not None:
        assert isinstance(reason, str)
        assert reason
        with pytest.raises(ValueError, match=r"."):
            E.export_model(name, scheme)
        return

    model, example = float_models[name]
    ep = E.export_model(name, scheme, seed=0)
    assert isinstance(ep, torch.export.ExportedProgram)

    # The eager quantized module is built independently of the export above,
    # so this also checks that quantization is deterministic.
    qmodel = E.quantize_model(name, scheme, model, example, seed=0)
    exported = ep.module()
    float_max_diff = 0.0
    for seed in (1, 2):
        inputs = E.random_inputs(name, seed)
        expected = _out(qmodel, inputs)
        got = _out(exported, inputs)
        assert got.shape == expected.shape
        assert got.dtype == expected.dtype
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
        float_max_diff = max(float_max_diff, float((expected - _out(model, inputs)).abs().max()))

    targets = _targets(ep)
    quant_targets = {t for t in targets if t.startswith(QUANT_NAMESPACES)}
    if scheme == "float" or (name, scheme) in E.NOOP_PAIRS:
        assert not quant_targets, quant_targets
        assert float_max_diff == 0.0
    else:
        missing = EXPECTED_OPS[scheme] - targets
        assert not missing, f"missing quantization ops {missing}; graph has {sorted(targets)}"
        # quantization must actually change the numerics (so the tolerance above
        # is discriminating, not vacuous)
        assert float_max_diff > 1e-4


def test_supported_api():
    for name, scheme in PAIRS:
        r = E.supported(name, scheme)
        assert r is None or (isinstance(r, str) and "\n" not in r)
    with pytest.raises(ValueError, match="unknown model"):
        E.supported("nope", "float")
    with pytest.raises(ValueError, match="unknown scheme"):
        E.export_model("mlp", "nope")


def test_build_model_deterministic_and_rng_untouched():
    torch.manual_seed(1234)
    state = torch.get_rng_state()
    m1, x1 = E.build_model("llama", seed=3)
    m2, x2 = E.build_model("llama", seed=3)
    m3, _ = E.build_model("llama", seed=4)
    E.export_model("mlp", "pt2e_static", seed=0)
    assert torch.equal(torch.get_rng_state(), state)
    assert not m1.training
    for (k, a), (_, b) in zip(m1.state_dict().items(), m2.state_dict().items(), strict=True):
        assert torch.equal(a, b), k
    assert not torch.equal(m1.tok_embeddings.weight, m3.tok_embeddings.weight)
    assert all(torch.equal(a, b) for a, b in zip(x1, x2, strict=True))


@pytest.mark.parametrize("name", E.MODELS)
def test_inputs(name):
    model, example = E.build_model(name)
    r1, r2 = E.random_inputs(name, 1), E.random_inputs(name, 2)
    for a, b, c in zip(example, r1, r2, strict=True):
        assert a.shape == b.shape == c.shape
        assert a.dtype == b.dtype == c.dtype
        assert not torch.equal(b, c)
    if name == "llama":
        (tok,) = r1
        assert tok.shape == (1, 16)
        assert tok.dtype == torch.int64
        assert int(tok.min()) >= 0
        assert int(tok.max()) < 256
        n_params = sum(p.numel() for p in model.parameters())
        assert 100_000 < n_params < 1_000_000
    out = _out(model, example)
    assert out.shape == {"llama": (1, 16, 256), "mlp": (4, 32), "convnet": (1, 10)}[name]


def test_caller_model_not_modified():
    model, example = E.build_model("mlp")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    for scheme in ("w4g32", "codebook3", "pt2e_static"):
        E.export_model("mlp", scheme, model=model, example_inputs=example)
    for k, v in model.state_dict().items():
        assert type(v) is torch.Tensor, (k, type(v))
        assert torch.equal(v, before[k]), k
    assert isinstance(model.fc1, torch.nn.Linear)


def test_llama_attention_variants():
    model, example = E.build_model("llama", seed=0)
    ref = _out(model, example)
    # explicit mask + softmax computes the same function as SDPA(is_causal=True)
    eager_attn, _ = E.build_model("llama", seed=0, use_sdpa=False)
    torch.testing.assert_close(_out(eager_attn, example), ref, rtol=1e-4, atol=1e-4)
    ep = E.export_model("llama", "w8c", model=eager_attn, example_inputs=example)
    targets = _targets(ep)
    assert "aten.softmax.int" in targets
    assert "aten.scaled_dot_product_attention.default" not in targets
    # causal: changing a later token must not change earlier logits
    tok2 = example[0].clone()
    tok2[0, -1] = (tok2[0, -1] + 1) % 256
    out2 = _out(ep.module(), (tok2,))
    out1 = _out(ep.module(), example)
    torch.testing.assert_close(out2[:, :-1], out1[:, :-1])
    assert not torch.allclose(out2[:, -1], out1[:, -1])
    # rope flag changes the function, and without rope the graph has no rotate_half
    no_rope, _ = E.build_model("llama", seed=0, rope=False)
    assert not torch.allclose(_out(no_rope, example), ref)
    ep = E.export_model("llama", "float", model=no_rope, example_inputs=example)
    assert "aten.neg.default" not in _targets(ep)
    torch.testing.assert_close(_out(ep.module(), example), _out(no_rope, example))
