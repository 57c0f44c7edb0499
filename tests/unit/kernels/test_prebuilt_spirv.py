"""The kernel catalogue's prebuilt SPIR-V (qopt/kernels/prebuilt.py, built by
`python -m qopt.kernels.build`): its bytes are glslang's, compiling a model and
loading a `.qvk` run no shader tool (a fresh process with glslangValidator and
spirv-val off PATH), a stale or missing set falls back to compiling (said once), and
the build is incremental."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from qopt.backends.vulkan import spirv
from qopt.kernels import build, prebuilt
from qopt.kernels.source import kernel_source

HAVE_GLSLANG = shutil.which("glslangValidator") is not None
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def shipped() -> Path:
    """The package's prebuilt set, brought up to date (incremental: compiles only what
    changed) where glslang is installed; skipped, with why, where it cannot be."""
    if HAVE_GLSLANG and shutil.which("spirv-val") is not None:
        build.build()
    stale = [g for g in build.kernel_sources() if prebuilt.prebuilt_spirv(g) is None]
    if stale:
        pytest.skip(
            f"no prebuilt SPIR-V for {', '.join(stale[:3])}... and no glslang to build it "
            "(`python -m qopt.kernels.build`)"
        )
    return prebuilt.PREBUILT_DIR


@pytest.fixture
def copied(shipped: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of the shipped set, used as the package's set for one test."""
    target = tmp_path / "spirv"
    shutil.copytree(shipped, target)
    monkeypatch.setattr(prebuilt, "PREBUILT_DIR", target)
    monkeypatch.setattr(spirv, "_said_stale", False)
    prebuilt.forget()
    yield target
    prebuilt.forget()


def _edit_index(directory: Path, glsl: str, **changes: str) -> None:
    path = directory / prebuilt.INDEX_NAME
    index = json.loads(path.read_text())
    index["kernels"][glsl].update(changes)
    path.write_text(json.dumps(index))
    prebuilt.forget()


def test_every_kernel_source_is_prebuilt(shipped: Path) -> None:
    index = prebuilt.read_index(shipped)
    assert index is not None
    assert sorted(index["kernels"]) == build.kernel_sources()
    assert index["flags"] == list(build.FLAGS)
    for glsl in build.kernel_sources():
        data = prebuilt.prebuilt_spirv(glsl)
        assert data is not None, glsl
        assert data[:4] == b"\x03\x02\x23\x07", glsl  # the SPIR-V magic number
        assert index["kernels"][glsl]["source_sha256"] == prebuilt.source_sha256(glsl)


@pytest.mark.skipif(not HAVE_GLSLANG, reason="comparing with glslang needs glslangValidator")
@pytest.mark.parametrize(
    "glsl", ["unary.glsl", "linear_qw.glsl", "fused_elementwise.glsl", "sdpa.glsl"]
)
def test_prebuilt_bytes_are_glslangs(shipped: Path, glsl: str) -> None:
    """The set holds exactly what glslang gives for the source today (compiled afresh,
    no cache), under the key of this compiler, flags and source."""
    source = kernel_source(glsl)
    assert prebuilt.prebuilt_spirv(glsl) == build.glslang(source, glsl, validate=False)
    index = prebuilt.read_index(shipped)
    assert index is not None
    assert index["compiler"] == build.compiler_version()
    assert index["kernels"][glsl]["key"] == build.content_key(source)


def _strip_shader_tools() -> str:
    """PATH without any directory holding glslangValidator or spirv-val."""
    keep = [
        d
        for d in os.environ.get("PATH", "").split(os.pathsep)
        if d
        and not any(os.path.exists(os.path.join(d, t)) for t in ("glslangValidator", "spirv-val"))
    ]
    return os.pathsep.join(keep)


