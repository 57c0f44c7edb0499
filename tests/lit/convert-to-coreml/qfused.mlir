// RUN: qopt-opt %s -p convert-to-coreml --split-input-file | filecheck %s
// RUN: qopt-opt %s -p 'convert-to-coreml{target=iOS17}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=IOS17
// Lowering rules of qfused ops: compressed weights stay compressed.

// CHECK-LABEL: func.func @linear_w8c(
// CHECK-SAME:    attributes {coreml.opset = "iOS18"}
// CHECK:         %[[W:.*]] = coreml.constexpr_blockwise_shift_scale
// CHECK:         coreml.linear %{{.*}}, %[[W]], %{{.*}}
// IOS17-LABEL: func.func @linear_w8c(
// IOS17:         %[[W:.*]] = coreml.constexpr_affine_dequantize
// IOS17-SAME:    axis = 0
// IOS17:         coreml.linear %{{.*}}, %[[W]], %{{.*}}
func.func @linear_w8c(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<1> : tensor<3x4xi8>
  %s = arith.constant dense<5.000000e-01> : tensor<3x1xf32>
  %b = arith.constant dense<1.000000e+00> : tensor<3xf32>
  %y = qfused.linear %x, %w, %s bias %b {weight_scheme = #qfused.affine<bits = 8, range = [-128, 127], block = [1, 4]>, kernel = "linear_q8csw"} : tensor<2x4xf32>, tensor<3x4xi8>, tensor<3x1xf32> bias tensor<3xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// A 4-bit group-wise weight without bias: int4 data, linear (a zero bias constant).
// CHECK-LABEL: func.func @linear_w4g2(
// CHECK:         coreml.const dense_resource<{{.*}}> : tensor<3x4xi4>
// CHECK:         %[[W:.*]] = coreml.constexpr_blockwise_shift_scale
// CHECK:         coreml.const dense<0.000000e+00>
// CHECK-NEXT:    coreml.linear %{{.*}}, %[[W]], %{{.*}}
// IOS17: 'qfused.linear' (scheme linear_q4gsw) has 4-bit affine (block [1, 2]) weights, which CoreML iOS17 cannot express (int4 weights exist from iOS18); the lowest target that can is iOS18
func.func @linear_w4g2(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<1> : tensor<3x4xi8>
  %s = arith.constant dense<5.000000e-01> : tensor<3x2xf32>
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 2]>, kernel = "linear_q4gsw"} : tensor<2x4xf32>, tensor<3x4xi8>, tensor<3x2xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
