// RUN: qopt-opt %s -p fuse-quant --split-input-file | filecheck %s
// fuse-quant, Q(DQ(q, P), P) -> q (qopt/lowering/fuse_quant/fold.py): exact for
// identical static per-tensor parameters and storage; never around float ops.
// Q(constant) -> its integers.

// A bare redundant pair on an i8 value (its storage range is the quant range).
// CHECK-LABEL: func.func @fold_pair(
// CHECK-SAME:    %[[Q:.*]]: tensor<2x4xi8>
// CHECK-NOT:     quant.
// CHECK:         func.return %[[Q]]
func.func @fold_pair(%q: tensor<2x4xi8>) -> tensor<2x4xi8> {
  %s = arith.constant dense<0.0123> : tensor<f64>
  %z = arith.constant dense<-7> : tensor<i64>
  %d = quant.dequantize %q, %s, %z {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f64>, tensor<i64>) -> tensor<2x4xf32>
  %s2 = arith.constant dense<0.0123> : tensor<f64>
  %z2 = arith.constant dense<-7> : tensor<i64>
  %r = quant.quantize %d, %s2, %z2 {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x4xf32>, tensor<f64>, tensor<i64>) -> tensor<2x4xi8>
  func.return %r : tensor<2x4xi8>
}

// -----

// Between two fused ops: linear (requant) -> DQ -> Q -> DQ -> linear. The Q/DQ
// pair folds and the second linear reads the first one's integers directly.
// CHECK-LABEL: func.func @fold_between_fused_ops(
// CHECK-SAME:    %[[X:.*]]: tensor<2x4xf32>
// CHECK-NOT:     quant.
// CHECK:         %[[A:.*]] = qfused.linear %[[X]], {{.*}}kernel = "linear_q8ta_q8csw_q8to"} : {{.*}} -> tensor<2x4xi8>
// CHECK-NOT:     quant.
// CHECK:         %[[B:.*]] = qfused.linear %[[A]], {{.*}}act = #qfused.static<scale = 0.1, zero_point = -5, range = [-128, 127]>, requant = {{.*}} : tensor<2x4xi8>, {{.*}} -> tensor<2x4xi8>
// CHECK-NOT:     quant.
// CHECK:         func.return %[[B]]
func.func @fold_between_fused_ops(%x: tensor<2x4xf32>) -> tensor<2x4xi8> {
  %xs = arith.constant dense<0.05> : tensor<f64>
  %xz = arith.constant dense<3> : tensor<i64>
  %xq = quant.quantize %x, %xs, %xz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x4xf32>, tensor<f64>, tensor<i64>) -> tensor<2x4xi8>
  %xd = quant.dequantize %xq, %xs, %xz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f64>, tensor<i64>) -> tensor<2x4xf32>
  %w = arith.constant dense<[[1, -2, 3, -4], [5, 6, -7, 8], [-9, 10, 11, 127], [0, 1, 0, -1]]> : tensor<4x4xi8>
  %s = arith.constant dense<[0.5, 0.25, 0.125, 1.0]> : tensor<4xf32>
  %wd = quant.dequantize %w, %s {block_size = array<i64: 1, 4>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<4x4xi8>, tensor<4xf32>) -> tensor<4x4xf32>
  %y = aten.linear %xd, %wd : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %ys = arith.constant dense<0.1> : tensor<f64>
  %yz = arith.constant dense<-5> : tensor<i64>
  %yq = quant.quantize %y, %ys, %yz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x4xf32>, tensor<f64>, tensor<i64>) -> tensor<2x4xi8>
  %yd = quant.dequantize %yq, %ys, %yz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f64>, tensor<i64>) -> tensor<2x4xf32>
  %yq2 = quant.quantize %yd, %ys, %yz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x4xf32>, tensor<f64>, tensor<i64>) -> tensor<2x4xi8>
  %yd2 = quant.dequantize %yq2, %ys, %yz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f64>, tensor<i64>) -> tensor<2x4xf32>
  %y2 = aten.linear %yd2, %wd : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %zs = arith.constant dense<0.2> : tensor<f64>
  %zz = arith.constant dense<0> : tensor<i64>
  %zq = quant.quantize %y2, %zs, %zz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x4xf32>, tensor<f64>, tensor<i64>) -> tensor<2x4xi8>
  func.return %zq : tensor<2x4xi8>
}

// -----

