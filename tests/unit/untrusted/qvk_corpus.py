"""The shared `.qvk` corpus: valid bundles and crafted ones, for every reader of the
format (docs/qvk-format.md §6). Not a test module.

`make_seeds(directory)` compiles the valid bundles (small built-in models, a
two-method KV-cache decoder with states, size variants, a host-fallback bundle);
`corpus(directory)` yields `(name, bundle bytes, expected)` for each valid bundle
(`expected` None) and for each crafted one, made from a valid one by one edit (the
manifest edited with fuzz_worker's `qvk_parse` / `qvk_build`, blob hashes recomputed
so that only the check under test can refuse it; or the header or bytes edited):
`expected` is a substring of the Python reader's error. Every class of refusal of
docs/qvk-format.md §4 has at least one entry. Another reader (the native runtime)
must accept exactly the valid ones and refuse every crafted one (its message may
differ); a reader without qopt's interpreter refuses the bundles of
`NEEDS_INTERPRETER` too (host segments).

    python tests/unit/untrusted/qvk_corpus.py DIR    # DIR/<name>.qvk + DIR/expected.json

writes the corpus as files (seeds compiled into DIR/seeds first).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import struct
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__test__ = False

HERE = Path(__file__).resolve().parent


def _fuzz_worker() -> Any:
    """fuzz_worker.py (its `.qvk` parse/build helpers), loaded once under the name
    test_fuzz_untrusted.py gives it."""
    if "qopt_fuzz_worker" not in sys.modules:
        spec = importlib.util.spec_from_file_location("qopt_fuzz_worker", HERE / "fuzz_worker.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["qopt_fuzz_worker"] = module
        spec.loader.exec_module(module)
    return sys.modules["qopt_fuzz_worker"]


SEEDS = ("mlp.qvk", "llama.qvk", "kv.qvk", "variants.qvk", "host.qvk")
NEEDS_INTERPRETER = frozenset({"valid-host"})
"""Valid bundles with host segments (version 4): a reader without qopt's interpreter
refuses them, naming their ops."""

HOST_PROGRAM = """
func.func @forward(%x: tensor<2x4096xf32>, %n: tensor<4096xi64>) -> (tensor<2x4096xf32>, tensor<4096xi64>) {
  %a = aten.relu %x : (tensor<2x4096xf32>) -> tensor<2x4096xf32>
  %c, %ci = aten.sort %a {dim = 1 : i64} : (tensor<2x4096xf32>) -> (tensor<2x4096xf32>, tensor<2x4096xi64>)
  %p, %pi = aten.sort %c {dim = 1 : i64, descending = true, k = 1 : i64} : (tensor<2x4096xf32>) -> (tensor<2x1xf32>, tensor<2x1xi64>)
  %e = aten.add %a, %p : (tensor<2x4096xf32>, tensor<2x1xf32>) -> tensor<2x4096xf32>
  %s, %si = aten.sort %n {dim = 0 : i64} : (tensor<4096xi64>) -> (tensor<4096xi64>, tensor<4096xi64>)
  func.return %e, %s : tensor<2x4096xf32>, tensor<4096xi64>
}
"""
"""A program with ops that have no Vulkan kernel (sorts of 4096 entries, longer than
qopt/lowering/compose.py writes as ranks): its bundle has host segments."""


def make_seeds(directory: Path) -> Path:
    """Compile the valid bundles into `directory` (each once: an existing file is kept)."""
    import torch

    import qopt
    from qopt import examples
    from qopt.backends.vulkan.bundle import save_module
    from qopt.context import make_context, parse_module
    from qopt.lowering.convert_to_vkc import ConvertToVkcPass

    directory.mkdir(parents=True, exist_ok=True)

    def once(name: str, make: Callable[[Path], None]) -> None:
        if not (directory / name).is_file():
            make(directory / name)

    once("mlp.qvk", lambda p: qopt.compile(examples.export_model("mlp", "w4g32"), "vulkan").save(p))
    once(
        "llama.qvk",
        lambda p: qopt.compile(examples.export_model("llama", "8da4w"), "vulkan").save(p),
    )

    def kv(path: Path) -> None:  # two methods sharing weights and KV-cache states
        model = examples.build_kv_llama(vocab_size=64, dim=32, n_layers=1, n_heads=4,
                                        hidden_dim=64, max_seq_len=16)  # fmt: skip
        with torch.no_grad():
            decode = torch.export.export(
                model, (torch.tensor([[3]]), torch.tensor([5])), strict=False
            )
            prefill = torch.export.export(
                model, (torch.tensor([[1, 2, 3, 4]]), torch.arange(4)), strict=False
            )
        qopt.compile({"forward": decode, "prefill": prefill}, "vulkan").save(path)

    def variants(path: Path) -> None:  # forward__1, forward__3: size variants of a Dim
        model, inputs = examples.build_model("mlp")
        ep = torch.export.export(
            model, inputs, dynamic_shapes=({0: torch.export.Dim("batch", min=1, max=8)},)
        )
        qopt.compile(ep, "vulkan", dynamic_sizes=[1, 3]).save(path)

    def host(path: Path) -> None:
        module = parse_module(HOST_PROGRAM)
        ConvertToVkcPass(fallback=True).apply(make_context(), module)
        save_module(module, path)

    once("kv.qvk", kv)
    once("variants.qvk", variants)
    once("host.qvk", host)
    return directory


# ----- edits -------------------------------------------------------------------------------

Manifest = dict[str, Any]


def _first_step(m: Manifest, kernel_prefix: str) -> dict[str, Any]:
    """The first dispatch of a kernel whose name starts with `kernel_prefix`."""
    for step in m["steps"]:
        if m["kernels"][step["kernel"]]["kernel"].startswith(kernel_prefix):
            return step
    raise AssertionError(f"no dispatch of a {kernel_prefix} kernel in the seed")


def _status_buffer(m: Manifest) -> int:
    return next(i for i, b in enumerate(m["buffers"]) if b["kind"] == "status")


def _status_step(m: Manifest) -> dict[str, Any]:
    status = _status_buffer(m)
    return next(s for s in m["steps"] if status in s["buffers"])


def _kind(m: Manifest, kind: str) -> int:
    return next(i for i, b in enumerate(m["buffers"]) if b["kind"] == kind)


def _set(path: str, value: Any) -> Callable[[Manifest], None]:
    """An edit setting the manifest item at `path` ("steps.0.push.N")."""

    def edit(m: Manifest) -> None:
        *parents, last = path.split(".")
        target: Any = m
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value

    return edit


def _push_all(step_of: Callable[[Manifest], dict[str, Any]], factor: int) -> Any:
    def edit(m: Manifest) -> None:
        step = step_of(m)
        for key, value in step["push"].items():
            if isinstance(value, int):
                step["push"][key] = value * factor

    return edit


def _swap_spirv(m: Manifest) -> None:
    other = next(k for k in m["kernels"] if k["glsl"] != m["kernels"][0]["glsl"])
    m["kernels"][0]["spirv"] = dict(other["spirv"])


def _uncovered_methods(m: Manifest) -> None:
    m["methods"][-1]["steps"][1] -= 1


def _state_buffer_swap(m: Manifest) -> None:
    m["states"][0]["buffer"] = m["states"][1]["buffer"]


def _status_at_data_binding(m: Manifest) -> None:
    """The status buffer at a data binding whose buffer is one word (so that the
    dispatch's extents still fit)."""
    for step in m["steps"]:
        for j, b in enumerate(step["buffers"]):
            if m["buffers"][b]["nbytes"] <= 4 and m["buffers"][b]["kind"] != "status":
                step["buffers"][j] = _status_buffer(m)
                return
    raise AssertionError("no one-word data binding in the seed")


def _data_at_status_binding(m: Manifest) -> None:
    step = _status_step(m)
    step["buffers"][-1] = _kind(m, "alloc") if any(
        b["kind"] == "alloc" for b in m["buffers"]
    ) else _kind(m, "slot")  # fmt: skip


def _status_twice(m: Manifest) -> None:
    status = _status_buffer(m)
    first = _status_step(m)
    kernel = m["kernels"][first["kernel"]]["kernel"]
    for step in m["steps"]:
        if step is not first and m["kernels"][step["kernel"]]["kernel"] == kernel:
            step["buffers"][-1] = status
            return
    m["steps"].insert(m["steps"].index(first) + 1, copy.deepcopy(first))
    for method in m["methods"]:
        method["steps"][1] += 1
        if method is not m["methods"][0]:
            method["steps"][0] += 1


def _output_on_status(m: Manifest) -> None:
    m["outputs"][0].update(buffer=_status_buffer(m), shape=[1])


def _slot_too_small(m: Manifest) -> None:
    b = _kind(m, "slot")
    m["slots"][m["buffers"][b]["slot"]] = 4
    m["buffers"][b]["nbytes"] = max(m["buffers"][b]["nbytes"], 8)


def _orphan_state_buffer(m: Manifest) -> None:
    m["buffers"].append({"kind": "state", "state": 0, "nbytes": 4})


def _host_writes(kind: str) -> Callable[[Manifest], None]:
    def edit(m: Manifest) -> None:
        m["host_calls"][0]["writes"][0] = _kind(m, kind)

    return edit


def _host_order(m: Manifest) -> None:
    """A second segment, before the first one's position."""
    first = m["host_calls"][0]
    method = m["methods"][first["method"]]
    first["at"] = method["steps"][1] - method["steps"][0]
    m["host_calls"].append({**copy.deepcopy(first), "at": 0})


def _header(edit: Callable[[bytearray], bytearray]) -> Callable[[bytes], bytes]:
    return lambda data: bytes(edit(bytearray(data)))


def _magic(buf: bytearray) -> bytearray:
    buf[:4] = b"QVKC"
    return buf


def _pack(offset: int, value: int) -> Callable[[bytearray], bytearray]:
    def edit(buf: bytearray) -> bytearray:
        struct.pack_into("<I", buf, offset, value)
        return buf

    return edit


def _manifest_bytes(text: bytes) -> Callable[[bytes], bytes]:
    def edit(data: bytes) -> bytes:
        _, version, size = struct.unpack_from("<4sII", data)
        return struct.pack("<4sII", b"QVKB", version, len(text)) + text + data[12 + size :]

    return edit


def _flip_blob_byte(data: bytes) -> bytes:
    size = struct.unpack_from("<I", data, 8)[0]
    buf = bytearray(data)
    buf[12 + size + 100] ^= 0xFF  # inside the first SPIR-V blob
    return bytes(buf)


def _truncate_blobs(data: bytes) -> bytes:
    return data[:-16]


# (name, seed, edit of the bytes, expected substring)
BytesCase = tuple[str, str, Callable[[bytes], bytes], str]
# (name, seed, edit of the manifest, header version to write (None: the seed's), expected)
ManifestCase = tuple[str, str, Callable[[Manifest], Any], int | None, str]

BYTES_CASES: list[BytesCase] = [
    ("header-short", "mlp.qvk", lambda d: d[:10], "too short"),
    ("header-magic", "mlp.qvk", _header(_magic), "bad magic"),
    ("header-version-2", "mlp.qvk", _header(_pack(4, 2)), "version 2 Vulkan bundle"),
    ("header-version-5", "mlp.qvk", _header(_pack(4, 5)), "version 5 Vulkan bundle"),
    ("header-version-max", "mlp.qvk", _header(_pack(4, 2**32 - 1)), "reads versions 3 to 4"),
    ("manifest-size-huge", "mlp.qvk", _header(_pack(8, 2**32 - 1)), "max_manifest_bytes"),
    ("manifest-truncated", "mlp.qvk", lambda d: d[: 12 + struct.unpack_from("<I", d, 8)[0] - 1],
     "truncated (manifest)"),
    ("manifest-not-json", "mlp.qvk", _manifest_bytes(b"{not json"), "corrupted manifest"),
    ("manifest-not-utf8", "mlp.qvk", _manifest_bytes(b'{"a": "\xff"}'), "corrupted manifest"),
    ("manifest-deep", "mlp.qvk", _manifest_bytes(b"[" * 100000 + b"]" * 100000),
     "corrupted manifest"),
    ("manifest-list", "mlp.qvk", _manifest_bytes(b"[]"), "the manifest must be an object"),
    ("blob-hash", "mlp.qvk", _flip_blob_byte, "hash of kernel 0 does not match"),
    ("blob-truncated", "mlp.qvk", _truncate_blobs, "is truncated"),
]  # fmt: skip

MANIFEST_CASES: list[ManifestCase] = [
    ("manifest-missing-key", "mlp.qvk", lambda m: m.pop("steps"), None, "must be an object with"),
    ("manifest-kernels-not-list", "mlp.qvk", _set("kernels", {}), None, "kernels must be a list"),
    ("blob-offset-negative", "mlp.qvk", _set("kernels.0.spirv.offset", -1), None,
     "offset must be an integer >= 0"),
    ("blob-outside", "mlp.qvk", _set("kernels.0.spirv.offset", 2**40), None, "truncated (kernel 0)"),
    ("blob-record", "mlp.qvk", _set("constants.0.size", "8"), None, "size must be an integer"),
    ("constant-dtype", "mlp.qvk", _set("constants.0.dtype", "float64"), None, "has dtype"),
    ("constant-words", "mlp.qvk", lambda m: m["constants"][0].update(size=m["constants"][0]["size"] - 1),
     None, "not a whole number of words"),
    ("kernel-unknown", "mlp.qvk", _set("kernels.0.kernel", "evil"), None,
     "is not one of qopt's Vulkan kernels"),
    ("kernel-name-type", "mlp.qvk", _set("kernels.0.kernel", 7), None, "names must be strings"),
    ("kernel-glsl", "mlp.qvk", _set("kernels.0.glsl", "unary.glsl"), None, "is compiled from"),
    ("kernel-spec-unknown", "mlp.qvk", _set("kernels.0.spec.EVIL", 1), None,
     "has no specialization constant EVIL"),
    ("kernel-spec-range", "mlp.qvk", _set("kernels.0.spec.WG", 2**20), None, "WG"),
    ("kernel-spec-type", "mlp.qvk", _set("kernels.0.spec.WG", 64.0), None, "must be an integer"),
    ("spirv-foreign", "mlp.qvk", _swap_spirv, None, "SPIR-V"),
    ("record-unknown-key", "mlp.qvk", _set("steps.0.evil", 1), None, "corrupted manifest"),
    ("record-missing-key", "mlp.qvk", lambda m: m["steps"][0].pop("groups"), None,
     "must be an object with"),
    ("methods-none", "mlp.qvk", _set("methods", []), None, "has no method"),
    ("methods-uncovered", "kv.qvk", _uncovered_methods, None, "do not cover"),
    ("methods-duplicate", "kv.qvk", _set("methods.1.name", "forward"), None, "a second method"),
    ("methods-name", "mlp.qvk", _set("methods.0.name", "a\nb"), None, "one printable line"),
    ("methods-bounds", "mlp.qvk", _set("methods.0.inputs", [0]), None, "must be [start, stop]"),
    ("buffer-nbytes", "mlp.qvk", _set("buffers.0.nbytes", 3), None, "4-byte words"),
    ("buffer-nbytes-negative", "mlp.qvk", _set("buffers.0.nbytes", -4), None, "nbytes must be"),
    ("buffer-kind", "mlp.qvk", lambda m: m["buffers"][_kind(m, "alloc" if any(
        b["kind"] == "alloc" for b in m["buffers"]) else "slot")].update(kind="output"), None,
     "unknown kind"),
    ("buffer-constant-size", "mlp.qvk", lambda m: m["buffers"][_kind(m, "constant")].update(
        nbytes=m["buffers"][_kind(m, "constant")]["nbytes"] + 4), None, "holds"),
    ("buffer-slot-index", "mlp.qvk", lambda m: m["buffers"][_kind(m, "slot")].update(slot=99),
     None, "slot must be at most"),
    ("buffer-slot-small", "mlp.qvk", _slot_too_small, None, "holds fewer than"),
    ("buffer-input-method", "mlp.qvk", lambda m: m["buffers"][_kind(m, "input")].update(method=5),
     None, "method must be at most"),
    ("buffer-status-size", "llama.qvk", lambda m: m["buffers"][_status_buffer(m)].update(nbytes=8),
     None, "a status buffer holds 4 bytes"),
    ("buffer-status-what", "llama.qvk", lambda m: m["buffers"][_status_buffer(m)].update(
        what="\x1b[2J"), None, "'what' must be one printable line"),
    ("device-memory", "mlp.qvk", lambda m: m["slots"].append(65 << 30), None, "max_device_bytes"),
    ("state-buffer", "kv.qvk", _state_buffer_swap, None, "is not its state buffer"),
    ("state-dtype", "kv.qvk", _set("states.0.dtype", "complex64"), None, "is not a tensor dtype"),
    ("state-shape", "kv.qvk", lambda m: m["states"][0]["shape"].__setitem__(0, 2), None, "needs"),
    ("state-initial", "kv.qvk", _set("states.0.initial", 0), None, "initial value"),
    ("state-name", "kv.qvk", lambda m: m["states"][1].update(name=m["states"][0]["name"]), None,
     "a second state"),
    ("state-orphan", "kv.qvk", _orphan_state_buffer, None, "state buffer of no state"),
    ("tensor-fit", "mlp.qvk", _set("inputs.0.shape", [4, 64 * 64]), None, "do not fit"),
    ("tensor-dtype", "mlp.qvk", _set("outputs.0.dtype", "complex64"), None, "not a tensor dtype"),
    ("tensor-rank", "mlp.qvk", _set("inputs.0.shape", [1] * 17), None, "max_tensor_rank"),
    ("tensor-dim", "mlp.qvk", _set("inputs.0.shape", [-1, 4]), None, "dimension must be"),
    ("input-index", "kv.qvk", _set("inputs.0.index", 1), None, "index must be at most"),
    ("input-buffer", "kv.qvk", lambda m: m["inputs"][0].update(buffer=m["inputs"][1]["buffer"]),
     None, "is not the upload buffer"),
    ("output-status", "llama.qvk", _output_on_status, None, "is a status buffer"),
    ("dispatch-kernel", "mlp.qvk", _set("steps.0.kernel", 99), None, "kernel must be at most"),
    ("dispatch-buffer-id", "mlp.qvk", _set("steps.0.buffers.0", -1), None, "buffer id"),
    ("dispatch-buffer-count", "mlp.qvk", lambda m: m["steps"][0]["buffers"].pop(), None,
     "bindings"),
    ("dispatch-push-missing", "mlp.qvk", lambda m: m["steps"][0]["push"].popitem(), None,
     "takes push constants"),
    ("dispatch-push-range", "mlp.qvk", _set("steps.0.push.N", 2**32), None, "must be an integer in"),
    ("dispatch-push-type", "mlp.qvk", _set("steps.0.push", [1]), None,
     "push constants must be an object"),
    ("dispatch-groups-zero", "mlp.qvk", _set("steps.0.groups", [0, 1, 1]), None, "workgroup"),
    ("dispatch-groups-rank", "mlp.qvk", _set("steps.0.groups", [1, 1]), None, "workgroup"),
    ("dispatch-groups-many", "mlp.qvk", _set("steps.0.groups", [65535, 1, 1]), None, "more than"),
    ("dispatch-extents", "mlp.qvk", _push_all(lambda m: m["steps"][0], 64), None, "dispatch 0"),
    ("dispatch-writes-constant", "mlp.qvk",
     lambda m: m["steps"][0]["buffers"].__setitem__(-1, _kind(m, "constant")), None,
     "dispatch 0"),
    ("status-at-data-binding", "llama.qvk", _status_at_data_binding, None,
     "a status buffer is bound only at a status binding"),
    ("status-binding-data", "llama.qvk", _data_at_status_binding, None, "at its status binding"),
    ("status-twice", "llama.qvk", _status_twice, None, "is also bound by dispatch"),
    ("host-in-version-3", "host.qvk", lambda m: None, 3, "host segments need a version 4 bundle"),
    ("host-ir", "host.qvk", _set("host_calls.0.ir", "__import__('os').system('true')"), None,
     "its IR does not parse"),
    ("host-writes-input", "host.qvk", _host_writes("input"), None,
     "writes only transient buffers"),
    ("host-order", "host.qvk", _host_order, None, "in method and position order"),
    ("host-position", "host.qvk", _set("host_calls.0.at", 999), None, "position must be at most"),
    ("host-ops", "host.qvk", _set("host_calls.0.ops", ["\x1b[2J"]), None, "one printable line"),
]  # fmt: skip


def corpus(directory: Path) -> Iterator[tuple[str, bytes, str | None]]:
    """(name, bundle bytes, expected error substring or None for a valid bundle), the
    valid bundles of `make_seeds(directory)` first."""
    fw = _fuzz_worker()
    seeds = {name: (directory / name).read_bytes() for name in SEEDS}
    for name, data in seeds.items():
        yield f"valid-{name.removesuffix('.qvk')}", data, None
    for name, seed, edit, expected in BYTES_CASES:
        yield name, edit(seeds[seed]), expected
    for name, seed, edit, version, expected in MANIFEST_CASES:
        manifest, blobs, header_version = fw.qvk_parse(seeds[seed])
        edit(manifest)
        yield (
            name,
            fw.qvk_build(manifest, blobs, header_version if version is None else version),
            (expected),
        )


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0])
    seeds = make_seeds(out / "seeds")
    expected = {}
    for name, data, error in corpus(seeds):
        (out / f"{name}.qvk").write_bytes(data)
        expected[name] = error
    (out / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
    print(f"{len(expected)} bundles in {out} ({sum(e is None for e in expected.values())} valid)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
