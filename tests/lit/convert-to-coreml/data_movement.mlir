// RUN: qopt-opt %s -p convert-to-coreml --split-input-file --verify-diagnostics | filecheck %s
// Data movement and moments composed from MIL ops: repeat is reshape + tile, stack
// reshapes + concat, flip one gather per flipped dim, pixel_shuffle a rank-5
// reshape / transpose / reshape, constant_pad_nd is MIL pad, or with a negative
// amount crops (slice_by_index) and concatenates blocks of the value, var / std are two-pass (mean, sub, mul, sum, div).

// CHECK-LABEL: func.func @repeat(
// CHECK-NEXT:    %[[R:.*]] = coreml.reshape %x {shape = array<i64: 1, 2, 3>}
// CHECK-NEXT:    %[[T:.*]] = coreml.tile %[[R]] {reps = array<i64: 2, 1, 3>} : (tensor<1x2x3xf32>) -> tensor<2x2x9xf32>
// CHECK-NEXT:    func.return %[[T]]
func.func @repeat(%x: tensor<2x3xf32>) -> tensor<2x2x9xf32> {
  %r = aten.repeat %x {repeats = array<i64: 2, 1, 3>} : (tensor<2x3xf32>) -> tensor<2x2x9xf32>
  func.return %r : tensor<2x2x9xf32>
}

// -----

