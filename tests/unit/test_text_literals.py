"""Float dense literals survive printing and parsing: the hexadecimal elements xDSL's
printer writes for infinities and NaN are read back as bit patterns, as MLIR reads
them (qopt.context.QoptParser), in every float type."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    TensorType,
)
from xdsl.utils.exceptions import ParseError

from qopt.context import parse_module, print_module

SPECIAL = [float("-inf"), float("inf"), float("nan"), -0.0, 1.5, -2.25]


def _values(module) -> list[Any]:
    (constant,) = [op for op in module.walk() if isinstance(op, ConstantOp)]
    assert isinstance(constant.value, DenseIntOrFPElementsAttr)
    return list(constant.value.get_values())


def _module_text(element_type) -> str:
    attr = DenseIntOrFPElementsAttr.from_list(TensorType(element_type, [len(SPECIAL)]), SPECIAL)
    return (
        "builtin.module {\n  func.func @f() -> "
        f"{attr.type} {{\n    %0 = arith.constant {attr}\n"
        f"    func.return %0 : {attr.type}\n  }}\n}}\n"
    )


@pytest.mark.parametrize(
    "element_type", [Float16Type(), BFloat16Type(), Float32Type(), Float64Type()], ids=str
)
def test_special_floats_round_trip(element_type) -> None:
    text = _module_text(element_type)
    assert "0x" in text  # the printer writes the infinities and NaN as bit patterns
    module = parse_module(text)
    values = _values(module)
    assert len(values) == len(SPECIAL)
    for got, want in zip(values, SPECIAL, strict=True):
        if math.isnan(want):
            assert math.isnan(got)
        else:
            assert got == want
            assert math.copysign(1.0, got) == math.copysign(1.0, want)
    assert print_module(module) == print_module(parse_module(print_module(module)))


def test_hex_elements_of_integer_tensors_stay_integers() -> None:
    module = parse_module(
        "builtin.module {\n  func.func @f() -> tensor<2xi32> {\n"
        "    %0 = arith.constant dense<[0x10, 3]> : tensor<2xi32>\n"
        "    func.return %0 : tensor<2xi32>\n  }\n}\n"
    )
    assert _values(module) == [16, 3]


def test_hex_wider_than_the_element_is_an_error() -> None:
    with pytest.raises(ParseError, match="wider than its element type f16"):
        parse_module(
            "builtin.module {\n  func.func @f() -> tensor<f16> {\n"
            "    %0 = arith.constant dense<0x1fc00> : tensor<f16>\n"
            "    func.return %0 : tensor<f16>\n  }\n}\n"
        )


def test_mask_bits_match_numpy() -> None:
    """The f32 pattern 0xff800000 is numpy's -inf, not the integer 4286578688."""
    module = parse_module(
        "builtin.module {\n  func.func @f() -> tensor<f32> {\n"
        "    %0 = arith.constant dense<0xFF800000> : tensor<f32>\n"
        "    func.return %0 : tensor<f32>\n  }\n}\n"
    )
    value = np.float32(_values(module)[0])
    assert value.tobytes() == np.array([0xFF800000], np.uint32).tobytes()
