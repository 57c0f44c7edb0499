"""fuse-quant's Q(DQ(q, P), P) -> q fold (qopt/lowering/fuse_quant/fold.py) is exact.

The claim proven in fold.py is checked numerically over every int8 / uint8 value,
every zero point of the range and many scales (f32 and f64 scale tensors, the
whole accepted range 2^-100 .. 2^100), through the quant interpreter (bit-exact
with torch), then end to end on IR: the pattern fires and the program's integer
outputs do not change.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

import qopt
from qopt.context import parse_module
from qopt.interpreters.quant import dequantize, quantize
from qopt.lowering.fuse_quant import FuseQuantPass
from qopt.lowering.fuse_quant.fold import _MAX_SCALE, _MIN_SCALE


def _scales(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    exponents = rng.uniform(np.log2(_MIN_SCALE), np.log2(_MAX_SCALE), 400)
    typical = rng.uniform(1e-4, 1.0, 400)
    edges = np.array([_MIN_SCALE, _MAX_SCALE, 1.0, 0.1, 1 / 3, 2**-24, 0.0051003587432205677])
    return np.concatenate([2.0**exponents, typical, edges])


@pytest.mark.parametrize(
    ("dtype", "qmin", "qmax"), [(np.int8, -128, 127), (np.uint8, 0, 255), (np.int8, -8, 7)]
)
@pytest.mark.parametrize("scale_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("compute", [np.float32, np.float64])
def test_quantize_of_dequantize_is_identity(
    dtype: type, qmin: int, qmax: int, scale_dtype: type, compute: type
) -> None:
    q = np.arange(qmin, qmax + 1).astype(dtype)
    zero_points = np.unique(np.linspace(qmin, qmax, 9).round().astype(np.int64))
    block = q.shape
    for scale_value in _scales(seed=qmax):
        scale = np.asarray(scale_value, dtype=scale_dtype)
        if not _MIN_SCALE <= float(scale) <= _MAX_SCALE:
            continue
        for zp_value in zero_points:
            zp = np.asarray(zp_value)
            x = dequantize(q, scale, zp, block, np.dtype(np.float32), np.dtype(np.float32))
            back = quantize(x, scale, zp, block, qmin, qmax, np.dtype(dtype), np.dtype(compute))
            assert np.array_equal(back, q), (float(scale), int(zp_value))


_FOLD_IR = """
func.func @forward(%x: tensor<256xf32>) -> tensor<256xi8> {
  %s = arith.constant dense<0.0123> : tensor<f64>
  %z = arith.constant dense<-7> : tensor<i64>
  %q = quant.quantize %x, %s, %z {block_size = array<i64: 256>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<256xf32>, tensor<f64>, tensor<i64>) -> tensor<256xi8>
  %d = quant.dequantize %q, %s, %z {block_size = array<i64: 256>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<256xi8>, tensor<f64>, tensor<i64>) -> tensor<256xf32>
  %r = quant.quantize %d, %s, %z {block_size = array<i64: 256>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<256xf32>, tensor<f64>, tensor<i64>) -> tensor<256xi8>
  func.return %r : tensor<256xi8>
}
"""


def test_fold_pattern_keeps_outputs() -> None:
    module = parse_module(_FOLD_IR)
    assert isinstance(module, ModuleOp)
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(256) * 2).astype(np.float32)
    x[:8] = (np.arange(8) + 0.5).astype(np.float32) * np.float32(0.0123)  # rounding ties
    (before,) = qopt.interpret(module, x)
    FuseQuantPass.run(module)
    module.verify()
    names = [op.name for op in module.walk()]
    assert names.count("quant.quantize") == 1
    assert "quant.dequantize" not in names
    (after,) = qopt.interpret(module, x)
    assert np.array_equal(before, after)
