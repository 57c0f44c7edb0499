// RUN: qopt-opt %s -p convert-to-vkc --split-input-file | filecheck %s
// Attention over a KV cache (more keys than queries) under a mask over the keys reads
// the keys in use: one mask_bound per mask value computes on the device 1 + the last
// key some mask row leaves open, and every sdpa reading that mask loops to it (BOUNDED).

// Two layers attending over a 16-row cache under one boolean mask: the mask turned
// into an additive one per sdpa as before, one mask_bound (rows 1, S 16), and both
// sdpa read its word as their sixth binding.
// CHECK:       vkc.kernel @mask_bound_0 {kernel = "mask_bound", {{.*}}bindings = [#vkc.binding<"mask", f32>, #vkc.binding<"bound", ui32, write>], push = [#vkc.push<"rows", ui32>, #vkc.push<"S", ui32>]}
// CHECK:       vkc.kernel @[[S:sdpa_[0-9]+]] {kernel = "sdpa", {{.*}}REG = 8 : i64, BOUNDED = 1 : i64}, bindings = [{{.*}}#vkc.binding<"out", f32, write>, #vkc.binding<"bound", ui32>]
// CHECK-LABEL: func.func @forward
// CHECK:         vkc.dispatch @where_0(%{{.*}}, %{{.*}}, %{{.*}}, %[[F:.*]]) {push = {n = 16 : i64
// CHECK:         vkc.dispatch @mask_bound_0(%[[F]], %[[B:.*]]) {push = {rows = 1 : i64, S = 16 : i64}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<1x16xf32>, !vkc.buffer<1xui32>
// CHECK:         vkc.dispatch @[[S]](%{{.*}}, %{{.*}}, %{{.*}}, %[[F]], %{{.*}}, %[[B]]) {push = {BH = 4 : i64, H = 4 : i64, L = 1 : i64, S = 16 : i64
// CHECK-NOT:     mask_bound
// CHECK:         vkc.dispatch @[[S]](%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[B]]) {push = {BH = 4 : i64, H = 4 : i64, L = 1 : i64, S = 16 : i64
func.func @forward(%q: tensor<1x4x1x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>, %m: tensor<1x16xi1>) -> (tensor<1x4x1x8xf32>, tensor<1x4x1x8xf32>) {
  %a = aten.scaled_dot_product_attention %q, %k, %v, %m {enable_gqa = true} : (tensor<1x4x1x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x16xi1>) -> tensor<1x4x1x8xf32>
  %b = aten.scaled_dot_product_attention %a, %k, %v, %m {enable_gqa = true} : (tensor<1x4x1x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x16xi1>) -> tensor<1x4x1x8xf32>
  func.return %a, %b : tensor<1x4x1x8xf32>, tensor<1x4x1x8xf32>
}

// -----

// What cannot be bounded reads every key, as before: a mask broadcast over the keys,
// no mask, and as many keys as queries (no cache).
// CHECK-NOT:   mask_bound
// CHECK-NOT:   BOUNDED = 1
// CHECK-LABEL: func.func @forward
// CHECK-NOT:     mask_bound
// CHECK:         vkc.dispatch @sdpa_{{[0-9]+}}({{.*}}) {push = {BH = 2 : i64, {{.*}} ml = 1 : i64, ms = 0 : i64}
// CHECK:         vkc.dispatch @sdpa_{{[0-9]+}}({{.*}}) {push = {BH = 2 : i64, {{.*}} S = 5 : i64
// CHECK:         vkc.dispatch @sdpa_{{[0-9]+}}({{.*}}) {push = {BH = 2 : i64, {{.*}} S = 3 : i64
// CHECK-NOT:     mask_bound
func.func @forward(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>, %m: tensor<3x1xf32>, %k3: tensor<1x2x3x8xf32>, %m3: tensor<3x3xf32>) -> (tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) {
  %a = aten.scaled_dot_product_attention %q, %k, %v, %m : (tensor<1x2x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>, tensor<3x1xf32>) -> tensor<1x2x3x8xf32>
  %b = aten.scaled_dot_product_attention %q, %k, %v : (tensor<1x2x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>) -> tensor<1x2x3x8xf32>
  %c = aten.scaled_dot_product_attention %q, %k3, %k3, %m3 : (tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>, tensor<3x3xf32>) -> tensor<1x2x3x8xf32>
  func.return %a, %b, %c : tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>
}
