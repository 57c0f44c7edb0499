"""The built-in examples' exported programs, each exported once per test process.

`torch.export` of a built-in model is most of what many tests cost (a PT2E scheme
calibrates and converts first: the Llama's `pt2e_static` takes seconds), and a dozen
test files need the same (model, scheme) pairs. Each file used to keep its own cache;
they share this one (pytest puts this folder on `sys.path`: `pythonpath` in
pyproject.toml), so an xdist worker exports each pair once. The programs are shared:
tests read them (import, compile, `ep.module()`), never change them.

The same holds one step further for the Vulkan bundles of the built-in pairs: the
native runtime's references, its own tests and the kernel-extent checks each compiled
every pair again (`vulkan_program`, `vulkan_bytes`: compiled once per process, read only).
"""

from __future__ import annotations

import atexit
import copy
import functools
import shutil
import tempfile

import torch
from torch.export import ExportedProgram

import qopt
from qopt.backends.vulkan.artifact import VulkanArtifact
from qopt.backends.vulkan.program import BundleProgram
from qopt.examples import apply_scheme, build_kv_llama, export_model


@functools.cache
def exported(model: str, scheme: str) -> ExportedProgram:
    """`qopt.examples.export_model(model, scheme)` (seed 0), once per process."""
    return export_model(model, scheme)


@functools.cache
def _vulkan(model: str, scheme: str) -> VulkanArtifact:
    return qopt.compile(exported(model, scheme), target="vulkan")


def vulkan_program(model: str, scheme: str) -> BundleProgram:
    """`qopt.compile(exported(model, scheme), target="vulkan").program`, once per process
    (shared: read it, never change it)."""
    return _vulkan(model, scheme).program


@functools.cache
def vulkan_bytes(model: str, scheme: str) -> bytes:
    """The `.qvk` bytes of `vulkan_program(model, scheme)` (`artifact.to_bytes()`)."""
    return _vulkan(model, scheme).to_bytes()


def kv_decoder(
    config: dict[str, int], prompt: list[int], scheme: str
) -> tuple[torch.nn.Module, dict[str, ExportedProgram]]:
    """A KV-cache decoder (`build_kv_llama`, index_put updates) under `scheme` and its
    export as two methods: `prefill` over `prompt` and a one-token `decode` (once per
    process: the model too is shared, deep-copy it before running it)."""
    return _kv_decoder(tuple(sorted(config.items())), tuple(prompt), scheme)


@functools.cache
def _kv_decoder(
    config: tuple[tuple[str, int], ...], prompt: tuple[int, ...], scheme: str
) -> tuple[torch.nn.Module, dict[str, ExportedProgram]]:
    example = (torch.tensor([prompt]), torch.arange(len(prompt)))
    model = apply_scheme(build_kv_llama(update="index_put", **dict(config)), scheme, example)
    with torch.no_grad():
        return model, {
            "prefill": torch.export.export(copy.deepcopy(model), example, strict=False),
            "decode": torch.export.export(
                copy.deepcopy(model), (torch.tensor([[1]]), torch.tensor([0])), strict=False
            ),
        }


def kv_decoder_methods(
    config: dict[str, int], prompt: list[int], scheme: str
) -> dict[str, ExportedProgram]:
    """`kv_decoder`'s two exported methods."""
    return kv_decoder(config, prompt, scheme)[1]


def kv_decoder_bytes(config: dict[str, int], prompt: list[int], scheme: str) -> bytes:
    """`kv_decoder`'s methods compiled for Vulkan: the `.qvk` bytes, once per process."""
    return _kv_decoder_bytes(tuple(sorted(config.items())), tuple(prompt), scheme)


@functools.cache
def _kv_decoder_bytes(
    config: tuple[tuple[str, int], ...], prompt: tuple[int, ...], scheme: str
) -> bytes:
    methods = _kv_decoder(config, prompt, scheme)[1]
    return qopt.compile(methods, target="vulkan").to_bytes()


def process_tempdir(prefix: str) -> str:
    """A folder for what this test process caches on disk (packages written once and read
    by several tests), removed when the process exits (a bare `tempfile.mkdtemp` at module
    level left one behind per run and worker)."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, True)
    return path
