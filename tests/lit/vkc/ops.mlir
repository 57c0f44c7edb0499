// RUN: QOPT_ROUNDTRIP
// RUN: QOPT_GENERIC_ROUNDTRIP

// CHECK:       vkc.kernel @scale {kernel = "test_scale", glsl = "test_scale.glsl", entry = "main", hash = "0123abcd", local_size = array<i64: 64, 1, 1>, spec = {op = 1 : i64}, bindings = [#vkc.binding<"x", f32>, #vkc.binding<"w", ui32>, #vkc.binding<"y", f32, write>], push = [#vkc.push<"n", i32>, #vkc.push<"alpha", f32>]}
// GENERIC:     "vkc.kernel"() <{sym_name = "scale", kernel = "test_scale"
vkc.kernel @scale {kernel = "test_scale", glsl = "test_scale.glsl", entry = "main", hash = "0123abcd", local_size = array<i64: 64, 1, 1>, spec = {op = 1 : i64}, bindings = [#vkc.binding<"x", f32>, #vkc.binding<"w", ui32>, #vkc.binding<"y", f32, write>], push = [#vkc.push<"n", i32>, #vkc.push<"alpha", f32>]}

// CHECK-LABEL: func.func @forward(
// CHECK:         %[[IN:.*]] = vkc.input %{{.*}} : tensor<1x16xi64> -> !vkc.buffer<1x16xi32>
// CHECK:         %[[X:.*]] = vkc.input %{{.*}} : tensor<4x8xf32> -> !vkc.buffer<4x8xf32>
// CHECK:         %[[W:.*]] = vkc.constant dense<[1, 2]> : tensor<2xui32> : !vkc.buffer<2xui32, "q4gsw">
// CHECK:         %[[Y:.*]] = vkc.alloc {slot = 0 : i64} : !vkc.buffer<4x8xf32>
// CHECK:         %[[T:.*]] = vkc.alloc : !vkc.buffer<32xf32>
// CHECK:         vkc.dispatch @scale(%[[X]], %[[W]], %[[Y]]) {push = {n = 32 : i32, alpha = 5.000000e-01 : f32}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<4x8xf32>, !vkc.buffer<2xui32, "q4gsw">, !vkc.buffer<4x8xf32>
// CHECK:         vkc.barrier
// CHECK:         %[[V:.*]] = vkc.view %[[Y]] : !vkc.buffer<4x8xf32> -> !vkc.buffer<32xf32>
// CHECK:         %{{.*}} = vkc.output %[[V]] : !vkc.buffer<32xf32> -> tensor<32xf32>
// GENERIC:       "vkc.dispatch"(%{{.*}}, %{{.*}}, %{{.*}}) <{kernel = @scale, push = {n = 32 : i32, alpha = 5.000000e-01 : f32}, workgroups = array<i64: 1, 1, 1>}>
// GENERIC:       "vkc.barrier"() : () -> ()
func.func @forward(%tokens: tensor<1x16xi64>, %x: tensor<4x8xf32>) -> tensor<32xf32> {
  %in = vkc.input %tokens : tensor<1x16xi64> -> !vkc.buffer<1x16xi32>
  %xb = vkc.input %x : tensor<4x8xf32> -> !vkc.buffer<4x8xf32>
  %w = vkc.constant dense<[1, 2]> : tensor<2xui32> : !vkc.buffer<2xui32, "q4gsw">
  %y = vkc.alloc {slot = 0 : i64} : !vkc.buffer<4x8xf32>
  %t = vkc.alloc : !vkc.buffer<32xf32>
  vkc.dispatch @scale(%xb, %w, %y) {push = {n = 32 : i32, alpha = 0.5 : f32}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<4x8xf32>, !vkc.buffer<2xui32, "q4gsw">, !vkc.buffer<4x8xf32>
  vkc.barrier
  %v = vkc.view %y : !vkc.buffer<4x8xf32> -> !vkc.buffer<32xf32>
  %out = vkc.output %v : !vkc.buffer<32xf32> -> tensor<32xf32>
  func.return %out : tensor<32xf32>
}

// An index status buffer: one ui32 word of its own (no slot) bound at the status
// binding of one dispatch, naming the op it guards.
// CHECK:       vkc.kernel @lookup_k {kernel = "test_lookup", {{.*}}bindings = [#vkc.binding<"table", f32>, #vkc.binding<"idx", i32>, #vkc.binding<"y", f32, write>, #vkc.binding<"status", ui32, write>], push = [#vkc.push<"n", ui32>]}
// GENERIC:     "vkc.kernel"() <{sym_name = "lookup_k", kernel = "test_lookup"
vkc.kernel @lookup_k {kernel = "test_lookup", glsl = "test_lookup.glsl", entry = "main", hash = "0123abcd", local_size = array<i64: 64, 1, 1>, spec = {}, bindings = [#vkc.binding<"table", f32>, #vkc.binding<"idx", i32>, #vkc.binding<"y", f32, write>, #vkc.binding<"status", ui32, write>], push = [#vkc.push<"n", ui32>]}

// CHECK-LABEL: func.func @lookup(
// CHECK:         %[[S:.*]] = vkc.alloc {status, what = "'aten.embedding' at model.py:12"} : !vkc.buffer<1xui32>
// CHECK:         vkc.dispatch @lookup_k(%{{.*}}, %{{.*}}, %{{.*}}, %[[S]]) {push = {n = 3 : i64}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<5x4xf32>, !vkc.buffer<3xi32>, !vkc.buffer<3x4xf32>, !vkc.buffer<1xui32>
// GENERIC:       "vkc.alloc"() <{status, what = "'aten.embedding' at model.py:12"}> : () -> !vkc.buffer<1xui32>
func.func @lookup(%t: tensor<5x4xf32>, %i: tensor<3xi64>) -> tensor<3x4xf32> {
  %tb = vkc.input %t : tensor<5x4xf32> -> !vkc.buffer<5x4xf32>
  %ib = vkc.input %i : tensor<3xi64> -> !vkc.buffer<3xi32>
  %y = vkc.alloc {slot = 0 : i64} : !vkc.buffer<3x4xf32>
  %s = vkc.alloc {status, what = "'aten.embedding' at model.py:12"} : !vkc.buffer<1xui32>
  vkc.dispatch @lookup_k(%tb, %ib, %y, %s) {push = {n = 3 : i64}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<5x4xf32>, !vkc.buffer<3xi32>, !vkc.buffer<3x4xf32>, !vkc.buffer<1xui32>
  %out = vkc.output %y : !vkc.buffer<3x4xf32> -> tensor<3x4xf32>
  func.return %out : tensor<3x4xf32>
}

// Program state: the device buffer of a mutable ml_program.global (its name, type
// and initial value), kept on the device across calls and written in place: a
// KV-cache update is a scatter_dim dispatch whose `out` is the state buffer.
// CHECK:       ml_program.global private mutable @layers.0.k_cache(dense<0.000000e+00> : tensor<1x2x4x2xf32>) : tensor<1x2x4x2xf32>
ml_program.global private mutable @layers.0.k_cache(dense<0.0> : tensor<1x2x4x2xf32>) : tensor<1x2x4x2xf32>
vkc.kernel @scatter_dim_0 {kernel = "scatter_dim", glsl = "scatter_dim.glsl", entry = "main", hash = "0123abcd", local_size = array<i64: 64, 1, 1>, spec = {NEG = 1 : i64, WG = 64 : i64}, bindings = [#vkc.binding<"vals", ui32>, #vkc.binding<"idx", i32>, #vkc.binding<"out", ui32, write>, #vkc.binding<"status", ui32, write>], push = [#vkc.push<"P", ui32>, #vkc.push<"N", ui32>, #vkc.push<"Q", ui32>, #vkc.push<"S", ui32>]}

// CHECK-LABEL: func.func @decode(
// CHECK:         %[[K:.*]] = vkc.state @layers.0.k_cache : !vkc.buffer<1x2x4x2xf32>
// CHECK:         vkc.dispatch @scatter_dim_0(%{{.*}}, %{{.*}}, %[[K]], %{{.*}}) {push = {P = 2 : i64, N = 4 : i64, Q = 2 : i64, S = 1 : i64}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<2x1x2xf32>, !vkc.buffer<1xi32>, !vkc.buffer<1x2x4x2xf32>, !vkc.buffer<1xui32>
// CHECK:         %{{.*}} = vkc.output %[[K]] : !vkc.buffer<1x2x4x2xf32> -> tensor<1x2x4x2xf32>
// GENERIC:       "vkc.state"() <{global = @layers.0.k_cache}> : () -> !vkc.buffer<1x2x4x2xf32>
func.func @decode(%v: tensor<2x1x2xf32>, %pos: tensor<1xi64>) -> tensor<1x2x4x2xf32> {
  %k = vkc.state @layers.0.k_cache : !vkc.buffer<1x2x4x2xf32>
  %vb = vkc.input %v : tensor<2x1x2xf32> -> !vkc.buffer<2x1x2xf32>
  %pb = vkc.input %pos : tensor<1xi64> -> !vkc.buffer<1xi32>
  %s = vkc.alloc {status, what = "'aten.index_put' at model.py:30"} : !vkc.buffer<1xui32>
  vkc.dispatch @scatter_dim_0(%vb, %pb, %k, %s) {push = {P = 2 : i64, N = 4 : i64, Q = 2 : i64, S = 1 : i64}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<2x1x2xf32>, !vkc.buffer<1xi32>, !vkc.buffer<1x2x4x2xf32>, !vkc.buffer<1xui32>
  %out = vkc.output %k : !vkc.buffer<1x2x4x2xf32> -> tensor<1x2x4x2xf32>
  func.return %out : tensor<1x2x4x2xf32>
}

// A host segment (the host fallback): ops without a kernel run by the reference
// interpreter between two submissions, reading and writing device buffers once.
// CHECK-LABEL: func.func @host(
// CHECK:         vkc.host_call ins(%{{.*}}, %{{.*}} : !vkc.buffer<2x4xf32>, !vkc.buffer<4xi32>) outs(%[[O:.*]], %{{.*}} : !vkc.buffer<2x4xf32>, !vkc.buffer<2x1xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[A:.*]]: tensor<2x4xf32>, %{{.*}}: tensor<4xi64>):
// CHECK-NEXT:      %[[C:.*]] = aten.cumsum %[[A]] {dim = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:      %[[P:.*]] = aten.prod %[[C]] {dims = array<i64: 1>, keepdim = true} : (tensor<2x4xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:      vkc.host_yield %[[C]], %[[P]] : tensor<2x4xf32>, tensor<2x1xf32>
// CHECK-NEXT:    }
// CHECK:         vkc.output %[[O]]
// GENERIC:       "vkc.host_call"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{operandSegmentSizes = array<i32: 2, 2>}> ({
// GENERIC:         "vkc.host_yield"(%{{.*}}, %{{.*}}) : (tensor<2x4xf32>, tensor<2x1xf32>) -> ()
func.func @host(%x: tensor<2x4xf32>, %i: tensor<4xi64>) -> tensor<2x4xf32> {
  %xb = vkc.input %x : tensor<2x4xf32> -> !vkc.buffer<2x4xf32>
  %ib = vkc.input %i : tensor<4xi64> -> !vkc.buffer<4xi32>
  %c = vkc.alloc {slot = 0 : i64} : !vkc.buffer<2x4xf32>
  %p = vkc.alloc {slot = 1 : i64} : !vkc.buffer<2x1xf32>
  vkc.host_call ins(%xb, %ib : !vkc.buffer<2x4xf32>, !vkc.buffer<4xi32>) outs(%c, %p : !vkc.buffer<2x4xf32>, !vkc.buffer<2x1xf32>) {
  ^bb0(%a: tensor<2x4xf32>, %unused: tensor<4xi64>):
    %s = aten.cumsum %a {dim = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %r = aten.prod %s {dims = array<i64: 1>, keepdim = true} : (tensor<2x4xf32>) -> tensor<2x1xf32>
    vkc.host_yield %s, %r : tensor<2x4xf32>, tensor<2x1xf32>
  }
  %out = vkc.output %c : !vkc.buffer<2x4xf32> -> tensor<2x4xf32>
  func.return %out : tensor<2x4xf32>
}
