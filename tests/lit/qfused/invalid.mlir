// RUN: qopt-opt %s --split-input-file --verify-diagnostics | filecheck %s
// One chunk per verifier message of qopt/dialects/qfused.py (ops and attributes).

func.func @affine_empty_range(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [7, -8], block = [1, 8]>, kernel = "linear_q8csw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: range [7, -8] is empty

// -----

func.func @affine_bits(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 4, range = [-127, 127], block = [1, 8]>, kernel = "linear_q8csw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: bits = 4 does not match range [-127, 127] (8 bits)

// -----

func.func @affine_too_wide(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 32, range = [0, 8589934592], block = [1, 8]>, kernel = "linear_q8csw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: range [0, 8589934592] needs more than 32 bits

// -----

func.func @affine_block_positive(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [0, 8]>, kernel = "linear_q8csw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: block sizes must be positive

// -----

func.func @lut_nbits(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.lut<nbits = 9, block = [-1, 8]>, kernel = "linear_lut9w"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: nbits must be in [1, 8], got 9

// -----

func.func @lut_block(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.lut<nbits = 4, block = [-2, 8]>, kernel = "linear_lut4w"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: block sizes must be positive or -1 (whole dimension)

// -----

func.func @static_scale(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 8]>, act = #qfused.static<scale = 0.0, zero_point = 0, range = [-128, 127]>, kernel = "linear_q8ta_q8csw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: scale must be positive, got 0.0

// -----

func.func @static_zero_point(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 8]>, act = #qfused.static<scale = 0.5, zero_point = 200, range = [-128, 127]>, kernel = "linear_q8ta_q8csw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: zero_point 200 must lie in range [-128, 127]

// -----

func.func @dynamic_granularity(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 8]>, act = #qfused.dynamic<per_row, asymmetric, range = [-128, 127], eps = 0.0, scale_type = f32>, kernel = "linear_dq8ca_q8csw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: granularity must be one of per_token, per_tensor

// -----

func.func @dynamic_mapping(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 8]>, act = #qfused.dynamic<per_token, affine, range = [-128, 127], eps = 0.0, scale_type = f32>, kernel = "linear_dq8ca_q8csw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: mapping must be one of asymmetric, symmetric, symmetric_no_clipping_err

// -----

func.func @dynamic_range(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 8]>, act = #qfused.dynamic<per_token, asymmetric, range = [5, 5], eps = 0.0, scale_type = f32>, kernel = "linear_dq8ca_q8csw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: range [5, 5] is empty

// -----

func.func @dynamic_scale_type(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 8]>, act = #qfused.dynamic<per_token, asymmetric, range = [-128, 127], eps = 0.0, scale_type = i32>, kernel = "linear_dq8ca_q8csw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: scale_type must be a float type, got i32

// -----

func.func @kernel_name(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 8]>, kernel = "linear_q4gsw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: 'qfused.linear': kernel is 'linear_q4gsw' but the schemes say 'linear_q8csw'

// -----

func.func @weight_block_rank(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [8]>, kernel = "linear_q8csw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: 'qfused.linear': weight block [8] does not match weight rank 2

// -----

func.func @weight_block_divides(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 3]>, kernel = "linear_q8gsw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: 'qfused.linear': block size 3 does not divide weight dimension 1 (8)

// -----

func.func @weight_data_integer(%x: tensor<2x8xf32>, %w: tensor<3x8xf32>, %s: tensor<3x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 8]>, kernel = "linear_q8csw"} : tensor<2x8xf32>, tensor<3x8xf32>, tensor<3x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: 'qfused.linear': affine weight data must be integers, got tensor<3x8xf32>

// -----

func.func @weight_range_storage(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 9, range = [-255, 7], block = [1, 8]>, kernel = "linear_q9csw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: 'qfused.linear': weight range [-255, 7] does not fit storage i8

// -----

func.func @weight_scale_shape(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 8]>, kernel = "linear_q8csw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: 'qfused.linear': weight scale must be a float tensor of shape [3, 1] (weight shape / block), got tensor<3xf32>

// -----

func.func @weight_zero_point_shape(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>, %z: tensor<3xi8>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s zero_point %z {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 8]>, kernel = "linear_q8caw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> zero_point tensor<3xi8> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: 'qfused.linear': weight zero point must have shape [3, 1]

// -----

func.func @lut_zero_point(%x: tensor<2x8xf32>, %w: tensor<3x8xui8>, %s: tensor<1x1x16x1xf32>, %z: tensor<1x1xi8>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s zero_point %z {weight_scheme = #qfused.lut<nbits = 4, block = [-1, 8]>, kernel = "linear_lut4w"} : tensor<2x8xf32>, tensor<3x8xui8>, tensor<1x1x16x1xf32> zero_point tensor<1x1xi8> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: 'qfused.linear': a LUT weight has no zero point

// -----

func.func @lut_codes_integer(%x: tensor<2x8xf32>, %w: tensor<3x8xf32>, %s: tensor<1x1x16x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.lut<nbits = 4, block = [-1, 8]>, kernel = "linear_lut4w"} : tensor<2x8xf32>, tensor<3x8xf32>, tensor<1x1x16x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: 'qfused.linear': LUT codes must be integers, got tensor<3x8xf32>

// -----

func.func @lut_block_tiles(%x: tensor<2x8xf32>, %w: tensor<3x8xui8>, %s: tensor<1x1x16x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.lut<nbits = 4, block = [-1, 3]>, kernel = "linear_lut4w"} : tensor<2x8xf32>, tensor<3x8xui8>, tensor<1x1x16x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: 'qfused.linear': LUT block [-1, 3] does not tile [3, 8]

// -----

func.func @lut_codebook_shape(%x: tensor<2x8xf32>, %w: tensor<3x8xui8>, %s: tensor<1x1x16x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.lut<nbits = 4, block = [-1, 4]>, kernel = "linear_lut4w"} : tensor<2x8xf32>, tensor<3x8xui8>, tensor<1x1x16x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: 'qfused.linear': codebook must be a float tensor of shape [1, 2, 16, 1]

// -----

func.func @weight_scheme_kind(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = "int8", kernel = "linear_q8csw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: 'qfused.linear': weight_scheme must be #qfused.affine or #qfused.lut, got "int8"

// -----

func.func @result_float(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x3xi8> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 8]>, kernel = "linear_q8csw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xi8>
  func.return %y : tensor<2x3xi8>
}
// CHECK: 'qfused.linear': without requant the result must be a float tensor

// -----

func.func @requant_result_integer(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 8]>, act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, requant = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, kernel = "linear_q8ta_q8csw_q8to"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: 'qfused.linear': with requant the result must be an integer tensor

// -----

func.func @requant_range(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x3xi8> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 8]>, act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, requant = #qfused.static<scale = 0.1, zero_point = 0, range = [-255, 7]>, kernel = "linear_q8ta_q8csw_q9to"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xi8>
  func.return %y : tensor<2x3xi8>
}
// CHECK: 'qfused.linear': requant range does not fit the result type i8

// -----

func.func @clamp_order(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 8]>, clamp_min = 2.0 : f64, clamp_max = 1.0 : f64, kernel = "linear_q8csw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: 'qfused.linear': clamp_min must not exceed clamp_max

// -----

func.func @integer_input_needs_static(%x: tensor<2x8xi8>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 8]>, kernel = "linear_q8csw"} : tensor<2x8xi8>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: 'qfused.linear': an integer input needs static activation parameters (act)

// -----

func.func @act_range_input(%x: tensor<2x8xi8>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 8]>, act = #qfused.static<scale = 0.05, zero_point = 3, range = [-255, 7]>, kernel = "linear_q9ta_q8csw"} : tensor<2x8xi8>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: 'qfused.linear': activation range does not fit the input type i8

// -----

func.func @linear_weight_rank(%x: tensor<2x8xf32>, %w: tensor<1x3x8xi8>, %s: tensor<1x3x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 1, 8]>, kernel = "linear_q8csw"} : tensor<2x8xf32>, tensor<1x3x8xi8>, tensor<1x3x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: 'qfused.linear': weight must be 2-D [N, K], got [1, 3, 8]

// -----

func.func @linear_input_k(%x: tensor<2x4xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 8]>, kernel = "linear_q8csw"} : tensor<2x4xf32>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: 'qfused.linear': input's last dim must equal K = 8, got [2, 4]

// -----

func.func @linear_result_shape(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x4xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 8]>, kernel = "linear_q8csw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK: 'qfused.linear': result must have shape [2, 3]

// -----

func.func @linear_bias_shape(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s bias %b {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 8]>, kernel = "linear_q8csw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> bias tensor<4xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: 'qfused.linear': bias must have shape [3]

// -----

func.func @linear_act_kind(%x: tensor<2x8xf32>, %w: tensor<3x8xi8>, %s: tensor<3x1xf32>) -> tensor<2x3xf32> {
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 8]>, act = "static", kernel = "linear_q8csw"} : tensor<2x8xf32>, tensor<3x8xi8>, tensor<3x1xf32> -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: 'qfused.linear': act must be #qfused.static or #qfused.dynamic

// -----

func.func @conv_params_len(%x: tensor<1x2x4x4xf32>, %w: tensor<4x2x3x3xi8>, %s: tensor<4x1x1x1xf32>) -> tensor<1x4x2x2xf32> {
  %y = qfused.conv2d %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 2, 3, 3]>, stride = array<i64: 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64, kernel = "conv2d_q8csw"} : tensor<1x2x4x4xf32>, tensor<4x2x3x3xi8>, tensor<4x1x1x1xf32> -> tensor<1x4x2x2xf32>
  func.return %y : tensor<1x4x2x2xf32>
}
// CHECK: 'qfused.conv2d': stride, padding and dilation must have 2 entries

// -----

func.func @conv_rank(%x: tensor<1x2x4x4xf32>, %w: tensor<4x2x3xi8>, %s: tensor<4x1x1xf32>) -> tensor<1x4x2x2xf32> {
  %y = qfused.conv2d %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 2, 3]>, stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64, kernel = "conv2d_q8csw"} : tensor<1x2x4x4xf32>, tensor<4x2x3xi8>, tensor<4x1x1xf32> -> tensor<1x4x2x2xf32>
  func.return %y : tensor<1x4x2x2xf32>
}
// CHECK: 'qfused.conv2d': input and weight must be 4-D (NCHW, OIHW)

// -----

func.func @conv_channels(%x: tensor<1x2x4x4xf32>, %w: tensor<4x3x3x3xi8>, %s: tensor<4x1x1x1xf32>) -> tensor<1x4x2x2xf32> {
  %y = qfused.conv2d %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 3, 3, 3]>, stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64, kernel = "conv2d_q8csw"} : tensor<1x2x4x4xf32>, tensor<4x3x3x3xi8>, tensor<4x1x1x1xf32> -> tensor<1x4x2x2xf32>
  func.return %y : tensor<1x4x2x2xf32>
}
// CHECK: 'qfused.conv2d': channels do not match: input 2, weight [4, 3, 3, 3], groups 1

