"""`read_mlpackage` on untrusted packages: crafted `.mlpackage`s are refused.

One real package (mlp, w4g32) is written once; each case copies it, edits the
manifest, the protobuf spec (through `coremltools.proto.Model_pb2`) or the
MILBlob weight file, and must get one `QoptError` line naming the package,
quickly, without allocating much (tracemalloc peak < 64 MiB) and without opening
any file outside the package (every `os.open`/`open` during the read is
recorded). Files outside the package that a case points at are copies of the
package's own spec and weights, so following such a path would *succeed*: the
case would then fail on the missing error.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import os
import shutil
import struct
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import qopt
from qopt.backends.coreml.reader import (
    MAX_ELEMENTS,
    MAX_MANIFEST_BYTES,
    MAX_PARAM_ENTRIES,
    MAX_SPEC_BYTES,
    read_mlpackage,
)
from qopt.examples import export_model, random_inputs

MODEL_DIR = Path("Data") / "com.apple.CoreML"
SPEC = MODEL_DIR / "model.mlmodel"
WEIGHTS = MODEL_DIR / "weights" / "weight.bin"
PEAK_BYTES = 64 << 20
SECONDS = 5.0


def rel_err(got: np.ndarray, want: np.ndarray) -> float:
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30))


# ----- the package and the edits -----------------------------------------------------


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real package, read once (which also warms coremltools' imports up)."""
    root = tmp_path_factory.mktemp("untrusted")
    path = root / "base.mlpackage"
    qopt.compile(export_model("mlp", "w4g32"), target="coreml", compute_precision="fp32").save(
        str(path)
    )
    read_mlpackage(path)
    NAMES.update(_names(spec_of(path)))
    # Outside the package: copies of its own files (following a path there would work).
    outside = root / "outside"
    outside.mkdir()
    shutil.copy(path / SPEC, outside / "model.mlmodel")
    shutil.copy(path / WEIGHTS, outside / "weight.bin")
    return path


@pytest.fixture
def pkg(base: Path, tmp_path: Path) -> Path:
    """A fresh copy of the package to edit; its parent also holds `outside/`."""
    path = tmp_path / "crafted.mlpackage"
    shutil.copytree(base, path, symlinks=True)
    shutil.copytree(base.parent / "outside", tmp_path / "outside")
    return path


def spec_of(pkg: Path) -> Any:
    from coremltools.proto import Model_pb2

    spec = Model_pb2.Model()
    spec.ParseFromString((pkg / SPEC).read_bytes())
    return spec


def edit_spec(pkg: Path, edit: Callable[[Any], None]) -> None:
    spec = spec_of(pkg)
    edit(spec)
    (pkg / SPEC).write_bytes(spec.SerializeToString())


def main_block(spec: Any) -> Any:
    function = spec.mlProgram.functions["main"]
    return function.block_specializations[function.opset]


#: Output names of the ops the tests edit, found in the base package (op names follow
#: the IR's value names, which depend on what the process compiled before).
NAMES: dict[str, str] = {}


def _names(spec: Any) -> dict[str, str]:
    ops = list(main_block(spec).operations)
    linears = [op.outputs[0].name for op in ops if op.type == "linear"]
    (blob,) = [
        op.outputs[0].name
        for op in ops
        if op.type == "const"
        and op.attributes["val"].WhichOneof("value") == "blobFileValue"
        and op.attributes["val"].blobFileValue.offset == 64
    ]
    relu = next(op.outputs[0].name for op in ops if op.type == "relu")
    return {"const": blob, "linear": linears[0], "linear_2": linears[1], "relu": relu}


def op_named(spec: Any, name: str) -> Any:
    return next(op for op in main_block(spec).operations if op.outputs[0].name == name)


def blob_values(spec: Any) -> Iterator[Any]:
    """Every proto `Value` stored in a blob file, in op order."""
    for op in main_block(spec).operations:
        for value in op.attributes.values():
            if value.WhichOneof("value") == "blobFileValue":
                yield value
        for arg in op.inputs.values():
            for binding in arg.arguments:
                if binding.WhichOneof("binding") == "value":
                    if binding.value.WhichOneof("value") == "blobFileValue":
                        yield binding.value


