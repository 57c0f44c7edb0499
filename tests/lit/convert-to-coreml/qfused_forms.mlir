// RUN: qopt-opt %s -p convert-to-coreml --split-input-file | filecheck %s
// RUN: qopt-opt %s -p 'convert-to-coreml{target=iOS17}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=IOS17
// RUN: qopt-opt %s -p 'convert-to-coreml{target=iOS16}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=IOS16
// RUN: qopt-opt %s -p 'convert-to-coreml{dynamic_activations=float}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=FLOAT
// Lowering rules of every qfused op form, per deployment target. A scheme a target
// cannot express is an error naming the lowest target that can (never a float fallback).

// 4-bit group-wise asymmetric: int4 data and an int4 offset on iOS18; an error before.
// CHECK-LABEL: func.func @linear_w4g_asym(
// CHECK:         %[[D:.*]] = coreml.const dense_resource<{{.*}}> : tensor<3x4xi4>
// CHECK-NEXT:    %[[S:.*]] = coreml.const dense<5.000000e-01> : tensor<3x2xf32>
// CHECK-NEXT:    %[[Z:.*]] = coreml.const dense_resource<{{.*}}> : tensor<3x2xi4>
// CHECK-NEXT:    %[[W:.*]] = coreml.constexpr_blockwise_shift_scale %[[D]], %[[S]], %[[Z]]
// CHECK-NEXT:    coreml.const dense<0.000000e+00>
// CHECK-NEXT:    coreml.linear %x, %[[W]], %{{.*}}
// IOS17: 'qfused.linear' (scheme linear_q4gaw) has 4-bit affine (block [1, 2]) weights, which CoreML iOS17 cannot express (int4 weights exist from iOS18); the lowest target that can is iOS18
// IOS16: 'qfused.linear' (scheme linear_q4gaw) has 4-bit affine (block [1, 2]) weights, which CoreML iOS16 cannot express (int4 weights exist from iOS18); the lowest target that can is iOS18
func.func @linear_w4g_asym(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<[[1, 2, 3, 4], [-1, -2, -3, -4], [0, 7, -8, 1]]> : tensor<3x4xi8>
  %s = arith.constant dense<5.000000e-01> : tensor<3x2xf32>
  %z = arith.constant dense<[[1, 0], [2, -1], [0, 3]]> : tensor<3x2xi8>
  %y = qfused.linear %x, %w, %s zero_point %z {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 2]>, kernel = "linear_q4gaw"} : tensor<2x4xf32>, tensor<3x4xi8>, tensor<3x2xf32> zero_point tensor<3x2xi8> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// int8 per-channel with a zero point: an int8 offset on iOS18; on iOS16/17
