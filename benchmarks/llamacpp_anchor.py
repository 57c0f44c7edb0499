"""qopt next to llama.cpp's Vulkan backend: the same model on the same device, in one run.

The anchor for `benchmarks/e2e.py`'s numbers: llama.cpp is a mature int4 LLM runtime,
and on the same Vulkan device (lavapipe on a machine without a GPU) its tokens/s say
how far qopt's kernels are from what that device can do.

The model is e2e.py's: `qopt.examples.TinyLlama` seeded with 0 (by default the 336M
decoder: dim 2048, FFN 5632, 16 heads, 4 layers, vocab 32000; `--quick` e2e.py's small
one). It is written to GGUF with PyPI's `gguf` package: every linear, the token
embedding and the LM head in Q4_0 (blocks of 32, one scale each, as llama.cpp's
`llama-quantize --pure` Q4_0), the RMSNorm weights in F32, the query and key rows
permuted from torch's rotate-half rotary layout to llama.cpp's pairwise one (as
llama.cpp's own Hugging Face converter does), rope base, RMSNorm epsilon and sizes
from the torch model, and a vocabulary-less tokenizer (`no_vocab`). Before timing,
llama.cpp's logits for a prompt (`llamacpp_logits`, built with llama.cpp) are compared
with torch's on the same Q4_0 weights dequantized (the same model: must agree to f16
rounding) and on the float weights (Q4_0's error); the run stops if they disagree.

Timed, interleaved round by round (`--rounds`, medians): llama.cpp's `llama-bench -ngl
99` (all layers on the Vulkan device; one 64-token prompt, then `--decode-tokens`
tokens decoded one at a time from an empty cache) and qopt's Vulkan artifact for each
`--schemes` entry (default w4g32 and 8da4w, compiled as e2e.py compiles them: a method
per length, seq 1 and seq 64, one forward each). qopt's seq-1 forward is a decode step
at position 0 (no cache rows to read); llama.cpp's decode tokens read at most
`--decode-tokens` cache rows, which on this model is noise next to the weights.
With `--cpu`, llama.cpp's CPU backend on the same model (`-ngl 0 -dev none`, its default
threads) joins each round, for context: not the same device. Printed: the CPU, the load
average, each side's Vulkan device line, tokens/s of all and qopt / llama.cpp Vulkan time
ratios (below 1.0: qopt faster).

llama.cpp comes from the source PyPI's llama-cpp-python sdist vendors, built by
`scripts/build_llamacpp.sh` (`--build` runs it; it is cached). When llama.cpp is not
built or cannot be, or `gguf` is not importable (it is looked for in the environment,
then in build/pydeps: `pip install --target build/pydeps gguf`), this prints why and
exits 0.

    python benchmarks/llamacpp_anchor.py [--quick] [--build] [--schemes w4g32 8da4w]
                                         [--rounds 3] [--decode-tokens 16]
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import importlib
import importlib.metadata
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import qopt  # noqa: E402
from benchmarks.machine import machine_line  # noqa: E402
from qopt.backends.vulkan.loader import list_devices  # noqa: E402
from qopt.backends.vulkan.runtime import vulkan_available  # noqa: E402
from qopt.examples import LlamaConfig, TinyLlama, apply_scheme  # noqa: E402
from qopt.logs import quiet_third_party_logs  # noqa: E402

FULL = {"vocab_size": 32000, "dim": 2048, "n_layers": 4, "n_heads": 16, "hidden_dim": 5632}
QUICK = {"vocab_size": 4096, "dim": 256, "n_layers": 2, "n_heads": 8, "hidden_dim": 704}
LLAMACPP_DIR = ROOT / "build" / "llamacpp"
LLAMACPP_BIN = LLAMACPP_DIR / "build-vk" / "bin"
PYDEPS = ROOT / "build" / "pydeps"
BUILD_SCRIPT = ROOT / "scripts" / "build_llamacpp.sh"
PROMPT_LENGTH = 64
Q4_0_BLOCK = 32
GGUF_LAYOUT = 1  # bump when write_gguf changes what it writes: cached files are rewritten

# torch state-dict name (layer index removed) -> GGUF tensor name, llama.cpp's "llama" names.
_GLOBAL_NAMES = {
    "tok_embeddings.weight": "token_embd.weight",
    "norm.weight": "output_norm.weight",
    "output.weight": "output.weight",
}
_LAYER_NAMES = {
    "attention_norm.weight": "attn_norm.weight",
    "attention.wq.weight": "attn_q.weight",
    "attention.wk.weight": "attn_k.weight",
    "attention.wv.weight": "attn_v.weight",
    "attention.wo.weight": "attn_output.weight",
    "ffn_norm.weight": "ffn_norm.weight",
    "feed_forward.w1.weight": "ffn_gate.weight",
    "feed_forward.w3.weight": "ffn_up.weight",
    "feed_forward.w2.weight": "ffn_down.weight",
}


def import_gguf() -> ModuleType | str:
    """PyPI's `gguf` module (from the environment, else build/pydeps), or why not."""
    try:
        return importlib.import_module("gguf")
    except ImportError:
        pass
    if PYDEPS.is_dir():
        sys.path.append(str(PYDEPS))
        try:
            return importlib.import_module("gguf")
        except ImportError as error:
            return f"gguf is not importable from build/pydeps ({error})"
    return (
        "the gguf package is not installed (`pip install --target build/pydeps gguf` "
        "puts it where this benchmark looks)"
    )


