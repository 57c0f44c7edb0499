"""The native runtime (runtime/ at the repository root: libqvk, C) driven from Python
through ctypes: for tests and benchmarks that compare it with the Python runtime
(artifact.py stays the reference).

    with NativeBundle.open("model.qvk") as bundle, bundle.session() as session:
        outputs = session.run(tokens, positions, method="prefill")

The library is `$QOPT_QVK_LIBRARY`, else `build/runtime/libqvk.so` of this checkout (what
scripts/setup.sh builds), else `.venv/lib/libqvk.so`. `native_library()` says why it is
not usable (None when it is). Errors of the library are `QoptError`s with its message.
"""

from __future__ import annotations

import ctypes
import functools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

import numpy as np

from qopt.errors import QoptError
from qopt.kernels.variants import DeviceProps

ROOT = Path(__file__).resolve().parents[3]
MAX_RANK = 16
DTYPES = ("float32", "float16", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")


class _Error(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("message", ctypes.c_char * 1024)]


class _Tensor(ctypes.Structure):
    _fields_ = [
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_int),
        ("shape", ctypes.c_int64 * MAX_RANK),
        ("data", ctypes.c_void_p),
    ]


class _Timings(ctypes.Structure):
    _fields_ = [
        ("wall_seconds", ctypes.c_double),
        ("submit_seconds", ctypes.c_double),
        ("gpu_seconds", ctypes.c_double),
        ("record_seconds", ctypes.c_double),
        ("dispatches", ctypes.c_size_t),
    ]


class _DeviceProps(ctypes.Structure):
    _fields_ = [
        ("device_type", ctypes.c_uint32),
        ("subgroup_size", ctypes.c_uint32),
        ("subgroup_stages", ctypes.c_uint32),
        ("subgroup_ops", ctypes.c_uint32),
        ("shared_bytes", ctypes.c_uint32),
        ("float16", ctypes.c_int),
        ("int8", ctypes.c_int),
    ]

    @classmethod
    def of(cls, props: DeviceProps) -> _DeviceProps:
        return cls(
            props.device_type,
            props.subgroup_size,
            props.subgroup_stages,
            props.subgroup_ops,
            props.shared_bytes,
            int(props.float16),
            int(props.int8),
        )

    def props(self) -> DeviceProps:
        return DeviceProps(
            int(self.device_type),
            int(self.subgroup_size),
            int(self.subgroup_stages),
            int(self.subgroup_ops),
            int(self.shared_bytes),
            bool(self.float16),
            bool(self.int8),
        )


def library_candidates() -> list[Path]:
    env = os.environ.get("QOPT_QVK_LIBRARY")
    found = [Path(env)] if env else []
    return [*found, ROOT / "build" / "runtime" / "libqvk.so", ROOT / ".venv" / "lib" / "libqvk.so"]


