"""Seeds, mutators and the worker process of `test_fuzz_untrusted.py` (not a test module).

The test starts this file as ONE long-lived subprocess (memory-capped, see `serve`),
hands it a seeds folder and a range of mutant indices on stdin, and reads one JSON
line per mutant from stdout. Mutant `i` of campaign `c` is generated from
`random.Random(f"{c}:{i}")` alone, so any mutant can be rebuilt and rerun by index:

    .venv/bin/python tests/unit/untrusted/fuzz_worker.py --make-seeds /tmp/seeds          # once
    .venv/bin/python tests/unit/untrusted/fuzz_worker.py --seeds /tmp/seeds --only 123 --keep /tmp/m

(`--keep DIR` leaves the mutant file there; add `--campaign C` if the test ran another
campaign than the default.)

Memory: the worker runs under `RLIMIT_DATA` (not `RLIMIT_AS`: torch, Vulkan and
glibc reserve far more address space than they touch, RLIMIT_DATA bounds the
private writable memory, which is what an unbounded allocation grows), so an
allocation a missing bound lets through fails with MemoryError (reported by the
tools as "out of memory") instead of taking the machine down; and each mutant's
peak resident size is measured by resetting the kernel's high-water mark
(`/proc/self/clear_refs` <- "5") before it and reading `VmHWM` after it.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import io
import json
import os
import random
import re
import shutil
import struct
import sys
import time
import traceback
import warnings
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__test__ = False  # not a test module (pytest collects only test_*.py anyway)

FORMATS = ("pt2", "mlir", "qvk", "mlpackage", "npz", "round2")
#: Which format mutant i has: a fixed cycle, so every format is in every prefix.
#: "round2": the surfaces of issue 27 (run-time sizes, Dim ranges, host segments,
#: methods and size variants with generation, options, API arguments; `mutate_round2`).
#: `QOPT_FUZZ_FORMATS=round2` (comma-separated) restricts a campaign to some formats.
FORMAT_CYCLE = ("pt2", "qvk", "mlir", "npz", "mlpackage", "round2", "pt2", "qvk", "mlir",
                "npz", "mlpackage", "pt2")  # fmt: skip
_ONLY = tuple(f for f in os.environ.get("QOPT_FUZZ_FORMATS", "").split(",") if f)
if _ONLY:
    FORMAT_CYCLE = tuple(f for f in FORMAT_CYCLE if f in _ONLY) or FORMAT_CYCLE
DEFAULT_CAMPAIGN = 20240601
OOM_MARKERS = ("out of memory", "can't allocate memory", "unable to allocate", "memoryerror")

#: Programs (seed name -> the npz of its inputs).
PROGRAM_INPUTS = {
    "mlp.pt2": "mlp_in.npz",
    "llama.pt2": "llama_in.npz",
    "dyn.pt2": "mlp_in.npz",
    "mlp.mlir": "mlp_in.npz",
    "mlp_fused.mlir": "mlp_in.npz",
    "llama.mlir": "llama_in.npz",
    "mlp.qvk": "mlp_in.npz",
    "llama.qvk": "llama_in.npz",
    "kv.qvk": "kv_in.npz",
    "mlp.mlpackage": "mlp_in.npz",
    "dynz.pt2": "dynz_in.npz",
    "host.qvk": "host_in.npz",
    "host.mlir": "host_in.npz",
}
SEEDS_BY_FORMAT = {
    "pt2": ("mlp.pt2", "mlp.pt2", "llama.pt2", "dyn.pt2"),
    "mlir": ("mlp.mlir", "mlp.mlir", "mlp_fused.mlir", "llama.mlir"),
    "qvk": ("mlp.qvk", "llama.qvk", "kv.qvk"),
    "mlpackage": ("mlp.mlpackage",),
    "npz": ("mlp_in.npz", "llama_in.npz"),
}
VOCAB = 256  # examples.LlamaConfig().vocab_size


# ----- seeds ------------------------------------------------------------------------------


def make_seeds(directory: str | os.PathLike[str]) -> Path:
    """Write every seed file into `directory` (each model exported once)."""
    import numpy as np
    import torch

    import qopt
    from qopt import examples
    from qopt.tools.qopt_opt import main as opt_main

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    mlp = examples.export_model("mlp", "w4g32")
    torch.export.save(mlp, str(out / "mlp.pt2"))
    llama = examples.export_model("llama", "8da4w")
    torch.export.save(llama, str(out / "llama.pt2"))
    model, inputs = examples.build_model("mlp")
    dyn = torch.export.export(
        model, inputs, dynamic_shapes=({0: torch.export.Dim("batch", min=1, max=64)},)
    )
    torch.export.save(dyn, str(out / "dyn.pt2"))
    for source, target, extra in (
        ("mlp.pt2", "mlp.mlir", []),
        ("mlp.pt2", "mlp_fused.mlir", ["-p", "fuse-quant"]),
        ("llama.pt2", "llama.mlir", ["-p", "fuse-quant,fold-constants"]),
    ):
        with contextlib.suppress(SystemExit):
            opt_main([str(out / source), "--print-weights", *extra, "-o", str(out / target)])
        assert (out / target).exists(), target
    qopt.compile(mlp, target="vulkan").save(str(out / "mlp.qvk"))
    qopt.compile(llama, target="vulkan").save(str(out / "llama.qvk"))
    qopt.compile(mlp, target="coreml").save(str(out / "mlp.mlpackage"))
    # A stateful program: a KV-cache decoder's `forward` (one token) and `prefill`
    # (4 tokens) sharing weights and cache states.
    kv = examples.build_kv_llama(vocab_size=64, dim=32, n_layers=1, n_heads=4, hidden_dim=64,
                                 max_seq_len=16)  # fmt: skip
    with torch.no_grad():
        decode = torch.export.export(kv, (torch.tensor([[3]]), torch.tensor([5])), strict=False)
        prefill = torch.export.export(kv, (torch.tensor([[1, 2, 3, 4]]), torch.arange(4)),
                                      strict=False)  # fmt: skip
    qopt.compile({"forward": decode, "prefill": prefill}, target="vulkan").save(str(out / "kv.qvk"))
    make_round2_seeds(out)
    np.savez(out / "kv_in.npz", np.array([[3]]), np.array([5]))
    np.savez(out / "mlp_in.npz", *[t.numpy() for t in examples.random_inputs("mlp")])
    np.savez(out / "llama_in.npz", *[t.numpy() for t in examples.random_inputs("llama")])
    return out


HOST_PROGRAM = """func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %a = aten.relu %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %p = aten.prod %a {dims = array<i64: 1>, keepdim = true} : (tensor<2x4xf32>) -> tensor<2x1xf32>
  %e = aten.add %a, %p : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  func.return %e : tensor<2x4xf32>
}
"""
"""A program with an op without a Vulkan kernel (prod): its `.qvk` has a host segment."""


def make_round2_seeds(out: Path) -> None:
    """The seeds of the round-2 surfaces: a program creating tensors of a Dim's size
    (dynz.pt2), a bundle with a host segment (host.qvk)."""
    import numpy as np
    import torch

    from qopt.tools.qopt_opt import main as opt_main

    class CreatesAtRunTime(torch.nn.Module):
        """`arange` and `zeros` of a Dim's run-time size (made at the Dim's bound)."""

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            n = x.shape[0]
            return x + torch.arange(n).float()[:, None] + torch.zeros(n, 8)

    dyn = torch.export.export(CreatesAtRunTime(), (torch.randn(4, 8),),
                              dynamic_shapes=({0: torch.export.Dim("b", min=1, max=64)},))  # fmt: skip
    torch.export.save(dyn, str(out / "dynz.pt2"))
    np.savez(out / "dynz_in.npz", np.random.default_rng(0).standard_normal((4, 8), np.float32))
    (out / "host.mlir").write_text(HOST_PROGRAM)
    np.savez(out / "host_in.npz", np.random.default_rng(1).standard_normal((2, 4), np.float32))
    np.savez(out / "empty_in.npz")
    np.savez(out / "x23_in.npz", np.arange(6, dtype=np.float32).reshape(2, 3))
    with contextlib.suppress(SystemExit):
        opt_main([str(out / "host.mlir"), "-p", "qopt-vulkan", "--host-fallback", "-t",
                  "vkbundle", "-o", str(out / "host.qvk")])  # fmt: skip
    assert (out / "host.qvk").exists()


# ----- zip files, written by hand (duplicate names, lying sizes, zip64) --------------------


@dataclass
class ZEntry:
    name: bytes
    payload: bytes  # the bytes stored (deflated when method == 8)
    method: int = 0
    crc: int = 0
    file_size: int = 0  # declared uncompressed size
    compress_size: int | None = None  # declared stored size (default: len(payload))


def zentry(name: str | bytes, data: bytes, method: int = 0) -> ZEntry:
    raw_name = name.encode() if isinstance(name, str) else name
    payload = data
    if method == 8:
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        payload = c.compress(data) + c.flush()
    return ZEntry(raw_name, payload, method, zlib.crc32(data), len(data))


def build_zip(entries: list[ZEntry]) -> bytes:
    out = bytearray()
    central = bytearray()
    for e in entries:
        offset = len(out)
        csize = len(e.payload) if e.compress_size is None else e.compress_size
        zip64 = max(e.file_size, csize, offset) >= 0xFFFFFFFF
        version = 45 if zip64 else 20
        local_extra = struct.pack("<HHQQ", 1, 16, e.file_size, csize) if zip64 else b""
        fs, cs = (0xFFFFFFFF, 0xFFFFFFFF) if zip64 else (e.file_size, csize)
        out += struct.pack(
            "<IHHHHHIIIHH", 0x04034B50, version, 0, e.method, 0, 0x21, e.crc, cs, fs,
            len(e.name), len(local_extra),
        )  # fmt: skip
        out += e.name + local_extra + e.payload
        central_extra = struct.pack("<HHQQQ", 1, 24, e.file_size, csize, offset) if zip64 else b""
        central += struct.pack(
            "<IHHHHHHIIIHHHHHII", 0x02014B50, version, version, 0, e.method, 0, 0x21, e.crc,
            cs, fs, len(e.name), len(central_extra), 0, 0, 0, 0,
            0xFFFFFFFF if zip64 else offset,
        )  # fmt: skip
        central += e.name + central_extra
    cd_offset = len(out)
    out += central
    n = len(entries)
    if n >= 0xFFFF:
        eocd64 = len(out)
        out += struct.pack(
            "<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, n, n, len(central), cd_offset
        )
        out += struct.pack("<IIQI", 0x07064B50, 0, eocd64, 1)
    out += struct.pack(
        "<IHHHHIIH", 0x06054B50, 0, 0, min(n, 0xFFFF), min(n, 0xFFFF), len(central),
        cd_offset, 0,
    )  # fmt: skip
    return bytes(out)


def zip_members(data_or_path: bytes | str | os.PathLike[str]) -> list[tuple[str, bytes]]:
    source = io.BytesIO(data_or_path) if isinstance(data_or_path, bytes) else data_or_path
    with zipfile.ZipFile(source) as z:
        return [(info.filename, z.read(info)) for info in z.infolist()]


def rezip(members: list[tuple[str, bytes]], method: int = 0) -> bytes:
    return build_zip([zentry(n, d, method) for n, d in members])


_BOMBS: dict[int, tuple[bytes, int]] = {}


def deflated_zeros(size: int) -> tuple[bytes, int]:
    """(raw deflate stream, crc32) of `size` zero bytes, cached per process."""
    if size not in _BOMBS:
        c = zlib.compressobj(9, zlib.DEFLATED, -15)
        chunk = bytes(1 << 20)
        parts, crc, left = [], 0, size
        while left:
            piece = chunk[: min(left, len(chunk))]
            parts.append(c.compress(piece))
            crc = zlib.crc32(piece, crc)
            left -= len(piece)
        parts.append(c.flush())
        _BOMBS[size] = (b"".join(parts), crc)
    return _BOMBS[size]


def bomb_entry(name: str, size: int) -> ZEntry:
    payload, crc = deflated_zeros(size)
    return ZEntry(name.encode(), payload, 8, crc, size)


# ----- generic byte mutations -------------------------------------------------------------

INTERESTING_INTS = (
    0, 1, -1, 2, 3, 7, 255, 256, 65535, 65536, 100000, 2**31 - 1, 2**31, 2**32 - 1, 2**32,
    2**32 + 1, 2**40, 2**53 + 1, 2**62, 2**63 - 1, 2**63, 2**64, -(2**31), -(2**63), 2**100,
    99999999999, 10**30,
)  # fmt: skip


def interesting_int(rng: random.Random) -> int:
    return rng.choice(INTERESTING_INTS)


def mutate_bytes(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """One generic mutation of `data`: truncate, flip, insert, delete, zero or 0xff a
    range, or overwrite a field with an interesting little-endian integer."""
    n = len(data)
    kind = rng.choice(("truncate", "flip", "flip", "insert", "delete", "zero", "ff", "int"))
    buf = bytearray(data)
    if n == 0:
        return b"\x00" * rng.randint(1, 16), "fill-empty"
    at = rng.randrange(n)
    if kind == "truncate":
        return bytes(buf[:at]), f"truncate@{at}/{n}"
    if kind == "flip":
        count = rng.choice((1, 1, 2, 4, 16))
        for _ in range(count):
            buf[rng.randrange(n)] ^= rng.randint(1, 255)
        return bytes(buf), f"flip{count}@{at}"
    if kind == "insert":
        extra = rng.randbytes(rng.choice((1, 4, 64)))
        return bytes(buf[:at] + extra + buf[at:]), f"insert{len(extra)}@{at}"
    if kind == "delete":
        k = rng.choice((1, 4, 64, 512))
        return bytes(buf[:at] + buf[at + k :]), f"delete{k}@{at}"
    if kind in ("zero", "ff"):
        k = rng.choice((1, 4, 16, 256, 4096))
        fill = 0 if kind == "zero" else 0xFF
        buf[at : at + k] = bytes([fill]) * len(buf[at : at + k])
        return bytes(buf), f"{kind}{k}@{at}"
    width = rng.choice((2, 4, 8))
    value = interesting_int(rng) % (1 << (8 * width))
    buf[at : at + width] = value.to_bytes(width, "little")[: len(buf[at : at + width])]
    return bytes(buf), f"int{width}={value}@{at}"


def mutate_zip_fields(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    """An interesting value in one field of a central-directory or end-of-directory
    record (sizes, offsets, counts, name lengths, method)."""
    buf = bytearray(data)
    records = [m.start() for m in re.finditer(b"PK\x01\x02", data)]
    eocd = data.rfind(b"PK\x05\x06")
    fields = [(r + off, width) for r in records for off, width in
              ((10, 2), (16, 4), (20, 4), (24, 4), (28, 2), (30, 2), (42, 4))]  # fmt: skip
    if eocd >= 0:
        fields += [(eocd + off, width) for off, width in ((8, 2), (10, 2), (12, 4), (16, 4))]
    if not fields:
        return mutate_bytes(rng, data)
    at, width = rng.choice(fields)
    value = rng.choice((0, 1, 0xFF, 0xFFFF, 0xFFFFFFFF, 0x7FFFFFFF, len(data), len(data) + 1,
                        rng.randrange(1 << (8 * width))))  # fmt: skip
    value %= 1 << (8 * width)
    buf[at : at + width] = value.to_bytes(width, "little")
    return bytes(buf), f"zip-field@{at}w{width}={value}"


# ----- payloads ---------------------------------------------------------------------------


def shell_touch(marker: str) -> str:
    return f"touch '{marker}'"


def exec_chr(code: str) -> str:
    return "exec(" + "+".join(f"chr({ord(c)})" for c in code) + ")"


def expr_payloads(marker: str) -> list[str]:
    touch = shell_touch(marker)
    return [
        exec_chr(f"import os; os.system({touch!r})"),
        f"__import__('os').system({touch!r})",
        f"eval({exec_chr('1')!r})",
        "(lambda: 1)()",
        "2**2**40",
        "Pow(Integer(2), Pow(Integer(2), Integer(40)))",
        "Integer(2)**Integer(10)**Integer(10)",
        "LShift(Integer(1), Integer(1000000))",
        "Symbol('x').__class__",
        "Symbol('x').__class__.__subclasses__()",
        "Symbol('x', __class__=True)",
        "Add(" * 5000 + "Integer(1)" + ", Integer(1))" * 5000,
        "Add(" * 45 + "Symbol('s77', positive=True, integer=True)" + ", Integer(1))" * 45,
        "(" * 200 + "1" + ")" * 200,
        "-" * 3000 + "1",
        "Integer(" + "9" * 5000 + ")",
        "Integer(" + "9" * 30 + ")",
        "Float('1e99999')",
        "Float('nan')",
        "Rational(1, 0)",
        "FloorDiv(Symbol('s77', integer=True), Integer(0))",
        "Mod(Symbol('s77', integer=True), Integer(0))",
        "Max(" + ", ".join(f"Symbol('s{i}')" for i in range(300)) + ")",
        "Symbol('u99999999999', integer=True)",
        "Symbol('s99999999999', positive=True, integer=True)",
        "Symbol('__import__')",
        "Symbol('" + "a" * 200 + "')",
        "Symbol('s77', positive=True, integer=True)*Symbol('s77', positive=True, integer=True)",
        "Symbol('s77', positive=True, integer=True) - Integer(100)",
        "oo",
        "zoo",
        "nan",
        "int_oo",
        "True",
        "'a string'",
        "b'bytes'",
        "x" * 5000,
        "s77",
        "",
        "Integer(-1)",
        "Integer(0)",
        "Piecewise((Integer(1), True))",
        "Abs(Symbol('s77', integer=True))",
        "Symbol('s77', integer=True) // Symbol('s78', integer=True)",
        "[1, 2, 3]",
        "{'a': 1}",
        "f'{1}'",
        "Symbol.__init__",
        "getattr(Symbol, 'x')",
    ]


NODE_TARGETS = (
    "torch.serialization.os.system",
    "builtins.eval",
    "builtins.exec",
    "os.system",
    "torch.ops.aten.__class__.x",
    "torch.ops.__class__.x",
    "torch.ops.aten.add.__class__",
    "torch.ops.aten.add.Tensor.__globals__",
    "torch.ops.aten.add._overloadpacket",
    "torch.ops.aten.linear.__call__",
    "torch.ops.aten.nonexistent_op.default",
    "torch.ops.no_such_namespace.op.default",
    "torch.ops.aten.empty.memory_format",
    "torch.ops.aten.full.default",
    "torch.ops.aten._assert_async.msg",
    "torch.ops.profiler._record_function_enter.default",
    "torch.ops.higher_order.cond",
    "torch.ops.aten.add",
    "_operator.add",
    "_operator.getitem",
    "torch.sym_max",
    "math.floor",
    "torch.ops.aten.linear.default",
    "torch.ops.aten.relu.default",
    "",
    "torch.ops",
    "torch.ops.aten",
    "torch.ops.aten.relu.default.x.y",
)

STRING_PAYLOADS = (
    "",
    "\x00",
    "../../../../etc/passwd",
    "/etc/passwd",
    "__import__('os').system('true')",
    "torch.ops.aten.__class__.x",
    "a" * 100000,
    "\u202e\u0000\ud7ff",
    "line\nbreak",
    "%s%n",
)


# ----- JSON helpers -----------------------------------------------------------------------


def json_nodes(obj: Any) -> list[tuple[Any, Any, Any]]:
    """Every (container, key, value) under `obj`."""
    out: list[tuple[Any, Any, Any]] = []
    stack = [obj]
    while stack:
        item = stack.pop()
        pairs = item.items() if isinstance(item, dict) else enumerate(item)
        for k, v in pairs:
            out.append((item, k, v))
            if isinstance(v, dict | list):
                stack.append(v)
    return out


def random_json_value(rng: random.Random, marker: str) -> Any:
    return rng.choice((
        None, True, 0, -1, 2**63, 2**64, 10**30, 1.5, float("nan"), float("inf"), -1e308,
        "", "x", shell_touch(marker), [], {}, [[[[]]]], {"a": {"b": None}}, [0] * 10,
        "9" * 5000,
    ))  # fmt: skip


def mutate_json_structure(rng: random.Random, obj: Any, marker: str) -> str:
    """Delete a key, replace a value with another type, or duplicate a list item."""
    nodes = json_nodes(obj)
    if not nodes:
        return "empty"
    container, key, value = rng.choice(nodes)
    kind = rng.choice(("delete", "replace", "replace", "duplicate", "int", "string"))
    if kind == "delete" and isinstance(container, dict):
        del container[key]
        return f"delete {key!r}"
    if kind == "duplicate" and isinstance(container, list):
        container.insert(key, copy.deepcopy(value))
        return f"duplicate [{key}]"
    if kind == "int":
        ints = [(c, k) for c, k, v in nodes if isinstance(v, int) and not isinstance(v, bool)]
        if ints:
            c, k = rng.choice(ints)
            c[k] = interesting_int(rng)
            return f"int {k!r}={c[k]}"
    if kind == "string":
        strs = [(c, k) for c, k, v in nodes if isinstance(v, str)]
        if strs:
            c, k = rng.choice(strs)
            c[k] = rng.choice((*STRING_PAYLOADS, shell_touch(marker)))
            return f"string {k!r}={str(c[k])[:30]!r}"
    container[key] = random_json_value(rng, marker)
    return f"replace {key!r}={str(container[key])[:30]!r}"


# ----- .pt2 mutations ---------------------------------------------------------------------


def _member(members: list[tuple[str, bytes]], suffix: str) -> int:
    for i, (name, _) in enumerate(members):
        if name.endswith(suffix):
            return i
    raise KeyError(suffix)


def _touch_pickle(marker: str, how: str) -> bytes:
    """A torch.save payload whose unpickling runs `touch marker` (full pickle only)."""
    import builtins

    import torch

    class Evil:
        def __reduce__(self) -> Any:
            if how == "eval":
                return (builtins.eval, (f"__import__('os').system({shell_touch(marker)!r})",))
            return (os.system, (shell_touch(marker),))

    buffer = io.BytesIO()
    torch.save(Evil(), buffer)
    return buffer.getvalue()


def _bad_view_pickle(kind: str) -> bytes:
    """A torch.save payload that rebuilds a tensor view larger than (or overlapping)
    its storage, with torch's allowed `_rebuild_tensor_v2`."""
    from collections import OrderedDict

    import torch

    storage = torch.arange(16, dtype=torch.float32).untyped_storage()
    size, stride, offset = {
        "zero-strides": ((1000, 1000), (0, 0), 0),
        "huge": ((1 << 40,), (1,), 0),
        "offset": ((4,), (1,), 1 << 40),
        "overlap": ((8, 8), (1, 1), 0),
        "negative": ((4,), (-1,), 3),
    }[kind]

    class View:
        def __reduce__(self) -> Any:
            return (
                torch._utils._rebuild_tensor_v2,
                (torch.storage.TypedStorage(wrap_storage=storage, dtype=torch.float32,
                                            _internal=True),
                 offset, size, stride, False, OrderedDict()),
            )  # fmt: skip

    buffer = io.BytesIO()
    torch.save(View(), buffer)
    return buffer.getvalue()


