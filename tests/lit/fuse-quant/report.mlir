// RUN: qopt-opt %S/negative.mlir -p 'fuse-quant{report=true}' --split-input-file 2>&1 >/dev/null | filecheck %s
// RUN: qopt-opt %S/linear.mlir -p 'fuse-quant{report=true}' --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=FUSED --allow-empty
// `fuse-quant{report=true}` prints, on stderr, one line per quant op left unfused
// with the reason the pattern that looked at it recorded (or, when no pattern
// matched around it, its users). Input: the must-not-fire cases of negative.mlir,
// in order, exactly one line per unfused quant op (consecutive lines); every case of
// linear.mlir fuses completely and prints nothing.

// FUSED-NOT: fuse-quant:

// CHECK:      fuse-quant: 'quant.quantize' not fused: no fusable pattern around it (used by quant.dequantize)
// CHECK-NEXT: fuse-quant: 'quant.dequantize' not fused: quantize and dequantize parameters differ (for 'aten.linear')
// CHECK-NEXT: fuse-quant: 'quant.dequantize' not fused: no fusable pattern around it (used by aten.linear)
// CHECK-NEXT: fuse-quant: 'quant.dequantize' not fused: no fusable pattern around it (used by quant.quantize)
// CHECK-NEXT: fuse-quant: 'quant.quantize' not fused: quantize and dequantize parameters differ (for 'quant.quantize')
// CHECK-NEXT: fuse-quant: 'quant.quantize' not fused: no fusable pattern around it (used by quant.dequantize)
// CHECK-NEXT: fuse-quant: 'quant.dequantize' not fused: no fusable pattern around it (used by aten.linear)
// CHECK-NEXT: fuse-quant: 'quant.dequantize' not fused: quantized-activation kernels need symmetric weights, but the weight has a nonzero zero point (for 'aten.linear')
// CHECK-NEXT: fuse-quant: 'quant.dequantize' not fused: no fusable pattern around it (used by aten.conv2d)
// CHECK-NEXT: fuse-quant: 'quant.dequantize' not fused: quantized-activation kernels need symmetric weights, but the weight has a nonzero zero point (for 'aten.conv2d')
// CHECK-NEXT: fuse-quant: 'quant.choose_qparams' not fused: no fusable pattern around it (used by quant.dequantize, quant.quantize)
// CHECK-NEXT: fuse-quant: 'quant.quantize' not fused: no fusable pattern around it (used by quant.dequantize)
// CHECK-NEXT: fuse-quant: 'quant.dequantize' not fused: dynamic activation quantization is not supported on conv2d (static per-tensor or weight-only only) (for 'aten.conv2d')
// CHECK-NEXT: fuse-quant: 'quant.dequantize' not fused: no fusable pattern around it (used by aten.conv2d)
// CHECK-NEXT: fuse-quant: 'quant.dequantize_codebook' not fused: LUT (codebook) weights are not supported on conv2d (for 'aten.conv2d')
// CHECK-NEXT: fuse-quant: 'quant.dequantize' not fused: the add's result has several users (requant not fused) (for 'aten.add')
// CHECK-NEXT: fuse-quant: 'quant.dequantize' not fused: the add's result has several users (requant not fused) (for 'aten.add')
// CHECK-NEXT: fuse-quant: 'quant.quantize' not fused: no fusable pattern around it (used by func.return)
// CHECK-NEXT: fuse-quant: 'quant.quantize' not fused: the value it quantizes has 2 users, so the output quantize is not fused (for 'aten.linear')
// CHECK-NEXT: fuse-quant: 'quant.dequantize' not fused: weight data is not a constant (for 'aten.linear')
// CHECK-NEXT: fuse-quant: 'quant.dequantize' not fused: weight block [3, 4] spans several output rows (for 'aten.linear')
// CHECK-NEXT: fuse-quant: 'quant.quantize' not fused: zero point is added before rounding (for 'aten.linear')
// CHECK-NEXT: fuse-quant: 'quant.dequantize' not fused: no fusable pattern around it (used by aten.linear)
// CHECK-NEXT: fuse-quant: 'quant.dequantize' not fused: no fusable pattern around it (used by aten.linear)
// CHECK-NEXT: fuse-quant: 'quant.dequantize' not fused: the other operand of aten.add is not dequantized (q8ta_add needs both) (for 'aten.add')
// CHECK-NEXT: fuse-quant: 'quant.quantize' not fused: no fusable pattern around it (used by func.return)
// CHECK-NEXT: fuse-quant: 'quant.dequantize' not fused: the add's result is not requantized (q8ta_add needs an output quantize) (for 'aten.add')
// CHECK-NEXT: fuse-quant: 'quant.dequantize' not fused: the add's result is not requantized (q8ta_add needs an output quantize) (for 'aten.add')
