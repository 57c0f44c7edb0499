// RUN: qopt-opt %s -p convert-to-coreml --split-input-file --verify-diagnostics | filecheck %s
// RUN: qopt-opt %s -p 'convert-to-coreml{target=iOS16}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=IOS16
// Lowering rules of the ops tiny transformers models leave after fold-constants:
// expand (Llama's grouped KV heads, BERT's mask), addmm (GPT-2's Conv1D), split
// (GPT-2's fused QKV), index with constant indices and bitwise ops on bools
// (BERT's padding mask), where with scalar branches (BERT eager's mask fill).

// expand adding a leading dim: reshape to the result's rank, then MIL tile of the
// size-1 dims (Llama's repeat_kv: [1, 2, 1, 8, 16] -> [1, 2, 2, 8, 16]).
// CHECK-LABEL: func.func @expand(
// CHECK:         %[[R:.*]] = coreml.reshape %x {shape = array<i64: 1, 2, 1, 8, 16>} : (tensor<2x1x8x16xf32>) -> tensor<1x2x1x8x16xf32>
// CHECK-NEXT:    %[[T:.*]] = coreml.tile %[[R]] {reps = array<i64: 1, 1, 2, 1, 1>} : (tensor<1x2x1x8x16xf32>) -> tensor<1x2x2x8x16xf32>
// CHECK-NEXT:    func.return %[[T]]
// IOS16-LABEL: func.func @expand(
// IOS16:         coreml.tile
func.func @expand(%x: tensor<2x1x8x16xf32>) -> tensor<1x2x2x8x16xf32> {
  %0 = aten.expand %x : (tensor<2x1x8x16xf32>) -> tensor<1x2x2x8x16xf32>
  func.return %0 : tensor<1x2x2x8x16xf32>
}

// -----

// An expand that changes nothing is its input; bools tile as bools.
// CHECK-LABEL: func.func @expand_bool(
// CHECK-NEXT:    %[[T:.*]] = coreml.tile %m {reps = array<i64: 1, 1, 8, 1>} : (tensor<1x1x1x8xi1>) -> tensor<1x1x8x8xi1>
// CHECK-NEXT:    func.return %[[T]], %m
func.func @expand_bool(%m: tensor<1x1x1x8xi1>) -> (tensor<1x1x8x8xi1>, tensor<1x1x1x8xi1>) {
  %0 = aten.expand %m : (tensor<1x1x1x8xi1>) -> tensor<1x1x8x8xi1>
  %1 = aten.expand %m : (tensor<1x1x1x8xi1>) -> tensor<1x1x1x8xi1>
  func.return %0, %1 : tensor<1x1x8x8xi1>, tensor<1x1x1x8xi1>
}

// -----

// CHECK: 'aten.expand': broadcasting a int8 tensor has no CoreML lowering (MIL tile takes fp16, fp32, int32 or bool): cast the input first
// IOS16: 'aten.expand': broadcasting a int8 tensor has no CoreML lowering
func.func @expand_int8(%x: tensor<1x4xi8>) -> tensor<3x4xi8> {
  %0 = aten.expand %x : (tensor<1x4xi8>) -> tensor<3x4xi8>
  func.return %0 : tensor<3x4xi8>
}

// -----