// CHECK-LABEL: func.func @stack(
// CHECK-NEXT:    %[[A:.*]] = coreml.reshape %x {shape = array<i64: 2, 1, 3>}
// CHECK-NEXT:    %[[B:.*]] = coreml.reshape %y {shape = array<i64: 2, 1, 3>}
// CHECK-NEXT:    %[[C:.*]] = coreml.concat %[[A]], %[[B]] {axis = 1 : i64, interleave = false}
// CHECK-NEXT:    func.return %[[C]]
func.func @stack(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x2x3xf32> {
  %r = aten.stack %x, %y {dim = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2x3xf32>
  func.return %r : tensor<2x2x3xf32>
}

// -----

// CHECK-LABEL: func.func @flip(
// CHECK-NEXT:    %[[I:.*]] = coreml.const dense<[2, 1, 0]> : tensor<3xi32>
// CHECK-NEXT:    %[[G:.*]] = coreml.gather %x, %[[I]] {axis = 1 : i64}
// CHECK-NEXT:    func.return %[[G]]
func.func @flip(%x: tensor<2x3x1xf32>) -> tensor<2x3x1xf32> {
  %r = aten.flip %x {dims = array<i64: -2, 2>} : (tensor<2x3x1xf32>) -> tensor<2x3x1xf32>
  func.return %r : tensor<2x3x1xf32>
}

// -----

// CHECK-LABEL: func.func @pixel_shuffle(
// CHECK-NEXT:    %[[A:.*]] = coreml.reshape %x {shape = array<i64: 4, 2, 2, 3, 5>}
// CHECK-NEXT:    %[[B:.*]] = coreml.transpose %[[A]] {perm = array<i64: 0, 3, 1, 4, 2>} : (tensor<4x2x2x3x5xf32>) -> tensor<4x3x2x5x2xf32>
// CHECK-NEXT:    %[[C:.*]] = coreml.reshape %[[B]] {shape = array<i64: 2, 2, 6, 10>}
// CHECK-NEXT:    func.return %[[C]]
func.func @pixel_shuffle(%x: tensor<2x8x3x5xf32>) -> tensor<2x2x6x10xf32> {
  %r = aten.pixel_shuffle %x {upscale_factor = 2 : i64} : (tensor<2x8x3x5xf32>) -> tensor<2x2x6x10xf32>
  func.return %r : tensor<2x2x6x10xf32>
}

// -----

// Last dim: 1 before, 2 after; dim 0: crop 1 before, 3 after (a block over 16
// elements is the value tiled, not a stored constant).
// CHECK-LABEL: func.func @constant_pad(
// CHECK-NEXT:    %[[L:.*]] = coreml.const dense<5.000000e-01> : tensor<2x1xf32>
// CHECK-NEXT:    %[[H:.*]] = coreml.const dense<5.000000e-01> : tensor<2x2xf32>
// CHECK-NEXT:    %[[A:.*]] = coreml.concat %[[L]], %x, %[[H]] {axis = 1 : i64, interleave = false} : (tensor<2x1xf32>, tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x6xf32>
// CHECK-NEXT:    %[[S:.*]] = coreml.slice_by_index %[[A]] {begin = array<i64: 1, 0>, end = array<i64: 2, 6>, stride = array<i64: 1, 1>} : (tensor<2x6xf32>) -> tensor<1x6xf32>
// CHECK-NEXT:    %[[V:.*]] = coreml.const dense<5.000000e-01> : tensor<1xf32>
// CHECK-NEXT:    %[[R:.*]] = coreml.reshape %[[V]] {shape = array<i64: 1, 1>}
// CHECK-NEXT:    %[[B:.*]] = coreml.tile %[[R]] {reps = array<i64: 3, 6>}
// CHECK-NEXT:    %[[C:.*]] = coreml.concat %[[S]], %[[B]] {axis = 0 : i64, interleave = false} : (tensor<1x6xf32>, tensor<3x6xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:    func.return %[[C]]
func.func @constant_pad(%x: tensor<2x3xf32>) -> tensor<4x6xf32> {
  %r = aten.constant_pad_nd %x {pad = array<i64: 1, 2, -1, 3>, value = 5.000000e-01 : f64} : (tensor<2x3xf32>) -> tensor<4x6xf32>
  func.return %r : tensor<4x6xf32>
}

// -----

// Without a negative amount (a float tensor): one MIL pad, as coremltools writes it;
// MIL lists the padded dims first to last (torch: last to first).
// CHECK-LABEL: func.func @constant_pad_mil(
// CHECK-NEXT:    %[[P:.*]] = coreml.pad %x {pad = array<i64: 2, 1, 0, 1>, mode = "constant", constant_val = -2.500000e-01 : f64} : (tensor<1x2x3x4xf32>) -> tensor<1x2x6x5xf32>
// CHECK-NEXT:    func.return %[[P]]
func.func @constant_pad_mil(%x: tensor<1x2x3x4xf32>) -> tensor<1x2x6x5xf32> {
  %r = aten.constant_pad_nd %x {pad = array<i64: 0, 1, 2, 1>, value = -2.500000e-01 : f64} : (tensor<1x2x3x4xf32>) -> tensor<1x2x6x5xf32>
  func.return %r : tensor<1x2x6x5xf32>
}

// -----

// CHECK-LABEL: func.func @std(
// CHECK-NEXT:    %[[M:.*]] = coreml.reduce_mean %x {axes = array<i64: 1>, keep_dims = true}
// CHECK-NEXT:    %[[D:.*]] = coreml.sub %x, %[[M]]
// CHECK-NEXT:    %[[Q:.*]] = coreml.mul %[[D]], %[[D]]
// CHECK-NEXT:    %[[S:.*]] = coreml.reduce_sum %[[Q]] {axes = array<i64: 1>, keep_dims = false}
// CHECK-NEXT:    %[[N:.*]] = coreml.const dense<4.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[V:.*]] = coreml.real_div %[[S]], %[[N]]
// CHECK-NEXT:    %[[R:.*]] = coreml.sqrt %[[V]]
// CHECK-NEXT:    func.return %[[R]]
func.func @std(%x: tensor<2x5xf32>) -> tensor<2xf32> {
  %r = aten.std %x {dims = array<i64: 1>} : (tensor<2x5xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// -----

// A zero pad of the spatial dims read by a conv is the conv's own padding (no MIL
// pad), added to it: [top, bottom, left, right].
// CHECK-LABEL: func.func @pad_into_conv(
// CHECK-NOT:     coreml.pad
// CHECK:         coreml.conv %x, %{{.*}}, %{{.*}} {strides = array<i64: 2, 2>, pad_type = "custom", pad = array<i64: 2, 2, 1, 2>
// CHECK-NOT:     coreml.pad
func.func @pad_into_conv(%x: tensor<1x2x5x5xf32>) -> tensor<1x3x4x3xf32> {
  %w = arith.constant dense<5.000000e-01> : tensor<3x2x3x3xf32>
  %b = arith.constant dense<1.000000e+00> : tensor<3xf32>
  %p = aten.constant_pad_nd %x {pad = array<i64: 0, 1, 1, 1>, value = 0.000000e+00 : f64} : (tensor<1x2x5x5xf32>) -> tensor<1x2x7x6xf32>
  %r = aten.conv2d %p, %w, %b {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x7x6xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>) -> tensor<1x3x4x3xf32>
  func.return %r : tensor<1x3x4x3xf32>
}

// -----

// A pad of zero amounts (Swin's, when the windows fit) is its input.
// CHECK-LABEL: func.func @pad_by_zero(
// CHECK-NEXT:    func.return %x
func.func @pad_by_zero(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32> {
  %r = aten.constant_pad_nd %x {pad = array<i64: 0, 0, 0, 0, 0, 0>, value = 0.000000e+00 : f64} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  func.return %r : tensor<1x4x4x2xf32>
}
