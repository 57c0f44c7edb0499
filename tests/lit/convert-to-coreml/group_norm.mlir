// RUN: qopt-opt %s -p convert-to-coreml --split-input-file --verify-diagnostics | filecheck %s
// Group norm: reshape to [N, G, C / G * prod(*)], MIL layer_norm over the last axis,
// reshape back, then the per-channel weight and bias as [C, 1, ...] operands.

// CHECK-LABEL: func.func @group_norm(
// CHECK-NEXT:    %[[G:.*]] = coreml.reshape %x {shape = array<i64: 2, 3, 10>} : (tensor<2x6x5xf32>) -> tensor<2x3x10xf32>
// CHECK-NEXT:    %[[N:.*]] = coreml.layer_norm %[[G]] {axes = array<i64: 2>, epsilon = 1.000000e-05 : f64}
// CHECK-NEXT:    %[[Y:.*]] = coreml.reshape %[[N]] {shape = array<i64: 2, 6, 5>}
// CHECK-NEXT:    %[[W:.*]] = coreml.reshape %w {shape = array<i64: 6, 1>}
// CHECK-NEXT:    %[[M:.*]] = coreml.mul %[[Y]], %[[W]]
// CHECK-NEXT:    %[[B:.*]] = coreml.reshape %b {shape = array<i64: 6, 1>}
// CHECK-NEXT:    %[[A:.*]] = coreml.add %[[M]], %[[B]]
// CHECK-NEXT:    func.return %[[A]]
func.func @group_norm(%x: tensor<2x6x5xf32>, %w: tensor<6xf32>, %b: tensor<6xf32>) -> tensor<2x6x5xf32> {
  %r = aten.group_norm %x weight(%w : tensor<6xf32>) bias(%b : tensor<6xf32>) {num_groups = 3 : i64, eps = 1.000000e-05 : f64} : tensor<2x6x5xf32> -> tensor<2x6x5xf32>
  func.return %r : tensor<2x6x5xf32>
}

// -----

// Without affine parameters: the layer_norm alone between the reshapes.
// CHECK-LABEL: func.func @group_norm_plain(
// CHECK-NEXT:    coreml.reshape %x {shape = array<i64: 1, 2, 12>}
// CHECK-NEXT:    coreml.layer_norm
// CHECK-NEXT:    %[[Y:.*]] = coreml.reshape
// CHECK-NEXT:    func.return %[[Y]]
func.func @group_norm_plain(%x: tensor<1x4x2x3xf32>) -> tensor<1x4x2x3xf32> {
  %r = aten.group_norm %x {num_groups = 2 : i64} : tensor<1x4x2x3xf32> -> tensor<1x4x2x3xf32>
  func.return %r : tensor<1x4x2x3xf32>
}