// GPT-2's Conv1D, bias + x @ W with a constant W [K, N]: MIL linear with the
// weight transposed at compile time ([N, K]) and the bias.
// CHECK-LABEL: func.func @addmm_conv1d(
// CHECK:         %[[W:.*]] = coreml.const dense<{{\[\[}}1.000000e+00, 3.000000e+00, 5.000000e+00], [2.000000e+00, 4.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>
// CHECK-NEXT:    %[[B:.*]] = coreml.const dense<[5.000000e-01, -5.000000e-01]> : tensor<2xf32>
// CHECK-NEXT:    %[[L:.*]] = coreml.linear %x, %[[W]], %[[B]] : (tensor<4x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:    func.return %[[L]]
// IOS16-LABEL: func.func @addmm_conv1d(
// IOS16:         coreml.linear
func.func @addmm_conv1d(%x: tensor<4x3xf32>) -> tensor<4x2xf32> {
  %b = arith.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %w = arith.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %0 = aten.addmm %b, %x, %w : (tensor<2xf32>, tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  func.return %0 : tensor<4x2xf32>
}

// -----

// A run-time mat2: matmul, then add the input.
// CHECK-LABEL: func.func @addmm_dynamic(
// CHECK-NEXT:    %[[M:.*]] = coreml.matmul %x, %w {transpose_x = false, transpose_y = false} : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:    %[[A:.*]] = coreml.add %c, %[[M]] : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:    func.return %[[A]]
func.func @addmm_dynamic(%c: tensor<4x2xf32>, %x: tensor<4x3xf32>, %w: tensor<3x2xf32>) -> tensor<4x2xf32> {
  %0 = aten.addmm %c, %x, %w : (tensor<4x2xf32>, tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  func.return %0 : tensor<4x2xf32>
}

// -----

// alpha and beta other than 1: the product scaled with mul, a constant input
// scaled at compile time, a run-time input with mul.
// CHECK-LABEL: func.func @addmm_scaled(
// CHECK:         %[[M:.*]] = coreml.matmul %x, %{{.*}} {transpose_x = false, transpose_y = false}
// CHECK-NEXT:    %[[ALPHA:.*]] = coreml.const dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[P:.*]] = coreml.mul %[[M]], %[[ALPHA]]
// CHECK-NEXT:    %[[B:.*]] = coreml.const dense<[2.500000e-01, -2.500000e-01]> : tensor<2xf32>
// CHECK-NEXT:    coreml.add %[[B]], %[[P]]
// CHECK:         %[[M2:.*]] = coreml.matmul %x, %w
// CHECK-NEXT:    %[[BETA:.*]] = coreml.const dense<3.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[S:.*]] = coreml.mul %c, %[[BETA]]
// CHECK-NEXT:    coreml.add %[[S]], %[[M2]]
func.func @addmm_scaled(%x: tensor<4x3xf32>, %w: tensor<3x2xf32>, %c: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>) {
  %b = arith.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %wc = arith.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %0 = aten.addmm %b, %x, %wc {beta = 5.000000e-01 : f64, alpha = 2.000000e+00 : f64} : (tensor<2xf32>, tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %1 = aten.addmm %c, %x, %w {beta = 3.000000e+00 : f64} : (tensor<4x2xf32>, tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  func.return %0, %1 : tensor<4x2xf32>, tensor<4x2xf32>
}

// -----

// beta = 0 drops the input (torch ignores it, NaN included).
// CHECK-LABEL: func.func @addmm_beta_zero(
// CHECK-NEXT:    %[[M:.*]] = coreml.matmul %x, %w
// CHECK-NEXT:    func.return %[[M]]
func.func @addmm_beta_zero(%c: tensor<4x2xf32>, %x: tensor<4x3xf32>, %w: tensor<3x2xf32>) -> tensor<4x2xf32> {
  %0 = aten.addmm %c, %x, %w {beta = 0.000000e+00 : f64} : (tensor<4x2xf32>, tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  func.return %0 : tensor<4x2xf32>
}

// -----

// CHECK: 'aten.addmm': addmm on int32 tensors is not supported (CoreML lowers float addmm only): cast the operands to float
func.func @addmm_int(%c: tensor<2xi32>, %x: tensor<4x3xi32>, %w: tensor<3x2xi32>) -> tensor<4x2xi32> {
  %0 = aten.addmm %c, %x, %w : (tensor<2xi32>, tensor<4x3xi32>, tensor<3x2xi32>) -> tensor<4x2xi32>
  func.return %0 : tensor<4x2xi32>
}

// -----

// GPT-2's fused QKV split along the last dim: one slice_by_index per piece.
// CHECK-LABEL: func.func @split(
// CHECK-NEXT:    %[[A:.*]] = coreml.slice_by_index %x {begin = array<i64: 0, 0, 0>, end = array<i64: 1, 8, 64>, stride = array<i64: 1, 1, 1>} : (tensor<1x8x192xf32>) -> tensor<1x8x64xf32>
// CHECK-NEXT:    %[[B:.*]] = coreml.slice_by_index %x {begin = array<i64: 0, 0, 64>, end = array<i64: 1, 8, 160>, stride = array<i64: 1, 1, 1>} : (tensor<1x8x192xf32>) -> tensor<1x8x96xf32>
// CHECK-NEXT:    %[[C:.*]] = coreml.slice_by_index %x {begin = array<i64: 0, 0, 160>, end = array<i64: 1, 8, 192>, stride = array<i64: 1, 1, 1>} : (tensor<1x8x192xf32>) -> tensor<1x8x32xf32>
// CHECK-NEXT:    func.return %[[A]], %[[B]], %[[C]]
// IOS16-LABEL: func.func @split(
// IOS16-COUNT-3: coreml.slice_by_index
func.func @split(%x: tensor<1x8x192xf32>) -> (tensor<1x8x64xf32>, tensor<1x8x96xf32>, tensor<1x8x32xf32>) {
  %0, %1, %2 = aten.split %x {sizes = array<i64: 64, 96, 32>, dim = -1 : i64} : (tensor<1x8x192xf32>) -> (tensor<1x8x64xf32>, tensor<1x8x96xf32>, tensor<1x8x32xf32>)
  func.return %0, %1, %2 : tensor<1x8x64xf32>, tensor<1x8x96xf32>, tensor<1x8x32xf32>
}

// -----

// Constant indices: the flat offsets arange(20).reshape(4, 5)[[3, 0], [[1], [4]]]
// computed at compile time, one gather on the input reshaped to 1-D.
// CHECK-LABEL: func.func @index_constant(
// CHECK-NEXT:    %[[F:.*]] = coreml.reshape %x {shape = array<i64: 20>} : (tensor<4x5xf32>) -> tensor<20xf32>
// CHECK-NEXT:    %[[O:.*]] = coreml.const dense<{{\[\[}}16, 1], [19, 4]]> : tensor<2x2xi32>
// CHECK-NEXT:    %[[G:.*]] = coreml.gather %[[F]], %[[O]] {axis = 0 : i64} : (tensor<20xf32>, tensor<2x2xi32>) -> tensor<2x2xf32>
// CHECK-NEXT:    func.return %[[G]]
func.func @index_constant(%x: tensor<4x5xf32>) -> tensor<2x2xf32> {
  %0 = arith.constant dense<[3, 0]> : tensor<2xi64>
  %1 = arith.constant dense<[[1], [4]]> : tensor<2x1xi64>
  %2 = aten.index %x, %0, %1 {indexed_dims = array<i64: 0, 1>} : (tensor<4x5xf32>, tensor<2xi64>, tensor<2x1xi64>) -> tensor<2x2xf32>
  func.return %2 : tensor<2x2xf32>
}

// -----

// Non-adjacent indexed dims with a negative index: the broadcast index shape
// leads (torch's rule); offsets arange(24).reshape(2, 3, 4)[[1, -2], :, [3, 0]].
// CHECK-LABEL: func.func @index_split_dims(
// CHECK:         %[[O:.*]] = coreml.const dense<{{\[\[}}15, 19, 23], [0, 4, 8]]> : tensor<2x3xi32>
// CHECK-NEXT:    coreml.gather %{{.*}}, %[[O]] {axis = 0 : i64} : (tensor<24xf32>, tensor<2x3xi32>) -> tensor<2x3xf32>
func.func @index_split_dims(%x: tensor<2x3x4xf32>) -> tensor<2x3xf32> {
  %0 = arith.constant dense<[1, -2]> : tensor<2xi64>
  %1 = arith.constant dense<[3, 0]> : tensor<2xi64>
  %2 = aten.index %x, %0, %1 {indexed_dims = array<i64: 0, 2>} : (tensor<2x3x4xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x3xf32>
  func.return %2 : tensor<2x3xf32>
}

// -----

// BERT's mask[None, None, None, :] written as constant index tensors: the
// offsets read the whole input in order, so the index is a reshape.
// CHECK-LABEL: func.func @index_identity(
// CHECK-NEXT:    %[[R:.*]] = coreml.reshape %m {shape = array<i64: 1, 1, 1, 8>} : (tensor<1x8xi1>) -> tensor<1x1x1x8xi1>
// CHECK-NEXT:    func.return %[[R]]
func.func @index_identity(%m: tensor<1x8xi1>) -> tensor<1x1x1x8xi1> {
  %0 = arith.constant dense<0> : tensor<1x1x1x1xi64>
  %1 = arith.constant dense<[[[[0, 1, 2, 3, 4, 5, 6, 7]]]]> : tensor<1x1x1x8xi64>
  %2 = aten.index %m, %0, %1 {indexed_dims = array<i64: 0, 1>} : (tensor<1x8xi1>, tensor<1x1x1x1xi64>, tensor<1x1x1x8xi64>) -> tensor<1x1x1x8xi1>
  func.return %2 : tensor<1x1x1x8xi1>
}

// -----

// MIL gather takes no bools: a bool input is gathered as int32.
// CHECK-LABEL: func.func @index_bool(
// CHECK:         %[[I:.*]] = coreml.cast %{{.*}} {dtype = "int32"} : (tensor<8xi1>) -> tensor<8xi32>
// CHECK-NEXT:    %[[O:.*]] = coreml.const dense<[7, 0]> : tensor<2xi32>
// CHECK-NEXT:    %[[G:.*]] = coreml.gather %[[I]], %[[O]] {axis = 0 : i64} : (tensor<8xi32>, tensor<2xi32>) -> tensor<2xi32>
// CHECK-NEXT:    %[[B:.*]] = coreml.cast %[[G]] {dtype = "bool"} : (tensor<2xi32>) -> tensor<2xi1>
// CHECK-NEXT:    func.return %[[B]]
func.func @index_bool(%m: tensor<1x8xi1>) -> tensor<2xi1> {
  %0 = arith.constant dense<0> : tensor<1xi64>
  %1 = arith.constant dense<[-1, 0]> : tensor<2xi64>
  %2 = aten.index %m, %0, %1 {indexed_dims = array<i64: 0, 1>} : (tensor<1x8xi1>, tensor<1xi64>, tensor<2xi64>) -> tensor<2xi1>
  func.return %2 : tensor<2xi1>
}

// -----

// Run-time indices on one dim: gather of the index made non-negative; on several
// dims: an error.
// CHECK-LABEL: func.func @index_run_time(
// CHECK:         %[[S:.*]] = coreml.select %{{.*}}, %{{.*}}, %i : (tensor<2xi1>, tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
// CHECK-NEXT:    %[[G:.*]] = coreml.gather %x, %[[S]] {axis = 0 : i64} : (tensor<4x5xf32>, tensor<2xi32>) -> tensor<2x5xf32>
// CHECK-NEXT:    func.return %[[G]]
func.func @index_run_time(%x: tensor<4x5xf32>, %i: tensor<2xi64>) -> tensor<2x5xf32> {
  %0 = aten.index %x, %i {indexed_dims = array<i64: 0>} : (tensor<4x5xf32>, tensor<2xi64>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}

// -----

// CHECK: 'aten.index': advanced indexing on 2 dims with index tensors computed at run time; CoreML lowers run-time indices on one dim
func.func @index_run_time_two_dims(%x: tensor<4x5xf32>, %i: tensor<2xi64>) -> tensor<2xf32> {
  %0 = aten.index %x, %i, %i {indexed_dims = array<i64: 0, 1>} : (tensor<4x5xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

// CHECK: 'aten.index': index 4 is out of bounds for axis 0 with size 4
func.func @index_out_of_range(%x: tensor<4x5xf32>) -> tensor<2x5xf32> {
  %0 = arith.constant dense<[0, 4]> : tensor<2xi64>
  %1 = aten.index %x, %0 {indexed_dims = array<i64: 0>} : (tensor<4x5xf32>, tensor<2xi64>) -> tensor<2x5xf32>
  func.return %1 : tensor<2x5xf32>
}

// -----

// & | ^ on bools and logical_and/or/xor: MIL logical_and/or/xor; a logical op's
// non-bool operand becomes a bool with a cast (x != 0).
// CHECK-LABEL: func.func @logical(
// CHECK-NEXT:    %[[A:.*]] = coreml.logical_and %a, %b : (tensor<1x1x8x1xi1>, tensor<1x1x1x8xi1>) -> tensor<1x1x8x8xi1>
// CHECK-NEXT:    %[[O:.*]] = coreml.logical_or %a, %b
// CHECK-NEXT:    %[[X:.*]] = coreml.logical_xor %a, %b
// CHECK-NEXT:    %[[C:.*]] = coreml.cast %x {dtype = "bool"} : (tensor<1x1x1x8xf32>) -> tensor<1x1x1x8xi1>
// CHECK-NEXT:    %[[L:.*]] = coreml.logical_and %a, %[[C]]
// CHECK-NEXT:    func.return %[[A]], %[[O]], %[[X]], %[[L]]
// IOS16-LABEL: func.func @logical(
// IOS16:         coreml.logical_and
func.func @logical(%a: tensor<1x1x8x1xi1>, %b: tensor<1x1x1x8xi1>, %x: tensor<1x1x1x8xf32>) -> (tensor<1x1x8x8xi1>, tensor<1x1x8x8xi1>, tensor<1x1x8x8xi1>, tensor<1x1x8x8xi1>) {
  %0 = aten.bitwise_and %a, %b : (tensor<1x1x8x1xi1>, tensor<1x1x1x8xi1>) -> tensor<1x1x8x8xi1>
  %1 = aten.bitwise_or %a, %b : (tensor<1x1x8x1xi1>, tensor<1x1x1x8xi1>) -> tensor<1x1x8x8xi1>
  %2 = aten.bitwise_xor %a, %b : (tensor<1x1x8x1xi1>, tensor<1x1x1x8xi1>) -> tensor<1x1x8x8xi1>
  %3 = aten.logical_and %a, %x : (tensor<1x1x8x1xi1>, tensor<1x1x1x8xf32>) -> tensor<1x1x8x8xi1>
  func.return %0, %1, %2, %3 : tensor<1x1x8x8xi1>, tensor<1x1x8x8xi1>, tensor<1x1x8x8xi1>, tensor<1x1x8x8xi1>
}

// -----

// Integer bitwise ops have no MIL op: the composition (qopt/lowering/compose.py) of
// their bits in int32 arithmetic, on every opset.
// CHECK-LABEL: func.func @bitwise_int(
// CHECK-NOT:     coreml.logical_and %a
// CHECK-COUNT-2: coreml.floor_div %{{.*}} : (tensor<4x1xi32>, tensor<1x31xi32>) -> tensor<4x31xi32>
// CHECK:         coreml.reduce_sum
// CHECK:         coreml.select
// IOS16-LABEL: func.func @bitwise_int(
// IOS16:         coreml.reduce_sum
func.func @bitwise_int(%a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xi64> {
  %0 = aten.bitwise_and %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  func.return %0 : tensor<4xi64>
}

// -----

// where with scalar branches (BERT eager's mask fill): coremltools types select
// as broadcast(a, b), so the constant branch gets the result's shape.
// CHECK-LABEL: func.func @where_scalars(
// CHECK:         %[[Z:.*]] = coreml.const dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[F:.*]] = coreml.const dense<-3.40282347e+38> : tensor<1x1x2x2xf32>
// CHECK-NEXT:    %[[S:.*]] = coreml.select %m, %[[Z]], %[[F]] : (tensor<1x1x2x2xi1>, tensor<f32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
// CHECK-NEXT:    func.return %[[S]]
func.func @where_scalars(%m: tensor<1x1x2x2xi1>) -> tensor<1x1x2x2xf32> {
  %0 = arith.constant dense<0.0> : tensor<f32>
  %1 = arith.constant dense<-3.40282347e+38> : tensor<f32>
  %2 = aten.where %m, %0, %1 : (tensor<1x1x2x2xi1>, tensor<f32>, tensor<f32>) -> tensor<1x1x2x2xf32>
  func.return %2 : tensor<1x1x2x2xf32>
}

// -----

// Two run-time branches smaller than cond: the first is tiled.
// CHECK-LABEL: func.func @where_tiled(
// CHECK-NEXT:    %[[T:.*]] = coreml.tile %a {reps = array<i64: 3, 1>} : (tensor<1x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %[[S:.*]] = coreml.select %m, %[[T]], %b : (tensor<3x4xi1>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
func.func @where_tiled(%m: tensor<3x4xi1>, %a: tensor<1x4xf32>, %b: tensor<4xf32>) -> tensor<3x4xf32> {
  %0 = aten.where %m, %a, %b : (tensor<3x4xi1>, tensor<1x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}
