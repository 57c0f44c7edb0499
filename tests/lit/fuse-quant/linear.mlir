// RUN: qopt-opt %s -p fuse-quant --split-input-file | filecheck %s
// fuse-quant, linear family (qopt/lowering/fuse_quant/linear.py; docs/fusion-patterns.md).

// Weight-only int8 per-channel (PT2E dequantize_per_channel): ET `_weight_int8pack_mm`.
// CHECK-LABEL: func.func @linear_w8_per_channel(
// CHECK-SAME:    %[[X:.*]]: tensor<2x4xf32>
// CHECK-NOT:     quant.dequantize
// CHECK:         %[[Y:.*]] = qfused.linear %[[X]], %{{.*}}, %{{.*}} {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 4]>, kernel = "linear_q8csw"} : tensor<2x4xf32>, tensor<3x4xi8>, tensor<3x1xf32> -> tensor<2x3xf32>
// CHECK:         func.return %[[Y]]
func.func @linear_w8_per_channel(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<[[1, -2, 3, -4], [5, 6, -7, 8], [-9, 10, 11, 127]]> : tensor<3x4xi8>
  %s = arith.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %z = arith.constant dense<0> : tensor<3xi64>
  %wd = quant.dequantize %w, %s, %z {block_size = array<i64: 1, 4>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<3x4xi8>, tensor<3xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  %y = aten.linear %x, %wd : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// Weight-only int4 per-group, symmetric (all-zero zero point dropped): ET `linear_q4gsw`.
// CHECK-LABEL: func.func @linear_w4_group_sym(
// CHECK-SAME:    %[[X:.*]]: tensor<1x8xf32>
// CHECK-NOT:     quant.dequantize
// CHECK:         %[[Y:.*]] = qfused.linear %[[X]], %{{.*}}, %{{.*}} bias %{{.*}} {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, kernel = "linear_q4gsw"} : tensor<1x8xf32>, tensor<2x8xi8>, tensor<2x2xf32> bias tensor<2xf32> -> tensor<1x2xf32>
// CHECK:         func.return %[[Y]]
func.func @linear_w4_group_sym(%x: tensor<1x8xf32>) -> tensor<1x2xf32> {
  %w = arith.constant dense<[[-8, -7, 0, 1, 2, 3, 6, 7], [7, 6, 5, 4, -1, -2, -3, -4]]> : tensor<2x8xi8>
  %s = arith.constant dense<[[0.5, 0.25], [0.125, 1.0]]> : tensor<2x2xf32>
  %z = arith.constant dense<0> : tensor<2x2xi8>
  %b = arith.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %wd = quant.dequantize %w, %s, %z {block_size = array<i64: 1, 4>, qmin = -8 : i64, qmax = 7 : i64} : (tensor<2x8xi8>, tensor<2x2xf32>, tensor<2x2xi8>) -> tensor<2x8xf32>
  %y = aten.linear %x, %wd, %b : (tensor<1x8xf32>, tensor<2x8xf32>, tensor<2xf32>) -> tensor<1x2xf32>
  func.return %y : tensor<1x2xf32>
}

// -----

// Weight-only int4 per-group with a nonzero zero point: kept as an operand (`q4gaw`).
// CHECK-LABEL: func.func @linear_w4_group_asym(
// CHECK-SAME:    %[[X:.*]]: tensor<1x8xf32>
// CHECK-NOT:     quant.dequantize
// CHECK:         %[[Y:.*]] = qfused.linear %[[X]], %{{.*}}, %{{.*}} zero_point %{{.*}} {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, kernel = "linear_q4gaw"} : tensor<1x8xf32>, tensor<2x8xi8>, tensor<2x2xf32> zero_point tensor<2x2xi8> -> tensor<1x2xf32>
// CHECK:         func.return %[[Y]]
func.func @linear_w4_group_asym(%x: tensor<1x8xf32>) -> tensor<1x2xf32> {
  %w = arith.constant dense<[[-8, -7, 0, 1, 2, 3, 6, 7], [7, 6, 5, 4, -1, -2, -3, -4]]> : tensor<2x8xi8>
  %s = arith.constant dense<[[0.5, 0.25], [0.125, 1.0]]> : tensor<2x2xf32>
  %z = arith.constant dense<[[1, 0], [-2, 3]]> : tensor<2x2xi8>
  %wd = quant.dequantize %w, %s, %z {block_size = array<i64: 1, 4>, qmin = -8 : i64, qmax = 7 : i64} : (tensor<2x8xi8>, tensor<2x2xf32>, tensor<2x2xi8>) -> tensor<2x8xf32>
  %y = aten.linear %x, %wd : (tensor<1x8xf32>, tensor<2x8xf32>) -> tensor<1x2xf32>
  func.return %y : tensor<1x2xf32>
}

// -----

// Codebook (LUT) weight, one 4-bit LUT per 4 columns, codes cast ui8 -> i32 (torchao).
// CHECK-LABEL: func.func @linear_lut4(
// CHECK-SAME:    %[[X:.*]]: tensor<1x8xf32>
// CHECK-NOT:     quant.dequantize_codebook
// CHECK-NOT:     aten.to
// CHECK:         %[[Y:.*]] = qfused.linear %[[X]], %{{.*}}, %{{.*}} {weight_scheme = #qfused.lut<nbits = 4, block = [-1, 4]>, kernel = "linear_lut4w"} : tensor<1x8xf32>, tensor<2x8xui8>, tensor<1x2x16x1xf32> -> tensor<1x2xf32>
// CHECK:         func.return %[[Y]]
func.func @linear_lut4(%x: tensor<1x8xf32>) -> tensor<1x2xf32> {
  %codes = arith.constant dense<[[0, 1, 2, 3, 12, 13, 14, 15], [15, 0, 7, 8, 1, 1, 2, 2]]> : tensor<2x8xui8>
  %book = arith.constant dense<0.25> : tensor<1x2x16x1xf64>
  %ci = aten.to %codes : (tensor<2x8xui8>) -> tensor<2x8xi32>
  %wd = quant.dequantize_codebook %ci, %book {nbits = 4 : i64, block_size = array<i64: -1, 4>} : (tensor<2x8xi32>, tensor<1x2x16x1xf64>) -> tensor<2x8xf32>
  %y = aten.linear %x, %wd : (tensor<1x8xf32>, tensor<2x8xf32>) -> tensor<1x2xf32>
  func.return %y : tensor<1x2xf32>
}

// -----

// Static per-tensor input, per-channel weight, output quantize: ET `q8ta_linear`.
// The float input is quantized in the kernel (act), the result is the integers.
// CHECK-LABEL: func.func @linear_static_requant(
// CHECK-SAME:    %[[X:.*]]: tensor<2x4xf32>
// CHECK-NOT:     quant.
// CHECK:         %[[Y:.*]] = qfused.linear %[[X]], %{{.*}}, %{{.*}} {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 4]>, act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, requant = #qfused.static<scale = 0.1, zero_point = -5, range = [-128, 127]>, kernel = "linear_q8ta_q8csw_q8to"} : tensor<2x4xf32>, tensor<3x4xi8>, tensor<3x1xf32> -> tensor<2x3xi8>
// CHECK-NOT:     quant.
// CHECK:         func.return %[[Y]]
func.func @linear_static_requant(%x: tensor<2x4xf32>) -> tensor<2x3xi8> {
  %xs = arith.constant dense<0.05> : tensor<f64>
  %xz = arith.constant dense<3> : tensor<i64>
  %xq = quant.quantize %x, %xs, %xz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x4xf32>, tensor<f64>, tensor<i64>) -> tensor<2x4xi8>
  %xd = quant.dequantize %xq, %xs, %xz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f64>, tensor<i64>) -> tensor<2x4xf32>
  %w = arith.constant dense<[[1, -2, 3, -4], [5, 6, -7, 8], [-9, 10, 11, 127]]> : tensor<3x4xi8>
  %s = arith.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %wd = quant.dequantize %w, %s {block_size = array<i64: 1, 4>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<3x4xi8>, tensor<3xf32>) -> tensor<3x4xf32>
  %y = aten.linear %xd, %wd : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %ys = arith.constant dense<0.1> : tensor<f64>
  %yz = arith.constant dense<-5> : tensor<i64>
  %yq = quant.quantize %y, %ys, %yz {block_size = array<i64: 2, 3>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x3xf32>, tensor<f64>, tensor<i64>) -> tensor<2x3xi8>
  func.return %yq : tensor<2x3xi8>
}

