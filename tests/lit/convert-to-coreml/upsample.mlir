// RUN: qopt-opt %s -p convert-to-coreml --split-input-file --verify-diagnostics | filecheck %s
// interpolate: gathers of compile-time source offsets (torch's index rules) on the
// input reshaped to [B, H * W]; bilinear blends the four corners with constant
// weights, h0 * (w0 * x00 + w1 * x01) + h1 * (w0 * x10 + w1 * x11).

// CHECK-LABEL: func.func @nearest(
// CHECK-NEXT:    %[[X:.*]] = coreml.reshape %x {shape = array<i64: 2, 12>} : (tensor<1x2x3x4xf32>) -> tensor<2x12xf32>
// CHECK-NEXT:    %[[I:.*]] = coreml.const dense_resource<indices> : tensor<48xi32>
// CHECK-NEXT:    %[[G:.*]] = coreml.gather %[[X]], %[[I]] {axis = 1 : i64} : (tensor<2x12xf32>, tensor<48xi32>) -> tensor<2x48xf32>
// CHECK-NEXT:    %[[Y:.*]] = coreml.reshape %[[G]] {shape = array<i64: 1, 2, 6, 8>}
// CHECK-NEXT:    func.return %[[Y]]
func.func @nearest(%x: tensor<1x2x3x4xf32>) -> tensor<1x2x6x8xf32> {
  %r = aten.upsample_nearest2d %x {scales_h = 2.000000e+00 : f64, scales_w = 2.000000e+00 : f64} : (tensor<1x2x3x4xf32>) -> tensor<1x2x6x8xf32>
  func.return %r : tensor<1x2x6x8xf32>
}

// -----

// CHECK-LABEL: func.func @bilinear(
// CHECK-COUNT-2: coreml.gather %{{.*}} {axis = 1 : i64} : (tensor<6x12xf32>, tensor<35xi32>) -> tensor<6x35xf32>
// CHECK:         coreml.add
// CHECK-COUNT-2: coreml.gather %{{.*}} {axis = 1 : i64} : (tensor<6x12xf32>, tensor<35xi32>) -> tensor<6x35xf32>
// CHECK-COUNT-2: coreml.add
// CHECK-NEXT:    %[[Y:.*]] = coreml.reshape %{{.*}} {shape = array<i64: 2, 3, 5, 7>}
// CHECK-NEXT:    func.return %[[Y]]
func.func @bilinear(%x: tensor<2x3x3x4xf32>) -> tensor<2x3x5x7xf32> {
  %r = aten.upsample_bilinear2d %x {align_corners = true} : (tensor<2x3x3x4xf32>) -> tensor<2x3x5x7xf32>
  func.return %r : tensor<2x3x5x7xf32>
}
