"""Artifacts as files and objects: a repr naming the target, each method's
signature and the size; `.save` as coremltools saves (`.mlpackage` added to a bare
name); files 0644 under umask 022, as `open()` makes them; and the same program
compiled twice gives byte-identical `.mlpackage` and `.qvk` files."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from shared_exports import exported
from torch.export import ExportedProgram

import qopt


def mlp() -> ExportedProgram:
    return exported("mlp", "w4g32")


@pytest.fixture
def umask_022() -> Iterator[None]:
    saved = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(saved)


def tree_digest(root: Path) -> dict[str, str]:
    """SHA-256 of every file under `root`, by relative path."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_coreml_artifact(tmp_path: Path, umask_022: None) -> None:
    first, second = (qopt.compile(mlp(), "coreml") for _ in range(2))
    text = repr(first)
    assert text.startswith("CoremlArtifact(iOS18, fp16, weights "), text
    assert text.endswith("\n  forward(x: float32[4, 64]) -> (linear_2: float32[4, 32])"), text
    path = Path(first.save(tmp_path / "a"))  # coremltools' convention: .mlpackage added
    assert path == tmp_path / "a.mlpackage"
    assert stat.S_IMODE(path.stat().st_mode) == 0o755
    files = [p for p in path.rglob("*") if p.is_file()]
    assert {stat.S_IMODE(p.stat().st_mode) for p in files} == {0o644}
    # Reproducible: Manifest.json's item identifiers and model.mlmodel (no date) too.
    other = Path(second.save(tmp_path / "b.mlpackage"))
    digests = tree_digest(path)
    assert set(digests) == {
        "Manifest.json",
        "Data/com.apple.CoreML/model.mlmodel",
        "Data/com.apple.CoreML/weights/weight.bin",
    }
    assert tree_digest(other) == digests
    with pytest.raises(qopt.QoptError, match=r"saved as a \.mlpackage directory, not"):
        first.save(tmp_path / "a.zip")
    loaded = qopt.load(path)
    assert repr(loaded).startswith("CoremlArtifact(iOS18, fp16, weights ")
    assert f"loaded from '{path}'" in repr(loaded)


def test_vulkan_artifact(tmp_path: Path, umask_022: None) -> None:
    if shutil.which("glslangValidator") is None:
        pytest.skip("glslangValidator is not installed")
    first, second = (qopt.compile(mlp(), "vulkan") for _ in range(2))
    text = repr(first)
    assert text.startswith("VulkanArtifact("), text
    assert " kernels, constants " in text.splitlines()[0]
    assert text.endswith("\n  forward(float32[4, 64]) -> (float32[4, 32])"), text
    assert first.to_bytes() == second.to_bytes()
    path = tmp_path / "m.qvk"
    first.save(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert path.read_bytes() == second.to_bytes()
