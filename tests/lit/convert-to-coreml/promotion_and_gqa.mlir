// RUN: qopt-opt %s -p convert-to-coreml --split-input-file | filecheck %s
// RUN: qopt-opt %s -p 'convert-to-coreml{target=iOS16}' --split-input-file | filecheck %s --check-prefix=OLD
// RUN: not qopt-opt %S/Inputs/relu_i8.mlir -p convert-to-coreml 2>&1 | filecheck %s --check-prefix=ERR
// Inputs the aten verifier accepts whose MIL ops are narrower: mixed-dtype cat
// (torch promotes), integer relu and clamp, linear with a run-time weight and a bias, and
// grouped-query attention (MIL wants equal head counts).

// cat promotes: the int operand (i64, narrowed to i32) is cast to the result's fp32.
// CHECK-LABEL: func.func @cat_mixed(
// CHECK-NEXT:    %[[C:.*]] = coreml.cast %y {dtype = "fp32"} : (tensor<2x3x2xi32>) -> tensor<2x3x2xf32>
// CHECK-NEXT:    %[[R:.*]] = coreml.concat %x, %[[C]] {axis = 2 : i64, interleave = false} : (tensor<2x3x4xf32>, tensor<2x3x2xf32>) -> tensor<2x3x6xf32>
// CHECK-NEXT:    func.return %[[R]]
func.func @cat_mixed(%x: tensor<2x3x4xf32>, %y: tensor<2x3x2xi64>) -> tensor<2x3x6xf32> {
  %r = aten.cat %x, %y {dim = -1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x2xi64>) -> tensor<2x3x6xf32>
  func.return %r : tensor<2x3x6xf32>
}

// -----

