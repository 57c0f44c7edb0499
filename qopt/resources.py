"""The weight store: numpy-backed `dense_resource` blobs owned by their module.

Weights live as numpy arrays behind `dense_resource<key>` attributes, never as
Python lists. As MLIR's context owns its resource blobs, each qopt module owns a
`WeightStore`: the importer, the package reader and the parser create one with
the module and attach it (`attach`); passes reach it from any op of the module
(`weights_of`), so a module's blobs are freed with the module and keys are
unique within it only. Keys come from the program (parameter names, then
`_<n>` for repeats, in program order), so the same input gives the same IR in
any process, however many modules were made before.

Text goes through xDSL's parser and printer, which look blobs up through the
builtin dialect's `OpAsmDialectInterface` in the context. qopt's contexts
(`qopt.context.make_context`) carry their own builtin dialect object whose
interface is a `ResourceSlot`: it serves the store of the module being parsed or
printed (`qopt.context.parse_module` / `print_module` bind it), turning blobs
into hex only when printed and eliding those above a threshold unless asked.
(xDSL keeps blobs per dialect object; tying them to a module is the smallest
extension on top, worth proposing upstream as a per-module resource table.)
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Generator, Iterable
from typing import cast

import numpy as np
from xdsl.dialect_interfaces.op_asm import OpAsmDialectInterface
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    DictionaryAttr,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Attribute, Operation
from xdsl.utils.hints import isa

from qopt.dtypes import numpy_dtype
from qopt.errors import QoptError, where

#: Blobs larger than this many bytes are left out of printouts by default.
DEFAULT_ELIDE_BYTES = 1024

#: The key an elided blob prints as (`dense_resource<__elided__>`, as MLIR's
#: `--mlir-elide-resource-strings-if-larger` prints it): text printed so names no
#: data, and a pass that needs the data says so (`require_weights`).
ELIDED_KEY = "__elided__"

ELIDED_REMEDY = (
    "weights were elided when this IR was printed; print with --print-weights "
    "(qopt-opt) or print_module(module, elide_larger_than=None)"
)

_ALIGNMENT = 8

Blob = np.ndarray | bytes


class WeightStore:
    """The blobs of one module: numpy arrays (or the bytes of blobs read from text)
    by key."""

    def __init__(self) -> None:
        self._blobs: dict[str, Blob] = {}
        self._declared: set[str] = set()
        self._next_suffix: dict[str, int] = {}
        self._modules = 0  # how many modules `attach` gave this store to

    def add(self, hint: str, array: np.ndarray) -> str:
        """Store `array` under `hint`, or `hint_<n>` (the smallest n free) if taken."""
        key = hint
        if key in self._declared:
            n = self._next_suffix.get(hint, 0)
            while f"{hint}_{n}" in self._declared:
                n += 1
            self._next_suffix[hint] = n + 1
            key = f"{hint}_{n}"
        self._declared.add(key)
        self._blobs[key] = np.asarray(array, order="C")
        return key

    def find(self, hint: str, array: np.ndarray) -> str | None:
        """The key of a blob stored under `hint` (or `hint_<n>`) that holds `array`
        already (same dtype, shape and data), or None."""
        candidates = [hint] + [f"{hint}_{n}" for n in range(self._next_suffix.get(hint, 0))]
        for key in candidates:
            blob = self._blobs.get(key)
            if (
                isinstance(blob, np.ndarray)
                and blob.dtype == array.dtype
                and blob.shape == array.shape
                and (np.shares_memory(blob, array) or np.array_equal(blob, array))
            ):
                return key
        return None

    def copy(self) -> WeightStore:
        """A store holding the same blobs (shared: blobs are never mutated) whose new
        keys do not show in this one (a trial run on a clone)."""
        other = WeightStore()
        other._blobs = dict(self._blobs)
        other._declared = set(self._declared)
        other._next_suffix = dict(self._next_suffix)
        return other

    def declare(self, key: str) -> None:
        """A parsed `dense_resource<key>`: the key names one blob of this module."""
        self._declared.add(key)

    def set_bytes(self, key: str, raw: bytes) -> None:
        if key not in self._declared:
            raise KeyError(f"resource {key} was not declared")
        self._blobs[key] = raw

    def get(self, key: str) -> Blob | None:
        return self._blobs.get(key)

    def __contains__(self, key: str) -> bool:
        return key in self._blobs

    @property
    def releasable(self) -> bool:
        """Whether dropping a blob no op of its module references frees it for good:
        the store belongs to one module only (`clone_module` shares a store, whose
        other module may still read every blob)."""
        return self._modules <= 1

    def release(self, key: str) -> bool:
        """Drop blob `key` (its module no longer references it: a weight repacked into
        another blob), so its memory goes back as soon as no array shares it. The key
        stays declared (never reused). False, keeping it, where the store is shared."""
        if not self.releasable or key not in self._blobs:
            return False
        del self._blobs[key]
        return True

    def __len__(self) -> int:
        return len(self._blobs)

    def keys(self) -> list[str]:
        """The keys of the blobs held (declared keys without data are not listed)."""
        return list(self._blobs)

    def nbytes(self) -> int:
        return sum(b.nbytes if isinstance(b, np.ndarray) else len(b) for b in self._blobs.values())


_STORES: weakref.WeakKeyDictionary[ModuleOp, WeightStore] = weakref.WeakKeyDictionary()


def attach(module: ModuleOp, store: WeightStore) -> ModuleOp:
    """Make `store` the weight store of `module` (it lives as long as the module)."""
    if _STORES.get(module) is not store:
        store._modules += 1  # pyright: ignore[reportPrivateUsage]
    _STORES[module] = store
    return module


def weights_of(op: Operation) -> WeightStore:
    """The weight store of the module `op` belongs to (created empty for a module
    built by hand)."""
    top = op
    while (parent := top.parent_op()) is not None:
        top = parent
    if not isinstance(top, ModuleOp):
        raise QoptError(f"'{op.name}' is not inside a builtin.module: it has no weight store")
    store = _STORES.get(top)
    if store is None:
        store = WeightStore()
        attach(top, store)
    return store


def resource_references(module: Operation) -> dict[str, int]:
    """How many times the ops of `module` name each `dense_resource` key (in their
    properties or attributes, inside arrays and dictionaries too): what
    `WeightStore.release` may drop is a key no op names any more."""
    counts: dict[str, int] = {}
    pending: list[Attribute] = []
    for op in module.walk():
        pending.extend(op.properties.values())
        pending.extend(op.attributes.values())
        while pending:
            attr = pending.pop()
            if isinstance(attr, DenseResourceAttr):
                key = attr.resource_handle.data
                counts[key] = counts.get(key, 0) + 1
            elif isinstance(attr, ArrayAttr):
                pending.extend(cast(ArrayAttr[Attribute], attr).data)
            elif isinstance(attr, DictionaryAttr):
                pending.extend(attr.data.values())
    return counts


def clone_module(module: ModuleOp) -> ModuleOp:
    """`module.clone()` sharing the original's weights (blobs are never mutated)."""
    return attach(module.clone(), weights_of(module))


