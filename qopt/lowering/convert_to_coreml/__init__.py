"""`convert-to-coreml`: aten + qfused (+ leftover quant) -> the `coreml` dialect.

Option `target` is the minimum deployment target (`iOS18` default; `iOS16`,
`iOS17`); it becomes the function's `coreml.opset` attribute.

How each kind of quantization lowers (docs/ir.md, `coreml`):

- Weight-only affine (`w4g32`, `w8c`, PT2E's per-channel weights): the packed
  integers stay packed, as a constexpr op feeding `linear` / `conv` / `gather`:
  `constexpr_blockwise_shift_scale` on iOS18 (int4 / uint4 for ranges that fit
  4 bits, else int8 / uint8; `offset` only with a zero point);
  `constexpr_affine_dequantize` on iOS16/17, which can express only 8-bit
  per-channel (one axis) weights.
- LUT / codebook weights: `constexpr_lut_to_dense` with per-block palettes on
  iOS18 (indices typed `uN`); on iOS16/17 only a single table for the whole
  tensor with nbits in {1, 2, 4, 6, 8} (bit-packed indices).
- Static activations (PT2E static): `quantize` / `dequantize` (iOS17+) around
  the float op, as Core ML expects; an output requantization is a `quantize`
  after the (clamped) float result.
- Dynamic activations (`pt2e_dynamic`, `8da4w`): Core ML has no run-time
  choose-qparams op, so the weights stay compressed and torch's per-token /
  per-tensor choose-qparams, quantize and dequantize are written with MIL float
  ops (`Lowering.dynamic_activation`: reduce_min/max, real_div, rounding half to
  even from floor, clip, mul): the package equals torch within float rounding.
  `dynamic_activations=float` (option) drops the activation quantization instead:
  faster, but its results differ from torch's by the quantization error. The
  unfused `quant.choose_qparams` chains fuse-quant leaves are still float.

A scheme the target cannot express is a `QoptError` naming the op, the scheme
(the qfused op's kernel name) and the lowest target that can: never a silent
float fallback.

Indexing and normalization (the same MIL ops on iOS16-18): `select` is
`slice_by_index` with its dim in `squeeze_mask`; `index_select` is `gather`
(int32 indices); comparisons are `equal` / `less` / ... on two operands of one
type (fp32, fp16 or int32); `where` is `select`; inference `batch_norm` is MIL
`batch_norm` for inputs of rank 3 to 5 and `x * a + b` with constant `a`, `b`
(torch's order) for `[N, C]`.

Transformer glue (what tiny Llama / GPT-2 / BERT keep after fold-constants):
`expand` is `reshape` (when it adds leading dims) + MIL `tile`; `addmm` with a
constant `[K, N]` weight (GPT-2's Conv1D) is `linear` with the weight
transposed at compile time, else `matmul` + `add` (alpha / beta by `mul`);
`split` is one `slice_by_index` per piece; `index` with compile-time index
tensors is one `gather` of flat offsets computed with numpy on the input
reshaped to 1-D (run-time indices are an error); `&`, `|`, `^` on bools and
`logical_and/or/xor` are MIL `logical_and/or/xor` (integer bitwise ops have no
MIL op: `compose` writes them in integer arithmetic). MIL `select` is typed by
coremltools from its branches only, so `where` gives one branch the result's shape
when cond is the larger.

Activations, rounding and index reductions: `hardsigmoid` is MIL `sigmoid_hard`
(alpha 1/6, beta 0.5) and `hardswish` is `x * sigmoid_hard(x)`; `leaky_relu`,
`abs`, `floor`, `ceil` are the MIL ops of their names; `log` is `log` with
epsilon 0; `reciprocal` is `real_div(1, x)` and `rsqrt` `real_div(1, sqrt(x))`
(MIL `inverse` / `rsqrt` add epsilon, turning -0.0 into +0.0: +inf, not -inf),
except an `rsqrt` of a sum with a constant holding no -0.0 (RMSNorm's), never -0.0:
MIL `rsqrt` with epsilon 0, as coremltools writes it.
MIL leaves the rounding of halves, the sign rule of `mod` on device and the ties
of `reduce_argmax` unspecified or untested, so torch's semantics are composed
from exact steps: `round` (half to even) from floor and comparisons, `remainder`
as `mod` plus a sign fix-up, and
`argmax` / `argmin` (first extreme, first NaN) as the first index where x equals
its `reduce_max` / `reduce_min`. `log_softmax` is `(x - max) - log(sum(exp(x -
max)))`; `amin` is `reduce_min`; `masked_fill` is `select` with the fill value.

Composed ops (issue 12): `log10` / `log2` are `log` divided by ln(10) / ln(2);
`hardshrink` / `softshrink` are comparisons and `select`s; `group_norm` is a
reshape to `[N, G, -1]`, `layer_norm` and the per-channel affine; interpolate
(`upsample_nearest2d` / `upsample_bilinear2d`) is `gather`s of compile-time
source offsets (torch's index rules) blended with constant weights; `repeat` is
`tile`, `stack` reshapes and `concat`, `flip` gathers, `pixel_shuffle` a rank-5
reshape / transpose, `constant_pad_nd` MIL `pad` (float, no negative amount), else
crops and concatenated constant blocks,
`var` / `std` two passes; rounding division is `floor` / `ceil` of `real_div` on
floats and MIL `floor_div` on int32.

A linear layer with a constant weight is MIL `linear`, as coremltools writes it; one
without bias gets a zero bias constant shared by every linear of that width (the
bytes of one vector per width). A run-time weight is `matmul(x, W,
transpose_y=True)`.

Program state (iOS18): mutable `ml_program` globals stay module-level globals,
retyped to their Core ML state type (fp16 for float states: the only type a
package holds), loads and stores become `coreml.read_state` /
`coreml.coreml_update_state` (`state.py` says how and what is refused).
KV-cache writes at run-time positions (`index_put` with one indexed dim, without
accumulate; `index_copy`) are one MIL `scatter` (mode `update`) along the
indexed axis; `index` with a run-time index tensor on one dim is MIL `gather`
on that axis. torch counts a negative index from the end, MIL (iOS17+) does not:
a run-time index is made non-negative first (`select(i < 0, i + size, i)`).

What runs before the conversion is a pass of its own, each listed by `qopt-coreml`
(qopt/lowering/pipelines.py), which runs this pass as `convert-to-coreml{prepare=false}`:
`record-source-hash` (the package's `qopt.source_sha256`), `externalize-states` (with
`states=io`: states as extra inputs and outputs), `expand-dynamic-windows` (run-time
windows as index ops), `check-mid-level{target=coreml}` (the unfused-pattern
warning, the weights in the compile report) and `compose{target=coreml}` (forms MIL
lacks, in ops it has): the passes `preparation()` returns. Run alone
(`-p fuse-quant,convert-to-coreml`), option `prepare` (default true) runs them first,
the same pass objects.

Layout: `lowering.py` holds the `Lowering` builder and `RuleTable`; one module
per op family holds that family's `RULES` (`elementwise`, `nn`, `shape`,
`reduction`, `layers` after qopt/dialects/aten/, then `qfused`, `quant` and
`state`); this
module holds the pass and `get_rules`, which merges them with a duplicate check
(the families import `lowering`, never this module: no import cycle). Every coreml op carries the
location of the op it lowers.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from qopt.dialects.coreml import opset_number, storage_dtype
from qopt.dialects.queries import constant_array
from qopt.dialects.signature import refuse_dynamic
from qopt.dialects.tensors import elem_of
from qopt.errors import QoptError
from qopt.lowering.analyses import CheckMidLevelPass, RecordSourceHashPass
from qopt.lowering.compose import ComposePass
from qopt.lowering.convert_to_coreml import elementwise, layers, quant, reduction
from qopt.lowering.convert_to_coreml import nn as nn_rules
from qopt.lowering.convert_to_coreml import qfused as qfused_rules
from qopt.lowering.convert_to_coreml import shape as shape_rules
from qopt.lowering.convert_to_coreml import state as state_rules
from qopt.lowering.convert_to_coreml.lowering import (
    Lowering,
    Rules,
    RuleTable,
    mil_elem,
    mil_tensor,
)
from qopt.lowering.dynamic_windows import ExpandDynamicWindowsPass
from qopt.lowering.external_state import ExternalizeStatesPass
from qopt.lowering.rules import merge_rules
from qopt.resources import require_weights

RULES = RuleTable()
"""Builtin values (`arith.constant`)."""


@functools.cache
def get_rules() -> Rules:
    """Every family's rules, merged (an op class ruled by two families is an error)."""
    families = (
        RULES, elementwise.RULES, nn_rules.RULES, shape_rules.RULES, reduction.RULES,
        layers.RULES, qfused_rules.RULES, quant.RULES, state_rules.RULES,
    )  # fmt: skip
    return merge_rules("convert-to-coreml", families)