// -----

// Static input without an output quantize: ET `linear_q8ta_q8csw` (float result).
// CHECK-LABEL: func.func @linear_static_float_out(
// CHECK-SAME:    %[[X:.*]]: tensor<2x4xf32>
// CHECK-NOT:     quant.
// CHECK:         %[[Y:.*]] = qfused.linear %[[X]], %{{.*}}, %{{.*}} {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 4]>, act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, kernel = "linear_q8ta_q8csw"} : tensor<2x4xf32>, tensor<3x4xi8>, tensor<3x1xf32> -> tensor<2x3xf32>
// CHECK:         func.return %[[Y]]
func.func @linear_static_float_out(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %xs = arith.constant dense<0.05> : tensor<f64>
  %xz = arith.constant dense<3> : tensor<i64>
  %xq = quant.quantize %x, %xs, %xz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x4xf32>, tensor<f64>, tensor<i64>) -> tensor<2x4xi8>
  %xd = quant.dequantize %xq, %xs, %xz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f64>, tensor<i64>) -> tensor<2x4xf32>
  %w = arith.constant dense<[[1, -2, 3, -4], [5, 6, -7, 8], [-9, 10, 11, 127]]> : tensor<3x4xi8>
  %s = arith.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %wd = quant.dequantize %w, %s {block_size = array<i64: 1, 4>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<3x4xi8>, tensor<3xf32>) -> tensor<3x4xf32>
  %y = aten.linear %xd, %wd : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// Static input given as integers (a DQ of an i8 argument), relu before the output
