// RUN: qopt-opt %s -p fuse-quant --split-input-file | filecheck %s
// fuse-quant, conv family (qopt/lowering/fuse_quant/conv.py; docs/fusion-patterns.md).
// The kernel name is qopt's scheme name; ExecuTorch's are `q8ta_conv2d`,
// `q8ta_conv2d_pw`, `q8ta_conv2d_dw` (qfused.Conv2dOp.et_aliases()).

// Static input, per-output-channel symmetric weight [1, IC, KH, KW], relu, output Q:
// ET `q8ta_conv2d` (`conv2d_q8ta_q8csw_q8to`).
// CHECK-LABEL: func.func @conv2d_static_relu_requant(
// CHECK-SAME:    %[[X:.*]]: tensor<1x2x4x4xf32>
// CHECK-NOT:     quant.
// CHECK-NOT:     aten.
// CHECK:         %[[Y:.*]] = qfused.conv2d %[[X]], %{{.*}}, %{{.*}} bias %{{.*}} {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 2, 3, 3]>, act = #qfused.static<scale = 0.05, zero_point = -3, range = [-128, 127]>, requant = #qfused.static<scale = 0.02, zero_point = -128, range = [-128, 127]>, clamp_min = 0.000000e+00 : f64, stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64, kernel = "conv2d_q8ta_q8csw_q8to"} : tensor<1x2x4x4xf32>, tensor<4x2x3x3xi8>, tensor<4x1x1x1xf32> bias tensor<4xf32> -> tensor<1x4x4x4xi8>
// CHECK-NOT:     aten.relu
// CHECK:         func.return %[[Y]]
func.func @conv2d_static_relu_requant(%x: tensor<1x2x4x4xf32>) -> tensor<1x4x4x4xi8> {
  %xs = arith.constant dense<0.05> : tensor<f64>
  %xz = arith.constant dense<-3> : tensor<i64>
  %xq = quant.quantize %x, %xs, %xz {block_size = array<i64: 1, 2, 4, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<1x2x4x4xf32>, tensor<f64>, tensor<i64>) -> tensor<1x2x4x4xi8>
  %xd = quant.dequantize %xq, %xs, %xz {block_size = array<i64: 1, 2, 4, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<1x2x4x4xi8>, tensor<f64>, tensor<i64>) -> tensor<1x2x4x4xf32>
  %w = arith.constant dense<3> : tensor<4x2x3x3xi8>
  %s = arith.constant dense<[0.01, 0.02, 0.03, 0.04]> : tensor<4xf32>
  %z = arith.constant dense<0> : tensor<4xi64>
  %wd = quant.dequantize %w, %s, %z {block_size = array<i64: 1, 2, 3, 3>, qmin = -127 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<4x2x3x3xi8>, tensor<4xf32>, tensor<4xi64>) -> tensor<4x2x3x3xf32>
  %b = arith.constant dense<[0.1, -0.1, 0.2, -0.2]> : tensor<4xf32>
  %y = aten.conv2d %xd, %wd, %b {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  %r = aten.relu %y : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %ys = arith.constant dense<0.02> : tensor<f64>
  %yz = arith.constant dense<-128> : tensor<i64>
  %yq = quant.quantize %r, %ys, %yz {block_size = array<i64: 1, 4, 4, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<1x4x4x4xf32>, tensor<f64>, tensor<i64>) -> tensor<1x4x4x4xi8>
  func.return %yq : tensor<1x4x4x4xi8>
}

// -----

// Integer input (DQ of an i8 argument), strided, clamp before the output Q.
// CHECK-LABEL: func.func @conv2d_int_input_clamp(
// CHECK-SAME:    %[[XQ:.*]]: tensor<1x2x4x4xi8>
// CHECK-NOT:     quant.
// CHECK:         %[[Y:.*]] = qfused.conv2d %[[XQ]], {{.*}}clamp_min = -1.000000e+00 : f64, clamp_max = 1.000000e+00 : f64, stride = array<i64: 2, 2>, {{.*}}kernel = "conv2d_q8ta_q8csw_q8to"} : tensor<1x2x4x4xi8>, tensor<4x2x3x3xi8>, tensor<4x1x1x1xf32> -> tensor<1x4x2x2xi8>
// CHECK-NOT:     aten.clamp
// CHECK:         func.return %[[Y]]
func.func @conv2d_int_input_clamp(%xq: tensor<1x2x4x4xi8>) -> tensor<1x4x2x2xi8> {
  %xs = arith.constant dense<0.05> : tensor<f64>
  %xz = arith.constant dense<-3> : tensor<i64>
  %xd = quant.dequantize %xq, %xs, %xz {block_size = array<i64: 1, 2, 4, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<1x2x4x4xi8>, tensor<f64>, tensor<i64>) -> tensor<1x2x4x4xf32>
  %w = arith.constant dense<-5> : tensor<4x2x3x3xi8>
  %s = arith.constant dense<[0.01, 0.02, 0.03, 0.04]> : tensor<4xf32>
  %wd = quant.dequantize %w, %s {block_size = array<i64: 1, 2, 3, 3>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<4x2x3x3xi8>, tensor<4xf32>) -> tensor<4x2x3x3xf32>
  %y = aten.conv2d %xd, %wd {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x2x2xf32>
  %c = aten.clamp %y {min = -1.000000e+00 : f64, max = 1.000000e+00 : f64} : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  %ys = arith.constant dense<0.01> : tensor<f64>
  %yz = arith.constant dense<0> : tensor<i64>
  %yq = quant.quantize %c, %ys, %yz {block_size = array<i64: 1, 4, 2, 2>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<1x4x2x2xf32>, tensor<f64>, tensor<i64>) -> tensor<1x4x2x2xi8>
  func.return %yq : tensor<1x4x2x2xi8>
}

// -----

// Static input without an output Q: float result (ET runtime-only `conv2d_q8ta_q8csw`).
// CHECK-LABEL: func.func @conv2d_static_float_out(
// CHECK-SAME:    %[[X:.*]]: tensor<1x2x4x4xf32>
// CHECK-NOT:     quant.
// CHECK:         %[[Y:.*]] = qfused.conv2d %[[X]], {{.*}}act = #qfused.static<scale = 0.05, zero_point = -3, range = [-128, 127]>, stride{{.*}}kernel = "conv2d_q8ta_q8csw"} : {{.*}} -> tensor<1x4x2x2xf32>
// CHECK:         func.return %[[Y]]
func.func @conv2d_static_float_out(%x: tensor<1x2x4x4xf32>) -> tensor<1x4x2x2xf32> {
  %xs = arith.constant dense<0.05> : tensor<f64>
  %xz = arith.constant dense<-3> : tensor<i64>
  %xq = quant.quantize %x, %xs, %xz {block_size = array<i64: 1, 2, 4, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<1x2x4x4xf32>, tensor<f64>, tensor<i64>) -> tensor<1x2x4x4xi8>
  %xd = quant.dequantize %xq, %xs, %xz {block_size = array<i64: 1, 2, 4, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<1x2x4x4xi8>, tensor<f64>, tensor<i64>) -> tensor<1x2x4x4xf32>
  %w = arith.constant dense<3> : tensor<4x2x3x3xi8>
  %s = arith.constant dense<[0.01, 0.02, 0.03, 0.04]> : tensor<4xf32>
  %wd = quant.dequantize %w, %s {block_size = array<i64: 1, 2, 3, 3>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<4x2x3x3xi8>, tensor<4xf32>) -> tensor<4x2x3x3xf32>
  %y = aten.conv2d %xd, %wd {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x2x2xf32>
  func.return %y : tensor<1x4x2x2xf32>
}

// -----

// Weight-only (float input): no act.
// CHECK-LABEL: func.func @conv2d_weight_only(
// CHECK-SAME:    %[[X:.*]]: tensor<1x2x4x4xf32>
// CHECK-NOT:     quant.dequantize
// CHECK:         %[[Y:.*]] = qfused.conv2d %[[X]], %{{.*}}, %{{.*}} {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 2, 3, 3]>, stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64, kernel = "conv2d_q8csw"} : tensor<1x2x4x4xf32>, tensor<4x2x3x3xi8>, tensor<4x1x1x1xf32> -> tensor<1x4x2x2xf32>
// CHECK:         func.return %[[Y]]
func.func @conv2d_weight_only(%x: tensor<1x2x4x4xf32>) -> tensor<1x4x2x2xf32> {
  %w = arith.constant dense<3> : tensor<4x2x3x3xi8>
  %s = arith.constant dense<[0.01, 0.02, 0.03, 0.04]> : tensor<4xf32>
  %wd = quant.dequantize %w, %s {block_size = array<i64: 1, 2, 3, 3>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<4x2x3x3xi8>, tensor<4xf32>) -> tensor<4x2x3x3xf32>
  %y = aten.conv2d %x, %wd {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x2x2xf32>
  func.return %y : tensor<1x4x2x2xf32>
}

// -----

// Weight-only, torchao IntxWeightOnly per-axis block [1, IC, 1, 1] (one scale per
// (OC, kh, kw)): a finer block than per channel, named `g`.
// CHECK-LABEL: func.func @conv2d_weight_only_per_tap(
// CHECK-NOT:     quant.dequantize
// CHECK:         qfused.conv2d {{.*}}weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 2, 1, 1]>, {{.*}}kernel = "conv2d_q4gsw"} : tensor<1x2x4x4xf32>, tensor<4x2x3x3xi8>, tensor<4x1x3x3xf32> -> tensor<1x4x2x2xf32>
func.func @conv2d_weight_only_per_tap(%x: tensor<1x2x4x4xf32>) -> tensor<1x4x2x2xf32> {
  %w = arith.constant dense<-2> : tensor<4x2x3x3xi8>
  %s = arith.constant dense<0.125> : tensor<4x1x3x3xf32>
  %z = arith.constant dense<0> : tensor<4x1x3x3xi8>
  %wd = quant.dequantize %w, %s, %z {block_size = array<i64: 1, 2, 1, 1>, qmin = -8 : i64, qmax = 7 : i64} : (tensor<4x2x3x3xi8>, tensor<4x1x3x3xf32>, tensor<4x1x3x3xi8>) -> tensor<4x2x3x3xf32>
  %y = aten.conv2d %x, %wd {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x2x2xf32>
  func.return %y : tensor<1x4x2x2xf32>
}

// -----

// Depthwise (groups == OC, one input channel per group): ET alias `q8ta_conv2d_dw`.
// CHECK-LABEL: func.func @conv2d_depthwise(
// CHECK-SAME:    %[[X:.*]]: tensor<1x4x4x4xf32>
// CHECK-NOT:     quant.
// CHECK:         %[[Y:.*]] = qfused.conv2d %[[X]], {{.*}}block = [1, 1, 3, 3]>{{.*}}groups = 4 : i64, kernel = "conv2d_q8ta_q8csw_q8to"} : tensor<1x4x4x4xf32>, tensor<4x1x3x3xi8>, tensor<4x1x1x1xf32> -> tensor<1x4x4x4xi8>
// CHECK:         func.return %[[Y]]
func.func @conv2d_depthwise(%x: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xi8> {
  %xs = arith.constant dense<0.05> : tensor<f64>
  %xz = arith.constant dense<0> : tensor<i64>
  %xq = quant.quantize %x, %xs, %xz {block_size = array<i64: 1, 4, 4, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<1x4x4x4xf32>, tensor<f64>, tensor<i64>) -> tensor<1x4x4x4xi8>
  %xd = quant.dequantize %xq, %xs, %xz {block_size = array<i64: 1, 4, 4, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<1x4x4x4xi8>, tensor<f64>, tensor<i64>) -> tensor<1x4x4x4xf32>
  %w = arith.constant dense<7> : tensor<4x1x3x3xi8>
  %s = arith.constant dense<[0.01, 0.02, 0.03, 0.04]> : tensor<4xf32>
  %wd = quant.dequantize %w, %s {block_size = array<i64: 1, 1, 3, 3>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<4x1x3x3xi8>, tensor<4xf32>) -> tensor<4x1x3x3xf32>
  %y = aten.conv2d %xd, %wd {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 4 : i64} : (tensor<1x4x4x4xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x4x4xf32>
  %ys = arith.constant dense<0.03> : tensor<f64>
  %yz = arith.constant dense<1> : tensor<i64>
  %yq = quant.quantize %y, %ys, %yz {block_size = array<i64: 1, 4, 4, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<1x4x4x4xf32>, tensor<f64>, tensor<i64>) -> tensor<1x4x4x4xi8>
  func.return %yq : tensor<1x4x4x4xi8>
}

// -----

// Pointwise (1x1, stride 1, no padding): ET alias `q8ta_conv2d_pw`.
// CHECK-LABEL: func.func @conv2d_pointwise(
// CHECK-SAME:    %[[X:.*]]: tensor<1x2x4x4xf32>
// CHECK-NOT:     quant.
// CHECK:         %[[Y:.*]] = qfused.conv2d %[[X]], {{.*}}block = [1, 2, 1, 1]>{{.*}}padding = array<i64: 0, 0>{{.*}}kernel = "conv2d_q8ta_q8csw_q8to"} : tensor<1x2x4x4xf32>, tensor<4x2x1x1xi8>, tensor<4x1x1x1xf32> -> tensor<1x4x4x4xi8>
// CHECK:         func.return %[[Y]]
func.func @conv2d_pointwise(%x: tensor<1x2x4x4xf32>) -> tensor<1x4x4x4xi8> {
  %xs = arith.constant dense<0.05> : tensor<f64>
  %xz = arith.constant dense<0> : tensor<i64>
  %xq = quant.quantize %x, %xs, %xz {block_size = array<i64: 1, 2, 4, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<1x2x4x4xf32>, tensor<f64>, tensor<i64>) -> tensor<1x2x4x4xi8>
  %xd = quant.dequantize %xq, %xs, %xz {block_size = array<i64: 1, 2, 4, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<1x2x4x4xi8>, tensor<f64>, tensor<i64>) -> tensor<1x2x4x4xf32>
  %w = arith.constant dense<[[[[1]], [[2]]], [[[3]], [[4]]], [[[5]], [[6]]], [[[7]], [[8]]]]> : tensor<4x2x1x1xi8>
  %s = arith.constant dense<[0.01, 0.02, 0.03, 0.04]> : tensor<4xf32>
  %wd = quant.dequantize %w, %s {block_size = array<i64: 1, 2, 1, 1>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<4x2x1x1xi8>, tensor<4xf32>) -> tensor<4x2x1x1xf32>
  %y = aten.conv2d %xd, %wd {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<4x2x1x1xf32>) -> tensor<1x4x4x4xf32>
  %ys = arith.constant dense<0.03> : tensor<f64>
  %yz = arith.constant dense<1> : tensor<i64>
  %yq = quant.quantize %y, %ys, %yz {block_size = array<i64: 1, 4, 4, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<1x4x4x4xf32>, tensor<f64>, tensor<i64>) -> tensor<1x4x4x4xi8>
  func.return %yq : tensor<1x4x4x4xi8>
}

// -----

// Two convs in a chain: the first one's requantized integers feed the second
// directly (the DQ between them is absorbed by the consumer, no Q/DQ left).
// CHECK-LABEL: func.func @conv2d_chain(
// CHECK-SAME:    %[[X:.*]]: tensor<1x2x4x4xf32>
// CHECK-NOT:     quant.
// CHECK:         %[[A:.*]] = qfused.conv2d %[[X]], {{.*}} -> tensor<1x2x4x4xi8>
// CHECK-NOT:     quant.
// CHECK:         %[[B:.*]] = qfused.conv2d %[[A]], {{.*}}act = #qfused.static<scale = 0.02, zero_point = -128, range = [-128, 127]>{{.*}} : tensor<1x2x4x4xi8>, {{.*}} -> tensor<1x2x4x4xi8>
// CHECK:         func.return %[[B]]
func.func @conv2d_chain(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xi8> {
  %xs = arith.constant dense<0.05> : tensor<f64>
  %xz = arith.constant dense<0> : tensor<i64>
  %xq = quant.quantize %x, %xs, %xz {block_size = array<i64: 1, 2, 4, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<1x2x4x4xf32>, tensor<f64>, tensor<i64>) -> tensor<1x2x4x4xi8>
  %xd = quant.dequantize %xq, %xs, %xz {block_size = array<i64: 1, 2, 4, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<1x2x4x4xi8>, tensor<f64>, tensor<i64>) -> tensor<1x2x4x4xf32>
  %w = arith.constant dense<3> : tensor<2x2x1x1xi8>
  %s = arith.constant dense<[0.01, 0.02]> : tensor<2xf32>
  %wd = quant.dequantize %w, %s {block_size = array<i64: 1, 2, 1, 1>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<2x2x1x1xi8>, tensor<2xf32>) -> tensor<2x2x1x1xf32>
  %y = aten.conv2d %xd, %wd {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %r = aten.relu %y : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %ys = arith.constant dense<0.02> : tensor<f64>
  %yz = arith.constant dense<-128> : tensor<i64>
  %yq = quant.quantize %r, %ys, %yz {block_size = array<i64: 1, 2, 4, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<1x2x4x4xf32>, tensor<f64>, tensor<i64>) -> tensor<1x2x4x4xi8>
  %yd = quant.dequantize %yq, %ys, %yz {block_size = array<i64: 1, 2, 4, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<1x2x4x4xi8>, tensor<f64>, tensor<i64>) -> tensor<1x2x4x4xf32>
  %w2 = arith.constant dense<-4> : tensor<2x2x1x1xi8>
  %s2 = arith.constant dense<[0.05, 0.06]> : tensor<2xf32>
  %wd2 = quant.dequantize %w2, %s2 {block_size = array<i64: 1, 2, 1, 1>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<2x2x1x1xi8>, tensor<2xf32>) -> tensor<2x2x1x1xf32>
  %y2 = aten.conv2d %yd, %wd2 {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %zs = arith.constant dense<0.04> : tensor<f64>
  %zz = arith.constant dense<2> : tensor<i64>
  %zq = quant.quantize %y2, %zs, %zz {block_size = array<i64: 1, 2, 4, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<1x2x4x4xf32>, tensor<f64>, tensor<i64>) -> tensor<1x2x4x4xi8>
  func.return %zq : tensor<1x2x4x4xi8>
}