def _deep_pickle() -> bytes:
    """A torch.save zip whose data.pkl nests 100k lists (pickle recursion)."""
    body = b"\x80\x02" + b"]" * 0 + (b"(" * 100000) + b"l" * 100000 + b"."
    inner = zip_members(_empty_save())
    i = _member(inner, "data.pkl")
    inner[i] = (inner[i][0], body)
    return rezip(inner)


def _empty_save() -> bytes:
    import torch

    buffer = io.BytesIO()
    torch.save({}, buffer)
    return buffer.getvalue()


def mutate_pt2(rng: random.Random, seed: Path, marker: str) -> tuple[bytes, str, str]:
    """(mutant bytes, kind, detail) of a `.pt2` seed."""
    members = zip_members(seed)
    root = members[0][0].split("/")[0]
    kind = rng.choices(
        ("bytes", "zip-field", "member-bytes", "model-json", "expr-str", "node-target",
         "tensor-meta", "weights-config", "range-constraints", "json-structure", "pickle",
         "zip-names", "zip-bomb", "zip-many", "zip-deflate", "zip-lie", "version"),
        weights=(6, 4, 5, 6, 8, 6, 6, 6, 5, 5, 6, 4, 2, 1, 1, 2, 2),
    )[0]  # fmt: skip
    if kind == "bytes":
        data, detail = mutate_bytes(rng, seed.read_bytes())
        return data, kind, detail
    if kind == "zip-field":
        data, detail = mutate_zip_fields(rng, seed.read_bytes())
        return data, kind, detail
    if kind == "member-bytes":
        i = rng.randrange(len(members))
        name, body = members[i]
        body, detail = mutate_bytes(rng, body)
        members[i] = (name, body)
        return rezip(members), kind, f"{name.split('/', 1)[1]}: {detail}"
    if kind in ("model-json", "expr-str", "node-target", "tensor-meta", "range-constraints",
                "json-structure"):  # fmt: skip
        i = _member(members, "models/model.json")
        program = json.loads(members[i][1])
        detail = _mutate_program(rng, program, kind, marker)
        members[i] = (members[i][0], json.dumps(program).encode())
        return rezip(members), kind, detail
    if kind == "weights-config":
        i = _member(members, "data/weights/model_weights_config.json")
        config = json.loads(members[i][1])
        detail = _mutate_weights_config(rng, config, marker)
        members[i] = (members[i][0], json.dumps(config).encode())
        return rezip(members), kind, detail
    if kind == "pickle":
        pickled = [i for i, (n, _) in enumerate(members)
                   if "/data/weights/weight_" in n or n.endswith("sample_inputs/model.pt")]  # fmt: skip
        i = rng.choice(pickled)
        how = rng.choice(("system", "eval", "zero-strides", "huge", "offset", "overlap",
                          "negative", "deep", "pkl-bytes"))  # fmt: skip
        if how in ("system", "eval"):
            body = _touch_pickle(marker, how)
        elif how == "deep":
            body = _deep_pickle()
        elif how == "pkl-bytes":
            try:
                inner = zip_members(members[i][1])
                j = _member(inner, "data.pkl")
                mutated, _ = mutate_bytes(rng, inner[j][1])
                inner[j] = (inner[j][0], mutated)
                body = rezip(inner)
            except (zipfile.BadZipFile, KeyError):  # a raw weight: not a torch.save zip
                body, _ = mutate_bytes(rng, members[i][1])
        else:
            body = _bad_view_pickle(how)
        if how not in ("pkl-bytes",):
            _force_pickle(members, members[i][0])
        members[i] = (members[i][0], body)
        return rezip(members), kind, f"{members[i][0].split('/', 1)[1]}: {how}"
    if kind == "zip-names":
        how = rng.choice(("dotdot", "absolute", "backslash", "other-root", "dup", "dup-model",
                          "nul", "empty", "dot", "drive", "drop"))  # fmt: skip
        entries = [zentry(n, d) for n, d in members]
        i = rng.randrange(len(entries))
        name = entries[i].name.decode()
        new = {
            "dotdot": f"{root}/../../{name.rsplit('/', 1)[-1]}",
            "absolute": "/tmp/" + name,
            "backslash": name.replace("/", "\\"),
            "other-root": "other/" + name.split("/", 1)[1],
            "nul": name + "\x00.txt",
            "empty": "",
            "dot": f"{root}/./{name.split('/', 1)[1]}",
            "drive": "C:" + name,
        }.get(how)
        if how == "dup":
            entries.insert(i, zentry(name, b"{}"))
        elif how == "dup-model":
            j = _member(members, "models/model.json")
            entries.append(zentry(members[j][0], b'{"graph_module": 3}'))
        elif how == "drop":
            del entries[i]
        elif new is not None:
            entries[i].name = new.encode()
        return build_zip(entries), kind, f"{how} {name.split('/', 1)[-1]}"
    if kind == "zip-bomb":
        entries = [zentry(n, d) for n, d in members]
        how = rng.choice(("extra", "model-json", "weight", "within-slack"))
        if how == "extra":
            entries.append(bomb_entry(f"{root}/extra.bin", 256 << 20))
        elif how == "within-slack":  # allowed by the limits: loads or is refused later
            i = _member(members, "models/model.json")
            entries[i] = bomb_entry(members[i][0], 32 << 20)
        else:
            i = _member(members, "models/model.json" if how == "model-json" else "weight_0")
            entries[i] = bomb_entry(members[i][0], 256 << 20)
        return build_zip(entries), kind, how
    if kind == "zip-many":
        count = rng.choice(
            (1000, 5000, 20000, 1000, 5000, 20000, 100000, 250000 + rng.randrange(2))
        )
        entries = [zentry(n, d) for n, d in members]
        entries += [zentry(f"{root}/extra/{k}", b"") for k in range(count)]
        return build_zip(entries), kind, f"{count} extra members"
    if kind == "zip-deflate":
        return rezip(members, method=8), kind, "all members deflated"
    if kind == "zip-lie":
        entries = [zentry(n, d) for n, d in members]
        e = rng.choice(entries)
        how = rng.choice(("file-size", "compress-size", "crc"))
        if how == "file-size":
            e.file_size = rng.choice((0, 1, 1 << 33, 1 << 40, (1 << 64) - 1, e.file_size + 1))
        elif how == "compress-size":
            e.compress_size = rng.choice((0, 1, len(e.payload) + 1, 1 << 40))
        else:
            e.crc ^= 1
        return build_zip(entries), kind, f"{how} of {e.name.decode().split('/', 1)[-1]}"
    # version / format members
    name = rng.choice(("archive_version", "archive_format", "byteorder", ".data/version"))
    i = _member(members, name)
    value = rng.choice((b"0", b"999", b"", b"1" * 100000, b"big", b"\xff\xfe", b"pt2\n",
                        b"little"))  # fmt: skip
    members[i] = (members[i][0], value)
    return rezip(members), "version", f"{name}={value[:10]!r}"


