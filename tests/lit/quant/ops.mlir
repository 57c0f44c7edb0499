// RUN: QOPT_ROUNDTRIP
// RUN: QOPT_GENERIC_ROUNDTRIP

// CHECK-LABEL: func.func @quantize_per_tensor(
// CHECK-SAME:    %[[X:.*]]: tensor<2x4xf32>, %[[S:.*]]: tensor<f32>, %[[ZP:.*]]: tensor<i8>
// CHECK:         %[[Q:.*]] = quant.quantize %[[X]], %[[S]], %[[ZP]] {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xf32>, tensor<f32>, tensor<i8>) -> tensor<2x4xi8>
// CHECK:         func.return %[[Q]]
// GENERIC-LABEL: "func.func"() <{sym_name = "quantize_per_tensor"
// GENERIC:       "quant.quantize"(%{{.*}}, %{{.*}}, %{{.*}}) <{block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64}> : (tensor<2x4xf32>, tensor<f32>, tensor<i8>) -> tensor<2x4xi8>
func.func @quantize_per_tensor(%x: tensor<2x4xf32>, %s: tensor<f32>, %zp: tensor<i8>) -> tensor<2x4xi8> {
  %q = quant.quantize %x, %s, %zp {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xf32>, tensor<f32>, tensor<i8>) -> tensor<2x4xi8>
  func.return %q : tensor<2x4xi8>
}

