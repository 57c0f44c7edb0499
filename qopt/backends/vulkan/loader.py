"""Loading Vulkan and finding its devices: the `vulkan` cffi package (imported when first
needed: it loads libvulkan), the compute-capable physical devices and the choice among
them, what the kernel variants read of a device (`device_props`), and the validation
layer's messages, routed to the devices that asked for them.
The device itself, its buffers and programs are `qopt.backends.vulkan.runtime`'s.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from typing import Any, Protocol

from qopt.errors import QoptError
from qopt.kernels.variants import DeviceProps


class MessageSink(Protocol):
    """What receives validation messages (a `VulkanDevice` that asked for validation)."""

    validation_errors: list[str]
    validation_warnings: list[str]
    sink_id: int


VALIDATION_LAYER = "VK_LAYER_KHRONOS_validation"


class VulkanError(QoptError):
    """A Vulkan failure: no device, a failed call, or validation-layer errors."""


def load_vulkan() -> Any:
    try:
        import vulkan as vk
    except OSError as e:  # the cffi package is there but libvulkan.so.1 is not
        raise VulkanError(
            f"the Vulkan loader could not be loaded ({e}); install it "
            "(Debian/Ubuntu: `apt-get install libvulkan1 mesa-vulkan-drivers`)"
        ) from e
    except ImportError as e:
        raise VulkanError(
            "the `vulkan` Python package is not installed (`pip install vulkan`)"
        ) from e
    return vk


# ----- validation messages ----------------------------------------------------------
# The cffi package has one global callback slot per callback type: a message goes to
# the live device whose messenger it came through (its `sink_id`, the messenger's user
# data).

MESSAGE_SINKS: weakref.WeakSet[MessageSink] = weakref.WeakSet()
SINK_LOCK = threading.Lock()
SINK_IDS = itertools.count(1)


def debug_callback(severity: int, types: int, data: Any, user: Any) -> int:
    vk = load_vulkan()
    try:
        message = vk.ffi.string(data.pMessage).decode(errors="replace")
    except Exception:
        message = "<unreadable validation message>"
    is_error = bool(severity & vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)
    try:
        sink_id = int(vk.ffi.cast("uintptr_t", user))
    except Exception:
        sink_id = 0
    with SINK_LOCK:
        # the device whose messenger it came through; every device when none says so
        sinks = [d for d in MESSAGE_SINKS if d.sink_id == sink_id] or list(MESSAGE_SINKS)
        for dev in sinks:
            (dev.validation_errors if is_error else dev.validation_warnings).append(message)
    return 0


# ----- devices ------------------------------------------------------------------------


def enumerate_devices(vk: Any, instance: Any) -> list[tuple[Any, str, int]]:
    """(physical device, name, compute queue family) of every compute-capable device."""
    found = []
    for pd in vk.vkEnumeratePhysicalDevices(instance):
        props = vk.vkGetPhysicalDeviceProperties(pd)
        name = props.deviceName
        name = vk.ffi.string(name).decode() if not isinstance(name, str) else name
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(pd)
        for i, fam in enumerate(families):
            if fam.queueFlags & vk.VK_QUEUE_COMPUTE_BIT and fam.queueCount > 0:
                found.append((pd, name, i))
                break
    return found


def select_device(
    found: list[tuple[Any, str, int]], choice: str | int | None
) -> tuple[Any, str, int]:
    if not found:
        raise VulkanError(
            "no compute-capable Vulkan device was found (on a machine without a GPU, "
            "install Mesa's lavapipe: `apt-get install mesa-vulkan-drivers libvulkan1`)"
        )
    if choice is None or choice == "":
        return found[0]
    names = ", ".join(f"{i}: {n}" for i, (_, n, _) in enumerate(found))
    if isinstance(choice, int) or str(choice).strip().isdigit():
        index = int(choice)
        if not 0 <= index < len(found):
            raise VulkanError(f"Vulkan device index {index} out of range (devices: {names})")
        return found[index]
    matches = [f for f in found if str(choice).lower() in f[1].lower()]
    if not matches:
        raise VulkanError(f"no Vulkan device name contains '{choice}' (devices: {names})")
    return matches[0]


def list_devices() -> list[str]:
    """Names of the compute-capable Vulkan devices (empty if none or no loader)."""
    try:
        vk = load_vulkan()
        instance = vk.vkCreateInstance(
            vk.VkInstanceCreateInfo(
                pApplicationInfo=vk.VkApplicationInfo(apiVersion=vk.VK_MAKE_VERSION(1, 2, 0))
            ),
            None,
        )
    except Exception:
        return []
    try:
        return [name for _, name, _ in enumerate_devices(vk, instance)]
    finally:
        vk.vkDestroyInstance(instance, None)


def device_props(vk: Any, pd: Any, props: Any) -> DeviceProps:
    """The kernel variants' view of physical device `pd` (`props`: its
    VkPhysicalDeviceProperties): VkPhysicalDeviceSubgroupProperties,
    maxComputeSharedMemorySize and the shaderFloat16 / shaderInt8 features (Vulkan 1.2,
    the API version qopt asks for), as the native runtime reads them."""
    sub = vk.VkPhysicalDeviceSubgroupProperties()
    vk.vkGetPhysicalDeviceProperties2(pd, vk.VkPhysicalDeviceProperties2(pNext=sub))
    f16 = vk.VkPhysicalDeviceShaderFloat16Int8Features()
    vk.vkGetPhysicalDeviceFeatures2(pd, vk.VkPhysicalDeviceFeatures2(pNext=f16))
    return DeviceProps(
        device_type=int(props.deviceType),
        subgroup_size=int(sub.subgroupSize),
        subgroup_stages=int(sub.supportedStages),
        subgroup_ops=int(sub.supportedOperations),
        shared_bytes=int(props.limits.maxComputeSharedMemorySize),
        float16=bool(f16.shaderFloat16),
        int8=bool(f16.shaderInt8),
    )
