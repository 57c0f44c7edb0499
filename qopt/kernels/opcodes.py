"""The op codes of the multi-op kernels: the one definition of each number.

A multi-op kernel picks its operation with a specialization constant (`OP` of
unary, binary, reduce_rows and pool2d; `MAPPING` of choose_qparams_rows; `ACT` of
conv2d_q8; `DTYPE` of unary/binary and `MODE` of fill). These tables are the only
place the numbers are written: the lowering and the numpy references look codes
up by name, and the GLSL compares against named constants generated from
`OPCODE_TABLES` (`#define UNARY_RELU 1`, ... inserted by
qopt/kernels/source.py after each kernel's `#version` line; the op bodies of unary,
binary and fused_elementwise are one snippet, glsl/include/elementwise_ops.glsl).
"""

from __future__ import annotations

from collections.abc import Mapping

UNARY_OPS = {
    "identity": 0,
    "relu": 1,
    "silu": 2,
    "sigmoid": 3,
    "tanh": 4,
    "exp": 5,
    "log": 6,
    "sqrt": 7,
    "rsqrt": 8,
    "reciprocal": 9,
    "sin": 10,
    "cos": 11,
    "erf": 12,
    "neg": 13,
    "abs": 14,
    "gelu": 15,
    "gelu_tanh": 16,
    "floor": 17,
    "ceil": 18,
    "round": 19,
    "clamp": 20,
    "leaky_relu": 21,
    "hardswish": 22,
    "hardsigmoid": 23,
    "logical_not": 24,
    "cast_f32_i32": 25,
    "cast_i32_f32": 26,
    "to_bool": 27,
    "square": 28,
    "log10": 29,
    "log2": 30,
    "tan": 31,
    "hardshrink": 32,
    "softshrink": 33,
    "sinh": 34,
    "cosh": 35,
    "trunc": 36,
    "sign": 37,
    "asin": 38,
    "acos": 39,
    "atan": 40,
    "expm1": 41,
    "log1p": 42,
    "signbit": 43,
}
UNARY_INT_OPS = (
    "identity",
    "relu",
    "neg",
    "abs",
    "clamp",
    "logical_not",
    "cast_i32_f32",
    "to_bool",
    "sign",
    "signbit",
)
"""The unary ops the i32 variant (DTYPE i32) computes."""
BINARY_OPS = {
    "add": 0,
    "sub": 1,
    "mul": 2,
    "div": 3,
    "pow": 4,
    "maximum": 5,
    "minimum": 6,
    "eq": 7,
    "ne": 8,
    "lt": 9,
    "le": 10,
    "gt": 11,
    "ge": 12,
    "logical_and": 13,
    "logical_or": 14,
    "remainder": 15,
    "floor_divide": 16,
    "bitwise_and": 17,
    "bitwise_or": 18,
    "bitwise_xor": 19,
    "fmod": 20,
    "bitwise_left_shift": 21,
    "bitwise_right_shift": 22,
    "trunc_divide": 23,
}
BINARY_BOOL_NAMES = ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or")
"""The binary ops that write i32 0/1 (a contiguous code range: eq .. logical_or)."""
BINARY_BOOL_OPS = tuple(BINARY_OPS[name] for name in BINARY_BOOL_NAMES)
REDUCE_OPS = {"sum": 0, "mean": 1, "max": 2, "min": 3, "argmax": 4, "argmin": 5}
POOL_OPS = {"max": 0, "avg": 1}
MAPPINGS = {"asymmetric": 0, "symmetric": 1, "symmetric_no_clipping_err": 2}
"""choose_qparams_rows' MAPPING (quant.choose_qparams' mapping types)."""
CONV_ACT = {"none": 0, "static": 1, "quantized": 2}
"""conv2d_q8's ACT: weight-only, static activations quantized in-kernel, or i32 input."""
DTYPES = {"f32": 0, "i32": 1}
FUSED_OPS = {"none": -1, "binary": 64, "select": 128}
"""fused_elementwise's instruction codes: `I<k>_OP` is a UNARY_OPS code, FUSED_BINARY +
a BINARY_OPS code, FUSED_SELECT (by an index digit: a cat's pieces) or FUSED_NONE (an
unused instruction slot)."""
"""DTYPE of unary/binary and MODE of fill: the element type the kernel computes in."""

OPCODE_TABLES: Mapping[str, Mapping[str, int]] = {
    "UNARY": UNARY_OPS,
    "BINARY": BINARY_OPS,
    "REDUCE": REDUCE_OPS,
    "POOL": POOL_OPS,
    "MAPPING": MAPPINGS,
    "CONV_ACT": CONV_ACT,
    "DTYPE": DTYPES,
    "FUSED": FUSED_OPS,
}
"""Prefix -> table: the GLSL sees `<PREFIX>_<NAME>` (upper case) for each entry."""


def opcode_name(table: Mapping[str, int], code: int) -> str:
    """The name of `code` in `table` (ValueError for an unknown code)."""
    for name, value in table.items():
        if value == code:
            return name
    raise ValueError(f"unknown op code {code}")
