// RUN: qopt-opt %s -p convert-to-vkc --split-input-file | filecheck %s
// RUN: qopt-opt %s -p 'convert-to-vkc{schedule=false},vkc-plan-buffers,vkc-insert-barriers' --split-input-file | filecheck %s
// RUN: qopt-opt %s -p 'convert-to-vkc{schedule=false}' --split-input-file | filecheck %s --check-prefix=UNPLANNED
// Float ops onto the generic kernels, views, constant folding and buffer reuse.
// With schedule=false the pass only folds and lowers: no slots, no barriers, no
// plan attributes (vkc-plan-buffers and vkc-insert-barriers add them).
// UNPLANNED-NOT: slot =
// UNPLANNED-NOT: vkc.barrier
// UNPLANNED-NOT: vkc.planned_bytes

// A float linear (matmul kernel, TRANS_B = 1, bias; M = 2: one 8-column x 2-row tile
// per invocation, matmul_tile) then relu (unary OP 1): the
// input is uploaded, the weights become constant buffers, the relu output reuses
// nothing (both live), the result is read back.
// CHECK:       vkc.kernel @matmul_0 {kernel = "matmul", glsl = "matmul.glsl", {{.*}}spec = {TRANS_B = 1 : i64, HAS_BIAS = 1 : i64
// CHECK-SAME:    bindings = [#vkc.binding<"a", f32>, #vkc.binding<"b", f32>, #vkc.binding<"bias", f32>, #vkc.binding<"out", f32, write>], push = [#vkc.push<"M", ui32>, #vkc.push<"N", ui32>, #vkc.push<"K", ui32>, #vkc.push<"batch", ui32>, #vkc.push<"a_bs", ui32>, #vkc.push<"b_bs", ui32>]}
// CHECK:       vkc.kernel @unary_0 {kernel = "unary", {{.*}}spec = {OP = 1 : i64, DTYPE = 0 : i64, WG = 64 : i64}
// CHECK-LABEL: func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x3xf32>
// CHECK-SAME:    attributes {vkc.planned_bytes = 48 : i64, vkc.unplanned_bytes = 48 : i64}
// CHECK:         %[[X:.*]] = vkc.input %x : tensor<2x4xf32> -> !vkc.buffer<2x4xf32>
// CHECK:         %[[W:.*]] = vkc.constant dense_resource<{{.*}}> : tensor<12xf32> : !vkc.buffer<3x4xf32>
// CHECK:         %[[B:.*]] = vkc.constant dense_resource<{{.*}}> : tensor<3xf32> : !vkc.buffer<3xf32>
// CHECK:         %[[Y:.*]] = vkc.alloc {slot = 0 : i64} : !vkc.buffer<2x3xf32>
// CHECK:         vkc.dispatch @matmul_0(%[[X]], %[[W]], %[[B]], %[[Y]]) {push = {M = 2 : i64, N = 3 : i64, K = 4 : i64, batch = 1 : i64, a_bs = 8 : i64, b_bs = 0 : i64}, workgroups = array<i64: 1, 1, 1>}
// CHECK:         %[[R:.*]] = vkc.alloc {slot = 1 : i64} : !vkc.buffer<2x3xf32>
// CHECK-NEXT:    vkc.barrier
// CHECK-NEXT:    vkc.dispatch @unary_0(%[[Y]], %[[R]])
// CHECK:         %[[OUT:.*]] = vkc.output %[[R]] : !vkc.buffer<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[OUT]] : tensor<2x3xf32>
func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [0.5, 0.5, 0.5, 0.5], [-1.0, 0.0, 1.0, 0.0]]> : tensor<3x4xf32>
  %b = arith.constant dense<[0.1, 0.2, 0.3]> : tensor<3xf32>
  %y = aten.linear %x, %w, %b : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %r = aten.relu %y : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

// Buffer reuse: a chain of three unary ops needs two slots, the third result
// reuses the first one's memory (its lifetime ended).
// CHECK-LABEL: func.func @forward(%x: tensor<64xf32>) -> tensor<64xf32>
// CHECK-SAME:    attributes {vkc.planned_bytes = 512 : i64, vkc.unplanned_bytes = 768 : i64}
// CHECK:         vkc.alloc {slot = 0 : i64} : !vkc.buffer<64xf32>
// CHECK:         vkc.alloc {slot = 1 : i64} : !vkc.buffer<64xf32>
// CHECK:         vkc.alloc {slot = 0 : i64} : !vkc.buffer<64xf32>
func.func @forward(%x: tensor<64xf32>) -> tensor<64xf32> {
  %a = aten.neg %x : (tensor<64xf32>) -> tensor<64xf32>
  %b = aten.exp %a : (tensor<64xf32>) -> tensor<64xf32>
  %c = aten.sigmoid %b : (tensor<64xf32>) -> tensor<64xf32>
  func.return %c : tensor<64xf32>
}

