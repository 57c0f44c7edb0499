"""Vulkan devices reused within one process.

Opening an artifact costs a device and its compute pipelines, and a pipeline is the
expensive part: the driver compiles the kernel to machine code there (lavapipe takes
~80 ms a pipeline). Programs of one process share most kernels, so an artifact leases
its device here (`lease`) and gives it back when it closes (`give_back`): everything
the artifact allocated on it (buffers, recorded command buffers) is freed then, and the
device, with its shader modules and pipelines, waits for the next artifact opened with
the same choice (device, validation layer, variant mode). Shader modules are kept by
their SPIR-V's digest, so a reused device never runs one program's code for another's.

A lease is exclusive: two open artifacts never share a device. At most one idle device
per choice is kept, and none that reported validation errors, failed to go idle or holds
more than `MAX_PIPELINES` pipelines. `close_idle()` closes the idle ones (also at exit);
`QOPT_VULKAN_REUSE=0` turns reuse off (every artifact opens and closes its own device).
"""

from __future__ import annotations

import atexit
import os
import threading

from qopt.backends.vulkan.runtime import VulkanDevice
from qopt.kernels.variants import variant_mode

MAX_PIPELINES = 1024
"""An idle device holding more pipelines than this is closed, not kept."""

_LOCK = threading.RLock()  # finalizers (artifacts' __del__) may give back inside
_IDLE: dict[tuple[str, bool, str], VulkanDevice] = {}
_EXITING = False


def _reuse() -> bool:
    return not _EXITING and os.environ.get("QOPT_VULKAN_REUSE", "1") != "0"


def _choice(device: str | int | None, validation: bool | None) -> tuple[str, bool, str]:
    """What VulkanDevice(device, validation) resolves its arguments to now."""
    chosen = device if device is not None else os.environ.get("QOPT_VULKAN_DEVICE") or ""
    if validation is None:
        validation = os.environ.get("QOPT_VULKAN_VALIDATION", "") not in ("", "0")
    return str(chosen), bool(validation), variant_mode(None)


def lease(device: str | int | None = None, validation: bool | None = None) -> VulkanDevice:
    """A device for one user until `give_back`: an idle one opened with the same choice
    (see the module docstring), else a new `VulkanDevice(device, validation)`."""
    key = _choice(device, validation)
    if _reuse():
        with _LOCK:
            dev = _IDLE.pop(key, None)
        if dev is not None:
            dev.idle = False
            if not dev._closed:
                return dev
    dev = VulkanDevice(device, validation=validation)
    dev.pool_key = key
    return dev


def give_back(dev: VulkanDevice) -> None:
    """End a lease: free what its user allocated and keep the device idle for the next
    lease of its choice, or close it when it cannot or need not be kept."""
    key = dev.pool_key
    keep = _reuse() and len(dev._pipelines) <= MAX_PIPELINES
    if key is not None and keep and key not in _IDLE and dev.recycle():
        with _LOCK:  # (a finalizer run inside may have given another back meanwhile)
            if key not in _IDLE:
                dev.idle = True
                _IDLE[key] = dev
                return
    dev.close()


def close_idle() -> None:
    """Close every idle device."""
    with _LOCK:
        idle = list(_IDLE.values())
        _IDLE.clear()
    for dev in idle:
        dev.idle = False
        dev.close()


@atexit.register
def _at_exit() -> None:
    global _EXITING
    _EXITING = True  # an artifact closed later closes its device
    close_idle()
