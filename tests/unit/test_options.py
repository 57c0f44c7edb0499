"""`qopt.compile`'s options: keyword-only and typed, coremltools' enums accepted as
well as strings, and every mistake a QoptError (listing the valid choices, the
closest one for a typo) before anything is imported or compiled."""

from __future__ import annotations

from typing import Any

import pytest

import qopt

NOT_A_PROGRAM = object()  # the options are checked before the program is read


@pytest.mark.parametrize(
    ("target", "options", "message"),
    [
        (
            "coreml",
            {"minimum_deploymnet_target": "iOS18"},
            "qopt.compile(target='coreml') has no option minimum_deploymnet_target (did you "
            "mean 'minimum_deployment_target'?); its options are trust_pickle, limits, "
            "dynamic_sizes, verbose, minimum_deployment_target, compute_precision, output_names, "
            "states, dynamic_activations",
        ),
        (
            "vulkan",
            {"devise": 0},
            "qopt.compile(target='vulkan') has no option devise (did you mean 'device'?); its "
            "options are trust_pickle, limits, dynamic_sizes, verbose, device, validation",
        ),
        (
            "coreml",
            {"device": 0},
            "qopt.compile: device is an option of target='vulkan', not of target='coreml'",
        ),
        (
            "vulkan",
            {"compute_precision": "fp16"},
            "qopt.compile: compute_precision is an option of target='coreml', not of "
            "target='vulkan'",
        ),
        (
            "coreml",
            {"compute_precision": "fp61"},
            "compute_precision 'fp61' (did you mean 'fp16'?) is not one of 'fp32', 'fp16'",
        ),
        (
            "coreml",
            {"minimum_deployment_target": "iOS15"},
            "minimum_deployment_target 'iOS15' is not one qopt compiles for: use iOS16, iOS17, "
            "iOS18",
        ),
        ("coreml", {"output_names": "y"}, "output_names is a list of strings"),
        (
            "coreml",
            {"states": "IO"},
            "states 'IO' (did you mean 'io'?) is not one of 'state', 'io'",
        ),
        ("vulkan", {"states": "io"}, "qopt.compile: states is an option of target='coreml'"),
        (
            "vulcan",
            {},
            "unknown target 'vulcan' (did you mean 'vulkan'?): use 'coreml' or 'vulkan'",
        ),
    ],
)
def test_option_mistakes_are_qopt_errors(
    target: str, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(qopt.QoptError) as info:
        qopt.compile(NOT_A_PROGRAM, target, **options)
    assert str(info.value).startswith(message), str(info.value)


def test_coremltools_enums_are_accepted() -> None:
    ct = pytest.importorskip("coremltools")
    from qopt.options import compute_precision, deployment_target

    assert deployment_target(ct.target.iOS17) == "iOS17"
    assert deployment_target(ct.target.macOS15) == "iOS18"  # the same member
    assert deployment_target("ios16") == "iOS16"
    assert compute_precision(ct.precision.FLOAT16) == "fp16"
    assert compute_precision(ct.precision.FLOAT32) == "fp32"
    with pytest.raises(qopt.QoptError, match="pass a deployment target as minimum_deployment"):
        qopt.compile(NOT_A_PROGRAM, ct.target.iOS18)


def test_nn_module_error_shows_the_export_line() -> None:
    import torch

    with pytest.raises(qopt.QoptError) as info:
        qopt.compile(torch.nn.Linear(2, 3), "coreml")
    assert str(info.value).startswith(
        "qopt takes a program captured by torch.export, got the nn.Module Linear: export it "
        "first, with example inputs of the shapes it will run on: "
        "ep = torch.export.export(model.eval(), (example_input,)), then qopt.compile(ep, ...)"
    )
