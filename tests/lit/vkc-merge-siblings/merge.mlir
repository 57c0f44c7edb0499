// RUN: qopt-opt %s -p 'convert-to-vkc{schedule=false},vkc-fuse-elementwise,vkc-merge-siblings' --split-input-file | filecheck %s
// RUN: qopt-opt %s -p 'qopt-vulkan{merge-siblings=false}' --split-input-file | filecheck %s --check-prefix=OFF
// vkc-merge-siblings: linears of the same kernel and specialization reading the same
// x become one dispatch over their weights concatenated along N (rows of packed words,
// scales [N, groups]); their readers load the columns of the merged output (offset /
// strided loads). Identical dynamic quantizations of one x (choose_qparams_rows,
// quantize_rows) are computed once. With merge-siblings=false qopt-vulkan keeps one
// dispatch per linear. (Translation validation and device checks:
// tests/unit/lowering/test_vkc_merge_siblings.py.)

// Two int4 linears of x [2, 8] (N = 3 and 2) read by a sub: one linear, N = 5, weights
// 3 + 2 rows of 4 words; the sub loads columns 0..2 (row stride 5) and 3..4 (offset 3)
// of the merged [2, 5] output.
// CHECK:       vkc.kernel @[[SUB:fused_elementwise_[0-9]+]] {kernel = "fused_elementwise"{{.*}}D4 = 2 : i64, D5 = 2 : i64{{.*}}L0_BUF = 0 : i64, L0_OFF = 0 : i64, {{.*}}L0_S4 = 5 : i64, L0_S5 = 1 : i64{{.*}}L1_BUF = 0 : i64, L1_OFF = 3 : i64, {{.*}}L1_S4 = 5 : i64, L1_S5 = 1 : i64
// CHECK-LABEL: func.func @two
// CHECK:         %[[W:.*]] = vkc.constant dense_resource<{{.*}}> : tensor<20xui32> : !vkc.buffer<20xui32, "q4">
// CHECK:         %[[S:.*]] = vkc.constant dense_resource<{{.*}}> : tensor<10xf32> : !vkc.buffer<5x2xf32>
// CHECK:         %[[Y:.*]] = vkc.alloc : !vkc.buffer<2x5xf32>
// CHECK:         vkc.dispatch @linear_q4gsw_0(%{{.*}}, %[[W]], %[[S]], %[[S]], %[[S]], %[[Y]]) {push = {M = 2 : i64, N = 5 : i64, K = 8 : i64, row_words = 4 : i64, ngroups = 2 : i64}
// CHECK-NOT:     @linear_q4gsw
// CHECK:         vkc.dispatch @[[SUB]](%[[Y]], %[[Y]], %[[Y]], %[[Y]], %{{.*}})
// CHECK-NOT:     vkc.dispatch
// CHECK:         func.return
// OFF-LABEL:   func.func @two
// OFF-COUNT-2:   vkc.dispatch @linear_q4gsw
// OFF:           func.return
func.func @two(%x: tensor<2x8xf32>) -> tensor<2x2xf32> {
  %w1 = arith.constant dense<[[1, -2, 3, -4, 5, -6, 7, -8], [0, 1, 2, 3, 4, 5, 6, 7], [-1, -1, -1, -1, 1, 1, 1, 1]]> : tensor<3x8xi8>
  %s1 = arith.constant dense<[[0.5, 0.25], [0.125, 1.0], [2.0, 0.5]]> : tensor<3x2xf32>
  %w2 = arith.constant dense<[[2, 2, 2, 2, -3, -3, -3, -3], [7, 6, 5, 4, 3, 2, 1, 0]]> : tensor<2x8xi8>
  %s2 = arith.constant dense<[[0.25, 0.75], [1.5, 0.5]]> : tensor<2x2xf32>
  %a = qfused.linear %x, %w1, %s1 {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, kernel = "linear_q4gsw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x2xf32> -> tensor<2x3xf32>
  %b = qfused.linear %x, %w2, %s2 {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, kernel = "linear_q4gsw"} : tensor<2x8xf32>, tensor<2x8xi8>, tensor<2x2xf32> -> tensor<2x2xf32>
  %a2 = aten.slice %a {dim = 1 : i64, start = 0 : i64, end = 2 : i64, step = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  %d = aten.sub %a2, %b : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  func.return %d : tensor<2x2xf32>
}

// -----

// Dynamic-activation linears (8da4w) of one x: the per-token quantization of x is
// computed once and the two linears merge (their shared bindings are the same).
// CHECK-LABEL: func.func @dynamic
// CHECK-COUNT-1: vkc.dispatch @choose_qparams_rows
// CHECK-NOT:     @choose_qparams_rows
// CHECK-COUNT-1: vkc.dispatch @quantize_rows
// CHECK-NOT:     @quantize_rows
// CHECK:         vkc.dispatch @linear_dq8ca_q4gsw_0({{.*}}) {push = {M = 2 : i64, N = 6 : i64
// CHECK-NOT:     @linear_dq8ca_q4gsw
// CHECK:         func.return
// OFF-LABEL:   func.func @dynamic
// OFF-COUNT-2:   vkc.dispatch @quantize_rows_dynamic
// OFF:           func.return
func.func @dynamic(%x: tensor<2x8xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<[[1, -2, 3, -4, 5, -6, 7, -8], [0, 1, 2, 3, 4, 5, 6, 7], [-1, -1, -1, -1, 1, 1, 1, 1]]> : tensor<3x8xi8>
  %s = arith.constant dense<[[0.5, 0.25], [0.125, 1.0], [2.0, 0.5]]> : tensor<3x2xf32>
  %a = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, act = #qfused.dynamic<per_token, asymmetric, range = [-128, 127], eps = 1.1920928955078125e-07, scale_type = f32>, kernel = "linear_dq8ca_q4gsw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x2xf32> -> tensor<2x3xf32>
  %b = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, act = #qfused.dynamic<per_token, asymmetric, range = [-128, 127], eps = 1.1920928955078125e-07, scale_type = f32>, kernel = "linear_dq8ca_q4gsw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x2xf32> -> tensor<2x3xf32>
  %d = aten.mul %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %d : tensor<2x3xf32>
}

// -----

// Must not fire: a linear whose output is a program output (no strided reader to
// rewrite), and a linear of another x.
// CHECK-LABEL: func.func @apart
// CHECK-COUNT-3: vkc.dispatch @linear_q4gsw
// CHECK-NOT:     vkc.dispatch @linear_q4gsw
// CHECK:         func.return
func.func @apart(%x: tensor<2x8xf32>, %y: tensor<2x8xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %w = arith.constant dense<[[1, -2, 3, -4, 5, -6, 7, -8], [0, 1, 2, 3, 4, 5, 6, 7], [-1, -1, -1, -1, 1, 1, 1, 1]]> : tensor<3x8xi8>
  %s = arith.constant dense<[[0.5, 0.25], [0.125, 1.0], [2.0, 0.5]]> : tensor<3x2xf32>
  %a = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, kernel = "linear_q4gsw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x2xf32> -> tensor<2x3xf32>
  %b = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, kernel = "linear_q4gsw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x2xf32> -> tensor<2x3xf32>
  %c = qfused.linear %y, %w, %s {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, kernel = "linear_q4gsw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x2xf32> -> tensor<2x3xf32>
  %d = aten.add %b, %c : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %a, %d : tensor<2x3xf32>, tensor<2x3xf32>
}
