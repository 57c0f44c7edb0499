"""Run-time inputs: arrays handed to a compiled program, checked against its signature.

Used by `qopt.interpret`, the Vulkan artifact and `qopt-run`. An input must have the
declared shape; its dtype may differ only by a cast that keeps every value:

- bool to any integer or float type; an integer to a wider or narrower integer type
  when every value fits (int64 token ids to int32); an integer to a float type when
  every value is exactly representable;
- a float to another float type when no finite value overflows (float64 arrays, the
  numpy default, round to a float32 input as torch's `.float()` would round them;
  1e300 does not become inf);
- an integer of 0/1 values to bool.

Anything else (a float for an integer input, an out-of-range integer, complex, object
arrays) is a QoptError naming the input. `.npz` files are read without pickle, with
every member's declared shape checked against the bytes it holds before reading.
"""

from __future__ import annotations

import os
import warnings
import zipfile
from collections.abc import Sequence
from typing import Any

import numpy as np

from qopt.errors import QoptError, QoptWarning, quoted
from qopt.limits import DEFAULT_LIMITS, Limits, check_zip


def as_array(value: Any, what: str) -> np.ndarray:
    """A numpy array of a numpy array, a torch tensor or a Python number/list."""
    if hasattr(value, "detach") and hasattr(value, "numpy"):
        try:
            value = value.detach().cpu().numpy()
        except (TypeError, RuntimeError) as e:  # bfloat16 and other types numpy lacks
            raise QoptError(f"{what}: cannot convert the tensor to numpy ({e})") from None
    try:
        array = np.asarray(value)
    except (ValueError, TypeError) as e:
        raise QoptError(f"{what}: not an array ({e})") from None
    if array.dtype.kind not in "biuf":
        raise QoptError(f"{what}: {array.dtype} arrays are not program inputs")
    return array


def coerce(array: np.ndarray, dtype: np.dtype, what: str) -> np.ndarray:
    """`array` as `dtype` if the cast keeps every value (see the module docstring); a
    cast between kinds (integer to float, bool to a number, 0/1 to bool) says so, as a
    `QoptWarning` (`qopt-run: warning: ...`), so that no input changes type silently."""
    dtype = np.dtype(dtype)
    src = array.dtype
    if src == dtype:
        return array
    out = _cast(array, dtype, what)
    if src.kind != dtype.kind and not {src.kind, dtype.kind} <= set("iu"):
        warnings.warn(
            QoptWarning(
                f"{what} has dtype {src}, the program takes {dtype}: converted (every value "
                f"is exact); pass {dtype} to skip the conversion"
            ),
            stacklevel=3,
        )
    return out


def _cast(array: np.ndarray, dtype: np.dtype, what: str) -> np.ndarray:
    src = array.dtype
    wrong = QoptError(
        f"{what} has dtype {src}, expected {dtype}; convert it explicitly "
        f"(qopt casts inputs only when no value changes)"
    )
    if src.kind == "b":
        return array.astype(dtype)
    if src.kind in "iu":
        if dtype.kind == "b":
            if array.size and not np.isin(array, (0, 1)).all():
                raise wrong
            return array.astype(dtype)
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            if array.size and (array.min() < info.min or array.max() > info.max):
                low, high = array.min(), array.max()
                raise QoptError(
                    f"{what} has values in [{low}, {high}], outside {dtype}'s range "
                    f"[{info.min}, {info.max}]: they would change in the cast"
                )
            return array.astype(dtype)
        if dtype.kind == "f":
            exact = 1 << (np.finfo(dtype).nmant + 1)
            if array.size and np.abs(array.astype(np.float64)).max() > exact:
                raise QoptError(
                    f"{what} has integer values beyond {exact}, which {dtype} cannot hold "
                    "exactly; pass it as a float array"
                )
            return array.astype(dtype)
        raise wrong
    if src.kind == "f" and dtype.kind == "f":
        with np.errstate(over="ignore"):
            out = array.astype(dtype)
        if array.size and np.count_nonzero(np.isinf(out)) != np.count_nonzero(np.isinf(array)):
            finite = np.abs(array[np.isfinite(array)])
            raise QoptError(
                f"{what} has values up to {finite.max():.3g}, beyond {dtype}'s range "
                f"(they would become inf)"
            )
        return out
    raise wrong