def release_unreferenced(module: ModuleOp) -> int:
    """Drop the blobs of `module`'s store that none of its ops names any more (a pass
    replaced them: scales folded into new ones, weights repacked or concatenated), so
    a pipeline's peak memory is not the sum of every form a weight took. Returns the
    bytes dropped (0 where the store is shared with another module: nothing is)."""
    store = weights_of(module)
    if not store.releasable or not len(store):
        return 0
    named = resource_references(module)
    dropped = 0
    for key in [key for key in store.keys() if key not in named]:
        blob = store.get(key)
        dropped += blob.nbytes if isinstance(blob, np.ndarray) else len(blob or b"")
        store.release(key)
    return dropped


def printable_inline(array: np.ndarray) -> bool:
    """Whether `array` survives a print/parse round trip as an inline `dense<...>`:
    xDSL prints inf/NaN as hex bit patterns (0xff800000) but its parser (0.75)
    reads a hex float literal as an integer value, so non-finite floats go into a
    `dense_resource` blob (exact bytes) instead."""
    return array.dtype.kind != "f" or bool(np.isfinite(array).all())


def make_resource(
    key_hint: str, array: np.ndarray, type: TensorType, store: WeightStore
) -> DenseResourceAttr:
    """A `dense_resource` attribute holding `array` (which must match `type`) in `store`."""
    return DenseResourceAttr.from_params(store.add(key_hint, array), type)


