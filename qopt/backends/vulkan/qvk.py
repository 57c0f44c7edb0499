"""The `.qvk` file: reading (`load_bundle`, `read_bundle`) and writing
(`bundle_parts`, `bundle_bytes`, `write_bundle`) a `BundleProgram`.

The format is specified in docs/qvk-format.md (normative): the header
`b"QVKB" u32 version u32 manifest_bytes`, the UTF-8 JSON manifest, then the blobs
(each kernel's SPIR-V, each constant buffer's words), each named by offset, size
and SHA-256. A reader checks all of it (`load_bundle`: header, blobs, then
checks.check_program and checks.verify_spirv) and raises one-line QoptErrors.

Loading a bundle imports no IR: this module, program.py, checks.py and spirv.py
need numpy, the kernel catalogue (qopt/kernels) and the prebuilt SPIR-V set only
(host segments, version 4, are the exception: checks.py parses their IR).
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from qopt.backends.vulkan.checks import as_int, as_list, as_record, check_program, verify_spirv
from qopt.backends.vulkan.program import (
    BundleProgram,
    HostCall,
    KernelEntry,
    Method,
    StateEntry,
    Step,
    Tensor,
)
from qopt.backends.vulkan.spirv import compile_kernel
from qopt.errors import QoptError
from qopt.files import temp_file_beside
from qopt.limits import DEFAULT_LIMITS, Limits
from qopt.version import qopt_version

MAGIC = b"QVKB"
VERSION = 4
"""2: the "status" buffer kind (index status words of gather_rows and the embeddings);
3: methods (several entry points) and states (the "state" buffer kind); 4: host
segments (`host_calls`)."""
MIN_VERSION = 3
"""The oldest version this qopt reads (a bundle is written as the oldest version
that holds what it uses: 3 without host segments)."""
_HEADER = struct.Struct("<4sII")

_CONSTANT_DTYPES = {"float32": np.float32, "int32": np.int32, "uint32": np.uint32}
"""The dtypes of constant buffers (32-bit words)."""


def fill_spirv(program: BundleProgram) -> None:
    """Give every kernel without SPIR-V its SPIR-V (`spirv.compile_kernel`: the prebuilt
    set's, else compiled and cached)."""
    for entry in program.kernels:
        if entry.spirv is None:
            entry.spirv = compile_kernel(entry.glsl)


def _sha(data: bytes | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()


#: Below this many bytes in all, `_digests` hashes in this thread.
PARALLEL_HASH_BYTES = 16 << 20


def _digests(blobs: Sequence[memoryview]) -> list[str]:
    """The SHA-256 of each blob, in order: several at once on threads when they are
    large (hashlib releases the GIL while it hashes, so the constant buffers of a
    large model hash on every core)."""
    total = sum(b.nbytes for b in blobs)
    workers = min(len(blobs), os.cpu_count() or 1, 8)
    if total < PARALLEL_HASH_BYTES or workers < 2:
        return [_sha(b) for b in blobs]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_sha, blobs))


def _constant_views(program: BundleProgram) -> list[memoryview]:
    """Each constant buffer's bytes (the bytes tobytes() gives), a view of its array."""
    return [np.ascontiguousarray(words).data.cast("B") for words in program.constants]


def bundle_parts(
    program: BundleProgram, digests: Sequence[str] | None = None
) -> list[bytes | memoryview]:
    """The `.qvk` file contents of `program` (compiling its kernels if needed), as the
    pieces that concatenate to it: the header and manifest, then each blob (SPIR-V,
    constant buffers) and its padding. Constant buffers are views of the program's
    arrays, not copies: writing the pieces one after the other (`write_bundle`) never
    holds the file in memory. `digests`: the constant buffers' SHA-256 (hex), in
    order, when the caller has them (else computed here)."""
    fill_spirv(program)
    blobs: list[bytes | memoryview] = []
    offset = 0

    def add(data: bytes | memoryview, digest: str | None = None) -> dict[str, Any]:
        nonlocal offset
        size = data.nbytes if isinstance(data, memoryview) else len(data)
        record = {"offset": offset, "size": size, "sha256": digest or _sha(data)}
        blobs.append(data)
        offset += size
        pad = (-offset) % 8
        if pad:
            blobs.append(b"\0" * pad)
            offset += pad
        return record

    spirv_blobs: dict[str, dict[str, Any]] = {}
    kernels = []
    for entry in program.kernels:
        assert entry.spirv is not None
        if entry.glsl not in spirv_blobs:
            spirv_blobs[entry.glsl] = add(entry.spirv)
        kernels.append(
            {
                "kernel": entry.kernel,
                "glsl": entry.glsl,
                "spec": entry.spec,
                "spirv": spirv_blobs[entry.glsl],
            }
        )
    raws = _constant_views(program)
    constants = [
        {"dtype": words.dtype.name, **add(raw, digest)}
        for words, raw, digest in zip(
            program.constants, raws, _digests(raws) if digests is None else digests, strict=True
        )
    ]
    manifest = {
        "magic": "qopt-vkbundle",
        "qopt_version": qopt_version(),
        "kernels": kernels,
        "constants": constants,
        "buffers": program.buffers,
        "slots": program.slots,
        "inputs": [vars(t) for t in program.inputs],
        "outputs": [vars(t) for t in program.outputs],
        "steps": [vars(s) for s in program.steps],
        "states": [vars(e) for e in program.states],
        "methods": [vars(m) for m in program.methods],
    }
    version = VERSION if program.host_calls else MIN_VERSION
    if program.host_calls:
        manifest["host_calls"] = [h.manifest() for h in program.host_calls]
    manifest["version"] = version
    text = json.dumps(manifest, sort_keys=True).encode()
    return [_HEADER.pack(MAGIC, version, len(text)) + text, *blobs]


