"""An `.mlpackage`'s files, read as untrusted input: the manifest, the root model spec
and the MILBlob weight files, every path, size and offset checked before it is used
(the layout and what is refused: qopt/backends/coreml/reader.py's docstring). What the
spec's program means is the reader's.
"""

from __future__ import annotations

import json
import os
import re
import stat
import struct
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
from xdsl.dialects.builtin import (
    IntegerType,
    Signedness,
)
from xdsl.ir import Attribute

from qopt.backends.coreml.deps import ensure_coremltools
from qopt.dialects.coreml import storage_dtype
from qopt.errors import QoptError, one_line, quoted
from qopt.limits import DEFAULT_LIMITS
from qopt.numerics.bits import packed_nbytes, unpack_bits

#: Largest Manifest.json read (coremltools writes well under 1 KiB).
MAX_MANIFEST_BYTES = 1 << 20
#: Largest root model spec (model.mlmodel) read; it holds every immediate value
#: (coremltools stores constants of more than 10 elements in blob files, so a spec
#: is ~1 KiB per op: a few MiB for the largest models).
MAX_SPEC_BYTES = 64 << 20
#: Largest blob file opened (never read whole; see the module docstring).
MAX_BLOB_FILE_BYTES = 1 << 38
#: Largest rank of a declared tensor type.
MAX_RANK = DEFAULT_LIMITS.max_tensor_rank
#: Most elements of one declared tensor (a constant, a function input, an op result).
MAX_ELEMENTS = DEFAULT_LIMITS.max_tensor_elements
#: Most entries of a list-valued MIL parameter (axes, perm, pad, begin, ...: <= 2 * rank).
MAX_PARAM_ENTRIES = 2 * MAX_RANK

_BLOB_SENTINEL = 0xDEADBEEF
_BLOB_VERSION = 2
_HEADER_BYTES = 64  # MILBlob storage header
_RECORD_BYTES = 64  # MILBlob per-blob metadata record
_MAX_NAME = 120  # characters of a package-supplied name shown in a message
_MAX_MESSAGE = 2000

_BLOB_DTYPES = {
    1: "FLOAT16", 2: "FLOAT32", 3: "UINT8", 4: "INT8", 6: "INT16", 7: "UINT16", 8: "INT4",
    9: "UINT1", 10: "UINT2", 11: "UINT4", 12: "UINT3", 13: "UINT6", 14: "INT32", 15: "UINT32",
}  # fmt: skip
_BLOB_CODES = {name: code for code, name in _BLOB_DTYPES.items()}


def message_line(text: str) -> str:
    """`text` on one printable line, at most `_MAX_MESSAGE` characters."""
    return one_line(text, _MAX_MESSAGE)


def quoted_name(text: object, limit: int = _MAX_NAME) -> str:
    """A package-supplied name, quoted, shortened and made printable."""
    return quoted(text, limit)


def _inside(real: str, root: str) -> bool:
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def _pread(fd: int, size: int, offset: int) -> bytearray:
    """Exactly `size` bytes of `fd` at `offset` (OSError if the file is shorter)."""
    buf = bytearray(size)
    view = memoryview(buf)
    try:
        done = 0
        while done < size:
            if hasattr(os, "preadv"):
                n = os.preadv(fd, [view[done:]], offset + done)
            else:  # pragma: no cover - platforms without preadv
                chunk = os.pread(fd, min(size - done, 1 << 30), offset + done)
                n = len(chunk)
                view[done : done + n] = chunk
            if n == 0:
                raise OSError(f"the file ends before byte {offset + size} (it changed?)")
            done += n
    finally:
        view.release()
    return buf


def _sub_byte(elem: Attribute) -> bool:
    return isinstance(elem, IntegerType) and (
        1 < elem.width.data < 8 or elem == IntegerType(1, Signedness.UNSIGNED)
    )


def value_nbytes(elem: Attribute, count: int) -> int:
    """Bytes `count` values of `elem` take in a blob or an immediate `bytes` value."""
    if _sub_byte(elem):
        assert isinstance(elem, IntegerType)
        return packed_nbytes(count, elem.width.data)
    return count * storage_dtype(elem).itemsize


def decode_values(raw: bytes | bytearray, elem: Attribute, count: int) -> np.ndarray:
    """The `count` values of `elem` in `raw` (exactly `value_nbytes(elem, count)` long), flat."""
    assert len(raw) == value_nbytes(elem, count)
    if _sub_byte(elem):
        assert isinstance(elem, IntegerType)
        signed = elem.signedness.data != Signedness.UNSIGNED
        return unpack_bits(np.frombuffer(raw, np.uint8), elem.width.data, count, signed)
    dtype = storage_dtype(elem)
    if dtype == np.bool_:
        return np.frombuffer(raw, np.uint8, count).astype(np.bool_)
    return np.frombuffer(raw, dtype, count)


