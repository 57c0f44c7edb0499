"""The model zoo: tiny `transformers` architectures with seeded random weights.

One builder per architecture returns ``(model, example_inputs, make_inputs)``:
the model in eval mode wrapped so that it returns one plain tensor (its first
output), the example inputs it is exported with, and ``make_inputs(seed)``
that draws fresh inputs of the same shapes (calibration and checking). Every
config is tiny (hidden 32-64, one or two layers, 32x32 images, a fraction of a
second of audio) so each model exports in seconds; nothing is downloaded.

``transformers`` is imported lazily, inside the builders: importing this module
costs nothing. ``benchmarks/zoo.py`` runs every (architecture x scheme x target)
cell and writes the table in ``docs/zoo.md``; tests/unit/models/test_zoo.py
checks a sample.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

import qopt
from qopt.errors import QoptError
from qopt.examples import apply_scheme

__all__ = [
    "ARCHITECTURES",
    "FAMILIES",
    "TARGETS",
    "NotApplicable",
    "ZooModel",
    "build",
    "check",
    "export",
]

Inputs = tuple[torch.Tensor, ...]
ZooModel = tuple[nn.Module, Inputs, Callable[[int], Inputs]]

_VOCAB = 128
_SEQ = 8


class _First(nn.Module):
    """Return the model's first output as one plain tensor."""

    def __init__(self, model: nn.Module, kwarg: str | None = None):
        super().__init__()
        self.model = model
        self.kwarg = kwarg

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        if self.kwarg is not None:  # inputs the model takes by keyword only
            out = self.model(**{self.kwarg: args[0]}, return_dict=False)
        else:
            out = self.model(*args, return_dict=False)
        return out[0]


def _tokens(seed: int, mask: bool = False) -> Inputs:
    gen = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, _VOCAB, (1, _SEQ), generator=gen)
    if not mask:
        return (tokens,)
    attention = torch.ones(1, _SEQ, dtype=torch.int64)
    attention[0, _SEQ - 2 :] = 0  # two padding positions
    return tokens, attention


def _images(shape: tuple[int, ...]) -> Callable[[int], Inputs]:
    def make(seed: int) -> Inputs:
        return (torch.randn(*shape, generator=torch.Generator().manual_seed(seed)),)

    return make


def _finish(model: nn.Module, make: Callable[[int], Inputs], kwarg: str | None = None) -> ZooModel:
    model = _First(model.eval(), kwarg)
    return model, make(0), make


def _transformers() -> Any:
    import transformers

    return transformers


# Shared decoder sizes: 2 layers, hidden 64, 4 heads (2 KV heads where grouped).
_DEC: dict[str, Any] = {
    "vocab_size": _VOCAB,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "max_position_embeddings": 64,
    "use_cache": False,
    "bos_token_id": 1,
    "eos_token_id": 2,
}


def _decoder(config_cls: str, model_cls: str, attn: str = "sdpa", **extra: Any) -> ZooModel:
    tf = _transformers()
    config = getattr(tf, config_cls)(**{**_DEC, **extra}, attn_implementation=attn)
    return _finish(getattr(tf, model_cls)(config), _tokens)


def llama() -> ZooModel:
    return _decoder("LlamaConfig", "LlamaForCausalLM", num_key_value_heads=2)


def mistral() -> ZooModel:
    return _decoder("MistralConfig", "MistralForCausalLM", num_key_value_heads=2, sliding_window=4)


def qwen2() -> ZooModel:
    return _decoder("Qwen2Config", "Qwen2ForCausalLM", num_key_value_heads=2)


def phi3() -> ZooModel:
    return _decoder(
        "Phi3Config", "Phi3ForCausalLM", num_key_value_heads=2, pad_token_id=0, rope_scaling=None
    )


def gemma2() -> ZooModel:
    return _decoder(
        "Gemma2Config",
        "Gemma2ForCausalLM",
        attn="eager",
        num_key_value_heads=2,
        head_dim=16,
        sliding_window=4,
        query_pre_attn_scalar=16,
    )


