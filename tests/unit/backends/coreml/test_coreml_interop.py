"""coremltools interop: every kind of package qopt writes is one coremltools' own
tools take as theirs.

Packages: the built-in MLP (float) and Llama (w4g32), a zoo sample (ViT: linear,
layer_norm, gelu, scaled_dot_product_attention), a stateful KV-cache decoder and a
multifunction one (prefill + decode sharing weights and states), all at qopt's
defaults (fp16 compute, iOS18). Each loads into coremltools' MIL
(`coremltools.converters.mil.frontend.milproto.load`, which builds every op and
runs its type inference) with the types the spec declares, and opens as
`ct.models.MLModel(path, skip_model_load=True)`. A float package goes through
`ct.optimize.coreml.linear_quantize_weights` and `palettize_weights`,
`ct.utils.rename_feature` and coremltools' metadata / description setters, and
what comes out is read back and interpreted by qopt. `artifact.mlmodel` is that
`MLModel`. Packages carry auditable metadata (qopt's version, the source program's
SHA-256, each weight's compression) and two compiles give identical bytes.
"""

from __future__ import annotations

import copy
import functools
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from shared_exports import exported, process_tempdir
from xdsl.dialects.func import FuncOp

import qopt
from qopt.backends.coreml.reader import (
    SOURCE_HASH_METADATA,
    VERSION_METADATA,
    WEIGHTS_METADATA,
)
from qopt.examples import build_kv_llama, random_inputs
from qopt.version import qopt_version

ct = pytest.importorskip("coremltools")
_TMP = process_tempdir("qopt-coreml-interop-")
KV: dict[str, Any] = {"vocab_size": 64, "dim": 32, "n_layers": 1, "n_heads": 4, "hidden_dim": 64,
      "max_seq_len": 16}  # fmt: skip


def _kv_exports() -> dict[str, torch.export.ExportedProgram]:
    model = build_kv_llama(**KV)
    with torch.no_grad():
        decode = torch.export.export(
            copy.deepcopy(model), (torch.tensor([[3]]), torch.tensor([5])), strict=False
        )
        prefill = torch.export.export(
            copy.deepcopy(model), (torch.tensor([[1, 2, 3, 4]]), torch.arange(4)), strict=False
        )
    return {"prefill": prefill, "decode": decode}


@functools.cache
def program(kind: str) -> Any:
    """The exported program (or programs by method) of one package kind."""
    if kind == "mlp_float":
        return exported("mlp", "float")
    if kind == "llama_w4g32":
        return exported("llama", "w4g32")
    if kind == "zoo_vit":
        from qopt import zoo

        return zoo.export("vit", "float")[0]
    if kind == "stateful":
        return _kv_exports()["decode"]
    if kind == "multifunction":
        return _kv_exports()
    raise ValueError(kind)


KINDS = ["mlp_float", "llama_w4g32", "zoo_vit", "stateful", "multifunction"]


@functools.cache
def package(kind: str) -> str:
    return qopt.compile(program(kind), target="coreml").save(os.path.join(_TMP, kind))


def _mil_dtype(proto_type: Any) -> str:
    from coremltools.proto import FeatureTypes_pb2

    array: Any = FeatureTypes_pb2.ArrayFeatureType  # protobuf's enum values, made at run time
    names = {array.FLOAT32: "fp32", array.FLOAT16: "fp16", array.INT32: "int32"}
    return names[proto_type.multiArrayType.dataType]


@pytest.mark.parametrize("kind", KINDS)
def test_package_loads_into_coremltools_mil(kind: str) -> None:
    """coremltools' milproto frontend rebuilds the package's Program op by op (each
    op's type inference runs as it is built); its functions, inputs and outputs are
    the spec's, with the types the spec declares."""
    from coremltools.converters.mil.frontend.milproto import load as milproto
    from coremltools.converters.mil.mil import types

    mlmodel = ct.models.MLModel(package(kind), skip_model_load=True)
    spec = mlmodel.get_spec()
    prog = milproto.load(spec, spec.specificationVersion, file_weights_dir=mlmodel.weights_dir)
    prog.validate()
    assert set(prog.functions) == set(spec.mlProgram.functions)
    for function in spec.description.functions or [spec.description]:
        name = getattr(function, "name", "main")
        described = {o.name: o for o in function.output}
        for var in prog.functions[name].outputs:
            declared = described[var.name].type
            assert types.builtin_to_string(var.dtype) == _mil_dtype(declared), var.name
            assert list(var.shape) == list(declared.multiArrayType.shape), var.name
    # the same ops (coremltools makes a const for each parameter it reads inline, and
    # reads a `write_state` back as the `coreml_update_state` it was written from)
    ops = Counter(
        op.op_type for f in prog.functions.values() for op in f.operations if op.op_type != "const"
    )
    spec_ops = Counter(
        "coreml_update_state" if op.type == "write_state" else op.type
        for f in spec.mlProgram.functions.values()
        for block in f.block_specializations.values()
        for op in block.operations
        if op.type != "const"
    )
    assert ops == spec_ops
    if kind in ("stateful", "multifunction"):
        for function in spec.description.functions or [spec.description]:
            assert [s.name for s in function.state] == [
                "layers_0_attention_k_cache",
                "layers_0_attention_v_cache",
            ]


def _run(path: str, *inputs: Any) -> tuple[np.ndarray, ...]:
    return qopt.load(path)(*inputs)


