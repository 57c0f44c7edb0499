"""Transparent pipelines, the compile report and CLI/API parity (issue 13 items 2-4).

`qopt-opt` runs in process (its `main(argv)`), on one small w4g32 MLP imported once:
a pipeline runs as its registered sub-passes (`--print-between-passes`,
`--print-ir-after`, `--time-passes` see each), `--list-passes` lists qopt's passes
with their options before xDSL's, `-v` prints progress lines and the report,
`--report-json` writes it, and the silent cliffs warn. Parity: the same pipeline and
options through `qopt-opt` and `qopt.compile` print the same IR and write the same
`.qvk` bytes and `.mlpackage` files.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import qopt
from qopt.context import make_context, parse_module, print_module
from qopt.errors import QoptError
from qopt.examples import export_model
from qopt.report import CompileReport, QoptWarning


def opt(*argv: str | Path) -> tuple[int, str, str]:
    """`qopt-opt argv` in process: (exit status, stdout, stderr)."""
    from qopt.tools.qopt_opt import main

    out, err = io.StringIO(), io.StringIO()
    code: Any = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in argv])
        except SystemExit as e:
            code = e.code
    return (0 if code is None else code), out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def mlp(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The w4g32 MLP: its program, saved as .pt2 and imported as .mlir (weights)."""
    out = tmp_path_factory.mktemp("report")
    ep = export_model("mlp", "w4g32")
    torch.export.save(ep, out / "mlp.pt2")
    (out / "mlp.mlir").write_text(print_module(qopt.import_program(ep), elide_larger_than=None))
    return {"ep": ep, "pt2": out / "mlp.pt2", "mlir": out / "mlp.mlir", "dir": out}