def _force_pickle(members: list[tuple[str, bytes]], name: str) -> None:
    """Mark the weight stored at `name` as pickled in the weights config."""
    base = name.rsplit("/", 1)[-1]
    try:
        i = _member(members, "data/weights/model_weights_config.json")
    except KeyError:
        return
    config = json.loads(members[i][1])
    for meta in config.get("config", {}).values():
        if meta.get("path_name") == base:
            meta["use_pickle"] = True
    members[i] = (members[i][0], json.dumps(config).encode())


def _mutate_program(rng: random.Random, program: Any, kind: str, marker: str) -> str:
    nodes = json_nodes(program)
    if kind == "expr-str":
        exprs = [(c, k) for c, k, v in nodes if k == "expr_str"]
        payload = rng.choice(expr_payloads(marker))
        if exprs and rng.random() < 0.7:
            c, k = rng.choice(exprs)
            c[k] = payload
            return f"expr_str={payload[:60]!r}"
        # turn a static size into a symbolic one
        sizes = [(c, k) for c, k, v in nodes if isinstance(v, dict) and "as_int" in v
                 and isinstance(c, list)]  # fmt: skip
        if sizes:
            c, k = rng.choice(sizes)
            c[k] = {"as_expr": {"expr_str": payload, "hint": {"as_int": 4}}}
            return f"as_int->as_expr={payload[:60]!r}"
        return "no sizes"
    if kind == "node-target":
        graph_nodes = [v for _, _, v in nodes if isinstance(v, dict) and "target" in v
                       and "inputs" in v]  # fmt: skip
        node = rng.choice(graph_nodes)
        node["target"] = rng.choice(NODE_TARGETS)
        if rng.random() < 0.3:
            node["inputs"] = [{"name": "x", "arg": {"as_string": shell_touch(marker)},
                               "kind": 1}]  # fmt: skip
        return f"target={node['target']!r}"
    if kind == "tensor-meta":
        metas = [v for _, _, v in nodes if isinstance(v, dict) and "sizes" in v
                 and "strides" in v]  # fmt: skip
        meta = rng.choice(metas)
        return "tensor_values " + _mutate_meta(rng, meta)
    if kind == "range-constraints":
        ranges = program.setdefault("range_constraints", {})
        how = rng.choice(("bounds", "key", "type"))
        if how == "bounds" or not ranges:
            name = rng.choice([*ranges, "s77"]) if ranges else "s77"
            bounds = ranges.setdefault(name, {"min_val": 1, "max_val": 64})
            key = rng.choice(("min_val", "max_val"))
            bounds[key] = rng.choice((2**64, -(2**70), 10**100, 2**63, -1, 0, None, "1", 1.5,
                                      int("9" * 400)))  # fmt: skip
            return f"range {name}.{key}={str(bounds[key])[:20]}"
        if how == "key":
            new = rng.choice(("u99999999999", "s99999999999", "__class__", "a b", "1x", "u1",
                              "x" * 200, ""))  # fmt: skip
            ranges[new] = {"min_val": 0, "max_val": 10}
            return f"range key {new[:20]!r}"
        name = next(iter(ranges))
        ranges[name] = rng.choice(([], 3, "x", None))
        return f"range {name}={ranges[name]!r}"
    if kind == "json-structure":
        return mutate_json_structure(rng, program, marker)
    # model-json: numbers and strings
    if rng.random() < 0.6:
        ints = [(c, k) for c, k, v in nodes if isinstance(v, int) and not isinstance(v, bool)]
        c, k = rng.choice(ints)
        c[k] = interesting_int(rng)
        return f"int {k!r}={c[k]}"
    strs = [(c, k) for c, k, v in nodes if isinstance(v, str)]
    c, k = rng.choice(strs)
    c[k] = rng.choice((*STRING_PAYLOADS, shell_touch(marker), *expr_payloads(marker)[:3]))
    return f"string {k!r}={str(c[k])[:40]!r}"


def _mutate_meta(rng: random.Random, meta: dict[str, Any]) -> str:
    field = rng.choice(("sizes", "strides", "storage_offset", "dtype", "sizes", "strides"))
    if field == "dtype":
        meta["dtype"] = rng.choice((0, 1, 2, 5, 7, 13, 23, 99, -1, 2**40))
        return f"dtype={meta['dtype']}"
    if field == "storage_offset":
        meta["storage_offset"] = {"as_int": rng.choice((1, 2**31, 2**62, -1, 2**64))}
        return f"storage_offset={meta['storage_offset']['as_int']}"
    dims = meta[field]
    how = rng.choice(("value", "zero-all", "append", "pop"))
    if how == "zero-all" and field == "strides":
        for d in dims:
            d["as_int"] = 0
        return "strides all 0"
    if how == "append":
        dims.append({"as_int": rng.choice((1, 2, 2**31))})
        return f"{field} append"
    if how == "pop" and dims:
        dims.pop()
        return f"{field} pop"
    if not dims:
        dims.append({"as_int": 1})
    d = rng.choice(dims)
    d["as_int"] = rng.choice((0, -1, -64, 2**31, 2**32, 2**40, 2**62, 2**63, 2**64, 10**30))
    return f"{field} dim={d['as_int']}"


def _mutate_weights_config(rng: random.Random, config: Any, marker: str) -> str:
    entries = list(config.get("config", {}).items())
    fqn, meta = rng.choice(entries)
    how = rng.choice(("meta", "meta", "meta", "path", "use_pickle", "structure"))
    if how == "meta" and isinstance(meta.get("tensor_meta"), dict):
        return f"{fqn}: " + _mutate_meta(rng, meta["tensor_meta"])
    if how == "path":
        meta["path_name"] = rng.choice(("../../../etc/passwd", "/etc/passwd", "weight_99",
                                        "custom_obj_0", "", "../models/model.json",
                                        "weight_0/../weight_1", "."))  # fmt: skip
        return f"{fqn}: path_name={meta['path_name']!r}"
    if how == "use_pickle":
        meta["use_pickle"] = not meta.get("use_pickle")
        return f"{fqn}: use_pickle={meta['use_pickle']}"
    return f"{fqn}: " + mutate_json_structure(rng, config, marker)


# ----- .qvk mutations ---------------------------------------------------------------------

_QVK_HEADER = struct.Struct("<4sII")


def qvk_parse(data: bytes) -> tuple[dict[str, Any], bytes, int]:
    """(manifest, blobs, header version) of a `.qvk` file."""
    _, version, size = _QVK_HEADER.unpack_from(data)
    start = _QVK_HEADER.size + size
    return json.loads(data[_QVK_HEADER.size : start]), data[start:], version


def qvk_build(manifest: dict[str, Any], blobs: bytes, version: int, rehash: bool = True) -> bytes:
    """The bundle bytes; with `rehash`, every blob record's SHA-256 recomputed from its
    (offset, size), so that only the semantic checks can refuse the mutant."""
    if rehash:
        records = [k.get("spirv") for k in manifest.get("kernels", []) if isinstance(k, dict)]
        records += [c for c in manifest.get("constants", []) if isinstance(c, dict)]
        for r in records:
            if not isinstance(r, dict):
                continue
            lo, n = r.get("offset"), r.get("size")
            if isinstance(lo, int) and isinstance(n, int) and 0 <= lo and 0 <= n:
                if lo + n <= len(blobs):
                    r["sha256"] = hashlib.sha256(blobs[lo : lo + n]).hexdigest()
    text = json.dumps(manifest).encode()
    return _QVK_HEADER.pack(b"QVKB", version, len(text)) + text + blobs


def _kernel_table() -> dict[str, Any]:
    from qopt.backends.vulkan.registry import kernels

    return kernels()


def mutate_qvk(rng: random.Random, seed: Path, marker: str) -> tuple[bytes, str, str]:
    data = seed.read_bytes()
    kind = rng.choices(
        ("bytes", "push", "groups", "buffer-id", "buffer-alias", "buffer-record", "slots",
         "tensor", "kernel", "spec", "spirv-swap", "spirv-edit", "constant-dtype",
         "constant-data", "blob-record", "steps", "manifest", "header", "multi", "states",
         "methods"),
        weights=(5, 8, 7, 6, 7, 6, 4, 5, 4, 7, 3, 2, 3, 4, 4, 4, 3, 2, 8, 5, 5),
    )[0]  # fmt: skip
    if kind == "bytes":
        out, detail = mutate_bytes(rng, data)
        return out, kind, detail
    if kind == "header":
        buf = bytearray(data)
        how = rng.choice(("version", "length+", "length-", "magic", "length-huge"))
        _, _, size = _QVK_HEADER.unpack_from(data)
        if how == "version":
            struct.pack_into("<I", buf, 4, rng.choice((0, 1, 99, 2**32 - 1)))
        elif how == "magic":
            buf[:4] = b"QVKC"
        else:
            new = {"length+": size + 8, "length-": size - 8, "length-huge": 2**32 - 1}[how]
            struct.pack_into("<I", buf, 8, new)
        return bytes(buf), kind, how
    manifest, blobs, version = qvk_parse(data)
    rounds = rng.randint(2, 4) if kind == "multi" else 1
    details = []
    for _ in range(rounds):
        k = rng.choice(("push", "groups", "buffer-id", "buffer-alias", "buffer-record", "slots",
                        "tensor", "spec", "steps", "constant-data", "states",
                        "methods")) if kind == "multi" else kind  # fmt: skip
        blobs, detail = _mutate_manifest(rng, manifest, blobs, k, marker)
        details.append(f"{k}: {detail}" if kind == "multi" else detail)
    return qvk_build(manifest, blobs, version), kind, "; ".join(details)


