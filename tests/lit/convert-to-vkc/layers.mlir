// RUN: qopt-opt %s -p convert-to-vkc --split-input-file | filecheck %s
// Layers and shape ops composed from the generic kernels.

// Inference batch norm with constant statistics: alpha = w / sqrt(var + eps) =
// [1, 2] and beta = b - mean * alpha = [-0.5, 5] are computed at compile time
// (0x3F800000 0x40000000 | 0xBF000000 0x40A00000); x * alpha, then + beta, per channel.
// CHECK:       vkc.kernel @binary_0 {kernel = "binary", {{.*}}spec = {OP = 2 : i64, DTYPE = 0 : i64
// CHECK:       vkc.kernel @binary_1 {kernel = "binary", {{.*}}spec = {OP = 0 : i64, DTYPE = 0 : i64
// CHECK-LABEL: func.func @forward(%x: tensor<1x2x2x2xf32>)
// CHECK:         %[[A:.*]] = vkc.constant dense_resource<[[RA:.*]]> : tensor<2xf32> : !vkc.buffer<2xf32>
// CHECK-NEXT:    %[[AV:.*]] = vkc.view %[[A]] : !vkc.buffer<2xf32> -> !vkc.buffer<1x2x1x1xf32>
// CHECK:         %[[B:.*]] = vkc.constant dense_resource<[[RB:.*]]> : tensor<2xf32> : !vkc.buffer<2xf32>
// CHECK:         vkc.dispatch @binary_0(%{{.*}}, %[[AV]], %[[Y:.*]]) {push = {n = 8 : i64, {{.*}} sb2 = 2 : i64, sb3 = 1 : i64, sb4 = 0 : i64, sb5 = 0 : i64
// CHECK:         vkc.barrier
// CHECK-NEXT:    vkc.dispatch @binary_1(%[[Y]], %{{.*}}, %{{.*}})
// CHECK:       [[RA]]: "0x080000000000803F00000040",[[RB]]: "0x08000000000000BF0000A040"
func.func @forward(%x: tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %m = arith.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %v = arith.constant dense<[4.0, 0.25]> : tensor<2xf32>
  %w = arith.constant dense<[2.0, 1.0]> : tensor<2xf32>
  %b = arith.constant dense<[0.0, 3.0]> : tensor<2xf32>
  %y = aten.batch_norm %x, %m, %v weight(%w : tensor<2xf32>) bias(%b : tensor<2xf32>) {eps = 0.0 : f64} : tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x2x2xf32>
  func.return %y : tensor<1x2x2x2xf32>
}

// -----

// constant_pad_nd: fill with the value (0.5 = 1056964608), barrier, then copy the
// input one column in; pixel_shuffle: one strided copy over (N, C, H, r, W, r).
// CHECK-LABEL: func.func @forward(%x: tensor<2x3xf32>, %y: tensor<1x8x1x2xf32>)
// CHECK:         vkc.dispatch @fill_0(%[[P:.*]]) {push = {n = 10 : i64, start = 1056964608 : i64, step = 0 : i64}
// CHECK-NEXT:    vkc.barrier
// CHECK-NEXT:    vkc.dispatch @copy_strided_0(%{{.*}}, %[[P]]) {push = {n = 6 : i64, in_off = 0 : i64, out_off = 1 : i64, {{.*}} d4 = 2 : i64, d5 = 3 : i64, {{.*}} si4 = 3 : i64, si5 = 1 : i64, {{.*}} so4 = 5 : i64, so5 = 1 : i64}
// CHECK:         vkc.dispatch @copy_strided_0(%{{.*}}, %[[S:.*]]) {push = {n = 16 : i64, in_off = 0 : i64, out_off = 0 : i64, d0 = 1 : i64, d1 = 2 : i64, d2 = 1 : i64, d3 = 2 : i64, d4 = 2 : i64, d5 = 2 : i64, si0 = 16 : i64, si1 = 8 : i64, si2 = 2 : i64, si3 = 4 : i64, si4 = 1 : i64, si5 = 2 : i64
// CHECK:         vkc.view %[[S]] : !vkc.buffer<1x2x1x2x2x2xf32> -> !vkc.buffer<1x2x2x4xf32>
func.func @forward(%x: tensor<2x3xf32>, %y: tensor<1x8x1x2xf32>) -> (tensor<2x5xf32>, tensor<1x2x2x4xf32>) {
  %p = aten.constant_pad_nd %x {pad = array<i64: 1, 1>, value = 5.000000e-01 : f64} : (tensor<2x3xf32>) -> tensor<2x5xf32>
  %s = aten.pixel_shuffle %y {upscale_factor = 2 : i64} : (tensor<1x8x1x2xf32>) -> tensor<1x2x2x4xf32>
  func.return %p, %s : tensor<2x5xf32>, tensor<1x2x2x4xf32>
}

// -----

// Group norm: [N * G, C / G * prod(*)] rows through layer_norm_rows (unit weight,
// zero bias), then the per-channel weight and bias on the binary kernel.
// CHECK-LABEL: func.func @group_norm(
// CHECK:         vkc.dispatch @layer_norm_rows_0(%{{.*}}) {push = {rows = 6 : i64, cols = 10 : i64, eps = 1.000000e-05 : f32}
// CHECK:         vkc.view %{{.*}} : !vkc.buffer<6xf32> -> !vkc.buffer<1x6x1xf32>
// CHECK:         vkc.dispatch @binary_0(
// CHECK:         vkc.view %{{.*}} : !vkc.buffer<6xf32> -> !vkc.buffer<1x6x1xf32>
// CHECK:         vkc.dispatch @binary_1(
func.func @group_norm(%x: tensor<2x6x5xf32>, %w: tensor<6xf32>, %b: tensor<6xf32>) -> tensor<2x6x5xf32> {
  %r = aten.group_norm %x weight(%w : tensor<6xf32>) bias(%b : tensor<6xf32>) {num_groups = 3 : i64, eps = 1.000000e-05 : f64} : tensor<2x6x5xf32> -> tensor<2x6x5xf32>
  func.return %r : tensor<2x6x5xf32>
}

// -----

// interpolate: gather_rows of compile-time flat source offsets; bilinear blends the
// four gathered corners on the binary kernel (mul, mul, add three times).
// CHECK-LABEL: func.func @upsample(
// CHECK:         vkc.dispatch @gather_rows_0(%{{.*}}) {push = {n = 96 : i64, D = 1 : i64, V = 24 : i64}
// CHECK-COUNT-2: vkc.dispatch @gather_rows_0(%{{.*}}) {push = {n = 70 : i64, D = 1 : i64, V = 24 : i64}
// CHECK-COUNT-3: vkc.dispatch @binary_
// CHECK-COUNT-2: vkc.dispatch @gather_rows_0(%{{.*}}) {push = {n = 70 : i64, D = 1 : i64, V = 24 : i64}
// CHECK-COUNT-6: vkc.dispatch @binary_
// CHECK-NOT:     vkc.dispatch
func.func @upsample(%x: tensor<1x2x3x4xf32>) -> (tensor<1x2x6x8xf32>, tensor<1x2x5x7xf32>) {
  %n = aten.upsample_nearest2d %x {scales_h = 2.000000e+00 : f64, scales_w = 2.000000e+00 : f64} : (tensor<1x2x3x4xf32>) -> tensor<1x2x6x8xf32>
  %b = aten.upsample_bilinear2d %x : (tensor<1x2x3x4xf32>) -> tensor<1x2x5x7xf32>
  func.return %n, %b : tensor<1x2x6x8xf32>, tensor<1x2x5x7xf32>
}
