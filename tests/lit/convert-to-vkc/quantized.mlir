// RUN: qopt-opt %s -p convert-to-vkc --split-input-file | filecheck %s
// Fused quantized ops onto their kernels, weights repacked at compile time.

// int4 per-group weight-only linear: linear_q4gsw, int4 packed eight per word
// (rows padded to 128 bits: 4 words), scales [N, groups], no zero points.
// CHECK:       vkc.kernel @linear_q4gsw_0 {kernel = "linear_q4gsw", {{.*}}spec = {WBITS = 4 : i64, GROUP_SIZE = 4 : i64, HAS_ZERO_POINT = 0 : i64, HAS_BIAS = 1 : i64
// CHECK-LABEL: func.func @forward(%x: tensor<2x8xf32>) -> tensor<2x3xf32>
// CHECK:         %[[W:.*]] = vkc.constant dense_resource<{{.*}}> : tensor<12xui32> : !vkc.buffer<12xui32, "q4">
// CHECK:         %[[S:.*]] = vkc.constant dense_resource<{{.*}}> : tensor<6xf32> : !vkc.buffer<3x2xf32>
// CHECK:         vkc.dispatch @linear_q4gsw_0(%{{.*}}, %[[W]], %[[S]], %[[S]], %{{.*}}, %{{.*}}) {push = {M = 2 : i64, N = 3 : i64, K = 8 : i64, row_words = 4 : i64, ngroups = 2 : i64}
func.func @forward(%x: tensor<2x8xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<[[1, -2, 3, -4, 5, -6, 7, -8], [0, 1, 2, 3, 4, 5, 6, 7], [-1, -1, -1, -1, 1, 1, 1, 1]]> : tensor<3x8xi8>
  %s = arith.constant dense<[[0.5, 0.25], [0.125, 1.0], [2.0, 0.5]]> : tensor<3x2xf32>
  %b = arith.constant dense<[0.1, 0.2, 0.3]> : tensor<3xf32>
  %y = qfused.linear %x, %w, %s bias %b {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, kernel = "linear_q4gsw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x2xf32> bias tensor<3xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// The same linear at M = 1 (decode): the 16-row tile with one row of x (NPW 16, MT 1,
// WG 32), x (8 floats, within the 65536-byte limit) read through the uniform block of
// 2 vec4s (X_UBO, XU_VEC4), the weights through the texel view (W_TEXEL).
// CHECK:       vkc.kernel @linear_q4gsw_0 {kernel = "linear_q4gsw", {{.*}}spec = {WBITS = 4 : i64, GROUP_SIZE = 4 : i64, HAS_ZERO_POINT = 0 : i64, HAS_BIAS = 1 : i64, NPW = 16 : i64, MT = 1 : i64, WG = 32 : i64, X_UBO = 1 : i64, XU_VEC4 = 2 : i64, W_TEXEL = 1 : i64, X_TEXEL = 0 : i64}
// CHECK:         vkc.dispatch @linear_q4gsw_0({{.*}}) {push = {M = 1 : i64, N = 3 : i64, K = 8 : i64, row_words = 4 : i64, ngroups = 2 : i64}
func.func @forward(%x: tensor<1x8xf32>) -> tensor<1x3xf32> {
  %w = arith.constant dense<[[1, -2, 3, -4, 5, -6, 7, -8], [0, 1, 2, 3, 4, 5, 6, 7], [-1, -1, -1, -1, 1, 1, 1, 1]]> : tensor<3x8xi8>
  %s = arith.constant dense<[[0.5, 0.25], [0.125, 1.0], [2.0, 0.5]]> : tensor<3x2xf32>
  %b = arith.constant dense<[0.1, 0.2, 0.3]> : tensor<3xf32>
  %y = qfused.linear %x, %w, %s bias %b {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, kernel = "linear_q4gsw"} : tensor<1x8xf32>, tensor<3x8xi8>, tensor<3x2xf32> bias tensor<3xf32> -> tensor<1x3xf32>
  func.return %y : tensor<1x3xf32>
}

// -----

// Static-activation int8 linear with output requantization: linear_q8ta_q8csw,
// the input already quantized (INPUT_QUANTIZED = 1, i32 buffer), REQUANT = 1.
// CHECK:       vkc.kernel @linear_q8ta_q8csw_0 {kernel = "linear_q8ta_q8csw", {{.*}}spec = {INPUT_QUANTIZED = 1 : i64, HAS_ZERO_POINT = 0 : i64, HAS_BIAS = 0 : i64, REQUANT = 1 : i64
// CHECK-LABEL: func.func @forward(%x: tensor<2x8xi8>) -> tensor<2x3xi8>
// CHECK:         vkc.input %x : tensor<2x8xi8> -> !vkc.buffer<2x8xi32>
// CHECK:         vkc.constant dense_resource<{{.*}}> : tensor<12xui32> : !vkc.buffer<12xui32, "q8">
// CHECK:         vkc.dispatch @linear_q8ta_q8csw_0({{.*}}) {push = {M = 2 : i64, N = 3 : i64, K = 8 : i64, row_words = 4 : i64, in_inv_scale = 2.000000e+01 : f32, in_zp = 3 : i32, in_qmin = -128 : i32, in_qmax = 127 : i32, in_scale = 5.000000e-02 : f32, out_inv_scale = 1.000000e+01 : f32, out_zp = -128 : i32, out_qmin = -128 : i32, out_qmax = 127 : i32, clamp_min = 0.000000e+00 : f32, clamp_max = 6.000000e+00 : f32}
// CHECK:         vkc.output %{{.*}} : !vkc.buffer<2x3xi32> -> tensor<2x3xi8>
func.func @forward(%x: tensor<2x8xi8>) -> tensor<2x3xi8> {
  %w = arith.constant dense<[[1, -2, 3, -4, 5, -6, 7, -8], [0, 1, 2, 3, 4, 5, 6, 7], [-1, -1, -1, -1, 1, 1, 1, 1]]> : tensor<3x8xi8>
  %s = arith.constant dense<[[0.5], [0.25], [0.125]]> : tensor<3x1xf32>
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 8]>, act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, requant = #qfused.static<scale = 0.1, zero_point = -128, range = [-128, 127]>, clamp_min = 0.0 : f64, clamp_max = 6.0 : f64, kernel = "linear_q8ta_q8csw_q8to"} : tensor<2x8xi8>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xi8>
  func.return %y : tensor<2x3xi8>
}

// -----

// Dynamic per-token activations: choose_qparams_rows + quantize_rows, then the
// integer linear_dq8ca_q4gsw kernel.
// CHECK-LABEL: func.func @forward(%x: tensor<2x8xf32>) -> tensor<2x3xf32>
// CHECK:         vkc.dispatch @choose_qparams_rows_0({{.*}}) {push = {rows = 2 : i64, cols = 8 : i64, qmin = -128 : i32, qmax = 127 : i32
// CHECK:         vkc.dispatch @quantize_rows_0(
// CHECK:         vkc.dispatch @linear_dq8ca_q4gsw_0(
func.func @forward(%x: tensor<2x8xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<[[1, -2, 3, -4, 5, -6, 7, -8], [0, 1, 2, 3, 4, 5, 6, 7], [-1, -1, -1, -1, 1, 1, 1, 1]]> : tensor<3x8xi8>
  %s = arith.constant dense<[[0.5, 0.25], [0.125, 1.0], [2.0, 0.5]]> : tensor<3x2xf32>
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, act = #qfused.dynamic<per_token, asymmetric, range = [-128, 127], eps = 1.1920928955078125e-07, scale_type = f32>, kernel = "linear_dq8ca_q4gsw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x2xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// LUT linear: 3-bit codes in 4-bit fields, the codebook flattened.
// CHECK:       vkc.kernel @linear_lut_0 {kernel = "linear_lut", {{.*}}spec = {FBITS = 4 : i64, HAS_BIAS = 0 : i64
// CHECK:         vkc.dispatch @linear_lut_0({{.*}}) {push = {M = 2 : i64, N = 3 : i64, K = 8 : i64, row_words = 4 : i64, BN = 3 : i64, BK = 4 : i64, GK = 2 : i64, L = 8 : i64}
func.func @forward(%x: tensor<2x8xf32>) -> tensor<2x3xf32> {
  %c = arith.constant dense<[[0, 1, 2, 3, 4, 5, 6, 7], [7, 6, 5, 4, 3, 2, 1, 0], [1, 1, 1, 1, 2, 2, 2, 2]]> : tensor<3x8xui8>
  %book = arith.constant dense<0.5> : tensor<1x2x8x1xf32>
  %y = qfused.linear %x, %c, %book {weight_scheme = #qfused.lut<nbits = 3, block = [-1, 4]>, kernel = "linear_lut3w"} : tensor<2x8xf32>, tensor<3x8xui8>, tensor<1x2x8x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// LUT linear with palette blocks of whole code words (1-bit codes, one 2-entry palette):
// the vec4 path reads the codebook (padded to one vec4) and x through uniform blocks.
// CHECK:       vkc.kernel @linear_lut_0 {kernel = "linear_lut", {{.*}}spec = {FBITS = 1 : i64, HAS_BIAS = 0 : i64, WG = 64 : i64, NPW = 8 : i64, MT = 1 : i64, CB_UBO = 1 : i64, CBU_VEC4 = 1 : i64, X_UBO = 1 : i64, XU_VEC4 = 8 : i64, X_TEXEL = 0 : i64}
// CHECK:         vkc.dispatch @linear_lut_0({{.*}}) {push = {M = 1 : i64, N = 2 : i64, K = 32 : i64, row_words = 4 : i64, BN = 2 : i64, BK = 32 : i64, GK = 1 : i64, L = 2 : i64}
// CHECK-SAME:    !vkc.buffer<8xui32, "lut1">, !vkc.buffer<4xf32>
func.func @forward(%x: tensor<1x32xf32>) -> tensor<1x2xf32> {
  %c = arith.constant dense<1> : tensor<2x32xui8>
  %book = arith.constant dense<[[[[0.5], [-2.0]]]]> : tensor<1x1x2x1xf32>
  %y = qfused.linear %x, %c, %book {weight_scheme = #qfused.lut<nbits = 1, block = [-1, -1]>, kernel = "linear_lut1w"} : tensor<1x32xf32>, tensor<2x32xui8>, tensor<1x1x2x1xf32> -> tensor<1x2xf32>
  func.return %y : tensor<1x2xf32>
}

// -----

// Quantized conv2d (static input, requant) and quantized add, fused kernels;
// a standalone dequantize of the result (dequantize kernel, BITS = 32).
// CHECK:       vkc.kernel @conv2d_q8ta_q8csw_q8to_0 {kernel = "conv2d_q8ta_q8csw_q8to", {{.*}}spec = {ACT = 1 : i64, HAS_ZERO_POINT = 0 : i64, HAS_BIAS = 1 : i64, REQUANT = 1 : i64
// CHECK:       vkc.kernel @add_q8ta_q8ta_q8to_0 {kernel = "add_q8ta_q8ta_q8to", {{.*}}spec = {A_QUANTIZED = 1 : i64, B_QUANTIZED = 1 : i64, REQUANT = 1 : i64
// CHECK:       vkc.kernel @dequantize_0 {kernel = "dequantize", {{.*}}spec = {BITS = 32 : i64, HAS_ZERO_POINT = 1 : i64
// CHECK-LABEL: func.func @forward(%x: tensor<1x2x4x4xf32>) -> tensor<1x4x4x4xf32>
// CHECK:         vkc.dispatch @conv2d_q8ta_q8csw_q8to_0(
// CHECK:         vkc.dispatch @add_q8ta_q8ta_q8to_0(
// CHECK:         vkc.dispatch @dequantize_0(
func.func @forward(%x: tensor<1x2x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %w = arith.constant dense<3> : tensor<4x2x3x3xi8>
  %s = arith.constant dense<0.01> : tensor<4x1x1x1xf32>
  %b = arith.constant dense<0.5> : tensor<4xf32>
  %y = qfused.conv2d %x, %w, %s bias %b {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 2, 3, 3]>, act = #qfused.static<scale = 0.05, zero_point = -3, range = [-128, 127]>, requant = #qfused.static<scale = 0.02, zero_point = -128, range = [-128, 127]>, clamp_min = 0.0 : f64, stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64, kernel = "conv2d_q8ta_q8csw_q8to"} : tensor<1x2x4x4xf32>, tensor<4x2x3x3xi8>, tensor<4x1x1x1xf32> bias tensor<4xf32> -> tensor<1x4x4x4xi8>
  %a = qfused.add %y, %y {lhs_act = #qfused.static<scale = 0.02, zero_point = -128, range = [-128, 127]>, rhs_act = #qfused.static<scale = 0.02, zero_point = -128, range = [-128, 127]>, requant = #qfused.static<scale = 0.04, zero_point = -128, range = [-128, 127]>, kernel = "add_q8ta_q8ta_q8to"} : tensor<1x4x4x4xi8>, tensor<1x4x4x4xi8> -> tensor<1x4x4x4xi8>
  %sc = arith.constant dense<0.04> : tensor<f32>
  %zp = arith.constant dense<-128> : tensor<i64>
  %d = quant.dequantize %a, %sc, %zp {block_size = array<i64: 1, 4, 4, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<1x4x4x4xi8>, tensor<f32>, tensor<i64>) -> tensor<1x4x4x4xf32>
  func.return %d : tensor<1x4x4x4xf32>
}

// -----

// Quantized embedding (int4 per-group, asymmetric): embedding_q4gsw with zero
// points stored as zp - lo; int64 indices narrowed to i32 on upload; the last
// binding is the dispatch's own index status word.
// CHECK:       vkc.kernel @embedding_q4gsw_0 {{.*}}bindings = [#vkc.binding<"idx", i32>, #vkc.binding<"w", ui32>, #vkc.binding<"scales", f32>, #vkc.binding<"zeros", i32>, #vkc.binding<"out", f32, write>, #vkc.binding<"status", ui32, write>]
// CHECK-LABEL: func.func @forward(%idx: tensor<1x3xi64>) -> tensor<1x3x8xf32>
// CHECK:         %[[IDX:.*]] = vkc.input %idx : tensor<1x3xi64> -> !vkc.buffer<1x3xi32>
// CHECK:         %[[ST:.*]] = vkc.alloc {status, what = "'qfused.embedding'"} : !vkc.buffer<1xui32>
// CHECK-NEXT:    vkc.dispatch @embedding_q4gsw_0(%[[IDX]], {{.*}}, %[[ST]]) {push = {n = 3 : i64, D = 8 : i64, V = 3 : i64, row_words = 4 : i64, ngroups = 2 : i64}
func.func @forward(%idx: tensor<1x3xi64>) -> tensor<1x3x8xf32> {
  %w = arith.constant dense<[[1, -2, 3, -4, 5, -6, 7, -8], [0, 1, 2, 3, 4, 5, 6, 7], [-1, -1, -1, -1, 1, 1, 1, 1]]> : tensor<3x8xi8>
  %s = arith.constant dense<[[0.5, 0.25], [0.125, 1.0], [2.0, 0.5]]> : tensor<3x2xf32>
  %z = arith.constant dense<[[0, 1], [2, -1], [0, 0]]> : tensor<3x2xi8>
  %y = qfused.embedding %idx, %w, %s zero_point %z {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, kernel = "embedding_q4gaw"} : tensor<1x3xi64>, tensor<3x8xi8>, tensor<3x2xf32> zero_point tensor<3x2xi8> -> tensor<1x3x8xf32>
  func.return %y : tensor<1x3x8xf32>
}
