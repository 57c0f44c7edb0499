"""Every check a `.qvk` program passes before any device runs it (untrusted input):
`check_program` (kernels, buffers, methods, states, dispatches, host segments) and
`verify_spirv` (a kernel's SPIR-V is qopt's for its source). The normative list is
docs/qvk-format.md, "What a reader checks".

Host segments (version 4) are the one place that reaches the compiler side: their
IR is parsed and verified with qopt's dialects (host.py), imported only when a
bundle has them.
"""

from __future__ import annotations

from typing import Any

from qopt.backends.vulkan.program import (
    MAX_NAME,
    MAX_WHAT,
    TENSOR_DTYPES,
    BundleProgram,
    HostCall,
    KernelEntry,
    Method,
    StateEntry,
    Tensor,
    abi_numpy,
)
from qopt.backends.vulkan.spirv import expected_spirv, have_tool, validate_spirv
from qopt.errors import QoptError
from qopt.kernels import catalogue
from qopt.limits import DEFAULT_LIMITS, Limits


def as_int(value: Any, what: str, low: int = 0, high: int | None = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise QoptError(f"{what} must be an integer >= {low}, got {str(value)[:40]!r}")
    if high is not None and value > high:
        raise QoptError(f"{what} must be at most {high}, got {value}")
    return value


def as_record(value: Any, what: str, keys: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict) or not keys <= set(value):
        raise QoptError(f"{what} must be an object with {', '.join(sorted(keys))}")
    return value


def as_list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise QoptError(f"{what} must be a list")
    return value


def verify_spirv(entry: KernelEntry, what: str) -> None:
    """The bundle's SPIR-V must be byte-equal to qopt's for the kernel's source: the
    prebuilt set's (qopt/kernels/prebuilt.py: no shader tool runs). Where the set
    lacks that source as it is now (no set built, or a kernel edited since), qopt's
    own compilation with glslang; where glslang is missing too, it must at least pass
    spirv-val."""
    assert entry.spirv is not None
    expected = expected_spirv(entry.glsl)
    if expected is not None:
        if entry.spirv != expected:
            raise QoptError(
                f"{what}: its SPIR-V is not qopt's compilation of {entry.glsl} (modified, or "
                "built by another qopt or glslang): recompile the bundle with "
                "`qopt-opt ... -t vkbundle`"
            )
        return
    if not have_tool("spirv-val"):
        raise QoptError(
            f"{what}: cannot verify its SPIR-V: qopt's prebuilt kernel set lacks "
            f"{entry.glsl} (build it: `python -m qopt.kernels.build`), or install "
            "glslang-tools or spirv-tools (Debian/Ubuntu: `apt-get install glslang-tools "
            "spirv-tools`)"
        )
    validate_spirv(entry.spirv, f"{what} ({entry.glsl})")


def as_name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= MAX_NAME or not value.isprintable():
        raise QoptError(f"{what} must be one printable line of 1 to {MAX_NAME} characters")
    return value


def _check_methods(program: BundleProgram, path: str) -> list[Method]:
    """Methods with unique names whose [start, stop) ranges cover the steps, inputs and
    outputs in order, consecutively."""
    methods = as_list(program.methods, f"'{path}': methods")
    if not methods:
        raise QoptError(f"'{path}': the bundle has no method")
    ends = [0, 0, 0]
    totals = (len(program.steps), len(program.inputs), len(program.outputs))
    names: set[str] = set()
    for i, method in enumerate(methods):
        what = f"'{path}': method {i}"
        if not isinstance(method, Method):
            raise QoptError(f"{what} must be an object")
        name = as_name(method.name, f"{what}'s name")
        if name in names:
            raise QoptError(f"{what}: a second method named {name!r}")
        names.add(name)
        for k, field_name in enumerate(("steps", "inputs", "outputs")):
            bounds = as_list(getattr(method, field_name), f"{what}'s {field_name}")
            if len(bounds) != 2:
                raise QoptError(f"{what}'s {field_name} must be [start, stop]")
            lo = as_int(bounds[0], f"{what}'s {field_name} start", ends[k], ends[k])
            ends[k] = as_int(bounds[1], f"{what}'s {field_name} stop", lo, totals[k])
    if tuple(ends) != totals:
        raise QoptError(f"'{path}': the methods do not cover every step, input and output")
    return methods


def _check_states(program: BundleProgram, path: str, limits: Limits) -> None:
    """Each state names one "state" buffer (and each "state" buffer one state) of 4
    bytes per element of its tensor type; its initial value, when given, is a
    constant of exactly those bytes in the state's 32-bit ABI type."""
    states = as_list(program.states, f"'{path}': states")
    names: set[str] = set()
    owner: dict[int, int] = {}
    for i, entry in enumerate(states):
        what = f"'{path}': state {i}"
        if not isinstance(entry, StateEntry):
            raise QoptError(f"{what} must be an object")
        name = as_name(entry.name, f"{what}'s name")
        if name in names:
            raise QoptError(f"{what}: a second state named {name!r}")
        names.add(name)
        b = as_int(entry.buffer, f"{what}'s buffer", 0, len(program.buffers) - 1)
        record = program.buffers[b]
        if record["kind"] != "state" or record.get("state") != i or b in owner:
            raise QoptError(f"{what}: buffer {b} is not its state buffer")
        owner[b] = i
        if entry.dtype not in TENSOR_DTYPES:
            raise QoptError(f"{what}: dtype {str(entry.dtype)[:20]!r} is not a tensor dtype")
        dims = as_list(entry.shape, f"{what}'s shape")
        limits.check(f"{what}'s rank", len(dims), "max_tensor_rank")
        numel = 1
        for d in dims:
            numel *= as_int(d, f"{what}'s dimension")
        limits.check(f"{what}'s elements", numel, "max_tensor_elements")
        nbytes = 4 * max(numel, 1)
        if record["nbytes"] != nbytes:
            raise QoptError(
                f"{what}: its buffer {b} holds {record['nbytes']} bytes, a {list(dims)} "
                f"{entry.dtype} state needs {nbytes} bytes"
            )
        if entry.initial is not None:
            c = as_int(entry.initial, f"{what}'s initial value", 0, len(program.constants) - 1)
            words = program.constants[c]
            if words.nbytes != nbytes or words.dtype != abi_numpy(entry.dtype):
                raise QoptError(
                    f"{what}: its initial value (constant {c}: {words.nbytes} bytes of "
                    f"{words.dtype}) is not {nbytes} bytes of {abi_numpy(entry.dtype)}"
                )
    for i, record in enumerate(program.buffers):
        if record["kind"] == "state" and i not in owner:
            raise QoptError(f"'{path}': buffer {i} is a state buffer of no state")


def check_program(program: BundleProgram, path: str, limits: Limits = DEFAULT_LIMITS) -> None:
    """Check a whole dispatch program before any device runs it: kernels registered
    with in-range specialization values; buffer ids, kinds, sizes, slots and constants
    consistent; inputs and outputs inside their buffers; every dispatch with the
    kernel's push constants and positive, bounded workgroup counts, touching only
    words inside its buffers (KernelSpec.check_dispatch) and writing only transient
    and state buffers; every status buffer bound once, at a status binding, and every status
    binding given one; methods covering the steps, inputs and outputs; every state
    buffer sized by its state's type and initialised by a constant of that size;
    device memory within `limits`. QoptError (one line) otherwise."""
    table = catalogue()
    for i, entry in enumerate(program.kernels):
        what = f"'{path}': kernel {i}"
        spec = table.get(entry.kernel)
        if spec is None:
            raise QoptError(f"{what}: '{entry.kernel[:40]}' is not one of qopt's Vulkan kernels")
        if entry.glsl != spec.glsl:
            raise QoptError(
                f"{what}: {entry.kernel} is compiled from {spec.glsl}, not {entry.glsl[:40]}"
            )
        try:
            spec.check_spec(entry.spec)
        except ValueError as e:
            raise QoptError(f"{what}: {e}") from None
    methods = _check_methods(program, path)
    sizes = [0] * len(program.buffers)
    device_bytes = sum(int(c.nbytes) for c in program.constants)
    for i, n in enumerate(program.slots):
        device_bytes += max(as_int(n, f"'{path}': slot {i}'s size"), 4)
    for i, record in enumerate(program.buffers):
        what = f"'{path}': buffer {i}"
        record = as_record(record, what, {"kind", "nbytes"})
        nbytes = as_int(record["nbytes"], f"{what}'s nbytes")
        if nbytes % 4:
            raise QoptError(f"{what}: nbytes {nbytes} is not a whole number of 4-byte words")
        kind = record["kind"]
        if kind == "constant":
            c = as_int(record.get("constant"), f"{what}'s constant", 0, len(program.constants) - 1)
            if program.constants[c].nbytes != nbytes:
                raise QoptError(f"{what}: constant {c} holds {program.constants[c].nbytes} bytes")
        elif kind == "slot":
            slot = as_int(record.get("slot"), f"{what}'s slot", 0, len(program.slots) - 1)
            if max(program.slots[slot], 4) < nbytes:
                raise QoptError(f"{what}: slot {slot} holds fewer than its {nbytes} bytes")
        elif kind == "input":
            m = as_int(record.get("method"), f"{what}'s method", 0, len(methods) - 1)
            count = methods[m].inputs[1] - methods[m].inputs[0]
            as_int(record.get("index"), f"{what}'s input index", 0, count - 1)
            device_bytes += max(nbytes, 4)
        elif kind in ("alloc", "state"):
            device_bytes += max(nbytes, 4)
        elif kind == "status":
            if nbytes != 4:
                raise QoptError(f"{what}: a status buffer holds 4 bytes, not {nbytes}")
            text = record.get("what")
            if not isinstance(text, str) or len(text) > MAX_WHAT or not text.isprintable():
                raise QoptError(
                    f"{what}: a status buffer's 'what' must be one printable line of at most "
                    f"{MAX_WHAT} characters"
                )
            device_bytes += 4
        else:
            raise QoptError(f"{what}: unknown kind {str(kind)[:20]!r}")
        sizes[i] = max(nbytes, 4) // 4
    limits.check(f"'{path}': the device memory it asks for", device_bytes, "max_device_bytes")
    _check_states(program, path, limits)

    def check_tensor(t: Tensor, what: str) -> int:
        as_int(t.buffer, f"{what}'s buffer", 0, len(program.buffers) - 1)
        if t.dtype not in TENSOR_DTYPES:
            raise QoptError(f"{what}: dtype {str(t.dtype)[:20]!r} is not a tensor dtype")
        dims = as_list(t.shape, f"{what}'s shape")
        limits.check(f"{what}'s rank", len(dims), "max_tensor_rank")
        numel = 1
        for d in dims:
            numel *= as_int(d, f"{what}'s dimension")
        if max(numel, 1) > sizes[t.buffer]:
            raise QoptError(
                f"{what}: {numel} elements do not fit buffer {t.buffer} ({sizes[t.buffer]} words)"
            )
        return numel

    for m, method in enumerate(methods):
        first = method.inputs[0]
        for position, t in enumerate(program.method_inputs(method)):
            what = f"'{path}': input {first + position}"
            check_tensor(t, what)
            record = program.buffers[t.buffer]
            index = as_int(t.index, f"{what}'s index", 0, position)
            if (
                record["kind"] != "input"
                or record.get("index") != index
                or record.get("method") != m
                or index != position
            ):
                raise QoptError(
                    f"{what}: buffer {t.buffer} is not the upload buffer of input {index} "
                    f"of method {method.name}"
                )
    for i, t in enumerate(program.outputs):
        check_tensor(t, f"'{path}': output {i}")
        if program.buffers[t.buffer]["kind"] == "status":
            raise QoptError(f"'{path}': output {i}: buffer {t.buffer} is a status buffer")
    status_users: dict[int, int] = {}
    limits.check(f"'{path}': the number of dispatches", len(program.steps), "max_dispatches")
    for i, step in enumerate(program.steps):
        what = f"'{path}': dispatch {i}"
        k = as_int(step.kernel, f"{what}'s kernel", 0, len(program.kernels) - 1)
        entry = program.kernels[k]
        spec = table[entry.kernel]
        ids = as_list(step.buffers, f"{what}'s buffers")
        for b in ids:
            as_int(b, f"{what}'s buffer id", 0, len(program.buffers) - 1)
        if not isinstance(step.push, dict):
            raise QoptError(f"{what}: push constants must be an object")
        groups = as_list(step.groups, f"{what}'s workgroups")
        try:
            spec.check_dispatch(step.push, entry.spec, groups, [sizes[b] for b in ids])
        except ValueError as e:
            raise QoptError(f"{what}: {e}") from None
        for binding, b in zip(spec.bindings, ids, strict=True):
            kind = program.buffers[b]["kind"]
            if binding.is_status and kind != "status":
                raise QoptError(
                    f"{what}: kernel {entry.kernel} binds {kind} buffer {b} at its status "
                    "binding (it takes a status buffer)"
                )
            if kind == "status" and not binding.is_status:
                raise QoptError(
                    f"{what}: kernel {entry.kernel} binds status buffer {b} at binding "
                    f"{binding.name} (a status buffer is bound only at a status binding)"
                )
            if kind == "status":
                if b in status_users:
                    raise QoptError(
                        f"{what}: status buffer {b} is also bound by dispatch {status_users[b]} "
                        "(each dispatch has its own)"
                    )
                status_users[b] = i
            elif binding.writes and kind not in ("alloc", "slot", "state"):
                raise QoptError(
                    f"{what}: kernel {entry.kernel} writes binding {binding.name} into "
                    f"{kind} buffer {b} (only transient and state buffers are written)"
                )
    _check_host_calls(program, path, methods, sizes, limits, device_bytes)


def _check_host_calls(
    program: BundleProgram,
    path: str,
    methods: list[Method],
    sizes: list[int],
    limits: Limits,
    device_bytes: int,
) -> None:
    """Host segments in method and position order, each reading buffers that are not
    status words and writing distinct transient buffers it does not read, its IR
    parsed and checked (`host.parse_segment`) with one tensor per buffer that fits
    it (a constant read must hold the tensor's ABI type) and whose values need no more
    host memory than the program's device memory (plus `expansion_slack_bytes`); sets
    each call's `segment`."""
    calls = as_list(program.host_calls, f"'{path}': host segments")
    steps = limits.tally(f"'{path}': its dispatches and host segments together", "max_dispatches")
    steps.add(len(program.steps) + len(calls))
    host_ops = limits.tally(f"'{path}': the ops of its host segments together", "max_graph_nodes")
    if not calls:
        return
    # The host fallback's IR is parsed with qopt's dialects: the one place a bundle
    # pulls the compiler side in, only when it has host segments.
    from qopt.backends.vulkan.host import element_dtype_name, parse_segment

    last = (0, 0)
    for i, call in enumerate(calls):
        what = f"'{path}': host segment {i}"
        if not isinstance(call, HostCall):
            raise QoptError(f"{what} must be an object")
        m = as_int(call.method, f"{what}'s method", 0, len(methods) - 1)
        count = methods[m].steps[1] - methods[m].steps[0]
        at = as_int(call.at, f"{what}'s position", 0, count)
        if (m, at) < last:
            raise QoptError(f"{what}: host segments must be in method and position order")
        last = (m, at)
        reads = as_list(call.reads, f"{what}'s reads")
        writes = as_list(call.writes, f"{what}'s writes")
        for b in (*reads, *writes):
            as_int(b, f"{what}'s buffer id", 0, len(program.buffers) - 1)
        if any(program.buffers[b]["kind"] == "status" for b in reads):
            raise QoptError(f"{what}: it reads a status buffer (read only by its kernel)")
        if not writes or len(set(writes)) != len(writes) or set(writes) & set(reads):
            raise QoptError(f"{what}: it writes distinct buffers, at least one, none it reads")
        for b in writes:
            if program.buffers[b]["kind"] not in ("alloc", "slot"):
                raise QoptError(
                    f"{what}: it writes {program.buffers[b]['kind']} buffer {b} (a host segment "
                    "writes only transient buffers)"
                )
        ops = as_list(call.ops, f"{what}'s ops")
        limits.check(f"{what}: its ops", len(ops), "max_graph_nodes")
        for text in ops:
            if not isinstance(text, str) or len(text) > MAX_WHAT or not text.isprintable():
                raise QoptError(
                    f"{what}: each of its ops is named by one printable line of at most "
                    f"{MAX_WHAT} characters"
                )
        segment = parse_segment(call.ir, what, limits, device_bytes + limits.expansion_slack_bytes)
        host_ops.add(sum(1 for _ in segment.module.walk()))  # what runs, not the names
        types = [(t, "argument") for t in segment.input_types]
        types += [(t, "result") for t in segment.result_types]
        if len(segment.input_types) != len(reads) or len(segment.result_types) != len(writes):
            raise QoptError(
                f"{what}: its function takes {len(segment.input_types)} tensors and gives "
                f"{len(segment.result_types)} for {len(reads)} buffers read and {len(writes)} "
                "written"
            )
        for (t, kind), b in zip(types, [*reads, *writes], strict=True):
            dims = [int(d) for d in t.get_shape()]
            limits.check(f"{what}'s rank", len(dims), "max_tensor_rank")
            numel = 1
            for d in dims:
                numel *= d
            limits.check(f"{what}'s elements", numel, "max_tensor_elements")
            dtype = element_dtype_name(t)
            if dtype not in TENSOR_DTYPES:
                raise QoptError(f"{what}: a {kind} of dtype {dtype[:20]!r} is no tensor dtype")
            if max(numel, 1) > sizes[b]:
                raise QoptError(
                    f"{what}: a {kind} of {numel} elements does not fit buffer {b} "
                    f"({sizes[b]} words)"
                )
            record = program.buffers[b]
            if record["kind"] == "constant":
                words = program.constants[record["constant"]]
                if words.dtype != abi_numpy(dtype):
                    raise QoptError(
                        f"{what}: it reads constant buffer {b} ({words.dtype}) as {dtype}, "
                        f"which travels as {abi_numpy(dtype)}"
                    )
        call.segment = segment