def first_blob(spec: Any) -> Any:
    """The first bias's value: 128 float32 stored at record offset 64 of weight.bin."""
    value = op_named(spec, NAMES["const"]).attributes["val"]
    assert value.blobFileValue.offset == 64
    return value


def set_blob_files(name: str) -> Callable[[Any], None]:
    def edit(spec: Any) -> None:
        for value in blob_values(spec):
            value.blobFileValue.fileName = name

    return edit


def patch_weights(pkg: Path, offset: int, fmt: str, *values: int) -> None:
    raw = bytearray((pkg / WEIGHTS).read_bytes())
    struct.pack_into(fmt, raw, offset, *values)
    (pkg / WEIGHTS).write_bytes(bytes(raw))


def relink(link: Path, target: str | Path) -> None:
    link.unlink()
    link.symlink_to(target)


def write_manifest(pkg: Path, text: str) -> None:
    (pkg / "Manifest.json").write_text(text)


def root_item_path(pkg: Path, path: str) -> None:
    import json

    manifest = json.loads((pkg / "Manifest.json").read_text())
    manifest["itemInfoEntries"][manifest["rootModelIdentifier"]]["path"] = path
    write_manifest(pkg, json.dumps(manifest))


# ----- the check --------------------------------------------------------------------


def refused(pkg: Path, *needles: str) -> str:
    """Read `pkg`: one QoptError line naming it (and `needles`), fast, small, inside."""
    opened: list[str] = []
    real_os_open, real_open = os.open, builtins.open

    def spy_os_open(path: Any, *args: Any, **kwargs: Any) -> int:
        opened.append(os.fspath(path))
        return real_os_open(path, *args, **kwargs)

    def spy_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, str | bytes | os.PathLike):
            opened.append(os.fsdecode(file))
        return real_open(file, *args, **kwargs)

    os.open, builtins.open = spy_os_open, spy_open  # type: ignore[assignment]
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(qopt.QoptError) as info:
            read_mlpackage(pkg)
    finally:
        elapsed = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        os.open, builtins.open = real_os_open, real_open  # type: ignore[assignment]
    message = str(info.value)
    assert "\n" not in message, message
    assert "\r" not in message, message
    assert message.startswith(f"read_mlpackage: {pkg}: "), message
    for needle in needles:
        assert needle in message, (needle, message)
    assert peak < PEAK_BYTES, (peak, message)
    assert elapsed < SECONDS, (elapsed, message)
    root = os.path.realpath(pkg)
    for path in opened:
        real = os.path.realpath(path)
        assert real == root or real.startswith(root + os.sep), (path, message)
    return message


# ----- the legitimate packages still read -------------------------------------------


def test_base_package_reads_and_runs(base: Path) -> None:
    ep = export_model("mlp", "w4g32")
    inputs = random_inputs("mlp", 11)
    want = ep.module()(*inputs).detach().numpy()
    got = qopt.interpret(read_mlpackage(base), *inputs)[0]
    assert rel_err(got, want) < 1e-4


def test_symlinks_inside_the_package_are_followed(pkg: Path) -> None:
    """A symlink that stays inside the package is fine (only escapes are refused)."""
    weights = pkg / WEIGHTS
    moved = pkg / "Data" / "elsewhere.bin"
    weights.rename(moved)
    weights.symlink_to(os.path.relpath(moved, weights.parent))
    inputs = random_inputs("mlp", 3)
    got = qopt.interpret(read_mlpackage(pkg), *inputs)[0]
    ep = export_model("mlp", "w4g32")
    assert rel_err(got, ep.module()(*inputs).detach().numpy()) < 1e-4


