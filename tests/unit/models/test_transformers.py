"""Real models: tiny `transformers` decoders and encoders (random weights, no
download), quantized under each scheme that applies, exported, saved with
torch.export.save, imported from the .pt2 and interpreted against torch."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

import qopt
from qopt.examples import apply_scheme

transformers = pytest.importorskip(
    "transformers", reason="the transformers package is not installed"
)

# PT2E (XNNPACK quantizer) does not apply: torch's own prepare/convert of these
# graphs quantizes an index tensor and fails ("tensors used as indices must be
# long, int, byte or bool tensors"), before qopt is involved.
SCHEMES = ["float", "w8c", "w4g32", "8da4w", "codebook4", "codebook3"]


def _llama(attn: str) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    config = transformers.LlamaConfig(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        use_cache=False,
        attn_implementation=attn,
    )
    return transformers.LlamaForCausalLM(config), (_tokens(8, 128),)


def _gpt2(attn: str) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    config = transformers.GPT2Config(
        vocab_size=128,
        n_embd=64,
        n_layer=2,
        n_head=4,
        n_positions=64,
        use_cache=False,
        attn_implementation=attn,
    )
    return transformers.GPT2LMHeadModel(config), (_tokens(8, 128),)


def _bert(attn: str) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    config = transformers.BertConfig(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=64,
        attn_implementation=attn,
    )
    mask = torch.ones(1, 8, dtype=torch.int64)
    mask[0, 6:] = 0
    return transformers.BertModel(config, add_pooling_layer=False), (
        _tokens(8, 128),
        mask,
    )


def _tokens(n: int, vocab: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, vocab, (1, n), generator=torch.Generator().manual_seed(seed))


BUILDERS = {"llama": _llama, "gpt2": _gpt2, "bert": _bert}


class _Logits(torch.nn.Module):
    """Return a plain tensor (the first output) so the exported program has one output."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        out = self.model(*args, return_dict=False)
        return out[0]


@functools.cache
def _export(name: str, attn: str, scheme: str):
    torch.manual_seed(0)
    model, inputs = BUILDERS[name](attn)
    model = _Logits(model.eval())
    calibration = [
        tuple(_tokens(8, 128, s) if i == 0 else t for i, t in enumerate(inputs)) for s in (1, 2)
    ]
    qmodel = apply_scheme(model, scheme, inputs, calibration)
    with torch.no_grad():
        return torch.export.export(qmodel, inputs, strict=False), inputs


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("name,attn", [("llama", "sdpa"), ("gpt2", "eager"), ("bert", "sdpa")])
def test_transformers_model_from_pt2(tmp_path, name: str, attn: str, scheme: str):
    ep, inputs = _export(name, attn, scheme)
    path = tmp_path / f"{name}.pt2"
    torch.export.save(ep, path)
    module = qopt.import_program(path)
    module.verify()
    fresh = (_tokens(8, 128, seed=99), *inputs[1:])
    (got,) = qopt.interpret(module, *fresh)
    want = ep.module()(*fresh).detach().numpy()
    err = np.linalg.norm(got.astype(np.float64) - want) / np.linalg.norm(want)
    assert err < 1e-5, f"{name}/{scheme}: relative error {err:.3g}"


@pytest.mark.parametrize("name,attn", [("llama", "eager"), ("gpt2", "sdpa"), ("bert", "eager")])
def test_transformers_other_attention(name: str, attn: str):
    ep, inputs = _export(name, attn, "float")
    module = qopt.import_program(ep)
    (got,) = qopt.interpret(module, *inputs)
    want = ep.module()(*inputs).detach().numpy()
    err = np.linalg.norm(got.astype(np.float64) - want) / np.linalg.norm(want)
    assert err < 1e-5


def _rel(got: np.ndarray, want: np.ndarray) -> float:
    want = np.asarray(want, np.float64)
    return float(np.linalg.norm(np.asarray(got, np.float64) - want) / np.linalg.norm(want))