// -----

// A view keeps the memory (vkc.view); a transpose is a strided copy.
// CHECK-LABEL: func.func @forward(%x: tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK:         %[[X:.*]] = vkc.input %x
// CHECK:         %[[V:.*]] = vkc.view %[[X]] : !vkc.buffer<2x3xf32> -> !vkc.buffer<3x2xf32>
// CHECK:         %[[T:.*]] = vkc.alloc {slot = 0 : i64} : !vkc.buffer<2x3xf32>
// CHECK:         vkc.dispatch @copy_strided_0(%[[V]], %[[T]]) {push = {n = 6 : i64, in_off = 0 : i64, out_off = 0 : i64, d0 = 1 : i64, d1 = 1 : i64, d2 = 1 : i64, d3 = 1 : i64, d4 = 2 : i64, d5 = 3 : i64, si0 = 0 : i64, si1 = 0 : i64, si2 = 0 : i64, si3 = 0 : i64, si4 = 1 : i64, si5 = 2 : i64
// CHECK:         %[[V2:.*]] = vkc.view %[[T]] : !vkc.buffer<2x3xf32> -> !vkc.buffer<3x2xf32>
// CHECK:         vkc.output %[[V2]]
func.func @forward(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %v = aten.view %x : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %t = aten.transpose %v {dim0 = 0 : i64, dim1 = 1 : i64} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %r = aten.view %t : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %r : tensor<3x2xf32>
}

// -----