def bundle_bytes(program: BundleProgram) -> bytes:
    """The `.qvk` file contents of `program` (compiling its kernels if needed)."""
    return b"".join(bundle_parts(program))


def write_bundle(program: BundleProgram, path: str | os.PathLike[str]) -> int:
    """Write the `.qvk` file of `program` atomically, piece by piece (`bundle_parts`:
    no copy of the constant buffers); returns its size in bytes.

    Large constants (`PARALLEL_HASH_BYTES` in all) are written while threads hash
    them: the header and manifest, whose length does not depend on the digests (each
    is 64 hex digits), are laid out with placeholder digests, the blobs written after
    that many bytes, and the real header and manifest written at the front last (the
    same bytes as `bundle_bytes`)."""
    fill_spirv(program)
    raws = _constant_views(program)
    workers = min(len(raws), os.cpu_count() or 1, 8)
    if sum(r.nbytes for r in raws) < PARALLEL_HASH_BYTES or workers < 2:
        parts = bundle_parts(program)
        write_atomically(path, parts)
        return sum(p.nbytes if isinstance(p, memoryview) else len(p) for p in parts)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_sha, raw) for raw in raws]
        draft = bundle_parts(program, ["0" * 64] * len(raws))
        head_size = len(draft[0])

        def head() -> bytes:
            final = bundle_parts(program, [f.result() for f in futures])
            return bytes(final[0])  # write_atomically checks its size

        write_atomically(path, draft[1:], head=(head_size, head))
    return head_size + sum(p.nbytes if isinstance(p, memoryview) else len(p) for p in draft[1:])