VULKAN_PASSES = [
    "fuse-quant",
    "fold-constants",
    "fuse-quant-fixpoint",
    "expand-dynamic-windows",
    "check-mid-level",
    "compose",
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


def test_print_between_passes_and_time_passes_see_each_sub_pass(mlp: dict[str, Any]) -> None:
    code, out, err = opt(
        mlp["mlir"], "-p", "qopt-vulkan", "--print-between-passes", "--time-passes"
    )
    assert code == 0, err
    assert re.findall(r"^IR after (\S+):$", out, re.M) == VULKAN_PASSES[:-1]
    table = err[err.index("----Wall Time----") :].splitlines()[1:]
    names = [re.sub(r"^\s+\d+\.\d+ \(\s*[\d.]+%\)  ", "", line) for line in table]
    # fuse-quant-fixpoint runs fuse-quant once more (nothing left to fuse: it stops)
    assert names == [
        "parse",
        "qopt-vulkan",
        *(f"  {p}" for p in VULKAN_PASSES[:3]),
        "    fuse-quant",
        *(f"  {p}" for p in VULKAN_PASSES[3:]),
        "print",
        "(rest)",
        "Total",
    ]
    assert "Execution time report" in err
    assert "Total Execution Time:" in err


def test_coreml_pipeline_sub_passes_and_print_ir_after(mlp: dict[str, Any]) -> None:
    code, out, err = opt(
        mlp["mlir"],
        "-p",
        "qopt-coreml{compute-precision=fp16}",
        "--print-between-passes",
        "--print-ir-after=fold-constants,qopt-coreml",
    )
    assert code == 0, err
    passes = [
        "fuse-quant",
        "fold-constants",
        "fuse-quant-fixpoint",
        "record-source-hash",
        "expand-dynamic-windows",
        "check-mid-level",
        "compose",
        "convert-to-coreml",
        "coreml-canonicalize",
    ]
    assert re.findall(r"^IR after (\S+):$", out, re.M) == passes
    dumps = re.findall(r"^// -----// IR Dump After (\S+) //----- //$", err, re.M)
    assert dumps == ["fold-constants", "qopt-coreml"]
    after_fold = err.split("IR Dump After fold-constants")[1].split("IR Dump After")[0]
    assert "qfused.linear" in after_fold
    assert "coreml." not in after_fold
    code, _, err = opt(mlp["mlir"], "-p", "qopt-vulkan", "--print-ir-after=fold-constant")
    assert code == 1
    assert err.strip() == (
        "qopt-opt: error: --print-ir-after: 'fold-constant' (did you mean 'fold-constants'?) "
        "is not a pass of the pipeline -p 'qopt-vulkan' (its passes: fuse-quant, "
        "fold-constants, fuse-quant-fixpoint, expand-dynamic-windows, check-mid-level, compose, "
        "convert-to-vkc, vkc-fuse-elementwise, vkc-fuse-norms, "
        "vkc-merge-siblings, vkc-fuse-row-quant, vkc-fold-copies, vkc-plan-buffers, "
        "vkc-insert-barriers, qopt-vulkan)"
    )


def test_list_passes_shows_qopts_first_with_options() -> None:
    code, out, _ = opt("--list-passes")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "qopt's passes (a pipeline runs as the passes it lists):"
    xdsl = next(i for i, line in enumerate(lines) if line.startswith("xDSL's passes ("))
    mine = [line.strip() for line in lines[1:xdsl] if re.fullmatch(r"  \S+", line)]
    assert mine[:4] == ["fuse-quant", "fold-constants", "fuse-quant-fixpoint", "convert-to-coreml"]
    assert {"qopt-coreml", "qopt-vulkan", "name-outputs"} <= set(mine)
    preparation = ["expand-dynamic-windows", "externalize-states", "check-mid-level"]
    assert {*preparation, "compose", "record-source-hash"} <= set(mine)
    coreml = lines.index("  qopt-coreml")
    runs = (
        "      runs: fuse-quant, fold-constants, fuse-quant-fixpoint, record-source-hash, "
        'expand-dynamic-windows, check-mid-level{target="coreml"}, compose{target="coreml"}, '
        "convert-to-coreml{prepare=false}, coreml-canonicalize, coreml-fp16"
    )
    assert lines[coreml + 2] == runs
    assert "    compute-precision: str = fp16" in lines[coreml:xdsl]
    assert "    minimum-deployment-target: str | None" in lines[coreml:xdsl]
    assert "  canonicalize" in lines[xdsl:]
    assert "--list-passes" in opt("--help")[1]


PROGRESS = re.compile(
    r"^qopt: \[ *\d+\.\d s, peak +\d+(\.\d)? [KMG]?i?B\] ( *)(\S.*?) \d+\.\d\d s$"
)


def test_verbose_prints_progress_and_the_report(mlp: dict[str, Any]) -> None:
    report_json = mlp["dir"] / "report.json"
    code, _, err = opt(
        mlp["pt2"],
        "-p",
        "qopt-coreml{compute-precision=fp32}",
        "-v",
        "--report-json",
        report_json,
        "-o",
        "/dev/null",
    )
    assert code == 0, err
    lines = err.splitlines()
    progress = [m for line in lines if (m := PROGRESS.match(line))]
    assert [(len(m.group(2)) // 2, m.group(3)) for m in progress] == [
        (1, "torch deserializer import"),  # the stages of loading a .pt2 (qopt.frontend.pt2)
        (1, "graph (parse and check)"),
        (2, "torchao import"),
        (1, "weights"),
        (1, "rebuild (torch's deserializer)"),
        (0, "load"),
        (0, "import"),
        (1, "fuse-quant"),
        (1, "fold-constants"),
        (2, "fuse-quant"),
        (1, "fuse-quant-fixpoint"),
        (1, "record-source-hash"),
        (1, "expand-dynamic-windows"),
        (1, "check-mid-level"),
        (1, "compose"),
        (1, "convert-to-coreml"),
        (1, "coreml-canonicalize"),
        (0, "qopt-coreml"),
        (0, "print"),
    ]
    start = next(i for i, t in enumerate(lines) if t.startswith("qopt compile report (qopt-"))
    assert lines[start + 1 : start + 7] == [
        "  fused 3 of 3 quantized pattern(s): linear_q4gsw x3",
        "  quant ops left unfused: 0 of 3",
        "  weights: 17.5 KiB compressed (6 tensor(s)), 0 B float (0 tensor(s)), "
        "1.1 KiB other constants",
        "  target ops (8): coreml.constexpr_blockwise_shift_scale x3, coreml.gelu x1, "
        "coreml.linear x3, coreml.relu x1",
        "  fallback ops (on the host): 0",
        "  warnings: 0",
    ]
    assert lines[start + 7].startswith("  time: ")
    data = json.loads(report_json.read_text())
    assert data["fusion"] == {
        "fused": 3,
        "patterns": 3,
        "by_kernel": {"linear_q4gsw": 3},
        "quant_ops": 3,
        "quant_ops_left": 0,
        "unfused_by_reason": {},
    }
    # int4 data at 4 bits (64x128 + 128x128 + 128x32) / 2, fp32 group scales
    assert data["weights"]["compressed_bytes"] == 14336 + 3584
    assert data["target_ops"]["coreml.linear"] == 3
    assert data["fallback_ops"] == []
    assert data["warnings"] == []
    top = [p["name"] for p in data["phases"] if p["depth"] == 0]
    assert top[:3] == ["load", "import", "qopt-coreml"]


def test_convert_without_fuse_quant_warns(mlp: dict[str, Any]) -> None:
    code, _, err = opt(mlp["mlir"], "-p", "convert-to-vkc", "-o", "/dev/null")
    assert code == 0, err
    assert err.splitlines()[0] == (
        "qopt-opt: warning: convert-to-vkc: 3 quantized pattern(s) are not fused "
        "(linear_q4gsw x3): converted as they are, they run as separate dequantize and "
        "float ops (larger weights, slower); run fuse-quant first (-p fuse-quant,...) or "
        "the whole pipeline (qopt-vulkan)"
    )
    code, _, err = opt(mlp["mlir"], "-p", "fuse-quant,convert-to-vkc", "-o", "/dev/null")
    assert code == 0, err
    assert "warning" not in err, err
    # Outside qopt-opt and qopt.compile (no report active): a QoptWarning.
    from qopt.lowering.fuse_quant import check_mid_level

    module = parse_module(mlp["mlir"].read_text())
    with pytest.warns(QoptWarning, match=r"^convert-to-coreml: 3 quantized pattern\(s\)"):
        check_mid_level(module, "convert-to-coreml")


def test_convert_to_coreml_names_fold_constants() -> None:
    module = parse_module(
        """
        func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
          %r = aten.arange {start = 0.0 : f64, end = 4.0 : f64, step = 1.0 : f64} : tensor<4xf32>
          %y = aten.add %x, %r : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
          func.return %y : tensor<4xf32>
        }
        """
    )
    from qopt.lowering.convert_to_coreml import ConvertToCoremlPass

    with pytest.raises(QoptError) as info:
        ConvertToCoremlPass().apply(make_context(), module)
    assert str(info.value) == (
        "convert-to-coreml: 'aten.arange' depends on no input (a constant computed at run "
        "time, e.g. a mask or position table) and Core ML has no lowering for it: run "
        "fold-constants first, which evaluates it at compile time (-p "
        "fold-constants,convert-to-coreml, or the qopt-coreml pipeline)"
    )


def test_float_weights_next_to_quantized_ones_warn() -> None:
    """A Linear whose K (136) the w4g32 filter skips stays float: listed and warned."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 136), torch.nn.ReLU(), torch.nn.Linear(136, 128)
    )
    ep = export_model("mlp", "w4g32", model=model, example_inputs=(torch.randn(2, 64),))
    seen: list[str] = []
    report = CompileReport(on_warning=seen.append)
    with report.active():
        qopt.fuse(qopt.import_program(ep))
    assert (report.fused["linear_q4gsw"], report.patterns) == (1, 1)
    (weight,) = report.float_weights
    assert (weight.shape, weight.dtype, weight.bytes) == ((128, 136), "float32", 69632)
    assert report.float_weight_bytes == 69632
    assert report.compressed_weight_bytes == 136 * 64 // 2 + 136 * 2 * 4  # int4, fp32 scales
    (text,) = report.warnings
    assert text == (
        f"1 weight(s) of linear/conv/embedding ops left in float next to quantized ones "
        f"(68.0 KiB): {weight.name} (float32[128, 136], 68.0 KiB); the quantizer skipped "
        "them (a filter, or a layer type it does not handle, such as GPT-2's Conv1D): "
        "quantize them too, or accept the size"
    )
    assert seen == [text]
    assert f"    float: {weight.name} float32[128, 136] 68.0 KiB (used by 'aten.linear'" in str(
        report
    )


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_cli_and_api_produce_the_same_ir_and_artifacts(mlp: dict[str, Any]) -> None:
    """Every option of qopt.compile as a pipeline option of the same name: the same IR
    text, the same .mlpackage files and the same .qvk bytes."""
    out = mlp["dir"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", QoptWarning)
        coreml = qopt.compile(
            mlp["ep"],
            "coreml",
            minimum_deployment_target="iOS18",
            compute_precision="fp16",
            output_names=["y"],
        )
        vulkan = qopt.compile(mlp["ep"], "vulkan")
    pipeline = "qopt-coreml{minimum-deployment-target=iOS18 compute-precision=fp16 output-names=y}"
    code, text, err = opt(mlp["pt2"], "-p", pipeline, "--print-weights")
    assert code == 0, err
    assert text.strip() == print_module(coreml.module, elide_larger_than=None).strip()
    assert 'qopt.output_names = ["y"]' in text
    code, _, err = opt(mlp["pt2"], "-p", pipeline, "-t", "mlpackage", "-o", out / "cli.mlpackage")
    assert code == 0, err
    coreml.save(out / "api.mlpackage")
    cli, api = _tree(out / "cli.mlpackage"), _tree(out / "api.mlpackage")
    assert cli == api
    assert any(name.endswith("weight.bin") for name in cli)
    code, text, err = opt(mlp["pt2"], "-p", "qopt-vulkan", "--print-weights")
    assert code == 0, err
    assert text.strip() == print_module(vulkan.module, elide_larger_than=None).strip()
    code, _, err = opt(mlp["pt2"], "-p", "qopt-vulkan", "-t", "vkbundle", "-o", out / "cli.qvk")
    assert code == 0, err
    vulkan.save(out / "api.qvk")
    assert (out / "cli.qvk").read_bytes() == (out / "api.qvk").read_bytes()
    assert coreml.report is not None
    assert vulkan.report is not None
    assert coreml.report.target == "coreml"
    assert vulkan.report.fused["linear_q4gsw"] == 3


def test_compile_options_are_pipeline_options() -> None:
    """Each option of qopt.compile has a qopt-opt spelling of the same name."""
    import dataclasses

    from qopt import options
    from qopt.frontend.pt2_frontend import PT2Frontend
    from qopt.lowering.pipelines import QoptCoremlPipeline

    coreml = {f.name for f in dataclasses.fields(QoptCoremlPipeline)}
    assert set(options.TARGET_OPTIONS["coreml"]) <= coreml
    frontend = {f.name for f in dataclasses.fields(PT2Frontend)}
    assert {"trust_pickle", "limits", "dynamic_sizes"} <= frontend
    _, help_text, _ = opt("--help")
    for flag in ("--trust-pickle", "--limits", "--verbose"):
        assert flag in help_text
    # device and validation choose where a Vulkan artifact runs: qopt-run's --device.
    given = QoptCoremlPipeline(minimum_deployment_target="iOS17").passes()
    assert given[-3].target == "iOS17"  # pyright: ignore[reportAttributeAccessIssue]
    with pytest.raises(QoptError, match="target=iOS16 and minimum-deployment-target=iOS17"):
        QoptCoremlPipeline(target="iOS16", minimum_deployment_target="iOS17").passes()


def test_name_outputs_pass() -> None:
    module = parse_module(
        """
        func.func @forward(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
          %0 = aten.relu %x : (tensor<2xf32>) -> tensor<2xf32>
          %1 = aten.neg %x : (tensor<2xf32>) -> tensor<2xf32>
          func.return %0, %1 : tensor<2xf32>, tensor<2xf32>
        }
        """
    )
    from qopt.dialects.signature import output_names
    from qopt.lowering.name_outputs import NameOutputsPass

    x = np.array([-1.0, 2.0], dtype=np.float32)
    before = qopt.interpret(module, x)
    NameOutputsPass(("relu",)).apply(make_context(), module)
    func = next(iter(module.ops))
    assert output_names(func) == ["relu", "output_1"]  # pyright: ignore[reportArgumentType]
    after = qopt.interpret(module, x)
    assert all(np.array_equal(a, b) for a, b in zip(before, after, strict=True))
    with pytest.raises(QoptError, match=r"3 names \['a', 'b', 'c'\] for the 2 output\(s\)"):
        NameOutputsPass(("a", "b", "c")).apply(make_context(), module)


def test_locations_carry_the_module_path(mlp: dict[str, Any]) -> None:
    code, out, err = opt(mlp["pt2"], "--print-debuginfo", "--elide-weights-if-larger", "16")
    assert code == 0, err
    linear = next(line for line in out.splitlines() if "aten.linear" in line)
    assert re.search(r'loc\("fc1"\(".*examples\.py":\d+:0\)\)$', linear), linear
    # Output names from the graph signature, through the .pt2 frontend as the API's.
    names = ", ".join(f'"{n}"' for n in mlp["ep"].graph_signature.user_outputs)
    assert f"qopt.output_names = [{names}]" in out


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux's /proc")
def test_peak_rss_is_this_process_images_not_its_parents() -> None:
    """A process exec'd by one that touched 400 MiB reports its own peak (ru_maxrss
    survives exec and reported the parent's)."""
    import subprocess
    import sys

    child = "from qopt.report import peak_rss; print(peak_rss())"
    parent = (
        "import os, sys; big = bytearray(400 << 20); big[::4096] = b'x' * len(big[::4096]); "
        f"os.execv(sys.executable, [sys.executable, '-c', {child!r}])"
    )
    done = subprocess.run(
        [sys.executable, "-c", parent], capture_output=True, text=True, check=True, timeout=60
    )
    assert int(done.stdout.strip()) < 300 << 20