def test_a_package_coremltools_wrote_reads(tmp_path: Path) -> None:
    """Blob-stored fp32 and int4 constants, fp16 and int8 immediates (coremltools' writer)."""
    import coremltools as ct
    from coremltools.converters.mil import Builder as mb
    from coremltools.converters.mil.mil import types

    rng = np.random.default_rng(0)
    data = rng.integers(-8, 8, (24, 32)).astype(np.int8)
    scale = rng.random((24, 1)).astype(np.float32)
    bias = rng.random(24).astype(np.float32)

    @mb.program(input_specs=[mb.TensorSpec(shape=(2, 32), dtype=types.fp32)],
                opset_version=ct.target.iOS18)  # fmt: skip
    def prog(x: Any) -> Any:
        w = mb.constexpr_blockwise_shift_scale(
            data=data.astype(types.nptype_from_builtin(types.int4)), scale=scale
        )
        return mb.relu(x=mb.linear(x=x, weight=w, bias=bias))

    path = tmp_path / "coremltools.mlpackage"
    ct.convert(prog, convert_to="mlprogram", skip_model_load=True,
               minimum_deployment_target=ct.target.iOS18,
               compute_precision=ct.precision.FLOAT32).save(str(path))  # fmt: skip
    x = rng.standard_normal((2, 32)).astype(np.float32)
    want = np.maximum(x @ (data * scale).T + bias, 0)
    got = qopt.interpret(read_mlpackage(path), x)[0]
    assert rel_err(got, want) < 1e-5


# ----- blob file names ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("@model_path/../../../dev/zero", "'..'"),
        ("@model_path/../../../../../../../../../../dev/zero", "'..'"),
        ("/etc/passwd", "not @model_path/"),
        ("/dev/zero", "not @model_path/"),
        ("@model_path//etc/passwd", "absolute path"),
        ("@model_path/../../../outside/weight.bin", "'..'"),
        ("@model_path/weights/../../../../outside/weight.bin", "'..'"),
        ("@model_path/", "empty path"),
        ("@model_path/weights", "not a regular file"),
        ("@model_path/weights/missing.bin", "No such file"),
    ],
)
def test_blob_file_names(pkg: Path, name: str, needle: str) -> None:
    edit_spec(pkg, set_blob_files(name))
    refused(pkg, needle, "refused" if needle != "No such file" else "cannot read")


@pytest.mark.parametrize("target", ["/etc/passwd", "/dev/zero", "OUTSIDE"])
def test_blob_file_symlink_leaving_the_package(pkg: Path, target: str) -> None:
    link_to = pkg.parent / "outside" / "weight.bin" if target == "OUTSIDE" else target
    relink(pkg / WEIGHTS, link_to)
    refused(pkg, "resolves outside the package", "refused")


def test_blob_file_directory_symlink_leaving_the_package(pkg: Path) -> None:
    weights_dir = pkg / MODEL_DIR / "weights"
    shutil.rmtree(weights_dir)
    weights_dir.symlink_to(pkg.parent / "outside")
    refused(pkg, "resolves outside the package")


def test_blob_file_fifo(pkg: Path) -> None:
    (pkg / WEIGHTS).unlink()
    os.mkfifo(pkg / WEIGHTS)
    refused(pkg, "not a regular file")


# ----- the manifest ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("item", "needle"),
    [
        ("../../outside/model.mlmodel", "'..'"),
        ("com.apple.CoreML/../../../outside/model.mlmodel", "'..'"),
        ("ABSOLUTE", "absolute path"),
        ("/dev/zero", "absolute path"),
        ("com.apple.CoreML/missing.mlmodel", "No such file"),
        ("com.apple.CoreML", "not a regular file"),
        ("", "empty path"),
    ],
)
def test_manifest_root_item_path(pkg: Path, item: str, needle: str) -> None:
    if item == "ABSOLUTE":
        item = str(pkg.parent / "outside" / "model.mlmodel")
    root_item_path(pkg, item)
    refused(pkg, "Manifest.json", needle)


