// RUN: qopt-opt %s -p 'convert-to-vkc{schedule=false},vkc-fuse-elementwise,vkc-fuse-norms' --split-input-file | filecheck %s
// RUN: qopt-opt %s -p 'qopt-vulkan{fuse-norms=false}' --split-input-file | filecheck %s --check-prefix=OFF
// vkc-fuse-norms: an RMSNorm left by vkc-fuse-elementwise as reduce_rows (mean of
// squares) + one elementwise tail `(x * rsqrt(m + eps)) * w` becomes one rms_norm_rows
// dispatch (eps a push constant, w read at an offset; QUANT = 0: the quantized-row
// bindings get one-word placeholders); a residual add writing x just before is folded
// in (HAS_ADD), x still written (HAS_H) when something else reads it.
// With fuse-norms=false qopt-vulkan keeps reduce_rows and the tail. (Translation
// validation and device checks: tests/unit/lowering/test_vkc_dispatch_fusions.py.)

// CHECK:       vkc.kernel @[[N:rms_norm_rows_[0-9]+]] {kernel = "rms_norm_rows"{{.*}}spec = {HAS_ADD = 0 : i64, HAS_H = 0 : i64, QUANT = 0 : i64, MAPPING = 0 : i64, ZP_BEFORE_ROUND = 0 : i64}
// CHECK-LABEL: func.func @rms_norm
// CHECK:         %[[X:[0-9]+]] = vkc.input %x
// CHECK:         %[[W:[0-9]+]] = vkc.constant
// CHECK:         %[[H:[0-9]+]] = vkc.alloc : !vkc.buffer<1xf32>
// CHECK:         vkc.dispatch @[[N]](%[[X]], %[[X]], %[[W]], %[[H]], %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}) {push = {rows = 2 : i64, cols = 8 : i64, alpha = 1.000000e+00 : f32, eps = 1.000000e-05 : f32, w_off = 0 : i64, qmin = 0 : i32, qmax = 0 : i32, q_eps = 0.000000e+00 : f32, q_qmin = 0 : i32, q_qmax = 0 : i32}
// CHECK-NOT:     vkc.dispatch
// CHECK:         func.return
// OFF-LABEL:   func.func @rms_norm
// OFF:           vkc.dispatch @reduce_rows
// OFF:           vkc.dispatch @fused_elementwise
// OFF-NOT:       vkc.dispatch
// OFF:           func.return
func.func @rms_norm(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %two = arith.constant dense<2.0> : tensor<f32>
  %eps = arith.constant dense<1.0e-05> : tensor<f32>
  %w = arith.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %0 = aten.pow %x, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %1 = aten.mean %0 {dims = array<i64: -1>, keepdim = true} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %2 = aten.add %1, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %3 = aten.rsqrt %2 : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %4 = aten.mul %x, %3 : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %5 = aten.mul %4, %w : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  func.return %5 : tensor<2x8xf32>
}

// -----

