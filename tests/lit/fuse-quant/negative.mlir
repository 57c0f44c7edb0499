// RUN: qopt-opt %s -p fuse-quant --split-input-file | filecheck %s
// fuse-quant must not fire when a precondition fails: the quant ops stay (and
// stay correct). The reasons are checked in report.mlir.

// The activation's quantize and dequantize use different scales: not a Q/DQ pair.
// CHECK-LABEL: func.func @no_fuse_mismatched_qdq(
// CHECK:         quant.quantize
// CHECK:         quant.dequantize
// CHECK:         aten.linear
// CHECK-NOT:     qfused
func.func @no_fuse_mismatched_qdq(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %xs = arith.constant dense<0.05> : tensor<f64>
  %xs2 = arith.constant dense<0.06> : tensor<f64>
  %xz = arith.constant dense<3> : tensor<i64>
  %xq = quant.quantize %x, %xs, %xz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x4xf32>, tensor<f64>, tensor<i64>) -> tensor<2x4xi8>
  %xd = quant.dequantize %xq, %xs2, %xz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f64>, tensor<i64>) -> tensor<2x4xf32>
  %w = arith.constant dense<[[1, -2, 3, -4], [5, 6, -7, 8], [-9, 10, 11, 127]]> : tensor<3x4xi8>
  %s = arith.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %wd = quant.dequantize %w, %s {block_size = array<i64: 1, 4>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<3x4xi8>, tensor<3xf32>) -> tensor<3x4xf32>
  %y = aten.linear %xd, %wd : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// A Q(DQ) pair whose parameters differ is not folded.
// CHECK-LABEL: func.func @no_fold_mismatched_pair(
// CHECK:         quant.dequantize
// CHECK:         quant.quantize
// CHECK-NOT:     qfused
func.func @no_fold_mismatched_pair(%q: tensor<2x4xi8>) -> tensor<2x4xi8> {
  %s = arith.constant dense<0.0123> : tensor<f64>
  %s2 = arith.constant dense<0.0124> : tensor<f64>
  %z = arith.constant dense<0> : tensor<i64>
  %d = quant.dequantize %q, %s, %z {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f64>, tensor<i64>) -> tensor<2x4xf32>
  %r = quant.quantize %d, %s2, %z {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x4xf32>, tensor<f64>, tensor<i64>) -> tensor<2x4xi8>
  func.return %r : tensor<2x4xi8>
}

// -----