@pytest.mark.parametrize("target", ["/dev/zero", "OUTSIDE"])
def test_manifest_root_item_symlink(pkg: Path, target: str) -> None:
    link_to = pkg.parent / "outside" / "model.mlmodel" if target == "OUTSIDE" else target
    relink(pkg / SPEC, link_to)
    refused(pkg, "resolves outside the package")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("{not json", "not valid JSON"),
        ("[" * 200_000, "not valid JSON"),
        ("[1, 2]", "not a JSON object"),
        ("\xff\xfe garbage", "not valid JSON"),
        ('{"fileFormatVersion": "1.0.0"}', "no itemInfoEntries"),
        ('{"fileFormatVersion": "9.0.0", "itemInfoEntries": {}}', "fileFormatVersion"),
        ('{"fileFormatVersion": "1.0.0", "itemInfoEntries": {}, "rootModelIdentifier": "x"}',
         "names no item"),
        ('{"fileFormatVersion": "1.0.0", "itemInfoEntries": {"x": 3}, "rootModelIdentifier": "x"}',
         "has no path"),
        ('{"fileFormatVersion": "1.0.0", "itemInfoEntries": {"x": {"path": 7}}, '
         '"rootModelIdentifier": "x"}', "has no path"),
    ],
)  # fmt: skip
def test_manifest_malformed(pkg: Path, text: str, needle: str) -> None:
    write_manifest(pkg, text)
    refused(pkg, "Manifest.json", needle)


def test_manifest_huge(pkg: Path) -> None:
    with open(pkg / "Manifest.json", "r+b") as f:
        f.seek(MAX_MANIFEST_BYTES + 1)
        f.write(b" ")
    refused(pkg, "Manifest.json", "more than the limit")


def test_manifest_missing(pkg: Path) -> None:
    (pkg / "Manifest.json").unlink()
    refused(pkg, "Manifest.json", "No such file")


@pytest.mark.parametrize("target", ["/dev/zero", "/etc/passwd"])
def test_manifest_symlink_leaving_the_package(pkg: Path, target: str) -> None:
    relink(pkg / "Manifest.json", target)
    refused(pkg, "Manifest.json resolves outside the package")