def resource_array(
    attr: DenseResourceAttr, store: WeightStore, dtype: np.dtype | None = None
) -> np.ndarray | None:
    """The numpy value of a `dense_resource` in `store`, or None if its blob is absent
    (elided from the printout the module was parsed from). `dtype` overrides the
    element type's numpy dtype (a storage dtype of the same size)."""
    type = attr.type
    assert isa(type, TensorType)
    blob = store.get(attr.resource_handle.data)
    if blob is None:
        return None
    dtype = numpy_dtype(type.get_element_type()) if dtype is None else np.dtype(dtype)
    shape = tuple(type.get_shape())
    if isinstance(blob, np.ndarray):
        return blob.reshape(shape) if blob.dtype == dtype else blob.view(dtype).reshape(shape)
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(blob) != expected:
        raise QoptError(
            f"blob '{attr.resource_handle.data}' has {len(blob)} bytes, "
            f"its type {type} needs {expected}"
        )
    return np.frombuffer(blob, dtype=dtype).reshape(shape)


def dense_array(attr: DenseIntOrFPElementsAttr, dtype: np.dtype | None = None) -> np.ndarray:
    """An inline `dense<...>` literal as a fresh numpy array of its type's shape (a
    splat repeated; i1 bytes read as booleans). `dtype` overrides the element
    type's numpy dtype (a storage dtype of the same size)."""
    type = attr.type
    assert isinstance(type, TensorType)
    dtype = numpy_dtype(type.get_element_type()) if dtype is None else np.dtype(dtype)
    shape = tuple(type.get_shape())
    raw = attr.data.data
    if dtype == np.bool_:
        flat = np.frombuffer(raw, np.uint8).astype(np.bool_)
    else:
        flat = np.frombuffer(raw, dtype=dtype)
    if flat.size == 1 and int(np.prod(shape, dtype=np.int64)) != 1:
        return np.broadcast_to(flat, shape).copy()
    return flat.reshape(shape).copy()


def elements_array(
    attr: DenseIntOrFPElementsAttr | DenseResourceAttr,
    owner: Operation,
    dtype: np.dtype | None = None,
) -> np.ndarray:
    """The numpy value of the tensor literal `attr` held by `owner` (an inline `dense`
    literal, or a `dense_resource` blob of `owner`'s module): the one reader of
    constant data. A blob elided from the printout the module was parsed from is a
    QoptError naming `owner`. `dtype` overrides the element type's numpy dtype
    (Core ML's sub-byte types live in 8-bit containers)."""
    if isinstance(attr, DenseResourceAttr):
        array = resource_array(attr, weights_of(owner), dtype)
        if array is None:
            raise QoptError(
                f"{where(owner)}: the data of dense_resource<{attr.resource_handle.data}> is "
                f"missing: {ELIDED_REMEDY}"
            )
        return array
    return dense_array(attr, dtype)


