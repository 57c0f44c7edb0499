"""`weight.bin` written by qopt, for coremltools' MIL-to-protobuf backend.

coremltools' backend (`ConverterRegistry.backends["mlprogram"]`) writes each weight of
the Program into `weight.bin` through its C++ `BlobWriter`, by way of
`helper._get_offset_by_writing_data`, which copies the weight first (`flatten()`; an
fp16 weight twice, `flatten().tobytes()`), and the writer packs a sub-byte weight
(int4, uint1 ... uint6: one value per byte in the Program) into a buffer of its own:
the largest weight's copy and packed buffer were most of a package write's memory
peak. Inside `weights_written_in_place()` the backend writes through `WeightFile`
instead: the same file, byte for byte (MILBlob storage version 2, as
qopt/backends/coreml/package.py reads it: a 64-byte header holding the blob count
and the version; per blob a 64-byte record (sentinel, dtype code, data bytes, data
offset, the unused bits of a sub-byte blob's last byte), the data right after it,
zeros up to the next 64-byte boundary before the next record), written from the
array itself (a flat view where it is contiguous) and sub-byte values packed
`PACK_CHUNK` values at a time (LSB first, `qopt.numerics.bits`).
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterator
from typing import Any, BinaryIO

import numpy as np

from qopt.backends.coreml.deps import ensure_coremltools
from qopt.numerics.bits import packed_nbytes

#: MILBlob dtype code of each MIL type a blob holds (the reader's table).
BLOB_CODES = {
    "fp16": 1, "fp32": 2, "uint8": 3, "int8": 4, "int16": 6, "uint16": 7, "int4": 8,
    "uint1": 9, "uint2": 10, "uint4": 11, "uint3": 12, "uint6": 13, "int32": 14, "uint32": 15,
}  # fmt: skip
#: Bits per value of the sub-byte types (their values sit one per byte in the array).
SUB_BYTE_BITS = {"int4": 4, "uint1": 1, "uint2": 2, "uint3": 3, "uint4": 4, "uint6": 6}
#: The MIL type of a weight of another type, by numpy kind and item size (coremltools' table).
_BY_NUMPY = {
    ("f", 4): "fp32", ("f", 2): "fp16", ("u", 1): "uint8", ("i", 1): "int8",
    ("u", 2): "uint16", ("i", 2): "int16", ("i", 4): "int32", ("u", 4): "uint32",
}  # fmt: skip
#: Sub-byte values packed at a time (a multiple of 8: every chunk ends on a byte).
PACK_CHUNK = 1 << 16

_SENTINEL = 0xDEADBEEF
_VERSION = 2
_HEADER_BYTES = 64
_RECORD_BYTES = 64
_ALIGNMENT = 64


def pack_chunks(values: np.ndarray, nbits: int) -> Iterator[np.ndarray]:
    """`values` (flat, one per byte) as the LSB-first bit stream of `nbits`-bit values,
    `PACK_CHUNK` values at a time: 8 values make `nbits` bytes (one little-endian
    64-bit word each), the last group padded with zeros and its bytes cut to the
    stream's length."""
    mask = np.uint64((1 << nbits) - 1)
    shifts = np.arange(8, dtype=np.uint64) * np.uint64(nbits)
    for start in range(0, values.size, PACK_CHUNK):
        chunk = values[start : start + PACK_CHUNK].view(np.uint8)
        count = chunk.size
        if nbits == 4:  # two values a byte, low nibble first
            low, high = chunk[0::2] & 0xF, chunk[1::2] & 0xF
            if high.size < low.size:
                high = np.concatenate([high, np.zeros(1, np.uint8)])
            yield low | (high << 4)
            continue
        if count % 8:
            chunk = np.concatenate([chunk, np.zeros(8 - count % 8, np.uint8)])
        words = ((chunk.reshape(-1, 8).astype(np.uint64) & mask) << shifts).sum(
            axis=1, dtype=np.uint64
        )
        packed = words.astype("<u8").view(np.uint8).reshape(-1, 8)[:, :nbits].reshape(-1)
        yield packed[: packed_nbytes(count, nbits)]