def _mutate_manifest(
    rng: random.Random, m: dict[str, Any], blobs: bytes, kind: str, marker: str
) -> tuple[bytes, str]:
    steps, buffers = m["steps"], m["buffers"]
    if not steps and kind in ("push", "groups", "buffer-id", "buffer-alias", "steps"):
        return blobs, f"{kind}: no steps left"
    if kind == "push":
        step = rng.choice(steps)
        keys = list(step["push"])
        how = rng.choice(("value", "value", "value", "delete", "add"))
        if how == "delete" and keys:
            key = rng.choice(keys)
            del step["push"][key]
            return blobs, f"delete push {key}"
        if how == "add":
            step["push"]["bogus"] = 1
            return blobs, "push bogus=1"
        key = rng.choice(keys)
        old = step["push"][key]
        step["push"][key] = rng.choice((0, -1, 1, 2, old + 1 if isinstance(old, int) else 1.0,
                                        old * 2, 2**31, 2**32, 2**63, 1e30, float("nan"),
                                        float("inf"), "1", None, [1], 0.5, 65536))  # fmt: skip
        return blobs, f"push {key}: {old} -> {step['push'][key]}"
    if kind == "groups":
        step = rng.choice(steps)
        how = rng.choice(("value", "value", "value", "length"))
        if how == "length":
            step["groups"] = rng.choice(([], [1], [1, 1], [1, 1, 1, 1], "1", None))
            return blobs, f"groups={step['groups']!r}"
        j = rng.randrange(len(step["groups"]))
        step["groups"][j] = rng.choice((0, 0, 65535, 65536, 2**31, 2**32, -1, 1.5, "1", None,
                                        step["groups"][j] * 2, step["groups"][j] + 1))  # fmt: skip
        return blobs, f"groups[{j}]={step['groups'][j]!r}"
    if kind == "buffer-id":
        step = rng.choice(steps)
        j = rng.randrange(len(step["buffers"]))
        step["buffers"][j] = rng.choice((-1, len(buffers), len(buffers) + 1, 2**40, "0", None,
                                         1.0))  # fmt: skip
        return blobs, f"buffers[{j}]={step['buffers'][j]!r}"
    if kind == "buffer-alias":
        i = rng.randrange(len(steps))
        step = steps[i]
        j = rng.randrange(len(step["buffers"]))
        old = step["buffers"][j]
        step["buffers"][j] = rng.randrange(len(buffers))
        if rng.random() < 0.3:  # and drop the list's last id or add one
            step["buffers"].append(rng.randrange(len(buffers))) if rng.random() < 0.5 else (
                step["buffers"].pop()
            )
        return (
            blobs,
            f"step {i} buffers[{j}]: {old} -> {step['buffers'][j] if j < len(step['buffers']) else '?'}",
        )
    if kind == "buffer-record":
        i = rng.randrange(len(buffers))
        record = buffers[i]
        key = rng.choice(("nbytes", "nbytes", "kind", "slot", "constant", "index", "delete"))
        if key == "delete":
            k = rng.choice(list(record))
            del record[k]
            return blobs, f"buffer {i} delete {k}"
        values = {
            "nbytes": (
                0,
                4,
                3,
                -4,
                2**31,
                2**40,
                2**62,
                record.get("nbytes", 4) * 2,
                record.get("nbytes", 8) // 2,
                "4",
                None,
            ),
            "kind": ("input", "constant", "slot", "alloc", "output", "", None, 1),
            "slot": (-1, 0, 1, 2, 99, 2**40, "0", None),
            "constant": (-1, 0, 1, 99, 2**40, None),
            "index": (-1, 0, 1, 2, 99, None),
        }[key]
        record[key] = rng.choice(values)
        return blobs, f"buffer {i} {key}={record[key]!r}"
    if kind == "slots":
        slots = m["slots"]
        how = rng.choice(("value", "value", "append", "clear"))
        if how == "append":
            slots.append(rng.choice((2**36, 60 << 30, 64 << 30, 2**40)))
            return blobs, f"slots append {slots[-1]}"
        if how == "clear" or not slots:
            m["slots"] = []
            return blobs, "slots cleared"
        j = rng.randrange(len(slots))
        slots[j] = rng.choice((0, -1, 3, 2**33, 60 << 30, 2**40, 2**64, "4", None))
        return blobs, f"slots[{j}]={slots[j]!r}"
    if kind == "tensor":
        side = rng.choice(("inputs", "outputs"))
        t = rng.choice(m[side])
        key = rng.choice(("shape", "shape", "dtype", "buffer", "index", "extra"))
        if key == "shape":
            how = rng.choice(("dim", "append", "pop", "type"))
            if how == "dim" and t["shape"]:
                j = rng.randrange(len(t["shape"]))
                t["shape"][j] = rng.choice((0, -1, 2**31, 2**40, 2**63, t["shape"][j] * 2,
                                            t["shape"][j] + 1, 1.5))  # fmt: skip
            elif how == "append":
                t["shape"] += rng.choice(([1], [2], [0], [1] * 20))
            elif how == "pop" and t["shape"]:
                t["shape"].pop()
            else:
                t["shape"] = rng.choice((None, "4", {}, [[4]]))
            return blobs, f"{side} shape={t['shape']!r}"
        if key == "extra":
            t[rng.choice(("bogus", "__class__"))] = 1
            return blobs, f"{side} extra key"
        t[key] = rng.choice({
            "dtype": ("float64", "int64", "bool", "object", "complex64", "<f4", "V8", "", None),
            "buffer": (-1, 0, 1, len(buffers) - 1, len(buffers), 2**40, None),
            "index": (-1, 0, 1, 5, None),
        }[key])  # fmt: skip
        return blobs, f"{side} {key}={t[key]!r}"
    if kind == "kernel":
        k = rng.choice(m["kernels"])
        how = rng.choice(("name", "glsl", "both"))
        table = _kernel_table()
        if how in ("name", "both"):
            k["kernel"] = rng.choice((*table, "bogus", "", "../unary"))
        if how in ("glsl", "both"):
            k["glsl"] = rng.choice(
                (*(s.glsl for s in table.values()), "../../etc/passwd", "x.glsl")
            )
        return blobs, f"kernel={k['kernel']!r} glsl={k['glsl']!r}"
    if kind == "spec":
        k = rng.choice(m["kernels"])
        spec = k["spec"]
        how = rng.choice(("value", "value", "value", "delete", "add"))
        if how == "delete" and spec:
            key = rng.choice(list(spec))
            del spec[key]
            return blobs, f"{k['kernel']} spec delete {key}"
        if how == "add":
            key = rng.choice(("WG", "MT", "NPW", "BOGUS", "WBITS", "GROUP_SIZE", "FBITS"))
            spec[key] = rng.choice((1, 4, 1000))
            return blobs, f"{k['kernel']} spec add {key}={spec[key]}"
        if not spec:
            return blobs, "no spec"
        key = rng.choice(list(spec))
        spec[key] = rng.choice((0, -1, 1, 2, 3, 7, 8, 9, 16, 1000, 2**20, 2**31, 2**32, 1.5,
                                "1", None, spec[key] * 2, spec[key] + 1))  # fmt: skip
        if key == "WG" and rng.random() < 0.5:
            spec[key] = 2**20
        if key == "MT" and rng.random() < 0.5:
            spec[key] = 1000
        return blobs, f"{k['kernel']} spec {key}={spec[key]!r}"
    if kind == "spirv-swap":
        kernels = m["kernels"]
        distinct = {json.dumps(k["spirv"], sort_keys=True) for k in kernels}
        if len(distinct) > 1:
            a, b = rng.sample(range(len(kernels)), 2)
            while kernels[a]["spirv"] == kernels[b]["spirv"]:
                a, b = rng.sample(range(len(kernels)), 2)
            kernels[a]["spirv"] = dict(kernels[b]["spirv"])
            return blobs, f"kernel {a} ({kernels[a]['kernel']}) gets kernel {b}'s SPIR-V"
        # one distinct blob: point it at a constant's bytes (hash recomputed)
        kernels[0]["spirv"] = {k: v for k, v in m["constants"][0].items() if k != "dtype"}
        return blobs, "kernel 0's SPIR-V is constant 0's bytes"
    if kind == "spirv-edit":
        k = rng.choice(m["kernels"])
        lo, n = k["spirv"]["offset"], k["spirv"]["size"]
        body, detail = mutate_bytes(rng, blobs[lo : lo + n])
        how = rng.choice(("in-place", "append"))
        if how == "append" or len(body) != n:
            k["spirv"] = {"offset": len(blobs), "size": len(body), "sha256": ""}
            blobs = blobs + body
        else:
            blobs = blobs[:lo] + body + blobs[lo + n :]
        return blobs, f"{k['kernel']} SPIR-V {detail}"
    if kind == "constant-dtype":
        c = rng.choice(m["constants"])
        c["dtype"] = rng.choice(("float64", "int8", "object", "<f4", "float16", None, 1,
                                 "uint32", "float32", "int32"))  # fmt: skip
        return blobs, f"constant dtype={c['dtype']!r}"
    if kind == "constant-data":
        j = rng.randrange(len(m["constants"]))
        c = m["constants"][j]
        lo, n = c["offset"], c["size"]
        how = rng.choice(("random", "ff", "huge-float", "nan"))
        if how == "random":
            body = rng.randbytes(n)
        elif how == "ff":
            body = b"\xff" * n
        elif how == "huge-float":
            body = struct.pack("<f", 3e38) * (n // 4)
        else:
            body = struct.pack("<I", 0x7FC00001) * (n // 4)
        blobs = blobs[:lo] + body + blobs[lo + n :]
        return blobs, f"constant {j} data {how}"
    if kind == "blob-record":
        records = [("kernel", k["spirv"]) for k in m["kernels"]] + [
            ("constant", c) for c in m["constants"]
        ]
        what, r = rng.choice(records)
        key = rng.choice(("offset", "size"))
        r[key] = rng.choice((0, 1, 4, -1, r[key] + 4, r[key] - 4, r[key] * 2, 2**40, 2**64,
                             len(blobs), len(blobs) - 4, None))  # fmt: skip
        return blobs, f"{what} blob {key}={r[key]!r}"
    if kind == "states":
        states = m["states"]
        if not states:  # a stateless program: declare one over some buffer
            states.append({"name": "s", "buffer": rng.randrange(len(buffers)), "shape": [1],
                           "dtype": "float32", "initial": None})  # fmt: skip
            return blobs, "states: one added"
        e = rng.choice(states)
        key = rng.choice(("buffer", "shape", "dtype", "initial", "name", "duplicate", "delete"))
        if key == "duplicate":
            states.append(copy.deepcopy(e))
            return blobs, f"state {e['name']} twice"
        if key == "delete":
            states.remove(e)
            return blobs, f"state {e['name']} deleted"
        shape = e["shape"] if isinstance(e["shape"], list) and e["shape"] else [1]
        doubled = [shape[0] * 2, *shape[1:]]
        e[key] = rng.choice({
            "buffer": (-1, 0, len(buffers) - 1, len(buffers), 2**40, None, "0",
                       rng.randrange(len(buffers))),
            "shape": ([], [0], [2**31, 2**31], [1] * 20, None, "4", doubled),
            "dtype": ("float64", "int64", "bool", "object", "", None, "int8"),
            "initial": (-1, len(m["constants"]), 2**40, "0", 1.5, 0),
            "name": ("", None, "../x", states[0]["name"], "a" * 5000, 7),
        }[key])  # fmt: skip
        return blobs, f"state {key}={e[key]!r}"[:200]
    if kind == "methods":
        methods = m["methods"]
        e = rng.choice(methods)
        key = rng.choice(("steps", "inputs", "outputs", "name", "duplicate", "delete", "extra"))
        if key == "duplicate":
            methods.append(copy.deepcopy(e))
            return blobs, f"method {e['name']} twice"
        if key == "delete":
            methods.remove(e)
            return blobs, f"method {e['name']} deleted"
        if key == "extra":
            e["bogus"] = 1
            return blobs, "method extra key"
        if key == "name":
            e["name"] = rng.choice(("", None, 7, "forward", "prefill", "x__3", "forward__1"))
            return blobs, f"method name={e['name']!r}"
        n = len({"steps": steps, "inputs": m["inputs"], "outputs": m["outputs"]}[key])
        e[key] = rng.choice(([0, n + 1], [n, 0], [-1, n], [0], [0, 0], None, [0, 2**40],
                             [0.5, n], [1, n], [0, max(n - 1, 0)]))  # fmt: skip
        return blobs, f"method {key}={e[key]!r}"
    if kind == "steps":
        how = rng.choice(("delete", "duplicate", "reorder", "kernel", "clear", "many"))
        if how == "delete":
            del steps[rng.randrange(len(steps))]
        elif how == "duplicate":
            i = rng.randrange(len(steps))
            steps.insert(i, copy.deepcopy(steps[i]))
        elif how == "reorder":
            rng.shuffle(steps)
        elif how == "kernel":
            rng.choice(steps)["kernel"] = rng.choice((-1, len(m["kernels"]), 2**40, "0", None,
                                                      rng.randrange(len(m["kernels"]))))  # fmt: skip
        elif how == "many":
            m["steps"] = steps * rng.choice((100, 1000))
        else:
            m["steps"] = []
        return blobs, f"steps {how}"
    # manifest structure
    return blobs, mutate_json_structure(rng, m, marker)


# ----- .mlpackage mutations ---------------------------------------------------------------

_SPEC = Path("Data") / "com.apple.CoreML" / "model.mlmodel"
_WEIGHTS = Path("Data") / "com.apple.CoreML" / "weights" / "weight.bin"


def _spec(pkg: Path) -> Any:
    from coremltools.proto import Model_pb2

    spec = Model_pb2.Model()
    spec.ParseFromString((pkg / _SPEC).read_bytes())
    return spec


def _main_block(spec: Any) -> Any:
    function = spec.mlProgram.functions["main"]
    return function.block_specializations[function.opset]


def _tensor_types(spec: Any) -> list[Any]:
    out = []
    function = spec.mlProgram.functions["main"]
    for arg in function.inputs:
        out.append(arg.type.tensorType)
    for op in _main_block(spec).operations:
        for o in op.outputs:
            if o.type.WhichOneof("type") == "tensorType":
                out.append(o.type.tensorType)
        for a in op.attributes.values():
            if a.type.WhichOneof("type") == "tensorType":
                out.append(a.type.tensorType)
    return out


def _blob_values(spec: Any) -> list[Any]:
    out = []
    for op in _main_block(spec).operations:
        for value in op.attributes.values():
            if value.WhichOneof("value") == "blobFileValue":
                out.append(value)
    return out


def mutate_mlpackage(rng: random.Random, seed: Path, target: Path, marker: str) -> tuple[str, str]:
    """Copy `seed` to `target` and mutate the copy; (kind, detail)."""
    shutil.copytree(seed, target, symlinks=True)
    kind = rng.choices(
        ("bytes", "spec-bytes", "dims", "blob", "op-type", "names", "ops", "immediate",
         "datatype", "function", "weights-record", "manifest", "symlink", "sparse"),
        weights=(5, 4, 7, 7, 6, 6, 5, 4, 4, 3, 8, 6, 4, 1),
    )[0]  # fmt: skip
    if kind == "bytes":
        which = rng.choice((_SPEC, _WEIGHTS, Path("Manifest.json")))
        data, detail = mutate_bytes(rng, (target / which).read_bytes())
        (target / which).write_bytes(data)
        return kind, f"{which.name}: {detail}"
    if kind == "weights-record":
        path = target / _WEIGHTS
        raw = bytearray(path.read_bytes())
        count = struct.unpack_from("<I", raw, 0)[0]
        how = rng.choice(("header-count", "header-version", "record", "record", "record",
                          "truncate", "extend"))  # fmt: skip
        if how == "header-count":
            struct.pack_into("<I", raw, 0, rng.choice((0, count + 1, 2**32 - 1, 1000)))
        elif how == "header-version":
            struct.pack_into("<I", raw, 4, rng.choice((0, 1, 3, 2**32 - 1)))
        elif how == "truncate":
            del raw[rng.randrange(len(raw)) :]
        elif how == "extend":
            raw += rng.randbytes(rng.choice((1, 64, 4096)))
        else:
            offsets = [m.start() for m in re.finditer(struct.pack("<I", 0xDEADBEEF), raw)]
            at = rng.choice(offsets)
            fld, fmt = rng.choice(((0, "<I"), (4, "<I"), (8, "<Q"), (16, "<Q"), (24, "<Q")))
            value = rng.choice((0, 1, 63, 64, 65, len(raw), len(raw) - 1, 2**31, 2**32, 2**40,
                                2**63, 2**64 - 1, 8, 9, 14, 15, 99))  # fmt: skip
            value %= 1 << (8 * struct.calcsize(fmt))
            struct.pack_into(fmt, raw, at + fld, value)
            how = f"record@{at}+{fld}={value}"
        path.write_bytes(bytes(raw))
        return kind, how
    if kind == "manifest":
        path = target / "Manifest.json"
        manifest = json.loads(path.read_text())
        how = rng.choice(("path", "path", "root", "version", "structure", "huge"))
        if how == "huge":
            path.write_text(" " * (2 << 20) + json.dumps(manifest))
            return kind, "2 MiB manifest"
        if how == "path":
            item = manifest["itemInfoEntries"][manifest["rootModelIdentifier"]]
            item["path"] = rng.choice((
                "../../outside.mlmodel", "/etc/passwd", "com.apple.CoreML/../../Manifest.json",
                "com.apple.CoreML/weights", "", "com.apple.CoreML/weights/weight.bin",
                "com.apple.CoreML/model.mlmodel\x00", "/proc/self/mem", "C:\\x",
                "com.apple.CoreML/./model.mlmodel", "../Manifest.json",
            ))  # fmt: skip
            detail = f"root path={item['path']!r}"
        elif how == "root":
            manifest["rootModelIdentifier"] = rng.choice(("nope", "", 1, None, [], "__proto__"))
            detail = f"root id={manifest['rootModelIdentifier']!r}"
        elif how == "version":
            manifest["fileFormatVersion"] = rng.choice(("9.9.9", "", 1, None, "1.0.0" * 1000))
            detail = f"version={str(manifest['fileFormatVersion'])[:20]!r}"
        else:
            detail = mutate_json_structure(rng, manifest, marker)
        path.write_text(json.dumps(manifest))
        return kind, detail
    if kind == "symlink":
        which = rng.choice((_SPEC, _WEIGHTS, Path("Manifest.json"), _WEIGHTS.parent))
        dest = rng.choice(("/etc/passwd", "/dev/zero", "/dev/urandom", "/proc/self/mem", "/",
                           "../../../../etc/hostname", "/nonexistent", str(seed / which)))  # fmt: skip
        link = target / which
        if link.is_dir() and not link.is_symlink():
            shutil.rmtree(link)
        else:
            link.unlink()
        link.symlink_to(dest)
        return kind, f"{which} -> {dest}"
    if kind == "sparse":
        path = target / _WEIGHTS
        size = rng.choice((1 << 37, 1 << 39))
        os.truncate(path, size)
        return kind, f"weight.bin sparse {size}"
    spec = _spec(target)
    detail = _mutate_spec(rng, spec, kind, marker)
    data = spec.SerializeToString()
    if kind == "spec-bytes":
        data, detail = mutate_bytes(rng, data)
    (target / _SPEC).write_bytes(data)
    return kind, detail


def _mutate_spec(rng: random.Random, spec: Any, kind: str, marker: str) -> str:
    block = _main_block(spec)
    ops = block.operations
    if kind == "spec-bytes":
        return ""
    if kind == "dims":
        t = rng.choice(_tensor_types(spec))
        how = rng.choice(("size", "size", "append", "clear", "unknown", "rank"))
        if how == "size" and len(t.dimensions):
            d = rng.choice(t.dimensions)
            d.constant.size = rng.choice((0, 1, 2, 2**31, 2**40, 2**63 - 1, 1 << 62))
            return f"dim={d.constant.size}"
        if how == "append":
            for _ in range(rng.choice((1, 20))):
                t.dimensions.add().constant.size = rng.choice((1, 2, 2**31))
            return "dims appended"
        if how == "clear":
            del t.dimensions[:]
            return "dims cleared"
        if how == "unknown" and len(t.dimensions):
            t.dimensions[0].unknown.variadic = False
            return "unknown dim"
        t.rank = rng.choice((0, 1, 5, 99, -1 % 2**63))
        return f"rank={t.rank}"
    if kind == "blob":
        values = _blob_values(spec)
        v = rng.choice(values)
        if rng.random() < 0.5:
            v.blobFileValue.offset = rng.choice((0, 1, 63, 64, 65, 127, 128, 2**31, 2**40,
                                                 2**63, 2**64 - 1, v.blobFileValue.offset + 64))  # fmt: skip
            return f"blob offset={v.blobFileValue.offset}"
        v.blobFileValue.fileName = rng.choice((
            "@model_path/../../outside/weight.bin", "/etc/passwd", "@model_path/weights/../../../Manifest.json",
            "@model_path/weights/weight.bin\x00x", "", "@model_path/", "@model_path/weights",
            "@model_path/model.mlmodel", "weights/weight.bin", "@model_path/../../../../../dev/zero",
            "@model_path/weights/nonexistent.bin", "@model_path/" + "a/" * 2000 + "x",
        ))  # fmt: skip
        return f"blob fileName={v.blobFileValue.fileName[:50]!r}"
    if kind == "op-type":
        op = rng.choice(ops)
        op.type = rng.choice(("const", "linear", "relu", "gelu", "matmul", "reshape", "gather",
                              "softmax", "add", "cast", "transpose", "conv", "concat",
                              "constexpr_lut_to_dense", "bogus", "", "exec", "__import__",
                              "slice_by_index", "layer_norm"))  # fmt: skip
        return f"op type={op.type!r}"
    if kind == "names":
        op = rng.choice(ops)
        names = [o.name for o2 in ops for o in o2.outputs]
        how = rng.choice(("input", "input", "output", "function-output"))
        new = rng.choice((*names, "undefined", "", "\n", "x" * 10000, shell_touch(marker)))
        if how == "input" and op.inputs:
            arg = rng.choice(list(op.inputs.values()))
            if arg.arguments and arg.arguments[0].WhichOneof("binding") == "name":
                arg.arguments[0].name = new
                return f"input name={new[:20]!r}"
        if how == "function-output":
            outputs = block.outputs
            if outputs:
                outputs[0] = new
                return f"function output={new[:20]!r}"
        if op.outputs:
            op.outputs[0].name = new
        return f"output name={new[:20]!r}"
    if kind == "ops":
        how = rng.choice(("delete", "duplicate", "swap", "reverse"))
        i = rng.randrange(len(ops))
        if how == "delete":
            del ops[i]
        elif how == "duplicate":
            ops.add().CopyFrom(ops[i])
        elif how == "swap":
            j = rng.randrange(len(ops))
            a, b = copy.deepcopy(ops[i]), copy.deepcopy(ops[j])
            ops[i].CopyFrom(b)
            ops[j].CopyFrom(a)
        else:
            items = [copy.deepcopy(o) for o in ops]
            del ops[:]
            for o in reversed(items):
                ops.add().CopyFrom(o)
        return f"ops {how} {i}"
    if kind == "immediate":
        imms = []
        for op in ops:
            for v in op.attributes.values():
                if v.WhichOneof("value") == "immediateValue":
                    imms.append(v)
            for arg in op.inputs.values():
                for b in arg.arguments:
                    if b.WhichOneof("binding") == "value":
                        imms.append(b.value)
        if not imms:
            return "no immediate"
        v = rng.choice(imms)
        t = v.immediateValue.tensor
        which = t.WhichOneof("value")
        if which is None:
            return "immediate without value"
        values = getattr(t, which).values
        how = rng.choice(("append", "clear", "many"))
        if how == "clear":
            del values[:]
        elif which in ("strings",):
            values.append("x")
        elif which == "bytes":
            getattr(t, which).values = b"\x00" * rng.choice((1, 3, 1000))
        else:
            for _ in range(1 if how == "append" else 10000):
                values.append(type(values[0])(1) if len(values) else 1)
        return f"immediate {which} {how}"
    if kind == "datatype":
        t = rng.choice(_tensor_types(spec))
        t.dataType = rng.choice((0, 1, 2, 4, 9, 10, 11, 12, 13, 14, 15, 20, 21, 22, 23, 99, 2**20))
        return f"dataType={t.dataType}"
    # function-level edits
    how = rng.choice(("opset", "rename", "inputs", "spec-version"))
    functions = spec.mlProgram.functions
    if how == "opset":
        functions["main"].opset = rng.choice(("CoreML99", "", "CoreML5", "CoreML7"))
        return f"opset={functions['main'].opset!r}"
    if how == "rename":
        functions["other"].CopyFrom(functions["main"])
        del functions["main"]
        return "main renamed"
    if how == "inputs":
        inputs = functions["main"].inputs
        if inputs:
            inputs[0].name = rng.choice(("", "other", "\n"))
        return "input renamed"
    spec.specificationVersion = rng.choice((0, 1, 99, 2**31 - 1))
    return f"specificationVersion={spec.specificationVersion}"


# ----- .mlir mutations --------------------------------------------------------------------

_TOKEN = re.compile(r"%[\w.$-]+|@[\w.$-]+|#[\w.$-]+|![\w.$-]+|\^[\w.$-]+|\"(?:[^\"\\]|\\.)*\""
                    r"|0x[0-9A-Fa-f]+|[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|[A-Za-z_][\w.$]*"
                    r"|->|::|[^\s\w]")  # fmt: skip
MLIR_TOKENS = (
    "99999999999", "-1", "0", "18446744073709551616", "2147483648", "tensor<99999999999xf32>",
    "dense<1.0> : tensor<100000x100000xf32>", "{", "}", "(", ")", "<", ">", "[", "]", '"',
    "%0", "^bb0", "dense_resource<blob>", "0x", "i1", "f16", "i4", "ui8", "!vkc.buffer<4>",
    "#qfused.affine<bits = 99, range = [-8, 7], block = [1, 0]>", "aten.frobnicate",
    "func.return", "builtin.module", "unrealized_conversion_cast", "\x00", "\\", "nan", "inf",
    "0.0", "1e308", "-0", ":", ",", "=", "->", "tensor<?xf32>", "tensor<*xf32>",
)  # fmt: skip
SPLAT_TYPES = (
    "tensor<100000x100000xf32>", "tensor<4096x4096xf32>", "tensor<2000x2000xf32>",
    "tensor<1000x1000xf32>", "tensor< 100000x100000xf32>", "tensor<100000 x 100000 x f32>",
    "vector<100000x100000xf32>", "tensor<46341x46341xf32>", "tensor<40000x40000xi8>",
    "tensor<0x99999999999xf32>", "tensor<99999999999x0xf32>",
)  # fmt: skip


def mutate_mlir(rng: random.Random, seed: Path, marker: str) -> tuple[bytes, str, str]:
    text = seed.read_text()
    kind = rng.choices(
        ("bytes", "utf8", "tokens", "dims", "splat", "splat-alias", "nesting", "resource",
         "numbers", "op-swap"),
        weights=(6, 2, 10, 6, 5, 3, 4, 5, 7, 4),
    )[0]  # fmt: skip
    if kind == "bytes":
        data, detail = mutate_bytes(rng, text.encode())
        return data, kind, detail
    if kind == "utf8":
        data = bytearray(text.encode())
        at = rng.randrange(len(data))
        bad = rng.choice((b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\xf4\x90\x80\x80"))
        data[at:at] = bad
        return bytes(data), kind, f"{bad!r}@{at}"
    if kind == "tokens":
        tokens = [(m.start(), m.end()) for m in _TOKEN.finditer(text)]
        edits = []
        for _ in range(rng.choice((1, 1, 2, 4))):
            start, end = rng.choice(tokens)
            how = rng.choice(("replace", "delete", "duplicate", "swap-in"))
            old = text[start:end]
            if how == "replace":
                new = rng.choice(MLIR_TOKENS)
            elif how == "delete":
                new = ""
            elif how == "duplicate":
                new = old + " " + old
            else:
                s2, e2 = rng.choice(tokens)
                new = text[s2:e2]
            text = text[:start] + new + text[end:]
            tokens = [(m.start(), m.end()) for m in _TOKEN.finditer(text)]
            edits.append(f"{old[:20]!r}->{new[:20]!r}")
        return text.encode(), kind, "; ".join(edits)
    if kind == "dims":
        shapes = list(re.finditer(r"(?<=<)((?:\d+x)+)", text))
        m = rng.choice(shapes)
        dims = m.group(1).split("x")[:-1]
        j = rng.randrange(len(dims))
        dims[j] = str(rng.choice((0, 1, 3, 99999999999, 2**31, 2**32, 2**63, 2**64, 10**30,
                                  int(dims[j]) * 2, int(dims[j]) + 1)))  # fmt: skip
        new = "x".join(dims) + "x"
        everywhere = rng.random() < 0.3
        if everywhere:
            text = text.replace(m.group(1), new)
        else:
            text = text[: m.start()] + new + text[m.end() :]
        return text.encode(), kind, f"{m.group(1)} -> {new}{' everywhere' if everywhere else ''}"
    if kind in ("splat", "splat-alias"):
        t = rng.choice(SPLAT_TYPES)
        value = rng.choice(("1.0", "0", '"0xDEADBEEF"', "true", "[1.0]", "(1.0, 2.0)"))
        if "i8" in t and value == "1.0":
            value = "1"
        at = text.index("\n", text.index("func.func")) + 1  # after the header line
        if kind == "splat":
            line = f"    %zz_splat = arith.constant dense<{value}> : {t}\n"
        else:
            line = f"    %zz_splat = arith.constant dense<{value}> : !big\n"
            text = text[:at] + line + text[at:]
            text = f"!big = {t}\n" + text
            return text.encode(), kind, f"!big = {t}, dense<{value}>"
        text = text[:at] + line + text[at:]
        return text.encode(), kind, f"dense<{value}> : {t}"
    if kind == "nesting":
        n = rng.choice((100, 1000, 5000, 50000))
        how = rng.choice(("module", "brackets", "types", "attrs", "parens", "regions"))
        if how == "module":
            body = '"builtin.module"() ({\n' * n + "}) : () -> ()\n" * n
        elif how == "brackets":
            body = ("func.func @forward() {\n  %0 = arith.constant dense<" + "[" * n + "1.0"
                    + "]" * n + "> : tensor<1xf32>\n  func.return\n}\n")  # fmt: skip
        elif how == "types":
            body = ("func.func @forward(%x: " + "tensor<1x" * n + "f32" + ">" * n + ") {\n"
                    "  func.return\n}\n")  # fmt: skip
        elif how == "attrs":
            body = ("func.func @forward() attributes {a = " + "{a = " * n + "1" + "}" * n
                    + "} {\n  func.return\n}\n")  # fmt: skip
        elif how == "parens":
            body = "func.func @forward(%x: " + "(" * n + "f32" + ")" * n + ") {\n  func.return\n}\n"
        else:
            body = ('"test.op"() ({\n' * n) + ("}) : () -> ()\n" * n)
        return body.encode(), kind, f"{how} x{n}"
    if kind == "resource":
        blobs = list(re.finditer(r'(\w+): "0x([0-9A-Fa-f]*)"', text))
        if not blobs:
            return text.encode(), kind, "no resources"
        m = rng.choice(blobs)
        hexdata = m.group(2)
        how = rng.choice(("odd", "short", "long", "align0", "align-huge", "rename", "empty",
                          "dup", "not-hex"))  # fmt: skip
        if how == "odd":
            hexdata = hexdata[:-1]
        elif how == "short":
            hexdata = hexdata[: max(8, len(hexdata) // 2 // 2 * 2)]
        elif how == "long":
            hexdata = hexdata + "00" * rng.choice((1, 4, 4096))
        elif how == "align0":
            hexdata = "00000000" + hexdata[8:]
        elif how == "align-huge":
            hexdata = "FFFFFFFF" + hexdata[8:]
        elif how == "empty":
            hexdata = ""
        elif how == "not-hex":
            hexdata = "ZZ" + hexdata[2:]
        name = m.group(1)
        if how == "rename":
            name = name + "_renamed"
        replacement = f'{name}: "0x{hexdata}"'
        if how == "dup":
            replacement = replacement + f',\n      {name}: "0x{hexdata}"'
        text = text[: m.start()] + replacement + text[m.end() :]
        return text.encode(), kind, f"{m.group(1)} {how}"
    if kind == "numbers":
        attrs = list(re.finditer(r"(?<=[=\[,] )-?\d+(?=[\],>} ])", text.split("{-#")[0]))
        if not attrs:
            return text.encode(), kind, "no numbers"
        m = rng.choice(attrs)
        new = str(rng.choice((0, -1, 1, 3, 7, 9, 64, 99, 2**31, 2**40, 2**64, -(2**63))))
        text = text[: m.start()] + new + text[m.end() :]
        return text.encode(), kind, f"{m.group(0)} -> {new} @{m.start()}"
    # op-swap
    ops = sorted(set(re.findall(r"\b(aten\.\w+|qfused\.\w+|quant\.\w+|arith\.\w+)\b", text)))
    a = rng.choice(ops)
    b = rng.choice((*ops, "aten.frobnicate", "vkc.dispatch", "coreml.linear", "func.call"))
    occurrences = [m.start() for m in re.finditer(re.escape(a) + r"\b", text)]
    at = rng.choice(occurrences)
    text = text[:at] + b + text[at + len(a) :]
    return text.encode(), kind, f"{a} -> {b}"


# ----- .npz mutations ---------------------------------------------------------------------


def npy_bytes(header: str, data: bytes, version: tuple[int, int] = (1, 0)) -> bytes:
    """A `.npy` file with a hand-written header (not checked against the data)."""
    text = header.encode("latin1")
    if version == (1, 0):
        pad = (-(10 + len(text) + 1)) % 64
        text = text + b" " * pad + b"\n"
        length = min(len(text), 0xFFFF)  # a longer header lies about its length
        return b"\x93NUMPY\x01\x00" + struct.pack("<H", length) + text + data
    pad = (-(12 + len(text) + 1)) % 64
    text = text + b" " * pad + b"\n"
    return b"\x93NUMPY" + bytes(version) + struct.pack("<I", len(text)) + text + data


def npy_of(array: Any) -> bytes:
    import numpy as np

    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def mutate_npz(rng: random.Random, seed: Path, marker: str) -> tuple[bytes, str, str]:
    import numpy as np

    with np.load(seed) as z:
        arrays = [z[f"arr_{i}"] for i in range(len(z.files))]
    tokens = arrays[0].dtype.kind == "i"
    kind = rng.choices(
        ("bytes", "zip-field", "header", "pickle", "names", "count", "values", "shape",
         "dtype", "zip-bomb", "zip-lie"),
        weights=(6, 3, 9, 3, 4, 3, 9, 4, 6, 2, 2),
    )[0]  # fmt: skip
    members = [(f"arr_{i}.npy", npy_of(a)) for i, a in enumerate(arrays)]
    if kind == "bytes":
        data, detail = mutate_bytes(rng, rezip(members))
        return data, kind, detail
    if kind == "zip-field":
        data, detail = mutate_zip_fields(rng, rezip(members))
        return data, kind, detail
    if kind == "header":
        a = arrays[0]
        shape = rng.choice(((1 << 40,), (1 << 31, 1 << 31), (1 << 63,), (-1,), (4, -64),
                            (), (0,), a.shape, (a.size,), (1 << 31,), (2**64,)))  # fmt: skip
        descr = rng.choice(("|O", "<f8", ">f4", "<f2", "|b1", "<i8", "<u8", "<c8", "<U4", "|V4",
                            "[('a', '<f4')]", "<M8[s]", "garbage", a.dtype.str, "<f4", "<i4"))  # fmt: skip
        fortran = rng.choice(("False", "True", "'x'"))
        version = rng.choice(((1, 0), (2, 0), (3, 0), (9, 9)))
        descr_text = descr if descr.startswith("[") else repr(descr)
        header = f"{{'descr': {descr_text}, 'fortran_order': {fortran}, 'shape': {shape}, }}"
        if rng.random() < 0.1:
            header = f"__import__('os').system({shell_touch(marker)!r})"
        if rng.random() < 0.05:
            header = "{" + " " * 70000 + "}"
        data = a.tobytes()
        if rng.random() < 0.3:
            data = data[: rng.randrange(len(data) + 1)]
        members[0] = ("arr_0.npy", npy_bytes(header, data, version))
        return rezip(members), kind, f"{header[:90]} v{version}"
    if kind == "pickle":

        class Touch:
            def __reduce__(self) -> Any:
                return (os.system, (shell_touch(marker),))

        obj = np.empty(1, dtype=object)
        obj[0] = Touch()
        members[0] = ("arr_0.npy", npy_of(obj))
        return rezip(members), kind, "object array (os.system)"
    if kind == "names":
        how = rng.choice(("x", "arr_1-only", "gap", "dotdot", "no-ext", "dir", "arr_00", "dup",
                          "absolute"))  # fmt: skip
        name = {"x": "x.npy", "arr_1-only": "arr_1.npy", "gap": "arr_2.npy",
                "dotdot": "../arr_0.npy", "no-ext": "arr_0", "dir": "sub/arr_0.npy",
                "arr_00": "arr_00.npy", "absolute": "/tmp/arr_0.npy"}.get(how)  # fmt: skip
        if how == "gap":
            members.append((name, members[0][1]))
        elif how == "dup":
            members.append(members[0])
        elif name is not None:
            members[0] = (name, members[0][1])
        return rezip(members), kind, how
    if kind == "count":
        n = rng.choice((0, 2, 5))
        members = [(f"arr_{i}.npy", members[0][1]) for i in range(n)]
        return rezip(members), kind, f"{n} arrays"
    if kind == "values":
        a = arrays[0]
        if tokens:
            value = rng.choice((VOCAB, VOCAB + 1, 2**31, 2**31 - 1, 2**62, -1, -(2**63),
                                -(2**31) - 1, VOCAB - 1))  # fmt: skip
            b = a.astype(np.int64).copy()
            b.flat[rng.randrange(b.size)] = value
            detail = f"token id {value}"
        else:
            value = rng.choice((1e300, -1e300, float("nan"), float("inf"), 3.5e38, 1e-320,
                                -0.0))  # fmt: skip
            b = a.astype(np.float64)
            b.flat[rng.randrange(b.size)] = value
            detail = f"float64 value {value}"
        members[0] = ("arr_0.npy", npy_of(b))
        return rezip(members), kind, detail
    if kind == "shape":
        a = arrays[0]
        b = rng.choice((a.T.copy(), a[None], a.reshape(-1), a[:0], np.asarray(a.flat[0]),
                        np.zeros((1 << 20,), a.dtype), np.concatenate([a, a])))  # fmt: skip
        members[0] = ("arr_0.npy", npy_of(b))
        return rezip(members), kind, f"shape {list(b.shape)}"
    if kind == "dtype":
        a = arrays[0]
        target = rng.choice(("float64", "float16", "int64", "int32", "int8", "uint8", "uint64",
                             "bool", "complex64", "float32", "U4", "datetime64[s]", "V4"))  # fmt: skip
        try:
            b = a.astype(target)
        except (TypeError, ValueError):
            b = np.zeros(a.shape, target)
        if target in ("float64", "float32") and tokens and rng.random() < 0.5:
            b = b + 0.5
        if target == "int64" and not tokens and rng.random() < 0.5:
            b = np.full(a.shape, 2**62, np.int64)
        members[0] = ("arr_0.npy", npy_of(b))
        return rezip(members), kind, f"dtype {target}"
    entries = [zentry(n, d) for n, d in members]
    if kind == "zip-bomb":
        size = rng.choice((256 << 20, 1 << 30))
        entry = bomb_entry("arr_0.npy", size)
        entries[0] = entry
        return build_zip(entries), kind, f"deflated {size} zeros"
    e = entries[0]
    e.file_size = rng.choice((0, 1 << 40, e.file_size * 1000))
    return build_zip(entries), kind, f"declared size {e.file_size}"


# ----- open qopt bugs (reported; each pinned by an xfail test in test_fuzz_untrusted.py) ----


@dataclass(frozen=True)
class KnownBug:
    """An open qopt bug the fuzzer finds (reported; pinned by an xfail test).

    `detect` (on the mutant's bytes) tags a mutant: the calls whose label contains one
    of `skip` are not run ("*": none is), and its problems containing one of
    `tolerated` are this bug's. With `detect` None the bug is told by its consequence
    alone: any mutant of `formats` may show it, as a problem containing one of
    `tolerated`."""

    name: str
    formats: tuple[str, ...]
    detect: Callable[[bytes], bool] | None
    skip: tuple[str, ...]
    tolerated: tuple[str, ...]
    reason: str


#: Open qopt bugs the fuzzer has found and not yet fixed (none today: the ten it
#: found are fixed and pinned by the regression tests at the end of
#: test_fuzz_untrusted.py). A new one goes here with an xfail test until it is fixed.
KNOWN_BUGS: tuple[KnownBug, ...] = ()


def known_bug(fmt: str, path: str) -> KnownBug | None:
    if not os.path.isfile(path):
        return None
    data = Path(path).read_bytes()
    return next((b for b in KNOWN_BUGS if b.detect and fmt in b.formats and b.detect(data)), None)


# ----- round 2: run-time sizes, Dim ranges, host segments, variants, options, API ------


#: Sizes a file may give where qopt sizes something: 0, small, at and past the limits.
SIZES = (0, 1, 2, 3, 7, 64, 1000, 1 << 20, 1 << 29, 1 << 31, (1 << 31) + 1, 1 << 33, 1 << 40,
         1 << 62, (1 << 63) - 1)  # fmt: skip
#: `--limits` specs: nonsense, edge values, and small real ones that trip the checks.
LIMIT_SPECS = (
    "max_expansion=nan", "max_expansion=inf", "max_expansion=-1", "max_expansion=0",
    "max_expansion=1e999", "max_graph_nodes=1.5", "max_graph_nodes=nan", "max_graph_nodes=0x10",
    "max_graph_nodes=-0", "max_graph_nodes=99999999999999999999999", "max_tensor_elements=1",
    "max_tensor_elements=100", "max_graph_nodes=3", "max_graph_nodes=20", "max_dispatches=2",
    "max_device_bytes=64", "max_tensor_rank=1", "max_nodes=3", "max_graph_nodes", "=",
    ",,,", "max_graph_nodes=1,max_graph_nodes=2", "max_expansion=\x1b[2J", "max_expansion=1e-300",
)  # fmt: skip
#: Pass pipelines and -f / -t specs with syntax errors or odd options.
SPEC_TEXTS = (
    "fold-constants{", "fold-constants{max-elements=}", "fold-constants{max-elements=x}",
    "fold-constants{max-elements=-1}", "fold-constants}", "{", "\"", "a,,b", "fuse-quant{x=1}",
    "qopt-vulkan{fallback=maybe}", "fold-constants{max-elements=99999999999999999999}",
    "fold-constants,fold-constants,fold-constants", "",
)  # fmt: skip
FRONTEND_SPECS = (
    "pt2{dynamic_sizes=", "pt2{dynamic_sizes=0}", "pt2{dynamic_sizes=-1}", "pt2{dynamic_sizes=x}",
    "pt2{dynamic_sizes=2.7}", "pt2{dynamic_sizes=99999999999}", "pt2{nope=1}", "pt2{", "mlir{",
    "pt2{dynamic_sizes=1,2,3}", "pt2{dynamic_sizes=4}",
)  # fmt: skip
#: Values a caller may pass where the API takes a name, a size, a list of sizes.
BAD_ARGUMENTS: tuple[Any, ...] = (
    {}, [], (), None, float("nan"), float("inf"), -1, 0, 2.7, True, "", "x" * 5000, "\x1b[2J",
    b"bytes", object(), 1 << 70, [float("nan")], [None], [2.7], [True], [-1], [0], [1 << 40],
    {"s0": [float("nan")]}, {"forward": {"x": []}}, {"": [1]}, {1: [2]}, [[1]], "1,2", 3,
)  # fmt: skip

#: The limits the run-time-size and Dim-range mutants run under: what the defaults
#: allow (2**31 elements, 8 GiB a tensor) does not fit the worker's MEM_CAP, and the
#: mechanism under test is the bound, whatever its value.
FUZZ_LIMITS = "max_tensor_elements=33554432"

_R2_KINDS = ("runtime-size", "dim-range", "host-segment", "variants", "options", "api-args")
#: Their weights: the cheap ones (an `.mlir` of a few ops, an API call) most, those that
#: load a `.pt2` (~0.3 s) or start a Vulkan session (~3 s) least.
_R2_WEIGHTS = (35, 2, 15, 10, 8, 30)


def _runtime_size_program(rng: random.Random) -> tuple[str, str]:
    """An `.mlir` whose ops make results of a size decided at run time (`?`)."""
    a, b = rng.choice(SIZES), rng.choice(SIZES)
    how = rng.choice(("arange", "repeat", "repeat-dyn", "interleave", "full", "chain", "dyn-arg"))
    arg, rtype = "tensor<2x3xf32>", "tensor<?x?xf32>"
    attrs = ""
    if how in ("repeat-dyn", "dyn-arg"):
        low, high = (rng.choice((0, 1, 2)), rng.choice(SIZES)) if how == "repeat-dyn" else (
            rng.choice(SIZES), rng.choice(SIZES))  # fmt: skip
        arg = 'tensor<?x3xf32> {qopt.dims = ["s0", ""]}'
        attrs = f" attributes {{qopt.symbols = {{s0 = array<i64: {low}, {high}>}}}}"
    xtype = arg.split(" {")[0]
    if how == "arange":
        step = rng.choice((1, 1, -1, 0, 3, 1 << 40))
        start = -a if rng.random() < 0.2 else 0
        lines = [f"  %a = aten.arange {{start = {start} : i64, end = {b} : i64, step = {step} : "
                 "i64} : tensor<?xi64>",
                 "  %r = aten.unsqueeze %a {dim = 1 : i64} : (tensor<?xi64>) -> tensor<?x1xi64>",
                 "  %f = aten.to %r : (tensor<?x1xi64>) -> tensor<?x1xf32>"]  # fmt: skip
        result, rtype = "%f", "tensor<?x1xf32>"
    elif how == "interleave":
        lines = [f"  %r = aten.repeat_interleave %x {{repeats = {a} : i64, dim = 0 : i64}} : "
                 f"({xtype}) -> tensor<?x3xf32>"]  # fmt: skip
        result, rtype = "%r", "tensor<?x3xf32>"
    elif how == "full":
        lines = [f"  %r = aten.full {{value = 1.0 : f64}} : tensor<{b}x?xf32>"]
        result, rtype = "%r", f"tensor<{b}x?xf32>"
    else:  # repeat, chain, repeat-dyn, dyn-arg: a repeat (of a `?` argument: its range)
        if how == "dyn-arg":
            a, b = 1, 1
        lines = [f"  %r = aten.repeat %x {{repeats = array<i64: {a}, {b}>}} : ({xtype}) -> "
                 "tensor<?x?xf32>"]  # fmt: skip
        result = "%r"
        if how == "chain":
            lines.append("  %s = aten.add %r, %r : (tensor<?x?xf32>, tensor<?x?xf32>) -> "
                         "tensor<?x?xf32>")  # fmt: skip
            result = "%s"
    text = (f"func.func @forward(%x: {arg}) -> {rtype}{attrs} {{\n" + "\n".join(lines)
            + f"\n  func.return {result} : {rtype}\n}}\n")  # fmt: skip
    return text, f"{how} a={a} b={b}"


def _generation_program(rng: random.Random) -> tuple[str, str]:
    """A decode and prefill size variants (`prefill__N`) returning fixed logits."""
    sizes = sorted({rng.choice((0, 0, 1, 2, 3, 4, 5, 9)) for _ in range(rng.randint(1, 3))})
    funcs = ["func.func @decode(%t: tensor<1x1xi64>, %p: tensor<1xi64>) -> tensor<1x1x8xf32> {\n"
             "  %l = aten.full {value = 1.0 : f64} : tensor<1x1x8xf32>\n"
             "  func.return %l : tensor<1x1x8xf32>\n}\n"]  # fmt: skip
    for n in sizes:
        funcs.append(
            f"func.func @prefill__{n}(%t: tensor<1x{n}xi64>, %p: tensor<{n}xi64>) -> "
            f"tensor<1x{n}x8xf32> {{\n  %l = aten.full {{value = 1.0 : f64}} : tensor<1x{n}x8xf32>\n"
            f"  func.return %l : tensor<1x{n}x8xf32>\n}}\n"
        )
    return "".join(funcs), f"prefill sizes {sizes}"


def _host_segment_edit(rng: random.Random, manifest: dict[str, Any]) -> str:
    calls = manifest.get("host_calls") or []
    if not calls:
        return "no host segment"
    call = rng.choice(calls)
    how = rng.choice(("inject", "inject", "many-ops", "duplicate", "ops-names", "arange"))
    ir: str = call["ir"]
    arg = re.search(r"%([\w]+): tensor<2x(\d+)xf32>", ir)
    if how in ("inject", "arange", "many-ops") and arg:
        name, cols = arg.group(1), arg.group(2)
        a, b = rng.choice(SIZES), rng.choice(SIZES)
        if how == "inject":
            line = (f"  %zz = aten.repeat %{name} {{repeats = array<i64: {a}, {b}>}} : "
                    f"(tensor<2x{cols}xf32>) -> tensor<?x?xf32>\n")  # fmt: skip
        elif how == "arange":
            line = (f"  %zz = aten.arange {{start = 0 : i64, end = {b} : i64, step = 1 : i64}} : "
                    "tensor<?xi64>\n")  # fmt: skip
        else:
            count = rng.choice((10, 100, 300))
            line = "".join(f"  %zz{k} = aten.relu %{name} : (tensor<2x{cols}xf32>) -> "
                           f"tensor<2x{cols}xf32>\n" for k in range(count))  # fmt: skip
            a = count
        at = ir.rindex("func.return")
        at = ir.rindex("\n", 0, at) + 1
        call["ir"] = ir[:at] + line + ir[at:]
        return f"{how} {a} {b}"
    if how == "duplicate":
        n = rng.choice((2, 10, 50))
        manifest["host_calls"] = calls + [copy.deepcopy(call) for _ in range(n)]
        return f"duplicate x{n}"
    call["ops"] = [rng.choice(("\x1b[2J", "a\nb", "x" * 5000, "aten.prod"))] * rng.choice((1, 9))
    return "ops-names"


def mutate_round2(
    rng: random.Random, seeds: Path, work: Path, index: int
) -> tuple[str, Path, bytes | None, str, str, dict[str, Any]]:
    """(seed, path, bytes, kind, detail, plan) of a round-2 mutant: the file, and in
    `plan` what to call on it (`round2_calls`)."""
    kind = rng.choices(_R2_KINDS, weights=_R2_WEIGHTS)[0]
    plan: dict[str, Any] = {"kind": kind}
    if kind == "runtime-size":
        text, detail = _runtime_size_program(rng)
        return "x23_in.npz", work / f"m{index}.mlir", text.encode(), kind, detail, plan
    if kind == "dim-range":
        seed = rng.choice(("dynz.pt2", "dynz.pt2", "dyn.pt2"))
        members = zip_members(seeds / seed)
        i = _member(members, "models/model.json")
        program = json.loads(members[i][1])
        ranges = program.get("range_constraints") or {}
        edits = []
        for name, bounds in ranges.items():
            for key in ("min_val", "max_val"):
                if rng.random() < 0.6:
                    bounds[key] = rng.choice((*SIZES, -1, None))
                    edits.append(f"{name}.{key}={bounds[key]}")
        members[i] = (members[i][0], json.dumps(program).encode())
        plan["sizes"] = rng.choice(("1", "4", "0", "64", str(1 << 31), "1,2,3"))
        return seed, work / f"m{index}.pt2", rezip(members), kind, "; ".join(edits), plan
    if kind == "host-segment":
        manifest, blobs, version = qvk_parse((seeds / "host.qvk").read_bytes())
        detail = _host_segment_edit(rng, manifest)
        plan["limits"] = rng.choice((None, None, "max_graph_nodes=50", "max_tensor_elements=64"))
        data = qvk_build(manifest, blobs, version)
        return "host.qvk", work / f"m{index}.qvk", data, kind, detail, plan
    if kind == "variants":
        plan["prompt"] = ",".join(str(rng.randrange(8)) for _ in range(rng.randint(1, 7)))
        if rng.random() < 0.95:
            text, detail = _generation_program(rng)
            return "empty_in.npz", work / f"m{index}.mlir", text.encode(), kind, detail, plan
        manifest, blobs, version = qvk_parse((seeds / "kv.qvk").read_bytes())
        names = [rng.choice(("prefill__0", "prefill__1", "prefill__4", "prefill__-1", "decode",
                             "prefill", f"prefill__{1 << 40}", "prefill__0__0"))
                 for _ in manifest["methods"]]  # fmt: skip
        for method, new in zip(manifest["methods"], names, strict=True):
            method["name"] = new
        data = qvk_build(manifest, blobs, version)
        return "kv.qvk", work / f"m{index}.qvk", data, kind, f"methods {names}", plan
    seed = rng.choices(("mlp.mlir", "host.mlir", "dynz.pt2"), weights=(4, 4, 1))[0]
    plan["seed"] = seed
    data = (seeds / seed).read_bytes()
    ext = Path(seed).suffix
    if kind == "options":
        plan["limits"] = rng.choice(LIMIT_SPECS)
        plan["pipeline"] = rng.choice((*SPEC_TEXTS, None, None))
        plan["frontend"] = rng.choice((*FRONTEND_SPECS, None)) if ext == ".pt2" else None
        plan["report"] = rng.choice(("missing-dir", "a-dir", "ok", None))
        detail = json.dumps({k: v for k, v in plan.items() if k != "kind"})
        return seed, work / f"m{index}{ext}", data, kind, detail, plan
    plan["api"] = rng.choice(("read_state", "run-method", "interpret", "dynamic_sizes",
                              "generate", "limits", "load", "read_mlpackage"))  # fmt: skip
    plan["arg"] = rng.randrange(len(BAD_ARGUMENTS))
    plan["arg2"] = rng.randrange(len(BAD_ARGUMENTS))
    detail = (
        f"{plan['api']}({BAD_ARGUMENTS[plan['arg']]!r:.60}, {BAD_ARGUMENTS[plan['arg2']]!r:.60})"
    )
    return seed, work / f"m{index}{ext}", data, kind, detail, plan


def round2_calls(
    m: Mutant, rng: random.Random, out_dir: Path, seeds: Path, vulkan: bool
) -> list[Call]:
    """What to run on a round-2 mutant (its `plan`)."""
    import qopt

    plan = m.plan or {}
    kind, path = plan.get("kind"), m.path
    out_mlir, out_npz = str(out_dir / "out.mlir"), str(out_dir / "out.npz")
    inputs = m.inputs or ""
    calls: list[Call] = []
    bounded = qopt.Limits.parse(FUZZ_LIMITS)
    if kind == "runtime-size":

        def api_mlir() -> Any:
            with bounded.applied():
                return qopt.interpret(_load(path), *_arrays(inputs))

        calls.append(Call("interpret", "api", api_mlir))
        calls.append(Call("qopt-opt -p fold-constants", "qopt-opt",
                          argv=[path, "-p", "fold-constants", "-o", out_mlir, "--limits",
                                FUZZ_LIMITS], out=out_mlir))  # fmt: skip
        calls.append(Call("qopt-run", "qopt-run", argv=[path, "--inputs", inputs, "--outputs",
                                                        out_npz, "--limits", FUZZ_LIMITS],
                          out=out_npz))  # fmt: skip
    elif kind == "dim-range":

        def api_pt2() -> Any:
            module = qopt.import_program(path, limits=bounded)
            with bounded.applied():
                return qopt.interpret(module, *_arrays(inputs))

        calls.append(Call("import_program+interpret", "api", api_pt2))
        calls.append(Call("qopt-run", "qopt-run", argv=[path, "--inputs", inputs, "--outputs",
                                                        out_npz, "--limits", FUZZ_LIMITS],
                          out=out_npz))  # fmt: skip
        spec = f"pt2{{dynamic_sizes={plan['sizes']}}}"
        calls.append(Call(f"qopt-opt -f {spec} -p fold-constants", "qopt-opt",
                          argv=[path, "-f", spec, "-p", "fold-constants", "-o", out_mlir,
                                "--limits", FUZZ_LIMITS], out=out_mlir))  # fmt: skip
    elif kind == "host-segment":
        from qopt.backends.vulkan.bundle import read_bundle

        limits = ["--limits", plan["limits"]] if plan.get("limits") else []
        limits += ["--device", "vulkan"] if vulkan else []
        calls.append(Call("read_bundle", "api", lambda: read_bundle(path)))
        calls.append(Call("qopt-run", "qopt-run", argv=[path, "--inputs", inputs, "--outputs",
                                                        out_npz, *limits], out=out_npz))  # fmt: skip
    elif kind == "variants":
        argv = [path, "--generate", "3", "--prompt-ids", plan["prompt"]]
        calls.append(Call("qopt-run --generate", "qopt-run", argv=argv))
        if path.endswith(".mlir"):
            prompt = [int(t) for t in plan["prompt"].split(",")]
            calls.append(Call("generate", "api", lambda: qopt.generate(
                qopt.session(_load(path)), prompt, 3)))  # fmt: skip
    elif kind == "options":
        argv = [path]
        if plan.get("frontend"):
            argv += ["-f", plan["frontend"]]
        if plan.get("pipeline") is not None:
            argv += ["-p", plan["pipeline"]]
        argv += ["--limits", plan["limits"]]
        extra: list[str] = []
        if plan.get("report") == "missing-dir":
            argv += ["--report-json", str(out_dir / "missing" / "r.json")]
        elif plan.get("report") == "a-dir":
            argv += ["--report-json", str(out_dir)]
        elif plan.get("report") == "ok":
            extra.append(str(out_dir / "r.json"))
            argv += ["--report-json", extra[-1]]
        calls.append(Call("qopt-opt " + " ".join(argv[1:]), "qopt-opt",
                          argv=[*argv, "-o", out_mlir], out=out_mlir, extra=extra))  # fmt: skip
        run_inputs = str(seeds / PROGRAM_INPUTS[plan["seed"]])
        calls.append(Call("qopt-run --limits", "qopt-run",
                          argv=[path, "--inputs", run_inputs, "--outputs", out_npz, "--limits",
                                plan["limits"]], out=out_npz))  # fmt: skip
    else:
        calls.append(Call(f"api {plan['api']}", "api", _api_call(plan, path, seeds)))
    return calls


def _load(path: str) -> Any:
    """The module of an `.mlir` mutant (qopt-run's loader; a text that does not parse or
    verify is a QoptError here, as the tools report it)."""
    from xdsl.utils.exceptions import DiagnosticException, ParseError

    import qopt
    from qopt.tools.qopt_run import load_module

    try:
        return load_module(path)
    except (DiagnosticException, ParseError) as e:
        if isinstance(e, qopt.QoptError):
            raise
        raise qopt.QoptError(str(e).splitlines()[0] if str(e) else type(e).__name__) from None


def _api_call(plan: dict[str, Any], path: str, seeds: Path) -> Callable[[], Any]:
    import qopt

    arg, arg2 = BAD_ARGUMENTS[plan["arg"]], BAD_ARGUMENTS[plan["arg2"]]
    api = plan["api"]

    def call() -> Any:
        if api == "dynamic_sizes":
            return qopt.import_program(str(seeds / "dynz.pt2"), dynamic_sizes=arg)
        if api == "limits":
            if isinstance(arg, str):
                return qopt.Limits.parse(arg)
            return qopt.Limits(max_graph_nodes=arg, max_expansion=arg2)
        if api == "load":
            return qopt.load(arg)
        if api == "read_mlpackage":
            return qopt.read_mlpackage(arg)
        module = _program_module(str(seeds / "mlp.mlir"))
        x = _arrays(str(seeds / "mlp_in.npz"))
        if api == "read_state":
            return qopt.session(module).read_state(arg)
        if api == "run-method":
            return qopt.session(module).run(*x, method=arg)
        if api == "interpret":
            return qopt.interpret(module, *x, function=arg)
        return qopt.generate(qopt.session(module), arg, arg2)

    return call


# ----- mutants and their runs -------------------------------------------------------------


@dataclass
class Mutant:
    index: int
    format: str
    seed: str
    kind: str
    detail: str
    path: str
    program: str | None = None  # npz: the program to run; others: None
    inputs: str | None = None  # the npz of the program's inputs
    error: str | None = None  # the generator itself failed (a fuzzer bug)
    plan: dict[str, Any] | None = None  # round2: what to call (`round2_calls`)


def generate(index: int, campaign: int, seeds: Path, work: Path, marker: str) -> Mutant:
    """Mutant `index` of `campaign` (deterministic), written under `work`."""
    rng = random.Random(f"{campaign}:{index}")
    fmt = FORMAT_CYCLE[index % len(FORMAT_CYCLE)]
    if fmt == "round2":
        m = Mutant(index, fmt, "", "", "", str(work / f"m{index}"))
        try:
            seed, path, data, m.kind, m.detail, m.plan = mutate_round2(rng, seeds, work, index)
            m.seed, m.path = seed, str(path)
            if data is not None:
                path.write_bytes(data)
            m.inputs = str(seeds / (PROGRAM_INPUTS.get(seed) or seed))
        except Exception as e:  # a fuzzer bug
            m.error = "".join(traceback.format_exception(e)[-3:])
        return m
    seed = rng.choice(SEEDS_BY_FORMAT[fmt])
    ext = {"pt2": ".pt2", "mlir": ".mlir", "qvk": ".qvk", "mlpackage": ".mlpackage",
           "npz": ".npz"}[fmt]  # fmt: skip
    path = work / f"m{index}{ext}"
    m = Mutant(index, fmt, seed, "", "", str(path))
    try:
        if fmt == "pt2":
            data, m.kind, m.detail = mutate_pt2(rng, seeds / seed, marker)
        elif fmt == "qvk":
            data, m.kind, m.detail = mutate_qvk(rng, seeds / seed, marker)
        elif fmt == "mlir":
            data, m.kind, m.detail = mutate_mlir(rng, seeds / seed, marker)
        elif fmt == "npz":
            data, m.kind, m.detail = mutate_npz(rng, seeds / seed, marker)
            programs = [p for p, i in PROGRAM_INPUTS.items()
                        if i == seed and not p.endswith(".mlpackage")]  # fmt: skip
            m.program = str(seeds / rng.choice(programs))
        else:
            m.kind, m.detail = mutate_mlpackage(rng, seeds / seed, path, marker)
            data = None
        if data is not None:
            path.write_bytes(data)
    except Exception as e:  # a fuzzer bug: reported as such, never as a qopt failure
        m.error = "".join(traceback.format_exception(e)[-3:])
    if fmt != "npz":
        m.inputs = str(seeds / PROGRAM_INPUTS[seed])
    return m


@dataclass
class Call:
    """One entry point run on a mutant: an API function or a tool's main(argv)."""

    label: str
    kind: str  # "api" | "qopt-opt" | "qopt-run"
    fn: Callable[[], Any] | None = None
    argv: list[str] = field(default_factory=list)
    out: str | None = None  # the output path that must not exist after a failure
    extra: list[str] = field(default_factory=list)  # other outputs (--report-json): the same


def _arrays(npz: str) -> list[Any]:
    from qopt.tools.qopt_run import load_inputs

    return load_inputs(npz)


_MODULES: dict[str, Any] = {}


def _program_module(path: str) -> Any:
    """The module of a seed program (imported/parsed once per worker; it owns its
    weights, so nothing a later file does can change them)."""
    if path not in _MODULES:
        from qopt.tools.qopt_run import load_module

        _MODULES[path] = load_module(path)
    return _MODULES[path]


def calls_for(m: Mutant, rng: random.Random, out_dir: Path, vulkan: bool) -> list[Call]:
    import qopt
    from qopt.backends.vulkan.bundle import read_bundle
    from qopt.inputs import load_npz

    path = m.path
    if m.format == "round2":
        return round2_calls(m, rng, out_dir, Path(m.inputs or "").parent, vulkan)
    calls: list[Call] = []
    out_mlir, out_npz = str(out_dir / "out.mlir"), str(out_dir / "out.npz")
    run_args = ["--inputs", m.inputs or "", "--outputs", out_npz]
    if m.format == "pt2":

        def api_pt2() -> Any:
            module = qopt.import_program(path)
            return qopt.interpret(module, *_arrays(m.inputs or ""))

        calls.append(Call("import_program+interpret", "api", api_pt2))
        if rng.random() < 0.5:
            extra = rng.choice(([], [], ["-p", "fuse-quant"], ["-p", "qopt-vulkan"],
                                ["-p", "qopt-vulkan", "-t", "vkbundle"]))  # fmt: skip
            out = str(out_dir / ("out.qvk" if "vkbundle" in extra else "out.mlir"))
            calls.append(Call("qopt-opt " + " ".join(extra), "qopt-opt",
                              argv=[path, *extra, "-o", out], out=out))  # fmt: skip
        else:
            calls.append(Call("qopt-run", "qopt-run", argv=[path, *run_args], out=out_npz))
    elif m.format == "mlir":
        extra = rng.choice(([], [], ["-p", "fuse-quant"], ["-p", "fold-constants"],
                            ["-p", "qopt-vulkan"], ["-p", "qopt-vulkan", "-t", "vkbundle"],
                            ["-p", "qopt-coreml"]))  # fmt: skip
        out = str(out_dir / ("out.qvk" if "vkbundle" in extra else "out.mlir"))
        calls.append(Call("qopt-opt " + " ".join(extra), "qopt-opt",
                          argv=[path, *extra, "-o", out], out=out))  # fmt: skip
        calls.append(Call("qopt-run", "qopt-run", argv=[path, *run_args], out=out_npz))
    elif m.format == "qvk":
        calls.append(Call("read_bundle", "api", lambda: read_bundle(path)))
        if vulkan:
            calls.append(Call("qopt-run --device vulkan", "qopt-run",
                              argv=[path, *run_args, "--device", "vulkan"], out=out_npz))  # fmt: skip
        else:
            calls.append(Call("qopt-run", "qopt-run", argv=[path, *run_args], out=out_npz))
    elif m.format == "mlpackage":

        def api_pkg() -> Any:
            module = qopt.read_mlpackage(path)
            return qopt.interpret(module, *_arrays(m.inputs or ""))

        calls.append(Call("read_mlpackage+interpret", "api", api_pkg))
        calls.append(Call("qopt-opt", "qopt-opt", argv=[path, "-o", out_mlir], out=out_mlir))
    else:
        program = m.program or ""
        qvk = program.endswith(".qvk")

        def api_npz() -> Any:
            arrays = load_npz(path)
            if qvk:
                return arrays
            ordered = [arrays[k] for k in sorted(arrays, key=lambda k: (len(k), k))]
            return qopt.interpret(_program_module(program), *ordered)

        calls.append(Call("load_npz+interpret", "api", api_npz))
        device = ["--device", "vulkan"] if qvk and vulkan else []
        if not qvk or vulkan:
            calls.append(Call(f"qopt-run {Path(program).name} {' '.join(device)}".rstrip(),
                              "qopt-run",
                              argv=[program, "--inputs", path, "--outputs", out_npz, *device],
                              out=out_npz))  # fmt: skip
    return calls


# ----- running ----------------------------------------------------------------------------


def _peak_reset() -> None:
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _peak_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:300]
    return ""


def run_call(call: Call) -> dict[str, Any]:
    """Run one call; the facts the test checks against the contract."""
    import qopt
    from qopt.tools import qopt_opt, qopt_run

    stderr = io.StringIO()
    stdout = io.StringIO()
    result: dict[str, Any] = {"call": call.label, "kind": call.kind}
    start = time.perf_counter()
    with (
        warnings.catch_warnings(record=True) as caught,
        contextlib.redirect_stderr(stderr),
        contextlib.redirect_stdout(stdout),
    ):
        warnings.simplefilter("always")
        try:
            if call.kind == "api":
                assert call.fn is not None
                call.fn()
                result["outcome"] = "ok"
            else:
                main = qopt_opt.main if call.kind == "qopt-opt" else qopt_run.main
                code: Any = 0
                try:
                    main(call.argv)
                except SystemExit as e:
                    code = e.code
                result["code"] = 0 if code is None else code
        except qopt.QoptError as e:
            result["outcome"] = "qopt-error"
            result["message"] = _first_line(str(e)) or type(e).__name__
            result["text"] = str(e)[:2000]
        except BaseException as e:  # the contract is broken: keep the traceback's tail
            if isinstance(e, KeyboardInterrupt):
                raise
            result["outcome"] = "other"
            result["message"] = f"{type(e).__name__}: {_first_line(str(e))}"
            result["traceback"] = _traceback(e)
    result["seconds"] = round(time.perf_counter() - start, 3)
    result["warnings"] = [str(w.message)[:200] for w in caught[:3]]
    if call.kind != "api":
        err = stderr.getvalue()
        result["stderr"] = err[:4000]
        code = result.get("code", 0)
        if "outcome" not in result:  # the tool returned or exited
            prefix = f"{call.kind}: error:"
            first = _first_line(err)
            clean = (
                code == 1
                and first.startswith(prefix)
                and "Traceback" not in err
                and "internal error" not in err
            )
            result["outcome"] = "ok" if code == 0 else ("qopt-error" if clean else "other")
            result["message"] = first
        if call.out is not None:
            result["out_exists"] = os.path.exists(call.out)
            directory = os.path.dirname(call.out)
            leftovers = [n for n in os.listdir(directory) if n.startswith(".")]
            result["leftovers"] = leftovers
            if code != 0:
                result["out_exists"] = os.path.exists(call.out) or any(
                    os.path.exists(extra) for extra in call.extra
                )
        if result["outcome"] == "other" and "--debug" not in call.argv:
            result["debug"] = _debug_traceback(call)
    return result


def _traceback(e: BaseException) -> str:
    """The exception and the innermost frames: qopt's last two and the two after them."""
    frames = traceback.extract_tb(e.__traceback__)
    ours = [i for i, f in enumerate(frames) if "/qopt/" in f.filename]
    start = max(ours[-2] if len(ours) > 1 else (ours[-1] if ours else 0), len(frames) - 6)
    start = min(start, ours[-1]) if ours else start
    lines = traceback.format_list(frames[start : start + 4])
    return ("".join(lines) + "".join(traceback.format_exception_only(e)))[-3000:]


def _debug_traceback(call: Call) -> str:
    """The traceback of an internal error: the same call rerun with --debug."""
    from qopt.tools import qopt_opt, qopt_run

    main = qopt_opt.main if call.kind == "qopt-opt" else qopt_run.main
    sink = io.StringIO()
    try:
        with contextlib.redirect_stderr(sink), contextlib.redirect_stdout(sink), \
                warnings.catch_warnings():  # fmt: skip
            warnings.simplefilter("ignore")
            main([*call.argv, "--debug"])
    except SystemExit:
        return ""
    except BaseException as e:
        return _traceback(e)
    finally:
        if call.out and os.path.isdir(call.out):
            shutil.rmtree(call.out, ignore_errors=True)
        elif call.out and os.path.exists(call.out):
            os.unlink(call.out)
    return ""


def run_mutant(
    index: int, campaign: int, seeds: Path, work: Path, markers: Path, vulkan: bool,
    keep: bool = False,
) -> dict[str, Any]:  # fmt: skip
    marker = str(markers / f"marker{index}")
    m = generate(index, campaign, seeds, work, marker)
    record: dict[str, Any] = {
        "i": index, "format": m.format, "seed": m.seed, "kind": m.kind,
        "mutation": f"{m.format}/{m.kind}", "detail": m.detail[:300],
    }  # fmt: skip
    if m.program:
        record["program"] = Path(m.program).name
    if m.error is not None:
        record.update(outcome="fuzzer-error", message=m.error, calls=[], seconds=0, peak=0)
        return record
    bug = known_bug(m.format, m.path)
    if bug is not None:
        record["known_bug"] = bug.name
        if "*" in bug.skip:
            record.update(outcome="known-bug", message=bug.reason, calls=[], seconds=0, peak=0)
            _remove(Path(m.path), keep)
            return record
    rng = random.Random(f"{campaign}:{index}:calls")
    out_dir = work / f"out{index}"
    out_dir.mkdir()
    _peak_reset()
    start = time.perf_counter()
    calls = []
    for call in calls_for(m, rng, out_dir, vulkan):
        if bug is not None and any(label in call.label for label in bug.skip):
            continue
        result = run_call(call)
        calls.append(result)
        for name in os.listdir(out_dir):  # a success's output: remove before the next call
            target = out_dir / name
            shutil.rmtree(
                target
            ) if target.is_dir() and not target.is_symlink() else target.unlink()
    record["seconds"] = round(time.perf_counter() - start, 3)
    record["peak"] = _peak_bytes()
    record["calls"] = calls
    record["marker"] = os.path.exists(marker)
    outcomes = [c["outcome"] for c in calls]
    record["outcome"] = (
        "other" if "other" in outcomes else "qopt-error" if "qopt-error" in outcomes else "ok"
    )
    record["message"] = next((c.get("message", "") for c in calls if c["outcome"] != "ok"), "")
    shutil.rmtree(out_dir, ignore_errors=True)
    _remove(Path(m.path), keep)
    return record


def _remove(path: Path, keep: bool) -> None:
    if keep:
        return
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists() or path.is_symlink():
        path.unlink()


# ----- the worker process -----------------------------------------------------------------


def _setup(mem_cap: int) -> Any:
    """Cap memory, silence fd 1 (the protocol gets a private copy), import everything."""
    import resource

    if mem_cap:
        resource.setrlimit(resource.RLIMIT_DATA, (mem_cap, mem_cap))
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", buffering=0), write_through=True)
    warnings.simplefilter("ignore")
    import logging

    logging.disable(logging.WARNING)  # start-up chatter of torchao/coremltools

    logging.disable(logging.NOTSET)
    return protocol


def serve(mem_cap: int) -> None:
    """The protocol: one JSON job per stdin line ({"seeds", "work", "markers", "start",
    "stop", "campaign", "vulkan"}); per mutant a {"event": "start"} line (so that the
    test can name a mutant that crashes or hangs the worker) then its record; "done"
    after the job. "ready" once imports are done."""
    parent = os.getppid()
    protocol = _setup(mem_cap)
    protocol.write(json.dumps({"event": "ready", "pid": os.getpid()}) + "\n")
    for line in sys.stdin:
        job = json.loads(line)
        seeds, work, markers = Path(job["seeds"]), Path(job["work"]), Path(job["markers"])
        work.mkdir(parents=True, exist_ok=True)
        for i in range(job["start"], job["stop"]):
            if os.getppid() != parent:  # the test is gone
                return
            protocol.write(json.dumps({"event": "start", "i": i}) + "\n")
            record = run_mutant(i, job["campaign"], seeds, work, markers, job["vulkan"])
            protocol.write(json.dumps({"event": "result", **record}, default=str) + "\n")
        protocol.write(json.dumps({"event": "done"}) + "\n")


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", action="store_true", help="run as the test's worker")
    parser.add_argument("--mem-cap", type=int, default=3 << 30)
    parser.add_argument("--make-seeds", metavar="DIR")
    parser.add_argument("--seeds", metavar="DIR")
    parser.add_argument("--only", type=int, nargs="+", help="mutant indices to run")
    parser.add_argument("--campaign", type=int, default=DEFAULT_CAMPAIGN)
    parser.add_argument("--keep", metavar="DIR", help="write the mutants here and keep them")
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.mem_cap)
        return
    if args.make_seeds:
        print(make_seeds(args.make_seeds))
        return
    if not (args.seeds and args.only):
        parser.error("give --serve, --make-seeds DIR, or --seeds DIR --only I ...")
    from qopt.backends.vulkan.runtime import vulkan_available

    work = Path(args.keep or Path(args.seeds) / "repro")
    work.mkdir(parents=True, exist_ok=True)
    vulkan = vulkan_available() is None
    for i in args.only:
        shutil.rmtree(work / f"out{i}", ignore_errors=True)
        record = run_mutant(i, args.campaign, Path(args.seeds), work, work, vulkan, keep=True)
        print(json.dumps(record, indent=1, default=str))


if __name__ == "__main__":
    main()
