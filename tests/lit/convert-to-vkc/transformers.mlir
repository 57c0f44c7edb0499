// RUN: qopt-opt %s -p convert-to-vkc --split-input-file | filecheck %s
// The ops exported transformers need beyond the built-in models: addmm (GPT-2's
// Conv1D), split (fused QKV), advanced indexing with constant indices, bitwise
// ops on masks, sdpa with a boolean mask, and a global average pool.

// addmm with beta = alpha = 1: the matmul kernel with its bias (TRANS_B = 0);
// split: one strided copy per piece, the second starting 2 columns in.
// CHECK:       vkc.kernel @matmul_0 {kernel = "matmul", {{.*}}spec = {TRANS_B = 0 : i64, HAS_BIAS = 1 : i64
// CHECK-LABEL: func.func @forward(%x: tensor<2x4xf32>, %w: tensor<4x6xf32>, %b: tensor<6xf32>)
// CHECK:         vkc.dispatch @matmul_0(%[[X:.*]], %[[W:.*]], %[[B:.*]], %[[Y:.*]]) {push = {M = 2 : i64, N = 6 : i64, K = 4 : i64, batch = 1 : i64, a_bs = 0 : i64, b_bs = 0 : i64}
// CHECK:         vkc.dispatch @copy_strided_0(%[[Y]], %{{.*}}) {push = {n = 4 : i64, in_off = 0 : i64, {{.*}} d4 = 2 : i64, d5 = 2 : i64, {{.*}} si4 = 6 : i64, si5 = 1 : i64
// CHECK:         vkc.dispatch @copy_strided_0(%[[Y]], %{{.*}}) {push = {n = 8 : i64, in_off = 2 : i64, {{.*}} d4 = 2 : i64, d5 = 4 : i64, {{.*}} si4 = 6 : i64, si5 = 1 : i64
func.func @forward(%x: tensor<2x4xf32>, %w: tensor<4x6xf32>, %b: tensor<6xf32>) -> (tensor<2x2xf32>, tensor<2x4xf32>) {
  %y = aten.addmm %b, %x, %w : (tensor<6xf32>, tensor<2x4xf32>, tensor<4x6xf32>) -> tensor<2x6xf32>
  %p:2 = aten.split %y {sizes = array<i64: 2, 4>, dim = 1 : i64} : (tensor<2x6xf32>) -> (tensor<2x2xf32>, tensor<2x4xf32>)
  func.return %p#0, %p#1 : tensor<2x2xf32>, tensor<2x4xf32>
}

// -----

// index with constant index tensors: the flat source offsets of x[i, :, j]
// (3 7 11 | 14 18 22 | 15 19 23 | 0 4 8; -1 counts from the end) become a
// constant and gather_rows copies one word per element; bitwise_and of two
// masks is the integer binary kernel (OP 17). gather_rows takes a status word
// (its own buffer, naming the op) like every dispatch of a kernel that indexes
// with values read from a buffer.
// CHECK:       vkc.kernel @gather_rows_0 {{.*}}bindings = [#vkc.binding<"table", f32>, #vkc.binding<"idx", i32>, #vkc.binding<"y", f32, write>, #vkc.binding<"status", ui32, write>]
// CHECK:       vkc.kernel @binary_0 {kernel = "binary", {{.*}}spec = {OP = 17 : i64, DTYPE = 1 : i64
// CHECK-LABEL: func.func @forward(%x: tensor<2x3x4xf32>, %m: tensor<1x4xi1>, %n: tensor<1x4xi1>)
// CHECK:         %[[OFF:.*]] = vkc.constant dense_resource<[[R:.*]]> : tensor<12xi32> : !vkc.buffer<12xi32>
// CHECK:         %[[ST:.*]] = vkc.alloc {status, what = "'aten.index'"} : !vkc.buffer<1xui32>
// CHECK-NEXT:    vkc.dispatch @gather_rows_0(%{{.*}}, %[[OFF]], %{{.*}}, %[[ST]]) {push = {n = 12 : i64, D = 1 : i64, V = 24 : i64}
// CHECK:         vkc.dispatch @binary_0
// CHECK:       [[R]]: "0x0800000003000000070000000B0000000E00000012000000160000000F0000001300000017000000000000000400000008000000"
func.func @forward(%x: tensor<2x3x4xf32>, %m: tensor<1x4xi1>, %n: tensor<1x4xi1>) -> (tensor<2x2x3xf32>, tensor<1x4xi1>) {
  %i = arith.constant dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>
  %j = arith.constant dense<[[3, 2], [-1, 0]]> : tensor<2x2xi64>
  %y = aten.index %x, %i, %j {indexed_dims = array<i64: 0, 2>} : (tensor<2x3x4xf32>, tensor<2x2xi64>, tensor<2x2xi64>) -> tensor<2x2x3xf32>
  %a = aten.bitwise_and %m, %n : (tensor<1x4xi1>, tensor<1x4xi1>) -> tensor<1x4xi1>
  func.return %y, %a : tensor<2x2x3xf32>, tensor<1x4xi1>
}

