// RUN: qopt-opt %s -p 'convert-to-vkc{schedule=false},vkc-fuse-elementwise,vkc-fuse-norms,vkc-merge-siblings,vkc-fuse-row-quant' --split-input-file | filecheck %s
// RUN: qopt-opt %s -p 'qopt-vulkan{fuse-row-quant=false}' --split-input-file | filecheck %s --check-prefix=OFF
// vkc-fuse-row-quant: the per-token quantization of an 8da4w linear's input (one
// quantize_rows_dynamic per x after vkc-merge-siblings) goes into the rms_norm_rows that
// wrote that x (QUANT = 1: it also writes scale, zp and the int8 rows the linears read).
// With fuse-row-quant=false qopt-vulkan keeps the quantize_rows_dynamic. (Translation
// validation and device checks: tests/unit/lowering/test_vkc_dispatch_fusions.py.)

// A norm feeding two dynamic-activation linears (siblings: one quantization of y).
// CHECK:       vkc.kernel @[[N:rms_norm_rows_[0-9]+]] {kernel = "rms_norm_rows"{{.*}}spec = {HAS_ADD = 0 : i64, HAS_H = 0 : i64, QUANT = 1 : i64, MAPPING = 0 : i64, ZP_BEFORE_ROUND = 0 : i64}
// CHECK-LABEL: func.func @norm_linear
// CHECK:         %[[X:[0-9]+]] = vkc.input %x
// CHECK-NOT:     quantize_rows_dynamic
// CHECK:         vkc.dispatch @[[N]](%[[X]], %[[X]], %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %[[S:[0-9]+]], %[[Z:[0-9]+]], %[[Q:[0-9]+]]) {push = {rows = 2 : i64, cols = 8 : i64, alpha = 1.000000e+00 : f32, eps = 1.000000e-05 : f32, w_off = 0 : i64, qmin = -128 : i32, qmax = 127 : i32, q_eps = 1.1920929e-07 : f32, q_qmin = -128 : i32, q_qmax = 127 : i32}
// CHECK-NOT:     quantize_rows_dynamic
// CHECK:         vkc.dispatch @linear_dq8ca_q4gsw_0(%[[Q]], %[[S]], %[[Z]],
// CHECK-NOT:     quantize_rows_dynamic
// CHECK:         func.return
// OFF-LABEL:   func.func @norm_linear
// OFF:           vkc.dispatch @rms_norm_rows
// OFF:           vkc.dispatch @quantize_rows_dynamic
// OFF:           vkc.dispatch @linear_dq8ca_q4gsw
// OFF:           func.return
func.func @norm_linear(%x: tensor<2x8xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %two = arith.constant dense<2.0> : tensor<f32>
  %eps = arith.constant dense<1.0e-05> : tensor<f32>
  %nw = arith.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %0 = aten.pow %x, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %1 = aten.mean %0 {dims = array<i64: -1>, keepdim = true} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %2 = aten.add %1, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %3 = aten.rsqrt %2 : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %4 = aten.mul %x, %3 : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %y = aten.mul %4, %nw : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %w = arith.constant dense<[[1, -2, 3, -4, 5, -6, 7, -8], [0, 1, 2, 3, 4, 5, 6, 7], [-1, -1, -1, -1, 1, 1, 1, 1]]> : tensor<3x8xi8>
  %s = arith.constant dense<[[0.5, 0.25], [0.125, 1.0], [2.0, 0.5]]> : tensor<3x2xf32>
  %w2 = arith.constant dense<[[7, 6, 5, 4, 3, 2, 1, 0], [-8, 1, -2, 3, -4, 5, -6, 7], [1, 1, 1, 1, -1, -1, -1, -1]]> : tensor<3x8xi8>
  %s2 = arith.constant dense<[[0.25, 0.5], [1.0, 0.125], [0.5, 2.0]]> : tensor<3x2xf32>
  %a = qfused.linear %y, %w, %s {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, act = #qfused.dynamic<per_token, asymmetric, range = [-128, 127], eps = 1.1920928955078125e-07, scale_type = f32>, kernel = "linear_dq8ca_q4gsw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x2xf32> -> tensor<2x3xf32>
  %b = qfused.linear %y, %w2, %s2 {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, act = #qfused.dynamic<per_token, asymmetric, range = [-128, 127], eps = 1.1920928955078125e-07, scale_type = f32>, kernel = "linear_dq8ca_q4gsw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x2xf32> -> tensor<2x3xf32>
  func.return %a, %b : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// Must not fire: the quantized x is a program input (no norm wrote it).
// CHECK-LABEL: func.func @input
// CHECK:         vkc.dispatch @quantize_rows_dynamic
// CHECK-NOT:     rms_norm_rows
// CHECK:         func.return
func.func @input(%x: tensor<2x8xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<[[1, -2, 3, -4, 5, -6, 7, -8], [0, 1, 2, 3, 4, 5, 6, 7], [-1, -1, -1, -1, 1, 1, 1, 1]]> : tensor<3x8xi8>
  %s = arith.constant dense<[[0.5, 0.25], [0.125, 1.0], [2.0, 0.5]]> : tensor<3x2xf32>
  %a = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, act = #qfused.dynamic<per_token, asymmetric, range = [-128, 127], eps = 1.1920928955078125e-07, scale_type = f32>, kernel = "linear_dq8ca_q4gsw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x2xf32> -> tensor<2x3xf32>
  func.return %a : tensor<2x3xf32>
}
