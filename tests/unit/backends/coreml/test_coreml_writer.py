"""`save_program` writes through coremltools' own MIL-to-protobuf and package APIs without
`ct.convert`'s redundant steps (issue 14 item 5): the packages must be byte for byte the
ones that `ct.convert(...).save()` followed by qopt's metadata, manifest and file-mode
steps writes (the reference below, the emitter before the change), for a single-function
program with int4 weights and a multifunction one with states. The weights go into
weight.bin without coremltools' copy of each (`emitter._write_weight`): the same bytes as
coremltools' own `_get_offset_by_writing_data`, for every dtype it writes."""

from __future__ import annotations

import contextlib
import copy
import functools
import io
import os
import shutil
import tempfile
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch

import qopt
from qopt.backends.coreml import emitter
from qopt.backends.coreml.emitter import build_programs, package_metadata, save_program
from qopt.examples import apply_scheme, build_kv_llama
from qopt.files import default_modes

CONFIG = {"vocab_size": 64, "dim": 32, "n_layers": 1, "n_heads": 2, "hidden_dim": 64,
          "max_seq_len": 16}  # fmt: skip


def _reference_save(program: Any, path: str, target: Any, metadata: dict[str, str]) -> None:
    """The package as `ct.convert(...).save(path)` writes it, then qopt's steps."""
    import coremltools as ct

    def convert(prog: Any) -> Any:
        return ct.convert(
            prog,
            convert_to="mlprogram",
            skip_model_load=True,
            minimum_deployment_target=target,
            compute_precision=ct.precision.FLOAT32,
            pass_pipeline=ct.PassPipeline.EMPTY,
        )

    programs = program if isinstance(program, dict) else {"main": program}
    with contextlib.redirect_stderr(io.StringIO()):
        if len(programs) == 1:
            convert(next(iter(programs.values()))).save(path)
        else:
            tmp = tempfile.mkdtemp(prefix="qopt-reference-")
            try:
                desc = ct.utils.MultiFunctionDescriptor()
                for name, prog in programs.items():
                    single = os.path.join(tmp, f"{name}.mlpackage")
                    convert(prog).save(single)
                    desc.add_function(single, "main", name)
                desc.default_function_name = next(iter(programs))
                ct.utils.save_multifunction(desc, path)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    emitter._set_metadata(path, metadata)
    emitter._stable_manifest(path)
    default_modes(path)


def _files(path: str) -> dict[str, tuple[bytes, int]]:
    """Every file of a package: its bytes and mode, by relative path."""
    found: dict[str, tuple[bytes, int]] = {}
    for root, _, names in os.walk(path):
        for name in names:
            full = os.path.join(root, name)
            with open(full, "rb") as f:
                found[os.path.relpath(full, path)] = (f.read(), os.stat(full).st_mode)
    return found


def _one_or_all(programs: dict[str, Any]) -> Any:
    return programs if len(programs) > 1 else next(iter(programs.values()))


def _check_same_package(module: Any, tmp_path: Any) -> None:
    import coremltools as ct

    target = ct.target.iOS18
    metadata = package_metadata(module)
    new, old = str(tmp_path / "new.mlpackage"), str(tmp_path / "old.mlpackage")
    # Each writer gets Programs of its own: coremltools' backend passes rewrite them.
    programs = build_programs(module)
    save_program(_one_or_all(programs), new, target, metadata)
    programs = build_programs(module)
    _reference_save(_one_or_all(programs), old, target, metadata)
    new_files, old_files = _files(new), _files(old)
    assert sorted(new_files) == sorted(old_files)
    for name, (data, mode) in old_files.items():
        assert new_files[name][1] == mode, name
        assert new_files[name][0] == data, f"{name} differs from ct.convert's"
    # A second write in the same process is the same package (name counters reset).
    again = str(tmp_path / "again.mlpackage")
    programs = build_programs(module)
    save_program(_one_or_all(programs), again, target, metadata)
    assert _files(again) == new_files