def gguf_name(torch_name: str) -> str:
    """llama.cpp's GGUF name of a TinyLlama state-dict entry."""
    if torch_name in _GLOBAL_NAMES:
        return _GLOBAL_NAMES[torch_name]
    parts = torch_name.split(".", 2)
    if len(parts) == 3 and parts[0] == "layers" and parts[2] in _LAYER_NAMES:
        return f"blk.{parts[1]}.{_LAYER_NAMES[parts[2]]}"
    raise ValueError(f"no GGUF name for TinyLlama tensor {torch_name!r}")


def rope_to_pairs(weight: np.ndarray, n_heads: int) -> np.ndarray:
    """Reorder a query/key projection's output rows from torch's rotate-half layout
    (rotary pairs (i, i + head_dim/2)) to llama.cpp's (pairs (2i, 2i + 1)) per head."""
    rows, cols = weight.shape
    half = rows // n_heads // 2
    return weight.reshape(n_heads, 2, half, cols).swapaxes(1, 2).reshape(rows, cols)


def rope_from_pairs(weight: np.ndarray, n_heads: int) -> np.ndarray:
    """The inverse of `rope_to_pairs`."""
    rows, cols = weight.shape
    half = rows // n_heads // 2
    return weight.reshape(n_heads, half, 2, cols).swapaxes(1, 2).reshape(rows, cols)


def check_llamacpp_shape(cfg: LlamaConfig) -> None:
    """Q4_0 quantizes rows in blocks of 32: every linear's input size must divide."""
    for what, size in (("dim", cfg.dim), ("hidden_dim", cfg.hidden_dim)):
        if size % Q4_0_BLOCK:
            raise ValueError(f"{what} {size} is not a multiple of Q4_0's block of 32")
    if cfg.head_dim % 2:
        raise ValueError(f"head_dim {cfg.head_dim} is odd: no rotary pairs")


def write_gguf(model: TinyLlama, path: Path, gguf: ModuleType) -> None:
    """Write `model` as a llama.cpp "llama" GGUF: 2-D weights Q4_0, norms F32.

    Written to a temporary file in the same folder and renamed, so `path` is never
    half-written."""
    cfg = model.cfg
    if not model.rope:
        raise ValueError("llama.cpp's llama architecture applies rotary embeddings")
    check_llamacpp_shape(cfg)
    q4_0 = gguf.GGMLQuantizationType.Q4_0
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, suffix=".gguf.tmp")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        writer = gguf.GGUFWriter(str(tmp), "llama")
        writer.add_name("qopt TinyLlama (random weights)")
        writer.add_context_length(max(cfg.max_seq_len, 2048))
        writer.add_embedding_length(cfg.dim)
        writer.add_block_count(cfg.n_layers)
        writer.add_feed_forward_length(cfg.hidden_dim)
        writer.add_head_count(cfg.n_heads)
        writer.add_head_count_kv(cfg.n_heads)
        writer.add_rope_dimension_count(cfg.head_dim)
        writer.add_rope_freq_base(float(cfg.rope_theta))
        writer.add_layer_norm_rms_eps(float(cfg.norm_eps))
        writer.add_vocab_size(cfg.vocab_size)
        writer.add_file_type(int(gguf.LlamaFileType.MOSTLY_Q4_0))
        writer.add_tokenizer_model("no_vocab")
        for name, tensor in model.state_dict().items():
            array = tensor.detach().to(torch.float32).numpy()
            if array.ndim == 2:
                if name.endswith(("attention.wq.weight", "attention.wk.weight")):
                    array = rope_to_pairs(array, cfg.n_heads)
                data = gguf.quants.quantize(np.ascontiguousarray(array), q4_0)
                writer.add_tensor(gguf_name(name), data, raw_dtype=q4_0)
            else:
                writer.add_tensor(gguf_name(name), np.ascontiguousarray(array))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def cached_gguf(model: TinyLlama, config: dict[str, int], gguf: ModuleType) -> Path:
    """`model` (built from `config`, seed 0) as a Q4_0 GGUF under build/llamacpp/models,
    written once per config, `gguf` and torch version and `GGUF_LAYOUT`."""
    try:
        gguf_version = importlib.metadata.version("gguf")
    except importlib.metadata.PackageNotFoundError:
        gguf_version = "?"
    facts = [config, GGUF_LAYOUT, gguf_version, torch.__version__]
    key = hashlib.sha256(json.dumps(facts).encode()).hexdigest()[:12]
    path = LLAMACPP_DIR / "models" / f"tinyllama-{key}-q4_0.gguf"
    if not path.is_file():
        t0 = time.perf_counter()
        write_gguf(model, path, gguf)
        print(f"GGUF Q4_0 written in {time.perf_counter() - t0:.1f}s: {path}")
    return path