@functools.cache
def _load() -> Any:
    for path in library_candidates():
        if path.is_file():
            lib = ctypes.CDLL(str(path))
            break
    else:
        raise QoptError(
            "the native runtime library (libqvk.so) is not built: run scripts/setup.sh, or "
            "cmake -S runtime -B build/runtime && cmake --build build/runtime"
        )
    P, E, S = ctypes.c_void_p, ctypes.POINTER(_Error), ctypes.c_size_t
    sig = {
        "qvk_bundle_open_file": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(P), E]),
        "qvk_bundle_open_memory": (
            ctypes.c_int,
            [ctypes.c_char_p, S, ctypes.c_char_p, ctypes.POINTER(P), E],
        ),
        "qvk_bundle_close": (None, [P]),
        "qvk_bundle_method_count": (S, [P]),
        "qvk_bundle_method_name": (ctypes.c_char_p, [P, S]),
        "qvk_bundle_input_count": (S, [P, S]),
        "qvk_bundle_output_count": (S, [P, S]),
        "qvk_bundle_input": (_Tensor, [P, S, S]),
        "qvk_bundle_output": (_Tensor, [P, S, S]),
        "qvk_bundle_logical_count": (S, [P]),
        "qvk_bundle_logical_name": (ctypes.c_char_p, [P, S]),
        "qvk_bundle_state_count": (S, [P]),
        "qvk_bundle_state_name": (ctypes.c_char_p, [P, S]),
        "qvk_bundle_state": (_Tensor, [P, S]),
        "qvk_bundle_qopt_version": (ctypes.c_char_p, [P]),
        "qvk_runtime_qopt_version": (ctypes.c_char_p, []),
        "qvk_bundle_pick_method": (
            ctypes.c_int,
            [P, ctypes.c_char_p, S, ctypes.POINTER(_Tensor), ctypes.POINTER(S), E],
        ),
        "qvk_session_create": (ctypes.c_int, [P, ctypes.c_char_p, ctypes.POINTER(P), E]),
        "qvk_session_destroy": (None, [P]),
        "qvk_session_run": (
            ctypes.c_int,
            [P, S, ctypes.POINTER(_Tensor), ctypes.POINTER(ctypes.c_void_p), E],
        ),
        "qvk_session_reset": (ctypes.c_int, [P, E]),
        "qvk_session_read_state": (ctypes.c_int, [P, ctypes.c_char_p, P, S, E]),
        "qvk_session_timings": (_Timings, [P]),
        "qvk_session_device_name": (ctypes.c_char_p, [P]),
        "qvk_session_device_props": (_DeviceProps, [P]),
        "qvk_session_variant_mode": (ctypes.c_char_p, [P]),
        "qvk_session_variant_dispatches": (S, [P]),
        "qvk_session_reused": (ctypes.c_int, [P]),
        "qvk_session_pipelines_created": (S, [P]),
        "qvk_session_vulkan_instance": (P, [P]),
        "qvk_session_vulkan_device": (P, [P]),
        "qvk_release_idle": (None, []),
        "qvk_kernel_variant": (
            ctypes.c_int,
            [
                ctypes.c_char_p,
                ctypes.POINTER(_DeviceProps),
                ctypes.POINTER(ctypes.c_int64),
                S,
                ctypes.POINTER(ctypes.c_int64),
                S,
                ctypes.c_char_p,
                ctypes.POINTER(ctypes.c_char_p),
                E,
            ],
        ),
    }
    for name, (restype, argtypes) in sig.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


def native_library() -> str | None:
    """None when the native library loads, else why not."""
    try:
        _load()
    except (QoptError, OSError) as e:
        return str(e)
    return None


def _check(status: int, err: _Error) -> None:
    if status != 0:
        raise QoptError(err.message.decode(errors="replace"))


def _describe(t: _Tensor) -> tuple[tuple[int, ...], np.dtype]:
    return tuple(int(t.shape[i]) for i in range(t.rank)), np.dtype(DTYPES[t.dtype])