@functools.cache
def _exported() -> tuple[Any, Any]:
    """A small KV-cache decoder under w4g32 (int4 weights, states): prefill and decode."""
    prompt = torch.tensor([[5, 9, 2, 7]])
    model = apply_scheme(
        build_kv_llama(update="index_copy", **CONFIG), "w4g32", (prompt, torch.arange(4))
    )
    with torch.no_grad():
        prefill = torch.export.export(copy.deepcopy(model), (prompt, torch.arange(4)), strict=False)
        decode = torch.export.export(
            copy.deepcopy(model), (torch.tensor([[1]]), torch.tensor([0])), strict=False
        )
    return prefill, decode


def test_single_function_package_is_ct_converts(tmp_path: Any) -> None:
    _, decode = _exported()
    _check_same_package(
        qopt.compile(decode, target="coreml", compute_precision="fp32").module, tmp_path
    )


def test_multifunction_package_is_ct_converts(tmp_path: Any) -> None:
    prefill, decode = _exported()
    artifact = qopt.compile(
        {"prefill": prefill, "decode": decode}, target="coreml", compute_precision="fp32"
    )
    _check_same_package(artifact.module, tmp_path)


def _weights() -> list[tuple[str, np.ndarray]]:
    """(MIL type, value) for each kind of weight the writer writes, some of them
    non-contiguous (a transposed or strided view) or of rank 3."""
    rng = np.random.default_rng(0)
    out: list[tuple[str, np.ndarray]] = [
        ("fp32", rng.standard_normal((6, 7), np.float32).T),
        ("fp16", rng.standard_normal((3, 4, 5)).astype(np.float16)),
        ("fp16", rng.standard_normal((8, 10)).astype(np.float16)[:, ::2]),
        ("int8", rng.integers(-128, 128, (5, 9), np.int8)),
        ("uint8", rng.integers(0, 256, (4, 6), np.uint8).T),
        ("int16", rng.integers(-(2**15), 2**15, (12,), np.int16)),
        ("uint16", rng.integers(0, 2**16, (3, 5), np.uint16)),
        ("int32", rng.integers(-(2**31), 2**31, (4, 4), np.int32)),
        ("uint32", rng.integers(0, 2**32, (11,), np.uint32)),
    ]
    for name, low, high in [("int4", -8, 8), ("uint1", 0, 2), ("uint2", 0, 4),
                            ("uint3", 0, 8), ("uint4", 0, 16), ("uint6", 0, 64)]:  # fmt: skip
        out.append((name, rng.integers(low, high, (6, 8)).astype(np.int8 if low else np.uint8)))
    out.append(("int4", rng.integers(-8, 8, (8, 6)).astype(np.int8).T))
    return out


def test_weights_written_in_place_are_coremltools_bytes(tmp_path: Any) -> None:
    emitter.ensure_coremltools()
    from coremltools.converters.mil.backend.mil import helper
    from coremltools.converters.mil.mil import types
    from coremltools.libmilstoragepython import _BlobStorageWriter as BlobWriter

    weights = _weights()
    files = {}
    for which in ("coremltools", "qopt"):
        path = str(tmp_path / f"{which}.bin")
        writer = BlobWriter(path)
        offsets = []
        for name, array in weights:
            var = SimpleNamespace(val=array, dtype=getattr(types, name))
            original = helper._get_offset_by_writing_data  # pyright: ignore[reportPrivateUsage]
            if which == "coremltools":
                offsets.append(original(var, writer))
            else:
                offsets.append(emitter._write_weight(var, writer, original))  # pyright: ignore[reportPrivateUsage]
        del writer  # flushed and closed
        with open(path, "rb") as f:
            files[which] = (offsets, f.read())
    assert files["qopt"] == files["coremltools"]
    # a value it has no writer for goes to coremltools' function (and its error)
    var = SimpleNamespace(val=np.zeros(12, np.float64), dtype=types.fp64)
    with pytest.raises(TypeError, match="Unsupported type"):
        emitter._write_weight(var, None, helper._get_offset_by_writing_data)  # pyright: ignore[reportPrivateUsage]