def read_gguf_weights(path: Path, gguf: ModuleType) -> dict[str, np.ndarray]:
    """The GGUF's weights under the GGUF names, dequantized to float32 in torch's
    layout ([out, in]; query/key rows still in llama.cpp's pair order)."""
    reader = gguf.GGUFReader(str(path))
    weights = {}
    for tensor in reader.tensors:
        shape = tuple(int(d) for d in reversed(tensor.shape))  # GGUF lists ne0 first
        data = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
        weights[tensor.name] = np.asarray(data, dtype=np.float32).reshape(shape)
    return weights


def model_from_gguf(model: TinyLlama, path: Path, gguf: ModuleType) -> TinyLlama:
    """A copy of `model` holding the GGUF's (dequantized) weights: the model llama.cpp runs."""
    weights = read_gguf_weights(path, gguf)
    copied = copy.deepcopy(model)
    state = {}
    for name, tensor in copied.state_dict().items():
        array = weights[gguf_name(name)]
        if name.endswith(("attention.wq.weight", "attention.wk.weight")):
            array = rope_from_pairs(array, copied.cfg.n_heads)
        state[name] = torch.from_numpy(np.array(array, dtype=np.float32)).reshape(tensor.shape)
    copied.load_state_dict(state)
    return copied


def qopt_device_index() -> int:
    """The index among the Vulkan devices of the one qopt opens ($QOPT_VULKAN_DEVICE: an
    index or a part of the name; the first device without it)."""
    choice = os.environ.get("QOPT_VULKAN_DEVICE", "").strip()
    if choice.isdigit():
        return int(choice)
    names = list_devices()
    return next((i for i, name in enumerate(names) if choice.lower() in name.lower()), 0)


def llamacpp_tools(build: bool) -> tuple[Path, Path] | str:
    """(llama-bench, llamacpp_logits) of the build under build/llamacpp, or why not."""
    bench, logits = LLAMACPP_BIN / "llama-bench", LLAMACPP_BIN / "llamacpp_logits"
    if build:
        done = subprocess.run(["bash", str(BUILD_SCRIPT)], capture_output=True, text=True)
        if done.returncode != 0:
            return f"scripts/build_llamacpp.sh failed: {done.stderr.strip()[-2000:]}"
        print(done.stdout.strip().splitlines()[-1])
    if not (bench.is_file() and logits.is_file()):
        return (
            "llama.cpp is not built (run scripts/build_llamacpp.sh, or this benchmark with --build)"
        )
    return bench, logits


def llamacpp_logits(
    tool: Path, gguf_path: Path, tokens: list[int], env: dict[str, str]
) -> np.ndarray:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "logits.f32"
        done = subprocess.run(
            [str(tool), str(gguf_path), str(out), "99", *map(str, tokens)],
            capture_output=True, text=True, env=env,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"llamacpp_logits failed: {done.stderr.strip()[-2000:]}")
        vocab = int(done.stdout.split()[-1])
        return np.fromfile(out, dtype=np.float32).reshape(len(tokens), vocab)