// -----

func.func @conv_result_shape(%x: tensor<1x2x4x4xf32>, %w: tensor<4x2x3x3xi8>, %s: tensor<4x1x1x1xf32>) -> tensor<1x4x4x4xf32> {
  %y = qfused.conv2d %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 2, 3, 3]>, stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64, kernel = "conv2d_q8csw"} : tensor<1x2x4x4xf32>, tensor<4x2x3x3xi8>, tensor<4x1x1x1xf32> -> tensor<1x4x4x4xf32>
  func.return %y : tensor<1x4x4x4xf32>
}
// CHECK: 'qfused.conv2d': result must have shape [1, 4, 2, 2]

// -----

func.func @conv_bias_shape(%x: tensor<1x2x4x4xf32>, %w: tensor<4x2x3x3xi8>, %s: tensor<4x1x1x1xf32>, %b: tensor<2xf32>) -> tensor<1x4x2x2xf32> {
  %y = qfused.conv2d %x, %w, %s bias %b {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 2, 3, 3]>, stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64, kernel = "conv2d_q8csw"} : tensor<1x2x4x4xf32>, tensor<4x2x3x3xi8>, tensor<4x1x1x1xf32> bias tensor<2xf32> -> tensor<1x4x2x2xf32>
  func.return %y : tensor<1x4x2x2xf32>
}
// CHECK: 'qfused.conv2d': bias must have shape [4]