// A residual add h = x + r before the norm, h also returned: HAS_ADD, HAS_H, the add's
// dispatch gone; operands swapped (w * norm, eps + m) still match.
// CHECK:       vkc.kernel @[[N:rms_norm_rows_[0-9]+]] {kernel = "rms_norm_rows"{{.*}}spec = {HAS_ADD = 1 : i64, HAS_H = 1 : i64, QUANT = 0 : i64
// CHECK-LABEL: func.func @residual
// CHECK:         %[[X:[0-9]+]] = vkc.input %x
// CHECK:         %[[R:[0-9]+]] = vkc.input %r
// CHECK:         %[[H:[0-9]+]] = vkc.alloc : !vkc.buffer<2x8xf32>
// CHECK:         vkc.dispatch @[[N]](%[[X]], %[[R]], %{{[0-9]+}}, %[[H]], %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}})
// CHECK-NOT:     vkc.dispatch
// CHECK:         vkc.output %[[H]]
// OFF-LABEL:   func.func @residual
// OFF:           vkc.dispatch @binary
// OFF:           vkc.dispatch @reduce_rows
// OFF:           vkc.dispatch @fused_elementwise
// OFF:           func.return
func.func @residual(%x: tensor<2x8xf32>, %r: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %two = arith.constant dense<2.0> : tensor<f32>
  %eps = arith.constant dense<1.0e-05> : tensor<f32>
  %w = arith.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %h = aten.add %x, %r : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %0 = aten.pow %h, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %1 = aten.mean %0 {dims = array<i64: -1>, keepdim = true} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %2 = aten.add %eps, %1 : (tensor<f32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %3 = aten.rsqrt %2 : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %4 = aten.mul %h, %3 : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %5 = aten.mul %w, %4 : (tensor<8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %5, %h : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// Must not fire: the mean is read by something else too (returned), and a norm whose
// tail is not (x * rsqrt(m + eps)) * w (here x / sqrt(m + eps) * w).
// CHECK-LABEL: func.func @apart
// CHECK-NOT:     rms_norm_rows
// CHECK:         vkc.dispatch @reduce_rows
// CHECK-NOT:     rms_norm_rows
// CHECK:         func.return
func.func @apart(%x: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x1xf32>) {
  %two = arith.constant dense<2.0> : tensor<f32>
  %eps = arith.constant dense<1.0e-05> : tensor<f32>
  %w = arith.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %0 = aten.pow %x, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %1 = aten.mean %0 {dims = array<i64: -1>, keepdim = true} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %2 = aten.add %1, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %3 = aten.sqrt %2 : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %4 = aten.div %x, %3 : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %5 = aten.mul %4, %w : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  func.return %5, %1 : tensor<2x8xf32>, tensor<2x1xf32>
}

// -----

// A dynamic-activation linear (8da4w): choose_qparams_rows + quantize_rows of x in one
// quantize_rows_dynamic (scale and zp still written: the linear reads them).
// CHECK:       vkc.kernel @[[Q:quantize_rows_dynamic_[0-9]+]] {kernel = "quantize_rows_dynamic"{{.*}}spec = {MAPPING = 0 : i64, ZP_BEFORE_ROUND = 0 : i64}
// CHECK-LABEL: func.func @dynamic
// CHECK:         %[[X:[0-9]+]] = vkc.input %x
// CHECK-NOT:     @choose_qparams_rows
// CHECK:         vkc.dispatch @[[Q]](%[[X]], %[[S:[0-9]+]], %[[Z:[0-9]+]], %[[XQ:[0-9]+]]) {push = {rows = 2 : i64, cols = 8 : i64, qmin = -128 : i32, qmax = 127 : i32, eps = 1.1920929e-07 : f32, q_qmin = -128 : i32, q_qmax = 127 : i32}
// CHECK-NOT:     @quantize_rows_0
// CHECK:         vkc.dispatch @linear_dq8ca_q4gsw_0(%[[XQ]], %[[S]], %[[Z]],
// OFF-LABEL:   func.func @dynamic
// OFF:           vkc.dispatch @choose_qparams_rows
// OFF:           vkc.dispatch @quantize_rows
func.func @dynamic(%x: tensor<2x8xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<[[1, -2, 3, -4, 5, -6, 7, -8], [0, 1, 2, 3, 4, 5, 6, 7], [-1, -1, -1, -1, 1, 1, 1, 1]]> : tensor<3x8xi8>
  %s = arith.constant dense<[[0.5, 0.25], [0.125, 1.0], [2.0, 0.5]]> : tensor<3x2xf32>
  %a = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, act = #qfused.dynamic<per_token, asymmetric, range = [-128, 127], eps = 1.1920928955078125e-07, scale_type = f32>, kernel = "linear_dq8ca_q4gsw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x2xf32> -> tensor<2x3xf32>
  func.return %a : tensor<2x3xf32>
}
