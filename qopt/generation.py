"""Greedy generation over a session: an LLM's prefill + decode loop.

Works with anything that has a session (`qopt.session(module)` on IR, a CoreML or
Vulkan artifact's `.session()`): its methods take `(tokens [1, S] int64,
positions [S] int64)` as ExecuTorch's and transformers' static-cache exports do,
and return logits `[1, S, vocab]` first. With a `prefill` method the prompt goes
in one call (of the length prefill was exported with, or any length within the
bounds of a `torch.export.Dim` prefill), then `decode`
(or `forward`) one token per call; without one, the prompt is fed a token per
call. The next token is the argmax of the last position's logits. A prefill
compiled at some lengths only (`dynamic_sizes`) takes a prompt of another length
in pieces of those lengths, in order (chunked prefill).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qopt.errors import QoptError
from qopt.variants import variant_sizes


def _logits(outputs: Sequence[np.ndarray], method: str) -> np.ndarray:
    if not outputs:
        raise QoptError(f"method {method!r} returns nothing: expected logits [1, S, vocab]")
    logits = np.asarray(outputs[0])
    if logits.ndim < 2:
        raise QoptError(
            f"method {method!r} returns a {list(logits.shape)} tensor first: expected logits "
            "[1, S, vocab]"
        )
    return logits


def _next_token(logits: np.ndarray) -> int:
    return int(np.argmax(logits.reshape(-1, logits.shape[-1])[-1]))


def _sizes(session: Any) -> list[tuple[int, ...]]:
    """The lengths `prefill` was compiled at (its size variants), [] if it takes any
    length in its Dim's range or has one fixed length."""
    names = getattr(session, "function_names", None)
    return variant_sizes("prefill", list(names)) if names is not None else []


def _prefill_chunks(session: Any, length: int, step: str) -> list[tuple[int, int, str]]:
    """The prompt's [start, stop) pieces and the method each goes through: the whole
    prompt to `prefill`, or, when prefill was compiled at some lengths only
    (`dynamic_sizes`) and not at the prompt's, consecutive pieces of the longest
    compiled length that fits, a token no compiled length fits going to `step`:
    chunked prefill, the same cache and logits for a causal decoder that takes its
    positions as an input."""
    # The sizes come from the program (its variants' names, a file's metadata): only a
    # size that takes at least one token is a piece, so every piece moves `start`
    # on and the loop ends after at most `length` pieces, whatever the file says.
    sizes = sorted({s[0] for s in _sizes(session) if len(s) == 1 and s[0] >= 1}, reverse=True)
    if not sizes or length in sizes:
        return [(0, length, "prefill")]
    chunks: list[tuple[int, int, str]] = []
    start = 0
    while start < length:
        fits = [s for s in sizes if s <= length - start]
        size, method = (fits[0], "prefill") if fits else (1, step)
        chunks.append((start, start + size, method))
        start += size
    return chunks


def generate(session: Any, prompt: Sequence[int], max_new_tokens: int) -> list[int]:
    """`max_new_tokens` greedy tokens after `prompt` (see the module docstring)."""
    prompt = [int(t) for t in prompt]
    if not prompt:
        raise QoptError("generation needs a prompt of at least one token")
    if max_new_tokens < 1:
        raise QoptError(f"max_new_tokens must be positive, got {max_new_tokens}")
    methods = list(session.methods)
    step = "decode" if "decode" in methods else "forward" if "forward" in methods else None
    if step is None:
        if len(methods) != 1:
            raise QoptError(
                f"the program's methods are {methods}: generation needs decode (and "
                "optionally prefill) or a single method"
            )
        step = methods[0]

    def call(method: str, tokens: Sequence[int], start: int) -> np.ndarray:
        ids = np.array([tokens], dtype=np.int64)
        positions = np.arange(start, start + len(tokens), dtype=np.int64)
        return _logits(session.run(ids, positions, method=method), method)

    if "prefill" in methods:
        logits = None
        for start, stop, method in _prefill_chunks(session, len(prompt), step):
            logits = call(method, prompt[start:stop], start)
        assert logits is not None
    else:
        for position, token in enumerate(prompt[:-1]):
            call(step, [token], position)
        logits = call(step, prompt[-1:], len(prompt) - 1)
    out = [_next_token(logits)]
    position = len(prompt)
    while len(out) < max_new_tokens:
        out.append(_next_token(call(step, out[-1:], position)))
        position += 1
    return out
