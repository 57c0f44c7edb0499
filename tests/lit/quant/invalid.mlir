// RUN: qopt-opt %s --split-input-file --verify-diagnostics | filecheck %s
// One chunk per verifier message of qopt/dialects/quant.py.

func.func @block_rank(%x: tensor<2x4xf32>, %s: tensor<f32>) -> tensor<2x4xi8> {
  %q = quant.quantize %x, %s {block_size = array<i64: 2>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xi8>
  func.return %q : tensor<2x4xi8>
}
// CHECK: 'quant.quantize': block_size has 1 entries but the tensor has rank 2

// -----

func.func @block_divides(%x: tensor<2x4xf32>, %s: tensor<2x2xf32>) -> tensor<2x4xi8> {
  %q = quant.quantize %x, %s {block_size = array<i64: 1, 3>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xf32>, tensor<2x2xf32>) -> tensor<2x4xi8>
  func.return %q : tensor<2x4xi8>
}
// CHECK: 'quant.quantize': block_size[1] = 3 must be positive and divide dimension 1 (4)

// -----

func.func @block_positive(%w: tensor<2x4xi8>, %s: tensor<2xf32>) -> tensor<2x4xf32> {
  %d = quant.dequantize %w, %s {block_size = array<i64: 0, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<2xf32>) -> tensor<2x4xf32>
  func.return %d : tensor<2x4xf32>
}
// CHECK: 'quant.dequantize': block_size[0] = 0 must be positive and divide dimension 0 (2)

// -----

func.func @scale_float(%x: tensor<2x4xf32>, %s: tensor<i32>) -> tensor<2x4xi8> {
  %q = quant.quantize %x, %s {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xf32>, tensor<i32>) -> tensor<2x4xi8>
  func.return %q : tensor<2x4xi8>
}
// CHECK: 'quant.quantize': scale must be a float tensor, got tensor<i32>

// -----

func.func @scale_count(%w: tensor<4x6xi8>, %s: tensor<3xf32>) -> tensor<4x6xf32> {
  %d = quant.dequantize %w, %s {block_size = array<i64: 1, 6>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<4x6xi8>, tensor<3xf32>) -> tensor<4x6xf32>
  func.return %d : tensor<4x6xf32>
}
// CHECK: 'quant.dequantize': scale has 3 elements but block_size [1, 6] splits shape [4, 6] into 4 blocks

// -----

func.func @zero_point_count(%w: tensor<4x6xi8>, %s: tensor<4xf32>, %zp: tensor<2xi64>) -> tensor<4x6xf32> {
  %d = quant.dequantize %w, %s, %zp {block_size = array<i64: 1, 6>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<4x6xi8>, tensor<4xf32>, tensor<2xi64>) -> tensor<4x6xf32>
  func.return %d : tensor<4x6xf32>
}
// CHECK: 'quant.dequantize': zero_point has 2 elements but there are 4 blocks

// -----

func.func @storage_int(%x: tensor<2x4xf32>, %s: tensor<f32>) -> tensor<2x4xf16> {
  %q = quant.quantize %x, %s {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf16>
  func.return %q : tensor<2x4xf16>
}
// CHECK: 'quant.quantize': storage type must be an integer type, got f16

// -----

func.func @range_fits_storage(%x: tensor<2x4xf32>, %s: tensor<f32>) -> tensor<2x4xi8> {
  %q = quant.quantize %x, %s {block_size = array<i64: 2, 4>, qmin = 0 : i64, qmax = 255 : i64} : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xi8>
  func.return %q : tensor<2x4xi8>
}
// CHECK: 'quant.quantize': quant range [0, 255] must be ordered and fit storage i8 [-128, 127]

// -----

func.func @range_ordered(%w: tensor<2x4xi8>, %s: tensor<f32>) -> tensor<2x4xf32> {
  %d = quant.dequantize %w, %s {block_size = array<i64: 2, 4>, qmin = 7 : i64, qmax = -8 : i64} : (tensor<2x4xi8>, tensor<f32>) -> tensor<2x4xf32>
  func.return %d : tensor<2x4xf32>
}
// CHECK: 'quant.dequantize': quant range [7, -8] must be ordered and fit storage i8 [-128, 127]

// -----

func.func @quantize_input_float(%x: tensor<2x4xi32>, %s: tensor<f32>) -> tensor<2x4xi8> {
  %q = quant.quantize %x, %s {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi32>, tensor<f32>) -> tensor<2x4xi8>
  func.return %q : tensor<2x4xi8>
}
// CHECK: 'quant.quantize': input must be a float tensor, got tensor<2x4xi32>

// -----

func.func @quantize_shape(%x: tensor<2x4xf32>, %s: tensor<f32>) -> tensor<4x2xi8> {
  %q = quant.quantize %x, %s {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xf32>, tensor<f32>) -> tensor<4x2xi8>
  func.return %q : tensor<4x2xi8>
}
// CHECK: 'quant.quantize': result shape must equal the input shape

// -----

func.func @quantize_compute_type(%x: tensor<2x4xf32>, %s: tensor<f32>) -> tensor<2x4xi8> {
  %q = quant.quantize %x, %s {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = i32} : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xi8>
  func.return %q : tensor<2x4xi8>
}
// CHECK: 'quant.quantize': compute_type must be a float type, got i32

// -----

func.func @dequantize_input_int(%w: tensor<2x4xf32>, %s: tensor<f32>) -> tensor<2x4xf32> {
  %d = quant.dequantize %w, %s {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  func.return %d : tensor<2x4xf32>
}
// CHECK: 'quant.dequantize': input must be an integer tensor, got tensor<2x4xf32>

// -----

func.func @dequantize_result_float(%w: tensor<2x4xi8>, %s: tensor<f32>) -> tensor<2x4xi32> {
  %d = quant.dequantize %w, %s {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f32>) -> tensor<2x4xi32>
  func.return %d : tensor<2x4xi32>
}
// CHECK: 'quant.dequantize': result must be a float tensor, got tensor<2x4xi32>

// -----

func.func @dequantize_shape(%w: tensor<2x4xi8>, %s: tensor<f32>) -> tensor<8xf32> {
  %d = quant.dequantize %w, %s {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f32>) -> tensor<8xf32>
  func.return %d : tensor<8xf32>
}
// CHECK: 'quant.dequantize': result shape must equal the input shape

// -----

func.func @dequantize_compute_type(%w: tensor<2x4xi8>, %s: tensor<f32>) -> tensor<2x4xf32> {
  %d = quant.dequantize %w, %s {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = i8} : (tensor<2x4xi8>, tensor<f32>) -> tensor<2x4xf32>
  func.return %d : tensor<2x4xf32>
}
// CHECK: 'quant.dequantize': compute_type must be a float type, got i8

// -----

func.func @choose_input_float(%x: tensor<3x8xi32>) -> (tensor<3x1xf32>, tensor<3x1xi64>) {
  %s, %zp = quant.choose_qparams %x {block_size = array<i64: 1, 8>, qmin = -128 : i64, qmax = 127 : i64, mapping = "asymmetric", eps = 0.0 : f64} : (tensor<3x8xi32>) -> (tensor<3x1xf32>, tensor<3x1xi64>)
  func.return %s, %zp : tensor<3x1xf32>, tensor<3x1xi64>
}
// CHECK: 'quant.choose_qparams': input must be a float tensor, got tensor<3x8xi32>

// -----

func.func @choose_mapping(%x: tensor<3x8xf32>) -> (tensor<3x1xf32>, tensor<3x1xi64>) {
  %s, %zp = quant.choose_qparams %x {block_size = array<i64: 1, 8>, qmin = -128 : i64, qmax = 127 : i64, mapping = "nearest", eps = 0.0 : f64} : (tensor<3x8xf32>) -> (tensor<3x1xf32>, tensor<3x1xi64>)
  func.return %s, %zp : tensor<3x1xf32>, tensor<3x1xi64>
}
// CHECK: 'quant.choose_qparams': mapping must be one of asymmetric, symmetric, symmetric_no_clipping_err, got 'nearest'

// -----

func.func @choose_scale_count(%x: tensor<3x8xf32>) -> (tensor<3xf32>, tensor<3xi64>) {
  %s, %zp = quant.choose_qparams %x {block_size = array<i64: 3, 8>, qmin = -128 : i64, qmax = 127 : i64, mapping = "asymmetric", eps = 0.0 : f64} : (tensor<3x8xf32>) -> (tensor<3xf32>, tensor<3xi64>)
  func.return %s, %zp : tensor<3xf32>, tensor<3xi64>
}
// CHECK: 'quant.choose_qparams': scale has 3 elements but block_size [3, 8] splits shape [3, 8] into 1 blocks

// -----

func.func @choose_range(%x: tensor<3x8xf32>) -> (tensor<3x1xf32>, tensor<3x1xi64>) {
  %s, %zp = quant.choose_qparams %x {block_size = array<i64: 1, 8>, qmin = 5 : i64, qmax = 5 : i64, mapping = "symmetric", eps = 0.0 : f64} : (tensor<3x8xf32>) -> (tensor<3x1xf32>, tensor<3x1xi64>)
  func.return %s, %zp : tensor<3x1xf32>, tensor<3x1xi64>
}
// CHECK: 'quant.choose_qparams': quant range [5, 5] must have qmin < qmax

// -----

func.func @choose_eps(%x: tensor<3x8xf32>) -> (tensor<3x1xf32>, tensor<3x1xi64>) {
  %s, %zp = quant.choose_qparams %x {block_size = array<i64: 1, 8>, qmin = -128 : i64, qmax = 127 : i64, mapping = "asymmetric", eps = -1.0 : f64} : (tensor<3x8xf32>) -> (tensor<3x1xf32>, tensor<3x1xi64>)
  func.return %s, %zp : tensor<3x1xf32>, tensor<3x1xi64>
}
// CHECK: 'quant.choose_qparams': eps must be non-negative

// -----

func.func @codes_int(%codes: tensor<4x32xf32>, %book: tensor<1x2x16x1xf32>) -> tensor<4x32xf32> {
  %w = quant.dequantize_codebook %codes, %book {nbits = 4 : i64, block_size = array<i64: -1, 16>} : (tensor<4x32xf32>, tensor<1x2x16x1xf32>) -> tensor<4x32xf32>
  func.return %w : tensor<4x32xf32>
}
// CHECK: 'quant.dequantize_codebook': codes must be an integer tensor, got tensor<4x32xf32>

// -----

func.func @codebook_float(%codes: tensor<4x32xui8>, %book: tensor<1x2x16x1xi8>) -> tensor<4x32xf32> {
  %w = quant.dequantize_codebook %codes, %book {nbits = 4 : i64, block_size = array<i64: -1, 16>} : (tensor<4x32xui8>, tensor<1x2x16x1xi8>) -> tensor<4x32xf32>
  func.return %w : tensor<4x32xf32>
}
// CHECK: 'quant.dequantize_codebook': codebook and result must be float tensors

// -----

func.func @nbits_range(%codes: tensor<4x32xui8>, %book: tensor<1x2x16x1xf32>) -> tensor<4x32xf32> {
  %w = quant.dequantize_codebook %codes, %book {nbits = 9 : i64, block_size = array<i64: -1, 16>} : (tensor<4x32xui8>, tensor<1x2x16x1xf32>) -> tensor<4x32xf32>
  func.return %w : tensor<4x32xf32>
}
// CHECK: 'quant.dequantize_codebook': nbits must be in [1, 8], got 9

// -----

func.func @codebook_result_shape(%codes: tensor<4x32xui8>, %book: tensor<1x2x16x1xf32>) -> tensor<32x4xf32> {
  %w = quant.dequantize_codebook %codes, %book {nbits = 4 : i64, block_size = array<i64: -1, 16>} : (tensor<4x32xui8>, tensor<1x2x16x1xf32>) -> tensor<32x4xf32>
  func.return %w : tensor<32x4xf32>
}
// CHECK: 'quant.dequantize_codebook': result shape must equal the codes shape

// -----

func.func @codebook_rank(%codes: tensor<4x32xui8>, %book: tensor<2x16x1xf32>) -> tensor<4x32xf32> {
  %w = quant.dequantize_codebook %codes, %book {nbits = 4 : i64, block_size = array<i64: -1, 16>} : (tensor<4x32xui8>, tensor<2x16x1xf32>) -> tensor<4x32xf32>
  func.return %w : tensor<4x32xf32>
}
// CHECK: 'quant.dequantize_codebook': codebook must have rank 4 (codes rank + 2), got 3

// -----

func.func @codebook_entries(%codes: tensor<4x32xui8>, %book: tensor<1x2x8x1xf32>) -> tensor<4x32xf32> {
  %w = quant.dequantize_codebook %codes, %book {nbits = 4 : i64, block_size = array<i64: -1, 16>} : (tensor<4x32xui8>, tensor<1x2x8x1xf32>) -> tensor<4x32xf32>
  func.return %w : tensor<4x32xf32>
}
// CHECK: 'quant.dequantize_codebook': codebook dimension -2 must be 2^nbits = 16, got 8

// -----

func.func @codebook_vector(%codes: tensor<4x32xui8>, %book: tensor<1x2x16x2xf32>) -> tensor<4x32xf32> {
  %w = quant.dequantize_codebook %codes, %book {nbits = 4 : i64, block_size = array<i64: -1, 16>} : (tensor<4x32xui8>, tensor<1x2x16x2xf32>) -> tensor<4x32xf32>
  func.return %w : tensor<4x32xf32>
}
// CHECK: 'quant.dequantize_codebook': only scalar LUT entries are supported (vector size 1), got 2

// -----

func.func @codebook_block_rank(%codes: tensor<4x32xui8>, %book: tensor<1x2x16x1xf32>) -> tensor<4x32xf32> {
  %w = quant.dequantize_codebook %codes, %book {nbits = 4 : i64, block_size = array<i64: 16>} : (tensor<4x32xui8>, tensor<1x2x16x1xf32>) -> tensor<4x32xf32>
  func.return %w : tensor<4x32xf32>
}
// CHECK: 'quant.dequantize_codebook': block_size must have 2 entries

// -----

func.func @codebook_block_divides(%codes: tensor<4x32xui8>, %book: tensor<1x2x16x1xf32>) -> tensor<4x32xf32> {
  %w = quant.dequantize_codebook %codes, %book {nbits = 4 : i64, block_size = array<i64: -1, 12>} : (tensor<4x32xui8>, tensor<1x2x16x1xf32>) -> tensor<4x32xf32>
  func.return %w : tensor<4x32xf32>
}
// CHECK: 'quant.dequantize_codebook': block_size[1] = 12 must be positive and divide dimension 1 (32)

// -----

func.func @codebook_leading_dims(%codes: tensor<4x32xui8>, %book: tensor<1x4x16x1xf32>) -> tensor<4x32xf32> {
  %w = quant.dequantize_codebook %codes, %book {nbits = 4 : i64, block_size = array<i64: -1, 16>} : (tensor<4x32xui8>, tensor<1x4x16x1xf32>) -> tensor<4x32xf32>
  func.return %w : tensor<4x32xf32>
}
// CHECK: 'quant.dequantize_codebook': codebook leading dims [1, 4] must equal shape / block_size = [1, 2]