def missing_weights(module: Operation) -> list[Operation]:
    """The ops of `module` holding a `dense_resource` whose blob is absent (elided
    from the printout the module was parsed from), in walk order."""
    store = weights_of(module)
    missing: list[Operation] = []
    for op in module.walk():
        for attr in (*op.properties.values(), *op.attributes.values()):
            if isinstance(attr, DenseResourceAttr) and attr.resource_handle.data not in store:
                missing.append(op)
                break
    return missing


def require_weights(module: Operation, pass_name: str) -> None:
    """One QoptError before a pass that reads weight data (fuse-quant, fold-constants,
    the lowerings) runs on a module whose weights were elided: never a partial result
    (a pattern that finds no data would leave its op unfused, silently)."""
    missing = missing_weights(module)
    if not missing:
        return
    first = where(missing[0])
    if len(missing[0].results) == 1:
        first += f" : {missing[0].results[0].type}"
    raise QoptError(
        f"{pass_name}: {len(missing)} weight(s) have no data (the first: {first}): {ELIDED_REMEDY}"
    )


def _to_hex(blob: Blob) -> str:
    raw = blob.tobytes() if isinstance(blob, np.ndarray) else blob
    return "0x" + _ALIGNMENT.to_bytes(4, "little").hex().upper() + raw.hex().upper()


class ResourceSlot(OpAsmDialectInterface):
    """The builtin dialect's resource interface in a qopt context: it serves the
    store it is bound to (`bound`), the store of the module being parsed or printed."""

    def __init__(self) -> None:
        super().__init__()
        self.store: WeightStore | None = None
        self.elide_larger_than: int | None = DEFAULT_ELIDE_BYTES

    def _current(self) -> WeightStore:
        if self.store is None:
            raise QoptError(
                "dense_resource blobs are parsed into a module's weight store: parse with "
                "qopt.context.parse_module (or bind the context's ResourceSlot)"
            )
        return self.store

    @contextlib.contextmanager
    def bound(
        self, store: WeightStore, elide_larger_than: int | None = DEFAULT_ELIDE_BYTES
    ) -> Generator[None, None, None]:
        """Serve `store` (printing: leave out blobs above `elide_larger_than` bytes;
        None prints them all)."""
        saved = self.store, self.elide_larger_than
        self.store, self.elide_larger_than = store, elide_larger_than
        try:
            yield
        finally:
            self.store, self.elide_larger_than = saved

    # -- xDSL's OpAsmDialectInterface --------------------------------------------------

    def declare_resource(self, key: str) -> str:
        # Parsing: every mention of a key in one text names the same blob (xDSL's
        # parser declares each key once per parse).
        self._current().declare(key)
        return key

    def parse_resource(self, key: str, val: str) -> None:
        if not val.startswith("0x"):
            raise ValueError(f"blob '{key}' must be a hex string starting with 0x")
        try:
            raw = bytes.fromhex(val[2:])
        except ValueError as e:
            raise ValueError(f"blob '{key}' is not valid hex: {e}") from None
        if len(raw) < 4:
            raise ValueError(f"blob '{key}' lacks its 4-byte alignment header")
        self._current().set_bytes(key, raw[4:])

    def elides(self, key: str) -> bool:
        """Whether printing leaves blob `key` out (too large, or absent from the
        store: elided when the text it came from was printed)."""
        if self.store is None:
            return False
        blob = self.store.get(key)
        if blob is None:
            return True
        nbytes = blob.nbytes if isinstance(blob, np.ndarray) else len(blob)
        return self.elide_larger_than is not None and nbytes > self.elide_larger_than

    def lookup(self, key: str) -> str | None:
        blob = None if self.store is None else self.store.get(key)
        return None if blob is None else _to_hex(blob)

    def build_resources(self, keys: Iterable[str]) -> dict[str, str]:
        store = self.store
        out: dict[str, str] = {}
        if store is None:  # printing a module without binding its store: blobs elided
            return out
        for key in keys:
            blob = store.get(key)
            if blob is None or self.elides(key):
                continue
            out[key] = _to_hex(blob)
        return out