def gpt2() -> ZooModel:
    tf = _transformers()
    config = tf.GPT2Config(
        vocab_size=_VOCAB,
        n_embd=64,
        n_layer=2,
        n_head=4,
        n_positions=64,
        use_cache=False,
        bos_token_id=1,
        eos_token_id=2,
        attn_implementation="eager",
    )
    return _finish(tf.GPT2LMHeadModel(config), _tokens)


def gpt_neox() -> ZooModel:
    return _decoder("GPTNeoXConfig", "GPTNeoXForCausalLM", rotary_pct=0.5)


def opt() -> ZooModel:
    tf = _transformers()
    config = tf.OPTConfig(
        vocab_size=_VOCAB,
        hidden_size=64,
        ffn_dim=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=64,
        word_embed_proj_dim=64,
        use_cache=False,
        attn_implementation="sdpa",
    )
    return _finish(tf.OPTForCausalLM(config), _tokens)


def falcon() -> ZooModel:
    tf = _transformers()
    config = tf.FalconConfig(
        vocab_size=_VOCAB,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        new_decoder_architecture=False,
        multi_query=True,
        parallel_attn=True,
        alibi=False,
        use_cache=False,
        attn_implementation="sdpa",
    )
    return _finish(tf.FalconForCausalLM(config), _tokens)


def _encoder(config_cls: str, model_cls: str, **config: Any) -> ZooModel:
    tf = _transformers()
    cfg = getattr(tf, config_cls)(**config, attn_implementation="sdpa")
    model = getattr(tf, model_cls)(cfg, add_pooling_layer=False)
    return _finish(model, lambda seed: _tokens(seed, mask=True))


_ENC: dict[str, Any] = {
    "vocab_size": _VOCAB,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "max_position_embeddings": 64,
}


def bert() -> ZooModel:
    return _encoder("BertConfig", "BertModel", **_ENC)


def roberta() -> ZooModel:
    return _encoder("RobertaConfig", "RobertaModel", **_ENC, pad_token_id=1)


def distilbert() -> ZooModel:
    tf = _transformers()
    config = tf.DistilBertConfig(
        vocab_size=_VOCAB,
        dim=64,
        hidden_dim=128,
        n_layers=2,
        n_heads=4,
        max_position_embeddings=64,
        attn_implementation="sdpa",
    )
    return _finish(tf.DistilBertModel(config), lambda seed: _tokens(seed, mask=True))


def t5_encoder() -> ZooModel:
    tf = _transformers()
    config = tf.T5Config(
        vocab_size=_VOCAB,
        d_model=64,
        d_kv=16,
        d_ff=128,
        num_layers=2,
        num_heads=4,
        relative_attention_num_buckets=8,
        relative_attention_max_distance=16,
        use_cache=False,
        attn_implementation="eager",
    )
    return _finish(tf.T5EncoderModel(config), lambda seed: _tokens(seed, mask=True))


_IMAGE = (1, 3, 32, 32)

#: Tiny configs shared by architectures of one shape (a later version differs in blocks,
#: not in sizes).
_RESNET_LIKE: dict[str, Any] = {
    "num_channels": 3,
    "embedding_size": 16,
    "hidden_sizes": [16, 32],
    "depths": [1, 1],
    "num_labels": 10,
}
_CONVNEXT_LIKE: dict[str, Any] = {
    "num_channels": 3,
    "hidden_sizes": [16, 32],
    "depths": [1, 1],
    "num_stages": 2,
    "patch_size": 4,
    "num_labels": 10,
}
_VIT_LIKE: dict[str, Any] = {
    "image_size": 32,
    "patch_size": 8,
    "num_channels": 3,
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "num_labels": 10,
}