// Constant folding: the slice and neg of a constant table are computed at compile
// time; only the add runs (binary OP 0, broadcasting the folded [1, 2] row).
// CHECK-LABEL: func.func @forward(%x: tensor<3x2xf32>) -> tensor<3x2xf32>
// CHECK-NOT:     copy_strided
// CHECK:         %[[C:.*]] = vkc.constant dense_resource<{{.*}}> : tensor<2xf32> : !vkc.buffer<1x2xf32>
// CHECK:         vkc.dispatch @binary_0(%{{.*}}, %[[C]], %{{.*}}) {push = {n = 6 : i64, {{.*}}sb4 = 0 : i64, sb5 = 1 : i64
// CHECK-NOT:     vkc.dispatch
func.func @forward(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %table = arith.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %row = aten.slice %table {dim = 0 : i64, start = 1 : i64, end = 2 : i64, step = 1 : i64} : (tensor<3x2xf32>) -> tensor<1x2xf32>
  %neg = aten.neg %row : (tensor<1x2xf32>) -> tensor<1x2xf32>
  %y = aten.add %x, %neg : (tensor<3x2xf32>, tensor<1x2xf32>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}

// -----

// sinh / cosh / trunc / sign / atan are unary kernel ops (OP 34, 35, 36, 37, 40; sign
// also on i32, DTYPE 1); isinf / isfinite are abs, then eq / lt against a one-word +inf
// constant (binary OP 7 / 9, an i32 0/1 result).
// CHECK-DAG:   vkc.kernel @{{unary_[0-9]+}} {kernel = "unary", {{.*}}spec = {OP = 40 : i64, DTYPE = 0 : i64, WG = 64 : i64}
// CHECK-DAG:   vkc.kernel @unary_0 {kernel = "unary", {{.*}}spec = {OP = 34 : i64, DTYPE = 0 : i64, WG = 64 : i64}
// CHECK-DAG:   vkc.kernel @unary_1 {kernel = "unary", {{.*}}spec = {OP = 35 : i64, DTYPE = 0 : i64, WG = 64 : i64}
// CHECK-DAG:   vkc.kernel @unary_2 {kernel = "unary", {{.*}}spec = {OP = 36 : i64, DTYPE = 0 : i64, WG = 64 : i64}
// CHECK-DAG:   vkc.kernel @unary_3 {kernel = "unary", {{.*}}spec = {OP = 37 : i64, DTYPE = 1 : i64, WG = 64 : i64}
// CHECK-DAG:   vkc.kernel @unary_4 {kernel = "unary", {{.*}}spec = {OP = 14 : i64, DTYPE = 0 : i64, WG = 64 : i64}
// CHECK-DAG:   vkc.kernel @binary_0 {kernel = "binary", {{.*}}spec = {OP = 7 : i64, DTYPE = 0 : i64, WG = 64 : i64}
// CHECK-DAG:   vkc.kernel @binary_1 {kernel = "binary", {{.*}}spec = {OP = 9 : i64, DTYPE = 0 : i64, WG = 64 : i64}
// CHECK-LABEL: func.func @trig_sign_trunc(
// CHECK:         vkc.constant dense_resource<{{.*}}> : tensor<1xf32> : !vkc.buffer<1xf32>
func.func @trig_sign_trunc(%x: tensor<2x3xf32>, %i: tensor<2x3xi32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xf32>) {
  %d = aten.sinh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %e = aten.cosh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %f = aten.trunc %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %g = aten.sign %i : (tensor<2x3xi32>) -> tensor<2x3xi32>
  %h = aten.isinf %x : (tensor<2x3xf32>) -> tensor<2x3xi1>
  %k = aten.isfinite %x : (tensor<2x3xf32>) -> tensor<2x3xi1>
  %a = aten.atan %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %d, %e, %f, %g, %h, %k, %a : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xf32>
}

// -----

// expm1 / log1p are unary kernel ops (OP 41, 42: Kahan's forms in the shared snippet).
// CHECK-DAG:   vkc.kernel @unary_0 {kernel = "unary", {{.*}}spec = {OP = 41 : i64, DTYPE = 0 : i64, WG = 64 : i64}
// CHECK-DAG:   vkc.kernel @unary_1 {kernel = "unary", {{.*}}spec = {OP = 42 : i64, DTYPE = 0 : i64, WG = 64 : i64}
// CHECK-LABEL: func.func @expm1_log1p(
func.func @expm1_log1p(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %a = aten.expm1 %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = aten.log1p %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %a, %b : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// signbit is a unary kernel op (OP 43) writing i32 0/1: the f32 sign bit, i32 x < 0.
// CHECK-DAG:   vkc.kernel @unary_0 {kernel = "unary", {{.*}}spec = {OP = 43 : i64, DTYPE = 0 : i64, WG = 64 : i64}
// CHECK-DAG:   vkc.kernel @unary_1 {kernel = "unary", {{.*}}spec = {OP = 43 : i64, DTYPE = 1 : i64, WG = 64 : i64}
// CHECK-LABEL: func.func @signbit(
func.func @signbit(%x: tensor<2x3xf32>, %i: tensor<2x3xi32>) -> (tensor<2x3xi1>, tensor<2x3xi1>) {
  %a = aten.signbit %x : (tensor<2x3xf32>) -> tensor<2x3xi1>
  %b = aten.signbit %i : (tensor<2x3xi32>) -> tensor<2x3xi1>
  func.return %a, %b : tensor<2x3xi1>, tensor<2x3xi1>
}

// -----

// fmod is a binary kernel op (OP 20: the exact C fmod on f32, truncating on i32).
// CHECK-DAG:   vkc.kernel @binary_0 {kernel = "binary", {{.*}}spec = {OP = 20 : i64, DTYPE = 0 : i64, WG = 64 : i64}
// CHECK-DAG:   vkc.kernel @binary_1 {kernel = "binary", {{.*}}spec = {OP = 20 : i64, DTYPE = 1 : i64, WG = 64 : i64}
// CHECK-LABEL: func.func @fmod(
func.func @fmod(%x: tensor<2x3xf32>, %y: tensor<3xf32>, %i: tensor<2x3xi32>) -> (tensor<2x3xf32>, tensor<2x3xi32>) {
  %a = aten.fmod %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %b = aten.fmod %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return %a, %b : tensor<2x3xf32>, tensor<2x3xi32>
}

// -----

// Shifts are binary kernel ops on i32 (OP 21, 22: torch's rules for amounts outside [0, 32)).
// CHECK-DAG:   vkc.kernel @binary_0 {kernel = "binary", {{.*}}spec = {OP = 21 : i64, DTYPE = 1 : i64, WG = 64 : i64}
// CHECK-DAG:   vkc.kernel @binary_1 {kernel = "binary", {{.*}}spec = {OP = 22 : i64, DTYPE = 1 : i64, WG = 64 : i64}
// CHECK-LABEL: func.func @shifts(
func.func @shifts(%i: tensor<2x3xi32>, %j: tensor<3xi32>) -> (tensor<2x3xi32>, tensor<2x3xi32>) {
  %a = aten.bitwise_left_shift %i, %j : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  %b = aten.bitwise_right_shift %i, %j : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  func.return %a, %b : tensor<2x3xi32>, tensor<2x3xi32>
}

// -----

// Truncating division is a binary kernel op (OP 23: trunc(x / y), i32 truncating).
// CHECK-DAG:   vkc.kernel @binary_0 {kernel = "binary", {{.*}}spec = {OP = 23 : i64, DTYPE = 0 : i64, WG = 64 : i64}
// CHECK-DAG:   vkc.kernel @binary_1 {kernel = "binary", {{.*}}spec = {OP = 23 : i64, DTYPE = 1 : i64, WG = 64 : i64}
// CHECK-LABEL: func.func @trunc_division(
func.func @trunc_division(%x: tensor<2x3xf32>, %y: tensor<3xf32>, %i: tensor<2x3xi32>, %j: tensor<3xi32>) -> (tensor<2x3xf32>, tensor<2x3xi32>) {
  %a = aten.div %x, %y {rounding_mode = "trunc"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %b = aten.div %i, %j {rounding_mode = "trunc"} : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  func.return %a, %b : tensor<2x3xf32>, tensor<2x3xi32>
}
