"""The memory traffic of one call of a Vulkan program, from the program alone.

`method_work(program, method, position)` counts, for one call of `method` with the
cache positions up to `position` in use (a decode step at `position`: `position + L`
rows), the bytes its dispatches read and the bytes it must read:

- read: per dispatch, the words of each binding the kernel reads (not the ones it
  only writes): its extents (qopt/kernels/: what the loader checks), except where a
  kernel reads less than the extent allows at run time: the gather kernels read the
  `n` rows they are given of their table (gather_rows, the embeddings, gather_dim), an
  sdpa reads the keys its loop reaches (`BOUNDED`: the rows in use; otherwise all S,
  or min(S, L) when CAUSAL) of each key/value head and the mask words of those keys,
  and mask_bound reads each mask row's masked tail (plus one word per thread);
- needed: every constant buffer read (packed weights, scales, codebooks, tables: the
  rows gathered of a table) and every state buffer read (the KV caches: the rows in
  use), each once.

Activations, masks and the other intermediate buffers are read but not needed, so
`ratio = read / needed` is at least 1 for a program whose weights dominate and says
how much more than its data a call moves: what a GPU, bound by memory bandwidth at
decode, will see. The counts depend on the program only (no device).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from qopt.backends.vulkan.program import BundleProgram, Method, Step
from qopt.errors import QoptError
from qopt.kernels import KernelSpec, kernel_spec

GATHER_TABLES: Mapping[str, tuple[str, ...]] = {
    "gather_rows": ("table",),
    "embedding_q4gsw": ("w", "scales", "zeros"),
    "embedding_q8csw": ("w", "scales", "zeros"),
    "embedding_lut": ("codes", "codebook"),
}
"""Kernels that read `n` rows (push `n`) of `V`-row tables: their table bindings."""

MASK_BOUND_THREADS = 64
"""mask_bound's workgroup: each thread reads at most one word past the open keys."""


@dataclass
class MethodWork:
    """The traffic of one call of a method (`method_work`)."""

    read_bytes: int = 0
    """Bytes the dispatches read (each dispatch counted)."""
    needed_bytes: int = 0
    """Bytes of constants and states the call must read (each buffer once)."""
    dispatches: int = 0
    layers: int = 0
    """Attention layers: the sdpa dispatches."""
    per_layer: float = 0.0
    """Dispatches from one sdpa to the next (all of them when there are fewer than 2)."""
    by_kernel: dict[str, int] = field(default_factory=dict[str, int])
    """Read bytes by kernel name."""
    cache_rows: int = 0
    """Key rows one sdpa reads per key/value head (the largest over the sdpa)."""

    @property
    def ratio(self) -> float:
        return self.read_bytes / self.needed_bytes if self.needed_bytes else float("inf")


def _words(program: BundleProgram, buffer: int) -> int:
    return int(program.buffers[buffer]["nbytes"]) // 4


def _sdpa(
    push: Mapping[str, int | float], spec: Mapping[str, int], rows: int | None
) -> tuple[dict[str, int], int, int]:
    """(words read per binding, keys read, keys needed) of one sdpa dispatch with `rows`
    cache rows in use (None: all S)."""
    bh, heads, lq, s, e, ev, g = (int(push[k]) for k in ("BH", "H", "L", "S", "E", "EV", "G"))
    reach = min(s, lq) if int(spec.get("CAUSAL", 0)) == 1 else s
    needed = reach if rows is None else min(reach, rows)
    keys = needed if int(spec.get("BOUNDED", 0)) == 1 else reach
    kv_heads = (bh - 1) // g + 1 if bh else 0
    words = {"q": bh * lq * e, "k": kv_heads * keys * e, "v": kv_heads * keys * ev}
    if int(spec.get("HAS_MASK", 0)) == 1:
        b = -(-bh // heads) if heads else 0
        dims = ((b, "mb"), (heads, "mh"), (lq, "ml"), (keys, "ms"))
        count = 1
        for d, stride in dims:
            count *= d if int(push[stride]) else 1
        words["mask"] = count
    if int(spec.get("BOUNDED", 0)) == 1:
        words["bound"] = 1
    return words, keys, needed


def _reads(
    spec: KernelSpec, step: Step, values: Mapping[str, int], rows: int | None
) -> tuple[dict[str, int], dict[str, int]]:
    """(words read, words needed) per read binding of one dispatch."""
    extents = spec.extents(step.push, values) if spec.extents is not None else {}
    read = {b.name: int(extents.get(b.name, 0)) for b in spec.bindings if not b.writes}
    needed = dict(read)
    if spec.name == "sdpa":
        words, keys, keep = _sdpa(step.push, values, rows)
        read.update(words)
        needed.update(words)
        for name in ("k", "v"):
            needed[name] = words[name] * keep // keys if keys else 0
    elif spec.name in GATHER_TABLES:
        n, v = int(step.push["n"]), int(step.push["V"])
        for name in GATHER_TABLES[spec.name]:
            if v:
                read[name] = needed[name] = -(-read[name] * min(n, v) // v)
    elif spec.name == "gather_dim":
        p, s, q = (int(step.push[k]) for k in ("P", "S", "Q"))
        read["x"] = needed["x"] = min(read["x"], p * s * q)
    elif spec.name == "mask_bound":
        r, s = int(step.push["rows"]), int(step.push["S"])
        tail = s if rows is None else s - min(s, rows)
        read["mask"] = r * min(s, tail + MASK_BOUND_THREADS)
    return read, needed


def method_work(
    program: BundleProgram, method: str | Method | None = None, position: int | None = None
) -> MethodWork:
    """The bytes one call of `method` reads and must read (module docstring), with the
    cache rows up to `position` in use (a decode step at `position` over L new tokens:
    `position + L` rows; None: the whole cache)."""
    found = method if isinstance(method, Method) else program.method(method)
    if position is not None and position < 0:
        raise QoptError(f"method_work: position {position} is negative")
    steps = program.method_steps(found)
    work = MethodWork(dispatches=len(steps))
    needed: dict[int, int] = {}
    sdpa_at: list[int] = []
    queries = [
        int(step.push["L"]) for step in steps if program.kernels[step.kernel].kernel == "sdpa"
    ]
    rows = None if position is None else position + max(queries, default=1)
    for index, step in enumerate(steps):
        entry = program.kernels[step.kernel]
        spec = kernel_spec(entry.kernel)
        values = spec.spec_values(entry.spec)
        if spec.name == "sdpa":
            sdpa_at.append(index)
            work.cache_rows = max(work.cache_rows, _sdpa(step.push, values, rows)[1])
        read, need = _reads(spec, step, values, rows)
        total = 0
        for binding, buffer in zip(spec.bindings, step.buffers, strict=True):
            if binding.writes:
                continue
            words = min(read[binding.name], _words(program, buffer))
            total += 4 * words
            if program.buffers[buffer]["kind"] in ("constant", "state"):
                words = min(need[binding.name], _words(program, buffer))
                needed[buffer] = max(needed.get(buffer, 0), 4 * words)
        work.read_bytes += total
        work.by_kernel[spec.name] = work.by_kernel.get(spec.name, 0) + total
    work.needed_bytes = sum(needed.values())
    work.layers = len(sdpa_at)
    if len(sdpa_at) >= 2:
        work.per_layer = (sdpa_at[-1] - sdpa_at[0]) / (len(sdpa_at) - 1)
    else:
        work.per_layer = float(len(steps))
    return work
