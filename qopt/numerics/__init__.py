"""qopt's numerics: the one numpy implementation of each semantic operation.

The interpreters of every level, the numpy references of the Vulkan kernels, the
lowerings (where they compute at compile time) and the test helpers all call
these functions, so a rounding or eps rule is written, and fixed, in one place:

- `reductions`: float32 sums and means in the order of torch's CPU kernels
  (ATen's cascade sum), bit for bit.
- `quant`: affine quantize / dequantize (per tensor, per channel, per block),
  dynamic choose_qparams and codebook (LUT) decoding, bit for bit with
  `torch.ops.quantized_decomposed.*` and `torchao.quantization.quant_primitives`
  on integer results (docs/ir.md). Where targets define a step differently
  (MIL's quantize divides by the scale, torch multiplies by `f32(1 / scale)`) it
  is an explicit parameter.
- `activations`: erf, sigmoid, SiLU, GELU (exact / tanh / sigmoid approximation),
  hardswish, hardsigmoid, leaky_relu, in torch's CPU operation order.
- `resize`: the source indices and weights of torch's nearest / bilinear 2-D
  upsampling, in float32 as ATen's CPU kernels compute them.
- `bits`: sub-byte values as an LSB-first bit stream (Core ML's `weight.bin` and
  the iOS16 `constexpr_lut_to_dense` indices).

Layering: this package is the semantics layer's base. It imports numpy and the
IR core (`qopt.dialects`, `qopt.kernels`, `qopt.resources`) only, never the
interpreters, transforms or backends that use it. Reading attributes into numpy
(`dense` / `dense_resource`) and the shapes and element types of SSA values are
IR core: `qopt.resources.elements_array`, `qopt.dialects.tensors`.
"""

from __future__ import annotations

from qopt.numerics.reductions import sequential_sum, torch_mean, torch_sum, torch_sum_last

__all__ = ["sequential_sum", "torch_mean", "torch_sum", "torch_sum_last"]