@dataclass(frozen=True)
class CheckedType:
    """A checked tensor type: MIL data type name, element type, shape, element count."""

    name: str
    elem: Attribute
    shape: tuple[int, ...]
    count: int


@dataclass
class _BlobFile:
    fd: int
    size: int
    decoded: int = 0  # bytes of distinct blob data decoded from this file
    ranges: set[tuple[int, int]] = field(default_factory=set[tuple[int, int]])


class Package:
    """The package's files, opened only after their paths are checked."""

    def __init__(self, path: str):
        self.path = path  # as given, for messages
        self.root = os.path.realpath(path)
        self.model_dir = ""  # the root model's directory: `@model_path`
        self.files: dict[str, _BlobFile] = {}
        self.blobs: dict[tuple[str, int, int, int, int], np.ndarray] = {}

    def error(self, message: str) -> QoptError:
        return QoptError(message_line(f"read_mlpackage: {self.path}: {message}"))

    def close(self) -> None:
        for f in self.files.values():
            os.close(f.fd)
        self.files.clear()
        self.blobs.clear()

    # ----- files ---------------------------------------------------------------

    def _join(self, base: str, rel: str, what: str) -> str:
        """`base/rel` for a package-relative `rel`: no absolute path, no `..`."""
        if not rel or "\x00" in rel:
            raise self.error(f"{what}: empty path or a NUL byte in {quoted_name(rel)}; refused")
        if rel.startswith(("/", "\\")) or os.path.isabs(rel):
            raise self.error(f"{what}: absolute path {quoted_name(rel)}; refused")
        if ".." in re.split(r"[/\\]", rel):
            raise self.error(f"{what}: path {quoted_name(rel)} has a '..' component; refused")
        return os.path.join(base, rel)

    def _open(self, full: str, cap: int, what: str) -> tuple[int, int]:
        """(fd, size) of the regular file `full` inside the package, at most `cap` bytes."""
        real = os.path.realpath(full)
        if not _inside(real, self.root):
            raise self.error(
                f"{what} resolves outside the package (to {quoted_name(real, 400)}); refused"
            )
        try:
            st = os.stat(real)
        except OSError as e:
            raise self.error(f"{what}: cannot read it: {e.strerror}") from None
        if not stat.S_ISREG(st.st_mode):
            raise self.error(f"{what} is not a regular file; refused")
        if st.st_size > cap:
            raise self.error(f"{what} has {st.st_size} bytes, more than the limit {cap}; refused")
        flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(real, flags | getattr(os, "O_CLOEXEC", 0))
        except OSError as e:
            raise self.error(f"{what}: cannot read it: {e.strerror}") from None
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino) or opened.st_size > cap:
            os.close(fd)  # replaced between the checks and the open
            raise self.error(f"{what} changed while being opened; refused")
        return fd, opened.st_size

    def _read_file(self, full: str, cap: int, what: str) -> bytearray:
        fd, size = self._open(full, cap, what)
        try:
            return _pread(fd, size, 0)
        except OSError as e:
            raise self.error(f"{what}: cannot read: {e}") from None
        finally:
            os.close(fd)

    def read_manifest(self) -> str:
        """The path of the root model (the spec), from Manifest.json."""
        what = "Manifest.json"
        raw = self._read_file(os.path.join(self.root, what), MAX_MANIFEST_BYTES, what)
        try:
            manifest = json.loads(raw)
        except (ValueError, RecursionError) as e:
            raise self.error(f"{what} is not valid JSON: {e}") from None
        if not isinstance(manifest, dict):
            raise self.error(f"{what} is not a JSON object")
        version = manifest.get("fileFormatVersion")
        if not isinstance(version, str) or not re.fullmatch(r"1\.\d{1,9}\.\d{1,9}", version):
            raise self.error(
                f"{what}: fileFormatVersion {quoted_name(version)} is not a 1.x.y package format"
            )
        entries = manifest.get("itemInfoEntries")
        root_id = manifest.get("rootModelIdentifier")
        if not isinstance(entries, dict):
            raise self.error(f"{what} has no itemInfoEntries object")
        if not isinstance(root_id, str) or root_id not in entries:
            raise self.error(f"{what}: rootModelIdentifier {quoted_name(root_id)} names no item")
        entry = entries[root_id]
        item_path = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(item_path, str):
            raise self.error(f"{what}: the root model item has no path")
        full = self._join(os.path.join(self.root, "Data"), item_path, f"{what}: root model item")
        self.model_dir = os.path.dirname(os.path.realpath(full))
        return full

    def read_spec(self, full: str) -> Any:
        ensure_coremltools()
        from coremltools.proto import Model_pb2
        from google.protobuf.message import DecodeError, Message

        raw = self._read_file(full, MAX_SPEC_BYTES, "the root model (Manifest.json's root item)")
        # a class made at run time by protobuf's reflection: the checker cannot see its base
        spec = cast(Message, Model_pb2.Model())
        try:
            spec.ParseFromString(raw)  # pyright: ignore[reportArgumentType] -- any buffer works; the protobuf stubs say bytes
        except (DecodeError, RecursionError, ValueError) as e:
            raise self.error(f"the root model is not a Core ML protobuf spec: {e}") from None
        return spec

    # ----- blobs ---------------------------------------------------------------

    def _blob_file(self, file_name: str, what: str) -> tuple[str, _BlobFile]:
        prefix = "@model_path/"
        if not file_name.startswith(prefix):
            raise self.error(
                f"{what}: blob file {quoted_name(file_name)} is not @model_path/...; refused"
            )
        full = self._join(self.model_dir, file_name[len(prefix) :], f"{what}: blob file")
        real = os.path.realpath(full)
        if real not in self.files:
            where = f"{what}: blob file {quoted_name(file_name)}"
            fd, size = self._open(full, MAX_BLOB_FILE_BYTES, where)
            blob_file = _BlobFile(fd, size)
            self.files[real] = blob_file  # closed by close()
            if size < _HEADER_BYTES:
                raise self.error(f"{where} is shorter than its {_HEADER_BYTES}-byte header")
            header = self._pread(blob_file, _HEADER_BYTES, 0, where)
            _, version = struct.unpack_from("<II", header)
            if version != _BLOB_VERSION:
                raise self.error(
                    f"{where} has storage version {version}; qopt reads version {_BLOB_VERSION}"
                )
        return real, self.files[real]

    def _pread(self, f: _BlobFile, size: int, offset: int, what: str) -> bytearray:
        try:
            return _pread(f.fd, size, offset)
        except OSError as e:
            raise self.error(f"{what}: cannot read: {e}") from None

    def blob(self, what: str, file_name: str, offset: int, t: CheckedType) -> np.ndarray:
        """The flat, read-only values of the blob record at `offset` of `file_name`."""
        real, f = self._blob_file(file_name, what)
        where = f"{what}: blob at offset {offset} of {quoted_name(file_name)}"
        if offset < _HEADER_BYTES or offset > f.size - _RECORD_BYTES:
            raise self.error(f"{where}: the record lies outside the file ({f.size} bytes)")
        record = self._pread(f, _RECORD_BYTES, offset, where)
        sentinel, code, size, data_offset = struct.unpack_from("<IIQQ", record)
        if sentinel != _BLOB_SENTINEL:
            raise self.error(f"{where}: no blob record there (sentinel {sentinel:#x})")
        want_code = _BLOB_CODES.get(t.name)
        if want_code is None:
            raise self.error(f"{where}: {t.name} values cannot come from a blob")
        if code != want_code:
            raise self.error(
                f"{where}: the blob holds dtype code {code} ({_BLOB_DTYPES.get(code, 'unknown')}), "
                f"the value is declared {t.name}"
            )
        need = value_nbytes(t.elem, t.count)
        if size != need:
            raise self.error(
                f"{where}: the blob holds {size} bytes, the declared {t.name} "
                f"{list(t.shape)} needs {need}"
            )
        if data_offset < _HEADER_BYTES or data_offset > f.size or size > f.size - data_offset:
            raise self.error(
                f"{where}: its data [{data_offset}, {data_offset + size}) lies outside the "
                f"file's blob area [{_HEADER_BYTES}, {f.size})"
            )
        key = (real, data_offset, size, code, t.count)
        if key in self.blobs:
            return self.blobs[key]
        if (data_offset, size) not in f.ranges:
            f.ranges.add((data_offset, size))
            f.decoded += size
            if f.decoded > f.size:
                raise self.error(
                    f"{where}: the file's blobs overlap (they hold more bytes than the file)"
                )
        array = decode_values(self._pread(f, size, data_offset, where), t.elem, t.count)
        array.flags.writeable = False
        self.blobs[key] = array
        return array