def _fits(actual: Sequence[int], declared: Sequence[int]) -> bool:
    """An array's shape against a declared one, whose dynamic dims (`?`, negative:
    xDSL's DYNAMIC_INDEX) take any size."""
    if len(actual) != len(declared):
        return False
    return all(d < 0 or a == d for a, d in zip(actual, declared, strict=True))


def input_shapes(inputs: Sequence[Any]) -> list[tuple[int, ...]]:
    """The shapes of numpy / torch / Python scalar inputs (to pick a size variant)."""
    shapes: list[tuple[int, ...]] = []
    for x in inputs:
        shape = getattr(x, "shape", None)
        shapes.append(tuple(int(d) for d in (np.shape(x) if shape is None else shape)))
    return shapes


def check_inputs(
    values: Sequence[Any],
    signature: Sequence[tuple[Sequence[int], np.dtype]],
    where: str,
) -> list[np.ndarray]:
    """`values` checked against `signature` ((shape, dtype) per input) of `where`."""
    if len(values) != len(signature):
        raise QoptError(f"{where} takes {len(signature)} input(s), got {len(values)}")
    arrays: list[np.ndarray] = []
    for i, (value, (shape, dtype)) in enumerate(zip(values, signature, strict=True)):
        what = f"input {i} of {where}"
        array = as_array(value, what)
        if not _fits(array.shape, shape):
            expected = "[" + ", ".join("?" if d < 0 else str(d) for d in shape) + "]"
            raise QoptError(f"{what} has shape {list(array.shape)}, expected {expected}")
        arrays.append(coerce(array, dtype, what))
    return arrays


def load_npz(
    path: str | os.PathLike[str], limits: Limits = DEFAULT_LIMITS
) -> dict[str, np.ndarray]:
    """The arrays of an `.npz` file, by name, in file order: no pickle, each member's
    header checked (shape, dtype, its size against the bytes the member holds) before
    its data is read."""
    if not isinstance(path, str | os.PathLike):  # pyright: ignore[reportUnnecessaryIsInstance] -- runtime guard: untyped callers
        raise QoptError(f"load_npz takes a path, got {type(path).__name__}")
    path = os.fspath(path)
    check_zip(path, limits, f"inputs '{path}'", single_root=False)
    arrays: dict[str, np.ndarray] = {}
    try:
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                name = info.filename
                if not name.endswith(".npy"):
                    raise QoptError(f"inputs '{path}': member {quoted(name)} is not an .npy array")
                with z.open(info) as f:
                    version = np.lib.format.read_magic(f)
                    if version == (1, 0):
                        header_of = np.lib.format.read_array_header_1_0
                    elif version == (2, 0):
                        header_of = np.lib.format.read_array_header_2_0
                    else:
                        raise QoptError(
                            f"inputs '{path}': array {quoted(name)} uses .npy format {version}"
                        )
                    shape, fortran, dtype = header_of(f, max_header_size=10000)
                    header = f.tell()
                    if dtype.hasobject:
                        raise QoptError(
                            f"inputs '{path}': array {quoted(name)} holds Python objects (pickle)"
                        )
                    count = 1
                    for d in shape:
                        count *= d
                    limits.check(
                        f"inputs '{path}': the element count of {quoted(name)}",
                        count,
                        "max_tensor_elements",
                    )
                    if count * dtype.itemsize > info.file_size - header:
                        raise QoptError(
                            f"inputs '{path}': array {quoted(name)} declares shape {list(shape)} "
                            f"({count * dtype.itemsize} bytes) but holds "
                            f"{info.file_size - header}: truncated or corrupted"
                        )
                    data = f.read(count * dtype.itemsize)
                array = np.frombuffer(data, dtype=dtype, count=count)
                order = "F" if fortran else "C"
                arrays[name[: -len(".npy")]] = array.reshape(shape, order=order).copy()
    except QoptError:
        raise
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as e:
        raise QoptError(f"cannot read inputs '{path}': {type(e).__name__}: {e}") from None
    except RuntimeError as e:  # zipfile: encrypted members
        raise QoptError(f"cannot read inputs '{path}': {e}") from None
    return arrays
