"""The native runtime built with AddressSanitizer + UndefinedBehaviorSanitizer (clang,
build/runtime-asan: scripts/setup.sh builds it where clang exists): the whole
equivalence suite (every built-in model x scheme, the KV-cache decoders' prefill and
decode steps and their states) bit-identical to the Python runtime's, the sanitized
`qvk-run` (.npy in and out, `--generate`), sessions created, run and destroyed leaking
nothing (LeakSanitizer) and keeping a flat resident size (the Release build), and the
loader's libFuzzer harness running a bounded number of inputs from genuine bundles
without a finding. Skipped, with the reason, without a Vulkan device or the sanitizer
build."""

from __future__ import annotations

import copy
import glob
import json
import os
import platform
import re
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from shared_exports import kv_decoder as shared_kv_decoder
from shared_exports import kv_decoder_bytes

import qopt
from qopt.backends.vulkan.native import ROOT
from qopt.examples import MODELS, SCHEMES

ASAN = ROOT / "build" / "runtime-asan"
RELEASE = ROOT / "build" / "runtime"
HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module", autouse=True)
def _sanitized() -> None:
    from qopt.backends.vulkan.runtime import vulkan_available

    reason = vulkan_available()
    if reason is None and not (ASAN / "qvk-run").is_file():
        reason = (
            "the sanitizer build is absent (scripts/setup.sh builds it where clang exists: "
            "CC=clang cmake -S runtime -B build/runtime-asan -DQVK_SANITIZE=ON -DQVK_FUZZ=ON)"
        )
    if reason is not None:
        print(f"sanitizer tests skipped: {reason}")
        pytest.skip(reason)


def _driver() -> str | None:
    """This machine's lavapipe (not a multiarch one), preloaded so that its own
    allocations are attributed to it, not to an unloaded module, and suppressed."""
    arch = sysconfig.get_config_var("MULTIARCH") or f"{platform.machine()}-linux-gnu"
    drivers = glob.glob(f"/usr/lib/{arch}/libvulkan_lvp.so")
    return drivers[0] if drivers else None


def sanitizer_env() -> dict[str, str]:
    """Leak detection on (the Vulkan driver's own allocations suppressed)."""
    env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0"}
    if (driver := _driver()) is not None:
        env["LD_PRELOAD"] = driver
        suppressions = ROOT / "runtime" / "tests" / "lsan.supp"
        env["LSAN_OPTIONS"] = f"suppressions={suppressions}:print_suppressions=0"
    else:
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    return env


