"""Build the kernel catalogue's SPIR-V once: `python -m qopt.kernels.build`.

Compiles every kernel source of the catalogue (each `KernelSpec.glsl`, as
`qopt.kernels.source.kernel_source` makes it) with `glslangValidator -V
--target-env vulkan1.2`, validates each with `spirv-val`, and writes the set
qopt/kernels/prebuilt.py describes into `qopt/kernels/spirv/` (or `--out DIR`).
Incremental: a kernel whose key (compiler version, flags, source) is already in
the set with intact bytes is kept, so a second run compiles nothing. `--check`
compiles nothing and exits 1 when the set is missing or stale.

scripts/setup.sh runs it after `pip install -e .`; a developer who edits a kernel
reruns it (until then qopt compiles that kernel on first use, and says so once).
The glslang and spirv-val runners here are also what qopt/backends/vulkan/spirv.py
compiles with when the set has no SPIR-V for a source.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from qopt.errors import QoptError
from qopt.kernels import catalogue
from qopt.kernels.prebuilt import (
    FORMAT,
    INDEX_NAME,
    PREBUILT_DIR,
    forget,
    read_index,
    sha256,
)
from qopt.kernels.source import kernel_source
from qopt.kernels.variants import variants

TARGET_ENV = "vulkan1.2"
FLAGS = ("-V", "--target-env", TARGET_ENV)
"""glslangValidator's flags for every kernel."""

_PACKAGES = {
    "glslangValidator": "glslang-tools",
    "spirv-val": "spirv-tools",
}


def have_tool(name: str) -> bool:
    return shutil.which(name) is not None


def tool(name: str) -> str:
    """The path of shader tool `name` (QoptError naming the package when missing)."""
    path = shutil.which(name)
    if path is None:
        raise QoptError(
            f"'{name}' was not found on PATH: it is needed to build qopt's Vulkan kernels; "
            f"install it (Debian/Ubuntu: `apt-get install {_PACKAGES[name]}`)"
        )
    return path


@functools.cache
def compiler_version() -> str:
    """The first line of `glslangValidator --version`."""
    out = subprocess.run(
        [tool("glslangValidator"), "--version"], capture_output=True, text=True, check=False
    )
    return out.stdout.splitlines()[0] if out.stdout else "unknown"


def content_key(source: str, compiler: str | None = None) -> str:
    """The SHA-256 (hex) of compiler version, flags and source: what a compiled kernel
    is keyed by (prebuilt set and compile cache alike)."""
    version = compiler_version() if compiler is None else compiler
    return hashlib.sha256("\0".join((version, " ".join(FLAGS), source)).encode()).hexdigest()


def spirv_val(spirv: bytes, name: str = "kernel") -> None:
    """Run `spirv-val --target-env vulkan1.2`; a failure raises QoptError."""
    with tempfile.NamedTemporaryFile(suffix=".spv") as f:
        f.write(spirv)
        f.flush()
        result = subprocess.run(
            [tool("spirv-val"), "--target-env", TARGET_ENV, f.name],
            capture_output=True,
            text=True,
            check=False,
        )
    if result.returncode != 0:
        raise QoptError(f"spirv-val rejected Vulkan kernel {name}:\n{result.stdout}{result.stderr}")


def glslang(source: str, name: str = "kernel.comp", validate: bool = True) -> bytes:
    """The SPIR-V of one GLSL 450 compute shader (no cache), validated with spirv-val
    unless `validate` is false."""
    with tempfile.TemporaryDirectory(prefix="qopt-spirv-") as tmp:
        src = Path(tmp) / (Path(name).stem + ".comp")
        out = Path(tmp) / "out.spv"
        src.write_text(source)
        result = subprocess.run(
            [tool("glslangValidator"), *FLAGS, "-o", str(out), str(src)],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0 or not out.is_file():
            raise QoptError(
                f"glslangValidator failed on Vulkan kernel {name}:\n{result.stdout}{result.stderr}"
            )
        data = out.read_bytes()
    if validate:
        spirv_val(data, name)
    return data


def kernel_sources() -> list[str]:
    """Every kernel source of the catalogue, sorted."""
    return sorted({spec.glsl for spec in catalogue().values()} | {v.glsl for v in variants()})


def _write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _current(entry: Any, key: str, directory: Path) -> bool:
    """Whether the set's `entry` is `key`'s, its file intact."""
    if not isinstance(entry, dict):
        return False
    record = cast(dict[str, Any], entry)
    name = record.get("file")
    if record.get("key") != key or not isinstance(name, str):
        return False
    try:
        data = (directory / name).read_bytes()
    except OSError:
        return False
    return sha256(data) == record.get("spirv_sha256")


def stale_sources(directory: Path = PREBUILT_DIR) -> list[str]:
    """The kernel sources whose prebuilt SPIR-V is missing or out of date (runs
    `glslangValidator --version` for the key; compiles nothing)."""
    index = read_index(directory) or {"kernels": {}}
    compiler = compiler_version()
    return [
        glsl
        for glsl in kernel_sources()
        if not _current(
            index["kernels"].get(glsl), content_key(kernel_source(glsl), compiler), directory
        )
    ]


def build(directory: Path = PREBUILT_DIR, log: Any = None) -> tuple[int, int]:
    """Bring the prebuilt set in `directory` up to date; (compiled, kept) counts.
    Each file is written atomically, the index last, so a reader sees the old set or
    the new one."""
    directory.mkdir(parents=True, exist_ok=True)
    old = read_index(directory) or {"kernels": {}}
    compiler = compiler_version()
    kernels: dict[str, Any] = {}
    compiled = kept = 0
    for glsl in kernel_sources():
        source = kernel_source(glsl)
        key = content_key(source, compiler)
        previous = old["kernels"].get(glsl)
        if _current(previous, key, directory):
            kernels[glsl] = previous
            kept += 1
            continue
        data = glslang(source, glsl)
        name = Path(glsl).stem + ".spv"
        _write(directory / name, data)
        kernels[glsl] = {
            "file": name,
            "key": key,
            "source_sha256": sha256(source.encode()),
            "spirv_sha256": sha256(data),
        }
        compiled += 1
        if log is not None:
            print(f"qopt: compiled {glsl} ({len(data)} bytes)", file=log)
    index = {"format": FORMAT, "compiler": compiler, "flags": list(FLAGS), "kernels": kernels}
    text = json.dumps(index, indent=1, sort_keys=True) + "\n"
    if compiled or read_index(directory) != json.loads(text):
        _write(directory / INDEX_NAME, text.encode())
    known = {e["file"] for e in kernels.values()}
    for path in directory.glob("*.spv"):  # a kernel source that was removed
        if path.name not in known:
            path.unlink()
    forget()
    return compiled, kept


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m qopt.kernels.build",
        description="Compile qopt's Vulkan kernels to SPIR-V once (the prebuilt set).",
    )
    parser.add_argument("--out", type=Path, default=PREBUILT_DIR, help="the set's directory")
    parser.add_argument(
        "--check", action="store_true", help="compile nothing: exit 1 if the set is stale"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    args = parser.parse_args(argv)
    try:
        if args.check:
            stale = stale_sources(args.out)
            if stale:
                print(f"qopt: prebuilt SPIR-V is stale for {', '.join(stale)}", file=sys.stderr)
                return 1
            print(f"qopt: prebuilt SPIR-V in {args.out} is up to date")
            return 0
        compiled, kept = build(args.out, None if args.quiet else sys.stderr)
    except QoptError as e:
        print(f"qopt: error: {e}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"qopt: prebuilt SPIR-V in {args.out}: {compiled} compiled, {kept} up to date")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