def test_descriptions_and_metadata_set_by_coremltools() -> None:
    """`artifact.mlmodel` is the package as coremltools' MLModel: its metadata and
    description setters work, the package it saves is read back by qopt with the
    same results, and coremltools reads back what it wrote."""
    artifact = qopt.compile(program("mlp_float"), target="coreml")
    mlmodel = artifact.mlmodel
    assert mlmodel is artifact.mlmodel
    assert isinstance(mlmodel, ct.models.MLModel)
    assert mlmodel.user_defined_metadata[VERSION_METADATA] == qopt_version()
    mlmodel.author = "qopt tests"
    mlmodel.short_description = "a tiny MLP"
    mlmodel.user_defined_metadata["team"] = "ml"
    mlmodel.input_description["x"] = "features"
    (output,) = [o.name for o in mlmodel.get_spec().description.output]
    mlmodel.output_description[output] = "scores"
    path = os.path.join(_TMP, "described.mlpackage")
    mlmodel.save(path)
    back = ct.models.MLModel(path, skip_model_load=True)
    assert back.short_description == "a tiny MLP"
    assert back.author == "qopt tests"
    assert back.user_defined_metadata["team"] == "ml"
    assert back.input_description["x"] == "features"
    assert back.output_description[output] == "scores"
    inputs = random_inputs("mlp", 3)
    np.testing.assert_array_equal(_run(path, *inputs)[0], artifact(*inputs)[0])
    loaded = qopt.load(path).mlmodel  # a loaded package's MLModel is the package
    assert loaded.short_description == "a tiny MLP"


def test_rename_feature() -> None:
    """`ct.utils.rename_feature` on the spec renames the input and the output; the
    package saved from it runs the same under the new names."""
    mlmodel = ct.models.MLModel(package("mlp_float"), skip_model_load=True)
    spec = mlmodel.get_spec()
    (output,) = [o.name for o in spec.description.output]
    ct.utils.rename_feature(spec, "x", "features")
    ct.utils.rename_feature(spec, output, "scores")
    path = os.path.join(_TMP, "renamed.mlpackage")
    ct.models.MLModel(spec, weights_dir=mlmodel.weights_dir, skip_model_load=True).save(path)
    module = qopt.read_mlpackage(path)
    (func,) = [op for op in module.ops if isinstance(op, FuncOp)]
    assert [a.name_hint for a in func.body.block.args] == ["features"]
    assert qopt.load(path).output_names == ["scores"]
    inputs = random_inputs("mlp", 4)
    np.testing.assert_array_equal(_run(path, *inputs)[0], _run(package("mlp_float"), *inputs)[0])


def _rel(got: np.ndarray, want: np.ndarray) -> float:
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.linalg.norm(g - w) / np.linalg.norm(w))


@pytest.mark.parametrize(
    ("optimize", "mil_op", "tolerance"),
    [
        # int8 per-channel weights: rounding to 1/255 of each row's range (measured
        # 6.7e-3 against the fp16 package)
        ("linear_quantize_weights", "coreml.constexpr_blockwise_shift_scale", 2e-2),
        # a 64-entry k-means palette per tensor: coarser (measured 2.6e-2)
        ("palettize_weights", "coreml.constexpr_lut_to_dense", 1e-1),
    ],
)
def test_coremltools_optimize_on_a_float_package(
    optimize: str, mil_op: str, tolerance: float
) -> None:
    """`ct.optimize.coreml` compresses a qopt float package: the result is read back
    by qopt, holds the compression op, and stays within the scheme's error of the
    float package."""
    opt = ct.optimize.coreml
    config = (
        opt.OpLinearQuantizerConfig(mode="linear_symmetric", dtype="int8")
        if optimize == "linear_quantize_weights"
        else opt.OpPalettizerConfig(mode="kmeans", nbits=6)
    )
    mlmodel = ct.models.MLModel(package("mlp_float"), skip_model_load=True)
    compressed = getattr(opt, optimize)(mlmodel, opt.OptimizationConfig(global_config=config))
    path = os.path.join(_TMP, f"{optimize}.mlpackage")
    compressed.save(path)
    assert mil_op in {op.name for op in qopt.read_mlpackage(path).walk()}
    inputs = random_inputs("mlp", 5)
    want = _run(package("mlp_float"), *inputs)[0]
    err = _rel(_run(path, *inputs)[0], want)
    print(f"{optimize}: relative L2 error {err:.2e} against the float package")
    assert 0 < err < tolerance, err


def _files(path: str) -> dict[str, bytes]:
    root = Path(path)
    return {
        str(f.relative_to(root)): f.read_bytes() for f in sorted(root.rglob("*")) if f.is_file()
    }


def test_metadata_is_auditable_and_reproducible() -> None:
    """The package records qopt's version, the SHA-256 of the program it was compiled
    from and each weight's compression by layer name; two compiles of the same
    program write identical bytes, another program another hash."""
    first = qopt.compile(program("llama_w4g32"), target="coreml").save(
        os.path.join(_TMP, "first.mlpackage")
    )
    second = qopt.compile(program("llama_w4g32"), target="coreml").save(
        os.path.join(_TMP, "second.mlpackage")
    )
    assert _files(first) == _files(second)
    meta = ct.models.MLModel(first, skip_model_load=True).user_defined_metadata
    assert meta[VERSION_METADATA] == qopt_version()
    assert len(meta[SOURCE_HASH_METADATA]) == 64
    weights = json.loads(meta[WEIGHTS_METADATA])
    assert weights["layers.0.attention.wq"] == (
        "int4 blockwise shift/scale [64, 64], block [1, 32], fp16 scales"
    )
    assert weights["tok_embeddings"].startswith("int4 blockwise shift/scale [256, 64]")
    float_meta = ct.models.MLModel(package("mlp_float"), skip_model_load=True)
    float_weights = json.loads(float_meta.user_defined_metadata[WEIGHTS_METADATA])
    assert float_weights["fc1"] == "fp16 [128, 64]"
    other = float_meta.user_defined_metadata[SOURCE_HASH_METADATA]
    assert other != meta[SOURCE_HASH_METADATA]
