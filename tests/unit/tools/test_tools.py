"""The command-line tools, run as the user runs them (console scripts of the venv).

Bad inputs: exit code 1, one `<tool>: error:` line on stderr, no traceback, and no
output file left behind (nor a temporary one). Good inputs: `qopt-opt x.pt2 |
qopt-opt` is the identity, and `qopt-run` on an imported model matches torch eager.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

BIN = Path(sys.executable).parent
QOPT_OPT = BIN / "qopt-opt"
QOPT_RUN = BIN / "qopt-run"

pytestmark = pytest.mark.skipif(
    not (QOPT_OPT.exists() and QOPT_RUN.exists()),
    reason=f"qopt-opt/qopt-run are not installed in {BIN} (pip install -e .)",
)

VALID_MLIR = """\
func.func @forward(%x: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = aten.add %x, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = aten.relu %0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %1 : tensor<2x3xf32>
}
"""

BAD_MLIR = {
    "malformed": "func.func @forward(%x: tensor<2xf32> -> tensor<2xf32> {\n",
    "unknown_op": VALID_MLIR.replace("aten.relu", "aten.frobnicate"),
    "wrong_shape": VALID_MLIR.replace("tensor<3xf32>", "tensor<4xf32>"),
}

EXPECTED_MESSAGE = {
    "malformed": "expected",
    "unknown_op": "aten.frobnicate",
    "wrong_shape": "do not broadcast",
}


def run(
    tool: Path, *args: str | Path, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(tool), *map(str, args)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )


def assert_user_error(
    result: subprocess.CompletedProcess[str], tool: str, *, text: str = ""
) -> None:
    stderr = result.stderr
    assert result.returncode == 1, (result.returncode, stderr)
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, stderr
    assert errors[0].startswith(f"{tool}: error: "), stderr
    assert text in errors[0], stderr


def assert_nothing_written(directory: Path, before: set[str]) -> None:
    assert {p.name for p in directory.iterdir()} == before


@pytest.fixture(scope="module")
def mlp_pt2(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray, np.ndarray]:
    """The float example MLP saved as .pt2, one input and torch eager's output."""
    torch = pytest.importorskip("torch")
    from qopt import examples

    model, inputs = examples.build_model("mlp", seed=0)
    ep = examples.export_model("mlp", "float", seed=0, model=model, example_inputs=inputs)
    path = tmp_path_factory.mktemp("mlp") / "mlp.pt2"
    torch.export.save(ep, str(path))
    with torch.no_grad():
        expected = model(*inputs).numpy()
    return path, inputs[0].numpy(), expected


# ----- qopt-opt: bad inputs -------------------------------------------------------


@pytest.mark.parametrize("case", sorted(BAD_MLIR))
def test_opt_bad_mlir(tmp_path: Path, case: str) -> None:
    source = tmp_path / f"{case}.mlir"
    source.write_text(BAD_MLIR[case])
    before = {p.name for p in tmp_path.iterdir()}
    result = run(QOPT_OPT, source, "-o", tmp_path / "out.mlir")
    assert_user_error(result, "qopt-opt", text=EXPECTED_MESSAGE[case])
    assert_nothing_written(tmp_path, before)


def test_opt_missing_input(tmp_path: Path) -> None:
    result = run(QOPT_OPT, tmp_path / "missing.mlir", "-o", tmp_path / "out.mlir")
    assert_user_error(result, "qopt-opt", text="missing.mlir")
    assert not any(tmp_path.iterdir())


def test_opt_random_bytes_pt2(tmp_path: Path) -> None:
    source = tmp_path / "random.pt2"
    source.write_bytes(np.random.default_rng(0).integers(0, 256, 4096, np.uint8).tobytes())
    result = run(QOPT_OPT, source, "-o", tmp_path / "out.mlir")
    assert_user_error(result, "qopt-opt", text="random.pt2")
    assert_nothing_written(tmp_path, {"random.pt2"})


