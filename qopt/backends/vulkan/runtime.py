"""The Vulkan runtime: a compute device, storage buffers, cached pipelines and
programs of dispatches recorded into one command buffer (the `vulkan` cffi package).

    with VulkanDevice() as dev:
        x = dev.upload(np.arange(8, dtype=np.float32))
        y = dev.buffer(8 * 4)
        dev.run([Dispatch("unary", [x, y], push={"n": 8, "a": 0.0, "b": 0.0},
                          spec={"OP": UNARY_OPS["relu"]})])
        print(dev.download(y, np.float32))

Device choice: the `device` argument or `$QOPT_VULKAN_DEVICE` (an index into the
compute-capable devices, or a substring of the device name); the first
compute-capable device otherwise. `$QOPT_VULKAN_VALIDATION=1` (or
`validation=True`) enables VK_LAYER_KHRONOS_validation; its error messages are
collected in `VulkanDevice.validation_errors` and raised as `VulkanError` at the
end of the call that produced them (`raise_on_validation=False` only collects).

Every Vulkan object the device creates is destroyed by `close()` (also on
`with` exit and, as a last resort, by `__del__`). Loading the `vulkan` package, finding
devices (`list_devices`) and routing validation messages are `loader.py`'s.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Self

import numpy as np

from qopt.backends.vulkan.loader import (
    MESSAGE_SINKS,
    SINK_IDS,
    SINK_LOCK,
    VALIDATION_LAYER,
    VulkanError,
    debug_callback,
    device_props,
    enumerate_devices,
    load_vulkan,
    select_device,
)
from qopt.backends.vulkan.spirv import compile_kernel
from qopt.backends.vulkan.views import (
    fit_texels,
    fit_uniforms,
    spec_key,
    texel_views,
    uniform_ranges,
)
from qopt.kernels import KernelSpec, PushValues, SpecValues, kernel_spec
from qopt.kernels.variants import choose, report, variant_mode

# ----- buffers, dispatches -------------------------------------------------------------


class Buffer:
    """A host-visible, host-coherent storage buffer (persistently mapped)."""

    def __init__(self, device: VulkanDevice, nbytes: int):
        vk = device.vk
        self.device = device
        self.nbytes = int(nbytes)
        size = max(16, (self.nbytes + 15) // 16 * 16)
        self.size = size
        usage = (
            vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
            | vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT  # for kernels' `UniformView`s
            | vk.VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT  # and `TexelView`s
            | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
            | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
        )
        info = vk.VkBufferCreateInfo(
            size=size, usage=usage, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE
        )
        self.handle = vk.vkCreateBuffer(device.device, info, None)
        self.memory = None
        self._texel_views: dict[tuple[int, int], Any] = {}
        try:
            req = vk.vkGetBufferMemoryRequirements(device.device, self.handle)
            index = device._memory_type(req.memoryTypeBits)
            alloc = vk.VkMemoryAllocateInfo(allocationSize=req.size, memoryTypeIndex=index)
            self.memory = vk.vkAllocateMemory(device.device, alloc, None)
            vk.vkBindBufferMemory(device.device, self.handle, self.memory, 0)
            self._map = vk.vkMapMemory(device.device, self.memory, 0, size, 0)
            self.view = np.frombuffer(self._map, dtype=np.uint8, count=size)
        except Exception:
            self._destroy()
            raise

    def write(self, array: np.ndarray, offset: int = 0) -> None:
        data = np.ascontiguousarray(array).view(np.uint8).reshape(-1)
        if offset + data.size > self.size:
            raise VulkanError(f"{data.size} bytes do not fit a {self.nbytes}-byte buffer")
        assert self.view is not None, "the buffer was freed"
        self.view[offset : offset + data.size] = data

    def read(self, dtype: Any = np.float32, count: int | None = None) -> np.ndarray:
        dtype = np.dtype(dtype)
        n = self.nbytes // dtype.itemsize if count is None else count
        assert self.view is not None, "the buffer was freed"
        return self.view[: n * dtype.itemsize].view(dtype).copy()

    def texel_view(self, fmt: int, texels: int) -> Any:
        """A VkBufferView of this buffer's first `texels` texels in format `fmt` (created
        once, destroyed with the buffer)."""
        key = (fmt, texels)
        view = self._texel_views.get(key)
        if view is None:
            if self.handle is None:
                raise VulkanError("a dispatch uses a freed buffer")
            vk = self.device.vk
            size = texels * (16 if fmt == vk.VK_FORMAT_R32G32B32A32_UINT else 4)
            info = vk.VkBufferViewCreateInfo(buffer=self.handle, format=fmt, offset=0, range=size)
            view = vk.vkCreateBufferView(self.device.device, info, None)
            self._texel_views[key] = view
        return view

    def _destroy(self) -> None:
        vk = self.device.vk
        dev = self.device.device
        for view in getattr(self, "_texel_views", {}).values():
            vk.vkDestroyBufferView(dev, view, None)
        self._texel_views = {}
        if getattr(self, "_map", None) is not None:
            self.view = None
            self._map = None
            vk.vkUnmapMemory(dev, self.memory)
        if self.handle is not None:
            vk.vkDestroyBuffer(dev, self.handle, None)
            self.handle = None
        if self.memory is not None:
            vk.vkFreeMemory(dev, self.memory, None)
            self.memory = None

    def free(self) -> None:
        if self.handle is not None:
            self._destroy()
            self.device._buffers.discard(self)


@dataclass
class Dispatch:
    """One kernel call: buffers in binding order (or by binding name), push and
    spec values by name (spec defaults fill the rest), and the workgroup count
    (`None`: the kernel's `workgroups(push, spec)`)."""

    kernel: str | KernelSpec
    buffers: Sequence[Buffer] | Mapping[str, Buffer]
    push: PushValues = field(default_factory=dict)
    spec: SpecValues = field(default_factory=dict)
    groups: tuple[int, int, int] | None = None


@dataclass
class _Pipeline:
    spec: KernelSpec
    module: Any
    set_layout: Any
    layout: Any
    pipeline: Any
    push_size: int


class Program:
    """Dispatches recorded once into one command buffer; `submit()` runs them
    (compute->compute barriers between dispatches) and waits."""

    def __init__(self, device: VulkanDevice, dispatches: Sequence[Dispatch], timestamps: bool):
        vk = device.vk
        self.device = device
        self.count = len(dispatches)
        self.pool = self.cmd = self.fence = self.query = None
        self.timestamps = timestamps and device.timestamp_period > 0
        self.last_seconds: float | None = None
        """Host wall time of the last `submit()`, from vkQueueSubmit to the fence."""
        self._closed = False
        try:
            self._record(vk, dispatches)
        except Exception:
            self.close()
            raise
        device._programs.add(self)

    def _record(self, vk: Any, dispatches: Sequence[Dispatch]) -> None:
        dev = self.device
        resolved = []
        n_descriptors = n_uniforms = n_texels = 0
        for d in dispatches:
            spec = kernel_spec(d.kernel) if isinstance(d.kernel, str) else d.kernel
            values = fit_uniforms(dev, spec, d.spec) if spec.uniforms else d.spec
            names = [b.name for b in spec.bindings]
            if isinstance(d.buffers, Mapping):
                missing = [n for n in names if n not in d.buffers]
                if missing:
                    raise VulkanError(f"dispatch of {spec.name}: no buffer for {missing}")
                bufs = [d.buffers[n] for n in names]
            else:
                bufs = list(d.buffers)
                if len(bufs) != len(names):
                    raise VulkanError(
                        f"dispatch of {spec.name}: {len(bufs)} buffers for bindings {names}"
                    )
            if spec.texels:
                values = fit_texels(dev, spec, values, names, bufs)
            spec_values = dict(zip([n for n, _ in spec.spec], spec_key(spec, values), strict=True))
            groups = d.groups if d.groups is not None else spec.workgroups(d.push, spec_values)
            # the device's variant of the kernel (qopt.kernels.variants), picked now, never
            # stored in the program: the same interface, its own shader and workgroup rule
            variant = choose(spec.name, dev.props, d.push, spec_values, dev.variant_mode)
            if variant is not None:
                vspec = variant.kernel(spec)
                pipe = dev.pipeline(vspec, values)
                groups = vspec.workgroups(d.push, spec_values)
                key = (spec.name, variant.name)
                dev.variant_dispatches[key] = dev.variant_dispatches.get(key, 0) + 1
            else:
                pipe = dev.pipeline(spec, values)
            groups = tuple(int(g) for g in groups)
            limit = dev.max_workgroups
            if any(g > lim for g, lim in zip(groups, limit, strict=True)):
                raise VulkanError(f"dispatch of {spec.name}: {groups} workgroups exceed {limit}")
            push = spec.push_bytes(d.push) if spec.push else b""
            uniforms = uniform_ranges(dev, spec, spec_values, names, bufs)
            texels = texel_views(dev, spec, names, bufs)
            resolved.append((pipe, bufs, push, groups, uniforms, texels))
            n_descriptors += len(bufs)
            n_uniforms += len(uniforms)
            n_texels += len(texels)
        n = max(1, len(resolved))
        sizes = [
            vk.VkDescriptorPoolSize(
                type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptorCount=max(1, n_descriptors)
            )
        ]
        if n_uniforms:
            sizes.append(
                vk.VkDescriptorPoolSize(
                    type=vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, descriptorCount=n_uniforms
                )
            )
        if n_texels:
            sizes.append(
                vk.VkDescriptorPoolSize(
                    type=vk.VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, descriptorCount=n_texels
                )
            )
        pool_info = vk.VkDescriptorPoolCreateInfo(
            maxSets=n, poolSizeCount=len(sizes), pPoolSizes=sizes
        )
        self.pool = vk.vkCreateDescriptorPool(dev.device, pool_info, None)
        sets = []
        if resolved:
            alloc = vk.VkDescriptorSetAllocateInfo(
                descriptorPool=self.pool,
                descriptorSetCount=len(resolved),
                pSetLayouts=[r[0].set_layout for r in resolved],
            )
            sets = list(vk.vkAllocateDescriptorSets(dev.device, alloc))
            writes = []
            for ds, (_, bufs, _, _, uniforms, texels) in zip(sets, resolved, strict=True):
                kinds = [vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER] * len(bufs)
                ranges = [(b, b.size) for b in bufs]
                kinds += [vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER] * len(uniforms)
                ranges += uniforms
                for i, ((b, nbytes), kind) in enumerate(zip(ranges, kinds, strict=True)):
                    if b.handle is None:
                        raise VulkanError("a dispatch uses a freed buffer")
                    writes.append(
                        vk.VkWriteDescriptorSet(
                            dstSet=ds,
                            dstBinding=i,
                            descriptorCount=1,
                            descriptorType=kind,
                            pBufferInfo=[
                                vk.VkDescriptorBufferInfo(buffer=b.handle, offset=0, range=nbytes)
                            ],
                        )
                    )
                for j, view in enumerate(texels):
                    writes.append(
                        vk.VkWriteDescriptorSet(
                            dstSet=ds,
                            dstBinding=len(ranges) + j,
                            descriptorCount=1,
                            descriptorType=vk.VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER,
                            pTexelBufferView=[view],
                        )
                    )
            if writes:
                vk.vkUpdateDescriptorSets(dev.device, len(writes), writes, 0, None)
        if self.timestamps:
            self.query = vk.vkCreateQueryPool(
                dev.device,
                vk.VkQueryPoolCreateInfo(
                    queryType=vk.VK_QUERY_TYPE_TIMESTAMP, queryCount=len(resolved) + 1
                ),
                None,
            )
        self.fence = vk.vkCreateFence(dev.device, vk.VkFenceCreateInfo(), None)
        cmd = vk.vkAllocateCommandBuffers(
            dev.device,
            vk.VkCommandBufferAllocateInfo(
                commandPool=dev.command_pool,
                level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                commandBufferCount=1,
            ),
        )
        self.cmd = cmd[0]
        vk.vkBeginCommandBuffer(self.cmd, vk.VkCommandBufferBeginInfo())
        compute = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
        if self.query is not None:
            vk.vkCmdResetQueryPool(self.cmd, self.query, 0, len(resolved) + 1)
            vk.vkCmdWriteTimestamp(self.cmd, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, self.query, 0)
        # host writes (uploads) -> shader reads
        self._barrier(
            vk,
            vk.VK_PIPELINE_STAGE_HOST_BIT,
            compute,
            vk.VK_ACCESS_HOST_WRITE_BIT,
            vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT,
        )
        for i, ((pipe, _bufs, push, groups, _, _), ds) in enumerate(
            zip(resolved, sets, strict=True)
        ):
            if i:
                self._barrier(
                    vk,
                    compute,
                    compute,
                    vk.VK_ACCESS_SHADER_WRITE_BIT,
                    vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT,
                )
            vk.vkCmdBindPipeline(self.cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipe.pipeline)
            vk.vkCmdBindDescriptorSets(
                self.cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipe.layout, 0, 1, [ds], 0, None
            )
            if pipe.push_size:
                data = vk.ffi.new("char[]", push)
                vk.vkCmdPushConstants(
                    self.cmd, pipe.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, len(push), data
                )
            if all(groups):
                vk.vkCmdDispatch(self.cmd, *groups)
            if self.query is not None:
                vk.vkCmdWriteTimestamp(
                    self.cmd, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, self.query, i + 1
                )
        # shader writes -> host reads (downloads)
        self._barrier(
            vk,
            compute,
            vk.VK_PIPELINE_STAGE_HOST_BIT,
            vk.VK_ACCESS_SHADER_WRITE_BIT,
            vk.VK_ACCESS_HOST_READ_BIT,
        )
        vk.vkEndCommandBuffer(self.cmd)
        self.device._check_validation("recording a command buffer")

    def _barrier(self, vk: Any, src_stage: int, dst_stage: int, src: int, dst: int) -> None:
        barrier = vk.VkMemoryBarrier(srcAccessMask=src, dstAccessMask=dst)
        vk.vkCmdPipelineBarrier(self.cmd, src_stage, dst_stage, 0, 1, [barrier], 0, None, 0, None)

    def submit(self) -> list[float] | None:
        """Run the program and wait; with timestamps, the seconds of each dispatch."""
        vk = self.device.vk
        dev = self.device.device
        if self._closed:
            raise VulkanError("submit() of a closed program")
        vk.vkResetFences(dev, 1, [self.fence])
        info = vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=[self.cmd])
        start = time.perf_counter()
        vk.vkQueueSubmit(self.device.queue, 1, [info], self.fence)
        vk.vkWaitForFences(dev, 1, [self.fence], vk.VK_TRUE, 0xFFFFFFFFFFFFFFFF)
        self.last_seconds = time.perf_counter() - start
        self.device._check_validation("running a command buffer")
        if self.query is None:
            return None
        n = self.count + 1
        data = vk.ffi.new("uint64_t[]", n)
        vk.vkGetQueryPoolResults(
            dev,
            self.query,
            0,
            n,
            n * 8,
            data,
            8,
            vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT,
        )
        ticks = np.frombuffer(vk.ffi.buffer(data, n * 8), dtype=np.uint64).astype(np.float64)
        mask = float(2**self.device.timestamp_bits) if self.device.timestamp_bits < 64 else None
        diffs = np.diff(ticks)
        if mask is not None:
            diffs = np.mod(diffs, mask)
        return list(diffs * self.device.timestamp_period * 1e-9)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        vk = self.device.vk
        dev = self.device.device
        if self.cmd is not None:
            vk.vkFreeCommandBuffers(dev, self.device.command_pool, 1, [self.cmd])
            self.cmd = None
        if self.fence is not None:
            vk.vkDestroyFence(dev, self.fence, None)
            self.fence = None
        if self.query is not None:
            vk.vkDestroyQueryPool(dev, self.query, None)
            self.query = None
        if self.pool is not None:
            vk.vkDestroyDescriptorPool(dev, self.pool, None)
            self.pool = None
        self.device._programs.discard(self)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ----- the device -------------------------------------------------------------------


