"""What a device's limits make of one dispatch's views: uniform views (`UniformView`)
turned off or bounded by maxUniformBufferRange, texel views (`TexelView`) turned off
where the device has no uniform texel buffers of `TEXEL_FORMAT` (or too few elements),
and the VkBufferViews bound for them. Every path a limit picks reads the same words into
the same arithmetic: the same bits (the kernels' headers say how)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from qopt.backends.vulkan.loader import VulkanError
from qopt.kernels import KernelSpec, SpecValues
from qopt.kernels.spec import MAX_UNIFORM_BYTES


class DeviceLimits(Protocol):
    """What these functions read of runtime.VulkanDevice."""

    vk: Any
    max_uniform_range: int
    texel_format: bool
    max_texel_elements: int


class ViewedBuffer(Protocol):
    """What these functions read of runtime.Buffer."""

    size: int

    def texel_view(self, fmt: int, texels: int) -> Any: ...


def spec_key(spec: KernelSpec, values: SpecValues) -> tuple[int, ...]:
    unknown = set(values) - {name for name, _ in spec.spec}
    if unknown:
        raise VulkanError(f"kernel {spec.name} has no specialization constant {sorted(unknown)}")
    return tuple(int(values.get(name, default)) for name, default in spec.spec)


def fit_uniforms(dev: DeviceLimits, spec: KernelSpec, values: SpecValues) -> SpecValues:
    """`values` with every uniform view (`UniformView`) whose block exceeds this device's
    maxUniformBufferRange turned off (flag 0, one vec4): the kernel then reads that
    binding through its storage buffer, the same values in the same order (the two paths
    are bit-identical), so a program compiled for 64 KiB blocks runs unchanged on a device
    with the Vulkan minimum of 16 KiB."""
    out = dict(values)
    full = dict(zip([n for n, _ in spec.spec], spec_key(spec, values), strict=True))
    for view in spec.uniforms:
        if int(full[view.flag]) == 1 and view.bytes(full) > dev.max_uniform_range:
            out[view.flag] = 0
            out[view.vec4s] = 1
    return out


def uniform_ranges(
    dev: DeviceLimits,
    spec: KernelSpec,
    values: SpecValues,
    names: Sequence[str],
    bufs: Sequence[ViewedBuffer],
) -> list[tuple[ViewedBuffer, int]]:
    """(buffer, bytes) of each of `spec`'s uniform views (`UniformView`) for a dispatch
    with these (complete) specialization values: the first min(block bytes, buffer bytes,
    maxUniformBufferRange) of the viewed binding's buffer. A block the kernel reads (flag
    1) must lie inside the buffer (its extents say so; checked again here) and within the
    device's maxUniformBufferRange (`fit_uniforms` turned larger ones off); VulkanError
    (a QoptError) otherwise."""
    out = []
    for view in spec.uniforms:
        buf = bufs[names.index(view.binding)]
        nbytes = view.bytes(values)
        if int(values[view.flag]) == 1:
            if nbytes > dev.max_uniform_range:
                raise VulkanError(
                    f"dispatch of {spec.name}: reads {view.binding} ({nbytes} bytes) through a "
                    f"uniform buffer, over this device's maxUniformBufferRange "
                    f"({dev.max_uniform_range} bytes); qopt compiles such reads for a "
                    f"{MAX_UNIFORM_BYTES}-byte limit: run the program on a device with it"
                )
            if nbytes > buf.size:
                raise VulkanError(
                    f"dispatch of {spec.name}: a {nbytes}-byte uniform view of {view.binding} "
                    f"over a {buf.size}-byte buffer"
                )
        out.append((buf, min(nbytes, buf.size, dev.max_uniform_range)))
    return out


def fit_texels(
    dev: DeviceLimits,
    spec: KernelSpec,
    values: SpecValues,
    names: Sequence[str],
    bufs: Sequence[ViewedBuffer],
) -> SpecValues:
    """`values` with every texel view (`TexelView`) this device cannot give turned off
    (flag 0): no uniform texel buffers of `TEXEL_FORMAT`, or fewer maxTexelBufferElements
    than the viewed buffer's texels. The kernel then reads those words through its storage
    buffer (the same words into the same arithmetic: the same bits)."""
    out = dict(values)
    for view in spec.texels:
        if int(out.get(view.flag, dict(spec.spec)[view.flag])) != 1:
            continue
        buf = bufs[names.index(view.binding)]
        if not dev.texel_format or buf.size // 16 > dev.max_texel_elements:
            out[view.flag] = 0
    return out


def texel_views(
    dev: DeviceLimits, spec: KernelSpec, names: Sequence[str], bufs: Sequence[ViewedBuffer]
) -> list[Any]:
    """The VkBufferView of each of `spec`'s texel views for a dispatch: the viewed
    buffer's first min(its texels, maxTexelBufferElements) texels of `TEXEL_FORMAT`, or,
    on a device without that format (`fit_texels` turned the view off: it is bound, not
    read), of R32_UINT (a format every device offers for uniform texel buffers)."""
    vk = dev.vk
    out = []
    for view in spec.texels:
        buf = bufs[names.index(view.binding)]
        if dev.texel_format:
            fmt, texels = vk.VK_FORMAT_R32G32B32A32_UINT, buf.size // 16
        else:
            fmt, texels = vk.VK_FORMAT_R32_UINT, buf.size // 4
        out.append(buf.texel_view(fmt, max(1, min(texels, dev.max_texel_elements))))
    return out