@pytest.mark.parametrize("scheme", ["w4g32", "8da4w"])
@pytest.mark.parametrize("name,attn", [("llama", "sdpa"), ("gpt2", "eager"), ("bert", "sdpa")])
def test_fold_constants_keeps_semantics(name: str, attn: str, scheme: str):
    """fold-constants turns the exported mask/position subgraphs into constants:
    the module interprets to the same bits before and after, and no quant or
    qfused op is folded."""
    from qopt.context import make_context
    from qopt.lowering.fold_constants import FoldConstantsPass

    ep, inputs = _export(name, attn, scheme)
    module = qopt.fuse(qopt.import_program(ep))
    fresh = (_tokens(8, 128, seed=99), *inputs[1:])
    before = qopt.interpret(module, *fresh)
    quant_ops = sorted(op.name for op in module.walk() if op.name.startswith(("quant.", "qfused.")))
    count = sum(1 for _ in module.walk())
    FoldConstantsPass().apply(make_context(), module)
    module.verify()
    after = qopt.interpret(module, *fresh)
    assert all(np.array_equal(a, b) for a, b in zip(before, after, strict=True))
    assert (
        sorted(op.name for op in module.walk() if op.name.startswith(("quant.", "qfused.")))
        == quant_ops
    )
    assert sum(1 for _ in module.walk()) < count - 10
    assert not any(op.name in ("aten.arange", "aten.full") for op in module.walk())


@pytest.mark.parametrize("scheme", ["float", "w4g32", "8da4w"])
@pytest.mark.parametrize("name,attn", [("llama", "sdpa"), ("gpt2", "eager"), ("bert", "sdpa")])
def test_transformers_on_vulkan(name: str, attn: str, scheme: str):
    """Real exported transformers (causal and padding masks, fused QKV split, GPT-2's
    addmm, grouped KV heads expanded by transformers) compile to a Vulkan program
    that matches torch on the local device."""
    from qopt.backends.vulkan.bisect import check_dispatches
    from qopt.backends.vulkan.runtime import vulkan_available

    if (reason := vulkan_available()) is not None:
        print(f"Vulkan test skipped: {reason}")
        pytest.skip(reason)
    ep, inputs = _export(name, attn, scheme)
    fresh = (_tokens(8, 128, seed=99), *inputs[1:])
    want = ep.module()(*fresh).detach().numpy()
    with qopt.compile(ep, target="vulkan") as artifact:
        (got,) = artifact(*fresh)
        reports = check_dispatches(artifact.program, fresh, device=artifact.device)
    assert _rel(got, want) < (1e-3 if scheme == "8da4w" else 1e-4), _rel(got, want)
    # every kernel declared bit-exact equals its reference on the device
    assert not [str(r) for r in reports if r.exact]


@pytest.mark.parametrize("scheme", ["float", "w4g32", "8da4w"])
@pytest.mark.parametrize("name,attn", [("llama", "sdpa"), ("gpt2", "eager"), ("bert", "sdpa")])
def test_transformers_on_coreml(tmp_path, name: str, attn: str, scheme: str):
    """Real exported transformers (grouped KV heads expanded with MIL tile, GPT-2's
    Conv1D addmm as linear, the fused QKV split as slice_by_index, BERT's padding
    mask as a constant-offset gather and logical_and) compile to an .mlpackage
    that reads back and interprets to torch's result. 8da4w: Core ML computes the
    activations in float (convert_to_coreml.py), so the package differs from
    torch's quantized eager output by the activation quantization error.
    Measured (fp32, iOS18): float 3.1e-7 / 2.9e-7 / 1.3e-7, w4g32 2.8e-7 /
    2.7e-7 / 1.2e-7, 8da4w 8.6e-3 / 5.1e-3 / 2.6e-4 (llama / gpt2 / bert)."""
    ep, inputs = _export(name, attn, scheme)
    path = tmp_path / "m.mlpackage"
    qopt.compile(ep, target="coreml", compute_precision="fp32").save(path)
    module = qopt.read_mlpackage(path)
    assert not [op.name for op in module.walk() if op.name.startswith(("aten.", "quant"))]
    fresh = (_tokens(8, 128, seed=99), *inputs[1:])
    (got,) = qopt.interpret(module, *fresh)
    want = ep.module()(*fresh).detach().numpy()
    assert _rel(got, want) < (3e-2 if scheme == "8da4w" else 1e-4), _rel(got, want)