// CHECK-LABEL: func.func @quantize_symmetric_no_zero_point(
// CHECK:         quant.quantize %{{.*}}, %{{.*}} {block_size = array<i64: 1, 4>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xi8>
func.func @quantize_symmetric_no_zero_point(%x: tensor<2x4xf32>, %s: tensor<2x1xf32>) -> tensor<2x4xi8> {
  %q = quant.quantize %x, %s {block_size = array<i64: 1, 4>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xi8>
  func.return %q : tensor<2x4xi8>
}

// CHECK-LABEL: func.func @quantize_per_token_options(
// CHECK:         quant.quantize %{{.*}}, %{{.*}}, %{{.*}} {block_size = array<i64: 1, 8>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32, zero_point_before_rounding} : (tensor<3x8xf16>, tensor<3x1xf32>, tensor<3x1xi32>) -> tensor<3x8xi8>
// GENERIC-LABEL: "func.func"() <{sym_name = "quantize_per_token_options"
// GENERIC:       "quant.quantize"{{.*}}compute_type = f32{{.*}}zero_point_before_rounding
func.func @quantize_per_token_options(%x: tensor<3x8xf16>, %s: tensor<3x1xf32>, %zp: tensor<3x1xi32>) -> tensor<3x8xi8> {
  %q = quant.quantize %x, %s, %zp {block_size = array<i64: 1, 8>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32, zero_point_before_rounding} : (tensor<3x8xf16>, tensor<3x1xf32>, tensor<3x1xi32>) -> tensor<3x8xi8>
  func.return %q : tensor<3x8xi8>
}

// CHECK-LABEL: func.func @dequantize_per_channel(
// CHECK-SAME:    %[[W:.*]]: tensor<4x6xi8>, %[[WS:.*]]: tensor<4xf32>, %[[WZ:.*]]: tensor<4xi64>
// CHECK:         %[[D:.*]] = quant.dequantize %[[W]], %[[WS]], %[[WZ]] {block_size = array<i64: 1, 6>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<4x6xi8>, tensor<4xf32>, tensor<4xi64>) -> tensor<4x6xf32>
// CHECK:         func.return %[[D]]
func.func @dequantize_per_channel(%w: tensor<4x6xi8>, %s: tensor<4xf32>, %zp: tensor<4xi64>) -> tensor<4x6xf32> {
  %d = quant.dequantize %w, %s, %zp {block_size = array<i64: 1, 6>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<4x6xi8>, tensor<4xf32>, tensor<4xi64>) -> tensor<4x6xf32>
  func.return %d : tensor<4x6xf32>
}

// CHECK-LABEL: func.func @dequantize_int4_group32(
// CHECK:         quant.dequantize %{{.*}}, %{{.*}} {block_size = array<i64: 1, 32>, qmin = -8 : i64, qmax = 7 : i64, compute_type = f32} : (tensor<2x64xi8>, tensor<2x2xf16>) -> tensor<2x64xf16>
func.func @dequantize_int4_group32(%w: tensor<2x64xi8>, %s: tensor<2x2xf16>) -> tensor<2x64xf16> {
  %d = quant.dequantize %w, %s {block_size = array<i64: 1, 32>, qmin = -8 : i64, qmax = 7 : i64, compute_type = f32} : (tensor<2x64xi8>, tensor<2x2xf16>) -> tensor<2x64xf16>
  func.return %d : tensor<2x64xf16>
}

// CHECK-LABEL: func.func @choose_qparams_per_token(
// CHECK:         %[[S:.*]], %[[Z:.*]] = quant.choose_qparams %{{.*}} {block_size = array<i64: 1, 8>, qmin = -128 : i64, qmax = 127 : i64, mapping = "asymmetric", eps = 1.1920928955078125e-07 : f64} : (tensor<3x8xf32>) -> (tensor<3x1xf32>, tensor<3x1xi64>)
// CHECK:         func.return %[[S]], %[[Z]]
func.func @choose_qparams_per_token(%x: tensor<3x8xf32>) -> (tensor<3x1xf32>, tensor<3x1xi64>) {
  %s, %zp = quant.choose_qparams %x {block_size = array<i64: 1, 8>, qmin = -128 : i64, qmax = 127 : i64, mapping = "asymmetric", eps = 1.1920928955078125e-07 : f64} : (tensor<3x8xf32>) -> (tensor<3x1xf32>, tensor<3x1xi64>)
  func.return %s, %zp : tensor<3x1xf32>, tensor<3x1xi64>
}

// CHECK-LABEL: func.func @choose_qparams_symmetric_per_tensor(
// CHECK:         quant.choose_qparams %{{.*}} {{{.*}}mapping = "symmetric"{{.*}}} : (tensor<3x8xf32>) -> (tensor<f32>, tensor<i32>)
func.func @choose_qparams_symmetric_per_tensor(%x: tensor<3x8xf32>) -> (tensor<f32>, tensor<i32>) {
  %s, %zp = quant.choose_qparams %x {block_size = array<i64: 3, 8>, qmin = -127 : i64, qmax = 127 : i64, mapping = "symmetric", eps = 0.0 : f64} : (tensor<3x8xf32>) -> (tensor<f32>, tensor<i32>)
  func.return %s, %zp : tensor<f32>, tensor<i32>
}

// CHECK-LABEL: func.func @dequantize_codebook(
// CHECK:         quant.dequantize_codebook %{{.*}}, %{{.*}} {nbits = 4 : i64, block_size = array<i64: -1, 16>} : (tensor<4x32xui8>, tensor<1x2x16x1xf32>) -> tensor<4x32xf32>
func.func @dequantize_codebook(%codes: tensor<4x32xui8>, %book: tensor<1x2x16x1xf32>) -> tensor<4x32xf32> {
  %w = quant.dequantize_codebook %codes, %book {nbits = 4 : i64, block_size = array<i64: -1, 16>} : (tensor<4x32xui8>, tensor<1x2x16x1xf32>) -> tensor<4x32xf32>
  func.return %w : tensor<4x32xf32>
}

// A dequantized dense_resource weight: the blob round-trips with --print-weights.
// CHECK-LABEL: func.func @dequantize_resource_weight(
// CHECK:         %[[W:.*]] = arith.constant dense_resource<w_int8> : tensor<2x2xi8>
// CHECK:         quant.dequantize %[[W]], %{{.*}} {block_size = array<i64: 1, 2>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x2xi8>, tensor<2x1xf32>) -> tensor<2x2xf32>
// CHECK:       w_int8: "0x0800000001FF7F80"
func.func @dequantize_resource_weight(%s: tensor<2x1xf32>) -> tensor<2x2xf32> {
  %w = arith.constant dense_resource<w_int8> : tensor<2x2xi8>
  %d = quant.dequantize %w, %s {block_size = array<i64: 1, 2>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x2xi8>, tensor<2x1xf32>) -> tensor<2x2xf32>
  func.return %d : tensor<2x2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      w_int8: "0x0800000001FF7F80"
    }
  }
#-}
