// RUN: qopt-opt %s -p convert-to-vkc --split-input-file | filecheck %s
// Program state (ml_program globals) on Vulkan: each global a function reads or
// writes is its device buffer (`vkc.state`), kept across calls.

// The KV-cache update: the loaded cache has no other use, so index_put scatters
// straight into the state buffer (no copy of the cache), every use of the updated
// value reads the state buffer and the store is nothing.
// CHECK:       ml_program.global private mutable @k_cache(dense<0.000000e+00> : tensor<1x2x8x4xf32>) : tensor<1x2x8x4xf32>
// CHECK-LABEL: func.func @forward(
// CHECK:         %[[V:.*]] = vkc.input %k
// CHECK:         %[[P:.*]] = vkc.input %pos : tensor<1xi64> -> !vkc.buffer<1xi32>
// CHECK:         %[[K:.*]] = vkc.state @k_cache : !vkc.buffer<1x2x8x4xf32>
// CHECK:         %[[S:.*]] = vkc.alloc {status, what = "'aten.index_put'"} : !vkc.buffer<1xui32>
// CHECK-NOT:     copy_strided
// CHECK:         vkc.dispatch @scatter_dim_0(%[[V]], %[[P]], %[[K]], %[[S]]) {push = {P = 2 : i64, N = 8 : i64, Q = 4 : i64, S = 1 : i64}
// CHECK:         vkc.dispatch @binary_0(%[[K]], %[[K]], %{{.*}})
// CHECK-NOT:     copy_strided
// CHECK:         func.return
ml_program.global private mutable @k_cache(dense<0.0> : tensor<1x2x8x4xf32>) : tensor<1x2x8x4xf32>
func.func @forward(%k: tensor<1x2x1x4xf32>, %pos: tensor<1xi64>) -> tensor<1x2x8x4xf32> {
  %c = ml_program.global_load @k_cache : tensor<1x2x8x4xf32>
  %u = aten.index_put %c, %pos, %k {indexed_dims = array<i64: 2>} : (tensor<1x2x8x4xf32>, tensor<1xi64>, tensor<1x2x1x4xf32>) -> tensor<1x2x8x4xf32>
  %r = aten.mul %u, %u : (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  ml_program.global_store @k_cache = %u : tensor<1x2x8x4xf32>
  func.return %r : tensor<1x2x8x4xf32>
}

// -----

// The general case: the old cache is also returned, so index_copy writes a copy of
// it; the store copies the new value into the state buffer after every other
// dispatch, and the old value returned from the state buffer is copied aside first.
// CHECK-LABEL: func.func @forward(
// CHECK:         %[[K:.*]] = vkc.state @k_cache : !vkc.buffer<1x2x8x4xf32>
// CHECK:         %[[NEW:.*]] = vkc.alloc {slot = 0 : i64} : !vkc.buffer<1x2x8x4xf32>
// CHECK:         vkc.dispatch @copy_strided_0(%[[K]], %[[NEW]])
// CHECK:         vkc.dispatch @scatter_dim_0(%{{.*}}, %{{.*}}, %[[NEW]], %{{.*}}) {push = {P = 2 : i64, N = 8 : i64, Q = 4 : i64, S = 1 : i64}
// CHECK:         %[[OLD:.*]] = vkc.alloc {slot = 1 : i64} : !vkc.buffer<1x2x8x4xf32>
// CHECK:         vkc.dispatch @copy_strided_0(%[[K]], %[[OLD]])
// CHECK-NEXT:    vkc.barrier
// CHECK-NEXT:    vkc.dispatch @copy_strided_0(%[[NEW]], %[[K]])
// CHECK:         %[[A:.*]] = vkc.output %[[OLD]]
// CHECK:         %[[B:.*]] = vkc.output %[[NEW]]
// CHECK:         func.return %[[A]], %[[B]]
ml_program.global private mutable @k_cache(dense<0.0> : tensor<1x2x8x4xf32>) : tensor<1x2x8x4xf32>
func.func @forward(%k: tensor<1x2x1x4xf32>, %pos: tensor<1xi64>) -> (tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) {
  %c = ml_program.global_load @k_cache : tensor<1x2x8x4xf32>
  %u = aten.index_copy %c, %pos, %k {dim = 2 : i64} : (tensor<1x2x8x4xf32>, tensor<1xi64>, tensor<1x2x1x4xf32>) -> tensor<1x2x8x4xf32>
  ml_program.global_store @k_cache = %u : tensor<1x2x8x4xf32>
  func.return %c, %u : tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>
}

// -----

// Two methods (prefill and decode) share the state, the kernel symbols and the
// constant blobs; a global only read is its state buffer, without any copy; a
// mask row looked up at run-time positions is a gather_dim (NEG = 1: torch counts
// negative indices from the end).
// CHECK:       vkc.kernel @gather_dim_0 {kernel = "gather_dim", {{.*}}spec = {NEG = 1 : i64, WG = 64 : i64}
// CHECK-NOT:     vkc.kernel @gather_dim_1
// CHECK-NOT:     vkc.kernel @binary_1
// CHECK:         ml_program.global private mutable @steps
// CHECK-LABEL: func.func @prefill(
// CHECK:         %[[M:.*]] = vkc.constant dense_resource<[[MASK:.*]]> : tensor<16xf32> : !vkc.buffer<4x4xf32>
// CHECK:         vkc.dispatch @gather_dim_0(%[[M]], %{{.*}}, %{{.*}}, %{{.*}}) {push = {P = 1 : i64, N = 4 : i64, Q = 4 : i64, S = 2 : i64}
// CHECK:         %[[ST:.*]] = vkc.state @steps : !vkc.buffer<4xf32>
// CHECK-NOT:     copy_strided
// CHECK-LABEL: func.func @decode(
// CHECK:         vkc.constant dense_resource<[[MASK]]> : tensor<16xf32> : !vkc.buffer<4x4xf32>
// CHECK:         vkc.dispatch @gather_dim_0({{.*}}) {push = {P = 1 : i64, N = 4 : i64, Q = 4 : i64, S = 1 : i64}
// CHECK:         vkc.state @steps : !vkc.buffer<4xf32>
ml_program.global private mutable @steps(dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>) : tensor<4xf32>
func.func @prefill(%pos: tensor<2xi64>) -> tensor<2x4xf32> {
  %mask = arith.constant dense<[[0.0, -1.0, -1.0, -1.0], [0.0, 0.0, -1.0, -1.0], [0.0, 0.0, 0.0, -1.0], [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %row = aten.index %mask, %pos {indexed_dims = array<i64: 0>} : (tensor<4x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  %s = ml_program.global_load @steps : tensor<4xf32>
  %r = aten.add %row, %s : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}
func.func @decode(%pos: tensor<1xi64>) -> tensor<1x4xf32> {
  %mask = arith.constant dense<[[0.0, -1.0, -1.0, -1.0], [0.0, 0.0, -1.0, -1.0], [0.0, 0.0, 0.0, -1.0], [0.0, 0.0, 0.0, 0.0]]> : tensor<4x4xf32>
  %row = aten.index %mask, %pos {indexed_dims = array<i64: 0>} : (tensor<4x4xf32>, tensor<1xi64>) -> tensor<1x4xf32>
  %s = ml_program.global_load @steps : tensor<4xf32>
  %r = aten.add %row, %s : (tensor<1x4xf32>, tensor<4xf32>) -> tensor<1x4xf32>
  func.return %r : tensor<1x4xf32>
}