def _asan_runtime() -> str | None:
    """The ASan runtime shared library of the clang that built build/runtime-asan."""
    try:
        r = subprocess.run(
            ["clang", f"-print-file-name=libclang_rt.asan-{platform.machine()}.so"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
    except OSError:
        return None
    path = r.stdout.strip()
    return path if r.returncode == 0 and os.path.isabs(path) and os.path.isfile(path) else None


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


CONFIG = {"vocab_size": 64, "dim": 32, "n_layers": 2, "n_heads": 4, "hidden_dim": 64,
          "max_seq_len": 40}  # fmt: skip
PROMPT = [5, 9, 2, 33, 7, 1, 60, 12]
KV_CALLS: list[tuple[str, np.ndarray, np.ndarray]] = [
    ("prefill", np.array([PROMPT]), np.arange(len(PROMPT))),
    *[("decode", np.array([[t]]), np.array([8 + i])) for i, t in enumerate([3, 17, 40])],
]


def kv_decoder(scheme: str) -> tuple[bytes, torch.nn.Module]:
    """A two-method KV-cache decoder (prefill of 8 tokens, decode), its bundle and model
    (shared with test_native_runtime.py: one export and compile per process)."""
    return kv_decoder_bytes(CONFIG, PROMPT, scheme), shared_kv_decoder(CONFIG, PROMPT, scheme)[0]


def test_sanitized_equivalence_suite(builtin_reference: Any, tmp_path: Path) -> None:
    """Every built-in model x scheme (each called twice: the first call records the
    command buffer, the second replays it) and the KV decoders under float and 8da4w
    (prefill, three decode steps, then every state) through the ASan + UBSan libqvk:
    bit-identical to the Python runtime. One process (the ASan runtime preloaded into
    a Python that imports only numpy and the ctypes binding) runs them all; a sanitizer
    finding aborts it."""
    library, runtime = ASAN / "libqvk.so", _asan_runtime()
    if not library.is_file() or runtime is None:
        pytest.skip(f"needs {library} and clang's ASan runtime (libclang_rt.asan)")
    jobs: list[dict[str, Any]] = []
    want: dict[str, dict[str, np.ndarray]] = {}

    def add(name: str, data: bytes, calls: list[tuple[str | None, list[np.ndarray]]],
            expected: dict[str, np.ndarray], repeat: int) -> None:  # fmt: skip
        (tmp_path / f"{name}.qvk").write_bytes(data)
        files = []
        for i, (method, inputs) in enumerate(calls):
            names = []
            for j, x in enumerate(inputs):
                names.append(str(tmp_path / f"{name}-{i}-{j}.npy"))
                np.save(names[-1], x)
            files.append([method, names])
        jobs.append({"bundle": str(tmp_path / f"{name}.qvk"), "calls": files, "repeat": repeat,
                     "out": str(tmp_path / f"{name}.npz")})  # fmt: skip
        want[name] = expected

    for model in MODELS:
        for scheme in SCHEMES:
            ref = builtin_reference(model, scheme)
            outputs = {f"c0_{j}": o for j, o in enumerate(ref.outputs)}
            add(f"{model}-{scheme}", ref.data, [(None, list(ref.inputs))], outputs, repeat=2)
    for scheme in ("float", "8da4w"):
        data, _ = kv_decoder(scheme)
        path = tmp_path / f"kv-{scheme}-python.qvk"
        path.write_bytes(data)
        python = qopt.load(str(path)).session()
        expected: dict[str, np.ndarray] = {}
        for i, (method, tokens, positions) in enumerate(KV_CALLS):
            for j, o in enumerate(python.run(tokens, positions, method=method)):
                expected[f"c{i}_{j}"] = np.array(o)
        for name in python.state_names:
            expected[f"state_{name}"] = np.array(python.read_state(name))
        calls: list[tuple[str | None, list[np.ndarray]]] = [(m, [t, p]) for m, t, p in KV_CALLS]
        add(f"kv-{scheme}", data, calls, expected, repeat=1)
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    env = {
        **os.environ,
        # without the validation layer: its own allocations under ASan's interception
        # cost ~40% of this run; test_native_runtime runs the same bundles under it
        "QOPT_VULKAN_VALIDATION": "0",
        "LD_PRELOAD": runtime,
        # Python's own allocations at exit are not the runtime's: leaks are
        # test_session_cycles_leak_nothing's (a C program)
        "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0",
        "UBSAN_OPTIONS": "print_stacktrace=1",
        "QOPT_QVK_LIBRARY": str(library),
        "PYTHONPATH": str(ROOT),
    }
    r = subprocess.run(
        [sys.executable, str(HERE / "sanitized_worker.py"), str(tmp_path / "jobs.json")],
        capture_output=True, text=True, check=False, env=env,
    )  # fmt: skip
    assert r.returncode == 0, (r.stdout[-1500:], r.stderr[-3000:])
    assert "runtime error" not in r.stderr, r.stderr[-3000:]  # UBSan
    assert r.stdout.count("ok ") == len(jobs)
    for name, expected in want.items():
        with np.load(tmp_path / f"{name}.npz") as got:
            assert sorted(got.files) == sorted(expected), name
            for key, w in expected.items():
                assert same_bits(got[key], w), (name, key)


def test_sanitized_qvk_run(builtin_reference: Any, tmp_path: Path) -> None:
    """The sanitized qvk-run, LeakSanitizer on: .npy in, output_i.npy out, bit-identical
    (llama 8da4w); `--generate` (prefill then decode steps over the cache) prints torch's
    tokens."""
    ref = builtin_reference("llama", "8da4w")
    bundle = tmp_path / "llama.qvk"
    bundle.write_bytes(ref.data)
    files = []
    for i, x in enumerate(ref.inputs):
        files.append(str(tmp_path / f"in{i}.npy"))
        np.save(files[-1], x)
    r = subprocess.run(
        [str(ASAN / "qvk-run"), str(bundle), "--input", *files, "--output-dir", str(tmp_path / "o")],
        capture_output=True, text=True, check=False, env=sanitizer_env(),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    for i, w in enumerate(ref.outputs):
        assert same_bits(np.load(tmp_path / "o" / f"output_{i}.npy"), w)
    data, model = kv_decoder("float")
    (tmp_path / "kv.qvk").write_bytes(data)
    model = copy.deepcopy(model)
    with torch.no_grad():
        logits = model(torch.tensor([PROMPT]), torch.arange(len(PROMPT)))
        tokens = [int(logits[0, -1].argmax())]
        for position in range(len(PROMPT), len(PROMPT) + 5):
            logits = model(torch.tensor([[tokens[-1]]]), torch.tensor([position]))
            tokens.append(int(logits[0, -1].argmax()))
    r = subprocess.run(
        [str(ASAN / "qvk-run"), str(tmp_path / "kv.qvk"), "--generate", "6", "--prompt-ids",
         ",".join(map(str, PROMPT))],
        capture_output=True, text=True, check=False, env=sanitizer_env(),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    assert "LeakSanitizer" not in r.stderr
    assert [int(t) for t in r.stdout.strip().splitlines()[-1].split()] == tokens


def test_session_cycles_leak_nothing(tmp_path: Path) -> None:
    """Bundle opened, session created, run, reset and destroyed, bundle closed, over and
    over under LeakSanitizer (a KV decoder: two methods, states): no leak, and every
    cycle's outputs equal the first's. (1000 cycles were run by hand:
    docs/native-runtime.md.)"""
    path = tmp_path / "kv.qvk"
    path.write_bytes(kv_decoder("float")[0])
    r = subprocess.run(
        [str(ASAN / "qvk-cycles"), str(path), "3"],
        capture_output=True, text=True, check=False, env=sanitizer_env(),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    assert "LeakSanitizer" not in r.stderr
    assert r.stdout.startswith("3 cycles in ")


def test_session_cycles_resident_size_flat(builtin_reference: Any, tmp_path: Path) -> None:
    """The Release build: the resident set size after cycle 10 and after cycle 40 are the
    same within 2 MiB (allocator noise; a float MLP, the cheapest session to create: a
    leaked bundle, session, buffers or pipelines would add 30 times their size; 1000
    cycles were run by hand: docs/native-runtime.md)."""
    if not (RELEASE / "qvk-cycles").is_file():
        pytest.skip(f"{RELEASE / 'qvk-cycles'} is not built (scripts/setup.sh builds it)")
    path = tmp_path / "mlp.qvk"
    path.write_bytes(builtin_reference("mlp", "float").data)
    r = subprocess.run(
        [str(RELEASE / "qvk-cycles"), str(path), "40"], capture_output=True, text=True, check=False
    )
    assert r.returncode == 0, r.stderr[-3000:]
    match = re.search(r"after cycle 10: ([0-9.]+) MiB, after cycle 40: ([0-9.]+) MiB", r.stdout)
    assert match is not None, r.stdout
    print(r.stdout.strip())
    assert float(match[2]) - float(match[1]) < 2.0, r.stdout


def test_loader_fuzz_harness_bounded(builtin_reference: Any, tmp_path: Path) -> None:
    if not (ASAN / "qvk-fuzz-loader").is_file():
        pytest.skip("the fuzz harness is not built (-DQVK_FUZZ=ON with clang)")

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    small = builtin_reference("mlp", "float").data
    (corpus / "mlp.qvk").write_bytes(small)
    (corpus / "truncated.qvk").write_bytes(small[: len(small) // 2])
    r = subprocess.run(
        [str(ASAN / "qvk-fuzz-loader"), "-runs=100", "-seed=24", f"-max_len={len(small) + 64}",
         str(corpus)],
        capture_output=True, text=True, check=False,
        env={**os.environ, "ASAN_OPTIONS": "detect_leaks=1"},
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Done 100 runs" in r.stderr