// quantize: the relu is an explicit clamp_min = 0.0.
// CHECK-LABEL: func.func @linear_static_relu_requant(
// CHECK-SAME:    %[[XQ:.*]]: tensor<2x4xi8>
// CHECK-NOT:     quant.
// CHECK-NOT:     aten.relu
// CHECK:         %[[Y:.*]] = qfused.linear %[[XQ]], %{{.*}}, %{{.*}} {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 4]>, act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, requant = #qfused.static<scale = 0.1, zero_point = -128, range = [-128, 127]>, clamp_min = 0.000000e+00 : f64, kernel = "linear_q8ta_q8csw_q8to"} : tensor<2x4xi8>, tensor<3x4xi8>, tensor<3x1xf32> -> tensor<2x3xi8>
// CHECK-NOT:     aten.relu
// CHECK:         func.return %[[Y]]
func.func @linear_static_relu_requant(%xq: tensor<2x4xi8>) -> tensor<2x3xi8> {
  %xs = arith.constant dense<0.05> : tensor<f64>
  %xz = arith.constant dense<3> : tensor<i64>
  %xd = quant.dequantize %xq, %xs, %xz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f64>, tensor<i64>) -> tensor<2x4xf32>
  %w = arith.constant dense<[[1, -2, 3, -4], [5, 6, -7, 8], [-9, 10, 11, 127]]> : tensor<3x4xi8>
  %s = arith.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %wd = quant.dequantize %w, %s {block_size = array<i64: 1, 4>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<3x4xi8>, tensor<3xf32>) -> tensor<3x4xf32>
  %y = aten.linear %xd, %wd : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %r = aten.relu %y : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %ys = arith.constant dense<0.1> : tensor<f64>
  %yz = arith.constant dense<-128> : tensor<i64>
  %yq = quant.quantize %r, %ys, %yz {block_size = array<i64: 2, 3>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x3xf32>, tensor<f64>, tensor<i64>) -> tensor<2x3xi8>
  func.return %yq : tensor<2x3xi8>
}

// -----

// A clamp (relu6-like) between the linear and the output quantize.
// CHECK-LABEL: func.func @linear_static_clamp_requant(
// CHECK-SAME:    %[[X:.*]]: tensor<2x4xf32>
// CHECK-NOT:     aten.clamp
// CHECK:         %[[Y:.*]] = qfused.linear %[[X]], {{.*}}requant = #qfused.static<scale = 0.1, zero_point = 0, range = [-128, 127]>, clamp_min = -1.000000e+00 : f64, clamp_max = 6.000000e+00 : f64, kernel = "linear_q8ta_q8csw_q8to"}
// CHECK-NOT:     aten.clamp
// CHECK:         func.return %[[Y]]
func.func @linear_static_clamp_requant(%x: tensor<2x4xf32>) -> tensor<2x3xi8> {
  %xs = arith.constant dense<0.05> : tensor<f64>
  %xz = arith.constant dense<3> : tensor<i64>
  %xq = quant.quantize %x, %xs, %xz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x4xf32>, tensor<f64>, tensor<i64>) -> tensor<2x4xi8>
  %xd = quant.dequantize %xq, %xs, %xz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f64>, tensor<i64>) -> tensor<2x4xf32>
  %w = arith.constant dense<[[1, -2, 3, -4], [5, 6, -7, 8], [-9, 10, 11, 127]]> : tensor<3x4xi8>
  %s = arith.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %wd = quant.dequantize %w, %s {block_size = array<i64: 1, 4>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<3x4xi8>, tensor<3xf32>) -> tensor<3x4xf32>
  %y = aten.linear %xd, %wd : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %c = aten.clamp %y {min = -1.000000e+00 : f64, max = 6.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %ys = arith.constant dense<0.1> : tensor<f64>
  %yz = arith.constant dense<0> : tensor<i64>
  %yq = quant.quantize %c, %ys, %yz {block_size = array<i64: 2, 3>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x3xf32>, tensor<f64>, tensor<i64>) -> tensor<2x3xi8>
  func.return %yq : tensor<2x3xi8>
}

