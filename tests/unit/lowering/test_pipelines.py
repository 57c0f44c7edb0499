"""The pipelines are the one definition of each target's pass order, and the
command line reproduces the Python API with them.

`qopt-opt model.pt2 -p 'qopt-coreml{compute-precision=fp16}'` prints the IR of
`qopt.compile(ep, target="coreml", compute_precision="fp16").module`, and
`-t mlpackage` / `-t vkbundle` write what the API's `.save()` writes: the same
protobuf spec (compared as a message: coremltools' map fields serialize in no
fixed order, and the conversion date is the day's) and the same `weight.bin`
bytes for a `.mlpackage`, the same bytes for a `.qvk`; the two printouts are
compared as text, resource keys included. Both run in this process (qopt-opt by
its `main(argv)`); tests/unit/tools/test_report.py does the same for a w4g32 model
with every CoreML option given by name.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from qopt import QoptError
from qopt.lowering import get_all_passes
from qopt.lowering.pipelines import QoptCoremlPipeline, QoptVulkanPipeline

COREML_PIPELINE = "qopt-coreml{compute-precision=fp16}"


def test_pipelines_list_registered_passes() -> None:
    registered = get_all_passes()
    prepare = ["expand-dynamic-windows", "check-mid-level", "compose"]
    coreml = QoptCoremlPipeline(compute_precision="fp32").passes()
    assert [p.name for p in coreml] == [
        "fuse-quant",
        "fold-constants",
        "fuse-quant-fixpoint",
        "record-source-hash",
        *prepare,
        "convert-to-coreml",
        "coreml-canonicalize",
    ]
    fp16 = QoptCoremlPipeline(target="iOS17", states="io").passes()  # fp16: the default
    assert [p.name for p in fp16] == [
        "fuse-quant",
        "fold-constants",
        "fuse-quant-fixpoint",
        "record-source-hash",
        "externalize-states",
        *prepare,
        "convert-to-coreml",
        "coreml-canonicalize",
        "coreml-fp16",
    ]
    assert fp16[8].target == "iOS17"  # pyright: ignore[reportAttributeAccessIssue]
    assert fp16[8].prepare is False  # pyright: ignore[reportAttributeAccessIssue]
    vulkan = QoptVulkanPipeline().passes()
    assert [p.name for p in vulkan] == [
        "fuse-quant",
        "fold-constants",
        "fuse-quant-fixpoint",
        *prepare,
        "fold-constants",
        "convert-to-vkc",
        "vkc-fuse-elementwise",
        "vkc-fuse-norms",
        "vkc-merge-siblings",
        "vkc-fuse-row-quant",
        "vkc-fold-copies",
        "vkc-plan-buffers",
        "vkc-insert-barriers",
    ]
    assert vulkan[6].target == "vulkan"  # pyright: ignore[reportAttributeAccessIssue]
    assert vulkan[7].schedule is False  # pyright: ignore[reportAttributeAccessIssue]
    assert vulkan[7].prepare is False  # pyright: ignore[reportAttributeAccessIssue]
    unfused = QoptVulkanPipeline(fuse_elementwise=False).passes()
    assert "vkc-fuse-elementwise" not in [p.name for p in unfused]
    unnormed = QoptVulkanPipeline(fuse_norms=False).passes()
    assert "vkc-fuse-norms" not in [p.name for p in unnormed]
    unfolded = QoptVulkanPipeline(fold_copies=False).passes()
    assert "vkc-fold-copies" not in [p.name for p in unfolded]
    unmerged = QoptVulkanPipeline(merge_siblings=False).passes()
    assert "vkc-merge-siblings" not in [p.name for p in unmerged]
    unquantized = QoptVulkanPipeline(fuse_row_quant=False).passes()
    assert "vkc-fuse-row-quant" not in [p.name for p in unquantized]
    for sub_pass in (*fp16, *vulkan):
        assert registered[sub_pass.name]() is type(sub_pass)
    with pytest.raises(QoptError, match="compute_precision must be 'fp32' or 'fp16'"):
        QoptCoremlPipeline(compute_precision="fp8").passes()


def test_pipeline_options_parse_from_the_command_line_spec() -> None:
    from xdsl.utils.arg_spec import parse_pipeline

    (spec,) = parse_pipeline("qopt-coreml{target=iOS17 compute-precision=fp16}")
    pipeline = QoptCoremlPipeline.from_pass_spec(spec)
    assert (pipeline.target, pipeline.compute_precision) == ("iOS17", "fp16")
    (spec,) = parse_pipeline("qopt-vulkan{fuse-elementwise=false}")
    assert QoptVulkanPipeline.from_pass_spec(spec).fuse_elementwise is False
    (spec,) = parse_pipeline("qopt-vulkan{merge-siblings=false}")
    assert QoptVulkanPipeline.from_pass_spec(spec).merge_siblings is False


def opt(*argv: str | Path) -> str:
    """`qopt-opt argv` in process; its stdout (a failure is the test's)."""
    from qopt.tools.qopt_opt import main

    out, err = io.StringIO(), io.StringIO()
    code: object = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in argv])
        except SystemExit as e:
            code = e.code
    assert not code, err.getvalue()[-4000:]
    return out.getvalue()


