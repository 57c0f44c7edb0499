// RUN: qopt-opt %s -p fuse-quant --split-input-file | filecheck %s
// fuse-quant, embedding family (qopt/lowering/fuse_quant/embedding.py; docs/fusion-patterns.md).

// int4 per-group [1, G], symmetric (all-zero zero point dropped): ET `embedding_q4gsw`.
// CHECK-LABEL: func.func @embedding_w4_group_sym(
// CHECK-SAME:    %[[I:.*]]: tensor<3xi64>
// CHECK-NOT:     quant.dequantize
// CHECK:         %[[Y:.*]] = qfused.embedding %[[I]], %{{.*}}, %{{.*}} {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, kernel = "embedding_q4gsw"} : tensor<3xi64>, tensor<2x8xi8>, tensor<2x2xf32> -> tensor<3x8xf32>
// CHECK-NOT:     aten.embedding
// CHECK:         func.return %[[Y]]
func.func @embedding_w4_group_sym(%i: tensor<3xi64>) -> tensor<3x8xf32> {
  %w = arith.constant dense<[[-8, -7, 0, 1, 2, 3, 6, 7], [7, 6, 5, 4, -1, -2, -3, -4]]> : tensor<2x8xi8>
  %s = arith.constant dense<[[0.5, 0.25], [0.125, 1.0]]> : tensor<2x2xf32>
  %z = arith.constant dense<0> : tensor<2x2xi8>
  %wd = quant.dequantize %w, %s, %z {block_size = array<i64: 1, 4>, qmin = -8 : i64, qmax = 7 : i64} : (tensor<2x8xi8>, tensor<2x2xf32>, tensor<2x2xi8>) -> tensor<2x8xf32>
  %y = aten.embedding %wd, %i : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<3x8xf32>
  func.return %y : tensor<3x8xf32>
}

// -----

// int4 per-group with a nonzero zero point (asymmetric): `embedding_q4gaw`.
// CHECK-LABEL: func.func @embedding_w4_group_asym(
// CHECK-SAME:    %[[I:.*]]: tensor<1x3xi64>
// CHECK-NOT:     quant.dequantize
// CHECK:         %[[Y:.*]] = qfused.embedding %[[I]], %{{.*}}, %{{.*}} zero_point %{{.*}} {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, kernel = "embedding_q4gaw"} : tensor<1x3xi64>, tensor<2x8xi8>, tensor<2x2xf32> zero_point tensor<2x2xi8> -> tensor<1x3x8xf32>
// CHECK:         func.return %[[Y]]
func.func @embedding_w4_group_asym(%i: tensor<1x3xi64>) -> tensor<1x3x8xf32> {
  %w = arith.constant dense<[[-8, -7, 0, 1, 2, 3, 6, 7], [7, 6, 5, 4, -1, -2, -3, -4]]> : tensor<2x8xi8>
  %s = arith.constant dense<[[0.5, 0.25], [0.125, 1.0]]> : tensor<2x2xf32>
  %z = arith.constant dense<[[1, 0], [-2, 3]]> : tensor<2x2xi8>
  %wd = quant.dequantize %w, %s, %z {block_size = array<i64: 1, 4>, qmin = -8 : i64, qmax = 7 : i64} : (tensor<2x8xi8>, tensor<2x2xf32>, tensor<2x2xi8>) -> tensor<2x8xf32>
  %y = aten.embedding %wd, %i : (tensor<2x8xf32>, tensor<1x3xi64>) -> tensor<1x3x8xf32>
  func.return %y : tensor<1x3x8xf32>
}

// -----

// int8 per row (block [1, D], torchao IntxWeightOnly PerAxis(0)): `embedding_q8csw`.
// CHECK-LABEL: func.func @embedding_w8_per_row(
// CHECK-SAME:    %[[I:.*]]: tensor<3xi64>
// CHECK-NOT:     quant.dequantize
// CHECK:         %[[Y:.*]] = qfused.embedding %[[I]], {{.*}}block = [1, 4]>, kernel = "embedding_q8csw"} : tensor<3xi64>, tensor<3x4xi8>, tensor<3x1xf32> -> tensor<3x4xf32>
// CHECK:         func.return %[[Y]]
func.func @embedding_w8_per_row(%i: tensor<3xi64>) -> tensor<3x4xf32> {
  %w = arith.constant dense<[[1, -2, 3, -4], [5, 6, -7, 8], [-9, 10, 11, 127]]> : tensor<3x4xi8>
  %s = arith.constant dense<[[0.5], [0.25], [0.125]]> : tensor<3x1xf32>
  %wd = quant.dequantize %w, %s {block_size = array<i64: 1, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<3x4xi8>, tensor<3x1xf32>) -> tensor<3x4xf32>
  %y = aten.embedding %wd, %i : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}

// -----

// Codebook (LUT) table, one 4-bit LUT per 4 columns; the ui8 -> i32 cast of the
// codes is looked through: the fused op holds the ui8 codes.
// CHECK-LABEL: func.func @embedding_lut4(
// CHECK-SAME:    %[[I:.*]]: tensor<3xi64>
// CHECK-NOT:     quant.dequantize_codebook
// CHECK-NOT:     aten.to
// CHECK:         %[[Y:.*]] = qfused.embedding %[[I]], %{{.*}}, %{{.*}} {weight_scheme = #qfused.lut<nbits = 4, block = [-1, 4]>, kernel = "embedding_lut4w"} : tensor<3xi64>, tensor<2x8xui8>, tensor<1x2x16x1xf32> -> tensor<3x8xf32>
// CHECK:         func.return %[[Y]]
func.func @embedding_lut4(%i: tensor<3xi64>) -> tensor<3x8xf32> {
  %codes = arith.constant dense<[[0, 1, 2, 3, 12, 13, 14, 15], [15, 0, 7, 8, 1, 1, 2, 2]]> : tensor<2x8xui8>
  %book = arith.constant dense<0.25> : tensor<1x2x16x1xf64>
  %ci = aten.to %codes : (tensor<2x8xui8>) -> tensor<2x8xi32>
  %wd = quant.dequantize_codebook %ci, %book {nbits = 4 : i64, block_size = array<i64: -1, 4>} : (tensor<2x8xi32>, tensor<1x2x16x1xf64>) -> tensor<2x8xf32>
  %y = aten.embedding %wd, %i : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<3x8xf32>
  func.return %y : tensor<3x8xf32>
}

// -----

// 3-bit codebook, one LUT per 2 rows (block [2, -1]), codes already i32 constants.
// CHECK-LABEL: func.func @embedding_lut3_rows(
// CHECK-NOT:     quant.dequantize_codebook
// CHECK:         qfused.embedding {{.*}}weight_scheme = #qfused.lut<nbits = 3, block = [2, -1]>, kernel = "embedding_lut3w"} : tensor<3xi64>, tensor<4x2xi32>, tensor<2x1x8x1xf32> -> tensor<3x2xf32>
func.func @embedding_lut3_rows(%i: tensor<3xi64>) -> tensor<3x2xf32> {
  %codes = arith.constant dense<[[0, 7], [1, 6], [2, 5], [3, 4]]> : tensor<4x2xi32>
  %book = arith.constant dense<-0.5> : tensor<2x1x8x1xf32>
  %wd = quant.dequantize_codebook %codes, %book {nbits = 3 : i64, block_size = array<i64: 2, -1>} : (tensor<4x2xi32>, tensor<2x1x8x1xf32>) -> tensor<4x2xf32>
  %y = aten.embedding %wd, %i : (tensor<4x2xf32>, tensor<3xi64>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}