// -----

// Dynamic per-token (asymmetric) activation, int8 per-channel weight.
// CHECK-LABEL: func.func @linear_dynamic_per_token_w8(
// CHECK-SAME:    %[[X:.*]]: tensor<2x4xf32>
// CHECK-NOT:     quant.
// CHECK:         %[[Y:.*]] = qfused.linear %[[X]], %{{.*}}, %{{.*}} {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 4]>, act = #qfused.dynamic<per_token, asymmetric, range = [-128, 127], eps = 1.1920928955078125e-07, scale_type = f32>, kernel = "linear_dq8ca_q8csw"}
// CHECK:         func.return %[[Y]]
func.func @linear_dynamic_per_token_w8(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %xs, %xz = quant.choose_qparams %x {block_size = array<i64: 1, 4>, qmin = -128 : i64, qmax = 127 : i64, mapping = "asymmetric", eps = 1.1920928955078125e-07 : f64} : (tensor<2x4xf32>) -> (tensor<2x1xf32>, tensor<2x1xi64>)
  %xq = quant.quantize %x, %xs, %xz {block_size = array<i64: 1, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xi64>) -> tensor<2x4xi8>
  %xd = quant.dequantize %xq, %xs, %xz {block_size = array<i64: 1, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<2x1xf32>, tensor<2x1xi64>) -> tensor<2x4xf32>
  %w = arith.constant dense<[[1, -2, 3, -4], [5, 6, -7, 8], [-9, 10, 11, 127]]> : tensor<3x4xi8>
  %s = arith.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %wd = quant.dequantize %w, %s {block_size = array<i64: 1, 4>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<3x4xi8>, tensor<3xf32>) -> tensor<3x4xf32>
  %y = aten.linear %xd, %wd : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// Dynamic per-token activation, int4 per-group weight: ET `linear_dq8ca_q4gsw` (8da4w).
// CHECK-LABEL: func.func @linear_dynamic_per_token_w4(
// CHECK-SAME:    %[[X:.*]]: tensor<1x8xf32>
// CHECK-NOT:     quant.
// CHECK:         %[[Y:.*]] = qfused.linear %[[X]], {{.*}}act = #qfused.dynamic<per_token, asymmetric, {{.*}}kernel = "linear_dq8ca_q4gsw"}
// CHECK:         func.return %[[Y]]
func.func @linear_dynamic_per_token_w4(%x: tensor<1x8xf32>) -> tensor<1x2xf32> {
  %xs, %xz = quant.choose_qparams %x {block_size = array<i64: 1, 8>, qmin = -128 : i64, qmax = 127 : i64, mapping = "asymmetric", eps = 1.1920928955078125e-07 : f64} : (tensor<1x8xf32>) -> (tensor<1x1xf32>, tensor<1x1xi8>)
  %xq = quant.quantize %x, %xs, %xz {block_size = array<i64: 1, 8>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<1x8xf32>, tensor<1x1xf32>, tensor<1x1xi8>) -> tensor<1x8xi8>
  %xd = quant.dequantize %xq, %xs, %xz {block_size = array<i64: 1, 8>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<1x8xi8>, tensor<1x1xf32>, tensor<1x1xi8>) -> tensor<1x8xf32>
  %w = arith.constant dense<[[-8, -7, 0, 1, 2, 3, 6, 7], [7, 6, 5, 4, -1, -2, -3, -4]]> : tensor<2x8xi8>
  %s = arith.constant dense<[[0.5, 0.25], [0.125, 1.0]]> : tensor<2x2xf32>
  %wd = quant.dequantize %w, %s {block_size = array<i64: 1, 4>, qmin = -8 : i64, qmax = 7 : i64} : (tensor<2x8xi8>, tensor<2x2xf32>) -> tensor<2x8xf32>
  %y = aten.linear %xd, %wd : (tensor<1x8xf32>, tensor<2x8xf32>) -> tensor<1x2xf32>
  func.return %y : tensor<1x2xf32>
}

// -----

// Dynamic per-tensor activation (PT2E is_dynamic), int8 per-channel weight.
// CHECK-LABEL: func.func @linear_dynamic_per_tensor_w8(
// CHECK-SAME:    %[[X:.*]]: tensor<2x4xf32>
// CHECK-NOT:     quant.
// CHECK:         %[[Y:.*]] = qfused.linear %[[X]], {{.*}}act = #qfused.dynamic<per_tensor, asymmetric, range = [0, 255], eps = 0.000244140625, scale_type = f64>, kernel = "linear_dq8ta_q8csw"}
// CHECK:         func.return %[[Y]]
func.func @linear_dynamic_per_tensor_w8(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %xs, %xz = quant.choose_qparams %x {block_size = array<i64: 2, 4>, qmin = 0 : i64, qmax = 255 : i64, mapping = "asymmetric", eps = 0.000244140625 : f64} : (tensor<2x4xf32>) -> (tensor<1xf64>, tensor<1xi64>)
  %xq = quant.quantize %x, %xs, %xz {block_size = array<i64: 2, 4>, qmin = 0 : i64, qmax = 255 : i64, compute_type = f32} : (tensor<2x4xf32>, tensor<1xf64>, tensor<1xi64>) -> tensor<2x4xui8>
  %xd = quant.dequantize %xq, %xs, %xz {block_size = array<i64: 2, 4>, qmin = 0 : i64, qmax = 255 : i64, compute_type = f32} : (tensor<2x4xui8>, tensor<1xf64>, tensor<1xi64>) -> tensor<2x4xf32>
  %w = arith.constant dense<[[1, -2, 3, -4], [5, 6, -7, 8], [-9, 10, 11, 127]]> : tensor<3x4xi8>
  %s = arith.constant dense<[0.5, 0.25, 0.125]> : tensor<3xf32>
  %wd = quant.dequantize %w, %s {block_size = array<i64: 1, 4>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<3x4xi8>, tensor<3xf32>) -> tensor<3x4xf32>
  %y = aten.linear %xd, %wd : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// Dynamic per-tensor activation, int4 per-group weight.
// CHECK-LABEL: func.func @linear_dynamic_per_tensor_w4(
// CHECK-SAME:    %[[X:.*]]: tensor<2x8xf32>
// CHECK-NOT:     quant.
// CHECK:         %[[Y:.*]] = qfused.linear %[[X]], {{.*}}act = #qfused.dynamic<per_tensor, symmetric, {{.*}}kernel = "linear_dq8ta_q4gsw"}
// CHECK:         func.return %[[Y]]
func.func @linear_dynamic_per_tensor_w4(%x: tensor<2x8xf32>) -> tensor<2x2xf32> {
  %xs, %xz = quant.choose_qparams %x {block_size = array<i64: 2, 8>, qmin = -128 : i64, qmax = 127 : i64, mapping = "symmetric", eps = 0.000244140625 : f64} : (tensor<2x8xf32>) -> (tensor<f32>, tensor<i64>)
  %xq = quant.quantize %x, %xs, %xz {block_size = array<i64: 2, 8>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x8xf32>, tensor<f32>, tensor<i64>) -> tensor<2x8xi8>
  %xd = quant.dequantize %xq, %xs, %xz {block_size = array<i64: 2, 8>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x8xi8>, tensor<f32>, tensor<i64>) -> tensor<2x8xf32>
  %w = arith.constant dense<[[-8, -7, 0, 1, 2, 3, 6, 7], [7, 6, 5, 4, -1, -2, -3, -4]]> : tensor<2x8xi8>
  %s = arith.constant dense<[[0.5, 0.25], [0.125, 1.0]]> : tensor<2x2xf32>
  %wd = quant.dequantize %w, %s {block_size = array<i64: 1, 4>, qmin = -8 : i64, qmax = 7 : i64} : (tensor<2x8xi8>, tensor<2x2xf32>) -> tensor<2x8xf32>
  %y = aten.linear %xd, %wd : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x2xf32>
  func.return %y : tensor<2x2xf32>
}
