"""Vulkan devices reused within one process (qopt/backends/vulkan/pool.py).

An artifact leases its device and gives it back on close: the next artifact opened with
the same choice gets that device with its pipelines (none compiled again), never while
another artifact holds it; what the first allocated is freed; shader modules are kept by
their code's digest; a device with pending validation errors, or QOPT_VULKAN_REUSE=0,
closes instead. Device tests skip with the reason when there is no Vulkan device.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import numpy as np
import pytest
import torch

import qopt
from qopt.backends.vulkan import pool
from qopt.backends.vulkan.runtime import VulkanDevice, vulkan_available
from qopt.backends.vulkan.spirv import compile_kernel
from qopt.kernels import kernel_spec


@pytest.fixture(autouse=True)
def vulkan() -> Iterator[None]:
    reason = vulkan_available()
    if reason is not None:
        print(f"Vulkan pool tests skipped: {reason}")
        pytest.skip(reason)
    pool.close_idle()  # each test starts with no idle device
    yield
    pool.close_idle()


class Mlp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(16, 32)
        self.b = torch.nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x)))


def program() -> tuple[torch.export.ExportedProgram, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    model = Mlp().eval()
    x = torch.randn(4, 16)
    with torch.no_grad():
        want = model(x)
    return torch.export.export(model, (x,)), x, want


def test_a_closed_artifacts_device_and_pipelines_serve_the_next() -> None:
    ep, x, want = program()
    first = qopt.compile(ep, target="vulkan")
    np.testing.assert_allclose(first(x.numpy())[0], want.numpy(), rtol=1e-5, atol=1e-5)
    dev = first.device
    session = first.session()
    pipelines = dict(dev._pipelines)
    assert pipelines
    assert dev._buffers
    first.close()
    assert not dev._buffers, "the artifact's buffers outlive it"
    assert not dev._programs, "the artifact's command buffers outlive it"
    assert dev._pipelines == pipelines
    assert not dev._closed

    second = qopt.compile(ep, target="vulkan")
    np.testing.assert_allclose(second(x.numpy())[0], want.numpy(), rtol=1e-5, atol=1e-5)
    assert second.device is dev
    assert dev._pipelines == pipelines, "a kernel was compiled again"
    with pytest.raises(qopt.QoptError):
        session.run(x.numpy())  # a closed artifact's sessions never run again
    second.close()


def test_two_open_artifacts_never_share_a_device() -> None:
    ep, x, want = program()
    a = qopt.compile(ep, target="vulkan")
    b = qopt.compile(ep, target="vulkan")
    try:
        assert a.device is not b.device
        for artifact in (a, b):
            np.testing.assert_allclose(artifact(x.numpy())[0], want.numpy(), rtol=1e-5, atol=1e-5)
    finally:
        a.close()
        b.close()


def test_modules_are_kept_by_their_code() -> None:
    """The same kernel source with other SPIR-V gets its own module; giving the first
    code again finds its module, and a pipeline created for one code is not another's."""
    glsl = kernel_spec("unary").glsl
    code = compile_kernel(glsl)
    other = compile_kernel(kernel_spec("binary").glsl)
    dev = pool.lease()
    try:
        m1 = dev.shader_module(glsl, code)
        p1 = dev.pipeline("unary")
        m2 = dev.shader_module(glsl, other)
        assert m2 != m1
        assert dev.shader_module(glsl) == m2
        assert dev.shader_module(glsl, code) == m1
        assert dev.pipeline("unary") is p1
    finally:
        pool.give_back(dev)


def test_a_device_with_validation_errors_is_closed() -> None:
    dev = pool.lease()
    dev.validation_errors.append("a crafted error")
    pool.give_back(dev)
    assert dev._closed
    assert pool.lease() is not dev


def test_reuse_off_closes_the_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QOPT_VULKAN_REUSE", "0")
    dev = pool.lease()
    pool.give_back(dev)
    assert dev._closed


def test_another_choice_opens_another_device(monkeypatch: pytest.MonkeyPatch) -> None:
    dev = pool.lease()
    pool.give_back(dev)
    monkeypatch.setenv("QOPT_VK_VARIANTS", "base" if dev.variant_mode != "base" else "all")
    other = pool.lease()
    try:
        assert other is not dev
        assert other.variant_mode != dev.variant_mode
    finally:
        pool.give_back(other)
    plain = VulkanDevice()  # not leased: never the pool's
    assert plain.pool_key is None
    plain.close()


def test_validation_messages_reach_only_their_device() -> None:
    """Another device's validation error never lands on an idle one (which would raise
    it at its next user's first call): each message goes to its messenger's device."""
    idle = pool.lease(validation=True)
    pool.give_back(idle)
    other = VulkanDevice(validation=True)
    try:
        vk = other.vk
        info = vk.VkBufferCreateInfo(
            size=0,
            usage=vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
            sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE,
        )
        try:
            vk.vkDestroyBuffer(other.device, vk.vkCreateBuffer(other.device, info, None), None)
        except Exception:
            pass
        assert any("size" in m for m in other.validation_errors), other.validation_errors
        assert idle.validation_errors == []
    finally:
        other.close()
    again = pool.lease(validation=True)
    try:
        assert again is idle
        assert again.validation_errors == []
    finally:
        pool.give_back(again)


def test_a_dropped_artifact_gives_its_device_back_at_once() -> None:
    """No reference cycle holds an artifact called once and dropped: its device is idle
    again before any garbage collection, for the next artifact."""
    ep, x, want = program()
    artifact = qopt.compile(ep, target="vulkan")
    np.testing.assert_allclose(artifact(x.numpy())[0], want.numpy(), rtol=1e-5, atol=1e-5)
    dev = artifact.device
    gc.disable()
    try:
        del artifact
        again = pool.lease()
        assert again is dev
        pool.give_back(again)
    finally:
        gc.enable()
