"""The tools' error contract, qopt.Limits and run-time input casts, unit by unit.

End-to-end attacks on each file format are in test_fuzz_untrusted.py,
test_pt2_loading.py, test_coreml_reader_untrusted.py and test_vulkan_extents.py.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest
import vulkan as vk
from xdsl.utils.exceptions import VerifyException

from qopt.errors import QoptError
from qopt.inputs import check_inputs, coerce, load_npz
from qopt.limits import Limits, check_mlir_text, check_zip
from qopt.tools.contract import format_error, run_tool


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (QoptError("bad input"), "tool: error: bad input"),
        (VerifyException("result 0 has shape [3]"), "tool: error: result 0 has shape [3]"),
        (
            FileNotFoundError(2, "No such file or directory", "x.mlir"),
            "tool: error: x.mlir: No such file or directory",
        ),
        (MemoryError(), "tool: error: out of memory"),
        (
            RecursionError("maximum recursion depth exceeded"),
            "tool: error: the input is nested too deeply",
        ),
        (
            vk.VkErrorOutOfDeviceMemory("oom"),
            "tool: error: the Vulkan driver failed: VkErrorOutOfDeviceMemory",
        ),
        (
            KeyError("kernels"),
            "tool: error: internal error: KeyError: 'kernels' (a bug in qopt: rerun with --debug",
        ),
        (AssertionError(), "tool: error: internal error: AssertionError (a bug in qopt"),
    ],
)
def test_format_error(error: BaseException, expected: str) -> None:
    message = format_error("tool", error)
    assert message.startswith(expected), message
    assert "\n" not in message


def test_run_tool_exits_1_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    def body() -> None:
        raise IndexError("list index out of range")

    with pytest.raises(SystemExit) as e:
        run_tool("qopt-run", body, ["x.qvk"])
    assert e.value.code == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "qopt-run: error: internal error: IndexError: list index out of range "
        "(a bug in qopt: rerun with --debug for the traceback and report it)"
    ]


def test_run_tool_debug_lets_the_traceback_through() -> None:
    def body() -> None:
        raise IndexError("boom")

    with pytest.raises(IndexError):
        run_tool("qopt-run", body, ["x.qvk", "--debug"])


def test_run_tool_interrupt(capsys: pytest.CaptureFixture[str]) -> None:
    def body() -> None:
        raise KeyboardInterrupt

    with pytest.raises(SystemExit) as e:
        run_tool("qopt-opt", body, [])
    assert e.value.code == 130
    assert capsys.readouterr().err.strip() == "qopt-opt: interrupted"


# ----- limits ---------------------------------------------------------------------------


def test_limits_parse() -> None:
    limits = Limits.parse("max_graph_nodes=5000000, max-expansion=8")
    assert limits.max_graph_nodes == 5_000_000
    assert limits.max_expansion == 8.0
    assert Limits.parse("") == Limits()
    with pytest.raises(QoptError, match="use name=value with a name among"):
        Limits.parse("max_nodes=3")
    with pytest.raises(QoptError, match="max_graph_nodes is a positive integer"):
        Limits.parse("max_graph_nodes=many")
    with pytest.raises(QoptError, match="max_graph_nodes is a positive integer"):
        Limits.parse("max_graph_nodes=0")


@pytest.mark.parametrize(
    "spec",
    ["max_expansion=nan", "max_expansion=inf", "max_expansion=-inf", "max_expansion=1e999",
     "max_expansion=0", "max_expansion=-2", "max_graph_nodes=1.5", "max_graph_nodes=inf",
     "max_graph_nodes=nan", "max_graph_nodes=-1", "max_graph_nodes=1e3"],
)  # fmt: skip
def test_limits_accept_only_finite_positive_numbers(spec: str) -> None:
    """Issue 27 class 7: nan turned the zip-bomb check off, inf was an internal error;
    every way a Limits is made (parse, the constructor) takes finite positive numbers
    only (integers but for max_expansion)."""
    with pytest.raises(QoptError, match=r"^bad limit .*(positive integer|finite positive number)"):
        Limits.parse(spec)
    name, _, text = spec.partition("=")
    value = float(text) if "." in text or text.strip("-").isalpha() or "e" in text else int(text)
    with pytest.raises(QoptError, match=r"^bad limit"):
        Limits(**{name: value})  # pyright: ignore[reportArgumentType]
    with pytest.raises(QoptError, match=r"^bad limit"):
        Limits(max_graph_nodes=True)


def test_nan_limit_cannot_disable_the_zip_bomb_check() -> None:
    bomb = _zip({"a/x": bytes(1 << 20)}, zipfile.ZIP_DEFLATED)
    with pytest.raises(QoptError, match="zip bomb"):
        check_zip(bomb, Limits(expansion_slack_bytes=1 << 10), "bomb")
    with pytest.raises(QoptError, match="bad limit"):
        check_zip(bomb, Limits.parse("max_expansion=nan,expansion_slack_bytes=1024"), "bomb")


def test_a_limit_bounds_the_sum_of_its_items() -> None:
    """Issue 27 class 4: `Limits.tally` checks a running total against the same limit
    as each item."""
    tally = Limits(max_graph_nodes=10).tally("the ops of all segments together", "max_graph_nodes")
    for _ in range(5):
        tally.add(2)
    with pytest.raises(QoptError, match="ops of all segments together is 11, over"):
        tally.add(1)


def _zip(entries: dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return buffer.getvalue()


def test_check_zip() -> None:
    limits = Limits(expansion_slack_bytes=1 << 10)
    check_zip(_zip({"a/x": b"1", "a/y": b"2"}), limits, "ok")
    with pytest.raises(QoptError, match="zip bomb"):
        check_zip(_zip({"a/x": bytes(1 << 20)}, zipfile.ZIP_DEFLATED), limits, "bomb")
    with pytest.raises(QoptError, match="outside the archive's root"):
        check_zip(_zip({"a/../../etc/passwd": b"x"}), limits, "dots")
    with pytest.raises(QoptError, match="outside the archive's root"):
        check_zip(_zip({"/etc/passwd": b"x"}), limits, "absolute")
    with pytest.raises(QoptError, match="several root folders"):
        check_zip(_zip({"a/x": b"1", "b/y": b"2"}), limits, "roots")
    with pytest.raises(QoptError, match="max_archive_members"):
        check_zip(_zip({f"a/{i}": b"" for i in range(5)}), Limits(max_archive_members=4), "many")
    with pytest.raises(QoptError, match="not a readable zip archive"):
        check_zip(b"PK\x03\x04 truncated", limits, "broken")


def test_check_mlir_text() -> None:
    limits = Limits()
    check_mlir_text(b"%0 = arith.constant dense<0.0> : tensor<64x64xf32>", limits, "ok.mlir")
    with pytest.raises(QoptError, match=r"huge.mlir:2: a type's element count"):
        check_mlir_text(b"\n%0 : tensor<99999999999xf32>", limits, "huge.mlir")
    with pytest.raises(QoptError, match="splat literals would expand"):
        check_mlir_text(b"dense<1.0> : tensor<100000x10000xf32>", limits, "splat.mlir")


# ----- run-time inputs ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("array", "dtype", "ok"),
    [
        (np.array([1, 2, 3], np.int64), np.int32, True),
        (np.array([2**62], np.int64), np.int32, False),
        (np.array([-1], np.int64), np.uint8, False),
        (np.array([0.5, -1.25], np.float64), np.float32, True),
        (np.array([1e300], np.float64), np.float32, False),
        (np.array([np.inf, np.nan], np.float64), np.float32, True),
        (np.array([1.0], np.float32), np.int64, False),
        (np.array([True, False]), np.float32, True),
        (np.array([0, 1], np.int64), np.bool_, True),
        (np.array([2], np.int64), np.bool_, False),
        (np.array([2**24 + 1], np.int64), np.float32, False),
        (np.array([2**24], np.int64), np.float32, True),
    ],
)
def test_coerce_keeps_every_value_or_refuses(array: np.ndarray, dtype: type, ok: bool) -> None:
    if ok:
        out = coerce(array, np.dtype(dtype), "input 0")
        assert out.dtype == dtype
        np.testing.assert_array_equal(out.astype(np.float64), array.astype(np.float64))
    else:
        with pytest.raises(QoptError, match="input 0"):
            coerce(array, np.dtype(dtype), "input 0")


def test_check_inputs_count_and_shape() -> None:
    signature = [((2, 3), np.dtype(np.float32))]
    with pytest.raises(QoptError, match="takes 1 input"):
        check_inputs([], signature, "@forward")
    with pytest.raises(QoptError, match=r"has shape \[3, 2\], expected \[2, 3\]"):
        check_inputs([np.zeros((3, 2), np.float32)], signature, "@forward")
    with pytest.raises(QoptError, match="are not program inputs"):
        check_inputs([np.array([["a"] * 3] * 2)], signature, "@forward")


def test_load_npz_checks_headers(tmp_path: Path) -> None:
    good = tmp_path / "good.npz"
    np.savez(good, np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(load_npz(str(good))["arr_0"], np.arange(6).reshape(2, 3))
    # A header declaring far more than the member holds is refused before reading.
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f4", "fortran_order": False, "shape": (1 << 20, 1 << 10)}
    )
    with zipfile.ZipFile(tmp_path / "huge.npz", "w") as z:
        z.writestr("arr_0.npy", b"\x93NUMPY\x01\x00" + header.getvalue()[8:] + b"\0" * 16)
    with pytest.raises(QoptError, match="truncated or corrupted"):
        load_npz(str(tmp_path / "huge.npz"))
    np.savez(tmp_path / "objects.npz", np.array([{"a": 1}], dtype=object))
    with pytest.raises(QoptError, match="Python objects"):
        load_npz(str(tmp_path / "objects.npz"))
