// RUN: qopt-opt %s -p convert-to-coreml --split-input-file --verify-diagnostics | filecheck %s
// RUN: qopt-opt %s -p 'convert-to-coreml{target=iOS16}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=IOS16
// Inference batch norm: MIL batch_norm for inputs of rank 3 to 5; a rank-2
// input folds to x * a + b with constants.

// CHECK-LABEL: func.func @batch_norm_2d(
// CHECK:         %[[M:.*]] = coreml.const dense<[1.000000e+00, -1.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[V:.*]] = coreml.const dense<[4.000000e+00, 2.500000e-01]> : tensor<2xf32>
// CHECK-NEXT:    %[[G:.*]] = coreml.const dense<[2.000000e+00, 3.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[B:.*]] = coreml.const dense<[5.000000e-01, 0.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[Y:.*]] = coreml.batch_norm %x, %[[M]], %[[V]] gamma %[[G]] beta %[[B]] {epsilon = 1.000000e-03 : f64} : tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32> gamma tensor<2xf32> beta tensor<2xf32> -> tensor<1x2x3x3xf32>
// CHECK-NEXT:    func.return %[[Y]]
// IOS16-LABEL: func.func @batch_norm_2d(
// IOS16-SAME:    attributes {coreml.opset = "iOS16"}
// IOS16:         coreml.batch_norm
func.func @batch_norm_2d(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %m = arith.constant dense<[1.000000e+00, -1.000000e+00]> : tensor<2xf32>
  %v = arith.constant dense<[4.000000e+00, 2.500000e-01]> : tensor<2xf32>
  %w = arith.constant dense<[2.000000e+00, 3.000000e+00]> : tensor<2xf32>
  %b = arith.constant dense<[5.000000e-01, 0.000000e+00]> : tensor<2xf32>
  %y = aten.batch_norm %x, %m, %v weight(%w : tensor<2xf32>) bias(%b : tensor<2xf32>) {eps = 1.000000e-03 : f64} : tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// -----

// No affine parameters and no eps: gamma and beta stay absent, epsilon is 1e-5.
// CHECK-LABEL: func.func @batch_norm_1d(
// CHECK:         coreml.batch_norm %x, %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64} : tensor<2x2x3xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<2x2x3xf32>
func.func @batch_norm_1d(%x: tensor<2x2x3xf32>) -> tensor<2x2x3xf32> {
  %m = arith.constant dense<[1.000000e+00, -1.000000e+00]> : tensor<2xf32>
  %v = arith.constant dense<[4.000000e+00, 2.500000e-01]> : tensor<2xf32>
  %y = aten.batch_norm %x, %m, %v : tensor<2x2x3xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<2x2x3xf32>
  func.return %y : tensor<2x2x3xf32>
}

// -----

// [N, C] (BatchNorm1d after a linear): a = 1 / sqrt(var + eps), b = -mean * a.
// CHECK-LABEL: func.func @batch_norm_rank2(
// CHECK:         %[[A:.*]] = coreml.const dense<[5.000000e-01, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[XA:.*]] = coreml.mul %x, %[[A]] : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:    %[[B:.*]] = coreml.const dense<[-5.000000e-01, 2.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[Y:.*]] = coreml.add %[[XA]], %[[B]] : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:    func.return %[[Y]]
// CHECK-NOT:     coreml.batch_norm
func.func @batch_norm_rank2(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %m = arith.constant dense<[1.000000e+00, -1.000000e+00]> : tensor<2xf32>
  %v = arith.constant dense<[4.000000e+00, 2.500000e-01]> : tensor<2xf32>
  %y = aten.batch_norm %x, %m, %v {eps = 0.000000e+00 : f64} : tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  func.return %y : tensor<4x2xf32>
}

// -----

// Run-time statistics: the lowering writes (x - mean) * rsqrt(var + eps) per channel
// (qopt/lowering/compose.py) instead of MIL's batch_norm, which takes constants.
// CHECK-LABEL: func.func @batch_norm_runtime_stats(
// CHECK:         %[[M:.*]] = coreml.reshape %m {shape = array<i64: 1, 2, 1>}
// CHECK:         %[[D:.*]] = coreml.sub %x, %[[M]]
// CHECK:         %[[S:.*]] = coreml.rsqrt {{.*}}{epsilon = 0.000000e+00 : f64}
// CHECK:         %[[Y:.*]] = coreml.mul %[[D]], %[[S]]
// CHECK-NEXT:    func.return %[[Y]]
// CHECK-NOT:     coreml.batch_norm
// IOS16-LABEL: func.func @batch_norm_runtime_stats(
// IOS16:         coreml.sub %x
func.func @batch_norm_runtime_stats(%x: tensor<1x2x3xf32>, %m: tensor<2xf32>) -> tensor<1x2x3xf32> {
  %v = arith.constant dense<[4.000000e+00, 2.500000e-01]> : tensor<2xf32>
  %y = aten.batch_norm %x, %m, %v : tensor<1x2x3xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x3xf32>
  func.return %y : tensor<1x2x3xf32>
}
