"""Numpy-backed `dense_resource` blobs.

Weights live as numpy arrays behind `dense_resource<key>` attributes, never as
Python lists. xDSL keeps resource blobs in the builtin dialect's
`OpAsmDialectInterface` as hex strings; qopt replaces that interface with one
that stores numpy arrays (or raw bytes, for blobs read from text) and turns
them into hex only when a module is printed, eliding blobs above a threshold
unless asked to print them.
"""

from __future__ import annotations

import contextlib
import sys
import weakref
from collections.abc import Iterable, Iterator

import numpy as np
from xdsl.dialect_interfaces.op_asm import OpAsmDialectInterface
from xdsl.dialects.builtin import Builtin, DenseResourceAttr, TensorType
from xdsl.parser.base_parser import BaseParser

from qopt.dialects.dtypes import numpy_dtype

#: Blobs larger than this many bytes are left out of printouts by default.
DEFAULT_ELIDE_BYTES = 1024

_ALIGNMENT = 8


class NumpyResourceInterface(OpAsmDialectInterface):
    """A resource store whose blobs are numpy arrays or bytes."""

    def __init__(self) -> None:
        super().__init__()
        self._arrays: dict[str, np.ndarray | bytes] = {}
        self._next_suffix: dict[str, int] = {}
        self._aliases: dict[int, dict[str, str]] = {}  # per live parser (by id)
        self.elide_larger_than: int | None = DEFAULT_ELIDE_BYTES

    def declare_resource(self, key: str) -> str:
        """A parser met `dense_resource<key>` (or the resource section's `key:`).

        Keys already in the store (a module parsed in the process that printed it)
        are renamed as xDSL does (`key_<n>`); within one parse every later mention
        of `key`, the resource section's included, maps to that same new key.
        (xDSL 0.75's parser de-duplicates by the *renamed* key, so without this map
        each mention would declare a new, empty blob and the module would lose
        its weights.)"""
        parser = _calling_parser()
        if parser is None:
            return self._declare(key)
        aliases = self._aliases.get(id(parser))
        if aliases is None:
            aliases = self._aliases[id(parser)] = {}
            weakref.finalize(parser, self._aliases.pop, id(parser), None)
        if key not in aliases:
            aliases[key] = self._declare(key)
        return aliases[key]

    def _declare(self, key: str) -> str:
        """xDSL's de-duplication (`key`, else `key_<n>` with the smallest free n),
        without its scan from n = 0 on every duplicate: keys are only ever added
        (until `clear`), so the smallest free n for a key never decreases and the
        search resumes where the last one ended. Declaring n keys with one hint
        costs O(n), not O(n^2)."""
        storage = self._blob_storage
        if key in storage:
            counter = self._next_suffix.get(key, 0)
            while f"{key}_{counter}" in storage:
                counter += 1
            self._next_suffix[key] = counter + 1
            key = f"{key}_{counter}"
        storage[key] = ""
        return key

    def parse_resource(self, key: str, val: str) -> None:
        if key not in self._blob_storage:
            raise KeyError(f"Resource with key {key} wasn't declared")
        if not val.startswith("0x"):
            raise ValueError(f"blob '{key}' must be a hex string starting with 0x")
        try:
            raw = bytes.fromhex(val[2:])
        except ValueError as e:
            raise ValueError(f"blob '{key}' is not valid hex: {e}") from None
        if len(raw) < 4:
            raise ValueError(f"blob '{key}' lacks its 4-byte alignment header")
        self._arrays[key] = raw[4:]
        self._blob_storage[key] = "0x"

    def clear(self) -> None:
        """Forget every blob (a new, independent parse follows)."""
        self._blob_storage.clear()
        self._arrays.clear()
        self._next_suffix.clear()
        self._aliases.clear()

    def store(self, key: str, array: np.ndarray) -> str:
        key = self._declare(key)
        self._arrays[key] = np.asarray(array, order="C")
        self._blob_storage[key] = "0x"
        return key

    def data(self, key: str) -> np.ndarray | bytes | None:
        return self._arrays.get(key)

    def lookup(self, key: str) -> str | None:
        blob = self._arrays.get(key)
        if blob is None:
            return self._blob_storage.get(key)
        return _to_hex(blob)

    def build_resources(self, keys: Iterable[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for key in keys:
            blob = self._arrays.get(key)
            if blob is None:
                continue
            nbytes = blob.nbytes if isinstance(blob, np.ndarray) else len(blob)
            if self.elide_larger_than is not None and nbytes > self.elide_larger_than:
                continue
            out[key] = _to_hex(blob)
        return out


def _calling_parser() -> object | None:
    """The xDSL parser whose resource-handle parsing called `declare_resource`."""
    frame = sys._getframe(2)  # declare_resource <- the parser's method
    owner = frame.f_locals.get("self")
    return owner if isinstance(owner, BaseParser) else None


def _to_hex(blob: np.ndarray | bytes) -> str:
    raw = blob.tobytes() if isinstance(blob, np.ndarray) else blob
    return "0x" + _ALIGNMENT.to_bytes(4, "little").hex().upper() + raw.hex().upper()


def store() -> NumpyResourceInterface:
    """The process-wide resource store, installed into xDSL's builtin dialect."""
    interfaces = Builtin._interfaces  # pyright: ignore[reportPrivateUsage]
    for i, interface in enumerate(interfaces):
        if isinstance(interface, NumpyResourceInterface):
            return interface
        if isinstance(interface, OpAsmDialectInterface):
            replacement = NumpyResourceInterface()
            interfaces[i] = replacement
            return replacement
    replacement = NumpyResourceInterface()
    interfaces.append(replacement)
    return replacement


def printable_inline(array: np.ndarray) -> bool:
    """Whether `array` survives a print/parse round trip as an inline `dense<...>`:
    xDSL prints inf/NaN as hex bit patterns (0xff800000) but its parser (0.75)
    reads a hex float literal as an integer value, so non-finite floats go into a
    `dense_resource` blob (exact bytes) instead."""
    return array.dtype.kind != "f" or bool(np.isfinite(array).all())


def make_resource(key_hint: str, array: np.ndarray, type: TensorType) -> DenseResourceAttr:
    """A `dense_resource` attribute holding `array` (which must match `type`)."""
    key = store().store(key_hint, array)
    return DenseResourceAttr.from_params(key, type)


def resource_array(attr: DenseResourceAttr) -> np.ndarray | None:
    """The numpy value of a `dense_resource`, or None if its blob is absent."""
    type = attr.type
    assert isinstance(type, TensorType)
    blob = store().data(attr.resource_handle.data)
    if blob is None:
        return None
    dtype = numpy_dtype(type.get_element_type())
    shape = tuple(type.get_shape())
    if isinstance(blob, np.ndarray):
        return blob.reshape(shape) if blob.dtype == dtype else blob.view(dtype).reshape(shape)
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(blob) != expected:
        raise ValueError(
            f"blob '{attr.resource_handle.data}' has {len(blob)} bytes, "
            f"its type {type} needs {expected}"
        )
    return np.frombuffer(blob, dtype=dtype).reshape(shape)


@contextlib.contextmanager
def elision(threshold: int | None) -> Iterator[None]:
    """Print blobs larger than `threshold` bytes as elided (None: print all)."""
    interface = store()
    saved = interface.elide_larger_than
    interface.elide_larger_than = threshold
    try:
        yield
    finally:
        interface.elide_larger_than = saved