def test_opt_truncated_pt2(tmp_path: Path, mlp_pt2: tuple[Path, np.ndarray, np.ndarray]) -> None:
    data = mlp_pt2[0].read_bytes()
    source = tmp_path / "truncated.pt2"
    source.write_bytes(data[: len(data) // 2])
    result = run(QOPT_OPT, source, "-o", tmp_path / "out.mlir")
    assert_user_error(result, "qopt-opt", text="truncated.pt2")
    assert_nothing_written(tmp_path, {"truncated.pt2"})


def test_opt_zip_that_is_not_pt2(tmp_path: Path) -> None:
    source = tmp_path / "other.pt2"
    with zipfile.ZipFile(source, "w") as archive:
        archive.writestr("other/data.txt", "not a torch.export archive")
    result = run(QOPT_OPT, source, "-o", tmp_path / "out.mlir")
    assert_user_error(result, "qopt-opt", text="other.pt2")
    assert_nothing_written(tmp_path, {"other.pt2"})


def test_opt_verify_diagnostics_exits_zero(tmp_path: Path) -> None:
    source = tmp_path / "wrong_shape.mlir"
    source.write_text(BAD_MLIR["wrong_shape"])
    result = run(QOPT_OPT, source, "--verify-diagnostics")
    assert result.returncode == 0, result.stderr
    assert "do not broadcast" in result.stdout


# ----- qopt-run: bad inputs -------------------------------------------------------


@pytest.fixture
def valid_mlir(tmp_path: Path) -> Path:
    path = tmp_path / "model.mlir"
    path.write_text(VALID_MLIR)
    return path


@pytest.mark.parametrize(
    "arrays, text",
    [
        ([np.zeros((2, 3), np.float32)], "takes 2 input(s), got 1"),
        ([np.zeros((2, 3), np.float32), np.zeros(4, np.float32)], "has shape [4], expected [3]"),
    ],
    ids=["wrong_count", "wrong_shape"],
)
def test_run_bad_inputs(
    tmp_path: Path, valid_mlir: Path, arrays: list[np.ndarray], text: str
) -> None:
    inputs = tmp_path / "in.npz"
    np.savez(inputs, *arrays)
    before = {p.name for p in tmp_path.iterdir()}
    result = run(QOPT_RUN, valid_mlir, "--inputs", inputs, "--outputs", tmp_path / "out.npz")
    assert_user_error(result, "qopt-run", text=text)
    assert_nothing_written(tmp_path, before)


@pytest.mark.parametrize("case", sorted(BAD_MLIR))
def test_run_bad_mlir(tmp_path: Path, case: str) -> None:
    source = tmp_path / f"{case}.mlir"
    source.write_text(BAD_MLIR[case])
    inputs = tmp_path / "in.npz"
    np.savez(inputs, np.zeros((2, 3), np.float32), np.zeros(3, np.float32))
    before = {p.name for p in tmp_path.iterdir()}
    result = run(QOPT_RUN, source, "--inputs", inputs, "--outputs", tmp_path / "out.npz")
    assert_user_error(result, "qopt-run", text=EXPECTED_MESSAGE[case])
    assert_nothing_written(tmp_path, before)


@pytest.mark.parametrize("what", ["missing_model", "missing_inputs", "not_npz", "vulkan"])
def test_run_bad_files_and_device(tmp_path: Path, valid_mlir: Path, what: str) -> None:
    inputs = tmp_path / "in.npz"
    np.savez(inputs, np.zeros((2, 3), np.float32), np.zeros(3, np.float32))
    model, extra = valid_mlir, []
    if what == "missing_model":
        model = tmp_path / "missing.mlir"
    elif what == "missing_inputs":
        inputs = tmp_path / "missing.npz"
    elif what == "not_npz":
        inputs = tmp_path / "garbage.npz"
        inputs.write_bytes(b"not an npz file")
    else:  # a corrupted Vulkan bundle (or no Vulkan device): a Vulkan user error
        model = tmp_path / "bad.qvk"
        model.write_bytes(b"not a bundle")
        extra = ["--device", "vulkan"]
    before = {p.name for p in tmp_path.iterdir()}
    result = run(QOPT_RUN, model, "--inputs", inputs, "--outputs", tmp_path / "out.npz", *extra)
    assert_user_error(result, "qopt-run", text="Vulkan" if what == "vulkan" else "")
    assert_nothing_written(tmp_path, before)


def test_run_summary_and_outputs(tmp_path: Path, valid_mlir: Path) -> None:
    x = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
    b = np.array([1, 1, 1], np.float32)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x, b)
    summary = run(QOPT_RUN, valid_mlir, "--inputs", inputs)
    assert summary.returncode == 0, summary.stderr
    assert summary.stdout.startswith("arr_0: shape [2, 3] float32"), summary.stdout
    result = run(QOPT_RUN, valid_mlir, "--inputs", inputs, "--outputs", tmp_path / "out.npz")
    assert result.returncode == 0, result.stderr
    with np.load(tmp_path / "out.npz") as out:
        assert out.files == ["arr_0"]
        np.testing.assert_array_equal(out["arr_0"], np.maximum(x + b, 0))


# ----- good inputs: round trip and numerics -------------------------------------------


@pytest.fixture(scope="module")
def mlp_imports(mlp_pt2: tuple[Path, np.ndarray, np.ndarray]) -> tuple[str, Path]:
    """`qopt-opt x.pt2 --elide-weights-if-larger 1024` (its stdout, as a terminal
    shows it) and `qopt-opt x.pt2 -o x.mlir` (every weight: the default into a file),
    run side by side (each pays for `import torch`)."""
    pt2 = mlp_pt2[0]
    module = pt2.with_suffix(".mlir")
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    commands = [
        [str(QOPT_OPT), str(pt2), "--elide-weights-if-larger", "1024"],
        [str(QOPT_OPT), str(pt2), "-o", str(module)],
    ]
    processes = [
        subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for c in commands
    ]
    (elided, elided_err), (_, full_err) = (p.communicate(timeout=120) for p in processes)
    assert processes[0].returncode == 0, elided_err
    assert processes[1].returncode == 0, full_err
    return elided, module


@pytest.fixture(scope="module")
def mlp_mlir(mlp_imports: tuple[str, Path]) -> Path:
    """The imported MLP printed with every weight (`qopt-opt x.pt2 -o x.mlir`)."""
    return mlp_imports[1]


def test_opt_pt2_round_trip(mlp_imports: tuple[str, Path]) -> None:
    """`qopt-opt x.pt2 | qopt-opt` prints the same text (elided weights print as
    `dense_resource<__elided__>`, as MLIR prints them)."""
    first, full = mlp_imports
    assert "dense_resource<__elided__> : tensor<128x64xf32>" in first
    assert "p_fc1_weight" not in first  # 32 KiB: elided
    second = run(QOPT_OPT, stdin=first)
    assert second.returncode == 0, second.stderr
    assert second.stdout == first
    # Eliding the blobs of the fully printed module gives the same text.
    assert run(QOPT_OPT, full, "--elide-weights-if-larger", "1024").stdout == first


def test_opt_print_weights_round_trip(mlp_mlir: Path) -> None:
    text = mlp_mlir.read_text()
    assert 'p_fc1_weight: "0x' in text
    again = run(QOPT_OPT, "--print-weights", stdin=text)
    assert again.returncode == 0, again.stderr
    assert again.stdout == text


def test_run_matches_torch_eager(
    tmp_path: Path, mlp_pt2: tuple[Path, np.ndarray, np.ndarray], mlp_mlir: Path
) -> None:
    _, x, expected = mlp_pt2
    module = mlp_mlir

    inputs, outputs = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(inputs, x)
    result = run(QOPT_RUN, module, "--inputs", inputs, "--outputs", outputs)
    assert result.returncode == 0, result.stderr
    with np.load(outputs) as out:
        actual = out["arr_0"]
    assert actual.shape == expected.shape
    assert actual.dtype == expected.dtype
    error = np.linalg.norm(actual - expected) / np.linalg.norm(expected)
    assert error < 1e-5, error


def test_run_elided_weights_is_an_error(
    tmp_path: Path, mlp_pt2: tuple[Path, np.ndarray, np.ndarray], mlp_mlir: Path
) -> None:
    """A module printed without its weights cannot run; the message says what to do."""
    x = mlp_pt2[1]
    elided = tmp_path / "elided.mlir"
    printed = run(QOPT_OPT, mlp_mlir, "--elide-weights-if-larger", "1024", "-o", elided)
    assert printed.returncode == 0, printed.stderr
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x)
    result = run(QOPT_RUN, elided, "--inputs", inputs, "--outputs", tmp_path / "out.npz")
    assert_user_error(result, "qopt-run", text="--print-weights")
    assert not (tmp_path / "out.npz").exists()