def llama_bench(
    tool: Path, gguf_path: Path, decode: int, env: dict[str, str], cpu: bool = False
) -> dict[str, Any]:
    """One llama-bench run (-r 1): prompt and decode tokens/s, its device and build; all
    layers on the Vulkan device, or with `cpu` on llama.cpp's CPU backend (no device)."""
    placement = ["-ngl", "0", "-dev", "none"] if cpu else ["-ngl", "99"]
    done = subprocess.run(
        [str(tool), "-m", str(gguf_path), *placement, "-p", str(PROMPT_LENGTH),
         "-n", str(decode), "-r", "1", "-o", "json"],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"llama-bench failed: {done.stderr.strip()[-2000:]}")
    result: dict[str, Any] = {"stderr": done.stderr}
    for test in json.loads(done.stdout):
        key = "prefill" if test["n_prompt"] else "decode"
        result[key] = float(test["avg_ts"])
        result["info"] = test
    return result


def compare_logits(name: str, got: np.ndarray, want: np.ndarray) -> float:
    """Print how far llama.cpp's logits are from torch's; return the error relative
    to the spread of torch's logits."""
    error = float(np.abs(got - want).max())
    spread = float(want.std())
    agree = float((got.argmax(-1) == want.argmax(-1)).mean())
    print(f"  vs torch on {name}: max |diff| {error:.4g} = {error / spread:.3%} of the logits' "
          f"std {spread:.4g}; top-1 token equal at {agree:.0%} of positions")  # fmt: skip
    return error / spread