def _vision(config_cls: str, model_cls: str, **config: Any) -> ZooModel:
    """An image classifier on a 32x32 image, from `transformers`' `config_cls(**config)`."""
    tf = _transformers()
    return _finish(getattr(tf, model_cls)(getattr(tf, config_cls)(**config)), _images(_IMAGE))


def resnet() -> ZooModel:
    return _vision(
        "ResNetConfig", "ResNetForImageClassification", **_RESNET_LIKE, layer_type="basic"
    )


def convnext() -> ZooModel:
    return _vision("ConvNextConfig", "ConvNextForImageClassification", **_CONVNEXT_LIKE)


def vit() -> ZooModel:
    return _vision(
        "ViTConfig", "ViTForImageClassification", **_VIT_LIKE, attn_implementation="sdpa"
    )


def swin() -> ZooModel:
    tf = _transformers()
    config = tf.SwinConfig(
        image_size=32,
        patch_size=2,
        num_channels=3,
        embed_dim=16,
        depths=[2, 1],
        num_heads=[2, 4],
        window_size=4,
        mlp_ratio=2.0,
        num_labels=10,
    )
    return _finish(tf.SwinForImageClassification(config), _images(_IMAGE))


def mobilenet_v2() -> ZooModel:
    tf = _transformers()
    config = tf.MobileNetV2Config(
        num_channels=3,
        image_size=32,
        depth_multiplier=0.25,
        min_depth=8,
        expand_ratio=2.0,
        finegrained_output=False,
        num_labels=10,
    )
    return _finish(tf.MobileNetV2ForImageClassification(config), _images(_IMAGE))


def mobilevit() -> ZooModel:
    tf = _transformers()
    config = tf.MobileViTConfig(
        num_channels=3,
        image_size=32,
        patch_size=2,
        hidden_sizes=[16, 16, 16],
        neck_hidden_sizes=[8, 8, 16, 16, 16, 16, 32],
        num_attention_heads=2,
        mlp_ratio=2.0,
        num_labels=10,
    )
    return _finish(tf.MobileViTForImageClassification(config), _images(_IMAGE))


def levit() -> ZooModel:
    """LeViT: convolutional patch embedding, attention with subsampling stages; its
    export holds `reshape_as` (the op it once failed on at import). 64x64 images: the
    embedding divides by 16 and the two subsampling stages by 2 each."""
    tf = _transformers()
    config = tf.LevitConfig(
        image_size=64,
        patch_size=16,
        hidden_sizes=[32, 48, 64],
        num_attention_heads=[1, 2, 2],
        depths=[1, 1, 1],
        key_dim=[8, 8, 8],
        num_labels=10,
    )
    return _finish(tf.LevitForImageClassification(config), _images((1, 3, 64, 64)))


def wav2vec2() -> ZooModel:
    tf = _transformers()
    config = tf.Wav2Vec2Config(
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        conv_dim=(16, 16),
        conv_stride=(5, 2),
        conv_kernel=(10, 3),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=4,
        do_stable_layer_norm=False,
        feat_extract_norm="group",
        attn_implementation="sdpa",
    )
    return _finish(tf.Wav2Vec2Model(config), _images((1, 400)))


def whisper_encoder() -> ZooModel:
    tf = _transformers()
    config = tf.WhisperConfig(
        vocab_size=_VOCAB,
        num_mel_bins=16,
        d_model=32,
        encoder_layers=1,
        encoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_layers=1,
        decoder_attention_heads=2,
        decoder_ffn_dim=64,
        max_source_positions=16,
        max_target_positions=16,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=1,
        attn_implementation="sdpa",
    )
    encoder = tf.WhisperForConditionalGeneration(config).get_encoder()
    return _finish(encoder, _images((1, 16, 32)))


# ---------------------------------------------------------------------------
# Issue 22's additions: the architectures users export most that the first
# 21 did not cover. Same sizes as above; each builder names its config.
# ---------------------------------------------------------------------------


def olmo2() -> ZooModel:
    return _decoder("Olmo2Config", "Olmo2ForCausalLM", num_key_value_heads=2, pad_token_id=0)


