"""The kernel catalogue's prebuilt SPIR-V: compiled once, at install time, shipped
inside the package.

`python -m qopt.kernels.build` (scripts/setup.sh runs it after `pip install -e .`)
compiles every kernel source (`qopt.kernels.source.kernel_source`) with
`glslangValidator`, validates it with `spirv-val` and writes the set into
`qopt/kernels/spirv/` (generated, never committed; package data): one `<stem>.spv`
per kernel source and `index.json`:

    {"format": 1, "compiler": "<glslangValidator --version, first line>",
     "flags": ["-V", "--target-env", "vulkan1.2"],
     "kernels": {"unary.glsl": {"file": "unary.spv", "key": <hex>,
                                "source_sha256": <hex>, "spirv_sha256": <hex>}}}

`key` is the SHA-256 of compiler, flags and source (the key of the compile cache of
qopt/backends/vulkan/spirv.py). Compiling a model and loading a `.qvk` read this set:
neither runs a shader compiler. `prebuilt_spirv(glsl)` gives a kernel's SPIR-V only
when its recorded `source_sha256` is the hash of the source as it is now and the
file's bytes have their recorded hash; otherwise (no set, or a developer edited a
kernel since the set was built) it gives None and the caller compiles (and caches)
as it did before the set existed.

This module reads files only: it runs nothing.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any, cast

from qopt.kernels.source import kernel_source

PREBUILT_DIR = Path(__file__).parent / "spirv"
"""Where the prebuilt set lives (inside the installed package)."""
INDEX_NAME = "index.json"
FORMAT = 1
"""The version of `index.json`'s layout."""
MAX_SPIRV_BYTES = 4 << 20
"""Largest prebuilt SPIR-V file read (a kernel's is tens of KiB)."""


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@functools.cache
def source_sha256(glsl_name: str) -> str:
    """The SHA-256 of the GLSL qopt compiles for `glsl_name` (once per process)."""
    return sha256(kernel_source(glsl_name).encode())


def read_index(directory: Path = PREBUILT_DIR) -> dict[str, Any] | None:
    """The set's index, or None when there is none (or it is unreadable or of another
    format)."""
    try:
        index = json.loads((directory / INDEX_NAME).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(index, dict):
        return None
    found = cast(dict[str, Any], index)
    if found.get("format") != FORMAT or not isinstance(found.get("kernels"), dict):
        return None
    return found


@functools.cache
def _index(directory: Path) -> dict[str, Any] | None:
    return read_index(directory)


def _entry(glsl_name: str, directory: Path) -> dict[str, Any] | None:
    index = _index(directory)
    if index is None:
        return None
    entry = index["kernels"].get(glsl_name)
    return cast(dict[str, Any], entry) if isinstance(entry, dict) else None


def stale_reason(glsl_name: str, directory: Path | None = None) -> str | None:
    """Why `prebuilt_spirv(glsl_name)` is None (None when it is not)."""
    directory = PREBUILT_DIR if directory is None else directory
    if _index(directory) is None:
        return f"there is no prebuilt kernel set in {directory}"
    entry = _entry(glsl_name, directory)
    if entry is None:
        return f"the prebuilt kernel set has no {glsl_name}"
    if entry.get("source_sha256") != source_sha256(glsl_name):
        return f"{glsl_name} changed since the prebuilt kernel set was built"
    if _read(glsl_name, directory) is None:
        return f"the prebuilt SPIR-V of {glsl_name} is missing or damaged"
    return None


@functools.cache
def _read(glsl_name: str, directory: Path) -> bytes | None:
    entry = _entry(glsl_name, directory)
    if entry is None:
        return None
    name = entry.get("file")
    if not isinstance(name, str) or Path(name).name != name or not name.endswith(".spv"):
        return None
    try:
        with open(directory / name, "rb") as f:
            data = f.read(MAX_SPIRV_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_SPIRV_BYTES or sha256(data) != entry.get("spirv_sha256"):
        return None
    return data


def prebuilt_spirv(glsl_name: str, directory: Path | None = None) -> bytes | None:
    """The prebuilt SPIR-V of kernel source `glsl_name` if the set has it for the
    source as it is now (see the module docstring), else None."""
    where = PREBUILT_DIR if directory is None else directory
    entry = _entry(glsl_name, where)
    if entry is None or entry.get("source_sha256") != source_sha256(glsl_name):
        return None
    return _read(glsl_name, where)


def forget() -> None:
    """Drop what this process read of the set (after it was rebuilt)."""
    _index.cache_clear()
    _read.cache_clear()
    source_sha256.cache_clear()