class WeightFile:
    """What coremltools' `BlobWriter(path)` is to its backend, written by qopt: `write`
    (the backend's `write_<type>_data` calls, through `write_weight`) appends one blob
    and returns the offset of its record. The file is complete once closed."""

    def __init__(self, path: str) -> None:
        self._file: BinaryIO = open(path, "wb")
        self._count = 0
        self._end = _HEADER_BYTES
        self._header()
        _open_files.append(self)

    def _header(self) -> None:
        self._file.seek(0)
        self._file.write(struct.pack("<II", self._count, _VERSION).ljust(_HEADER_BYTES, b"\0"))

    def write(self, mil_type: str, flat: np.ndarray) -> int:
        """Append `flat` (contiguous, one dimension) as a blob of `mil_type`; the
        offset of its record."""
        bits = SUB_BYTE_BITS.get(mil_type)
        nbytes = flat.nbytes if bits is None else packed_nbytes(flat.size, bits)
        padding_bits = 0 if bits is None else nbytes * 8 - flat.size * bits
        offset = -(-self._end // _ALIGNMENT) * _ALIGNMENT
        record = struct.pack(
            "<IIQQQ", _SENTINEL, BLOB_CODES[mil_type], nbytes, offset + _RECORD_BYTES, padding_bits
        )
        f = self._file
        f.seek(self._end)
        f.write(b"\0" * (offset - self._end) + record.ljust(_RECORD_BYTES, b"\0"))
        if bits is None:
            f.write(flat.view(np.uint8).data)
        else:
            for packed in pack_chunks(flat, bits):
                f.write(np.ascontiguousarray(packed).data)
        self._end = offset + _RECORD_BYTES + nbytes
        self._count += 1
        self._header()
        return offset

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()


_open_files: list[WeightFile] = []


def write_weight(var: Any, blob_writer: Any, original: Any) -> int:
    """The backend's `_get_offset_by_writing_data(var, blob_writer)`: `var`'s value
    written by `blob_writer` (a `WeightFile`) as coremltools writes it, without a
    copy; `original` (coremltools' function) for a value it has no type for (and its
    error)."""
    from coremltools.converters.mil.mil import types

    value = var.val
    if not isinstance(value, np.ndarray) or not isinstance(blob_writer, WeightFile):
        return original(var, blob_writer)
    flat = np.ascontiguousarray(value).reshape(-1)
    mil_type = next((n for n in SUB_BYTE_BITS if var.dtype == getattr(types, n)), None)
    if mil_type is None:
        mil_type = _BY_NUMPY.get((flat.dtype.kind, flat.dtype.itemsize))
    if mil_type is None:
        return original(var, blob_writer)
    return blob_writer.write(mil_type, flat)


@contextlib.contextmanager
def weights_written_in_place() -> Iterator[None]:
    """coremltools' MIL-to-protobuf backend, run inside, writes `weight.bin` through
    `WeightFile` and `write_weight` (see the module docstring); every file it opened is
    closed (complete) at the exit. Not reentrant (nor is coremltools' conversion)."""
    ensure_coremltools()
    from coremltools.converters.mil.backend.mil import helper, load

    original_write = helper._get_offset_by_writing_data
    original_writer = load.BlobWriter

    def write(var: Any, blob_writer: Any) -> int:
        return write_weight(var, blob_writer, original_write)

    helper._get_offset_by_writing_data = write
    load.BlobWriter = WeightFile
    try:
        yield
    finally:
        helper._get_offset_by_writing_data = original_write
        load.BlobWriter = original_writer
        while _open_files:
            _open_files.pop().close()


__all__ = [
    "BLOB_CODES",
    "PACK_CHUNK",
    "SUB_BYTE_BITS",
    "WeightFile",
    "pack_chunks",
    "weights_written_in_place",
    "write_weight",
]