// Must not fold: a float op (relu) between the DQ and the Q. Folding it would
// change the numerics (ExecuTorch's FoldQDQ does, qopt does not).
// CHECK-LABEL: func.func @no_fold_around_float_op(
// CHECK:         quant.dequantize
// CHECK:         aten.relu
// CHECK:         quant.quantize
// CHECK-NOT:     qfused
func.func @no_fold_around_float_op(%q: tensor<2x4xi8>) -> tensor<2x4xi8> {
  %s = arith.constant dense<0.0123> : tensor<f64>
  %z = arith.constant dense<-7> : tensor<i64>
  %d = quant.dequantize %q, %s, %z {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f64>, tensor<i64>) -> tensor<2x4xf32>
  %r = aten.relu %d : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %rq = quant.quantize %r, %s, %z {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x4xf32>, tensor<f64>, tensor<i64>) -> tensor<2x4xi8>
  func.return %rq : tensor<2x4xi8>
}

// -----

// Must not fold: the i8 argument may hold -128, which the [-127, 127] quantize
// would clamp.
// CHECK-LABEL: func.func @no_fold_narrower_range(
// CHECK:         quant.dequantize
// CHECK:         quant.quantize
func.func @no_fold_narrower_range(%q: tensor<2x4xi8>) -> tensor<2x4xi8> {
  %s = arith.constant dense<0.0123> : tensor<f64>
  %z = arith.constant dense<0> : tensor<i64>
  %d = quant.dequantize %q, %s, %z {block_size = array<i64: 2, 4>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f64>, tensor<i64>) -> tensor<2x4xf32>
  %r = quant.quantize %d, %s, %z {block_size = array<i64: 2, 4>, qmin = -127 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x4xf32>, tensor<f64>, tensor<i64>) -> tensor<2x4xi8>
  func.return %r : tensor<2x4xi8>
}

// -----

// A quantize of constants (PT2E quantizes constant tensors and scalars in the
// graph) folds to its integers: rounding half to even (0.5 -> 0, 1.5 -> 2, 2.5 -> 2
// with the zero point added after), clamped to the range; rank 0 too.
// CHECK-LABEL: func.func @fold_constant_quantize(
// CHECK-NEXT:    %[[Q:.*]] = arith.constant dense<[0, 2, 0, -2, 2, 127, -128, 1]> : tensor<8xi8>
// CHECK-NEXT:    %[[Q0:.*]] = arith.constant dense<3> : tensor<i8>
// CHECK-NEXT:    func.return %[[Q]], %[[Q0]]

func.func @fold_constant_quantize() -> (tensor<8xi8>, tensor<i8>) {
  %c = arith.constant dense<[0.125, 0.375, -0.125, -0.375, 0.625, 100.0, -100.0, 0.3]> : tensor<8xf32>
  %s = arith.constant dense<0.25> : tensor<f64>
  %z = arith.constant dense<0> : tensor<i64>
  %q = quant.quantize %c, %s, %z {block_size = array<i64: 8>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<8xf32>, tensor<f64>, tensor<i64>) -> tensor<8xi8>
  %c0 = arith.constant dense<0.625> : tensor<f32>
  %z0 = arith.constant dense<1> : tensor<i64>
  %q0 = quant.quantize %c0, %s, %z0 {block_size = array<i64>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<f32>, tensor<f64>, tensor<i64>) -> tensor<i8>
  func.return %q, %q0 : tensor<8xi8>, tensor<i8>
}

// -----

// A weight quantized in the graph folds first, then fuses as a constant weight.
// CHECK-LABEL: func.func @weight_quantized_in_graph(
// CHECK-NOT:     quant.
// CHECK:         arith.constant dense<{{\[}}[10, -20, 30, 40], [25, 30, -35, 40], [22, 25, 28, -30]]> : tensor<3x4xi8>
// CHECK:         qfused.linear %x, {{.*}}kernel = "linear_q8csw"
func.func @weight_quantized_in_graph(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<[[0.1, -0.2, 0.3, 0.4], [0.5, 0.6, -0.7, 0.8], [0.9, 1.0, 1.1, -1.2]]> : tensor<3x4xf32>
  %s = arith.constant dense<[0.01, 0.02, 0.04]> : tensor<3xf32>
  %z = arith.constant dense<0> : tensor<3xi64>
  %q = quant.quantize %w, %s, %z {block_size = array<i64: 1, 4>, qmin = -127 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<3x4xf32>, tensor<3xf32>, tensor<3xi64>) -> tensor<3x4xi8>
  %d = quant.dequantize %q, %s, %z {block_size = array<i64: 1, 4>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<3x4xi8>, tensor<3xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  %y = aten.linear %x, %d : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