class NativeBundle:
    """A `.qvk` opened and checked by the native loader."""

    def __init__(self, handle: int):
        self._lib = _load()
        self._handle: int | None = handle

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> NativeBundle:
        lib, err, out = _load(), _Error(), ctypes.c_void_p()
        _check(
            lib.qvk_bundle_open_file(os.fsencode(path), ctypes.byref(out), ctypes.byref(err)), err
        )
        return cls(int(out.value or 0))

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "<bundle>") -> NativeBundle:
        lib, err, out = _load(), _Error(), ctypes.c_void_p()
        status = lib.qvk_bundle_open_memory(
            data, len(data), name.encode(), ctypes.byref(out), ctypes.byref(err)
        )
        _check(status, err)
        return cls(int(out.value or 0))

    @property
    def handle(self) -> int:
        if self._handle is None:
            raise QoptError("the native bundle is closed")
        return self._handle

    @property
    def functions(self) -> list[str]:
        lib = self._lib
        return [
            lib.qvk_bundle_method_name(self.handle, i).decode()
            for i in range(lib.qvk_bundle_method_count(self.handle))
        ]

    @property
    def methods(self) -> list[str]:
        lib = self._lib
        return [
            lib.qvk_bundle_logical_name(self.handle, i).decode()
            for i in range(lib.qvk_bundle_logical_count(self.handle))
        ]

    @property
    def state_names(self) -> list[str]:
        lib = self._lib
        return [
            lib.qvk_bundle_state_name(self.handle, i).decode()
            for i in range(lib.qvk_bundle_state_count(self.handle))
        ]

    @property
    def qopt_version(self) -> str:
        return self._lib.qvk_bundle_qopt_version(self.handle).decode()

    def inputs(self, function: int) -> list[tuple[tuple[int, ...], np.dtype]]:
        lib = self._lib
        return [
            _describe(lib.qvk_bundle_input(self.handle, function, i))
            for i in range(lib.qvk_bundle_input_count(self.handle, function))
        ]

    def outputs(self, function: int) -> list[tuple[tuple[int, ...], np.dtype]]:
        lib = self._lib
        return [
            _describe(lib.qvk_bundle_output(self.handle, function, i))
            for i in range(lib.qvk_bundle_output_count(self.handle, function))
        ]

    def session(self, device: str | int | None = None) -> NativeSession:
        return NativeSession(self, device)

    def close(self) -> None:
        if self._handle is not None:
            self._lib.qvk_bundle_close(self._handle)
            self._handle = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class NativeSession:
    """A native session: `run(*inputs, method=None)`, `reset()`, `read_state(name)`."""

    def __init__(self, bundle: NativeBundle, device: str | int | None = None):
        self.bundle = bundle
        self._lib = lib = bundle._lib
        err, out = _Error(), ctypes.c_void_p()
        choice = None if device is None else str(device).encode()
        _check(
            lib.qvk_session_create(bundle.handle, choice, ctypes.byref(out), ctypes.byref(err)), err
        )
        self._handle: int | None = int(out.value or 0)

    @property
    def handle(self) -> int:
        if self._handle is None:
            raise QoptError("the native session is closed")
        return self._handle

    @property
    def methods(self) -> list[str]:
        return self.bundle.methods

    @property
    def function_names(self) -> list[str]:
        return self.bundle.functions

    @property
    def state_names(self) -> list[str]:
        return self.bundle.state_names

    @property
    def device_name(self) -> str:
        return self._lib.qvk_session_device_name(self.handle).decode()

    @property
    def device_props(self) -> DeviceProps:
        """What the kernel variants' choice read of the device (`qopt.kernels.variants`)."""
        return self._lib.qvk_session_device_props(self.handle).props()

    @property
    def variant_mode(self) -> str:
        return self._lib.qvk_session_variant_mode(self.handle).decode()

    @property
    def variant_dispatches(self) -> int:
        """Dispatches recorded so far with a kernel variant."""
        return int(self._lib.qvk_session_variant_dispatches(self.handle))

    @property
    def reused(self) -> bool:
        """The session leased an idle device another session had given back (its shader
        modules and pipelines with it: `qvk_session_reused`)."""
        return bool(self._lib.qvk_session_reused(self.handle))

    @property
    def pipelines_created(self) -> int:
        """Pipelines this session compiled; the others it runs were on its device already."""
        return int(self._lib.qvk_session_pipelines_created(self.handle))

    @property
    def vulkan_handles(self) -> tuple[int, int]:
        """The session's VkInstance and VkDevice handles (interop, tests)."""
        lib = self._lib
        instance = lib.qvk_session_vulkan_instance(self.handle)
        device = lib.qvk_session_vulkan_device(self.handle)
        return int(instance or 0), int(device or 0)

    def timings(self) -> dict[str, float]:
        t = self._lib.qvk_session_timings(self.handle)
        names = ("wall_seconds", "submit_seconds", "gpu_seconds", "record_seconds", "dispatches")
        return {name: float(getattr(t, name)) for name in names}

    def run(self, *inputs: Any, method: str | None = None) -> tuple[np.ndarray, ...]:
        lib, err = self._lib, _Error()
        arrays = [np.ascontiguousarray(np.asarray(x)) for x in inputs]
        tensors = (_Tensor * max(1, len(arrays)))()
        for t, a in zip(tensors, arrays, strict=False):
            if a.dtype.name not in DTYPES or a.ndim > MAX_RANK:
                raise QoptError(
                    f"the native runtime takes {', '.join(DTYPES)} arrays, got {a.dtype}"
                )
            t.dtype = DTYPES.index(a.dtype.name)
            t.rank = a.ndim
            for i, d in enumerate(a.shape):
                t.shape[i] = d
            t.data = a.ctypes.data
        function = ctypes.c_size_t()
        name = None if method is None else method.encode()
        status = lib.qvk_bundle_pick_method(
            self.bundle.handle,
            name,
            len(arrays),
            tensors,
            ctypes.byref(function),
            ctypes.byref(err),
        )
        _check(status, err)
        outs = [np.empty(shape, dtype) for shape, dtype in self.bundle.outputs(function.value)]
        pointers = (ctypes.c_void_p * max(1, len(outs)))(*[o.ctypes.data for o in outs])
        status = lib.qvk_session_run(
            self.handle, function.value, tensors, pointers, ctypes.byref(err)
        )
        _check(status, err)
        return tuple(outs)

    def reset(self) -> None:
        err = _Error()
        _check(self._lib.qvk_session_reset(self.handle, ctypes.byref(err)), err)

    def read_state(self, name: str) -> np.ndarray:
        lib = self._lib
        for i in range(lib.qvk_bundle_state_count(self.bundle.handle)):
            if lib.qvk_bundle_state_name(self.bundle.handle, i).decode() == name:
                shape, dtype = _describe(lib.qvk_bundle_state(self.bundle.handle, i))
                out = np.empty(shape, dtype)
                err = _Error()
                status = lib.qvk_session_read_state(
                    self.handle, name.encode(), out.ctypes.data, out.nbytes, ctypes.byref(err)
                )
                _check(status, err)
                return out
        raise QoptError(f"the program has no state named {name!r}")

    def close(self) -> None:
        if self._handle is not None:
            self._lib.qvk_session_destroy(self._handle)
            self._handle = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def release_idle() -> None:
    """Close the native runtime's idle devices (`qvk_release_idle`; the process's exit
    closes them too): a destroyed session's device is kept, with its pipelines, for the
    next session of the same choice (docs/native-runtime.md, "Device reuse")."""
    _load().qvk_release_idle()


