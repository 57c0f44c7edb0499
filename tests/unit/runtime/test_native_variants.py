"""Kernel variants (qopt.kernels.variants) in the native runtime: its rule (generated
from the Python table) picks what Python's `choose` picks on made-up devices, and with
variants on (QOPT_VK_VARIANTS=all, so lavapipe runs the GPU-preferred cooperative GEMV)
a KV decoder's logits and caches are bit-identical between the two runtimes, within
tolerance of the base kernels' (the variants sum in another order). Skipped, with the
reason printed, when there is no Vulkan device or the runtime is not built."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from shared_exports import kv_decoder_methods

import qopt
from qopt.backends.vulkan.native import NativeBundle, native_library, native_variant
from qopt.errors import QoptError
from qopt.kernels import catalogue
from qopt.kernels.qlinear import linear_tile
from qopt.kernels.variants import (
    DEVICE_CPU,
    DEVICE_DISCRETE_GPU,
    DEVICE_INTEGRATED_GPU,
    DeviceProps,
    choose,
    variants,
)

CONFIG = {"vocab_size": 64, "dim": 64, "n_layers": 2, "n_heads": 4, "hidden_dim": 128,
          "max_seq_len": 24}  # fmt: skip
PROMPT = [5, 9, 2, 33, 7, 1]


@pytest.fixture(scope="module", autouse=True)
def _native() -> None:
    from qopt.backends.vulkan.runtime import vulkan_available

    reason = native_library()
    if reason is None:
        reason = vulkan_available()
    if reason is not None:
        print(f"native variant tests skipped: {reason}")
        pytest.skip(reason)


PROPS = [
    DeviceProps(DEVICE_DISCRETE_GPU, 32, 0x20, 0xFF, 49152, True, True),
    DeviceProps(DEVICE_INTEGRATED_GPU, 64, 0x3F, 0x05),
    DeviceProps(DEVICE_CPU, 8, 0x30, 0xBF, 32768, True, True),
    DeviceProps(DEVICE_DISCRETE_GPU, 32, 0x20, 0x01),  # no arithmetic
    DeviceProps(DEVICE_DISCRETE_GPU, 32, 0x10, 0xFF),  # not in compute
    DeviceProps(7, 16, 0x20, 0xFF),  # an unknown device type
]


def test_rule_is_the_same_in_both_runtimes() -> None:
    table = catalogue()
    rng = np.random.default_rng(6)
    for v in variants():
        base = table[v.base]
        cases = [{"M": 1, "N": 2048, "K": 2048, "row_words": 256, "ngroups": 64}]
        for _ in range(40):
            k = int(rng.integers(0, 300))
            cases.append({
                "M": int(rng.integers(0, 3)), "N": int(rng.integers(0, 40)), "K": k,
                "row_words": int(rng.choice([4 * -(-k // 32), 4 * -(-k // 16), 4])),
                "ngroups": int(rng.integers(0, 10)),
            })  # fmt: skip
        for push, props, mode, zp in itertools.product(
            cases, PROPS, ("auto", "base", "all"), (0, 1)
        ):
            values = base.spec_values({"GROUP_SIZE": 32, "HAS_ZERO_POINT": zp, **linear_tile(1)})
            want = choose(v.base, props, push, values, mode)
            got = native_variant(
                v.base, props, [push[n] for n, _ in base.push], list(values.values()), mode
            )
            assert got == (want.name if want else None), (push, props, mode)
    with pytest.raises(QoptError, match="QOPT_VK_VARIANTS='fast': not a variant mode"):
        q4 = table["linear_q4gsw"]
        native_variant(
            "linear_q4gsw", PROPS[0], [1] * len(q4.push), [int(d) for _, d in q4.spec], "fast"
        )


def _decoder(tmp_path: Path, scheme: str) -> Path:
    methods = kv_decoder_methods(CONFIG, PROMPT, scheme)
    path = tmp_path / "kv.qvk"
    qopt.compile(methods, target="vulkan").save(str(path))
    return path


def _run(path: Path, native: bool) -> tuple[list[np.ndarray], int]:
    calls = [("prefill", np.array([PROMPT]), np.arange(len(PROMPT)))]
    calls += [("decode", np.array([[t]]), np.array([6 + i])) for i, t in enumerate([3, 17, 40])]
    outs: list[np.ndarray] = []
    if native:
        with NativeBundle.open(path) as bundle, bundle.session() as s:
            for method, tokens, positions in calls:
                outs.extend(s.run(tokens, positions, method=method))
            outs.extend(s.read_state(n) for n in s.state_names)
            return outs, s.variant_dispatches
    s = qopt.load(str(path)).session()
    for method, tokens, positions in calls:
        outs.extend(s.run(tokens, positions, method=method))
    outs.extend(s.read_state(n) for n in s.state_names)
    dev = s._device  # pyright: ignore[reportPrivateUsage]
    count = sum(dev.variant_dispatches.values())
    s.close()
    return outs, count


@pytest.mark.parametrize("scheme", ["w4g32", "8da4w"])
def test_kv_decoder_bit_identical_with_variants(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scheme: str
) -> None:
    path = _decoder(tmp_path, scheme)
    monkeypatch.setenv("QOPT_VK_VARIANTS", "all")
    python, n_python = _run(path, native=False)
    native, n_native = _run(path, native=True)
    # decode's linears take a variant: w4g32's coop_gemv; 8da4w's linear_dq8ca_q4gsw its
    # coop_gemv_f16 (lavapipe has shaderFloat16)
    assert n_python == n_native > 0
    assert all(
        a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
        for a, b in zip(python, native, strict=True)
    )
    with NativeBundle.open(path) as bundle, bundle.session() as s:
        # the C runtime reads the device's properties as the Python runtime does
        dev = qopt.load(str(path)).device
        assert s.device_props == dev.props
        assert s.variant_mode == dev.variant_mode == "all"
    monkeypatch.setenv("QOPT_VK_VARIANTS", "base")
    base, n_base = _run(path, native=True)
    assert n_base == 0
    for got, want in zip(native, base, strict=True):
        if scheme == "8da4w":  # linear_dq8ca's variants keep the base's bits
            assert got.tobytes() == want.tobytes()
        scale = max(float(np.abs(want).max()), 1e-6)
        assert np.abs(got.astype(np.float64) - want).max() / scale < 1e-4
    monkeypatch.setenv("QOPT_VK_VARIANTS", "sometimes")
    with pytest.raises(QoptError, match="not a variant mode"):
        _run(path, native=True)
