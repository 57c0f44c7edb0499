"""The Python `.qvk` reader on the shared corpus (qvk_corpus.py, docs/qvk-format.md
§6): every valid bundle loads, every crafted one is refused with its expected
one-line QoptError; the corpus covers every kind of buffer, a multi-method stateful
program, size variants and host segments."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from qopt.backends.vulkan.qvk import load_bundle
from qopt.errors import QoptError

_spec = importlib.util.spec_from_file_location(
    "qopt_qvk_corpus", Path(__file__).resolve().parent / "qvk_corpus.py"
)
assert _spec is not None
assert _spec.loader is not None
qc = importlib.util.module_from_spec(_spec)
sys.modules["qopt_qvk_corpus"] = qc
_spec.loader.exec_module(qc)


@pytest.fixture(scope="module")
def entries(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, bytes, str | None]]:
    from qopt.kernels.prebuilt import prebuilt_spirv

    if prebuilt_spirv("unary.glsl") is None and not __import__("shutil").which("glslangValidator"):
        pytest.skip("no prebuilt kernel SPIR-V and no glslang: `python -m qopt.kernels.build`")
    return list(qc.corpus(qc.make_seeds(tmp_path_factory.mktemp("qvk_seeds"))))


def test_corpus_loads_and_refuses(entries: list[tuple[str, bytes, str | None]]) -> None:
    names = [name for name, _, _ in entries]
    assert len(names) == len(set(names))
    wrong = []
    for name, data, expected in entries:
        try:
            program = load_bundle(data, f"{name}.qvk")
        except QoptError as e:
            message = str(e)
            if expected is None or expected not in message or "\n" in message:
                wrong.append(f"{name}: refused: {message[:300]}")
            continue
        if expected is not None:
            wrong.append(f"{name}: loaded, expected an error with {expected!r}")
        elif name == "valid-kv":
            assert [m.name for m in program.methods] == ["forward", "prefill"]
            assert len(program.states) >= 2
        elif name == "valid-variants":
            assert [m.name for m in program.methods] == ["forward__1", "forward__3"]
        elif name == "valid-host":
            assert program.host_calls
    assert not wrong, "\n".join(wrong)


def test_corpus_covers_each_kind() -> None:
    """Valid seeds with every buffer kind between them, and crafted cases for each part
    of the format (header, manifest, blobs, kernels, methods, buffers, states, tensors,
    dispatches, status words, host segments)."""
    prefixes = {name.split("-")[0] for name, *_ in [*qc.BYTES_CASES, *qc.MANIFEST_CASES]}
    assert prefixes >= {"header", "manifest", "blob", "constant", "kernel", "spirv", "record",
                        "methods", "buffer", "device", "state", "tensor", "input", "output",
                        "dispatch", "status", "host"}  # fmt: skip
    assert qc.NEEDS_INTERPRETER == {"valid-host"}