// constexpr_affine_dequantize with 1-D zero point and scale along axis 0.
// CHECK-LABEL: func.func @linear_w8c_asym(
// CHECK:         %[[D:.*]] = coreml.const dense<3> : tensor<3x4xi8>
// CHECK-NEXT:    %[[S:.*]] = coreml.const dense<{{\[\[}}2.500000e-01], [5.000000e-01], [1.000000e+00]]> : tensor<3x1xf32>
// CHECK-NEXT:    %[[Z:.*]] = coreml.const dense<{{\[\[}}1], [-2], [3]]> : tensor<3x1xi8>
// CHECK-NEXT:    %[[W:.*]] = coreml.constexpr_blockwise_shift_scale %[[D]], %[[S]], %[[Z]]
// CHECK-NEXT:    coreml.const dense<0.000000e+00>
// CHECK-NEXT:    coreml.linear %x, %[[W]], %{{.*}}
// IOS17-LABEL: func.func @linear_w8c_asym(
// IOS17-SAME:    attributes {coreml.opset = "iOS17"}
// IOS17:         %[[D:.*]] = coreml.const dense<3> : tensor<3x4xi8>
// IOS17-NEXT:    %[[Z:.*]] = coreml.const dense<[1, -2, 3]> : tensor<3xi8>
// IOS17-NEXT:    %[[S:.*]] = coreml.const dense<[2.500000e-01, 5.000000e-01, 1.000000e+00]> : tensor<3xf32>
// IOS17-NEXT:    %[[W:.*]] = coreml.constexpr_affine_dequantize %[[D]], %[[Z]], %[[S]] {axis = 0 : i64}
// IOS17-NEXT:    coreml.const dense<0.000000e+00>
// IOS17-NEXT:    coreml.linear %x, %[[W]], %{{.*}}
// IOS16-LABEL: func.func @linear_w8c_asym(
// IOS16-SAME:    attributes {coreml.opset = "iOS16"}
// IOS16:         %[[W:.*]] = coreml.constexpr_affine_dequantize %{{.*}}, %{{.*}}, %{{.*}} {axis = 0 : i64}
// IOS16-NEXT:    coreml.const dense<0.000000e+00>
// IOS16-NEXT:    coreml.linear %x, %[[W]], %{{.*}}
func.func @linear_w8c_asym(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<3> : tensor<3x4xi8>
  %s = arith.constant dense<[[2.500000e-01], [5.000000e-01], [1.000000e+00]]> : tensor<3x1xf32>
  %z = arith.constant dense<[[1], [-2], [3]]> : tensor<3x1xi8>
  %y = qfused.linear %x, %w, %s zero_point %z {weight_scheme = #qfused.affine<bits = 8, range = [-128, 127], block = [1, 4]>, kernel = "linear_q8caw"} : tensor<2x4xf32>, tensor<3x4xi8>, tensor<3x1xf32> zero_point tensor<3x1xi8> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// A 4-bit whole-tensor palette: uint4 indices on iOS18; bit-packed uint8
// indices (first code in the low bits), a flat table and the shape before.
// CHECK-LABEL: func.func @linear_lut4(
// CHECK:         %[[I:.*]] = coreml.const dense_resource<{{.*}}> : tensor<3x4xui4>
// CHECK-NEXT:    %[[L:.*]] = coreml.const dense<{{.*}}> : tensor<1x1x16x1xf32>
// CHECK-NEXT:    %[[W:.*]] = coreml.constexpr_lut_to_dense %[[I]], %[[L]] : (tensor<3x4xui4>, tensor<1x1x16x1xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    coreml.const dense<0.000000e+00>
// CHECK-NEXT:    coreml.linear %x, %[[W]], %{{.*}}
// IOS17-LABEL: func.func @linear_lut4(
// IOS17:         %[[I:.*]] = coreml.const dense<[16, 242, 67, 101, 135, 169]> : tensor<6xui8>
// IOS17-NEXT:    %[[L:.*]] = coreml.const dense<{{.*}}> : tensor<16xf32>
// IOS17-NEXT:    %[[W:.*]] = coreml.constexpr_lut_to_dense %[[I]], %[[L]] {shape = array<i64: 3, 4>}
// IOS17-NEXT:    coreml.const dense<0.000000e+00>
// IOS17-NEXT:    coreml.linear %x, %[[W]], %{{.*}}
// IOS16-LABEL: func.func @linear_lut4(
// IOS16:         coreml.constexpr_lut_to_dense {{.*}} {shape = array<i64: 3, 4>} : (tensor<6xui8>, tensor<16xf32>) -> tensor<3x4xf32>
func.func @linear_lut4(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %c = arith.constant dense<[[0, 1, 2, 15], [3, 4, 5, 6], [7, 8, 9, 10]]> : tensor<3x4xui8>
  %book = arith.constant dense<[[[[0.0], [1.0], [2.0], [3.0], [4.0], [5.0], [6.0], [7.0], [8.0], [9.0], [10.0], [11.0], [12.0], [13.0], [14.0], [15.0]]]]> : tensor<1x1x16x1xf32>
  %y = qfused.linear %x, %c, %book {weight_scheme = #qfused.lut<nbits = 4, block = [-1, -1]>, kernel = "linear_lut4w"} : tensor<2x4xf32>, tensor<3x4xui8>, tensor<1x1x16x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// A 3-bit per-block palette: uint3 indices on iOS18; an error before.
// CHECK-LABEL: func.func @linear_lut3(
// CHECK:         %[[I:.*]] = coreml.const dense_resource<{{.*}}> : tensor<3x8xui3>
// CHECK-NEXT:    %[[L:.*]] = coreml.const dense<2.500000e-01> : tensor<1x2x8x1xf32>
// CHECK-NEXT:    %[[W:.*]] = coreml.constexpr_lut_to_dense %[[I]], %[[L]]
// CHECK-NEXT:    coreml.const dense<0.000000e+00>
// CHECK-NEXT:    coreml.linear %x, %[[W]], %{{.*}}
// IOS17: 'qfused.linear' (scheme linear_lut3w) has 3-bit LUT (block [-1, 4]) weights, which CoreML iOS17 cannot express (per-block palettes need iOS18); the lowest target that can is iOS18
// IOS16: 'qfused.linear' (scheme linear_lut3w) has 3-bit LUT (block [-1, 4]) weights, which CoreML iOS16 cannot express (per-block palettes need iOS18); the lowest target that can is iOS18
func.func @linear_lut3(%x: tensor<2x8xf32>) -> tensor<2x3xf32> {
  %c = arith.constant dense<1> : tensor<3x8xui8>
  %book = arith.constant dense<2.500000e-01> : tensor<1x2x8x1xf32>
  %y = qfused.linear %x, %c, %book {weight_scheme = #qfused.lut<nbits = 3, block = [-1, 4]>, kernel = "linear_lut3w"} : tensor<2x8xf32>, tensor<3x8xui8>, tensor<1x2x8x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// A 3-bit whole-tensor palette: fine on iOS18; iOS16/17 palettes have 1, 2, 4, 6 or 8 bits.
// CHECK-LABEL: func.func @linear_lut3_tensor(
// CHECK:         coreml.constexpr_lut_to_dense {{.*}} : (tensor<3x8xui3>, tensor<1x1x8x1xf32>) -> tensor<3x8xf32>
// IOS17: 'qfused.linear' (scheme linear_lut3w) has 3-bit LUT (block [-1, -1]) weights, which CoreML iOS17 cannot express (3-bit palettes need iOS18); the lowest target that can is iOS18
// IOS16: 'qfused.linear' (scheme linear_lut3w) has 3-bit LUT (block [-1, -1]) weights, which CoreML iOS16 cannot express (3-bit palettes need iOS18); the lowest target that can is iOS18
func.func @linear_lut3_tensor(%x: tensor<2x8xf32>) -> tensor<2x3xf32> {
  %c = arith.constant dense<1> : tensor<3x8xui8>
  %book = arith.constant dense<2.500000e-01> : tensor<1x1x8x1xf32>
  %y = qfused.linear %x, %c, %book {weight_scheme = #qfused.lut<nbits = 3, block = [-1, -1]>, kernel = "linear_lut3w"} : tensor<2x8xf32>, tensor<3x8xui8>, tensor<1x1x8x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// Static int8 input: dequantize, float linear, clip (clamp), quantize (requant).
// CHECK-LABEL: func.func @linear_static_requant_clamp(
// CHECK:         %[[XZ:.*]] = coreml.const dense<3> : tensor<i8>
// CHECK-NEXT:    %[[XS:.*]] = coreml.const dense<5.000000e-02> : tensor<f32>
// CHECK-NEXT:    %[[X:.*]] = coreml.dequantize %x, %[[XS]] zero_point %[[XZ]]
// CHECK:         %[[W:.*]] = coreml.constexpr_blockwise_shift_scale %{{[^,]*}}, %{{[^,]*}} :
// CHECK-NEXT:    coreml.const dense<0.000000e+00>
// CHECK-NEXT:    %[[Y:.*]] = coreml.linear %[[X]], %[[W]], %{{.*}}
// CHECK-NEXT:    %[[C:.*]] = coreml.clip %[[Y]] {alpha = 0.000000e+00 : f64, beta = 6.000000e+00 : f64}
// CHECK-NEXT:    %[[INV:.*]] = coreml.const dense<1.000000e+01> : tensor<f32>
// CHECK-NEXT:    %[[V:.*]] = coreml.mul %[[C]], %[[INV]]
// CHECK-NEXT:    %[[OZ:.*]] = coreml.const dense<-128> : tensor<i8>
// CHECK-NEXT:    %[[OS:.*]] = coreml.const dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[Q:.*]] = coreml.quantize %[[V]], %[[OS]] zero_point %[[OZ]] {output_dtype = "int8"
// CHECK-NEXT:    func.return %[[Q]] : tensor<2x3xi8>
// IOS17-LABEL: func.func @linear_static_requant_clamp(
// IOS17:         coreml.dequantize %x,
// IOS17:         coreml.constexpr_affine_dequantize
// IOS17:         coreml.clip
// IOS17:         coreml.quantize
// IOS16: 'qfused.linear' (scheme linear_q8ta_q8csw_q8to) needs static activation quantization (dequantize), which CoreML has from iOS17; the target is iOS16; the lowest target that can is iOS17
func.func @linear_static_requant_clamp(%x: tensor<2x4xi8>) -> tensor<2x3xi8> {
  %w = arith.constant dense<1> : tensor<3x4xi8>
  %s = arith.constant dense<5.000000e-01> : tensor<3x1xf32>
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 4]>, act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, requant = #qfused.static<scale = 0.1, zero_point = -128, range = [-128, 127]>, clamp_min = 0.0 : f64, clamp_max = 6.0 : f64, kernel = "linear_q8ta_q8csw_q8to"} : tensor<2x4xi8>, tensor<3x4xi8>, tensor<3x1xf32> -> tensor<2x3xi8>
  func.return %y : tensor<2x3xi8>
}

// -----

// Static activations on a float input: quantize + dequantize around the float
// linear (with bias); clamp_min = 0 alone is a relu; no requant: float output.
// CHECK-LABEL: func.func @linear_static_float(
// CHECK:         %[[B:.*]] = coreml.const dense<1.000000e+00> : tensor<3xf32>
// CHECK:         %[[XV:.*]] = coreml.mul %x,
// CHECK:         %[[Q:.*]] = coreml.quantize %[[XV]], %{{.*}} zero_point %{{.*}} {output_dtype = "int8"
// CHECK:         %[[X:.*]] = coreml.dequantize %[[Q]], %{{.*}} zero_point %{{.*}}
// CHECK:         %[[W:.*]] = coreml.constexpr_blockwise_shift_scale
// CHECK-NEXT:    %[[Y:.*]] = coreml.linear %[[X]], %[[W]], %[[B]]
// CHECK-NEXT:    %[[R:.*]] = coreml.relu %[[Y]]
// CHECK-NEXT:    func.return %[[R]] : tensor<2x3xf32>
// IOS17-LABEL: func.func @linear_static_float(
// IOS17:         %[[XV:.*]] = coreml.mul %x,
// IOS17:         coreml.quantize %[[XV]],
// IOS17:         coreml.constexpr_affine_dequantize
// IOS17:         coreml.linear
// IOS16: 'qfused.linear' (scheme linear_q8ta_q8csw) needs static activation quantization (quantize), which CoreML has from iOS17; the target is iOS16; the lowest target that can is iOS17
func.func @linear_static_float(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<1> : tensor<3x4xi8>
  %s = arith.constant dense<5.000000e-01> : tensor<3x1xf32>
  %b = arith.constant dense<1.000000e+00> : tensor<3xf32>
  %y = qfused.linear %x, %w, %s bias %b {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 4]>, act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, clamp_min = 0.0 : f64, kernel = "linear_q8ta_q8csw"} : tensor<2x4xf32>, tensor<3x4xi8>, tensor<3x1xf32> bias tensor<3xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// Dynamic activations: torch's per-token choose_qparams, quantize and dequantize in
// MIL float ops (no MIL quantize: its rounding is not torch's); the weight stays
// compressed. With dynamic_activations=float the activations stay float.
// CHECK-LABEL: func.func @linear_dynamic(
// CHECK-NOT:     coreml.quantize
// CHECK:         %[[MIN:.*]] = coreml.reduce_min %x {axes = array<i64: 1>, keep_dims = true}
// CHECK:         %[[MAX:.*]] = coreml.reduce_max %x {axes = array<i64: 1>, keep_dims = true}
// CHECK:         %[[SPAN:.*]] = coreml.sub
// CHECK:         %[[SCALE0:.*]] = coreml.real_div %[[SPAN]], %{{.*}}
// CHECK:         %[[SCALE:.*]] = coreml.maximum %[[SCALE0]], %{{.*}}
// CHECK:         %[[ZP:.*]] = coreml.clip %{{.*}} {alpha = -1.280000e+02 : f64, beta = 1.270000e+02 : f64} : (tensor<2x1xf32>)
// CHECK:         %[[INV:.*]] = coreml.real_div %{{.*}}, %[[SCALE]]
// CHECK:         coreml.mul %x, %[[INV]]
// CHECK:         %[[Q:.*]] = coreml.clip %{{.*}} {alpha = -1.280000e+02 : f64, beta = 1.270000e+02 : f64} : (tensor<2x4xf32>)
// CHECK-NEXT:    %[[C:.*]] = coreml.sub %[[Q]], %[[ZP]]
// CHECK-NEXT:    %[[X:.*]] = coreml.mul %[[C]], %[[SCALE]]
// CHECK:         %[[W:.*]] = coreml.constexpr_blockwise_shift_scale
// CHECK-NEXT:    coreml.const dense<0.000000e+00>
// CHECK-NEXT:    coreml.linear %[[X]], %[[W]], %{{.*}}
// FLOAT-LABEL: func.func @linear_dynamic(
// FLOAT-NOT:     coreml.reduce_max
// FLOAT:         %[[W:.*]] = coreml.constexpr_blockwise_shift_scale
// FLOAT-NEXT:    coreml.const dense<0.000000e+00>
// FLOAT-NEXT:    coreml.linear %x, %[[W]], %{{.*}}
// IOS17-LABEL: func.func @linear_dynamic(
// IOS17-NOT:     coreml.quantize
// IOS17:         coreml.reduce_max %x
// IOS17:         %[[W:.*]] = coreml.constexpr_affine_dequantize
// IOS17-NEXT:    coreml.const dense<0.000000e+00>
// IOS17-NEXT:    coreml.linear %{{.*}}, %[[W]], %{{.*}}
// IOS16-LABEL: func.func @linear_dynamic(
// IOS16:         coreml.reduce_max %x
// IOS16:         %[[W:.*]] = coreml.constexpr_affine_dequantize
// IOS16-NEXT:    coreml.const dense<0.000000e+00>
// IOS16-NEXT:    coreml.linear %{{.*}}, %[[W]], %{{.*}}
func.func @linear_dynamic(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<1> : tensor<3x4xi8>
  %s = arith.constant dense<5.000000e-01> : tensor<3x1xf32>
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 4]>, act = #qfused.dynamic<per_token, asymmetric, range = [-128, 127], eps = 1.1920928955078125e-07, scale_type = f32>, kernel = "linear_dq8ca_q8csw"} : tensor<2x4xf32>, tensor<3x4xi8>, tensor<3x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// Static conv2d: quantize/dequantize input, compressed weight, conv, relu, requant.
// CHECK-LABEL: func.func @conv2d_static(
// CHECK:         %[[B:.*]] = coreml.const dense<1.000000e+00> : tensor<4xf32>
// CHECK:         %[[XV:.*]] = coreml.mul %x,
// CHECK:         %[[Q:.*]] = coreml.quantize %[[XV]],
// CHECK:         %[[X:.*]] = coreml.dequantize %[[Q]],
// CHECK:         %[[W:.*]] = coreml.constexpr_blockwise_shift_scale {{.*}} -> tensor<4x2x3x3xf32>
// CHECK-NEXT:    %[[Y:.*]] = coreml.conv %[[X]], %[[W]], %[[B]] {strides = array<i64: 1, 1>, pad_type = "custom", pad = array<i64: 1, 1, 1, 1>
// CHECK-NEXT:    %[[R:.*]] = coreml.relu %[[Y]]
// CHECK:         %[[RV:.*]] = coreml.mul %[[R]],
// CHECK:         %[[O:.*]] = coreml.quantize %[[RV]], {{.*}} {output_dtype = "int8"
// CHECK-NEXT:    func.return %[[O]] : tensor<1x4x4x4xi8>
// IOS17-LABEL: func.func @conv2d_static(
// IOS17:         %[[W:.*]] = coreml.constexpr_affine_dequantize {{.*}} {axis = 0 : i64} : (tensor<4x2x3x3xi8>, tensor<4xi8>, tensor<4xf32>)
// IOS17-NEXT:    coreml.conv %{{.*}}, %[[W]], %{{.*}}
// IOS16: 'qfused.conv2d' (scheme conv2d_q8ta_q8csw_q8to) needs static activation quantization (quantize), which CoreML has from iOS17; the target is iOS16; the lowest target that can is iOS17
func.func @conv2d_static(%x: tensor<1x2x4x4xf32>) -> tensor<1x4x4x4xi8> {
  %w = arith.constant dense<1> : tensor<4x2x3x3xi8>
  %s = arith.constant dense<2.500000e-01> : tensor<4x1x1x1xf32>
  %b = arith.constant dense<1.000000e+00> : tensor<4xf32>
  %y = qfused.conv2d %x, %w, %s bias %b {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 2, 3, 3]>, act = #qfused.static<scale = 0.05, zero_point = -3, range = [-128, 127]>, requant = #qfused.static<scale = 0.02, zero_point = -128, range = [-128, 127]>, clamp_min = 0.0 : f64, stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64, kernel = "conv2d_q8ta_q8csw_q8to"} : tensor<1x2x4x4xf32>, tensor<4x2x3x3xi8>, tensor<4x1x1x1xf32> bias tensor<4xf32> -> tensor<1x4x4x4xi8>
  func.return %y : tensor<1x4x4x4xi8>
}

// -----

// Affine embedding: gather from the compressed table, i64 indices become i32.
// CHECK-LABEL: func.func @embedding_affine(%i: tensor<1x3xi32>)
// CHECK:         %[[W:.*]] = coreml.constexpr_blockwise_shift_scale
// CHECK-NEXT:    coreml.gather %[[W]], %i {axis = 0 : i64}
// IOS17-LABEL: func.func @embedding_affine(%i: tensor<1x3xi32>)
// IOS17:         %[[W:.*]] = coreml.constexpr_affine_dequantize {{.*}} {axis = 0 : i64}
// IOS17-NEXT:    coreml.gather %[[W]], %i {axis = 0 : i64}
// IOS16-LABEL: func.func @embedding_affine(
// IOS16:         %[[W:.*]] = coreml.constexpr_affine_dequantize
// IOS16-NEXT:    coreml.gather %[[W]], %i
func.func @embedding_affine(%i: tensor<1x3xi64>) -> tensor<1x3x4xf32> {
  %w = arith.constant dense<2> : tensor<5x4xi8>
  %s = arith.constant dense<5.000000e-01> : tensor<5x1xf32>
  %z = arith.constant dense<1> : tensor<5x1xi8>
  %y = qfused.embedding %i, %w, %s zero_point %z {weight_scheme = #qfused.affine<bits = 8, range = [-128, 127], block = [1, 4]>, kernel = "embedding_q8caw"} : tensor<1x3xi64>, tensor<5x4xi8>, tensor<5x1xf32> zero_point tensor<5x1xi8> -> tensor<1x3x4xf32>
  func.return %y : tensor<1x3x4xf32>
}

// -----

// LUT embedding.
// CHECK-LABEL: func.func @embedding_lut(
// CHECK:         %[[W:.*]] = coreml.constexpr_lut_to_dense {{.*}} : (tensor<5x4xui4>, tensor<1x1x16x1xf32>)
// CHECK-NEXT:    coreml.gather %[[W]], %i {axis = 0 : i64}
// IOS17-LABEL: func.func @embedding_lut(
// IOS17:         %[[W:.*]] = coreml.constexpr_lut_to_dense {{.*}} {shape = array<i64: 5, 4>} : (tensor<10xui8>, tensor<16xf32>)
// IOS17-NEXT:    coreml.gather %[[W]], %i
// IOS16-LABEL: func.func @embedding_lut(
// IOS16:         %[[W:.*]] = coreml.constexpr_lut_to_dense {{.*}} {shape = array<i64: 5, 4>}
// IOS16-NEXT:    coreml.gather %[[W]], %i
func.func @embedding_lut(%i: tensor<3xi32>) -> tensor<3x4xf32> {
  %c = arith.constant dense<[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15], [0, 0, 0, 0]]> : tensor<5x4xui8>
  %book = arith.constant dense<5.000000e-01> : tensor<1x1x16x1xf32>
  %y = qfused.embedding %i, %c, %book {weight_scheme = #qfused.lut<nbits = 4, block = [-1, -1]>, kernel = "embedding_lut4w"} : tensor<3xi32>, tensor<5x4xui8>, tensor<1x1x16x1xf32> -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}

// -----

// Quantized add: dequantize the int8 lhs, quantize+dequantize the float rhs,
// alpha scales the rhs, relu (clamp_min 0), requantize.
// CHECK-LABEL: func.func @add(
// CHECK:         %[[A:.*]] = coreml.dequantize %a,
// CHECK:         %[[BV:.*]] = coreml.mul %b,
// CHECK:         %[[QB:.*]] = coreml.quantize %[[BV]],
// CHECK:         %[[B:.*]] = coreml.dequantize %[[QB]],
// CHECK-NEXT:    %[[ALPHA:.*]] = coreml.const dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[B2:.*]] = coreml.mul %[[B]], %[[ALPHA]]
// CHECK-NEXT:    %[[S:.*]] = coreml.add %[[A]], %[[B2]]
// CHECK-NEXT:    %[[R:.*]] = coreml.relu %[[S]]
// CHECK:         %[[RV:.*]] = coreml.mul %[[R]],
// CHECK:         %[[O:.*]] = coreml.quantize %[[RV]], {{.*}} {output_dtype = "int8"
// CHECK-NEXT:    func.return %[[O]]
// IOS17-LABEL: func.func @add(
// IOS17:         coreml.add
// IOS16: 'qfused.add' (scheme add_q8ta_q8ta_q8to) needs static activation quantization (dequantize), which CoreML has from iOS17; the target is iOS16; the lowest target that can is iOS17
func.func @add(%a: tensor<2x4xi8>, %b: tensor<4xf32>) -> tensor<2x4xi8> {
  %y = qfused.add %a, %b {lhs_act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, rhs_act = #qfused.static<scale = 0.1, zero_point = -2, range = [-128, 127]>, alpha = 2.0 : f64, requant = #qfused.static<scale = 0.15, zero_point = 0, range = [-128, 127]>, clamp_min = 0.0 : f64, kernel = "add_q8ta_q8ta_q8to"} : tensor<2x4xi8>, tensor<4xf32> -> tensor<2x4xi8>
  func.return %y : tensor<2x4xi8>
}

// -----

// A [0, 255] activation range quantizes to uint8; no requant: float result.
// CHECK-LABEL: func.func @add_uint8(
// CHECK:         %[[AV:.*]] = coreml.mul %a,
// CHECK:         coreml.quantize %[[AV]], {{.*}} {output_dtype = "int8"
// CHECK:         %[[BV:.*]] = coreml.mul %b,
// CHECK:         %[[Z:.*]] = coreml.const dense<2> : tensor<ui8>
// CHECK:         coreml.quantize %[[BV]], {{.*}} zero_point %[[Z]] {output_dtype = "uint8"
// CHECK:         %[[S:.*]] = coreml.add
// CHECK-NEXT:    func.return %[[S]] : tensor<2x4xf32>
// IOS17-LABEL: func.func @add_uint8(
// IOS17:         %[[BV:.*]] = coreml.mul %b,
// IOS17:         coreml.quantize %[[BV]], {{.*}} {output_dtype = "uint8"
// IOS16: 'qfused.add' (scheme add_q8ta_q8ta) needs static activation quantization (quantize), which CoreML has from iOS17; the target is iOS16; the lowest target that can is iOS17
func.func @add_uint8(%a: tensor<2x4xf32>, %b: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %y = qfused.add %a, %b {lhs_act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, rhs_act = #qfused.static<scale = 0.1, zero_point = 2, range = [0, 255]>, kernel = "add_q8ta_q8ta"} : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