def gemma3() -> ZooModel:
    return _decoder(
        "Gemma3TextConfig",
        "Gemma3ForCausalLM",
        attn="eager",
        num_key_value_heads=2,
        head_dim=16,
        sliding_window=4,
        query_pre_attn_scalar=16,
        pad_token_id=0,
    )


def qwen3() -> ZooModel:
    return _decoder("Qwen3Config", "Qwen3ForCausalLM", num_key_value_heads=2, head_dim=16)


def smollm3() -> ZooModel:
    return _decoder("SmolLM3Config", "SmolLM3ForCausalLM", num_key_value_heads=2, pad_token_id=0)


def granite() -> ZooModel:
    return _decoder("GraniteConfig", "GraniteForCausalLM", num_key_value_heads=2, pad_token_id=0)


def bloom() -> ZooModel:
    tf = _transformers()
    config = tf.BloomConfig(
        vocab_size=_VOCAB,
        hidden_size=64,
        n_layer=2,
        n_head=4,
        use_cache=False,
        bos_token_id=1,
        eos_token_id=2,
        attn_implementation="eager",
    )
    return _finish(tf.BloomForCausalLM(config), _tokens)


def _masked(tf_model: nn.Module) -> ZooModel:
    return _finish(tf_model, lambda seed: _tokens(seed, mask=True))


def deberta_v2() -> ZooModel:
    tf = _transformers()
    config = tf.DebertaV2Config(
        **_ENC,
        relative_attention=True,
        position_buckets=16,
        max_relative_positions=32,
        pos_att_type=["p2c", "c2p"],
        position_biased_input=False,
    )
    return _masked(tf.DebertaV2Model(config))


def albert() -> ZooModel:
    tf = _transformers()
    config = tf.AlbertConfig(**_ENC, embedding_size=32, attn_implementation="sdpa")
    return _masked(tf.AlbertModel(config, add_pooling_layer=False))


def mobilebert() -> ZooModel:
    tf = _transformers()
    config = tf.MobileBertConfig(
        **{**_ENC, "intermediate_size": 64},
        embedding_size=32,
        intra_bottleneck_size=32,
        num_feedforward_networks=2,
    )
    return _masked(tf.MobileBertModel(config, add_pooling_layer=False))


def electra() -> ZooModel:
    tf = _transformers()
    config = tf.ElectraConfig(**_ENC, embedding_size=32, attn_implementation="sdpa")
    return _masked(tf.ElectraModel(config))