def native_variant(
    kernel: str,
    props: DeviceProps,
    push: Sequence[int],
    spec: Sequence[int],
    mode: str = "auto",
) -> str | None:
    """The variant the native runtime's rule picks for a dispatch of `kernel` (push
    integers in declaration order, every spec value in constant_id order) on a device of
    `props` under `mode` (None: the base): `qvk_kernel_variant`, for tests."""
    lib, err = _load(), _Error()
    c_props = _DeviceProps.of(props)
    c_push = (ctypes.c_int64 * max(1, len(push)))(*push)
    c_spec = (ctypes.c_int64 * max(1, len(spec)))(*spec)
    out = ctypes.c_char_p()
    status = lib.qvk_kernel_variant(
        kernel.encode(),
        ctypes.byref(c_props),
        c_push,
        len(push),
        c_spec,
        len(spec),
        mode.encode(),
        ctypes.byref(out),
        ctypes.byref(err),
    )
    _check(status, err)
    return None if out.value is None else out.value.decode()


def run_native(
    path: str | os.PathLike[str], inputs: Sequence[Any], method: str | None = None
) -> tuple[np.ndarray, ...]:
    """One call on a fresh state (open, run, close)."""
    with NativeBundle.open(path) as bundle, bundle.session() as session:
        return session.run(*inputs, method=method)
