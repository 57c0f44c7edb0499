// RUN: qopt-opt %s -p convert-to-coreml --split-input-file | filecheck %s
// RUN: qopt-opt %s -p 'convert-to-coreml{target=iOS17}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=IOS17
// RUN: qopt-opt %s -p 'convert-to-coreml{target=iOS16}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=IOS16
// Lowering rules of leftover quant ops (not fused by fuse-quant).

// Standalone static quantize / dequantize (per-tensor), rounded as torch does:
// x * f32(1 / scale) written out, then MIL's quantize (which divides) with scale
// 1; a range narrower than int8 clips the scaled value to [qmin - zp, qmax - zp]
// first (MIL clips to the full type range only).
// CHECK-LABEL: func.func @static_qdq(
// CHECK:         %[[INV:.*]] = coreml.const dense<2.000000e+01> : tensor<f32>
// CHECK-NEXT:    %[[V:.*]] = coreml.mul %x, %[[INV]]
// CHECK-NEXT:    %[[C:.*]] = coreml.clip %[[V]] {alpha = -1.300000e+02 : f64, beta = 1.240000e+02 : f64}
// CHECK-NEXT:    %[[Z:.*]] = coreml.const dense<3> : tensor<i8>
// CHECK-NEXT:    %[[S:.*]] = coreml.const dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[Q:.*]] = coreml.quantize %[[C]], %[[S]] zero_point %[[Z]] {output_dtype = "int8"
// CHECK:         %[[D:.*]] = coreml.dequantize %[[Q]], %{{.*}} zero_point %{{.*}}
// CHECK-NEXT:    func.return %[[D]]
// IOS17-LABEL: func.func @static_qdq(
// IOS17:         coreml.quantize
// IOS17:         coreml.dequantize
// IOS16: 'quant.quantize' needs static activation quantization (quantize), which CoreML has from iOS17; the target is iOS16; the lowest target that can is iOS17
func.func @static_qdq(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %s = arith.constant dense<5.000000e-02> : tensor<f32>
  %z = arith.constant dense<3> : tensor<i8>
  %q = quant.quantize %x, %s, %z {block_size = array<i64: 2, 4>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<2x4xf32>, tensor<f32>, tensor<i8>) -> tensor<2x4xi8>
  %d = quant.dequantize %q, %s, %z {block_size = array<i64: 2, 4>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f32>, tensor<i8>) -> tensor<2x4xf32>
  func.return %d : tensor<2x4xf32>
}

// -----

