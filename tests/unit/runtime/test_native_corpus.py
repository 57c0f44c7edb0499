"""One corpus, two readers (docs/qvk-format.md §6): the shared `.qvk` corpus of
tests/unit/untrusted/qvk_corpus.py and the untrusted-input fuzzer's mutants through the
Python loader and the native runtime (runtime/). Every valid bundle loads and runs on
both with bit-identical outputs (the host-fallback one is refused natively, naming its
ops); every crafted bundle is refused by both, natively with one line and no crash; the
native runtime's kernel rules (KernelSpec.workgroups / extents, translated into C at build
time by runtime/gen_rules.py) agree with the Python functions on random push and
specialization values. Skipped, with the reason printed, without a Vulkan device or the
built runtime."""

from __future__ import annotations

import ctypes
import importlib.util
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import qopt
from qopt.backends.vulkan.native import ROOT, NativeBundle, native_library
from qopt.kernels import catalogue
from qopt.kernels.spec import KernelSpec
from qopt.kernels.variants import variants

HERE = Path(__file__).resolve().parent
UNTRUSTED = HERE.parent / "untrusted"
ASAN_RUN = ROOT / "build" / "runtime-asan" / "qvk-run"
OVERFLOW = "64-bit integer overflow"
"""The native rules' refusal where an intermediate value leaves 64 bits (Python's
integers do not overflow): docs/native-runtime.md."""


def _load_module(name: str, path: Path) -> Any:
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


qc = _load_module("qopt_qvk_corpus", UNTRUSTED / "qvk_corpus.py")