def load_bundle(
    data: bytes, path: str = "<bundle>", limits: Limits = DEFAULT_LIMITS
) -> BundleProgram:
    """Parse and check a `.qvk` file (untrusted input): the header, every blob's size
    and hash, the SPIR-V (`checks.verify_spirv`) and the whole program (`check_program`).
    QoptError (one line) if anything does not match."""
    if len(data) < _HEADER.size:
        raise QoptError(f"'{path}' is not a qopt Vulkan bundle: too short")
    magic, version, size = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise QoptError(f"'{path}' is not a qopt Vulkan bundle (bad magic {magic!r})")
    if not MIN_VERSION <= version <= VERSION:
        raise QoptError(
            f"'{path}' is a version {version} Vulkan bundle; this qopt reads versions "
            f"{MIN_VERSION} to {VERSION}: recompile it with `qopt-opt ... -t vkbundle`"
        )
    limits.check(f"'{path}': its manifest's size", size, "max_manifest_bytes")
    start = _HEADER.size + size
    if start > len(data):
        raise QoptError(f"'{path}' is truncated (manifest)")
    try:
        manifest = json.loads(data[_HEADER.size : start].decode())
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise QoptError(f"'{path}' has a corrupted manifest: {type(e).__name__}") from None
    blobs = memoryview(data)[start:]
    manifest = as_record(
        manifest,
        f"'{path}': the manifest",
        {"kernels", "constants", "buffers", "slots", "inputs", "outputs", "steps", "states",
         "methods"},
    )  # fmt: skip

    def blob(record: Any, what: str) -> bytes:
        record = as_record(record, f"'{path}': {what}'s blob", {"offset", "size", "sha256"})
        lo = as_int(record["offset"], f"'{path}': {what}'s offset")
        n = as_int(record["size"], f"'{path}': {what}'s size")
        if lo + n > len(blobs):
            raise QoptError(f"'{path}' is truncated ({what})")
        chunk = bytes(blobs[lo : lo + n])
        if _sha(chunk) != record["sha256"]:
            raise QoptError(f"'{path}' is corrupted: the hash of {what} does not match")
        return chunk

    program = BundleProgram()
    for i, k in enumerate(as_list(manifest["kernels"], f"'{path}': kernels")):
        k = as_record(k, f"'{path}': kernel {i}", {"kernel", "glsl", "spec", "spirv"})
        if not isinstance(k["kernel"], str) or not isinstance(k["glsl"], str):
            raise QoptError(f"'{path}': kernel {i}'s names must be strings")
        spec_values = as_record(k["spec"], f"'{path}': kernel {i}'s spec", set())
        spirv = blob(k["spirv"], f"kernel {i}")
        program.kernels.append(KernelEntry(k["kernel"], k["glsl"], dict(spec_values), spirv))
    for i, c in enumerate(as_list(manifest["constants"], f"'{path}': constants")):
        c = as_record(c, f"'{path}': constant {i}", {"dtype"})
        dtype = _CONSTANT_DTYPES.get(c["dtype"]) if isinstance(c["dtype"], str) else None
        if dtype is None:
            raise QoptError(f"'{path}': constant {i} has dtype {str(c['dtype'])[:20]!r}")
        raw = blob(c, f"constant {i}")
        if len(raw) % 4:
            raise QoptError(f"'{path}': constant {i} is not a whole number of words")
        program.constants.append(np.frombuffer(raw, dtype=dtype).copy())
    program.buffers = as_list(manifest["buffers"], f"'{path}': buffers")
    program.slots = as_list(manifest["slots"], f"'{path}': slots")
    try:
        program.inputs = [
            Tensor(**as_record(t, f"'{path}': input", {"buffer", "shape", "dtype"}))
            for t in as_list(manifest["inputs"], f"'{path}': inputs")
        ]
        program.outputs = [
            Tensor(**as_record(t, f"'{path}': output", {"buffer", "shape", "dtype"}))
            for t in as_list(manifest["outputs"], f"'{path}': outputs")
        ]
        program.steps = [
            Step(**as_record(s, f"'{path}': dispatch", {"kernel", "buffers", "push", "groups"}))
            for s in as_list(manifest["steps"], f"'{path}': dispatches")
        ]
        program.states = [
            StateEntry(
                **as_record(e, f"'{path}': state", {"name", "buffer", "shape", "dtype", "initial"})
            )
            for e in as_list(manifest["states"], f"'{path}': states")
        ]
        program.methods = [
            Method(**as_record(m, f"'{path}': method", {"name", "steps", "inputs", "outputs"}))
            for m in as_list(manifest["methods"], f"'{path}': methods")
        ]
        if "host_calls" in manifest and version < 4:
            raise QoptError(f"'{path}': host segments need a version 4 bundle")
        program.host_calls = [
            HostCall(
                **as_record(
                    h, f"'{path}': host segment", {"method", "at", "reads", "writes", "ir", "ops"}
                )
            )
            for h in as_list(manifest.get("host_calls", []), f"'{path}': host segments")
        ]
    except TypeError as e:  # unknown keys
        raise QoptError(f"'{path}' has a corrupted manifest: {e}") from None
    check_program(program, path, limits)
    for i, entry in enumerate(program.kernels):
        verify_spirv(entry, f"'{path}': kernel {i} ({entry.kernel})")
    return program


def read_bundle(path: str | os.PathLike[str], limits: Limits = DEFAULT_LIMITS) -> BundleProgram:
    """A `.qvk` file, read whole (bounded by `max_manifest_bytes` plus its blobs) and
    checked by `load_bundle`."""
    if not isinstance(path, str | os.PathLike):
        raise QoptError(f"read_bundle takes a path, got {type(path).__name__}")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise QoptError(f"cannot read Vulkan bundle '{path}': {e.strerror}") from None
    return load_bundle(data, str(path), limits)


def write_atomically(
    path: str | os.PathLike[str],
    data: bytes | Sequence[bytes | memoryview],
    head: tuple[int, Callable[[], bytes]] | None = None,
) -> None:
    """Write `data` (bytes, or pieces written one after the other) under a temporary
    name and rename it into place. `head` (size, make): `data` goes after `size`
    bytes, and `make()` (called once `data` is written) gives those bytes."""
    target = os.fspath(path)
    fd, tmp = temp_file_beside(target)  # 0644 under umask 022, as open() would make it
    try:
        with os.fdopen(fd, "wb") as f:
            if head is not None:
                f.seek(head[0])
            for piece in [data] if isinstance(data, bytes) else data:
                f.write(piece)
            if head is not None:
                front = head[1]()
                if len(front) != head[0]:
                    raise AssertionError(f"write_atomically: head of {len(front)} bytes")
                f.seek(0)
                f.write(front)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