@pytest.fixture(scope="module")
def parity(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A static-int8 MLP compiled by the API and by qopt-opt on its saved .pt2, for
    both targets (in one process: each module has its own weight store, so the
    resource keys that name the MIL constants are the same on both paths)."""
    import torch
    from shared_exports import exported

    import qopt
    from qopt.context import print_module

    out = tmp_path_factory.mktemp("parity")
    ep = exported("mlp", "pt2e_static")
    torch.export.save(ep, out / "model.pt2")
    coreml = qopt.compile(ep, target="coreml", compute_precision="fp16")
    (out / "api_coreml.mlir").write_text(print_module(coreml.module, elide_larger_than=None))
    coreml.save(out / "api.mlpackage")
    (out / "user_outputs.txt").write_text("\n".join(ep.graph_signature.user_outputs))
    vulkan = qopt.compile(ep, target="vulkan")
    (out / "api_vulkan.mlir").write_text(print_module(vulkan.module, elide_larger_than=None))
    vulkan.save(out / "api.qvk")
    pt2 = out / "model.pt2"
    (out / "cli_coreml.mlir").write_text(opt(pt2, "-p", COREML_PIPELINE, "--print-weights"))
    opt(pt2, "-p", COREML_PIPELINE, "-t", "mlpackage", "-o", out / "cli.mlpackage")
    (out / "cli_vulkan.mlir").write_text(opt(pt2, "-p", "qopt-vulkan", "--print-weights"))
    opt(pt2, "-p", "qopt-vulkan", "-t", "vkbundle", "-o", out / "cli.qvk")
    return out


def test_cli_prints_the_api_ir_coreml(parity: Path) -> None:
    api = (parity / "api_coreml.mlir").read_text()
    assert "coreml.cast" in api  # fp16 compute: the pipeline option reached coreml-fp16
    assert (parity / "cli_coreml.mlir").read_text().strip() == api.strip()


def test_cli_prints_the_api_ir_vulkan(parity: Path) -> None:
    api = (parity / "api_vulkan.mlir").read_text()
    assert "vkc.dispatch" in api
    assert (parity / "cli_vulkan.mlir").read_text().strip() == api.strip()


def _spec(package: Path) -> object:
    import coremltools as ct

    spec = ct.utils.load_spec(str(package))
    spec.description.metadata.userDefined.pop("com.github.apple.coremltools.conversion_date", None)
    return spec


def test_cli_mlpackage_equals_the_api_save(parity: Path) -> None:
    api, cli = parity / "api.mlpackage", parity / "cli.mlpackage"
    assert _spec(cli) == _spec(api)
    weights = Path("Data/com.apple.CoreML/weights/weight.bin")
    assert (cli / weights).read_bytes() == (api / weights).read_bytes()
    # Outputs are named after the exported program's on both paths.
    names = (parity / "user_outputs.txt").read_text().split("\n")
    spec = _spec(cli)
    assert [o.name for o in spec.description.output] == names  # type: ignore[attr-defined]


def test_cli_vkbundle_equals_the_api_save(parity: Path) -> None:
    assert (parity / "cli.qvk").read_bytes() == (parity / "api.qvk").read_bytes()


def test_mlir_without_recorded_names_keeps_output_i() -> None:

    from qopt.context import parse_module
    from qopt.driver import compile_coreml

    text = """
    func.func @forward(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
      %0 = aten.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
      %1 = aten.neg %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
      func.return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
    }
    """
    module = parse_module(text)
    artifact = compile_coreml(module, compute_precision="fp32")
    assert artifact.output_names == ["output_0", "output_1"]
    assert [v.name for v in artifact.mil_program.functions["main"].outputs] == [
        "output_0",
        "output_1",
    ]