def test_run_check_dispatches(tmp_path: Path, valid_mlir: Path) -> None:
    """`--check-dispatches` compares every dispatch with its kernel's reference on the
    device; without `--device vulkan` it is a user error."""
    from qopt.backends.vulkan.runtime import vulkan_available

    inputs = tmp_path / "in.npz"
    np.savez(inputs, np.array([[1, -2, 3], [-4, 5, -6]], np.float32), np.ones(3, np.float32))
    result = run(QOPT_RUN, valid_mlir, "--inputs", inputs, "--check-dispatches")
    assert_user_error(result, "qopt-run", text="--check-dispatches needs --device vulkan")
    if (reason := vulkan_available()) is not None:
        pytest.skip(f"no Vulkan device: {reason}")
    result = run(
        QOPT_RUN, valid_mlir, "--inputs", inputs, "--device", "vulkan", "--check-dispatches"
    )
    assert result.returncode == 0, result.stderr
    assert "0 from kernels declared exact" in result.stdout, result.stdout
    assert "arr_0: shape [2, 3] float32" in result.stdout


def test_version_is_qopts() -> None:
    """`qopt.__version__` is the project's version; `--version` of both tools prints it
    (qopt-opt also names the xDSL it runs on)."""
    import tomllib

    import qopt

    with (Path(__file__).resolve().parents[3] / "pyproject.toml").open("rb") as f:
        expected = tomllib.load(f)["project"]["version"]
    assert qopt.__version__ == expected
    opt, run_ = run(QOPT_OPT, "--version"), run(QOPT_RUN, "--version")
    assert opt.returncode == 0, opt.stderr
    assert run_.returncode == 0, run_.stderr
    assert opt.stdout.startswith(f"qopt-opt {expected} (xdsl 0."), opt.stdout
    assert run_.stdout == f"qopt-run {expected}\n"


def test_opt_binary_target_refuses_stdout(tmp_path: Path, valid_mlir: Path) -> None:
    """`-t vkbundle` without `-o` is refused before any work (no bytes on stdout)."""
    result = run(QOPT_OPT, valid_mlir, "-p", "qopt-vulkan", "-t", "vkbundle")
    assert_user_error(
        result,
        "qopt-opt",
        text="-t vkbundle writes a binary file, not text to stdout: give it with -o model.qvk",
    )
    assert result.stdout == ""


def test_run_mlpackage(tmp_path: Path, valid_mlir: Path) -> None:
    """`qopt-run m.mlpackage --inputs` interprets the package read back (qopt.load)."""
    from qopt.context import parse_module
    from qopt.driver import compile_coreml

    package = compile_coreml(parse_module(valid_mlir.read_text()), compute_precision="fp32").save(
        tmp_path / "m"
    )
    x = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
    b = np.array([0.5, 0.5, -4], np.float32)
    inputs, outputs = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(inputs, x, b)
    result = run(QOPT_RUN, package, "--inputs", inputs, "--outputs", outputs)
    assert result.returncode == 0, result.stderr
    with np.load(outputs) as out:
        np.testing.assert_array_equal(out["arr_0"], np.maximum(x + b, 0))