// -----

// sdpa with a boolean mask: where(mask, 0, -inf) (0x0 and 0xFF800000) makes the
// additive float mask the kernel takes; a 1x1 adaptive average pool is torch's
// mean over H*W, so it runs as reduce_rows OP 1 (torch's summation order).
// CHECK:       vkc.kernel @where_0
// CHECK:       vkc.kernel @sdpa_0
// CHECK:       vkc.kernel @reduce_rows_0 {kernel = "reduce_rows", {{.*}}spec = {OP = 1 : i64, PRE = 0 : i64}
// CHECK-LABEL: func.func @forward
// CHECK:         %[[M:.*]] = vkc.input %m : tensor<3x5xi1> -> !vkc.buffer<3x5xi32>
// CHECK:         %[[ZERO:.*]] = vkc.constant dense_resource<[[Z:.*]]> : tensor<1xf32>
// CHECK:         %[[NEG:.*]] = vkc.constant dense_resource<[[N:.*]]> : tensor<1xf32>
// CHECK:         vkc.dispatch @where_0(%[[M]], %[[ZERO]], %[[NEG]], %[[F:.*]]) {push = {n = 15 : i64
// CHECK:         vkc.dispatch @sdpa_0(%{{.*}}, %{{.*}}, %{{.*}}, %[[F]], %{{.*}}) {push = {BH = 2 : i64, {{.*}} ml = 5 : i64, ms = 1 : i64}
// CHECK:         vkc.dispatch @reduce_rows_0(%{{.*}}, %{{.*}}) {push = {rows = 2 : i64, cols = 16 : i64}
// CHECK:       [[Z]]: "0x0800000000000000",[[N]]: "0x08000000000080FF"
func.func @forward(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>, %m: tensor<3x5xi1>, %x: tensor<1x2x4x4xf32>) -> (tensor<1x2x3x8xf32>, tensor<1x2x1x1xf32>) {
  %r = aten.scaled_dot_product_attention %q, %k, %v, %m : (tensor<1x2x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>, tensor<3x5xi1>) -> tensor<1x2x3x8xf32>
  %p = aten.adaptive_avg_pool2d %x {output_size = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x1x1xf32>
  func.return %r, %p : tensor<1x2x3x8xf32>, tensor<1x2x1x1xf32>
}

// -----

// sdpa with grouped key/value heads (enable_gqa, 4 query heads, 2 kv heads): no
// copy, the kernel reads kv head h // 2 for query head h (G = 2).
// CHECK-LABEL: func.func @forward(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>)
// CHECK:         %[[K:.*]] = vkc.input %k
// CHECK:         %[[V:.*]] = vkc.input %v
// CHECK-NOT:     copy_strided
// CHECK:         vkc.dispatch @sdpa_0(%{{.*}}, %[[K]], %[[V]], %{{.*}}, %{{.*}}) {push = {BH = 4 : i64, H = 4 : i64, L = 3 : i64, S = 5 : i64, E = 8 : i64, EV = 8 : i64, G = 2 : i64
func.func @forward(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>) -> tensor<1x4x3x8xf32> {
  %r = aten.scaled_dot_product_attention %q, %k, %v {enable_gqa = true} : (tensor<1x4x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>) -> tensor<1x4x3x8xf32>
  func.return %r : tensor<1x4x3x8xf32>
}

// -----

// ExecuTorch's GQA: repeat_interleave of the key/value heads read only by sdpa is no
// copy either (G = 2). A batch broadcast of k/v (B' = 1) is a strided copy; so is a
// grouped k when v is not grouped the same way (one G for both).
// CHECK-LABEL: func.func @forward(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>)
// CHECK-NOT:     copy_strided
// CHECK:         vkc.dispatch @sdpa_0({{.*}}) {push = {BH = 4 : i64, H = 4 : i64, L = 3 : i64, S = 5 : i64, E = 8 : i64, EV = 8 : i64, G = 2 : i64
// CHECK-LABEL: func.func @broadcast(%q: tensor<2x4x3x8xf32>, %k: tensor<1x4x5x8xf32>, %v: tensor<1x4x5x8xf32>)
// CHECK:         vkc.dispatch @copy_strided_0
// CHECK:         vkc.dispatch @copy_strided_0
// CHECK:         vkc.dispatch @sdpa_0({{.*}}) {push = {BH = 8 : i64, H = 4 : i64, L = 3 : i64, S = 5 : i64, E = 8 : i64, EV = 8 : i64, G = 1 : i64
// CHECK-LABEL: func.func @mixed(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x4x5x8xf32>)
// CHECK:         vkc.dispatch @copy_strided_0
// CHECK-NOT:     copy_strided
// CHECK:         vkc.dispatch @sdpa_0({{.*}}) {push = {BH = 4 : i64, H = 4 : i64, L = 3 : i64, S = 5 : i64, E = 8 : i64, EV = 8 : i64, G = 1 : i64
func.func @forward(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>) -> tensor<1x4x3x8xf32> {
  %kr = aten.repeat_interleave %k {repeats = 2 : i64, dim = 1 : i64} : (tensor<1x2x5x8xf32>) -> tensor<1x4x5x8xf32>
  %vr = aten.repeat_interleave %v {repeats = 2 : i64, dim = 1 : i64} : (tensor<1x2x5x8xf32>) -> tensor<1x4x5x8xf32>
  %r = aten.scaled_dot_product_attention %q, %kr, %vr : (tensor<1x4x3x8xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>) -> tensor<1x4x3x8xf32>
  func.return %r : tensor<1x4x3x8xf32>
}
func.func @broadcast(%q: tensor<2x4x3x8xf32>, %k: tensor<1x4x5x8xf32>, %v: tensor<1x4x5x8xf32>) -> tensor<2x4x3x8xf32> {
  %r = aten.scaled_dot_product_attention %q, %k, %v : (tensor<2x4x3x8xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>) -> tensor<2x4x3x8xf32>
  func.return %r : tensor<2x4x3x8xf32>
}
func.func @mixed(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x4x5x8xf32>) -> tensor<1x4x3x8xf32> {
  %kr = aten.repeat_interleave %k {repeats = 2 : i64, dim = 1 : i64} : (tensor<1x2x5x8xf32>) -> tensor<1x4x5x8xf32>
  %r = aten.scaled_dot_product_attention %q, %kr, %v : (tensor<1x4x3x8xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x8xf32>) -> tensor<1x4x3x8xf32>
  func.return %r : tensor<1x4x3x8xf32>
}