def test_compile_and_load_run_no_shader_tool(shipped: Path, tmp_path: Path) -> None:
    """Fresh processes with no shader tool on PATH and an empty compile cache: one
    compiles a module to a `.qvk` (qopt-opt -p qopt-vulkan -t vkbundle), another
    loads it with `qopt.load` (and runs it where there is a Vulkan device); nothing
    is compiled or cached, and nobody says the prebuilt set is stale."""
    cache = tmp_path / "cache"
    env = {
        **os.environ,
        "PATH": _strip_shader_tools(),
        "QOPT_CACHE_DIR": str(cache),
        "PYTHONPATH": str(ROOT),
    }
    compile_script = textwrap.dedent(
        """
        import shutil, sys
        from qopt.tools.qopt_opt import main
        assert shutil.which("glslangValidator") is None and shutil.which("spirv-val") is None
        try:
            main([sys.argv[1], "-p", "qopt-vulkan", "-t", "vkbundle", "-o", sys.argv[2]])
        except SystemExit as e:
            assert not e.code, e.code
        """
    )
    load_script = textwrap.dedent(
        """
        import shutil, sys
        import numpy as np
        import qopt
        from qopt.backends.vulkan.runtime import vulkan_available
        assert shutil.which("glslangValidator") is None and shutil.which("spirv-val") is None
        artifact = qopt.load(sys.argv[2])
        assert len(artifact.kernel_names) >= 1, artifact.kernel_names
        if vulkan_available() is None:
            x = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
            (y,) = artifact(x, np.array([1, 2, 3], np.float32))
            print("ran", y.tolist())
        else:
            print("loaded")
        """
    )
    source = ROOT / "tests" / "lit" / "tools" / "qopt-run.mlir"
    qvk = tmp_path / "m.qvk"
    for script in (compile_script, load_script):
        done = subprocess.run(
            [sys.executable, "-c", script, str(source), str(qvk)],
            env=env, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        assert "prebuilt" not in done.stderr, done.stderr[-2000:]  # no fallback note
    assert done.stdout.strip() in ("ran [[1.0, 0.0, 12.0], [0.0, 7.0, 0.0]]", "loaded")
    assert not list(cache.rglob("*.spv"))  # nothing compiled, nothing cached


@pytest.mark.skipif(not HAVE_GLSLANG, reason="the fallback compiles with glslangValidator")
def test_stale_set_falls_back_and_says_so_once(
    copied: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """A kernel edited since the set was built: its prebuilt SPIR-V is not used; qopt
    compiles it (with the compile cache), says so once, and the loader checks a
    bundle's SPIR-V against that compilation."""
    from qopt.backends.vulkan.checks import verify_spirv
    from qopt.backends.vulkan.program import KernelEntry

    monkeypatch.setenv("QOPT_CACHE_DIR", str(tmp_path / "cache"))
    good = prebuilt.prebuilt_spirv("unary.glsl")
    assert good is not None
    _edit_index(copied, "unary.glsl", source_sha256="0" * 64)
    assert prebuilt.prebuilt_spirv("unary.glsl") is None
    assert "changed since" in (prebuilt.stale_reason("unary.glsl") or "")
    assert spirv.compile_kernel("unary.glsl") == good
    assert spirv.compile_kernel("unary.glsl") == good
    assert spirv.expected_spirv("unary.glsl") == good
    err = capsys.readouterr().err
    assert err.count("qopt: note:") == 1, err
    assert "unary.glsl changed since" in err
    assert "python -m qopt.kernels.build" in err
    assert list((tmp_path / "cache" / "spirv").glob("*.spv"))  # compiled and cached
    verify_spirv(KernelEntry("unary", "unary.glsl", {}, good), "kernel 0")
    with pytest.raises(Exception, match="not qopt's compilation"):
        verify_spirv(KernelEntry("unary", "unary.glsl", {}, good[:-4]), "kernel 0")
    # another kernel of the same set is still read from it
    assert prebuilt.prebuilt_spirv("binary.glsl") is not None


def test_damaged_or_missing_set_is_not_used(copied: Path) -> None:
    data = (copied / "binary.spv").read_bytes()
    (copied / "binary.spv").write_bytes(data[:-4])
    prebuilt.forget()
    assert prebuilt.prebuilt_spirv("binary.glsl") is None
    assert "missing or damaged" in (prebuilt.stale_reason("binary.glsl") or "")
    (copied / prebuilt.INDEX_NAME).unlink()
    prebuilt.forget()
    assert prebuilt.prebuilt_spirv("unary.glsl") is None
    assert "no prebuilt kernel set" in (prebuilt.stale_reason("unary.glsl") or "")


@pytest.mark.skipif(
    not (HAVE_GLSLANG and shutil.which("spirv-val")), reason="building needs glslang and spirv-val"
)
def test_build_is_incremental(copied: Path) -> None:
    assert build.build(copied) == (0, len(build.kernel_sources()))
    assert build.main(["--check", "--out", str(copied)]) == 0
    _edit_index(copied, "binary.glsl", key="0" * 64)
    assert build.stale_sources(copied) == ["binary.glsl"]
    assert build.main(["--check", "--out", str(copied)]) == 1
    assert build.build(copied) == (1, len(build.kernel_sources()) - 1)
    assert build.stale_sources(copied) == []
