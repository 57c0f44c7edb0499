"""The `coreml` dialect: the CoreML MIL ops qopt emits (coremltools 9.0 semantics).

One op per MIL op, named as in MIL; `base.py` describes the conventions (MIL
tables, opsets, dtypes, the custom syntax). The ops live by family:

- `constexpr.py`: `const`, `constexpr_blockwise_shift_scale`,
  `constexpr_affine_dequantize`, `constexpr_lut_to_dense`;
- `quantization.py`: `quantize`, `dequantize`;
- `linalg.py`: `linear`, `matmul`, `conv`, `max_pool`, `avg_pool`,
  `scaled_dot_product_attention`;
- `elementwise.py`: binary arithmetic, comparisons, logic, unary math and
  activations (with `softmax` and `clip`), `cast`, `select`;
- `reduction.py`: `reduce_{mean,sum,max,min}`, `layer_norm`, `batch_norm`;
- `shape.py`: `reshape`, `transpose`, `concat`, `tile`, `slice_by_index`,
  `expand_dims`, `squeeze`, `gather`, `scatter`;
- `state.py`: `read_state`, `coreml_update_state` (iOS18 states, each an
  `ml_program.global` of the module).

Each family module ends with its `OPS`; `ALL_OPS` (the dialect's op list) joins them.
Every name is re-exported here, `from qopt.dialects import coreml; coreml.LinearOp`: the
imports below are the package's interface (the unused-import rules are off here).
"""

# ruff: noqa: F401
# pyright: reportUnusedImport=false

from __future__ import annotations

from xdsl.dialects.builtin import AnyFloat
from xdsl.ir import Dialect

from qopt.dialects.coreml import (
    constexpr,
    elementwise,
    linalg,
    quantization,
    reduction,
    shape,
    state,
)
from qopt.dialects.coreml.base import (
    ANY,
    FI,
    IOS18_INDICES,
    IOS18_SHIFT_DATA,
    LUT_TYPES,
    OPSET_ATTR,
    OPSETS,
    CompileTimeOp,
    CoremlOp,
    F,
    broadcast,
    int_bounds,
    keyword_optional_format,
    matmul_shape,
    mil_dtype_name,
    opset_number,
    same_shape_result,
    spatial_out_shape,
    storage_dtype,
    trailing_optional_format,
    type_name,
    with_segments,
)
from qopt.dialects.coreml.constexpr import (
    COMPRESSION_OPS,
    ConstexprAffineDequantizeOp,
    ConstexprBlockwiseShiftScaleOp,
    ConstexprLutToDenseOp,
    ConstexprOp,
    ConstOp,
)
from qopt.dialects.coreml.elementwise import (
    AbsOp,
    AcosOp,
    AddOp,
    AsinOp,
    AtanOp,
    BinaryOp,
    CastOp,
    CeilOp,
    ClipOp,
    CompareOp,
    CoshOp,
    CosOp,
    EqualOp,
    ErfOp,
    ExpOp,
    FloorDivOp,
    FloorOp,
    GeluOp,
    GreaterEqualOp,
    GreaterOp,
    InverseOp,
    LeakyReluOp,
    LessEqualOp,
    LessOp,
    LogicalAndOp,
    LogicalOp,
    LogicalOrOp,
    LogicalXorOp,
    LogOp,
    MaximumOp,
    MinimumOp,
    ModOp,
    MulOp,
    NotEqualOp,
    PowOp,
    RealDivOp,
    ReluOp,
    RsqrtOp,
    SelectOp,
    SigmoidHardOp,
    SigmoidOp,
    SiluOp,
    SinhOp,
    SinOp,
    SoftmaxOp,
    SqrtOp,
    SubOp,
    TanhOp,
    TanOp,
    UnaryOp,
)
from qopt.dialects.coreml.linalg import (
    AvgPoolOp,
    ConvOp,
    LinearOp,
    MatmulOp,
    MaxPoolOp,
    PoolOp,
    ScaledDotProductAttentionOp,
)
from qopt.dialects.coreml.quantization import DequantizeOp, QuantizeOp
from qopt.dialects.coreml.reduction import (
    BatchNormOp,
    CumsumOp,
    LayerNormOp,
    ReduceMaxOp,
    ReduceMeanOp,
    ReduceMinOp,
    ReduceOp,
    ReduceSumOp,
)
from qopt.dialects.coreml.shape import (
    ConcatOp,
    ExpandDimsOp,
    GatherAlongAxisOp,
    GatherOp,
    PadOp,
    ReshapeOp,
    ScatterOp,
    SliceByIndexOp,
    SqueezeOp,
    TileOp,
    TransposeOp,
    slice_by_index_indices,
)
from qopt.dialects.coreml.state import (
    PACKAGE_STATE_TYPES,
    STATE_TYPES,
    CoremlUpdateStateOp,
    ReadStateOp,
    StateOp,
    mil_state_names,
    mutable_globals,
)
from qopt.dialects.tensors import elem_of, shape_of  # re-exported: coreml.shape_of(v)

#: Every op of the dialect: each family module's `OPS`, in family order.
ALL_OPS: tuple[type[CoremlOp], ...] = (
    *constexpr.OPS,
    *quantization.OPS,
    *linalg.OPS,
    *elementwise.OPS,
    *reduction.OPS,
    *shape.OPS,
    *state.OPS,
)
BY_MIL_NAME: dict[str, type[CoremlOp]] = {op.name.split(".", 1)[1]: op for op in ALL_OPS}

CoreML = Dialect("coreml", list(ALL_OPS), [])