@RULES(arith.ConstantOp)
def _constant(lw: Lowering, op: arith.ConstantOp) -> Sequence[SSAValue]:
    array = np.asarray(constant_array(op))
    elem = mil_elem(elem_of(op.result))
    value = lw.const(
        array.astype(storage_dtype(elem), copy=False), elem, op.result.name_hint or "const"
    )
    lw.full_precision[value] = array
    return [value]


# ----- the pass ------------------------------------------------------------------------


@dataclass(frozen=True)
class ConvertToCoremlPass(ModulePass):
    """aten + qfused (+ quant) -> coreml, for a minimum deployment target."""

    name = "convert-to-coreml"

    target: str = "iOS18"
    """Minimum deployment target: iOS16, iOS17 or iOS18."""

    states: str = "state"
    """How program state (mutable globals: KV caches) is kept: `state`, Core ML states
    (iOS18), or `io`, extra inputs and outputs of every call that the caller keeps
    (any target; qopt/lowering/external_state.py)."""

    dynamic_activations: str = "quantized"
    """Dynamic-activation schemes (8da4w, PT2E dynamic): "quantized" computes the
    run-time choose_qparams / quantize / dequantize as torch does, with MIL float
    ops; "float" leaves the activations float (faster, not torch's values)."""

    prepare: bool = True
    """First run the passes `preparation()` lists (record-source-hash,
    externalize-states for `states=io`, expand-dynamic-windows, check-mid-level,
    compose), as qopt-coreml does before this pass (`prepare=false`: convert only;
    the pipeline runs them as passes of their own)."""

    def preparation(self) -> list[ModulePass]:
        """The passes that run before the conversion, in order: qopt-coreml lists them,
        and `prepare=true` runs them."""
        passes: list[ModulePass] = [RecordSourceHashPass()]  # the package's qopt.source_sha256
        if self.states == "io":
            passes.append(ExternalizeStatesPass())
        return [
            *passes,
            ExpandDynamicWindowsPass(),
            CheckMidLevelPass(target="coreml"),
            ComposePass(target="coreml"),
        ]

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.states not in ("state", "io"):
            raise QoptError(
                f"convert-to-coreml: states must be 'state' or 'io', got '{self.states}'"
            )
        if self.dynamic_activations not in ("quantized", "float"):
            raise QoptError(
                "convert-to-coreml: dynamic-activations must be 'quantized' or 'float', "
                f"got '{self.dynamic_activations}'"
            )
        try:
            opset = opset_number(self.target)
        except ValueError as e:
            raise QoptError(f"convert-to-coreml: {e}") from None
        if opset < 16:
            raise QoptError("convert-to-coreml: the minimum target is iOS16")
        require_weights(op, self.name)
        if self.prepare:
            for before in self.preparation():
                before.apply(ctx, op)
        refuse_dynamic(op, "convert-to-coreml")
        state_rules.convert_states(op, opset, self.target)
        rules = get_rules()
        for func in list(op.ops):
            if isinstance(func, FuncOp):
                Lowering(func, opset, self.target, rules, self.dynamic_activations).run()
        state_rules.erase_constant_globals(op)


__all__ = [
    "RULES",
    "ConvertToCoremlPass",
    "Lowering",
    "RuleTable",
    "get_rules",
    "mil_elem",
    "mil_tensor",
]
