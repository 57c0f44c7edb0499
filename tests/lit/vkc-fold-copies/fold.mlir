// RUN: qopt-opt %s -p 'convert-to-vkc{schedule=false},vkc-fuse-elementwise,vkc-fold-copies' --split-input-file | filecheck %s
// RUN: qopt-opt %s -p 'qopt-vulkan{fold-copies=false}' --split-input-file | filecheck %s --check-prefix=OFF
// vkc-fold-copies: a copy_strided that moves no word (a transpose of size-1 dims, as
// attention's at one token) becomes a view of its source; a copy read only as the
// values of a scatter_dim (a KV-cache update) is read by the scatter through its map
// (VMAP); a copy read only as the v of an sdpa, or copying an sdpa's whole output word
// for word, becomes the sdpa's stride map (VMAP / OMAP). With fold-copies=false
// qopt-vulkan keeps the copies. (Translation validation and device checks:
// tests/unit/lowering/test_vkc_dispatch_fusions.py.)

// A transpose of [1, 4, 1, 8] to [1, 1, 4, 8] moves nothing: the matmul reads a view
// of the input.
// CHECK-LABEL: func.func @identity
// CHECK:         %[[X:[0-9]+]] = vkc.input %x
// CHECK-NOT:     copy_strided
// CHECK:         %[[V:[0-9]+]] = vkc.view %[[X]] : !vkc.buffer<1x4x1x8xf32> -> !vkc.buffer<1x1x4x8xf32>
// CHECK-NOT:     copy_strided
// CHECK:         vkc.dispatch @matmul
// CHECK:         func.return
// OFF-LABEL:   func.func @identity
// OFF:           vkc.dispatch @copy_strided
// OFF:           vkc.dispatch @matmul
func.func @identity(%x: tensor<1x4x1x8xf32>, %w: tensor<8x3xf32>) -> tensor<1x1x4x3xf32> {
  %t = aten.transpose %x {dim0 = 1 : i64, dim1 = 2 : i64} : (tensor<1x4x1x8xf32>) -> tensor<1x1x4x8xf32>
  %y = aten.matmul %t, %w : (tensor<1x1x4x8xf32>, tensor<8x3xf32>) -> tensor<1x1x4x3xf32>
  func.return %y : tensor<1x1x4x3xf32>
}

// -----

// A cache update from a transposed value ([1, 2, 2, 4] -> [1, 2, 2, 4] heads and
// positions swapped): the scatter reads the input itself, vals[p*4 + s*8 + q].
// CHECK:       vkc.kernel @[[SC:scatter_dim_[0-9]+]] {kernel = "scatter_dim"{{.*}}spec = {NEG = 1 : i64, WG = 64 : i64, VMAP = 1 : i64, VOFF = 0 : i64, VSP = 4 : i64, VSS = 8 : i64, VSQ = 1 : i64}
// CHECK-LABEL: func.func @scatter
// CHECK:         %[[K:[0-9]+]] = vkc.input %k
// CHECK-NOT:     copy_strided
// CHECK:         vkc.dispatch @[[SC]](%[[K]],
// CHECK-NOT:     copy_strided
// CHECK:         func.return
// OFF-LABEL:   func.func @scatter
// OFF:           vkc.dispatch @copy_strided
// OFF:           vkc.dispatch @scatter_dim
ml_program.global private mutable @k_cache(dense<0.0> : tensor<1x2x8x4xf32>) : tensor<1x2x8x4xf32>
func.func @scatter(%k: tensor<1x2x2x4xf32>, %pos: tensor<2xi64>) -> tensor<1x2x8x4xf32> {
  %c = ml_program.global_load @k_cache : tensor<1x2x8x4xf32>
  %t = aten.transpose %k {dim0 = 1 : i64, dim1 = 2 : i64} : (tensor<1x2x2x4xf32>) -> tensor<1x2x2x4xf32>
  %u = aten.index_put %c, %pos, %t {indexed_dims = array<i64: 2>} : (tensor<1x2x8x4xf32>, tensor<2xi64>, tensor<1x2x2x4xf32>) -> tensor<1x2x8x4xf32>
  %r = aten.mul %u, %u : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  ml_program.global_store @k_cache = %u : tensor<1x2x8x4xf32>
  func.return %r : tensor<1x2x8x4xf32>
}

// -----

// Must not fire: a transpose that moves words, read by a matmul (no strided form).
// CHECK-LABEL: func.func @moves
// CHECK:         vkc.dispatch @copy_strided
// CHECK:         vkc.dispatch @matmul
func.func @moves(%x: tensor<1x4x2x8xf32>, %w: tensor<8x3xf32>) -> tensor<1x2x4x3xf32> {
  %t = aten.transpose %x {dim0 = 1 : i64, dim1 = 2 : i64} : (tensor<1x4x2x8xf32>) -> tensor<1x2x4x8xf32>
  %y = aten.matmul %t, %w : (tensor<1x2x4x8xf32>, tensor<8x3xf32>) -> tensor<1x2x4x3xf32>
  func.return %y : tensor<1x2x4x3xf32>
}

// -----

// Attention at 3 tokens: v transposed out of [1, 3, 2, 8] ([batch, seq, heads, dim]) is
// read by the sdpa through the composed map (VMAP: head stride 8, token stride 16), and
// the output's transpose back to [1, 3, 2, 8], which a matmul reads, is written by the
// sdpa directly (OMAP: head stride 8, token stride 16): no copy left.
// CHECK:       vkc.kernel @[[S:sdpa_[0-9]+]] {kernel = "sdpa"{{.*}}spec = {HAS_MASK = 0 : i64, CAUSAL = 1 : i64, WG = 64 : i64, VMAP = 1 : i64, VOFF = 0 : i64, VSH = 8 : i64, VSS = 16 : i64, VSE = 1 : i64, OMAP = 1 : i64, OOFF = 0 : i64, OSH = 8 : i64, OSL = 16 : i64, OSE = 1 : i64, REG = 8 : i64, BOUNDED = 0 : i64}
// CHECK-LABEL: func.func @attention
// CHECK-NOT:     copy_strided
// CHECK:         vkc.dispatch @[[S]]
// CHECK-NOT:     copy_strided
// CHECK:         vkc.dispatch @matmul
// CHECK:         func.return
// OFF-LABEL:   func.func @attention
// OFF:           vkc.dispatch @copy_strided
// OFF:           vkc.dispatch @sdpa
// OFF:           vkc.dispatch @copy_strided
// OFF:           vkc.dispatch @matmul
// OFF:           func.return
func.func @attention(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x3x8xf32>, %x: tensor<1x3x2x8xf32>, %w: tensor<8x3xf32>) -> tensor<1x3x2x3xf32> {
  %v = aten.transpose %x {dim0 = 1 : i64, dim1 = 2 : i64} : (tensor<1x3x2x8xf32>) -> tensor<1x2x3x8xf32>
  %a = aten.scaled_dot_product_attention %q, %k, %v {is_causal = true} : (tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32>
  %r = aten.transpose %a {dim0 = 1 : i64, dim1 = 2 : i64} : (tensor<1x2x3x8xf32>) -> tensor<1x3x2x8xf32>
  %y = aten.matmul %r, %w : (tensor<1x3x2x8xf32>, tensor<8x3xf32>) -> tensor<1x3x2x3xf32>
  func.return %y : tensor<1x3x2x3xf32>
}