# ----- the spec ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["truncated", "random", "text", "empty"])
def test_spec_not_protobuf(pkg: Path, kind: str) -> None:
    raw = (pkg / SPEC).read_bytes()
    content = {
        "truncated": raw[: len(raw) // 2],
        "random": np.random.default_rng(1).integers(0, 256, 4096, np.uint8).tobytes(),
        "text": b"this is not a protobuf spec\n" * 10,
        "empty": b"",
    }[kind]
    (pkg / SPEC).write_bytes(content)
    refused(pkg)


def test_spec_huge(pkg: Path) -> None:
    with open(pkg / SPEC, "r+b") as f:
        f.truncate(MAX_SPEC_BYTES + 1)  # sparse: nothing is written
    refused(pkg, "the root model", "more than the limit")


def test_spec_unknown_opset(pkg: Path) -> None:
    def edit(spec: Any) -> None:
        function = spec.mlProgram.functions["main"]
        block = function.block_specializations[function.opset]
        function.block_specializations["CoreML99"].CopyFrom(block)
        function.opset = "CoreML99"

    edit_spec(pkg, edit)
    refused(pkg, "opset 'CoreML99'")


# ----- blob records ------------------------------------------------------------------


@pytest.mark.parametrize("offset", ["end", 2**64 - 1, 0, 32])
def test_blob_record_offset_outside(pkg: Path, offset: Any) -> None:
    size = (pkg / WEIGHTS).stat().st_size
    value = size + 1000 if offset == "end" else offset

    def edit(spec: Any) -> None:
        first_blob(spec).blobFileValue.offset = value

    edit_spec(pkg, edit)
    refused(pkg, NAMES["const"], "the record lies outside the file")


def test_blob_data_offset_past_the_end(pkg: Path) -> None:
    size = (pkg / WEIGHTS).stat().st_size
    patch_weights(pkg, 64 + 16, "<Q", size - 100)  # 512 bytes from 100 before the end
    refused(pkg, NAMES["const"], "lies outside the file")


@pytest.mark.parametrize("data_offset", [0, 8, 2**64 - 1])
def test_blob_data_offset_bad(pkg: Path, data_offset: int) -> None:
    patch_weights(pkg, 64 + 16, "<Q", data_offset)
    refused(pkg, NAMES["const"], "lies outside the file")


@pytest.mark.parametrize("size", [2**64 - 1, 2**63, 511, 513])
def test_blob_size(pkg: Path, size: int) -> None:
    patch_weights(pkg, 64 + 8, "<Q", size)
    refused(pkg, NAMES["const"], "needs 512")


def test_blob_sentinel(pkg: Path) -> None:
    patch_weights(pkg, 64, "<I", 0xCAFEBABE)
    refused(pkg, NAMES["const"], "sentinel 0xcafebabe")


@pytest.mark.parametrize("code", [1, 3, 14, 99])
def test_blob_dtype_code(pkg: Path, code: int) -> None:
    patch_weights(pkg, 64 + 4, "<I", code)
    refused(pkg, NAMES["const"], f"dtype code {code}", "declared FLOAT32")


def test_blob_storage_version(pkg: Path) -> None:
    patch_weights(pkg, 4, "<I", 7)
    refused(pkg, NAMES["const"], "storage version 7")


def test_blob_file_shorter_than_its_header(pkg: Path) -> None:
    (pkg / WEIGHTS).write_bytes(b"\0" * 10)
    refused(pkg, NAMES["const"], "shorter than its 64-byte header")


def test_overlapping_blobs_cannot_amplify(pkg: Path) -> None:
    """Many records over overlapping data would decode far more than the file holds."""
    raw = bytearray((pkg / WEIGHTS).read_bytes())
    first = len(raw)
    copies = len(raw) // 512 + 2
    for i in range(copies):  # 512-byte float32 blobs starting 4 bytes apart
        raw += struct.pack("<IIQQ", 0xDEADBEEF, 2, 512, 128 + 4 * i) + bytes(40)
    (pkg / WEIGHTS).write_bytes(bytes(raw))

    def edit(spec: Any) -> None:
        ops = main_block(spec).operations
        template = op_named(spec, NAMES["const"])
        for i in range(copies):
            op = ops.add()
            op.CopyFrom(template)
            op.outputs[0].name = f"copy_{i}"
            op.attributes["val"].blobFileValue.offset = first + 64 * i

    edit_spec(pkg, edit)
    refused(pkg, "copy_", "overlap")


# ----- shapes ------------------------------------------------------------------------


def set_dims(value: Any, dims: list[int]) -> None:
    tensor = value.type.tensorType
    del tensor.dimensions[:]
    for d in dims:
        tensor.dimensions.add().constant.size = d
    tensor.rank = len(dims)


@pytest.mark.parametrize(
    ("dims", "needle"),
    [
        ([10**6, 10**6], f"more than {MAX_ELEMENTS} elements"),
        ([1000, 1000], "needs 4000000"),
        ([2**64 - 1], f"more than {MAX_ELEMENTS}"),
        ([2**40, 0], f"more than {MAX_ELEMENTS}"),
        ([1] * 17, "rank 17"),
        ([64], "needs 256"),
    ],
)
def test_const_declared_shape(pkg: Path, dims: list[int], needle: str) -> None:
    edit_spec(pkg, lambda spec: set_dims(first_blob(spec), dims))
    refused(pkg, NAMES["const"], needle)


def test_const_unknown_dim(pkg: Path) -> None:
    def edit(spec: Any) -> None:
        first_blob(spec).type.tensorType.dimensions[0].unknown.variadic = False

    edit_spec(pkg, edit)
    refused(pkg, NAMES["const"], "qopt reads fixed shapes")


def test_input_unknown_dim(pkg: Path) -> None:
    def edit(spec: Any) -> None:
        spec.mlProgram.functions["main"].inputs[0].type.tensorType.dimensions[
            0
        ].unknown.SetInParent()

    edit_spec(pkg, edit)
    refused(pkg, "input 'x'", "qopt reads fixed shapes")


def test_input_rank_mismatch(pkg: Path) -> None:
    def edit(spec: Any) -> None:
        spec.mlProgram.functions["main"].inputs[0].type.tensorType.rank = -1

    edit_spec(pkg, edit)
    refused(pkg, "input 'x'", "unknown rank")


def test_op_result_huge(pkg: Path) -> None:
    edit_spec(pkg, lambda spec: set_dims(op_named(spec, NAMES["relu"]).outputs[0], [2**20, 2**20]))
    refused(pkg, "relu 'relu'", f"more than {MAX_ELEMENTS} elements")


def test_immediate_value_count(pkg: Path) -> None:
    def edit(spec: Any) -> None:
        value = first_blob(spec)
        value.ClearField("blobFileValue")
        value.immediateValue.tensor.floats.values.extend([1.0, 2.0, 3.0])  # declared 128

    edit_spec(pkg, edit)
    refused(pkg, NAMES["const"], "holds 3 values", "needs 128")


def test_immediate_bytes_length(pkg: Path) -> None:
    from coremltools.proto import MIL_pb2

    def edit(spec: Any) -> None:
        value = first_blob(spec)
        value.type.tensorType.dataType = MIL_pb2.FLOAT16
        value.ClearField("blobFileValue")
        value.immediateValue.tensor.bytes.values = b"\0" * 10  # declared 128 fp16: 256 bytes

    edit_spec(pkg, edit)
    refused(pkg, NAMES["const"], "holds 10 bytes", "needs 256")


def test_unknown_data_type(pkg: Path) -> None:
    def edit(spec: Any) -> None:
        first_blob(spec).type.tensorType.dataType = 999

    edit_spec(pkg, edit)
    refused(pkg, NAMES["const"], "unknown MIL data type 999")


# ----- op structure ------------------------------------------------------------------


def test_input_names_an_undefined_value(pkg: Path) -> None:
    def edit(spec: Any) -> None:
        op_named(spec, NAMES["linear"]).inputs["x"].arguments[0].name = "nowhere"

    edit_spec(pkg, edit)
    refused(pkg, f"linear '{NAMES['linear']}'", "'nowhere', which is not defined")


def test_input_names_a_later_value(pkg: Path) -> None:
    def edit(spec: Any) -> None:
        op_named(spec, NAMES["linear"]).inputs["x"].arguments[0].name = NAMES["linear_2"]

    edit_spec(pkg, edit)
    refused(pkg, f"linear '{NAMES['linear']}'", f"'{NAMES['linear_2']}', which is not defined")


def test_missing_function_output(pkg: Path) -> None:
    def edit(spec: Any) -> None:
        main_block(spec).outputs[0] = "ghost"

    edit_spec(pkg, edit)
    refused(pkg, "output 'ghost'")


def test_no_function_outputs(pkg: Path) -> None:
    edit_spec(pkg, lambda spec: main_block(spec).ClearField("outputs"))
    refused(pkg, "no outputs")


def test_op_output_missing(pkg: Path) -> None:
    edit_spec(pkg, lambda spec: op_named(spec, NAMES["relu"]).ClearField("outputs"))
    refused(pkg, "relu '<no output>'", "has 0 outputs")


def test_op_output_unnamed(pkg: Path) -> None:
    def edit(spec: Any) -> None:
        op_named(spec, NAMES["relu"]).outputs[0].name = ""

    edit_spec(pkg, edit)
    refused(pkg, "no name")


def test_op_output_defined_twice(pkg: Path) -> None:
    def edit(spec: Any) -> None:
        op_named(spec, NAMES["relu"]).outputs[0].name = NAMES["linear"]

    edit_spec(pkg, edit)
    refused(pkg, f"relu '{NAMES['linear']}'", "defined twice")


def test_missing_required_input(pkg: Path) -> None:
    edit_spec(pkg, lambda spec: op_named(spec, NAMES["linear"]).inputs.pop("x"))
    refused(pkg, f"linear '{NAMES['linear']}'", "input 'x' is missing")


def test_wrong_arity(pkg: Path) -> None:
    def edit(spec: Any) -> None:
        arguments = op_named(spec, NAMES["linear"]).inputs["x"].arguments
        arguments.add().name = "x"

    edit_spec(pkg, edit)
    refused(pkg, f"linear '{NAMES['linear']}'", "input 'x' has 2 arguments")


def test_const_without_value(pkg: Path) -> None:
    edit_spec(pkg, lambda spec: op_named(spec, NAMES["const"]).attributes.pop("val"))
    refused(pkg, f"const '{NAMES['const']}'", "no 'val' attribute")


def test_parameter_of_the_wrong_kind(pkg: Path) -> None:
    from coremltools.proto import MIL_pb2

    def edit(spec: Any) -> None:
        value = op_named(spec, "gelu_mode_0").attributes["val"]
        value.type.tensorType.dataType = MIL_pb2.INT32
        value.immediateValue.tensor.ints.values.append(3)

    edit_spec(pkg, edit)
    refused(pkg, "gelu 'gelu'", "parameter 'mode'", "expected a string")


def test_parameter_with_too_many_entries(pkg: Path) -> None:
    """A reshape whose `shape` lists a million entries (MIL parameters are <= 2 * rank)."""
    from coremltools.proto import MIL_pb2

    def edit(spec: Any) -> None:
        relu = op_named(spec, NAMES["relu"])
        op = main_block(spec).operations.add()
        op.type = "reshape"
        op.inputs["x"].arguments.add().name = "relu"
        shape = op.inputs["shape"].arguments.add().value
        set_dims(shape, [10**6])
        shape.type.tensorType.dataType = MIL_pb2.INT32
        shape.immediateValue.tensor.ints.values.extend([1] * 10**6)
        op.outputs.add().CopyFrom(relu.outputs[0])
        op.outputs[0].name = "reshaped"

    edit_spec(pkg, edit)
    refused(pkg, "reshape 'reshaped'", f"more than {MAX_PARAM_ENTRIES}")


def test_module_does_not_verify(pkg: Path) -> None:
    """The result type disagrees with the op's operands: the verifier's error, one line."""
    edit_spec(pkg, lambda spec: set_dims(op_named(spec, NAMES["relu"]).outputs[0], [4, 7]))
    refused(pkg, "relu 'relu'", "does not verify")


def test_names_with_newlines_stay_on_one_line(pkg: Path) -> None:
    def edit(spec: Any) -> None:
        op_named(spec, NAMES["linear"]).inputs["x"].arguments[0].name = "evil\nTraceback (most"

    edit_spec(pkg, edit)
    refused(pkg, "evil\\nTraceback")


def test_unknown_ops_listing_is_bounded(pkg: Path) -> None:
    def edit(spec: Any) -> None:
        ops = main_block(spec).operations
        for _ in range(30):
            ops.add().CopyFrom(ops[0])
        for i, op in enumerate(ops):
            op.type = f"weird_{i:03d}\n"

    edit_spec(pkg, edit)
    message = refused(pkg, "MIL ops qopt does not know", "weird_000\\n")
    assert "more" in message
    assert len(message) < 800


# ----- the command line --------------------------------------------------------------


def test_qopt_opt_reports_one_line(pkg: Path, tmp_path: Path) -> None:
    edit_spec(pkg, set_blob_files("@model_path/../../../dev/zero"))
    second = tmp_path / "second.mlpackage"
    shutil.copytree(pkg, second, symlinks=True)
    edit_spec(second, set_blob_files("@model_path/weights/weight.bin"))
    relink(second / WEIGHTS, "/etc/passwd")
    exe = os.path.join(os.path.dirname(sys.executable), "qopt-opt")
    # the first through the installed script (a real process), the second in process
    # (the same `main`, without another import of torch and coremltools)
    run = subprocess.run([exe, str(pkg)], capture_output=True, text=True, check=False)
    outcomes = [(pkg, "'..'", run.returncode, run.stdout, run.stderr)]
    from qopt.tools.qopt_opt import main

    out, err = io.StringIO(), io.StringIO()
    code: Any = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(second)])
        except SystemExit as e:
            code = e.code
    outcomes.append((second, "resolves outside the package", code, out.getvalue(), err.getvalue()))
    for path, needle, returncode, stdout, stderr in outcomes:
        assert returncode == 1, stderr
        errors = [line for line in stderr.splitlines() if line.startswith("qopt-opt: error:")]
        assert len(errors) == 1, stderr
        assert str(path) in errors[0], errors[0]
        assert needle in errors[0], errors[0]
        assert "Traceback" not in stderr
        assert stdout == ""
