"""A kernel's SPIR-V: the prebuilt set first, else `glslangValidator -V --target-env
vulkan1.2` checked with `spirv-val` and cached by content hash.

A kernel's source is `qopt.kernels.source.kernel_source`: its file under
qopt/kernels/glsl/ with the op-code names of qopt/kernels/opcodes.py inserted (the
catalogue owns the sources, so the lowering can hash them without this backend).

An install builds the whole catalogue's SPIR-V once (`python -m qopt.kernels.build`,
run by scripts/setup.sh; qopt/kernels/prebuilt.py): `compile_kernel` and the `.qvk`
loader (`expected_spirv`) read it and run no shader tool. Where that set has no
SPIR-V for a kernel's source as it is now (no set built, or a developer edited a
kernel since), qopt says so once and compiles that kernel as below.

The compile cache lives in `$QOPT_CACHE_DIR/spirv` (default `~/.cache/qopt/spirv`,
or `$XDG_CACHE_HOME/qopt/spirv`); a cache entry is keyed by the SHA-256 of the
GLSL source as compiled (generated op-code block included), the compiler's
version line and the compile flags (`qopt.kernels.build.content_key`), so editing
a kernel or an op-code table, or upgrading glslang, recompiles it. Nothing compiled
is ever committed.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from qopt.kernels.build import TARGET_ENV, content_key, glslang, have_tool, spirv_val
from qopt.kernels.prebuilt import prebuilt_spirv, stale_reason
from qopt.kernels.source import kernel_source

__all__ = [
    "TARGET_ENV",
    "cache_dir",
    "compile_glsl",
    "compile_kernel",
    "expected_spirv",
    "have_tool",
    "validate_spirv",
]

_said_stale = False


def cache_dir() -> Path:
    root = os.environ.get("QOPT_CACHE_DIR")
    if root:
        base = Path(root)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg) if xdg else Path.home() / ".cache") / "qopt"
    path = base / "spirv"
    path.mkdir(parents=True, exist_ok=True)
    return path


def compile_glsl(source: str, name: str = "kernel.comp", validate: bool = True) -> bytes:
    """SPIR-V words (as bytes) of a GLSL 450 compute shader; cached by content hash."""
    cached = cache_dir() / f"{content_key(source)}.spv"
    if cached.is_file():
        return cached.read_bytes()
    data = glslang(source, name, validate)
    # atomic publish: concurrent test workers may compile the same kernel
    fd, tmp_path = tempfile.mkstemp(dir=cached.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp_path, cached)
    return data


def validate_spirv(spirv: bytes, name: str = "kernel") -> None:
    """Run `spirv-val --target-env vulkan1.2`; a failure raises QoptError."""
    spirv_val(spirv, name)


def _say_stale(glsl_name: str) -> None:
    """Say once per process that kernels are compiled because the prebuilt set lacks one."""
    global _said_stale
    if _said_stale:
        return
    _said_stale = True
    print(
        f"qopt: note: {stale_reason(glsl_name)}: compiling kernels with glslangValidator "
        "(cached); run `python -m qopt.kernels.build` to rebuild the prebuilt set",
        file=sys.stderr,
    )


def compile_kernel(glsl_name: str) -> bytes:
    """SPIR-V of `kernels/<glsl_name>`: the prebuilt set's, else compiled and validated
    once, then cached."""
    data = prebuilt_spirv(glsl_name)
    if data is not None:
        return data
    _say_stale(glsl_name)
    return compile_glsl(kernel_source(glsl_name), glsl_name)


def expected_spirv(glsl_name: str) -> bytes | None:
    """What a bundle's SPIR-V for kernel source `glsl_name` must equal: the prebuilt
    set's; where the set lacks it, qopt's own compilation when glslang is installed
    (said once); None when neither is at hand."""
    data = prebuilt_spirv(glsl_name)
    if data is not None:
        return data
    if not have_tool("glslangValidator"):
        return None
    return compile_kernel(glsl_name)