@pytest.fixture(scope="module", autouse=True)
def _native() -> None:
    from qopt.backends.vulkan.runtime import vulkan_available
    from qopt.kernels.prebuilt import prebuilt_spirv

    reason = vulkan_available() or native_library()
    if (
        reason is None
        and prebuilt_spirv("unary.glsl") is None
        and not shutil.which("glslangValidator")
    ):
        reason = "no prebuilt kernel SPIR-V and no glslang: `python -m qopt.kernels.build`"
    if reason is not None:
        print(f"native corpus tests skipped: {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return qc.make_seeds(tmp_path_factory.mktemp("qvk_seeds"))


@pytest.fixture(scope="module")
def entries(seeds: Path) -> list[tuple[str, bytes, str | None]]:
    return list(qc.corpus(seeds))


def python_error(data: bytes, name: str) -> str | None:
    from qopt.backends.vulkan.qvk import load_bundle

    try:
        load_bundle(data, name)
    except qopt.QoptError as e:
        return str(e)
    return None


def native_error(data: bytes, name: str) -> str | None:
    try:
        NativeBundle.from_bytes(data, name).close()
    except qopt.QoptError as e:
        return str(e)
    return None


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _inputs(shapes: list[tuple[tuple[int, ...], np.dtype]], rng: np.random.Generator) -> list:
    out = []
    for shape, dtype in shapes:
        if dtype.kind == "f":
            out.append(rng.standard_normal(shape).astype(dtype))
        elif dtype.kind == "b":
            out.append(rng.integers(0, 2, shape).astype(bool))
        else:  # token ids and positions: small, in range of every corpus model
            out.append(rng.integers(0, 4, shape).astype(dtype))
    return out


def test_valid_bundles_run_bit_identical(
    entries: list[tuple[str, bytes, str | None]], tmp_path: Path
) -> None:
    """Every valid bundle of the corpus: each method (each size variant) on a fresh
    session of both runtimes, twice (states carried over), outputs bit-identical; the
    version-4 bundle is refused natively with one line naming its ops and the option."""
    rng = np.random.default_rng(24)
    valid = [(name, data) for name, data, expected in entries if expected is None]
    assert len(valid) == len(qc.SEEDS)
    for name, data in valid:
        if name in qc.NEEDS_INTERPRETER:
            message = native_error(data, f"{name}.qvk")
            assert message is not None
            assert "\n" not in message
            assert "aten.sort" in message
            assert "fallback=False" in message
            continue
        path = tmp_path / f"{name}.qvk"
        path.write_bytes(data)
        python = qopt.load(str(path)).session()
        with NativeBundle.from_bytes(data, path.name) as bundle, bundle.session() as native:
            assert native.methods == python.methods, name
            for index, function in enumerate(bundle.functions):
                method = function.split("__")[0] if function not in native.methods else function
                args = _inputs(bundle.inputs(index), rng)
                for _ in range(2):
                    want = python.run(*args, method=method)
                    got = native.run(*args, method=method)
                    assert len(got) == len(want), (name, function)
                    for g, w in zip(got, want, strict=True):
                        assert same_bits(g, w), (name, function)
            for state in python.state_names:
                assert same_bits(native.read_state(state), python.read_state(state)), state


def test_crafted_bundles_refused_by_both(entries: list[tuple[str, bytes, str | None]]) -> None:
    """Every crafted bundle of the corpus is refused by the Python loader (with its expected
    message) and by the native runtime (a one-line error, no crash); those whose fault is a
    dispatch's workgroups or extents (the kernels' rules) with the Python loader's text."""
    crafted = [(n, d, e) for n, d, e in entries if e is not None]
    refused = {"python": 0, "native": 0, "both": 0}
    wrong = []
    for name, data, expected in crafted:
        python = python_error(data, f"{name}.qvk")
        native = native_error(data, f"{name}.qvk")
        refused["python"] += python is not None
        refused["native"] += native is not None
        refused["both"] += python is not None and native is not None
        if python is None or expected not in python:
            wrong.append(f"{name}: python {python!r}")
        if native is None or "\n" in native:
            wrong.append(f"{name}: native {native!r}")
        elif python is not None and ("workgroups" in expected or "can touch" in expected):
            if native != python:
                wrong.append(f"{name}: native {native!r} python {python!r}")
    print(f"{len(crafted)} crafted bundles refused by python {refused['python']}, native "
          f"{refused['native']}, both {refused['both']}")  # fmt: skip
    assert not wrong, "\n".join(wrong)


def test_fuzz_mutants_refused_by_both(seeds: Path) -> None:
    """The untrusted-input fuzzer's `.qvk` mutants (fuzz_worker.mutate_qvk, 240 from the
    corpus's MLP, Llama and KV-decoder bundles): the native runtime refuses exactly the
    mutants the Python loader refuses, with the same message when the fault is a
    dispatch's workgroup count or extents."""
    fuzz_worker = _load_module("qopt_fuzz_worker", UNTRUSTED / "fuzz_worker.py")
    rng = random.Random(24)
    names = ("mlp.qvk", "llama.qvk", "kv.qvk")
    counts = {"python": 0, "native": 0, "both": 0, "rules": 0}
    wrong = []
    for i in range(240):
        seed = names[i % len(names)]
        data, kind, detail = fuzz_worker.mutate_qvk(rng, seeds / seed, "MARKER")
        python, native = python_error(data, "m.qvk"), native_error(data, "m.qvk")
        counts["python"] += python is not None
        counts["native"] += native is not None
        counts["both"] += python is not None and native is not None
        rules = python is not None and ("can touch" in python or "workgroups, more" in python)
        counts["rules"] += rules
        if (python is None) != (native is None) or (native is not None and "\n" in native):
            wrong.append(f"{seed} {kind} {detail}: python {python!r} native {native!r}")
        elif rules:
            if native != python:
                wrong.append(f"{seed} {kind} {detail}: python {python!r} native {native!r}")
    print(f"240 mutants refused by python {counts['python']}, native {counts['native']}, both "
          f"{counts['both']} ({counts['rules']} for a dispatch's workgroups or extents)")  # fmt: skip
    assert not wrong, "\n".join(wrong[:10])


def _rules_fn() -> Any:
    from qopt.backends.vulkan.native import _Error, _load

    fn = _load().qvk_kernel_rules
    p64 = ctypes.POINTER(ctypes.c_int64)
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_char_p, p64, ctypes.c_size_t, p64, ctypes.c_size_t, p64, p64,
                   ctypes.c_size_t, ctypes.POINTER(_Error)]  # fmt: skip
    return fn, _Error


def _python_rules(spec: KernelSpec, push: dict[str, Any], values: dict[str, int]) -> tuple:
    try:
        groups = tuple(int(g) for g in spec.workgroups(push, values))
        if spec.extents is None:
            return ("refused", f"kernel {spec.name} declares no buffer extents")
        ext = spec.extents(push, values)
        return ("ok", groups, tuple(int(ext[b.name]) for b in spec.bindings))
    except ValueError as e:
        return ("refused", str(e))
    except ZeroDivisionError as e:  # a rule without its guard: refused natively
        return ("refused", f"ZeroDivisionError: {e}")


def _native_rules(fn: Any, error: Any, spec: KernelSpec, push: dict[str, Any],
                  values: dict[str, int]) -> tuple:  # fmt: skip
    n_push, n_spec, n_bind = len(spec.push), len(spec.spec), len(spec.bindings)
    p = (ctypes.c_int64 * max(1, n_push))(
        *[int(push[n]) if kind != "f32" else 0 for n, kind in spec.push]
    )
    s = (ctypes.c_int64 * max(1, n_spec))(*[values[n] for n, _ in spec.spec])
    groups, ext, err = (ctypes.c_int64 * 3)(), (ctypes.c_int64 * max(1, n_bind))(), error()
    status = fn(spec.name.encode(), p, n_push, s, n_spec, groups, ext, n_bind, ctypes.byref(err))
    if status:
        return ("refused", err.message.decode())
    return ("ok", tuple(groups), tuple(ext[i] for i in range(n_bind)))


