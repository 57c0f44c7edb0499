"""A fixed sample of the OpInfo conformance suite (qopt/conformance.py), on every target.

`benchmarks/conformance.py` runs the whole of torch's OpInfo database and writes
docs/conformance.md; this runs 44 of its cases (tiny sample inputs across the op
families: elementwise, comparisons, reductions, views and scatters, nn layers) through
torch.export, the interpreter, CoreML (the package read back) and Vulkan, and asserts
what the table must show: no wrong result, no crash, no timeout. Every case chosen
passes on every target (a target that cannot run one, no Vulkan device, is reported
and left out). The harness's own classification is checked first, on made-up results.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import numpy as np
import pytest

import qopt
from qopt.conformance import Case, Outcome, classify, iter_cases, latest, mismatch, run_case

SAMPLE: list[tuple[str, str, int]] = [
    ("add", "int64", 2),
    ("mul", "float32", 2),
    ("div.no_rounding_mode", "float32", 2),
    ("remainder", "int32", 2),
    ("exp", "float32", 0),
    ("nn.functional.gelu", "float32", 0),
    ("nn.functional.hardswish", "float32", 1),
    ("where", "float32", 1),
    ("masked_fill", "int64", 2),
    ("logical_xor", "bool", 2),
    ("lt", "float32", 2),
    ("round", "float32", 0),
    ("softmax", "float32", 1),
    ("log_softmax", "float32", 0),
    ("var", "float32", 1),
    ("cat", "int64", 0),
    ("permute", "float32", 1),
    ("flip", "float32", 1),
    ("index_select", "int64", 1),
    ("slice_scatter", "float32", 1),
    ("unbind", "float32", 0),
    ("nn.functional.pad.constant", "float32", 1),
    ("nn.functional.conv2d", "float32", 0),
    ("nn.functional.group_norm", "float32", 0),
    ("nn.functional.avg_pool2d", "float32", 0),
    ("bmm", "float32", 0),
    ("sub", "float32", 0),  # rank-0 inputs: [1] Core ML program inputs, reshaped inside
    ("asin", "float32", 0),
    ("sign", "int64", 0),
    ("isinf", "float32", 0),
    ("lerp", "float32", 1),
    ("addcmul", "int64", 0),
    ("addcdiv", "float32", 1),
    ("expm1", "float32", 0),
    ("log1p", "int64", 0),
    ("nan_to_num", "float32", 0),
    ("copysign", "int64", 0),
    ("atan2", "float32", 1),
    ("signbit", "float32", 0),
    ("fmod", "int64", 1),
    ("hypot", "float32", 0),
    ("logaddexp2", "float32", 0),
    ("atanh", "int64", 0),
    ("fmax", "float32", 0),
]


def sample_cases() -> Iterator[Case]:
    for op, dtype, index in SAMPLE:
        (case,) = [
            c
            for c in iter_cases([op], [dtype], index + 1)
            if isinstance(c, Case) and c.op == op and c.index == index
        ]
        yield case


@pytest.fixture(scope="module")
def outcomes() -> list[Outcome]:
    from qopt.backends.vulkan.runtime import vulkan_available

    targets = ["interp", "coreml"]
    if (reason := vulkan_available()) is None:
        targets.append("vulkan")
    else:
        print(f"Vulkan left out of the conformance sample: {reason}")
    cases = list(sample_cases())
    gc.collect()
    gc.freeze()  # op_db's objects: coremltools' gc.collect() per package then costs less
    try:
        return [o for case in cases for o in run_case(case, targets, seconds=60)]
    finally:
        gc.unfreeze()


def test_sample_has_no_wrong_and_no_crash(outcomes: list[Outcome]) -> None:
    bad = [o for o in outcomes if o.status not in ("pass", "unsupported")]
    assert not bad, "\n".join(
        f"{o.op} {o.dtype} #{o.index} {o.target}: {o.status}: {o.detail}" for o in bad
    )


def test_sample_passes_everywhere(outcomes: list[Outcome]) -> None:
    """The cases were chosen as passing on every target: a refusal now is lost coverage."""
    refused = [
        f"{o.op} {o.dtype} #{o.index} {o.target}: {o.detail}"
        for o in outcomes
        if o.status != "pass"
    ]
    assert not refused, "\n".join(refused)
    assert {(o.op, o.dtype, o.index) for o in outcomes} == set(SAMPLE)


# ----- the harness's classification --------------------------------------------------------


def test_mismatch_rules() -> None:
    f = np.array([1.0, np.nan, np.inf, -2.0], np.float32)
    assert mismatch(f.copy(), f) is None
    assert mismatch(f + np.float32(1e-7), f) is None  # within float32 round-off
    assert "max abs error" in str(mismatch(f * 1.01, f))
    assert "NaN" in str(mismatch(np.nan_to_num(f, posinf=np.inf), f))
    assert "infinities" in str(mismatch(np.array([1, np.nan, -np.inf, -2], np.float32), f))
    assert "dtype" in str(mismatch(f.astype(np.float64), f))
    assert "shape" in str(mismatch(f[:3], f))
    i = np.arange(6, dtype=np.int64).reshape(2, 3)
    j = i.copy()
    j[1, 2] = 7
    assert "1 of 6 elements differ (at (1, 2)" in str(mismatch(j, i))
    assert mismatch(np.array(True), np.array(True)) is None
    assert "differ" in str(mismatch(np.array(False), np.array(True)))


def test_classify_statuses() -> None:
    want = [np.zeros(2, np.float32)]

    def refuse() -> list[np.ndarray]:
        raise qopt.QoptError("convert-to-vkc: 'aten.foo': no lowering\nmore")

    def fail() -> list[np.ndarray]:
        raise KeyError("boom")

    assert classify(lambda: [np.zeros(2, np.float32)], want, "interp") == ("pass", "")
    assert classify(refuse, want, "interp") == (
        "unsupported",
        "convert-to-vkc: 'aten.foo': no lowering",
    )
    assert classify(lambda: [np.ones(2, np.float32)], want, "vulkan")[0] == "wrong"
    status, detail = classify(fail, want, "interp")
    assert status == "crash"
    assert detail.startswith("KeyError: 'boom' at test_conformance.py")
    # Core ML returns int64 as int32 and bools as fp32
    assert (
        classify(lambda: [np.array([1.0, 0.0], np.float32)], [np.array([True, False])], "coreml")[0]
        == "pass"
    )
    assert (
        classify(lambda: [np.array([True, False])], [np.array([True, False])], "coreml")[0]
        == "wrong"
    )


def test_a_rerun_replaces_a_case() -> None:
    old = [Outcome("add", "int64", 0, t, "crash") for t in ("interp", "vulkan")]
    new = [Outcome("add", "int64", 0, "export", "skip", "random")]
    assert latest([*old, *new]) == new
    again = [Outcome("add", "int64", 0, t, "pass") for t in ("interp", "vulkan")]
    assert latest([*old, *new, *again]) == again


def test_both_ir_forms() -> None:
    """A case runs in the form users get (`export`, as torch.export.export gives it)
    and after run_decompositions (`core`); the outcomes of the two forms are kept apart
    and both are counted."""
    from qopt.conformance import render_markdown

    (case,) = [c for c in iter_cases(["logsumexp"], ["float32"], 1) if isinstance(c, Case)]
    export = run_case(case, ["interp"], seconds=60, form="export")
    core = run_case(case, ["interp"], seconds=60, form="core")
    assert [(o.form, o.status) for o in export] == [("export", "pass")]
    assert "aten.logsumexp.default" in export[0].aten_ops  # preserved by torch.export
    assert [(o.form, o.status) for o in core] == [("core", "pass")]
    assert "aten.logsumexp.default" not in core[0].aten_ops
    assert latest([*export, *core]) == [*export, *core]
    text = render_markdown([*export, *core], ["interp"], "# t")
    assert "| export | interp | 1 | 1 |" in text
    assert "| core | interp | 1 | 1 |" in text
    with pytest.raises(ValueError, match="unknown IR form"):
        run_case(case, ["interp"], form="aot")
