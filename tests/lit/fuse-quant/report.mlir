// RUN: qopt-opt %S/negative.mlir -p 'fuse-quant{report=true}' --split-input-file 2>&1 >/dev/null | filecheck %s
// RUN: qopt-opt %S/linear.mlir -p 'fuse-quant{report=true}' --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=FUSED
// `fuse-quant{report=true}` prints, on stderr, per module: the totals (fused ops by
// kernel name; quant ops left unfused of those there were), then the quant ops left
// grouped by the reason the pattern that looked at them recorded (or, when no pattern
// matched around one, "no fusable pattern around it" and its users), the largest
// group first, one line per op. Input: the must-not-fire cases of negative.mlir, in
// order (consecutive lines); every case of linear.mlir fuses completely: its totals
// only.

// FUSED:      fuse-quant: fused 1 op(s) (linear_q8csw x1); 0 of 1 quant op(s) left unfused
// FUSED-NEXT: fuse-quant: fused 1 op(s) (linear_q4gsw x1); 0 of 1 quant op(s) left unfused
// FUSED-NOT:  not fused

// CHECK:      fuse-quant: fused 0 op(s); 3 of 3 quant op(s) left unfused
// CHECK-NEXT: fuse-quant: 2 not fused: no fusable pattern around it
// CHECK-NEXT: fuse-quant:   'quant.quantize' (used by quant.dequantize)
// CHECK-NEXT: fuse-quant:   'quant.dequantize' (used by aten.linear)
// CHECK-NEXT: fuse-quant: 1 not fused: quantize and dequantize parameters differ
// CHECK-NEXT: fuse-quant:   'quant.dequantize' (for 'aten.linear')
// CHECK-NEXT: fuse-quant: fused 0 op(s); 2 of 2 quant op(s) left unfused
// CHECK-NEXT: fuse-quant: 1 not fused: no fusable pattern around it
// CHECK-NEXT: fuse-quant:   'quant.dequantize' (used by quant.quantize)
// CHECK-NEXT: fuse-quant: 1 not fused: quantize and dequantize parameters differ
// CHECK-NEXT: fuse-quant:   'quant.quantize' (for 'quant.quantize')
// CHECK-NEXT: fuse-quant: fused 0 op(s); 3 of 3 quant op(s) left unfused
// CHECK-NEXT: fuse-quant: 2 not fused: no fusable pattern around it
// CHECK-NEXT: fuse-quant:   'quant.quantize' (used by quant.dequantize)
// CHECK-NEXT: fuse-quant:   'quant.dequantize' (used by aten.linear)
// CHECK-NEXT: fuse-quant: 1 not fused: quantized-activation kernels need symmetric weights, but the weight has a nonzero zero point
// CHECK-NEXT: fuse-quant:   'quant.dequantize' (for 'aten.linear')
// CHECK-NEXT: fuse-quant: fused 0 op(s); 2 of 2 quant op(s) left unfused
// CHECK-NEXT: fuse-quant: 1 not fused: no fusable pattern around it
// CHECK-NEXT: fuse-quant:   'quant.dequantize' (used by aten.conv2d)
// CHECK-NEXT: fuse-quant: 1 not fused: quantized-activation kernels need symmetric weights, but the weight has a nonzero zero point
// CHECK-NEXT: fuse-quant:   'quant.dequantize' (for 'aten.conv2d')
// CHECK-NEXT: fuse-quant: fused 0 op(s); 4 of 4 quant op(s) left unfused
// CHECK-NEXT: fuse-quant: 3 not fused: no fusable pattern around it
// CHECK-NEXT: fuse-quant:   'quant.choose_qparams' (used by quant.dequantize, quant.quantize)
// CHECK-NEXT: fuse-quant:   'quant.quantize' (used by quant.dequantize)
// CHECK-NEXT: fuse-quant:   'quant.dequantize' (used by aten.conv2d)
// CHECK-NEXT: fuse-quant: 1 not fused: dynamic activation quantization is not supported on conv2d (static per-tensor or weight-only only)
// CHECK-NEXT: fuse-quant:   'quant.dequantize' (for 'aten.conv2d')
// CHECK-NEXT: fuse-quant: fused 0 op(s); 1 of 1 quant op(s) left unfused
// CHECK-NEXT: fuse-quant: 1 not fused: LUT (codebook) weights are not supported on conv2d
// CHECK-NEXT: fuse-quant:   'quant.dequantize_codebook' (for 'aten.conv2d')
// CHECK-NEXT: fuse-quant: fused 0 op(s); 3 of 3 quant op(s) left unfused
// CHECK-NEXT: fuse-quant: 2 not fused: the add's result has several users (requant not fused)
// CHECK-NEXT: fuse-quant:   'quant.dequantize' (for 'aten.add')
// CHECK-NEXT: fuse-quant:   'quant.dequantize' (for 'aten.add')
// CHECK-NEXT: fuse-quant: 1 not fused: no fusable pattern around it
// CHECK-NEXT: fuse-quant:   'quant.quantize' (used by func.return)
// CHECK-NEXT: fuse-quant: fused 1 op(s) (linear_q8ta_q8csw x1); 1 of 4 quant op(s) left unfused
// CHECK-NEXT: fuse-quant: 1 not fused: the value it quantizes has 2 users, so the output quantize is not fused
// CHECK-NEXT: fuse-quant:   'quant.quantize' (for 'aten.linear')
// CHECK-NEXT: fuse-quant: fused 0 op(s); 1 of 1 quant op(s) left unfused
// CHECK-NEXT: fuse-quant: 1 not fused: weight data is not a constant
// CHECK-NEXT: fuse-quant:   'quant.dequantize' (for 'aten.linear')
// CHECK-NEXT: fuse-quant: fused 0 op(s); 1 of 1 quant op(s) left unfused
// CHECK-NEXT: fuse-quant: 1 not fused: weight block {{\[}}3, 4] spans several output rows
// CHECK-NEXT: fuse-quant:   'quant.dequantize' (for 'aten.linear')
// CHECK-NEXT: fuse-quant: fused 0 op(s); 3 of 3 quant op(s) left unfused
// CHECK-NEXT: fuse-quant: 2 not fused: no fusable pattern around it
// CHECK-NEXT: fuse-quant:   'quant.dequantize' (used by aten.linear)
// CHECK-NEXT: fuse-quant:   'quant.dequantize' (used by aten.linear)
// CHECK-NEXT: fuse-quant: 1 not fused: zero point is added before rounding
// CHECK-NEXT: fuse-quant:   'quant.quantize' (for 'aten.linear')
// CHECK-NEXT: fuse-quant: fused 0 op(s); 2 of 2 quant op(s) left unfused
// CHECK-NEXT: fuse-quant: 1 not fused: the other operand of aten.add is not dequantized (q8ta_add needs both)
// CHECK-NEXT: fuse-quant:   'quant.dequantize' (for 'aten.add')
// CHECK-NEXT: fuse-quant: 1 not fused: no fusable pattern around it
// CHECK-NEXT: fuse-quant:   'quant.quantize' (used by func.return)
// CHECK-NEXT: fuse-quant: fused 0 op(s); 2 of 2 quant op(s) left unfused
// CHECK-NEXT: fuse-quant: 2 not fused: the add's result is not requantized (q8ta_add needs an output quantize)
// CHECK-NEXT: fuse-quant:   'quant.dequantize' (for 'aten.add')
// CHECK-NEXT: fuse-quant:   'quant.dequantize' (for 'aten.add')