def test_native_rules_match_the_python_rules() -> None:
    """qvk_kernel_rules (the C the runtime checks dispatches with) against each kernel's
    Python `workgroups` / `extents` on random push and in-range specialization values
    (small, large, near 2^31 and 2^32, negative i32): the same counts, or the same refusal
    text; where an intermediate value leaves 64 bits (push values near 2^32 multiplied
    together) the native rules refuse, also where Python's exact integers go on to accept
    (counted; docs/native-runtime.md)."""
    fn, error = _rules_fn()
    rng = random.Random(7)
    small = [0, 1, 2, 3, 4, 5, 7, 8, 16, 31, 32, 33, 64, 128]
    large = [1000, 4096, 65535, 65536, 2**20, 2**31 - 1, 2**31, 2**32 - 1]

    def push_value(kind: str) -> int:
        r = rng.random()
        v = rng.choice(small) if r < 0.7 else rng.choice(large) if r < 0.9 else rng.getrandbits(32)
        if kind == "i32":
            v = v - 2**32 if v >= 2**31 else v
            if rng.random() < 0.1:
                v = -rng.choice([*small, 2**31])
        return v

    def spec_value(low: int, high: int, default: int) -> int:
        r = rng.random()
        if r < 0.3:
            return default
        picks = [x for x in (low, high, low + 1, high - 1, default, *small) if low <= x <= high]
        return rng.choice(picks) if r < 0.85 else rng.randint(low, high)

    table = catalogue()
    for v in variants():  # each kernel variant too, by its name base@variant
        table[f"{v.base}@{v.name}"] = v.kernel(table[v.base])
    tally = {"same values": 0, "same refusal": 0, "overflow": 0}
    wrong = []
    for name in sorted(table):
        spec = table[name]
        for _ in range(150):
            push = {n: push_value(k) if k != "f32" else 0.5 for n, k in spec.push}
            values = spec.spec_values(
                {n: spec_value(*spec.spec_bounds[n], d) for n, d in spec.spec}
            )
            python = _python_rules(spec, push, values)
            native = _native_rules(fn, error, spec, push, values)
            if python == native:
                tally["same values" if python[0] == "ok" else "same refusal"] += 1
            elif native[0] == "refused" and OVERFLOW in native[1]:
                # only values far beyond any real tensor's sizes can get there
                largest = max([abs(v) for v in push.values()] + list(values.values()))
                if largest < 2**20:
                    wrong.append(f"{name} push {push} spec {values}: native {native}")
                tally["overflow"] += 1
            elif python[0] == native[0] == "refused" and python[1].startswith("ZeroDivision"):
                tally["same refusal"] += 1
            else:
                wrong.append(f"{name} push {push} spec {values}: python {python} native {native}")
    print(f"kernel rules, python vs native: {tally}")
    assert not wrong, "\n".join(wrong[:5])
    assert tally["overflow"] < 0.1 * sum(tally.values())
    assert tally["same values"] > 0.3 * sum(tally.values())


def test_crafted_bundles_under_asan(entries: list[tuple[str, bytes, str | None]],
                                    tmp_path: Path) -> None:  # fmt: skip
    """A sample of the crafted bundles through the AddressSanitizer + UBSan build of
    qvk-run (build/runtime-asan): each refused with one line and exit status 1, no
    sanitizer report."""
    if not ASAN_RUN.is_file():
        reason = (
            f"{ASAN_RUN.relative_to(ROOT)} is not built (scripts/setup.sh builds it with clang)"
        )
        print(f"skipped: {reason}")
        pytest.skip(reason)
    crafted = [(n, d) for n, d, e in entries if e is not None]
    sample = crafted[:: max(1, len(crafted) // 16)]
    for name, data in sample:
        path = tmp_path / f"{name}.qvk"
        path.write_bytes(data)
        run = subprocess.run([str(ASAN_RUN), str(path), "--list"], capture_output=True,
                             text=True, check=False, timeout=120)  # fmt: skip
        assert run.returncode == 1, (name, run.stdout[-500:], run.stderr[-2000:])
        assert "Sanitizer" not in run.stderr, name
        assert "runtime error" not in run.stderr, name
        assert run.stderr.startswith("qvk-run: error: "), name
        assert run.stderr.count("\n") == 1, name
