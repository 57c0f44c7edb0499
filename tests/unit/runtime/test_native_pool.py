"""The native runtime's device reuse (runtime/src/device.c): a destroyed session's device,
with its shader modules and pipelines, serves the next session of the same choice (the
same bundle or another) with bit-identical outputs; two live sessions never share a
device; QOPT_VULKAN_REUSE=0, another variant mode or a device that reported a validation
error give a fresh device; validation messages reach only the device whose messenger got
them. Skipped, with the reason printed, without a Vulkan device or the native library."""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import qopt
from qopt.backends.vulkan.native import NativeBundle, NativeSession, native_library, release_idle

FIRST, OTHER = ("mlp", "float"), ("convnet", "float")  # the cheapest sessions to create


@pytest.fixture(autouse=True)
def _clean_pool() -> Iterator[None]:
    from qopt.backends.vulkan.runtime import vulkan_available

    reason = vulkan_available() or native_library()
    if reason is not None:
        print(f"native pool tests skipped: {reason}")
        pytest.skip(reason)
    release_idle()  # each test starts with no idle device, and leaves none
    yield
    release_idle()


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def bundle_of(builtin_reference: Any, pair: tuple[str, str]) -> NativeBundle:
    return NativeBundle.from_bytes(builtin_reference(*pair).data, f"{pair[0]}-{pair[1]}.qvk")


def check_outputs(session: NativeSession, builtin_reference: Any, pair: tuple[str, str]) -> None:
    """Two calls (the first records the command buffer): the Python runtime's bits."""
    ref = builtin_reference(*pair)
    for _ in range(2):
        got = session.run(*ref.inputs)
        assert len(got) == len(ref.outputs)
        assert all(same_bits(g, w) for g, w in zip(got, ref.outputs, strict=True)), pair


def test_a_destroyed_sessions_device_serves_the_next(builtin_reference: Any) -> None:
    """The same bundle again compiles nothing; another bundle compiles only the pipelines
    the device lacks; every output is the Python runtime's, bit for bit."""
    with bundle_of(builtin_reference, FIRST) as first, bundle_of(builtin_reference, OTHER) as other:
        with first.session() as s:
            assert not s.reused
            fresh = s.pipelines_created
            assert fresh > 0
            check_outputs(s, builtin_reference, FIRST)
        with first.session() as s:
            assert s.reused
            assert s.pipelines_created == 0
            check_outputs(s, builtin_reference, FIRST)
        with other.session() as s:
            assert s.reused
            check_outputs(s, builtin_reference, OTHER)
            made = s.pipelines_created
        release_idle()
        with other.session() as s:
            assert not s.reused
            assert s.pipelines_created > made  # the first bundle's served it some
            check_outputs(s, builtin_reference, OTHER)


def test_two_live_sessions_never_share_a_device(builtin_reference: Any) -> None:
    with bundle_of(builtin_reference, FIRST) as bundle:
        a, b = bundle.session(), bundle.session()
        assert not a.reused
        assert not b.reused
        assert a.vulkan_handles[1] != b.vulkan_handles[1]
        a.close()
        b.close()  # one idle device per choice: b's is closed
        c = bundle.session()
        d = bundle.session()
        try:
            assert c.reused
            assert not d.reused
            assert c.vulkan_handles[1] != d.vulkan_handles[1]
            check_outputs(d, builtin_reference, FIRST)
        finally:
            c.close()
            d.close()


def test_sessions_from_several_threads(builtin_reference: Any) -> None:
    """Threads creating, running and destroying sessions at once (ctypes lets go of the
    GIL in the calls): every output the Python runtime's; the devices they gave back
    leave one idle device of the choice."""
    failures: list[str] = []
    with bundle_of(builtin_reference, FIRST) as bundle:

        def work() -> None:
            try:
                for _ in range(3):
                    with bundle.session() as s:
                        check_outputs(s, builtin_reference, FIRST)
            except Exception as e:  # reported by the test's thread
                failures.append(repr(e))

        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert failures == []
        a, b = bundle.session(), bundle.session()
        try:
            assert a.reused
            assert not b.reused
        finally:
            a.close()
            b.close()


