"""GLSL -> SPIR-V: `glslangValidator -V --target-env vulkan1.2`, checked with
`spirv-val`, cached by content hash.

A kernel's source is `qopt.kernels.source.kernel_source`: its file under
qopt/kernels/glsl/ with the op-code names of qopt/kernels/opcodes.py inserted (the
catalogue owns the sources, so the lowering can hash them without this backend).

The cache lives in `$QOPT_CACHE_DIR/spirv` (default `~/.cache/qopt/spirv`, or
`$XDG_CACHE_HOME/qopt/spirv`); a cache entry is keyed by the SHA-256 of the
GLSL source as compiled (generated op-code block included), the compiler's
version line and the compile flags, so editing a kernel or an op-code table, or
upgrading glslang, recompiles it. Nothing compiled is ever committed.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from qopt.errors import QoptError
from qopt.kernels.source import kernel_source

TARGET_ENV = "vulkan1.2"

_PACKAGES = {
    "glslangValidator": "glslang-tools",
    "spirv-val": "spirv-tools",
}


def have_tool(name: str) -> bool:
    return shutil.which(name) is not None


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise QoptError(
            f"'{name}' was not found on PATH: it is needed to build qopt's Vulkan kernels; "
            f"install it (Debian/Ubuntu: `apt-get install {_PACKAGES[name]}`)"
        )
    return path


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


@functools.lru_cache(maxsize=1)
def _compiler_version() -> str:
    out = subprocess.run(
        [_tool("glslangValidator"), "--version"], capture_output=True, text=True, check=False
    )
    return out.stdout.splitlines()[0] if out.stdout else "unknown"


def compile_glsl(source: str, name: str = "kernel.comp", validate: bool = True) -> bytes:
    """SPIR-V words (as bytes) of a GLSL 450 compute shader; cached by content hash."""
    flags = ("-V", "--target-env", TARGET_ENV)
    key = hashlib.sha256(
        "\0".join((_compiler_version(), " ".join(flags), source)).encode()
    ).hexdigest()
    cached = cache_dir() / f"{key}.spv"
    if cached.is_file():
        return cached.read_bytes()
    with tempfile.TemporaryDirectory(prefix="qopt-spirv-") as tmp:
        src = Path(tmp) / (Path(name).stem + ".comp")
        out = Path(tmp) / "out.spv"
        src.write_text(source)
        result = subprocess.run(
            [_tool("glslangValidator"), *flags, "-o", str(out), str(src)],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0 or not out.is_file():
            raise QoptError(
                f"glslangValidator failed on Vulkan kernel {name}:\n{result.stdout}{result.stderr}"
            )
        if validate:
            validate_spirv(out.read_bytes(), name)
        data = out.read_bytes()
    # atomic publish: concurrent test workers may compile the same kernel
    fd, tmp_path = tempfile.mkstemp(dir=cached.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp_path, cached)
    return data


def validate_spirv(spirv: bytes, name: str = "kernel") -> None:
    """Run `spirv-val --target-env vulkan1.2`; a failure raises QoptError."""
    with tempfile.NamedTemporaryFile(suffix=".spv") as f:
        f.write(spirv)
        f.flush()
        result = subprocess.run(
            [_tool("spirv-val"), "--target-env", TARGET_ENV, f.name],
            capture_output=True,
            text=True,
            check=False,
        )
    if result.returncode != 0:
        raise QoptError(f"spirv-val rejected Vulkan kernel {name}:\n{result.stdout}{result.stderr}")


def compile_kernel(glsl_name: str) -> bytes:
    """SPIR-V of `kernels/<glsl_name>` (compiled and validated once, then cached)."""
    return compile_glsl(kernel_source(glsl_name), glsl_name)