def main() -> None:
    quiet_third_party_logs()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="e2e.py's small model")
    parser.add_argument("--build", action="store_true", help="run scripts/build_llamacpp.sh")
    parser.add_argument("--schemes", nargs="*", default=["w4g32", "8da4w"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--decode-tokens", type=int, default=16)
    parser.add_argument(
        "--cpu", action="store_true", help="also llama.cpp's CPU backend (no Vulkan), for context"
    )
    parser.add_argument("--decode-calls", type=int, default=5, help="qopt seq-1 calls per round")
    parser.add_argument("--tolerance", type=float, default=0.02,
                        help="largest logit difference from torch on the Q4_0 weights, "
                             "as a fraction of the logits' std")  # fmt: skip
    args = parser.parse_args()

    gguf = import_gguf()
    if isinstance(gguf, str):
        print(f"llama.cpp anchor skipped: {gguf}")
        return
    tools = llamacpp_tools(args.build)
    if isinstance(tools, str):
        print(f"llama.cpp anchor skipped: {tools}")
        return
    bench_tool, logits_tool = tools
    if (reason := vulkan_available()) is not None:
        sys.exit(f"no Vulkan device: {reason}")

    config = dict(QUICK if args.quick else FULL, max_seq_len=PROMPT_LENGTH)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        float_model = TinyLlama(LlamaConfig(**config)).eval()
    params = sum(p.numel() for p in float_model.parameters())
    print(f"TinyLlama {config} ({params / 1e6:.0f}M parameters), seed 0")
    print(f"{machine_line()}, torch threads {torch.get_num_threads()}")

    gguf_path = cached_gguf(float_model, config, gguf)
    print(f"GGUF: {gguf_path.name}, {gguf_path.stat().st_size / 2**20:.1f} MiB")

    # llama.cpp skips CPU-type Vulkan devices (lavapipe) unless told which device to use:
    # point it at the device qopt opens.
    index = qopt_device_index()
    env = dict(os.environ, GGML_VK_VISIBLE_DEVICES=str(index))

    # The same model? llama.cpp's logits against torch's for one prompt.
    prompt = torch.randint(
        0, config["vocab_size"], (1, 8), generator=torch.Generator().manual_seed(1)
    )
    got = llamacpp_logits(logits_tool, gguf_path, prompt[0].tolist(), env)
    with torch.no_grad():
        on_q4 = model_from_gguf(float_model, gguf_path, gguf)(prompt)[0].numpy()
        on_float = float_model(prompt)[0].numpy()
    print(f"llama.cpp logits for an {prompt.shape[1]}-token prompt:")
    same = compare_logits("the same Q4_0 weights", got, on_q4)
    compare_logits("the float weights (Q4_0's error)", got, on_float)
    if same > args.tolerance:
        sys.exit(f"llama.cpp does not compute the torch model: logits differ by {same:.2%} of "
                 f"their std (tolerance {args.tolerance:.0%})")  # fmt: skip

    inputs = {
        seq: torch.randint(0, config["vocab_size"], (1, seq),
                           generator=torch.Generator().manual_seed(seq))
        for seq in (1, PROMPT_LENGTH)
    }  # fmt: skip
    sessions = {}
    for scheme in args.schemes:
        model = apply_scheme(float_model, scheme, (inputs[1],))
        t0 = time.perf_counter()
        with torch.no_grad():
            methods = {
                f"seq{seq}": torch.export.export(copy.deepcopy(model), (tokens,), strict=False)
                for seq, tokens in inputs.items()
            }
        artifact = qopt.compile(methods, target="vulkan")
        session = artifact.session()
        for seq, tokens in inputs.items():
            session.run(tokens.numpy(), method=f"seq{seq}")  # warm-up: records the commands
        sessions[scheme] = (artifact, session)
        print(f"qopt {scheme}: export + Vulkan compile {time.perf_counter() - t0:.1f}s")
    device_name = next(iter(sessions.values()))[0].device.name if sessions else "-"

    llama: dict[str, list[float]] = {"prefill": [], "decode": []}
    llama_cpu: dict[str, list[float]] = {"prefill": [], "decode": []}
    qopt_times: dict[tuple[str, int], list[float]] = {
        (scheme, seq): [] for scheme in sessions for seq in inputs
    }
    info: dict[str, Any] = {}
    stderr = ""
    for _ in range(args.rounds):
        run = llama_bench(bench_tool, gguf_path, args.decode_tokens, env)
        llama["prefill"].append(run["prefill"])
        llama["decode"].append(run["decode"])
        info, stderr = run["info"], run["stderr"]
        if args.cpu:
            run_cpu = llama_bench(bench_tool, gguf_path, args.decode_tokens, env, cpu=True)
            llama_cpu["prefill"].append(run_cpu["prefill"])
            llama_cpu["decode"].append(run_cpu["decode"])
        for scheme, (_, session) in sessions.items():
            for seq, tokens in inputs.items():
                ids = tokens.numpy()
                for _ in range(args.decode_calls if seq == 1 else 1):
                    t0 = time.perf_counter()
                    session.run(ids, method=f"seq{seq}")
                    qopt_times[(scheme, seq)].append(time.perf_counter() - t0)

    vk_lines = [line for line in stderr.splitlines() if line.startswith("ggml_vulkan: 0 =")]
    print()
    print(f"qopt Vulkan device: {device_name}")
    print(f"llama.cpp Vulkan device: {vk_lines[0] if vk_lines else info.get('gpu_info', '?')}")
    print(f"llama.cpp build {info.get('build_commit', '?')} ({info.get('build_number', '?')}), "
          f"backends {info.get('backends', '?')}, {info.get('n_threads', '?')} CPU threads, "
          f"flash attention {info.get('flash_attn', '?')}, KV cache "
          f"{info.get('type_k', '?')}/{info.get('type_v', '?')}")  # fmt: skip
    print(
        f"{args.rounds} interleaved rounds, medians; llama.cpp decode averages "
        f"{args.decode_tokens} tokens from an empty cache, qopt's is one seq-1 forward"
    )
    print()
    print(f"{'':<22} {'prefill 64 tok/s':>17} {'decode tok/s':>13} {'prefill vs':>11} "
          f"{'decode vs':>10}")  # fmt: skip
    llama_prefill = statistics.median(llama["prefill"])
    llama_decode = statistics.median(llama["decode"])
    print(f"{'llama.cpp Vulkan Q4_0':<22} {llama_prefill:>17.1f} {llama_decode:>13.2f} "
          f"{'1.00x':>11} {'1.00x':>10}")  # fmt: skip
    if args.cpu:
        cpu_prefill = statistics.median(llama_cpu["prefill"])
        cpu_decode = statistics.median(llama_cpu["decode"])
        print(
            f"{'llama.cpp CPU Q4_0':<22} {cpu_prefill:>17.1f} {cpu_decode:>13.2f} "
            f"{llama_prefill / cpu_prefill:>10.2f}x {llama_decode / cpu_decode:>9.2f}x"
        )
    for scheme in sessions:
        prefill = PROMPT_LENGTH / statistics.median(qopt_times[(scheme, PROMPT_LENGTH)])
        decode = 1 / statistics.median(qopt_times[(scheme, 1)])
        print(f"{'qopt ' + scheme:<22} {prefill:>17.1f} {decode:>13.2f} "
              f"{llama_prefill / prefill:>10.2f}x {llama_decode / decode:>9.2f}x")  # fmt: skip
    print("(vs: qopt's time per token / llama.cpp's; below 1.00x qopt is faster)")
    for artifact, _ in sessions.values():
        artifact.close()


if __name__ == "__main__":
    main()