def test_reuse_off_opens_a_fresh_device(
    builtin_reference: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with bundle_of(builtin_reference, FIRST) as bundle:
        with bundle.session() as s:
            fresh = s.pipelines_created
        monkeypatch.setenv("QOPT_VULKAN_REUSE", "0")
        with bundle.session() as s:  # the idle one is not taken
            assert not s.reused
            assert s.pipelines_created == fresh
        monkeypatch.delenv("QOPT_VULKAN_REUSE")
        s = bundle.session()  # still idle: reuse off parked nothing, took nothing
        assert s.reused
        monkeypatch.setenv("QOPT_VULKAN_REUSE", "0")
        s.close()  # closed, not parked
        monkeypatch.delenv("QOPT_VULKAN_REUSE")
        with bundle.session() as s:
            assert not s.reused


def test_another_choice_opens_another_device(
    builtin_reference: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with bundle_of(builtin_reference, FIRST) as bundle:
        with bundle.session() as s:
            mode = s.variant_mode
        monkeypatch.setenv("QOPT_VK_VARIANTS", "base" if mode != "base" else "all")
        with bundle.session() as s:
            assert not s.reused
            assert s.variant_mode != mode
        with bundle.session("0") as s:  # "0" is not "" (as the Python pool keys it)
            assert not s.reused
        monkeypatch.delenv("QOPT_VK_VARIANTS")
        with bundle.session() as s:
            assert s.reused
            assert s.variant_mode == mode


class _CallbackData(ctypes.Structure):
    """VkDebugUtilsMessengerCallbackDataEXT."""

    _fields_ = [
        ("sType", ctypes.c_int32),
        ("pNext", ctypes.c_void_p),
        ("flags", ctypes.c_uint32),
        ("pMessageIdName", ctypes.c_char_p),
        ("messageIdNumber", ctypes.c_int32),
        ("pMessage", ctypes.c_char_p),
        ("queueLabelCount", ctypes.c_uint32),
        ("pQueueLabels", ctypes.c_void_p),
        ("cmdBufLabelCount", ctypes.c_uint32),
        ("pCmdBufLabels", ctypes.c_void_p),
        ("objectCount", ctypes.c_uint32),
        ("pObjects", ctypes.c_void_p),
    ]


def submit_validation_error(session: NativeSession, text: str) -> None:
    """An error-severity validation message on the session's instance
    (vkSubmitDebugUtilsMessageEXT: its messengers receive it as the layer's own)."""
    loader = ctypes.CDLL(ctypes.util.find_library("vulkan") or "libvulkan.so.1")
    loader.vkGetInstanceProcAddr.restype = ctypes.c_void_p
    loader.vkGetInstanceProcAddr.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    instance = session.vulkan_handles[0]
    address = loader.vkGetInstanceProcAddr(instance, b"vkSubmitDebugUtilsMessageEXT")
    assert address, "the instance has no VK_EXT_debug_utils"
    submit = ctypes.CFUNCTYPE(
        None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32, ctypes.POINTER(_CallbackData)
    )(address)
    data = _CallbackData(sType=1000128003, pMessageIdName=b"qopt-test", pMessage=text.encode())
    submit(instance, 0x1000, 0x2, ctypes.byref(data))  # ERROR severity, VALIDATION type


def test_a_device_that_reported_validation_errors_is_not_kept(
    builtin_reference: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The error reaches its own device only (the other live session runs clean), fails
    its session's next call, and the device is closed, not parked; a device parked clean
    starts its next lease clean."""
    monkeypatch.setenv("QOPT_VULKAN_VALIDATION", "1")
    with bundle_of(builtin_reference, FIRST) as bundle:
        try:
            bad, good = bundle.session(), bundle.session()
        except qopt.QoptError as e:
            pytest.skip(f"no validation layer: {e}")
        try:
            submit_validation_error(bad, "a crafted error")
            check_outputs(good, builtin_reference, FIRST)
            with pytest.raises(qopt.QoptError, match=r"validation errors .*a crafted error"):
                bad.run(*builtin_reference(*FIRST).inputs)
        finally:
            bad.close()  # reported an error: closed
            good.close()  # parked
        with bundle.session() as s:
            assert s.reused  # good's device, clean
            assert s.pipelines_created == 0
            check_outputs(s, builtin_reference, FIRST)
        with bundle.session() as s:
            submit_validation_error(s, "pending at destroy")
        with bundle.session() as s:  # the pending error kept it from the pool
            assert not s.reused
            check_outputs(s, builtin_reference, FIRST)
