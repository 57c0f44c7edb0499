// RUN: qopt-opt %s -p convert-to-coreml --split-input-file | filecheck %s
// RUN: not qopt-opt %S/Inputs/rank6_sum.mlir -p convert-to-coreml 2>&1 | filecheck %s --check-prefix=ERR
// Core ML tensors have rank 5 or less: rank-6 values between reshapes are collapsed
// (elementwise ops on the flattened tensors, transposes of adjacent runs merged);
// anything else is an error naming the op.

// CHECK-LABEL: func.func @elementwise(
// CHECK-NEXT:    %[[C:.*]] = coreml.const dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[F:.*]] = coreml.reshape %x {shape = array<i64: 24>} : (tensor<4x6xf32>) -> tensor<24xf32>
// CHECK-NEXT:    %[[M:.*]] = coreml.mul %[[F]], %[[C]] : (tensor<24xf32>, tensor<f32>) -> tensor<24xf32>
// CHECK-NEXT:    %[[R:.*]] = coreml.relu %[[M]] : (tensor<24xf32>) -> tensor<24xf32>
// CHECK-NEXT:    %[[G:.*]] = coreml.reshape %x {shape = array<i64: 24>}
// CHECK-NEXT:    %[[S:.*]] = coreml.sub %[[R]], %[[G]] : (tensor<24xf32>, tensor<24xf32>) -> tensor<24xf32>
// CHECK-NEXT:    %[[O:.*]] = coreml.reshape %[[S]] {shape = array<i64: 2, 12>} : (tensor<24xf32>) -> tensor<2x12xf32>
// CHECK-NEXT:    func.return %[[O]]
// CHECK-NOT:     x2x
func.func @elementwise(%x: tensor<4x6xf32>) -> tensor<2x12xf32> {
  %y = aten.view %x : (tensor<4x6xf32>) -> tensor<1x2x1x3x2x2xf32>
  %c = arith.constant dense<2.000000e+00> : tensor<f32>
  %m = aten.mul %y, %c : (tensor<1x2x1x3x2x2xf32>, tensor<f32>) -> tensor<1x2x1x3x2x2xf32>
  %r = aten.relu %m : (tensor<1x2x1x3x2x2xf32>) -> tensor<1x2x1x3x2x2xf32>
  %s = aten.sub %r, %y : (tensor<1x2x1x3x2x2xf32>, tensor<1x2x1x3x2x2xf32>) -> tensor<1x2x1x3x2x2xf32>
  %o = aten.view %s : (tensor<1x2x1x3x2x2xf32>) -> tensor<2x12xf32>
  func.return %o : tensor<2x12xf32>
}

// -----

// Swin's window partition: dims (0, 1) and (4, 5) stay together.
// CHECK-LABEL: func.func @window_partition(
// CHECK-NEXT:    %[[A:.*]] = coreml.reshape %x {shape = array<i64: 2, 2, 2, 6>} : (tensor<1x4x4x3xf32>) -> tensor<2x2x2x6xf32>
// CHECK-NEXT:    %[[T:.*]] = coreml.transpose %[[A]] {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x2x6xf32>) -> tensor<2x2x2x6xf32>
// CHECK-NEXT:    %[[B:.*]] = coreml.reshape %[[T]] {shape = array<i64: 1, 4, 4, 3>} : (tensor<2x2x2x6xf32>) -> tensor<1x4x4x3xf32>
// CHECK-NEXT:    func.return %[[B]]
func.func @window_partition(%x: tensor<1x4x4x3xf32>) -> tensor<1x4x4x3xf32> {
  %0 = aten.view %x : (tensor<1x4x4x3xf32>) -> tensor<1x2x2x2x2x3xf32>
  %1 = aten.permute %0 {dims = array<i64: 0, 1, 3, 2, 4, 5>} : (tensor<1x2x2x2x2x3xf32>) -> tensor<1x2x2x2x2x3xf32>
  %2 = aten.view %1 : (tensor<1x2x2x2x2x3xf32>) -> tensor<1x4x4x3xf32>
  func.return %2 : tensor<1x4x4x3xf32>
}

// ERR: error: convert-to-coreml: 'coreml.reduce_sum': a rank-6 tensor [1, 2, 1, 3, 2, 2]; Core ML tensors have rank 5 or less
