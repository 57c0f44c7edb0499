"""Small example models and quantization schemes used to exercise qopt.

Every (model, scheme) pair produces a ``torch.export.ExportedProgram`` whose
graph contains the quantization idioms emitted by torch / torchao:

* ``float``         -- plain export, no quantization.
* ``pt2e_static``   -- torchao PT2E with the XNNPACK-style quantizer
                       (static per-tensor activations, per-channel weights).
* ``pt2e_dynamic``  -- same, dynamic activation quantization.
* ``w4g32``         -- ``IntxWeightOnlyConfig`` int4, group size 32.
* ``w8c``           -- ``IntxWeightOnlyConfig`` int8, per output channel.
* ``8da4w``         -- ``Int8DynamicActivationIntxWeightConfig`` int4/g32 on
                       Linear, plus int4/g32 weight-only on Embedding.
* ``codebook4``/``codebook3`` -- torchao prototype CoreML codebook (LUT)
                       weight-only quantization, block ``[-1, 16]``.

All builders are deterministic for a given ``seed`` and never disturb the
global RNG state.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable
from typing import cast

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = [
    "MODELS",
    "NOOP_PAIRS",
    "SCHEMES",
    "EfficientNetLike",
    "LlamaConfig",
    "TinyConvNet",
    "TinyLlama",
    "TinyMLP",
    "apply_scheme",
    "build_efficientnet_like",
    "build_model",
    "export_model",
    "quantize_model",
    "random_inputs",
    "supported",
]

MODELS = ("llama", "mlp", "convnet")
SCHEMES = (
    "float",
    "pt2e_static",
    "pt2e_dynamic",
    "w4g32",
    "w8c",
    "8da4w",
    "codebook4",
    "codebook3",
)

# Pairs that are *supported* but where the scheme's filter matches no module,
# so the exported graph equals the float one. None today: the convnet's
# classifier has K = 32 so that every weight-only scheme has a layer to quantize.
NOOP_PAIRS: frozenset[tuple[str, str]] = frozenset()

# Number of calibration batches used for PT2E static quantization.
_NUM_CALIBRATION_BATCHES = 4


# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    x1 = x[..., :half]
    x2 = x[..., half:]
    return torch.cat((-x2, x1), dim=-1)


class LlamaConfig:
    def __init__(
        self,
        vocab_size: int = 256,
        dim: int = 64,
        n_layers: int = 2,
        n_heads: int = 4,
        hidden_dim: int = 128,
        max_seq_len: int = 64,
        rope_theta: float = 10000.0,
        norm_eps: float = 1e-5,
    ):
        self.vocab_size = vocab_size
        self.dim = dim
        self.n_layers = n_layers
        self.n_heads = n_heads
        self.head_dim = dim // n_heads
        self.hidden_dim = hidden_dim
        self.max_seq_len = max_seq_len
        self.rope_theta = rope_theta
        self.norm_eps = norm_eps


class Attention(nn.Module):
    def __init__(self, cfg: LlamaConfig, rope: bool, use_sdpa: bool):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.head_dim = cfg.head_dim
        self.rope = rope
        self.use_sdpa = use_sdpa
        d = cfg.dim
        self.wq = nn.Linear(d, cfg.n_heads * cfg.head_dim, bias=False)
        self.wk = nn.Linear(d, cfg.n_heads * cfg.head_dim, bias=False)
        self.wv = nn.Linear(d, cfg.n_heads * cfg.head_dim, bias=False)
        self.wo = nn.Linear(cfg.n_heads * cfg.head_dim, d, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        bsz, seqlen, _ = x.shape
        q = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        if self.rope:
            q = q * cos + _rotate_half(q) * sin
            k = k * cos + _rotate_half(k) * sin
        if self.use_sdpa:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
            mask = torch.ones(seqlen, seqlen, dtype=torch.bool, device=x.device).tril()
            scores = scores.masked_fill(~mask, float("-inf"))
            probs = torch.softmax(scores, dim=-1)
            out = torch.matmul(probs, v)
        out = out.transpose(1, 2).reshape(bsz, seqlen, self.n_heads * self.head_dim)
        return self.wo(out)


class FeedForward(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.w1 = nn.Linear(cfg.dim, cfg.hidden_dim, bias=False)
        self.w3 = nn.Linear(cfg.dim, cfg.hidden_dim, bias=False)
        self.w2 = nn.Linear(cfg.hidden_dim, cfg.dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class DecoderBlock(nn.Module):
    def __init__(self, cfg: LlamaConfig, rope: bool, use_sdpa: bool):
        super().__init__()
        self.attention_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.attention = Attention(cfg, rope, use_sdpa)
        self.ffn_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.feed_forward = FeedForward(cfg)

    def forward(self, x, cos, sin):
        h = x + self.attention(self.attention_norm(x), cos, sin)
        return h + self.feed_forward(self.ffn_norm(h))


class TinyLlama(nn.Module):
    """Llama-style decoder-only transformer in plain torch.

    ``rope``: apply rotary position embeddings (rotate_half style) to q/k.
    ``use_sdpa``: causal attention through ``F.scaled_dot_product_attention``
    (``is_causal=True``); otherwise explicit matmul + boolean causal mask +
    softmax.
    """

    rope_cos: torch.Tensor
    rope_sin: torch.Tensor

    def __init__(
        self,
        cfg: LlamaConfig | None = None,
        rope: bool = True,
        use_sdpa: bool = True,
    ):
        super().__init__()
        cfg = cfg or LlamaConfig()
        self.cfg = cfg
        self.rope = rope
        self.use_sdpa = use_sdpa
        self.tok_embeddings = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.layers = nn.ModuleList(
            [DecoderBlock(cfg, rope, use_sdpa) for _ in range(cfg.n_layers)]
        )
        self.norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.output = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)
        # Precomputed rotary tables (non-persistent buffers -> exported as
        # constant buffers).
        inv_freq = 1.0 / (
            cfg.rope_theta ** (torch.arange(0, cfg.head_dim, 2, dtype=torch.float32) / cfg.head_dim)
        )
        t = torch.arange(cfg.max_seq_len, dtype=torch.float32)
        freqs = torch.outer(t, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("rope_cos", emb.cos(), persistent=False)
        self.register_buffer("rope_sin", emb.sin(), persistent=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        seqlen = tokens.shape[1]
        h = self.tok_embeddings(tokens)
        cos = self.rope_cos[:seqlen]
        sin = self.rope_sin[:seqlen]
        for layer in self.layers:
            h = layer(h, cos, sin)
        return self.output(self.norm(h))


class KVCacheAttention(nn.Module):
    """ExecuTorch-style attention over a KV cache kept in registered buffers
    (examples/models/llama/attention.py): the S new keys and values are written at
    `input_pos` in place (`update="index_put"`: `cache[:, :, input_pos] = k`, the
    static-shape export; `"index_copy"`: `cache.index_copy_(2, input_pos, k)`;
    `"narrow"`: `cache.narrow(2, start, S).copy_(k)` at the run-time scalar `start =
    input_pos[0].item()`, ExecuTorch's dynamic-shape path), then attention reads the
    whole cache under the mask rows of `input_pos`; grouped-query attention repeats
    each key/value head with `repeat_interleave`."""

    def __init__(self, cfg: LlamaConfig, n_kv_heads: int, update: str):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = cfg.n_heads, n_kv_heads, cfg.head_dim
        self.update = update
        d = cfg.dim
        self.wq = nn.Linear(d, cfg.n_heads * cfg.head_dim, bias=False)
        self.wk = nn.Linear(d, n_kv_heads * cfg.head_dim, bias=False)
        self.wv = nn.Linear(d, n_kv_heads * cfg.head_dim, bias=False)
        self.wo = nn.Linear(cfg.n_heads * cfg.head_dim, d, bias=False)
        cache = (1, n_kv_heads, cfg.max_seq_len, cfg.head_dim)
        self.register_buffer("k_cache", torch.zeros(cache))
        self.register_buffer("v_cache", torch.zeros(cache))

    k_cache: torch.Tensor
    v_cache: torch.Tensor

    def forward(self, x, input_pos, mask, cos, sin, start: int | None = None):
        bsz, seqlen, _ = x.shape
        q = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        if self.update == "index_put":
            self.k_cache[:, :, input_pos] = k
            self.v_cache[:, :, input_pos] = v
        elif self.update == "narrow":
            assert start is not None  # the model passes `.item()` of the first position
            self.k_cache.narrow(2, start, seqlen).copy_(k)
            self.v_cache.narrow(2, start, seqlen).copy_(v)
        else:
            self.k_cache.index_copy_(2, input_pos, k)
            self.v_cache.index_copy_(2, input_pos, v)
        rep = self.n_heads // self.n_kv_heads
        keys = self.k_cache.repeat_interleave(rep, dim=1)
        values = self.v_cache.repeat_interleave(rep, dim=1)
        out = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask)
        out = out.transpose(1, 2).reshape(bsz, seqlen, self.n_heads * self.head_dim)
        return self.wo(out)


class KVCacheBlock(nn.Module):
    def __init__(self, cfg: LlamaConfig, n_kv_heads: int, update: str):
        super().__init__()
        self.attention_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.attention = KVCacheAttention(cfg, n_kv_heads, update)
        self.ffn_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.feed_forward = FeedForward(cfg)

    def forward(self, x, input_pos, mask, cos, sin, start: int | None = None):
        h = x + self.attention(self.attention_norm(x), input_pos, mask, cos, sin, start)
        return h + self.feed_forward(self.ffn_norm(h))


class KVCacheLlama(nn.Module):
    """A Llama decoder that keeps its KV cache between calls, as ExecuTorch exports
    LLMs: `forward(tokens [1, S] int64, input_pos [S] int64) -> logits [1, S, V]`
    writes the S positions `input_pos` of every layer's cache (in-place buffer
    mutation) and attends over the cache with the causal mask rows `mask[input_pos]`
    (a registered buffer) and rotary tables `cos[input_pos]`. One call per prefill
    or decode step; `update` picks the cache write (`KVCacheAttention`). With
    `update="narrow"` it reads the positions as ExecuTorch's dynamic-shape export does:
    `start = input_pos[0].item()` (checked: `_check_is_size(start)`, `start <
    max_seq_len`), the mask and rotary rows as `narrow(0, start, S)`; the S positions
    must then be `start, start + 1, ...`."""

    def __init__(self, cfg: LlamaConfig, n_kv_heads: int = 2, update: str = "index_put"):
        super().__init__()
        if update not in ("index_put", "index_copy", "narrow"):
            raise ValueError(
                f"update must be 'index_put', 'index_copy' or 'narrow', got {update!r}"
            )
        self.update = update
        self.max_seq_len = cfg.max_seq_len
        self.tok_embeddings = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.layers = nn.ModuleList(
            KVCacheBlock(cfg, n_kv_heads, update) for _ in range(cfg.n_layers)
        )
        self.norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.output = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)
        inv_freq = 1.0 / (
            cfg.rope_theta ** (torch.arange(0, cfg.head_dim, 2, dtype=torch.float32) / cfg.head_dim)
        )
        freqs = torch.outer(torch.arange(cfg.max_seq_len, dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("rope_cos", emb.cos())
        self.register_buffer("rope_sin", emb.sin())
        length = cfg.max_seq_len
        self.register_buffer("mask", torch.full((length, length), float("-inf")).triu(1))

    rope_cos: torch.Tensor
    rope_sin: torch.Tensor
    mask: torch.Tensor

    def forward(self, tokens: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
        h = self.tok_embeddings(tokens)
        start: int | None = None
        if self.update == "narrow":
            seqlen = tokens.shape[1]
            start = cast(int, input_pos[0].item())  # a SymInt while exporting
            with warnings.catch_warnings():  # torch 2.13 deprecates it; ExecuTorch calls it
                warnings.simplefilter("ignore", FutureWarning)
                torch._check_is_size(start)
            torch._check(start < self.max_seq_len)
            mask = self.mask.narrow(0, start, seqlen)
            cos = self.rope_cos.narrow(0, start, seqlen)
            sin = self.rope_sin.narrow(0, start, seqlen)
        else:
            mask = self.mask[input_pos]
            cos, sin = self.rope_cos[input_pos], self.rope_sin[input_pos]
        for layer in self.layers:
            h = layer(h, input_pos, mask, cos, sin, start)
        return self.output(self.norm(h))


def build_kv_llama(seed: int = 0, update: str = "index_put", **config: int) -> KVCacheLlama:
    """A `KVCacheLlama` with seeded random weights (a `LlamaConfig` from `config`)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return KVCacheLlama(LlamaConfig(**config), update=update).eval()


class TinyMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc2 = nn.Linear(128, 128)
        self.fc3 = nn.Linear(128, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.fc1(x))
        x = F.gelu(self.fc2(x))
        return self.fc3(x)


class TinyConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        # residual branch: 1x1 conv on the same input, added to conv3's output
        self.conv3 = nn.Conv2d(16, 32, 3, padding=1)
        self.skip = nn.Conv2d(16, 32, 1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))  # [1, 16, 8, 8]
        x = F.relu(self.conv3(x)) + self.skip(x)  # residual add of two branches
        x = self.pool(x)  # [1, 32, 4, 4]
        x = F.adaptive_avg_pool2d(x, 1)  # [1, 32, 1, 1]
        x = torch.flatten(x, 1)
        return self.fc(x)


class _SqueezeExcite(nn.Module):
    """mean -> conv -> SiLU -> conv -> sigmoid -> mul, as EfficientNet's."""

    def __init__(self, channels: int, reduced: int):
        super().__init__()
        self.reduce = nn.Conv2d(channels, reduced, 1)
        self.expand = nn.Conv2d(reduced, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = x.mean((2, 3), keepdim=True)
        return x * torch.sigmoid(self.expand(F.silu(self.reduce(s))))


class _MBConv(nn.Module):
    """EfficientNet's block: [1x1 expand + BN + SiLU], TF "same" ZeroPad2d, depthwise
    conv (no padding of its own) + BN + SiLU, squeeze-excitation, 1x1 project + BN,
    residual add when the shape allows."""

    def __init__(self, cin: int, cout: int, kernel: int, stride: int, expand: int):
        super().__init__()
        mid = cin * expand
        self.expand = (
            nn.Sequential(nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.SiLU())
            if expand != 1
            else nn.Identity()
        )
        total = max(kernel - stride, 0)  # TF "same" on an even input: more right / bottom
        lo, hi = total // 2, total - total // 2
        self.pad = nn.ZeroPad2d((lo, hi, lo, hi))
        self.depthwise = nn.Sequential(
            nn.Conv2d(mid, mid, kernel, stride, groups=mid, bias=False),
            nn.BatchNorm2d(mid),
            nn.SiLU(),
        )
        self.se = _SqueezeExcite(mid, max(1, cin // 4))
        self.project = nn.Sequential(nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.project(self.se(self.depthwise(self.pad(self.expand(x)))))
        return x + y if self.residual else y


class EfficientNetLike(nn.Module):
    """A tiny EfficientNet (32x32 images, 10 classes): ZeroPad2d stem, four MBConv
    blocks (3x3 and 5x5 depthwise, strides 1 and 2), 1x1 head, global pool, linear."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(
            nn.ZeroPad2d((0, 1, 0, 1)),
            nn.Conv2d(3, 8, 3, 2, bias=False),
            nn.BatchNorm2d(8),
            nn.SiLU(),
        )
        self.blocks = nn.Sequential(
            _MBConv(8, 8, 3, 1, 1),
            _MBConv(8, 12, 3, 2, 4),
            _MBConv(12, 12, 3, 1, 4),
            _MBConv(12, 16, 5, 2, 4),
        )
        self.head = nn.Sequential(nn.Conv2d(16, 32, 1, bias=False), nn.BatchNorm2d(32), nn.SiLU())
        self.fc = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.head(self.blocks(self.stem(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))


def build_efficientnet_like(
    seed: int = 0,
) -> tuple[nn.Module, Callable[[int], tuple[torch.Tensor, ...]]]:
    """The eval-mode `EfficientNetLike` (weights and BatchNorm statistics drawn from
    `seed`; the global RNG is left as it was) and a function of a seed giving an
    input image [1, 3, 32, 32]. Not one of MODELS: the fusion and Vulkan-exactness
    tests and the fuse-quant report use it."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        model = EfficientNetLike().eval()
    gen = torch.Generator().manual_seed(int(seed) + 1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                cast(torch.Tensor, m.running_mean).uniform_(-0.5, 0.5, generator=gen)
                cast(torch.Tensor, m.running_var).uniform_(0.5, 2.0, generator=gen)

    def image(s: int) -> tuple[torch.Tensor, ...]:
        return (torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(int(s))),)

    return model, image


_INPUT_SPECS = {
    # name -> list of (shape, dtype, high) ; high only used for integer inputs
    "llama": [((1, 16), torch.int64, 256)],
    "mlp": [((4, 64), torch.float32, None)],
    "convnet": [((1, 3, 16, 16), torch.float32, None)],
}


def _check_model(name: str) -> None:
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; expected one of {MODELS}")


def _check_scheme(scheme: str) -> None:
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; expected one of {SCHEMES}")


def random_inputs(name: str, seed: int = 0) -> tuple[torch.Tensor, ...]:
    """Fresh random inputs with the model's input shapes/dtypes."""
    _check_model(name)
    g = torch.Generator().manual_seed(int(seed))
    out = []
    for shape, dtype, high in _INPUT_SPECS[name]:
        if dtype.is_floating_point:
            out.append(torch.randn(shape, generator=g, dtype=dtype))
        else:
            out.append(torch.randint(0, high, shape, generator=g, dtype=dtype))
    return tuple(out)


def build_model(name: str, seed: int = 0, **kwargs) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Build the eval-mode float model ``name`` and its example inputs.

    Deterministic for a given seed; the global RNG state is left untouched.
    Extra keyword arguments are forwarded to the model constructor (e.g.
    ``rope=False`` / ``use_sdpa=False`` for "llama").
    """
    _check_model(name)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        if name == "llama":
            model = TinyLlama(**kwargs)
            # nn.Embedding inits N(0,1), Linear kaiming-uniform: fine as is.
        elif name == "mlp":
            model = TinyMLP(**kwargs)
        else:
            model = TinyConvNet(**kwargs)
    model.eval()
    return model, random_inputs(name, seed)


# ---------------------------------------------------------------------------
# Quantization schemes
# ---------------------------------------------------------------------------


def _in_features(mod: nn.Module) -> int | None:
    """Reduction (group) dim of a Linear/Embedding weight, else None."""
    if isinstance(mod, (nn.Linear, nn.Embedding)):
        w = mod.weight
        if isinstance(w, torch.Tensor) and w.dim() == 2:
            return int(w.shape[-1])
    return None


def _linear_filter(divisor: int = 1) -> Callable[[nn.Module, str], bool]:
    def fn(mod: nn.Module, fqn: str) -> bool:
        return isinstance(mod, nn.Linear) and mod.weight.shape[-1] % divisor == 0

    return fn


def _embedding_filter(divisor: int = 1) -> Callable[[nn.Module, str], bool]:
    def fn(mod: nn.Module, fqn: str) -> bool:
        return isinstance(mod, nn.Embedding) and mod.weight.shape[-1] % divisor == 0

    return fn


def _linear_or_embedding_filter(divisor: int = 1) -> Callable[[nn.Module, str], bool]:
    def fn(mod: nn.Module, fqn: str) -> bool:
        k = _in_features(mod)
        return k is not None and k % divisor == 0

    return fn


# Reasons for (model, scheme) pairs that torch/torchao cannot produce.  Every
# pair has been tried with torch 2.13 / torchao 0.18; see supported().
_UNSUPPORTED: dict[tuple[str, str], str] = {}


def supported(name: str, scheme: str) -> str | None:
    """None if the pair can be produced, else a one-line reason."""
    _check_model(name)
    _check_scheme(scheme)
    return _UNSUPPORTED.get((name, scheme))


def _calibration_inputs(name: str, seed: int) -> list[tuple[torch.Tensor, ...]]:
    return [random_inputs(name, 1000 + 97 * int(seed) + i) for i in range(_NUM_CALIBRATION_BATCHES)]


def _pt2e(
    model: nn.Module,
    inputs: tuple[torch.Tensor, ...],
    calibration: list[tuple[torch.Tensor, ...]],
    dynamic: bool,
) -> nn.Module:
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.testing.pt2e._xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )

    quantizer = XNNPACKQuantizer().set_global(
        get_symmetric_quantization_config(is_per_channel=True, is_dynamic=dynamic)
    )
    m = torch.export.export(model, inputs, strict=False).module()
    m = prepare_pt2e(m, quantizer)
    with torch.no_grad():
        for batch in calibration:
            m(*batch)
    return convert_pt2e(m)


def quantize_model(
    name: str,
    scheme: str,
    model: nn.Module,
    example_inputs: tuple[torch.Tensor, ...],
    seed: int = 0,
) -> nn.Module:
    """Return a quantized copy of ``model`` (the eager module that gets exported).

    For the PT2E schemes this is the converted ``GraphModule`` (note: after the
    second export its original float weights remain as *unused* PARAMETER
    placeholders; the int8 weights are ``_frozen_param*`` BUFFERs and PT2E leaves
    ``nn.Embedding`` float).  For the torchao
    ``quantize_`` schemes it is a deepcopy with tensor-subclass weights.
    The caller's model is never modified.
    """
    _check_model(name)
    _check_scheme(scheme)
    reason = supported(name, scheme)
    if reason is not None:
        raise ValueError(reason)

    return apply_scheme(model, scheme, example_inputs, _calibration_inputs(name, seed), seed)


def apply_scheme(
    model: nn.Module,
    scheme: str,
    example_inputs: tuple[torch.Tensor, ...],
    calibration_inputs: list[tuple[torch.Tensor, ...]] | None = None,
    seed: int = 0,
) -> nn.Module:
    """Quantize a copy of any model under ``scheme`` (the caller's model is not
    modified). PT2E schemes calibrate on ``calibration_inputs`` (default: the
    example inputs). Filters select Linear/Embedding layers whose K fits."""
    _check_scheme(scheme)
    calibration = calibration_inputs if calibration_inputs is not None else [example_inputs]
    model = copy.deepcopy(model).eval()
    if scheme == "float":
        return model
    if scheme in ("pt2e_static", "pt2e_dynamic"):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            return _pt2e(model, example_inputs, calibration, scheme == "pt2e_dynamic")

    from torchao.quantization import (
        Int8DynamicActivationIntxWeightConfig,
        IntxWeightOnlyConfig,
        PerAxis,
        PerGroup,
        quantize_,
    )

    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(int(seed))
        if scheme == "w4g32":
            quantize_(
                model,
                IntxWeightOnlyConfig(weight_dtype=getattr(torch, "int4"), granularity=PerGroup(32)),
                filter_fn=_linear_or_embedding_filter(32),
            )
        elif scheme == "w8c":
            quantize_(
                model,
                IntxWeightOnlyConfig(weight_dtype=torch.int8, granularity=PerAxis(0)),
                filter_fn=_linear_or_embedding_filter(1),
            )
        elif scheme == "8da4w":
            quantize_(
                model,
                IntxWeightOnlyConfig(weight_dtype=getattr(torch, "int4"), granularity=PerGroup(32)),
                filter_fn=_embedding_filter(32),
            )
            quantize_(
                model,
                Int8DynamicActivationIntxWeightConfig(
                    weight_dtype=getattr(torch, "int4"), weight_granularity=PerGroup(32)
                ),
                filter_fn=_linear_filter(32),
            )
        elif scheme in ("codebook4", "codebook3"):
            from torchao.prototype.quantization.codebook_coreml import (
                CodebookWeightOnlyConfig,
            )

            dtype = getattr(torch, "uint4" if scheme == "codebook4" else "uint3")
            quantize_(
                model,
                CodebookWeightOnlyConfig(dtype=dtype, block_size=[-1, 16]),
                filter_fn=_linear_or_embedding_filter(16),
            )
        else:  # pragma: no cover - guarded by _check_scheme
            raise AssertionError(scheme)
    return model


def export_model(
    name: str,
    scheme: str,
    seed: int = 0,
    model: nn.Module | None = None,
    example_inputs: tuple[torch.Tensor, ...] | None = None,
) -> torch.export.ExportedProgram:
    """Build (or take) model ``name``, apply ``scheme`` and export it.

    Raises ``ValueError(reason)`` for pairs where ``supported`` returns a
    reason.
    """
    _check_model(name)
    _check_scheme(scheme)
    reason = supported(name, scheme)
    if reason is not None:
        raise ValueError(reason)
    if model is None or example_inputs is None:
        built, built_inputs = build_model(name, seed)
        model = built if model is None else model
        example_inputs = built_inputs if example_inputs is None else example_inputs
    example_inputs = tuple(example_inputs)
    qmodel = quantize_model(name, scheme, model, example_inputs, seed)
    with torch.no_grad():
        return torch.export.export(qmodel, example_inputs, strict=False)
