// RUN: qopt-opt %s -p 'compose{target=coreml}' | filecheck %s
// RUN: qopt-opt %s -p 'compose{target=vulkan}' | filecheck %s --check-prefix=VULKAN
// RUN: qopt-opt %s -p convert-to-coreml | filecheck %s --check-prefix=MIL
// A dilated convolution whose weight is a run-time value on CoreML (coremltools
// dilates constant weights only): the weight dilated in the graph, per dim a unit dim
// after it padded with d - 1 zeros, merged and cut to d (k - 1) + 1 (rank 5 at most),
// then an undilated convolution (qopt/lowering/compose.py, dilated_weight). A constant
// weight, or a dilation along a dim of kernel size 1, stays; Vulkan has the form.

// CHECK-LABEL: func.func @dilated(
// CHECK-NEXT:    %[[U:.*]] = aten.view %w : (tensor<3x2x3x2xf32>) -> tensor<3x2x3x1x2xf32>
// CHECK-NEXT:    %[[P:.*]] = aten.constant_pad_nd %[[U]] {pad = array<i64: 0, 0, 0, 1>, value = 0.000000e+00 : f64} : (tensor<3x2x3x1x2xf32>) -> tensor<3x2x3x2x2xf32>
// CHECK-NEXT:    %[[M:.*]] = aten.view %[[P]] : (tensor<3x2x3x2x2xf32>) -> tensor<3x2x6x2xf32>
// CHECK-NEXT:    %[[H:.*]] = aten.slice %[[M]] {dim = 2 : i64, start = 0 : i64, end = 5 : i64, step = 1 : i64} : (tensor<3x2x6x2xf32>) -> tensor<3x2x5x2xf32>
// CHECK-NEXT:    %[[U2:.*]] = aten.view %[[H]] : (tensor<3x2x5x2xf32>) -> tensor<3x2x5x2x1xf32>
// CHECK-NEXT:    %[[P2:.*]] = aten.constant_pad_nd %[[U2]] {pad = array<i64: 0, 2>, {{.*}}} : (tensor<3x2x5x2x1xf32>) -> tensor<3x2x5x2x3xf32>
// CHECK-NEXT:    %[[M2:.*]] = aten.view %[[P2]] : (tensor<3x2x5x2x3xf32>) -> tensor<3x2x5x6xf32>
// CHECK-NEXT:    %[[W:.*]] = aten.slice %[[M2]] {dim = 3 : i64, start = 0 : i64, end = 4 : i64, step = 1 : i64} : (tensor<3x2x5x6xf32>) -> tensor<3x2x5x4xf32>
// CHECK-NEXT:    %y = aten.conv2d %x, %[[W]], %b {stride = array<i64: 1, 2>, padding = array<i64: 1, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x8x8xf32>, tensor<3x2x5x4xf32>, tensor<3xf32>) -> tensor<1x3x6x3xf32>

// Kernel height 1: only the width is dilated.
// CHECK-LABEL: func.func @row(
// CHECK-NEXT:    aten.view %w : (tensor<4x2x1x3xf32>) -> tensor<4x2x1x3x1xf32>
// CHECK:         aten.conv2d %x, %{{.*}} {{.*}}dilation = array<i64: 1, 1>{{.*}} : (tensor<2x2x5x9xf32>, tensor<4x2x1x5xf32>) -> tensor<2x4x5x5xf32>

// CHECK-LABEL: func.func @constant_weight(
// CHECK-NEXT:    arith.constant
// CHECK-NEXT:    aten.conv2d {{.*}}dilation = array<i64: 2, 2>

// VULKAN-NOT: aten.constant_pad_nd
// VULKAN:     aten.conv2d {{.*}}dilation = array<i64: 2, 3>

// MIL-LABEL: func.func @dilated(
// MIL:         coreml.pad
// MIL:         coreml.conv %{{.*}} dilations = array<i64: 1, 1>
// MIL-LABEL: func.func @constant_weight(
// MIL:         coreml.conv %{{.*}} dilations = array<i64: 2, 2>
func.func @dilated(%x: tensor<1x2x8x8xf32>, %w: tensor<3x2x3x2xf32>, %b: tensor<3xf32>) -> tensor<1x3x6x3xf32> {
  %y = aten.conv2d %x, %w, %b {stride = array<i64: 1, 2>, padding = array<i64: 1, 0>, dilation = array<i64: 2, 3>, groups = 1 : i64} : (tensor<1x2x8x8xf32>, tensor<3x2x3x2xf32>, tensor<3xf32>) -> tensor<1x3x6x3xf32>
  func.return %y : tensor<1x3x6x3xf32>
}
func.func @row(%x: tensor<2x2x5x9xf32>, %w: tensor<4x2x1x3xf32>) -> tensor<2x4x5x5xf32> {
  %y = aten.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 3, 2>, groups = 1 : i64} : (tensor<2x2x5x9xf32>, tensor<4x2x1x3xf32>) -> tensor<2x4x5x5xf32>
  func.return %y : tensor<2x4x5x5xf32>
}
func.func @constant_weight(%x: tensor<1x2x8x8xf32>) -> tensor<1x3x4x6xf32> {
  %w = arith.constant dense<1.0> : tensor<3x2x3x2xf32>
  %y = aten.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 2, 2>, groups = 1 : i64} : (tensor<1x2x8x8xf32>, tensor<3x2x3x2xf32>) -> tensor<1x3x4x6xf32>
  func.return %y : tensor<1x3x4x6xf32>
}