// MIL relu is fp16 / fp32 only: an int32 relu is maximum(x, 0).
// CHECK-LABEL: func.func @relu_i32(
// CHECK-NEXT:    %[[Z:.*]] = coreml.const dense<0> : tensor<i32>
// CHECK-NEXT:    %[[R:.*]] = coreml.maximum %x, %[[Z]] : (tensor<2x3xi32>, tensor<i32>) -> tensor<2x3xi32>
// CHECK-NEXT:    func.return %[[R]]
func.func @relu_i32(%x: tensor<2x3xi32>) -> tensor<2x3xi32> {
  %r = aten.relu %x : (tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return %r : tensor<2x3xi32>
}

// -----

// MIL clip is fp16 / fp32 only: an integer clamp (i64 narrowed to i32) is maximum
// and minimum with int32 bounds; a bound below int32 is dropped.
// CHECK-LABEL: func.func @clamp_i64(
// CHECK-NEXT:    %[[LO:.*]] = coreml.const dense<-3> : tensor<i32>
// CHECK-NEXT:    %[[A:.*]] = coreml.maximum %x, %[[LO]] : (tensor<2x3xi32>, tensor<i32>) -> tensor<2x3xi32>
// CHECK-NEXT:    %[[HI:.*]] = coreml.const dense<4> : tensor<i32>
// CHECK-NEXT:    %[[B:.*]] = coreml.minimum %[[A]], %[[HI]] : (tensor<2x3xi32>, tensor<i32>) -> tensor<2x3xi32>
// CHECK-NEXT:    %[[C:.*]] = coreml.const dense<7> : tensor<i32>
// CHECK-NEXT:    %[[D:.*]] = coreml.minimum %x, %[[C]] : (tensor<2x3xi32>, tensor<i32>) -> tensor<2x3xi32>
// CHECK-NEXT:    func.return %[[B]], %[[D]]
func.func @clamp_i64(%x: tensor<2x3xi64>) -> (tensor<2x3xi64>, tensor<2x3xi64>) {
  %a = aten.clamp %x {min = -3.000000e+00 : f64, max = 4.000000e+00 : f64} : (tensor<2x3xi64>) -> tensor<2x3xi64>
  %b = aten.clamp %x {min = -1.000000e+12 : f64, max = 7.000000e+00 : f64} : (tensor<2x3xi64>) -> tensor<2x3xi64>
  func.return %a, %b : tensor<2x3xi64>, tensor<2x3xi64>
}

// -----

// MIL linear wants a constant weight: a run-time one is matmul (transpose_y) + add.
// CHECK-LABEL: func.func @linear_runtime_weight_bias(
// CHECK-NEXT:    %[[Y:.*]] = coreml.matmul %x, %w {transpose_x = false, transpose_y = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[R:.*]] = coreml.add %[[Y]], %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[R]]
// OLD-LABEL: func.func @linear_runtime_weight_bias(
// OLD-NEXT:    coreml.matmul %x, %w {transpose_x = false, transpose_y = true}
// OLD-NEXT:    coreml.add
func.func @linear_runtime_weight_bias(%x: tensor<2x4xf32>, %w: tensor<3x4xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %r = aten.linear %x, %w, %b : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

// enable_gqa: each of the 2 key/value heads serves 2 consecutive query heads
// (reshape, tile, reshape: repeat_interleave on the head dim), then MIL sdpa on
// iOS18, coremltools' decomposition before.
// CHECK-LABEL: func.func @sdpa_gqa(
// CHECK-NEXT:    %[[K1:.*]] = coreml.reshape %k {shape = array<i64: 1, 2, 1, 40>} : (tensor<1x2x5x8xf32>) -> tensor<1x2x1x40xf32>
// CHECK-NEXT:    %[[K2:.*]] = coreml.tile %[[K1]] {reps = array<i64: 1, 1, 2, 1>} : (tensor<1x2x1x40xf32>) -> tensor<1x2x2x40xf32>
// CHECK-NEXT:    %[[K:.*]] = coreml.reshape %[[K2]] {shape = array<i64: 1, 4, 5, 8>} : (tensor<1x2x2x40xf32>) -> tensor<1x4x5x8xf32>
// CHECK-NEXT:    %[[V1:.*]] = coreml.reshape %v {shape = array<i64: 1, 2, 1, 30>}
// CHECK-NEXT:    %[[V2:.*]] = coreml.tile %[[V1]] {reps = array<i64: 1, 1, 2, 1>}
// CHECK-NEXT:    %[[V:.*]] = coreml.reshape %[[V2]] {shape = array<i64: 1, 4, 5, 6>} : (tensor<1x2x2x30xf32>) -> tensor<1x4x5x6xf32>
// CHECK-NEXT:    %[[R:.*]] = coreml.scaled_dot_product_attention %q, %[[K]], %[[V]] : (tensor<1x4x3x8xf32>, tensor<1x4x5x8xf32>, tensor<1x4x5x6xf32>) -> tensor<1x4x3x6xf32>
// CHECK-NEXT:    func.return %[[R]]
// OLD-LABEL: func.func @sdpa_gqa(
// OLD:         %[[K:.*]] = coreml.reshape %{{.*}} {shape = array<i64: 1, 4, 5, 8>}
// OLD:         %[[V:.*]] = coreml.reshape %{{.*}} {shape = array<i64: 1, 4, 5, 6>}
// OLD-NEXT:    %[[S:.*]] = coreml.matmul %q, %[[K]] {transpose_x = false, transpose_y = true} : (tensor<1x4x3x8xf32>, tensor<1x4x5x8xf32>) -> tensor<1x4x3x5xf32>
// OLD:         coreml.softmax
// OLD-NEXT:    coreml.matmul %{{.*}}, %[[V]] {transpose_x = false, transpose_y = false} : (tensor<1x4x3x5xf32>, tensor<1x4x5x6xf32>) -> tensor<1x4x3x6xf32>
func.func @sdpa_gqa(%q: tensor<1x4x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x6xf32>) -> tensor<1x4x3x6xf32> {
  %r = aten.scaled_dot_product_attention %q, %k, %v {enable_gqa = true} : (tensor<1x4x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x6xf32>) -> tensor<1x4x3x6xf32>
  func.return %r : tensor<1x4x3x6xf32>
}

// ERR: error: convert-to-coreml: 'aten.relu': relu on int8 tensors has no CoreML lowering (MIL relu takes fp16 or fp32, maximum fp16, fp32 or int32): cast the input first