// -----

func.func @conv_dynamic_act(%x: tensor<1x2x4x4xf32>, %w: tensor<4x2x3x3xi8>, %s: tensor<4x1x1x1xf32>) -> tensor<1x4x2x2xf32> {
  %y = qfused.conv2d %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-127, 127], block = [1, 2, 3, 3]>, act = #qfused.dynamic<per_tensor, asymmetric, range = [-128, 127], eps = 0.0, scale_type = f32>, stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64, kernel = "conv2d_dq8ta_q8csw"} : tensor<1x2x4x4xf32>, tensor<4x2x3x3xi8>, tensor<4x1x1x1xf32> -> tensor<1x4x2x2xf32>
  func.return %y : tensor<1x4x2x2xf32>
}
// CHECK: 'qfused.conv2d': conv2d supports static activation parameters only

// -----

func.func @embedding_weight_rank(%i: tensor<3xi64>, %w: tensor<1x5x8xi8>, %s: tensor<1x5x2xf32>) -> tensor<3x8xf32> {
  %y = qfused.embedding %i, %w, %s {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 1, 4]>, kernel = "embedding_q4gsw"} : tensor<3xi64>, tensor<1x5x8xi8>, tensor<1x5x2xf32> -> tensor<3x8xf32>
  func.return %y : tensor<3x8xf32>
}
// CHECK: 'qfused.embedding': weight must be 2-D [V, D], got [1, 5, 8]

