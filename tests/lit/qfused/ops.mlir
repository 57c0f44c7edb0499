// RUN: qopt-opt %s | qopt-opt | filecheck %s
// RUN: QOPT_GENERIC_ROUNDTRIP
// Round trip of every qfused op and every attribute form (qopt/dialects/qfused.py).

// CHECK-LABEL: func.func @linear_weight_only_group(
// CHECK-SAME:    %[[X:.*]]: tensor<2x8xf32>, %[[W:.*]]: tensor<3x8xi8>, %[[S:.*]]: tensor<3x2xf32>, %[[B:.*]]: tensor<3xf32>
// CHECK:         %[[Y:.*]] = qfused.linear %[[X]], %[[W]], %[[S]] bias %[[B]] {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, kernel = "linear_q4gsw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x2xf32> bias tensor<3xf32> -> tensor<2x3xf32>
// CHECK:         func.return %[[Y]]
// GENERIC-LABEL: "func.func"() <{sym_name = "linear_weight_only_group"
// GENERIC:       "qfused.linear"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, kernel = "linear_q4gsw", operandSegmentSizes = array<i32: 1, 1, 1, 0, 1>}> : (tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x2xf32>, tensor<3xf32>) -> tensor<2x3xf32>
func.func @linear_weight_only_group(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x2xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s bias %b {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, kernel = "linear_q4gsw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x2xf32> bias tensor<3xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @linear_asymmetric_weight(
// CHECK:         qfused.linear %{{.*}}, %{{.*}}, %{{.*}} zero_point %{{.*}} {weight_scheme = #qfused.affine<bits = 8, range = [-128, 127], block = [1, 8]>, kernel = "linear_q8caw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> zero_point tensor<3x1xi8> -> tensor<2x3xf32>
// GENERIC:       "qfused.linear"{{.*}}operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>
func.func @linear_asymmetric_weight(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>, %z: tensor<3x1xi8>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s zero_point %z {weight_scheme = #qfused.affine<bits = 8, range = [-128, 127], block = [1, 8]>, kernel = "linear_q8caw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> zero_point tensor<3x1xi8> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @linear_lut(
// CHECK:         qfused.linear %{{.*}}, %{{.*}}, %{{.*}} {weight_scheme = #qfused.lut<nbits = 3, block = [-1, 4]>, kernel = "linear_lut3w"} : tensor<2x8xf32>, tensor<3x8xui8>, tensor<1x2x8x1xf32> -> tensor<2x3xf32>
// GENERIC:       "qfused.linear"{{.*}}weight_scheme = #qfused.lut<nbits = 3, block = [-1, 4]>
func.func @linear_lut(%x: tensor<2x8xf32>, %c: tensor<3x8xui8>, %book: tensor<1x2x8x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %c, %book {weight_scheme = #qfused.lut<nbits = 3, block = [-1, 4]>, kernel = "linear_lut3w"} : tensor<2x8xf32>, tensor<3x8xui8>, tensor<1x2x8x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @linear_static_requant_clamp(
// CHECK:         qfused.linear %{{.*}}, %{{.*}}, %{{.*}} {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 8]>, act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, requant = #qfused.static<scale = 0.1, zero_point = -128, range = [-128, 127]>, clamp_min = 0.000000e+00 : f64, clamp_max = 6.000000e+00 : f64, kernel = "linear_q8ta_q8csw_q8to"} : tensor<2x8xi8>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xi8>
// GENERIC:       "qfused.linear"{{.*}}act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, requant = #qfused.static<scale = 0.1, zero_point = -128, range = [-128, 127]>, clamp_min = 0.000000e+00 : f64, clamp_max = 6.000000e+00 : f64
func.func @linear_static_requant_clamp(%x: tensor<2x8xi8>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x3xi8> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 8]>, act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, requant = #qfused.static<scale = 0.1, zero_point = -128, range = [-128, 127]>, clamp_min = 0.0 : f64, clamp_max = 6.0 : f64, kernel = "linear_q8ta_q8csw_q8to"} : tensor<2x8xi8>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xi8>
  func.return %y : tensor<2x3xi8>
}

// CHECK-LABEL: func.func @linear_dynamic(
// CHECK:         qfused.linear {{.*}}act = #qfused.dynamic<per_token, asymmetric, range = [-128, 127], eps = 1.1920928955078125e-07, scale_type = f32>, kernel = "linear_dq8ca_q4gsw"}
// CHECK:         qfused.linear {{.*}}act = #qfused.dynamic<per_tensor, symmetric_no_clipping_err, range = [0, 255], eps = 0.000244140625, scale_type = f64>, kernel = "linear_dq8ta_q4gsw"}
// GENERIC:       "qfused.linear"{{.*}}act = #qfused.dynamic<per_token, asymmetric, range = [-128, 127], eps = 1.1920928955078125e-07, scale_type = f32>
func.func @linear_dynamic(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x2xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, act = #qfused.dynamic<per_token, asymmetric, range = [-128, 127], eps = 1.1920928955078125e-07, scale_type = f32>, kernel = "linear_dq8ca_q4gsw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x2xf32> -> tensor<2x3xf32>
  %t = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, act = #qfused.dynamic<per_tensor, symmetric_no_clipping_err, range = [0, 255], eps = 0.000244140625, scale_type = f64>, kernel = "linear_dq8ta_q4gsw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x2xf32> -> tensor<2x3xf32>
  func.return %y, %t : tensor<2x3xf32>, tensor<2x3xf32>
}

// CHECK-LABEL: func.func @conv2d_static(
// CHECK:         qfused.conv2d %{{.*}}, %{{.*}}, %{{.*}} bias %{{.*}} {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 2, 3, 3]>, act = #qfused.static<scale = 0.05, zero_point = -3, range = [-128, 127]>, requant = #qfused.static<scale = 0.02, zero_point = -128, range = [-128, 127]>, clamp_min = 0.000000e+00 : f64, stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64, kernel = "conv2d_q8ta_q8csw_q8to"} : tensor<1x2x4x4xf32>, tensor<4x2x3x3xi8>, tensor<4x1x1x1xf32> bias tensor<4xf32> -> tensor<1x4x4x4xi8>
// GENERIC:       "qfused.conv2d"{{.*}}stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64
func.func @conv2d_static(%x: tensor<1x2x4x4xf32>, %w: tensor<4x2x3x3xi8>, %s: tensor<4x1x1x1xf32>, %b: tensor<4xf32>) -> tensor<1x4x4x4xi8> {
  %y = qfused.conv2d %x, %w, %s bias %b {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 2, 3, 3]>, act = #qfused.static<scale = 0.05, zero_point = -3, range = [-128, 127]>, requant = #qfused.static<scale = 0.02, zero_point = -128, range = [-128, 127]>, clamp_min = 0.0 : f64, stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64, kernel = "conv2d_q8ta_q8csw_q8to"} : tensor<1x2x4x4xf32>, tensor<4x2x3x3xi8>, tensor<4x1x1x1xf32> bias tensor<4xf32> -> tensor<1x4x4x4xi8>
  func.return %y : tensor<1x4x4x4xi8>
}

// CHECK-LABEL: func.func @conv2d_depthwise_weight_only(
// CHECK:         qfused.conv2d %{{.*}}, %{{.*}}, %{{.*}} zero_point %{{.*}} {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 1, 3, 3]>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 4 : i64, kernel = "conv2d_q4caw"} : tensor<1x4x4x4xf32>, tensor<4x1x3x3xi8>, tensor<4x1x1x1xf32> zero_point tensor<4x1x1x1xi8> -> tensor<1x4x2x2xf32>
func.func @conv2d_depthwise_weight_only(%x: tensor<1x4x4x4xf32>, %w: tensor<4x1x3x3xi8>, %s: tensor<4x1x1x1xf32>, %z: tensor<4x1x1x1xi8>) -> tensor<1x4x2x2xf32> {
  %y = qfused.conv2d %x, %w, %s zero_point %z {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 1, 3, 3]>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 4 : i64, kernel = "conv2d_q4caw"} : tensor<1x4x4x4xf32>, tensor<4x1x3x3xi8>, tensor<4x1x1x1xf32> zero_point tensor<4x1x1x1xi8> -> tensor<1x4x2x2xf32>
  func.return %y : tensor<1x4x2x2xf32>
}

// CHECK-LABEL: func.func @embedding_affine(
// CHECK:         qfused.embedding %{{.*}}, %{{.*}}, %{{.*}} zero_point %{{.*}} {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, kernel = "embedding_q4gaw"} : tensor<1x3xi64>, tensor<5x8xi8>, tensor<5x2xf32> zero_point tensor<5x2xi8> -> tensor<1x3x8xf32>
// GENERIC:       "qfused.embedding"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, kernel = "embedding_q4gaw", operandSegmentSizes = array<i32: 1, 1, 1, 1>}>
func.func @embedding_affine(%i: tensor<1x3xi64>, %w: tensor<5x8xi8>, %s: tensor<5x2xf32>, %z: tensor<5x2xi8>) -> tensor<1x3x8xf32> {
  %y = qfused.embedding %i, %w, %s zero_point %z {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, kernel = "embedding_q4gaw"} : tensor<1x3xi64>, tensor<5x8xi8>, tensor<5x2xf32> zero_point tensor<5x2xi8> -> tensor<1x3x8xf32>
  func.return %y : tensor<1x3x8xf32>
}

// CHECK-LABEL: func.func @embedding_lut(
// CHECK:         qfused.embedding %{{.*}}, %{{.*}}, %{{.*}} {weight_scheme = #qfused.lut<nbits = 4, block = [-1, -1]>, kernel = "embedding_lut4w"} : tensor<3xi32>, tensor<5x8xui8>, tensor<1x1x16x1xf32> -> tensor<3x8xf32>
func.func @embedding_lut(%i: tensor<3xi32>, %c: tensor<5x8xui8>, %book: tensor<1x1x16x1xf32>) -> tensor<3x8xf32> {
  %y = qfused.embedding %i, %c, %book {weight_scheme = #qfused.lut<nbits = 4, block = [-1, -1]>, kernel = "embedding_lut4w"} : tensor<3xi32>, tensor<5x8xui8>, tensor<1x1x16x1xf32> -> tensor<3x8xf32>
  func.return %y : tensor<3x8xf32>
}

// CHECK-LABEL: func.func @mul(
// CHECK:         qfused.mul %{{.*}}, %{{.*}} {lhs_act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, rhs_act = #qfused.static<scale = 0.0039, zero_point = -128, range = [-128, 127]>, requant = #qfused.static<scale = 0.04, zero_point = 0, range = [-128, 127]>, kernel = "mul_q8ta_q8ta_q8to"} : tensor<1x2x3x3xi8>, tensor<1x2x1x1xi8> -> tensor<1x2x3x3xi8>
// GENERIC:       "qfused.mul"(%{{.*}}, %{{.*}}) <{lhs_act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>
func.func @mul(%a: tensor<1x2x3x3xi8>, %b: tensor<1x2x1x1xi8>) -> tensor<1x2x3x3xi8> {
  %y = qfused.mul %a, %b {lhs_act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, rhs_act = #qfused.static<scale = 0.0039, zero_point = -128, range = [-128, 127]>, requant = #qfused.static<scale = 0.04, zero_point = 0, range = [-128, 127]>, kernel = "mul_q8ta_q8ta_q8to"} : tensor<1x2x3x3xi8>, tensor<1x2x1x1xi8> -> tensor<1x2x3x3xi8>
  func.return %y : tensor<1x2x3x3xi8>
}

// CHECK-LABEL: func.func @add(
// CHECK:         qfused.add %{{.*}}, %{{.*}} {lhs_act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, rhs_act = #qfused.static<scale = 0.1, zero_point = -2, range = [-128, 127]>, alpha = 2.000000e+00 : f64, requant = #qfused.static<scale = 0.15, zero_point = 0, range = [-128, 127]>, clamp_min = 0.000000e+00 : f64, kernel = "add_q8ta_q8ta_q8to"} : tensor<2x4xi8>, tensor<4xf32> -> tensor<2x4xi8>
// CHECK:         qfused.add %{{.*}}, %{{.*}} {lhs_act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, rhs_act = #qfused.static<scale = 0.1, zero_point = 2, range = [0, 255]>, kernel = "add_q8ta_q8ta"} : tensor<2x4xi8>, tensor<4xf32> -> tensor<2x4xf32>
// GENERIC:       "qfused.add"(%{{.*}}, %{{.*}}) <{lhs_act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, rhs_act = #qfused.static<scale = 0.1, zero_point = -2, range = [-128, 127]>, alpha = 2.000000e+00 : f64
func.func @add(%a: tensor<2x4xi8>, %b: tensor<4xf32>) -> (tensor<2x4xi8>, tensor<2x4xf32>) {
  %y = qfused.add %a, %b {lhs_act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, rhs_act = #qfused.static<scale = 0.1, zero_point = -2, range = [-128, 127]>, alpha = 2.0 : f64, requant = #qfused.static<scale = 0.15, zero_point = 0, range = [-128, 127]>, clamp_min = 0.0 : f64, kernel = "add_q8ta_q8ta_q8to"} : tensor<2x4xi8>, tensor<4xf32> -> tensor<2x4xi8>
  %f = qfused.add %a, %b {lhs_act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, rhs_act = #qfused.static<scale = 0.1, zero_point = 2, range = [0, 255]>, kernel = "add_q8ta_q8ta"} : tensor<2x4xi8>, tensor<4xf32> -> tensor<2x4xf32>
  func.return %y, %f : tensor<2x4xi8>, tensor<2x4xf32>
}