// A dequantize of a constant weight keeps it compressed (per-channel int8).
// CHECK-LABEL: func.func @weight_dq(
// CHECK:         %[[D:.*]] = coreml.const dense<2> : tensor<3x4xi8>
// CHECK-NEXT:    %[[S:.*]] = coreml.const dense<{{\[\[}}2.500000e-01], [5.000000e-01], [1.000000e+00]]> : tensor<3x1xf32>
// CHECK-NEXT:    %[[W:.*]] = coreml.constexpr_blockwise_shift_scale %[[D]], %[[S]] :
// CHECK-NEXT:    coreml.const dense<0.000000e+00>
// CHECK-NEXT:    coreml.linear %x, %[[W]], %{{.*}}
// IOS17-LABEL: func.func @weight_dq(
// IOS17:         %[[W:.*]] = coreml.constexpr_affine_dequantize {{.*}} {axis = 0 : i64} : (tensor<3x4xi8>, tensor<3xi8>, tensor<3xf32>)
// IOS17-NEXT:    coreml.const dense<0.000000e+00>
// IOS17-NEXT:    coreml.linear %x, %[[W]], %{{.*}}
// IOS16-LABEL: func.func @weight_dq(
// IOS16:         %[[W:.*]] = coreml.constexpr_affine_dequantize {{.*}} {axis = 0 : i64} : (tensor<3x4xi8>, tensor<3xi8>, tensor<3xf32>)
// IOS16-NEXT:    coreml.const dense<0.000000e+00>
// IOS16-NEXT:    coreml.linear %x, %[[W]], %{{.*}}
func.func @weight_dq(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<2> : tensor<3x4xi8>
  %s = arith.constant dense<[2.500000e-01, 5.000000e-01, 1.000000e+00]> : tensor<3xf32>
  %d = quant.dequantize %w, %s {block_size = array<i64: 1, 4>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<3x4xi8>, tensor<3xf32>) -> tensor<3x4xf32>
  %y = aten.linear %x, %d : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// Per-tensor weight parameters are scalars on iOS16/17 (a length-1 vector would
// have to match dim[axis]).
// CHECK-LABEL: func.func @weight_dq_tensor(
// CHECK:         coreml.constexpr_blockwise_shift_scale {{.*}} : (tensor<3x4xi8>, tensor<1x1xf32>) -> tensor<3x4xf32>
// IOS17-LABEL: func.func @weight_dq_tensor(
// IOS17:         coreml.constexpr_affine_dequantize {{.*}} {axis = 0 : i64} : (tensor<3x4xi8>, tensor<i8>, tensor<f32>) -> tensor<3x4xf32>
// IOS16-LABEL: func.func @weight_dq_tensor(
// IOS16:         coreml.constexpr_affine_dequantize {{.*}} {axis = 0 : i64} : (tensor<3x4xi8>, tensor<i8>, tensor<f32>) -> tensor<3x4xf32>
func.func @weight_dq_tensor(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<2> : tensor<3x4xi8>
  %s = arith.constant dense<2.500000e-01> : tensor<f32>
  %d = quant.dequantize %w, %s {block_size = array<i64: 3, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<3x4xi8>, tensor<f32>) -> tensor<3x4xf32>
  %y = aten.linear %x, %d : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// dequantize_codebook: constexpr_lut_to_dense (uint2 indices; packed before iOS18).
// CHECK-LABEL: func.func @codebook(
// CHECK:         %[[W:.*]] = coreml.constexpr_lut_to_dense {{.*}} : (tensor<3x4xui2>, tensor<1x1x4x1xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    coreml.const dense<0.000000e+00>
// CHECK-NEXT:    coreml.linear %x, %[[W]], %{{.*}}
// IOS17-LABEL: func.func @codebook(
// IOS17:         %[[I:.*]] = coreml.const dense<[228, 27, 85]> : tensor<3xui8>
// IOS17-NEXT:    %[[L:.*]] = coreml.const dense<[0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<4xf32>
// IOS17-NEXT:    %[[W:.*]] = coreml.constexpr_lut_to_dense %[[I]], %[[L]] {shape = array<i64: 3, 4>}
// IOS16-LABEL: func.func @codebook(
// IOS16:         coreml.constexpr_lut_to_dense {{.*}} {shape = array<i64: 3, 4>} : (tensor<3xui8>, tensor<4xf32>)
func.func @codebook(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %c = arith.constant dense<[[0, 1, 2, 3], [3, 2, 1, 0], [1, 1, 1, 1]]> : tensor<3x4xui8>
  %book = arith.constant dense<[[[[0.0], [1.0], [2.0], [3.0]]]]> : tensor<1x1x4x1xf32>
  %w = quant.dequantize_codebook %c, %book {nbits = 2 : i64, block_size = array<i64: -1, -1>} : (tensor<3x4xui8>, tensor<1x1x4x1xf32>) -> tensor<3x4xf32>
  %y = aten.linear %x, %w : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// A dynamic chain (choose_qparams -> quantize -> dequantize) is float on Core ML: erased.
// CHECK-LABEL: func.func @dynamic(
// CHECK-NEXT:    %[[R:.*]] = coreml.relu %x
// CHECK-NEXT:    func.return %[[R]]
// IOS17-LABEL: func.func @dynamic(
// IOS17-NEXT:    coreml.relu %x
// IOS16-LABEL: func.func @dynamic(
// IOS16-NEXT:    coreml.relu %x
func.func @dynamic(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %s, %z = quant.choose_qparams %x {block_size = array<i64: 1, 4>, qmin = -128 : i64, qmax = 127 : i64, mapping = "asymmetric", eps = 1.1920928955078125e-07 : f64} : (tensor<2x4xf32>) -> (tensor<2x1xf32>, tensor<2x1xi64>)
  %q = quant.quantize %x, %s, %z {block_size = array<i64: 1, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xi64>) -> tensor<2x4xi8>
  %d = quant.dequantize %q, %s, %z {block_size = array<i64: 1, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<2x1xf32>, tensor<2x1xi64>) -> tensor<2x4xf32>
  %r = aten.relu %d : (tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}