// -----

func.func @embedding_indices(%i: tensor<3xf32>, %w: tensor<5x8xi8>, %s: tensor<5x2xf32>) -> tensor<3x8xf32> {
  %y = qfused.embedding %i, %w, %s {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, kernel = "embedding_q4gsw"} : tensor<3xf32>, tensor<5x8xi8>, tensor<5x2xf32> -> tensor<3x8xf32>
  func.return %y : tensor<3x8xf32>
}
// CHECK: 'qfused.embedding': indices must be an integer tensor

// -----

func.func @embedding_result_shape(%i: tensor<3xi64>, %w: tensor<5x8xi8>, %s: tensor<5x2xf32>) -> tensor<3x4xf32> {
  %y = qfused.embedding %i, %w, %s {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, kernel = "embedding_q4gsw"} : tensor<3xi64>, tensor<5x8xi8>, tensor<5x2xf32> -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}
// CHECK: 'qfused.embedding': result must have shape [3, 8]

// -----

func.func @embedding_result_float(%i: tensor<3xi64>, %w: tensor<5x8xi8>, %s: tensor<5x2xf32>) -> tensor<3x8xi8> {
  %y = qfused.embedding %i, %w, %s {weight_scheme = #qfused.affine<bits = 4, range = [-8, 7], block = [1, 4]>, kernel = "embedding_q4gsw"} : tensor<3xi64>, tensor<5x8xi8>, tensor<5x2xf32> -> tensor<3x8xi8>
  func.return %y : tensor<3x8xi8>
}
// CHECK: 'qfused.embedding': result must be a float tensor

// -----

func.func @add_broadcast(%a: tensor<2x4xi8>, %b: tensor<3xi8>) -> tensor<2x4xi8> {
  %y = qfused.add %a, %b {lhs_act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, rhs_act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, requant = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, kernel = "add_q8ta_q8ta_q8to"} : tensor<2x4xi8>, tensor<3xi8> -> tensor<2x4xi8>
  func.return %y : tensor<2x4xi8>
}
// CHECK: 'qfused.add': operands must broadcast to the result shape

// -----

func.func @mul_broadcast(%a: tensor<2x4xi8>, %b: tensor<3xi8>) -> tensor<2x4xi8> {
  %y = qfused.mul %a, %b {lhs_act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, rhs_act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, requant = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, kernel = "mul_q8ta_q8ta_q8to"} : tensor<2x4xi8>, tensor<3xi8> -> tensor<2x4xi8>
  func.return %y : tensor<2x4xi8>
}
// CHECK: 'qfused.mul': operands must broadcast to the result shape

// -----

func.func @mul_kernel_name(%a: tensor<2x4xi8>, %b: tensor<4xi8>) -> tensor<2x4xi8> {
  %y = qfused.mul %a, %b {lhs_act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, rhs_act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, requant = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, kernel = "add_q8ta_q8ta_q8to"} : tensor<2x4xi8>, tensor<4xi8> -> tensor<2x4xi8>
  func.return %y : tensor<2x4xi8>
}
// CHECK: 'qfused.mul': kernel