class VulkanDevice:
    """A compute-capable Vulkan device with one compute queue. `variants` (auto / base /
    all; None: $QOPT_VK_VARIANTS, else auto) says which kernel variants its programs may
    run (`qopt.kernels.variants`)."""

    def __init__(
        self,
        device: str | int | None = None,
        validation: bool | None = None,
        raise_on_validation: bool = True,
        variants: str | None = None,
    ):
        self.vk = vk = load_vulkan()
        self._variants = variants
        self._closed = False
        self.instance = self.device = self.command_pool = self.messenger = None
        self._pipelines: dict[tuple[str, tuple[int, ...], bytes], _Pipeline] = {}
        self._modules: dict[bytes, Any] = {}  # by the SPIR-V's digest
        self._module_of: dict[str, bytes] = {}  # kernel source -> the digest it runs now
        self._buffers: set[Buffer] = set()
        self.pool_key: tuple[str, bool, str] | None = None
        """The choice pool.lease opened this device for (None: not the pool's)."""
        self.idle = False
        self.sink_id = next(SINK_IDS)
        """Which device the validation layer's messages are for (`debug_callback`)."""
        """Kept idle by pool.py: a finalizer run in the same garbage cycle as the artifact
        that gave it back (which resurrected it) must not close it."""
        self._programs: set[Program] = set()
        self.validation_errors: list[str] = []
        self.validation_warnings: list[str] = []
        self.raise_on_validation = raise_on_validation
        if validation is None:
            validation = os.environ.get("QOPT_VULKAN_VALIDATION", "") not in ("", "0")
        self.validation = validation
        if device is None:
            device = os.environ.get("QOPT_VULKAN_DEVICE") or None
        try:
            self._create(vk, device)
        except Exception:
            self.close()
            raise

    def _create(self, vk: Any, choice: str | int | None) -> None:
        layers: list[str] = []
        extensions: list[str] = []
        if self.validation:
            available = {
                vk.ffi.string(p.layerName).decode()
                if not isinstance(p.layerName, str)
                else p.layerName
                for p in vk.vkEnumerateInstanceLayerProperties()
            }
            if VALIDATION_LAYER not in available:
                raise VulkanError(
                    f"{VALIDATION_LAYER} is not installed "
                    "(Debian/Ubuntu: `apt-get install vulkan-validationlayers`)"
                )
            layers.append(VALIDATION_LAYER)
            extensions.append(vk.VK_EXT_DEBUG_UTILS_EXTENSION_NAME)
        app = vk.VkApplicationInfo(
            pApplicationName="qopt",
            applicationVersion=1,
            pEngineName="qopt",
            engineVersion=1,
            apiVersion=vk.VK_MAKE_VERSION(1, 2, 0),
        )
        info = vk.VkInstanceCreateInfo(
            pApplicationInfo=app,
            enabledLayerCount=len(layers),
            ppEnabledLayerNames=layers or None,
            enabledExtensionCount=len(extensions),
            ppEnabledExtensionNames=extensions or None,
        )
        try:
            self.instance = vk.vkCreateInstance(info, None)
        except vk.VkError as e:
            raise VulkanError(f"vkCreateInstance failed ({type(e).__name__})") from e
        if self.validation:
            vk._internal_vkDebugUtilsMessengerCallbackEXT = debug_callback
            with SINK_LOCK:
                MESSAGE_SINKS.add(self)
            create = vk.vkGetInstanceProcAddr(self.instance, "vkCreateDebugUtilsMessengerEXT")
            self._destroy_messenger = vk.vkGetInstanceProcAddr(
                self.instance, "vkDestroyDebugUtilsMessengerEXT"
            )
            minfo = vk.VkDebugUtilsMessengerCreateInfoEXT(
                messageSeverity=vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT
                | vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
                messageType=vk.VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT
                | vk.VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT
                | vk.VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
                pfnUserCallback=debug_callback,
                pUserData=vk.ffi.cast("void *", self.sink_id),  # its messages are this device's
            )
            self.messenger = create(self.instance, minfo, None)
        pd, name, family = select_device(enumerate_devices(vk, self.instance), choice)
        self.physical_device, self.name, self.queue_family = pd, name, family
        props = vk.vkGetPhysicalDeviceProperties(pd)
        limits = props.limits
        self.timestamp_period = float(limits.timestampPeriod)
        fam = vk.vkGetPhysicalDeviceQueueFamilyProperties(pd)[family]
        self.timestamp_bits = int(fam.timestampValidBits)
        if self.timestamp_bits == 0:
            self.timestamp_period = 0.0
        self.max_workgroups = tuple(int(limits.maxComputeWorkGroupCount[i]) for i in range(3))
        self.max_push_constants = int(limits.maxPushConstantsSize)
        self.max_uniform_range = int(limits.maxUniformBufferRange)
        self.max_texel_elements = int(limits.maxTexelBufferElements)
        fmt = vk.vkGetPhysicalDeviceFormatProperties(pd, vk.VK_FORMAT_R32G32B32A32_UINT)
        self.texel_format = bool(fmt.bufferFeatures & vk.VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT)
        """Whether uniform texel buffers of `TEXEL_FORMAT` (R32G32B32A32_UINT) exist here."""
        self.device_type = int(props.deviceType)
        self.props = device_props(vk, pd, props)
        """What the kernel variants' choice reads (`qopt.kernels.variants`)."""
        self.variant_mode = variant_mode(self._variants)
        """`variants`, else QOPT_VK_VARIANTS when the device was opened (auto / base / all)."""
        self.variant_dispatches: dict[tuple[str, str], int] = {}
        """Dispatches recorded with a variant, by (kernel, variant)."""
        self._memory_props = vk.vkGetPhysicalDeviceMemoryProperties(pd)
        qinfo = vk.VkDeviceQueueCreateInfo(
            queueFamilyIndex=family, queueCount=1, pQueuePriorities=[1.0]
        )
        # robustBufferAccess bounds every storage-buffer access to its buffer where the
        # device offers it: a second line of defence behind the dispatch extent checks.
        features = vk.vkGetPhysicalDeviceFeatures(pd)
        self.robust_buffer_access = bool(features.robustBufferAccess)
        enabled = vk.VkPhysicalDeviceFeatures(
            robustBufferAccess=vk.VK_TRUE if self.robust_buffer_access else vk.VK_FALSE
        )
        # shaderFloat16 where the device has it: the f16 kernel variants use it (and are
        # chosen only there); the native runtime enables the same
        f16 = vk.VkPhysicalDeviceShaderFloat16Int8Features(shaderFloat16=vk.VK_TRUE)
        self.device = vk.vkCreateDevice(
            pd,
            vk.VkDeviceCreateInfo(
                pNext=f16 if self.props.float16 else None,
                queueCreateInfoCount=1,
                pQueueCreateInfos=[qinfo],
                pEnabledFeatures=enabled,
            ),
            None,
        )
        self.queue = vk.vkGetDeviceQueue(self.device, family, 0)
        self.command_pool = vk.vkCreateCommandPool(
            self.device,
            vk.VkCommandPoolCreateInfo(
                queueFamilyIndex=family,
                flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
            ),
            None,
        )
        self._check_validation("creating the device")

    def variant_report(self, kernels: Sequence[str]) -> list[str]:
        """Which variant each of `kernels` got in the programs recorded so far, and why
        the others run the base (`qopt.kernels.variants.report`)."""
        return report(self.name, self.props, self.variant_mode, self.variant_dispatches, kernels)

    # -- memory --------------------------------------------------------------------

    def _memory_type(self, type_bits: int) -> int:
        vk = self.vk
        want = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
        best = None
        for i in range(self._memory_props.memoryTypeCount):
            flags = self._memory_props.memoryTypes[i].propertyFlags
            if not type_bits & (1 << i) or flags & want != want:
                continue
            if flags & vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT:
                return i
            if best is None:
                best = i
        if best is None:
            raise VulkanError(f"{self.name} has no host-visible, host-coherent memory type")
        return best

    def buffer(self, nbytes: int) -> Buffer:
        """A new zero-filled storage buffer of `nbytes` bytes."""
        self._check_open()
        buf = Buffer(self, nbytes)
        assert buf.view is not None
        buf.view[:] = 0
        self._buffers.add(buf)
        return buf

    def upload(self, array: np.ndarray) -> Buffer:
        """A new buffer holding `array` (4-byte dtypes; narrow bool/int64 first)."""
        arr = np.ascontiguousarray(array)
        buf = self.buffer(arr.nbytes)
        buf.write(arr)
        return buf

    def download(
        self, buf: Buffer, dtype: Any = np.float32, shape: Sequence[int] | None = None
    ) -> np.ndarray:
        count = None if shape is None else int(np.prod(shape, dtype=np.int64))
        out = buf.read(dtype, count)
        return out if shape is None else out.reshape(tuple(shape))

    # -- pipelines --------------------------------------------------------------------

    def shader_module(self, glsl: str, spirv: bytes | None = None) -> Any:
        """The shader module of kernel source `glsl` (a file under kernels/): from
        `spirv` when given (a bundle's own, checked code), else the one given last, else
        compiled now (cached by content hash). Modules are kept by the code's digest, so
        a device reused by another program never runs one program's code for another's;
        pipelines created later use the module given last."""
        self._check_open()
        if spirv is None:
            digest = self._module_of.get(glsl)
            if digest is not None:
                return self._modules[digest]
            spirv = compile_kernel(glsl)
        digest = hashlib.sha256(spirv).digest()
        module = self._modules.get(digest)
        if module is None:
            vk = self.vk
            module = vk.vkCreateShaderModule(
                self.device, vk.VkShaderModuleCreateInfo(codeSize=len(spirv), pCode=spirv), None
            )
            self._modules[digest] = module
            self._check_validation(f"creating the shader module of {glsl}")
        self._module_of[glsl] = digest
        return module

    def pipeline(self, spec: KernelSpec | str, values: SpecValues | None = None) -> _Pipeline:
        """The compute pipeline of (kernel, specialization values), created once."""
        self._check_open()
        vk = self.vk
        if isinstance(spec, str):
            spec = kernel_spec(spec)
        module = self.shader_module(spec.glsl)
        key = (spec.name, spec_key(spec, values or {}), self._module_of[spec.glsl])
        if key in self._pipelines:
            return self._pipelines[key]
        kinds = [vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER] * len(spec.bindings)
        kinds += [vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER] * len(spec.uniforms)
        kinds += [vk.VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER] * len(spec.texels)
        bindings = [
            vk.VkDescriptorSetLayoutBinding(
                binding=i,
                descriptorType=kind,
                descriptorCount=1,
                stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT,
            )
            for i, kind in enumerate(kinds)
        ]
        set_layout = vk.vkCreateDescriptorSetLayout(
            self.device,
            vk.VkDescriptorSetLayoutCreateInfo(bindingCount=len(bindings), pBindings=bindings),
            None,
        )
        push_size = 4 * len(spec.push)
        if push_size > self.max_push_constants:
            raise VulkanError(f"kernel {spec.name}: {push_size} bytes of push constants")
        layout_info = vk.VkPipelineLayoutCreateInfo(
            setLayoutCount=1,
            pSetLayouts=[set_layout],
            pushConstantRangeCount=1 if push_size else 0,
            pPushConstantRanges=[
                vk.VkPushConstantRange(
                    stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT, offset=0, size=push_size
                )
            ]
            if push_size
            else None,
        )
        layout = vk.vkCreatePipelineLayout(self.device, layout_info, None)
        spec_info = None
        keep: list[Any] = []
        if spec.spec:
            data = vk.ffi.new("int32_t[]", list(key[1]))
            keep.append(data)
            entries = [
                vk.VkSpecializationMapEntry(constantID=i, offset=4 * i, size=4)
                for i in range(len(spec.spec))
            ]
            spec_info = vk.VkSpecializationInfo(
                mapEntryCount=len(entries),
                pMapEntries=entries,
                dataSize=4 * len(entries),
                pData=vk.ffi.cast("void*", data),
            )
        stage = vk.VkPipelineShaderStageCreateInfo(
            stage=vk.VK_SHADER_STAGE_COMPUTE_BIT,
            module=module,
            pName="main",
            pSpecializationInfo=spec_info,
        )
        try:
            pipes = vk.vkCreateComputePipelines(
                self.device,
                vk.VK_NULL_HANDLE,
                1,
                [vk.VkComputePipelineCreateInfo(stage=stage, layout=layout)],
                None,
            )
        except Exception:
            vk.vkDestroyPipelineLayout(self.device, layout, None)
            vk.vkDestroyDescriptorSetLayout(self.device, set_layout, None)
            raise
        pipe = _Pipeline(spec, module, set_layout, layout, pipes[0], push_size)
        self._pipelines[key] = pipe
        self._check_validation(f"creating the pipeline of {spec.name}")
        return pipe

    # -- running ----------------------------------------------------------------------

    def program(self, dispatches: Sequence[Dispatch], timestamps: bool = False) -> Program:
        """Record `dispatches` into one command buffer (submit it with `.submit()`)."""
        self._check_open()
        return Program(self, dispatches, timestamps)

    def run(self, dispatches: Sequence[Dispatch], timestamps: bool = False) -> list[float] | None:
        """Record, submit and wait; with timestamps, the seconds of each dispatch."""
        with self.program(dispatches, timestamps) as prog:
            return prog.submit()

    # -- validation, lifetime ------------------------------------------------------------

    def _check_validation(self, what: str) -> None:
        if self.validation_errors and self.raise_on_validation:
            errors, self.validation_errors = self.validation_errors, []
            raise VulkanError(f"Vulkan validation errors while {what}:\n" + "\n".join(errors[:20]))

    def _check_open(self) -> None:
        if self._closed:
            raise VulkanError("the Vulkan device is closed")

    def recycle(self) -> bool:
        """Free what the device's last user allocated (programs, buffers), forget its
        code choices and keep the shader modules and pipelines for the next (pool.py).
        False, changing nothing, when it cannot be reused: closed, validation errors
        pending, or the device does not go idle."""
        if self._closed or self.device is None or self.validation_errors:
            return False
        try:
            self.vk.vkDeviceWaitIdle(self.device)
        except Exception:
            return False
        for prog in list(self._programs):
            prog.close()
        for buf in list(self._buffers):
            buf.free()
        self._module_of.clear()
        self.variant_dispatches.clear()
        self.validation_warnings.clear()
        return True

    def close(self) -> None:
        """Destroy every Vulkan object this device created (idempotent)."""
        if self._closed:
            return
        self._closed = True
        vk = self.vk
        if self.device is not None:
            vk.vkDeviceWaitIdle(self.device)
            for prog in list(self._programs):
                prog.close()
            for buf in list(self._buffers):
                buf.free()
            for pipe in self._pipelines.values():
                vk.vkDestroyPipeline(self.device, pipe.pipeline, None)
                vk.vkDestroyPipelineLayout(self.device, pipe.layout, None)
                vk.vkDestroyDescriptorSetLayout(self.device, pipe.set_layout, None)
            self._pipelines.clear()
            for module in self._modules.values():
                vk.vkDestroyShaderModule(self.device, module, None)
            self._modules.clear()
            self._module_of.clear()
            if self.command_pool is not None:
                vk.vkDestroyCommandPool(self.device, self.command_pool, None)
                self.command_pool = None
            vk.vkDestroyDevice(self.device, None)
            self.device = None
        if self.instance is not None:
            if self.messenger is not None:
                self._destroy_messenger(self.instance, self.messenger, None)
                self.messenger = None
            vk.vkDestroyInstance(self.instance, None)
            self.instance = None
        with SINK_LOCK:
            MESSAGE_SINKS.discard(self)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if self.idle:
            return
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        return f"VulkanDevice({self.name!r})"


_AVAILABLE: dict[str, str | None] = {}


def vulkan_available(device: str | int | None = None) -> str | None:
    """None when a Vulkan compute device can be opened, else the reason why not."""
    key = str(device if device is not None else os.environ.get("QOPT_VULKAN_DEVICE", ""))
    if key in _AVAILABLE:
        return _AVAILABLE[key]
    reason: str | None = None
    try:
        with VulkanDevice(device, validation=False):
            pass
    except Exception as e:
        reason = f"no usable Vulkan device: {e}"
    _AVAILABLE[key] = reason
    return reason
