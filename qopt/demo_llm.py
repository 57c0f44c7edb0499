"""The demo's LLM part: a tiny Llama with a KV cache generating tokens on both targets.

The built-in ExecuTorch-style decoder (`qopt.examples.build_kv_llama`: the cache in
buffers it mutates, written at `input_pos`; grouped-query attention), under each
weight scheme, exported twice (`prefill` of the 8-token prompt, `decode` of one
token), imported as one module with two methods sharing weights and caches,
compiled for CoreML (the `.mlpackage` saved, read back and interpreted: no Core ML
runtime on Linux) and for Vulkan (the `.qvk` saved, loaded and run on the device, by
qopt's Python runtime and by the native one, `qvk-run` of runtime/), and asked for 24
greedy tokens next to torch eager's and the interpreter's.
"""

from __future__ import annotations

import copy
import os
import tempfile
import time

import torch

import qopt
from qopt.backends.vulkan.runtime import vulkan_available
from qopt.examples import apply_scheme, build_kv_llama

PROMPT = [5, 9, 2, 33, 7, 1, 60, 12]
NEW_TOKENS = 24
CONFIG = {"vocab_size": 64, "dim": 32, "n_layers": 2, "n_heads": 4, "hidden_dim": 64,
          "max_seq_len": 40}  # fmt: skip
SCHEMES = ("float", "w4g32", "8da4w", "codebook4")


def torch_tokens(model: torch.nn.Module) -> list[int]:
    model = copy.deepcopy(model)
    with torch.no_grad():
        logits = model(torch.tensor([PROMPT]), torch.arange(len(PROMPT)))
        out = [int(logits[0, -1].argmax())]
        for position in range(len(PROMPT), len(PROMPT) + NEW_TOKENS - 1):
            logits = model(torch.tensor([[out[-1]]]), torch.tensor([position]))
            out.append(int(logits[0, -1].argmax()))
    return out


def native_runner() -> str | None:
    """The built `qvk-run` (runtime/, the native runtime), or None."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for path in (os.path.join(root, ".venv", "bin", "qvk-run"),
                 os.path.join(root, "build", "runtime", "qvk-run")):  # fmt: skip
        if os.access(path, os.X_OK):
            return path
    return None


def native_tokens(runner: str, bundle: str) -> list[int]:
    """`qvk-run BUNDLE --generate N --prompt-ids ...`: the native runtime's tokens."""
    import subprocess

    ids = ",".join(map(str, PROMPT))
    done = subprocess.run(
        [runner, bundle, "--generate", str(NEW_TOKENS), "--prompt-ids", ids],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise qopt.QoptError(done.stderr.strip() or f"qvk-run exited with {done.returncode}")
    return [int(t) for t in done.stdout.strip().splitlines()[-1].split()]


def run_llm(schemes: tuple[str, ...] = SCHEMES) -> int:
    """Print each scheme's tokens per target; the number of mismatches."""
    print()
    print(
        f"LLM: KV-cache Llama (dim {CONFIG['dim']}, {CONFIG['n_layers']} layers, cache "
        f"{CONFIG['max_seq_len']}), prefill {len(PROMPT)} tokens + {NEW_TOKENS - 1} decode steps"
    )
    targets = ["interp", "coreml", "vulkan", "native"]
    runner_path = native_runner()
    if (reason := vulkan_available()) is not None:
        print(f"  vulkan skipped: {reason}")
        targets.remove("vulkan")
        targets.remove("native")
    elif runner_path is None:
        print("  native skipped: qvk-run is not built (scripts/setup.sh builds it)")
        targets.remove("native")
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for scheme in schemes:
            example = (torch.tensor([PROMPT]), torch.arange(len(PROMPT)))
            model = apply_scheme(build_kv_llama(update="index_put", **CONFIG), scheme, example)
            want = torch_tokens(model)
            with torch.no_grad():
                methods = {
                    "prefill": torch.export.export(copy.deepcopy(model), example, strict=False),
                    "decode": torch.export.export(
                        copy.deepcopy(model), (torch.tensor([[1]]), torch.tensor([0])), strict=False
                    ),
                }
            print(f"  {scheme:<10} torch   {' '.join(map(str, want))}")
            for target in targets:
                t0 = time.perf_counter()
                try:
                    if target == "native" and runner_path is not None:  # the C runtime
                        got = native_tokens(runner_path, os.path.join(tmp, f"{scheme}.qvk"))
                    else:
                        if target == "interp":
                            runner = qopt.session(qopt.fuse(qopt.import_program(methods)))
                        else:
                            suffix = ".mlpackage" if target == "coreml" else ".qvk"
                            path = os.path.join(tmp, f"{scheme}{suffix}")
                            # CoreML in fp32: tokens exactly torch's (fp16 is the default)
                            exact = "fp32" if target == "coreml" else None
                            qopt.compile(methods, target=target, compute_precision=exact).save(path)
                            runner = qopt.load(path).session()
                        got = qopt.generate(runner, PROMPT, NEW_TOKENS)
                except qopt.QoptError as e:
                    failures += 1
                    print(f"  {'':<10} {target:<7} FAILED: {e}")
                    continue
                same = got == want
                failures += not same
                mark = "= torch" if same else "MISMATCH"
                print(
                    f"  {'':<10} {target:<7} {' '.join(map(str, got))}  {mark} "
                    f"({time.perf_counter() - t0:.1f} s)",
                    flush=True,
                )
    print(
        "every target generates torch's tokens"
        if failures == 0
        else f"{failures} LLM run(s) differ from torch"
    )
    return failures
