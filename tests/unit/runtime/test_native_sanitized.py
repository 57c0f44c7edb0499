"""The native runtime built with AddressSanitizer + UndefinedBehaviorSanitizer (clang,
build/runtime-asan: scripts/setup.sh builds it where clang exists): outputs
bit-identical to the Python runtime's, sessions created, run and destroyed leak nothing
(LeakSanitizer), and the loader's libFuzzer harness runs a bounded number of inputs
from a corpus of genuine bundles without a sanitizer finding. Skipped, with the reason,
without a Vulkan device or the sanitizer build."""

from __future__ import annotations

import functools
import glob
import os
import platform
import subprocess
import sysconfig
from pathlib import Path

import numpy as np
import pytest

import qopt
from qopt.backends.vulkan.native import ROOT
from qopt.examples import export_model, random_inputs

ASAN = ROOT / "build" / "runtime-asan"


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


@functools.cache
def compiled(model: str, scheme: str) -> bytes:
    return qopt.compile(export_model(model, scheme), target="vulkan").to_bytes()


def sanitizer_env() -> dict[str, str]:
    """Leak detection on; the Vulkan driver kept loaded (LD_PRELOAD) so that its own
    allocations are attributed to it, not to an unloaded module, and suppressed."""
    env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0"}
    arch = sysconfig.get_config_var("MULTIARCH") or f"{platform.machine()}-linux-gnu"
    drivers = glob.glob(f"/usr/lib/{arch}/libvulkan_lvp.so")  # this machine's, not a multiarch one
    if drivers:
        env["LD_PRELOAD"] = drivers[0]
        suppressions = ROOT / "runtime" / "tests" / "lsan.supp"
        env["LSAN_OPTIONS"] = f"suppressions={suppressions}:print_suppressions=0"
    else:
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    return env


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("asan") / "llama.qvk"
    path.write_bytes(compiled("llama", "8da4w"))
    return path


def test_sanitized_outputs_bit_identical(bundle: Path, tmp_path: Path) -> None:
    inputs = [t.numpy() for t in random_inputs("llama", 7)]
    files = []
    for i, x in enumerate(inputs):
        files.append(str(tmp_path / f"in{i}.npy"))
        np.save(files[-1], x)
    r = subprocess.run(
        [str(ASAN / "qvk-run"), str(bundle), "--input", *files, "--output-dir", str(tmp_path / "o")],
        capture_output=True, text=True, check=False, env=sanitizer_env(),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    want = qopt.load(str(bundle))(*inputs)
    for i, w in enumerate(want):
        got = np.load(tmp_path / "o" / f"output_{i}.npy")
        assert got.dtype == w.dtype
        assert got.tobytes() == w.tobytes()


def test_session_cycles_leak_nothing(bundle: Path) -> None:
    r = subprocess.run(
        [str(ASAN / "qvk-cycles"), str(bundle), "2"],
        capture_output=True, text=True, check=False, env=sanitizer_env(),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    assert "LeakSanitizer" not in r.stderr


def test_loader_fuzz_harness_bounded(bundle: Path, tmp_path: Path) -> None:
    if not (ASAN / "qvk-fuzz-loader").is_file():
        pytest.skip("the fuzz harness is not built (-DQVK_FUZZ=ON with clang)")

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    small = compiled("mlp", "float")
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
