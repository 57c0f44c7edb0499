"""The Vulkan device the kernel tests run on: under the Khronos validation layer
(no validation error may be reported), skipped with the reason where there is no
Vulkan device or no validation layer."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from qopt.backends.vulkan.runtime import (
    VALIDATION_LAYER,
    VulkanDevice,
    VulkanError,
    vulkan_available,
)


@pytest.fixture(scope="module")
def validated_device() -> Iterator[VulkanDevice]:
    reason = vulkan_available()
    if reason:
        pytest.skip(reason)
    try:
        device = VulkanDevice(validation=True)
    except VulkanError as e:
        if VALIDATION_LAYER not in str(e):
            raise
        pytest.skip(f"{VALIDATION_LAYER} not installed: {e}")
    with device:
        yield device
        assert device.validation_errors == []