def _seq2seq(seed: int) -> Inputs:
    """Encoder tokens with a padding mask, and decoder tokens (half as many)."""
    tokens, attention = _tokens(seed, mask=True)
    gen = torch.Generator().manual_seed(seed + 1000)
    return tokens, attention, torch.randint(0, _VOCAB, (1, _SEQ // 2), generator=gen)


def t5() -> ZooModel:
    """T5 encoder-decoder: the decoder's logits given the encoder's tokens."""
    tf = _transformers()
    config = tf.T5Config(
        vocab_size=_VOCAB,
        d_model=64,
        d_kv=16,
        d_ff=128,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        relative_attention_num_buckets=8,
        relative_attention_max_distance=16,
        use_cache=False,
        decoder_start_token_id=0,
        attn_implementation="eager",
    )
    return _finish(tf.T5ForConditionalGeneration(config), _seq2seq)


def bart() -> ZooModel:
    tf = _transformers()
    config = tf.BartConfig(
        vocab_size=_VOCAB,
        d_model=64,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        max_position_embeddings=64,
        use_cache=False,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        decoder_start_token_id=2,
        attn_implementation="sdpa",
    )
    return _finish(tf.BartForConditionalGeneration(config), _seq2seq)


def efficientnet() -> ZooModel:
    tf = _transformers()
    config = tf.EfficientNetConfig(
        num_channels=3,
        image_size=32,
        width_coefficient=0.25,
        depth_coefficient=0.25,
        kernel_sizes=[3, 3, 5],
        in_channels=[32, 16, 24],
        out_channels=[16, 24, 40],
        depthwise_padding=[],
        strides=[1, 2, 2],
        num_block_repeats=[1, 1, 1],
        expand_ratios=[1, 6, 6],
        hidden_dim=320,  # the head's width: round_filters(1280 x 0.25)
        num_labels=10,
    )
    return _finish(tf.EfficientNetForImageClassification(config), _images(_IMAGE))


def regnet() -> ZooModel:
    return _vision(
        "RegNetConfig",
        "RegNetForImageClassification",
        **_RESNET_LIKE,
        groups_width=8,
        layer_type="y",
    )


def convnext_v2() -> ZooModel:
    return _vision("ConvNextV2Config", "ConvNextV2ForImageClassification", **_CONVNEXT_LIKE)


def deit() -> ZooModel:
    return _vision(
        "DeiTConfig",
        "DeiTForImageClassificationWithTeacher",
        **_VIT_LIKE,
        attn_implementation="sdpa",
    )


def segformer() -> ZooModel:
    tf = _transformers()
    config = tf.SegformerConfig(
        num_channels=3,
        num_encoder_blocks=2,
        depths=[1, 1],
        sr_ratios=[2, 1],
        hidden_sizes=[16, 32],
        patch_sizes=[7, 3],
        strides=[4, 2],
        num_attention_heads=[1, 2],
        mlp_ratios=[2, 2],
        decoder_hidden_size=32,
        num_labels=4,
    )
    return _finish(tf.SegformerForSemanticSegmentation(config), _images(_IMAGE))


def detr() -> ZooModel:
    """DETR with its convolutional backbone built by transformers (a tiny ResNet,
    no timm): the class logits of 8 object queries."""
    tf = _transformers()
    backbone = tf.ResNetConfig(
        num_channels=3,
        embedding_size=16,
        hidden_sizes=[16, 32],
        depths=[1, 1],
        layer_type="basic",
        out_features=["stage2"],
    )
    config = tf.DetrConfig(
        use_timm_backbone=False,
        use_pretrained_backbone=False,
        backbone=None,
        backbone_config=backbone,
        num_queries=8,
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        num_labels=4,
        auxiliary_loss=False,
    )
    return _finish(tf.DetrForObjectDetection(config), _images((1, 3, 64, 64)), "pixel_values")


def _audio(model: nn.Module) -> ZooModel:
    return _finish(model, _images((1, 400)))


_SPEECH: dict[str, Any] = {
    "hidden_size": 32,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "conv_dim": (16, 16),
    "conv_stride": (5, 2),
    "conv_kernel": (10, 3),
    "num_conv_pos_embeddings": 16,
    "num_conv_pos_embedding_groups": 4,
    "do_stable_layer_norm": False,
    "feat_extract_norm": "group",
}


def wavlm() -> ZooModel:
    tf = _transformers()
    config = tf.WavLMConfig(**_SPEECH, num_buckets=16, max_bucket_distance=32)
    return _audio(tf.WavLMModel(config))


def hubert() -> ZooModel:
    tf = _transformers()
    return _audio(tf.HubertModel(tf.HubertConfig(**_SPEECH, attn_implementation="sdpa")))


ARCHITECTURES: dict[str, Callable[[], ZooModel]] = {
    "llama": llama,
    "mistral": mistral,
    "qwen2": qwen2,
    "phi3": phi3,
    "gemma2": gemma2,
    "gpt2": gpt2,
    "gpt_neox": gpt_neox,
    "opt": opt,
    "falcon": falcon,
    "bert": bert,
    "roberta": roberta,
    "distilbert": distilbert,
    "t5_encoder": t5_encoder,
    "resnet": resnet,
    "convnext": convnext,
    "vit": vit,
    "swin": swin,
    "mobilenet_v2": mobilenet_v2,
    "mobilevit": mobilevit,
    "wav2vec2": wav2vec2,
    "whisper_encoder": whisper_encoder,
    "olmo2": olmo2,
    "gemma3": gemma3,
    "qwen3": qwen3,
    "smollm3": smollm3,
    "granite": granite,
    "bloom": bloom,
    "deberta_v2": deberta_v2,
    "albert": albert,
    "mobilebert": mobilebert,
    "electra": electra,
    "t5": t5,
    "bart": bart,
    "efficientnet": efficientnet,
    "regnet": regnet,
    "convnext_v2": convnext_v2,
    "deit": deit,
    "segformer": segformer,
    "detr": detr,
    "wavlm": wavlm,
    "hubert": hubert,
    "levit": levit,
}

FAMILIES: dict[str, str] = {
    **{n: "decoder" for n in ("llama", "mistral", "qwen2", "phi3", "gemma2", "gpt2")},
    **{n: "decoder" for n in ("gpt_neox", "opt", "falcon")},
    **{n: "encoder" for n in ("bert", "roberta", "distilbert", "t5_encoder")},
    **{n: "vision" for n in ("resnet", "convnext", "vit", "swin", "mobilenet_v2", "mobilevit")},
    **{n: "audio" for n in ("wav2vec2", "whisper_encoder")},
    **{n: "decoder" for n in ("olmo2", "gemma3", "qwen3", "smollm3", "granite", "bloom")},
    **{n: "encoder" for n in ("deberta_v2", "albert", "mobilebert", "electra")},
    **{n: "seq2seq" for n in ("t5", "bart")},
    **{n: "vision" for n in ("efficientnet", "regnet", "convnext_v2", "deit", "segformer")},
    **{n: "vision" for n in ("detr", "levit")},
    **{n: "audio" for n in ("wavlm", "hubert")},
}


def build(name: str, seed: int = 0) -> ZooModel:
    """Build architecture `name` with weights drawn from `seed` (the global RNG is
    restored afterwards); BatchNorm statistics are randomized so they matter."""
    if name not in ARCHITECTURES:
        raise QoptError(f"unknown zoo architecture {name!r}; known: {', '.join(ARCHITECTURES)}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model, inputs, make = ARCHITECTURES[name]()
        gen = torch.Generator().manual_seed(seed + 1)
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, nn.BatchNorm2d) and m.running_mean is not None:
                    m.running_mean.uniform_(-0.5, 0.5, generator=gen)
                    assert m.running_var is not None
                    m.running_var.uniform_(0.5, 2.0, generator=gen)
    return model, inputs, make


# ---------------------------------------------------------------------------
# Cells: one (architecture, scheme) exported, run on one target against torch
# ---------------------------------------------------------------------------

TARGETS = ("interp", "coreml", "vulkan")


class NotApplicable(Exception):
    """torch/torchao cannot produce this (architecture, scheme) pair: the reason."""


def export(name: str, scheme: str) -> tuple[torch.export.ExportedProgram, Inputs]:
    """Quantize architecture `name` under `scheme` (qopt.examples.apply_scheme,
    calibrated on two fresh inputs) and export it; returns the program and fresh
    inputs (seed 99) to check it on. Raises NotApplicable when torch or torchao
    fails (before qopt is involved) or the scheme finds no layer to quantize."""
    model, inputs, make = build(name)
    try:
        with torch.random.fork_rng(devices=[]):
            qmodel = apply_scheme(model, scheme, inputs, [make(1), make(2)])
            with torch.no_grad():
                ep = torch.export.export(qmodel, inputs, strict=False)
    except Exception as exc:  # torch's or torchao's own failure
        raise NotApplicable(f"{scheme} fails in torch/torchao: {_first_line(exc)}") from exc
    if scheme != "float" and not _quantized(ep):
        raise NotApplicable(f"{scheme} finds no layer to quantize")
    return ep, make(99)


def _quantized(ep: torch.export.ExportedProgram) -> bool:
    targets = (str(node.target) for node in ep.graph.nodes if node.op == "call_function")
    return any("quantize" in t or "codebook" in t or "choose_qparams" in t for t in targets)


def _first_line(exc: BaseException, limit: int = 160) -> str:
    """The message's first line; a heading that ends in ':' ("3 unsupported op(s) in
    the exported program:") with its first item, which names the op."""
    # paths into site-packages shortened to the package's ("transformers/models/...")
    message = re.sub(r"\S*/site-packages/", "", str(exc))
    text = [t.strip() for t in message.strip().splitlines() if t.strip()]
    line = text[0] if text else ""
    if line.endswith(":") and len(text) > 1:
        line = f"{line} {text[1]}"
    return line if len(line) <= limit else line[: limit - 3] + "..."


def tolerance(scheme: str, target: str) -> float:
    """Relative L2 error allowed against the quantized torch model. Float and
    weight-only programs agree to float rounding (the targets' sums run in another
    order). With quantized activations a value that float rounding moves across a
    rounding boundary quantizes one step apart (qwen2 8da4w on the seed-99 input:
    8.1e-4 on every target, 1.7e-7 on seeds 0-3; teacher-forced, every op agrees
    with torch to 2e-7), and that step propagates: dynamic schemes get 1e-3, static
    ones (requantized between layers) 1e-2, as tests/unit/models do."""
    if scheme.startswith("pt2e_static"):
        return 1e-2
    if scheme in ("8da4w", "pt2e_dynamic"):
        return 1e-3
    return 1e-5 if target == "interp" else 1e-4


def run(ep: torch.export.ExportedProgram, inputs: Inputs, target: str, workdir: Any) -> np.ndarray:
    """The program's first output on `target`: `interp` interprets the fused import
    level, `coreml` saves the package, reads it back and interprets it (no Core ML
    runtime on Linux), `vulkan` runs the compiled program on the Vulkan device."""
    if target == "interp":
        return qopt.interpret(qopt.fuse(qopt.import_program(ep)), *inputs)[0]
    if target == "coreml":
        from pathlib import Path

        path = Path(workdir) / "m.mlpackage"
        qopt.compile(ep, target="coreml", compute_precision="fp32").save(path)
        return qopt.interpret(qopt.read_mlpackage(path), *inputs)[0]
    if target == "vulkan":
        with qopt.compile(ep, target="vulkan") as artifact:
            return artifact(*inputs)[0]
    raise ValueError(f"unknown target {target!r}; known: {', '.join(TARGETS)}")


def check(
    ep: torch.export.ExportedProgram, inputs: Inputs, scheme: str, target: str, workdir: Any
) -> dict[str, Any]:
    """One cell: {"status": pass | wrong | unsupported | crash, "detail": text,
    "rel": relative L2 error, "max_abs": max abs error} against torch on `inputs`."""
    with torch.no_grad():
        want = ep.module()(*inputs).detach().numpy()
    try:
        got = run(ep, inputs, target, workdir)
    except QoptError as exc:
        return {"status": "unsupported", "detail": _first_line(exc, 200)}
    except Exception as exc:
        return {"status": "crash", "detail": f"{type(exc).__name__}: {_first_line(exc)}"}
    got = np.asarray(got)
    if got.shape != want.shape:
        return {"status": "wrong", "detail": f"shape {got.shape} != torch's {want.shape}"}
    diff = np.abs(got.astype(np.float64) - want)
    max_abs = float(np.max(diff)) if diff.size else 0.0
    norm = float(np.linalg.norm(want.astype(np.float64)))
    rel = float(np.linalg.norm(diff) / norm) if norm else max_abs
    if not np.isfinite(rel):
        rel = float("inf")
    status = "pass" if rel <= tolerance(scheme, target) else "wrong"
    return {"status": status, "detail": "", "rel": rel, "max_abs": max_abs}
