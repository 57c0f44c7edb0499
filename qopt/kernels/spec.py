"""`KernelSpec` and `Binding`: one Vulkan kernel's interface as data.

A kernel (a GLSL 450 compute shader of qopt/kernels/glsl/) is described
by its storage-buffer bindings (in binding order), its push-constant block (in
declaration order, 4-byte scalars), its specialization constants (variants of one
shader: op codes, bit widths, group sizes, flags, tile sizes) with their ranges,
its local size, how many workgroups a dispatch needs and which words of each
binding a dispatch can touch. The vkc verifier, the lowering, the `.qvk` loader
and the runtime all read this record; the numpy reference (what the kernel
computes) is attached by the semantics layer (qopt/interpreters/kernels/).

Buffer ABI (every binding is a std430 storage buffer of 4-byte words):
- float tensors: float32, row-major;
- integer and boolean activation tensors (indices, masks, quantized
  activations): int32 per element, row-major (int64 indices are narrowed to
  int32 at compile time; booleans are 0/1);
- constant weight buffers: packed by `qopt.kernels.packing` into the layout the
  kernel reads (int4 eight per uint32 word, int8 four per word, LUT codes at
  their bit width, scales/codebooks float32, zero points int32);
- a status word (`STATUS`, the last binding of a kernel that indexes a table with
  values read from a buffer: gather_rows, the embeddings): one u32 the kernel sets
  to 1 when an index lies outside [0, V), torch's range for embedding and
  index_select (it still writes that row as before: zeros, or for an index in
  [-V, 0) the row counted from the end). Every dispatch of such a kernel gets its
  own status buffer, zeroed before each run and read after it: a set word is a
  QoptError (`index_error_message`), never silent zeros.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

PushValues = Mapping[str, int | float]
SpecValues = Mapping[str, int]
Reference = Callable[[dict[str, np.ndarray], PushValues, SpecValues], None]
"""A kernel's numpy reference: writes its outputs into `buffers` (flat numpy arrays
by binding name) for these push and specialization values."""
Extents = dict[str, int]
ExtentsFn = Callable[[PushValues, SpecValues], Extents]

MAX_WORKGROUPS = 65535
"""Workgroup count limit per dimension (Vulkan's guaranteed maxComputeWorkGroupCount)."""
BINDING_DTYPES = ("f32", "i32", "u32")
"""Element types a binding reads: f32, i32, or raw 32-bit words (u32)."""
PUSH_KINDS = ("i32", "u32", "f32")
"""Kinds of a 4-byte push constant."""

STATUS = "status"
"""Name of the status binding: u32, written, one word, last in binding order."""


MAX_UNIFORM_BYTES = 65536
"""The most bytes a kernel reads through one uniform block (`UniformView`): lavapipe's and
most desktop GPUs' maxUniformBufferRange (Vulkan guarantees only 16384; the runtime checks
the device's limit when it records a dispatch and refuses a larger view with a QoptError
naming the limit)."""


@dataclass(frozen=True)
class UniformView:
    """The leading bytes of storage binding `binding`, bound a second time as a std140
    uniform block at descriptor binding len(bindings) + j (the j-th view of the kernel).
    Specialization constant `flag` (0 / 1) says whether the kernel reads through it;
    `vec4s` is the block's length in vec4s. The runtime binds min(16 * vec4s, buffer
    bytes) of the buffer there whatever `flag` is (the block is statically used in the
    shader, so it must be bound); with `flag` 1 the kernel's extents cover 4 * vec4s words
    of `binding`, so the whole block lies inside the buffer."""

    binding: str
    flag: str
    vec4s: str

    def bytes(self, spec: SpecValues) -> int:
        """Bytes of the uniform block for these (complete) specialization values."""
        return 16 * int(spec[self.vec4s])


TEXEL_FORMAT = "R32G32B32A32_UINT"
"""The format of every texel view (`TexelView`): one uvec4 (16 bytes) per texel."""


@dataclass(frozen=True)
class TexelView:
    """Storage binding `binding` (u32 words) bound a second time as a uniform texel buffer
    (GLSL `usamplerBuffer`, format `TEXEL_FORMAT`: texel i is words 4i..4i+3) at
    descriptor binding len(bindings) + len(uniforms) + j (the j-th texel view of the
    kernel). Specialization constant `flag` (0 / 1) says whether the kernel reads through
    it (`texelFetch` instead of the storage buffer's uvec4 loads: the same words, so the
    two paths compute the same bits). The runtime binds a view of the whole buffer (at
    most the device's maxTexelBufferElements texels) whatever `flag` is (the sampler is
    statically used in the shader, so it must be bound), and turns `flag` off when it
    records a dispatch on a device without uniform texel buffers of `TEXEL_FORMAT` or
    whose maxTexelBufferElements is below the buffer's texels (`runtime._fit_views`); with
    `flag` 1 the kernel's extents of `binding` cover every texel it fetches."""

    binding: str
    flag: str


@dataclass(frozen=True)
class Binding:
    name: str
    dtype: str  # "f32" | "i32" | "u32" (raw 32-bit words)
    writes: bool = False
    packed: str | None = None
    """For weight bindings: the layout prefix its constant must carry (`q` for
    q4/q8 words, `lut` for packed codebook indices); the vkc verifier rejects any
    other buffer there."""

    @property
    def is_status(self) -> bool:
        """The kernel's index status word (see `STATUS`)."""
        return is_status_binding(self.name, self.dtype, self.writes)


def is_status_binding(name: str, dtype: str, writes: bool) -> bool:
    """Whether a binding `name` of `dtype` (written or not) is an index status word."""
    return name == STATUS and dtype == "u32" and writes


def index_error_message(what: str, step: int, kernel_name: str) -> str:
    """The one-line message for a dispatch whose status word was set."""
    if kernel_name == "assert_true":
        return (
            f"{what}: a run-time check recorded at export failed (Vulkan step {step}); the "
            "inputs are outside what the program was exported for"
        )
    return (
        f"{what}: an index was out of range (Vulkan step {step}, kernel {kernel_name}); "
        "check the inputs (token ids must be below the vocabulary size)"
    )


def _one_workgroup(push: PushValues, spec: SpecValues) -> tuple[int, int, int]:
    return (1, 1, 1)


def _never_exact(spec: SpecValues) -> bool:
    return False


@dataclass(frozen=True)
class KernelSpec:
    name: str
    """Kernel name, e.g. `linear_q4gsw` (ExecuTorch nomenclature where one exists)."""
    glsl: str
    """File name under qopt/kernels/glsl/."""
    bindings: tuple[Binding, ...]
    push: tuple[tuple[str, str], ...]
    """Push-constant block: (name, "i32" | "u32" | "f32") in declaration order."""
    spec: tuple[tuple[str, int], ...] = ()
    """Specialization constants: (name, default) in constant_id order 0, 1, 2, ..."""
    local_size: tuple[int, int, int] = (64, 1, 1)
    workgroups: Callable[[PushValues, SpecValues], tuple[int, int, int]] = _one_workgroup
    extents: ExtentsFn | None = None
    """The 4-byte words of each binding a dispatch can touch, by binding name: one
    more than the highest index the shader can read or write for these push and
    specialization values, in exact integer arithmetic (an upper bound is fine,
    an under-estimate is a memory-safety bug). It may raise ValueError for push
    values the kernel does not accept. `check_dispatch` compares it with the
    bound buffers before any device runs the dispatch (vkc verifier, `.qvk` load)."""
    spec_bounds: Mapping[str, tuple[int, int]] = field(default_factory=dict[str, tuple[int, int]])
    """Inclusive (low, high) range of every specialization constant; a value
    outside it (or a constant without a range) is refused by `check_dispatch`."""
    uniforms: tuple[UniformView, ...] = ()
    """Storage bindings also read through uniform blocks (`UniformView`), in descriptor
    binding order after the storage bindings."""
    texels: tuple[TexelView, ...] = ()
    """Storage bindings also read through uniform texel buffers (`TexelView`), in
    descriptor binding order after the uniform blocks."""
    exact: Callable[[SpecValues], bool] = _never_exact
    """Whether the device computes what the reference computes bit for bit (given the
    specialization values): integer arithmetic, or f32 adds/multiplies/divides/square
    roots (correctly rounded in Vulkan's float32 rules for these kernels' operands) in
    the reference's order, under `precise`. Kernels that accumulate floats in their own
    tiling order or call transcendental builtins (exp, tanh, ...) are not; the tests
    check both kinds dispatch by dispatch on the local device (qopt.backends.vulkan.bisect)."""
    doc: str = ""
    """Bindings / push / spec summary (also the spec's `__doc__`)."""
    reference: Reference | None = None
    """The numpy reference, attached by qopt.interpreters.kernels.kernels() (None in the
    bare catalogue, which holds interfaces only)."""

    def __post_init__(self) -> None:
        if self.doc:
            object.__setattr__(self, "__doc__", self.doc)

    @property
    def status_index(self) -> int | None:
        """Position of the status binding (always the last one), or None."""
        last = len(self.bindings) - 1
        return last if self.bindings and self.bindings[-1].is_status else None

    def spec_values(self, given: SpecValues) -> dict[str, int]:
        """`given` over the specialization constants' defaults."""
        values = {name: default for name, default in self.spec}
        values.update(given)
        return values

    def run_reference(
        self, buffers: Sequence[np.ndarray], push: PushValues, spec: SpecValues
    ) -> None:
        """Run `reference` on `buffers` (in binding order), writing every written
        binding back into its array in place."""
        if self.reference is None:
            raise ValueError(
                f"kernel {self.name} has no numpy reference attached: take the spec from "
                "qopt.interpreters.kernels.kernels()"
            )
        named = {b.name: array for b, array in zip(self.bindings, buffers, strict=True)}
        given = dict(named)
        self.reference(named, push, self.spec_values(spec))
        for binding in self.bindings:
            result, original = named[binding.name], given[binding.name]
            if binding.writes and result is not original:
                original[...] = np.asarray(result).reshape(-1).astype(original.dtype, copy=False)

    def check_dispatch(
        self,
        push: PushValues,
        spec: SpecValues,
        groups: Sequence[object],
        buffer_words: Sequence[int],
    ) -> None:
        """Raise ValueError (one line) unless a dispatch of this kernel with these
        push constants, specialization values and workgroup counts (at most the
        kernel's own `workgroups`) stays inside buffers of `buffer_words` 4-byte
        words (in binding order)."""
        self.check_spec(spec)
        self.check_push(push)
        counts = [
            g
            for g in groups
            if isinstance(g, int) and not isinstance(g, bool) and 1 <= g <= MAX_WORKGROUPS
        ]
        if len(groups) != 3 or len(counts) != len(groups):
            raise ValueError(
                f"kernel {self.name}: workgroup counts must be 3 integers in "
                f"[1, {MAX_WORKGROUPS}], got {list(groups)}"
            )
        values = self.spec_values(spec)
        need = tuple(max(1, int(g)) for g in self.workgroups(push, values))
        if any(g > n for g, n in zip(counts, need, strict=True)):
            # Every kernel loops over its work (grid-stride), so more workgroups than
            # its own count only burn device time: a bundle may not ask for them.
            raise ValueError(
                f"kernel {self.name}: {list(groups)} workgroups, more than the {list(need)} "
                "these push constants need"
            )
        if len(buffer_words) != len(self.bindings):
            raise ValueError(
                f"kernel {self.name} has {len(self.bindings)} bindings, got "
                f"{len(buffer_words)} buffers"
            )
        if self.extents is None:
            raise ValueError(f"kernel {self.name} declares no buffer extents")
        extents = self.extents(push, values)
        for binding, words in zip(self.bindings, buffer_words, strict=True):
            need = int(extents[binding.name])
            if need > words:
                raise ValueError(
                    f"kernel {self.name}: binding {binding.name} can touch {need} words "
                    f"with these push constants, but its buffer holds {words}"
                )

    def check_spec(self, spec: Mapping[str, object]) -> None:
        """Every specialization value names a constant of the kernel and lies in its range."""
        known = dict(self.spec)
        for key, value in spec.items():
            if key not in known:
                raise ValueError(
                    f"kernel {self.name} has no specialization constant {key} "
                    f"(it has {sorted(known)})"
                )
            bounds = self.spec_bounds.get(key)
            if bounds is None:
                raise ValueError(f"kernel {self.name}: specialization constant {key} has no range")
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"kernel {self.name}: {key} must be an integer, got {value!r}")
            if not bounds[0] <= value <= bounds[1]:
                raise ValueError(
                    f"kernel {self.name}: specialization constant {key} = {value} is outside "
                    f"[{bounds[0]}, {bounds[1]}]"
                )

    def check_push(self, push: Mapping[str, object]) -> None:
        """Exactly the kernel's push constants, each representable in its kind."""
        names = [n for n, _ in self.push]
        if sorted(push) != sorted(names):
            raise ValueError(f"kernel {self.name} takes push constants {names}, got {sorted(push)}")
        for name, kind in self.push:
            value = push[name]
            if kind == "f32":
                if not isinstance(value, int | float) or isinstance(value, bool):
                    raise ValueError(f"kernel {self.name}: push constant {name} must be a number")
                continue
            low, high = (0, 2**32 - 1) if kind == "u32" else (-(2**31), 2**31 - 1)
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise ValueError(
                    f"kernel {self.name}: push constant {name} must be an integer in "
                    f"[{low}, {high}] ({kind}), got {value!r}"
                )

    def push_bytes(self, values: PushValues) -> bytes:
        words: list[np.ndarray] = []
        for name, kind in self.push:
            value = values[name]
            words.append(
                np.asarray(
                    value, dtype={"i32": np.int32, "u32": np.uint32, "f32": np.float32}[kind]
                )
            )
        return b"".join(w.tobytes() for w in words)


def check_status_binding(spec: KernelSpec) -> None:
    """A binding named `STATUS` is the last one, u32, written (ValueError otherwise)."""
    for i, binding in enumerate(spec.bindings):
        if binding.name == STATUS and (not binding.is_status or i != len(spec.bindings) - 1):
            raise ValueError(f"kernel {spec.name}: binding {STATUS} must be the last, u32, written")


def binding(name: str, dtype: str, writes: bool = False, packed: str | None = None) -> Binding:
    return Binding(name, dtype, writes, packed)


def status() -> Binding:
    """The index status word (`STATUS`): last binding, one u32, written."""
    return Binding(STATUS, "u32", True)


def push_of(*names: str, kind: str = "u32") -> tuple[tuple[str, str], ...]:
    return tuple((n, kind) for n in names)