// A weight zero point where the kernel needs none: quantized-activation linear
// kernels assume symmetric weights (ExecuTorch silently ignores the zero point).
// CHECK-LABEL: func.func @no_fuse_linear_asym_weight_static_act(
// CHECK:         quant.quantize
// CHECK:         quant.dequantize
// CHECK:         quant.dequantize
// CHECK:         aten.linear
// CHECK-NOT:     qfused
func.func @no_fuse_linear_asym_weight_static_act(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %xs = arith.constant dense<0.05> : tensor<f64>
  %xz = arith.constant dense<3> : tensor<i64>
  %xq = quant.quantize %x, %xs, %xz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x4xf32>, tensor<f64>, tensor<i64>) -> tensor<2x4xi8>
  %xd = quant.dequantize %xq, %xs, %xz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f64>, tensor<i64>) -> tensor<2x4xf32>
  %w = arith.constant dense<[[1, -2, 3, -4], [5, 6, -7, 8], [-9, 10, 11, 127]]> : tensor<3x4xi8>
  %s = arith.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %z = arith.constant dense<[0, 1, 0]> : tensor<3xi64>
  %wd = quant.dequantize %w, %s, %z {block_size = array<i64: 1, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<3x4xi8>, tensor<3xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  %y = aten.linear %xd, %wd : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// Same rule on conv2d.
// CHECK-LABEL: func.func @no_fuse_conv_asym_weight_static_act(
// CHECK:         quant.dequantize
// CHECK:         quant.dequantize
// CHECK:         aten.conv2d
// CHECK-NOT:     qfused
func.func @no_fuse_conv_asym_weight_static_act(%xq: tensor<1x2x4x4xi8>) -> tensor<1x4x2x2xf32> {
  %xs = arith.constant dense<0.05> : tensor<f64>
  %xz = arith.constant dense<-3> : tensor<i64>
  %xd = quant.dequantize %xq, %xs, %xz {block_size = array<i64: 1, 2, 4, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<1x2x4x4xi8>, tensor<f64>, tensor<i64>) -> tensor<1x2x4x4xf32>
  %w = arith.constant dense<3> : tensor<4x2x3x3xi8>
  %s = arith.constant dense<[0.01, 0.02, 0.03, 0.04]> : tensor<4xf32>
  %z = arith.constant dense<[1, 0, 0, -1]> : tensor<4xi64>
  %wd = quant.dequantize %w, %s, %z {block_size = array<i64: 1, 2, 3, 3>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<4x2x3x3xi8>, tensor<4xf32>, tensor<4xi64>) -> tensor<4x2x3x3xf32>
  %y = aten.conv2d %xd, %wd {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x2x2xf32>
  func.return %y : tensor<1x4x2x2xf32>
}

// -----

// Dynamic activations on conv2d: no conv kernel computes qparams at run time.
// CHECK-LABEL: func.func @no_fuse_conv_dynamic_act(
// CHECK:         quant.choose_qparams
// CHECK:         quant.quantize
// CHECK:         quant.dequantize
// CHECK:         quant.dequantize
// CHECK:         aten.conv2d
// CHECK-NOT:     qfused
func.func @no_fuse_conv_dynamic_act(%x: tensor<1x2x4x4xf32>) -> tensor<1x4x2x2xf32> {
  %xs, %xz = quant.choose_qparams %x {block_size = array<i64: 1, 2, 4, 4>, qmin = -128 : i64, qmax = 127 : i64, mapping = "asymmetric", eps = 0.000244140625 : f64} : (tensor<1x2x4x4xf32>) -> (tensor<1xf64>, tensor<1xi64>)
  %xq = quant.quantize %x, %xs, %xz {block_size = array<i64: 1, 2, 4, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<1x2x4x4xf32>, tensor<1xf64>, tensor<1xi64>) -> tensor<1x2x4x4xi8>
  %xd = quant.dequantize %xq, %xs, %xz {block_size = array<i64: 1, 2, 4, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<1x2x4x4xi8>, tensor<1xf64>, tensor<1xi64>) -> tensor<1x2x4x4xf32>
  %w = arith.constant dense<3> : tensor<4x2x3x3xi8>
  %s = arith.constant dense<[0.01, 0.02, 0.03, 0.04]> : tensor<4xf32>
  %wd = quant.dequantize %w, %s {block_size = array<i64: 1, 2, 3, 3>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<4x2x3x3xi8>, tensor<4xf32>) -> tensor<4x2x3x3xf32>
  %y = aten.conv2d %xd, %wd {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x2x2xf32>
  func.return %y : tensor<1x4x2x2xf32>
}

// -----

// A codebook (LUT) weight on conv2d: no conv LUT kernel.
// CHECK-LABEL: func.func @no_fuse_conv_lut_weight(
// CHECK:         quant.dequantize_codebook
// CHECK:         aten.conv2d
// CHECK-NOT:     qfused
func.func @no_fuse_conv_lut_weight(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %codes = arith.constant dense<1> : tensor<2x2x1x1xi32>
  %book = arith.constant dense<0.5> : tensor<1x1x1x1x4x1xf32>
  %wd = quant.dequantize_codebook %codes, %book {nbits = 2 : i64, block_size = array<i64: -1, -1, -1, -1>} : (tensor<2x2x1x1xi32>, tensor<1x1x1x1x4x1xf32>) -> tensor<2x2x1x1xf32>
  %y = aten.conv2d %x, %wd {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}

// -----

// The add's result has several users (it is also returned in float): the output
// requant cannot be fused, and q8ta_add needs it, so nothing fuses.
// CHECK-LABEL: func.func @no_fuse_add_several_users(
// CHECK:         quant.dequantize
// CHECK:         quant.dequantize
// CHECK:         aten.add
// CHECK:         quant.quantize
// CHECK-NOT:     qfused
func.func @no_fuse_add_several_users(%a: tensor<2x4xi8>, %b: tensor<2x4xi8>) -> (tensor<2x4xi8>, tensor<2x4xf32>) {
  %as = arith.constant dense<0.05> : tensor<f64>
  %az = arith.constant dense<3> : tensor<i64>
  %ad = quant.dequantize %a, %as, %az {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f64>, tensor<i64>) -> tensor<2x4xf32>
  %bd = quant.dequantize %b, %as, %az {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f64>, tensor<i64>) -> tensor<2x4xf32>
  %y = aten.add %ad, %bd : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %ys = arith.constant dense<0.15> : tensor<f64>
  %yz = arith.constant dense<0> : tensor<i64>
  %yq = quant.quantize %y, %ys, %yz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x4xf32>, tensor<f64>, tensor<i64>) -> tensor<2x4xi8>
  func.return %yq, %y : tensor<2x4xi8>, tensor<2x4xf32>
}

// -----

// Same for a linear: it still fuses (float result) but the output quantize stays.
// CHECK-LABEL: func.func @no_requant_linear_several_users(
// CHECK:         %[[Y:.*]] = qfused.linear
// CHECK-NOT:     requant
// CHECK-SAME:    -> tensor<2x3xf32>
// CHECK:         quant.quantize %[[Y]]
func.func @no_requant_linear_several_users(%x: tensor<2x4xf32>) -> (tensor<2x3xi8>, tensor<2x3xf32>) {
  %xs = arith.constant dense<0.05> : tensor<f64>
  %xz = arith.constant dense<3> : tensor<i64>
  %xq = quant.quantize %x, %xs, %xz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x4xf32>, tensor<f64>, tensor<i64>) -> tensor<2x4xi8>
  %xd = quant.dequantize %xq, %xs, %xz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f64>, tensor<i64>) -> tensor<2x4xf32>
  %w = arith.constant dense<[[1, -2, 3, -4], [5, 6, -7, 8], [-9, 10, 11, 127]]> : tensor<3x4xi8>
  %s = arith.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %wd = quant.dequantize %w, %s {block_size = array<i64: 1, 4>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<3x4xi8>, tensor<3xf32>) -> tensor<3x4xf32>
  %y = aten.linear %xd, %wd : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %ys = arith.constant dense<0.1> : tensor<f64>
  %yz = arith.constant dense<0> : tensor<i64>
  %yq = quant.quantize %y, %ys, %yz {block_size = array<i64: 2, 3>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x3xf32>, tensor<f64>, tensor<i64>) -> tensor<2x3xi8>
  func.return %yq, %y : tensor<2x3xi8>, tensor<2x3xf32>
}

// -----

// The weight data is not a constant (a function argument).
// CHECK-LABEL: func.func @no_fuse_non_constant_weight(
// CHECK:         quant.dequantize
// CHECK:         aten.linear
// CHECK-NOT:     qfused
func.func @no_fuse_non_constant_weight(%x: tensor<2x4xf32>, %w: tensor<3x4xi8>) -> tensor<2x3xf32> {
  %s = arith.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %wd = quant.dequantize %w, %s {block_size = array<i64: 1, 4>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<3x4xi8>, tensor<3xf32>) -> tensor<3x4xf32>
  %y = aten.linear %x, %wd : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// A per-tensor weight block spanning several rows ([3, 4] on [3, 4]): linear and
// embedding kernels are per output row.
// CHECK-LABEL: func.func @no_fuse_block_spans_rows(
// CHECK:         quant.dequantize
// CHECK:         aten.linear
// CHECK:         aten.embedding
// CHECK-NOT:     qfused
func.func @no_fuse_block_spans_rows(%x: tensor<2x4xf32>, %i: tensor<2xi64>) -> (tensor<2x3xf32>, tensor<2x4xf32>) {
  %w = arith.constant dense<[[1, -2, 3, -4], [5, 6, -7, 8], [-9, 10, 11, 127]]> : tensor<3x4xi8>
  %s = arith.constant dense<0.5> : tensor<f32>
  %wd = quant.dequantize %w, %s {block_size = array<i64: 3, 4>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<3x4xi8>, tensor<f32>) -> tensor<3x4xf32>
  %y = aten.linear %x, %wd : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %e = aten.embedding %wd, %i : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  func.return %y, %e : tensor<2x3xf32>, tensor<2x4xf32>
}

// -----

// A static quantize that adds its zero point before rounding (per-token /
// per-channel-group semantics) is not PT2E's quantize_per_tensor.
// CHECK-LABEL: func.func @no_fuse_zero_point_before_rounding(
// CHECK:         quant.quantize {{.*}}zero_point_before_rounding
// CHECK:         quant.dequantize
// CHECK:         aten.linear
// CHECK-NOT:     qfused
func.func @no_fuse_zero_point_before_rounding(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %xs = arith.constant dense<0.05> : tensor<f64>
  %xz = arith.constant dense<3> : tensor<i64>
  %xq = quant.quantize %x, %xs, %xz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32, zero_point_before_rounding} : (tensor<2x4xf32>, tensor<f64>, tensor<i64>) -> tensor<2x4xi8>
  %xd = quant.dequantize %xq, %xs, %xz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f64>, tensor<i64>) -> tensor<2x4xf32>
  %w = arith.constant dense<[[1, -2, 3, -4], [5, 6, -7, 8], [-9, 10, 11, 127]]> : tensor<3x4xi8>
  %s = arith.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %wd = quant.dequantize %w, %s {block_size = array<i64: 1, 4>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<3x4xi8>, tensor<3xf32>) -> tensor<3x4xf32>
  %y = aten.linear %xd, %wd : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// An add with one float operand: q8ta_add needs both operands quantized.
// CHECK-LABEL: func.func @no_fuse_add_float_operand(
// CHECK:         quant.dequantize
// CHECK:         aten.add
// CHECK:         quant.quantize
// CHECK-NOT:     qfused
func.func @no_fuse_add_float_operand(%a: tensor<2x4xi8>, %b: tensor<2x4xf32>) -> tensor<2x4xi8> {
  %as = arith.constant dense<0.05> : tensor<f64>
  %az = arith.constant dense<3> : tensor<i64>
  %ad = quant.dequantize %a, %as, %az {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f64>, tensor<i64>) -> tensor<2x4xf32>
  %y = aten.add %ad, %b : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %ys = arith.constant dense<0.15> : tensor<f64>
  %yz = arith.constant dense<0> : tensor<i64>
  %yq = quant.quantize %y, %ys, %yz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x4xf32>, tensor<f64>, tensor<i64>) -> tensor<2x4xi8>
  func.return %yq : tensor<2x4xi8>
}

// -----

// An add without an output quantize (float result): ExecuTorch's q8ta_add requires one.
// CHECK-LABEL: func.func @no_fuse_add_without_output_q(
// CHECK:         quant.dequantize
// CHECK:         quant.dequantize
// CHECK:         aten.add
// CHECK-NOT:     qfused
func.func @no_fuse_add_without_output_q(%a: tensor<2x4xi8>, %b: tensor<2x4xi8>) -> tensor<2x4xf32> {
  %as = arith.constant dense<0.05> : tensor<f64>
  %az = arith.constant dense<3> : tensor<i64>
  %ad = quant.dequantize %a, %as, %az {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f64>, tensor<i64>) -> tensor<2x4xf32>
  %bd = quant.dequantize %b, %as, %az {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f64>, tensor<i64>) -> tensor<2x4xf32>
  %y = aten.add %ad, %bd : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
