// RUN: qopt-opt %s --split-input-file --verify-diagnostics | filecheck %s
// Verifier messages of qopt/dialects/aten/{elementwise,nn}.py, one per chunk.

func.func @add_no_broadcast(%x: tensor<2x3xf32>, %y: tensor<4xf32>) -> tensor<2x3xf32> {
  %r = aten.add %x, %y : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
// CHECK: 'aten.add': operand shapes [2, 3] and [4] do not broadcast

// -----

func.func @mul_wrong_result_shape(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> tensor<3x2xf32> {
  %r = aten.mul %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3x2xf32>
  func.return %r : tensor<3x2xf32>
}
// CHECK: 'aten.mul': result 0 has shape [3, 2] but the operands imply [2, 3]

// -----

func.func @relu_wrong_result_shape(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  %r = aten.relu %x : (tensor<2x3xf32>) -> tensor<6xf32>
  func.return %r : tensor<6xf32>
}
// CHECK: 'aten.relu': result 0 has shape [6] but the operands imply [2, 3]

// -----

func.func @sigmoid_int_result(%x: tensor<2x3xi32>) -> tensor<2x3xi32> {
  %r = aten.sigmoid %x : (tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return %r : tensor<2x3xi32>
}
// CHECK: 'aten.sigmoid': result must be a float tensor, got tensor<2x3xi32>

// -----

func.func @gelu_bad_approximate(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.gelu %x {approximate = "fast"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
// CHECK: 'aten.gelu': approximate must be 'none' or 'tanh', got 'fast'

// -----

func.func @softshrink_negative_lambd(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.softshrink %x {lambd = -1.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
// CHECK: 'aten.softshrink': lambd must be >= 0, got -1.0

// -----

func.func @clone_type_change(%x: tensor<2x3xf32>) -> tensor<2x3xf16> {
  %r = aten.clone %x : (tensor<2x3xf32>) -> tensor<2x3xf16>
  func.return %r : tensor<2x3xf16>
}
// CHECK: 'aten.clone': result type must equal the input type

// -----

func.func @logical_not_not_bool(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.logical_not %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
// CHECK: 'aten.logical_not': result must be a boolean (i1) tensor, got tensor<2x3xf32>

// -----

func.func @isnan_not_bool(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.isnan %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
// CHECK: 'aten.isnan': result must be a boolean (i1) tensor, got tensor<2x3xf32>

// -----

func.func @eq_not_bool(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.eq %x, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
// CHECK: 'aten.eq': result must be a boolean (i1) tensor, got tensor<2x3xf32>

// -----

func.func @logical_and_not_bool(%x: tensor<2x3xi1>, %y: tensor<2x3xi1>) -> tensor<2x3xi8> {
  %r = aten.logical_and %x, %y : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi8>
  func.return %r : tensor<2x3xi8>
}
// CHECK: 'aten.logical_and': result must be a boolean (i1) tensor, got tensor<2x3xi8>

// -----

func.func @div_bad_rounding_mode(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.div %x, %y {rounding_mode = "ceil"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
// CHECK: 'aten.div': rounding_mode must be 'trunc' or 'floor', got 'ceil'

// -----

func.func @where_condition_not_bool(%c: tensor<2x3xf32>, %x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.where %c, %x, %y : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
// CHECK: 'aten.where': condition must be a boolean (i1) tensor, got tensor<2x3xf32>

// -----

func.func @where_no_broadcast(%c: tensor<2x3xi1>, %x: tensor<2x1xf32>, %y: tensor<4xf32>) -> tensor<2x3xf32> {
  %r = aten.where %c, %x, %y : (tensor<2x3xi1>, tensor<2x1xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
// CHECK: 'aten.where': condition and operand shapes do not broadcast

// -----

func.func @masked_fill_mask_not_bool(%x: tensor<2x3xf32>, %m: tensor<2x3xi8>, %v: tensor<f32>) -> tensor<2x3xf32> {
  %r = aten.masked_fill %x, %m, %v : (tensor<2x3xf32>, tensor<2x3xi8>, tensor<f32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
// CHECK: 'aten.masked_fill': mask must be a boolean (i1) tensor, got tensor<2x3xi8>

// -----

func.func @masked_fill_value_not_scalar(%x: tensor<2x3xf32>, %m: tensor<2x3xi1>, %v: tensor<1xf32>) -> tensor<2x3xf32> {
  %r = aten.masked_fill %x, %m, %v : (tensor<2x3xf32>, tensor<2x3xi1>, tensor<1xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
// CHECK: 'aten.masked_fill': value must be a 0-d tensor

// -----

func.func @masked_fill_mask_too_big(%x: tensor<1x3xf32>, %m: tensor<2x3xi1>, %v: tensor<f32>) -> tensor<1x3xf32> {
  %r = aten.masked_fill %x, %m, %v : (tensor<1x3xf32>, tensor<2x3xi1>, tensor<f32>) -> tensor<1x3xf32>
  func.return %r : tensor<1x3xf32>
}
// CHECK: 'aten.masked_fill': mask must broadcast to the input shape

// -----

func.func @linear_int_input(%x: tensor<4x8xi32>, %w: tensor<2x8xi32>) -> tensor<4x2xi32> {
  %r = aten.linear %x, %w : (tensor<4x8xi32>, tensor<2x8xi32>) -> tensor<4x2xi32>
  func.return %r : tensor<4x2xi32>
}
// CHECK: 'aten.linear': input must be a float tensor, got tensor<4x8xi32>

// -----

func.func @linear_weight_rank(%x: tensor<4x8xf32>, %w: tensor<2x8x1xf32>) -> tensor<4x2xf32> {
  %r = aten.linear %x, %w : (tensor<4x8xf32>, tensor<2x8x1xf32>) -> tensor<4x2xf32>
  func.return %r : tensor<4x2xf32>
}
// CHECK: 'aten.linear': weight must be 2-D [N, K], got [2, 8, 1]

// -----

func.func @linear_bad_k(%x: tensor<4x8xf32>, %w: tensor<2x16xf32>) -> tensor<4x2xf32> {
  %r = aten.linear %x, %w : (tensor<4x8xf32>, tensor<2x16xf32>) -> tensor<4x2xf32>
  func.return %r : tensor<4x2xf32>
}
// CHECK: 'aten.linear': input's last dim must equal weight's K = 16, got [4, 8]

// -----

func.func @linear_bad_bias(%x: tensor<4x8xf32>, %w: tensor<2x8xf32>, %b: tensor<3xf32>) -> tensor<4x2xf32> {
  %r = aten.linear %x, %w, %b : (tensor<4x8xf32>, tensor<2x8xf32>, tensor<3xf32>) -> tensor<4x2xf32>
  func.return %r : tensor<4x2xf32>
}
// CHECK: 'aten.linear': bias must have shape [2], got [3]

// -----

func.func @linear_wrong_result(%x: tensor<4x8xf32>, %w: tensor<2x8xf32>) -> tensor<4x8xf32> {
  %r = aten.linear %x, %w : (tensor<4x8xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}
// CHECK: 'aten.linear': result 0 has shape [4, 8] but the operands imply [4, 2]

// -----

func.func @matmul_mismatch(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = aten.matmul %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}
// CHECK: 'aten.matmul': shapes [4, 8] and [4, 8] cannot be multiplied

// -----

func.func @addmm_rank(%c: tensor<3xf32>, %a: tensor<4x8xf32>, %b: tensor<1x8x3xf32>) -> tensor<4x3xf32> {
  %r = aten.addmm %c, %a, %b : (tensor<3xf32>, tensor<4x8xf32>, tensor<1x8x3xf32>) -> tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}
// CHECK: 'aten.addmm': mat1 and mat2 must both be 2-D (addmm) or 3-D (baddbmm)

// -----

func.func @addmm_mismatch(%c: tensor<3xf32>, %a: tensor<4x8xf32>, %b: tensor<7x3xf32>) -> tensor<4x3xf32> {
  %r = aten.addmm %c, %a, %b : (tensor<3xf32>, tensor<4x8xf32>, tensor<7x3xf32>) -> tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}
// CHECK: 'aten.addmm': shapes [4, 8] and [7, 3] cannot be multiplied

// -----

func.func @addmm_input_broadcast(%c: tensor<5xf32>, %a: tensor<4x8xf32>, %b: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %r = aten.addmm %c, %a, %b : (tensor<5xf32>, tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}
// CHECK: 'aten.addmm': input must broadcast to the product's shape

// -----

func.func @embedding_float_indices(%w: tensor<10x4xf32>, %i: tensor<3xf32>) -> tensor<3x4xf32> {
  %r = aten.embedding %w, %i : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  func.return %r : tensor<3x4xf32>
}
// CHECK: 'aten.embedding': indices must be an integer tensor, got tensor<3xf32>

// -----

func.func @embedding_weight_rank(%w: tensor<10xf32>, %i: tensor<3xi64>) -> tensor<3x4xf32> {
  %r = aten.embedding %w, %i : (tensor<10xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  func.return %r : tensor<3x4xf32>
}
// CHECK: 'aten.embedding': weight must be 2-D [V, D], got [10]

// -----

func.func @conv2d_int_input(%x: tensor<1x3x8x8xi8>, %w: tensor<4x3x3x3xi8>) -> tensor<1x4x6x6xi8> {
  %r = aten.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x8x8xi8>, tensor<4x3x3x3xi8>) -> tensor<1x4x6x6xi8>
  func.return %r : tensor<1x4x6x6xi8>
}
// CHECK: 'aten.conv2d': input must be a float tensor, got tensor<1x3x8x8xi8>

// -----

func.func @conv2d_stride_entries(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %r = aten.conv2d %x, %w {stride = array<i64: 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %r : tensor<1x4x6x6xf32>
}
// CHECK: 'aten.conv2d': stride must have 2 entries, got [1]

// -----

func.func @conv2d_rank(%x: tensor<3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %r = aten.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %r : tensor<1x4x6x6xf32>
}
// CHECK: 'aten.conv2d': input and weight must be 4-D (NCHW, OIHW)

// -----

func.func @conv2d_channel_mismatch(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %r = aten.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return %r : tensor<1x4x6x6xf32>
}
// CHECK: 'aten.conv2d': channels do not match: input 3, weight [4, 2, 3, 3], groups 1

// -----

func.func @conv2d_groups_mismatch(%x: tensor<1x4x8x8xf32>, %w: tensor<6x1x3x3xf32>) -> tensor<1x6x6x6xf32> {
  %r = aten.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 4 : i64} : (tensor<1x4x8x8xf32>, tensor<6x1x3x3xf32>) -> tensor<1x6x6x6xf32>
  func.return %r : tensor<1x6x6x6xf32>
}
// CHECK: 'aten.conv2d': channels do not match: input 4, weight [6, 1, 3, 3], groups 4

// -----

func.func @conv2d_bad_bias(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) -> tensor<1x4x6x6xf32> {
  %r = aten.conv2d %x, %w, %b {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<1x4x6x6xf32>
  func.return %r : tensor<1x4x6x6xf32>
}
// CHECK: 'aten.conv2d': bias must have shape [4]

// -----

func.func @conv2d_wrong_result(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32> {
  %r = aten.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  func.return %r : tensor<1x4x8x8xf32>
}
// CHECK: 'aten.conv2d': result 0 has shape [1, 4, 8, 8] but the operands imply [1, 4, 6, 6]

// -----
// Run-time scalars (qopt/dialects/aten/scalar.py) and dynamic slices.

func.func @item_of_many(%x: tensor<2xi64>) -> tensor<i64> {
  %r = aten.item %x : (tensor<2xi64>) -> tensor<i64>
  func.return %r : tensor<i64>
}
// CHECK: 'aten.item': item needs a tensor of one element, got shape [2]

// -----

func.func @item_other_type(%x: tensor<1xi32>) -> tensor<i64> {
  %r = aten.item %x : (tensor<1xi32>) -> tensor<i64>
  func.return %r : tensor<i64>
}
// CHECK: 'aten.item': input and result element types must match

// -----

func.func @item_empty_range(%x: tensor<1xi64>) -> tensor<i64> {
  %r = aten.item %x {range = array<i64: 5, 2>} : (tensor<1xi64>) -> tensor<i64>
  func.return %r : tensor<i64>
}
// CHECK: 'aten.item': range must be [min, max] with min <= max, got [5, 2]

// -----

func.func @item_float_range(%x: tensor<1xf32>) -> tensor<f32> {
  %r = aten.item %x {range = array<i64: 0, 2>} : (tensor<1xf32>) -> tensor<f32>
  func.return %r : tensor<f32>
}
// CHECK: 'aten.item': a range bounds an integer result, not tensor<f32>

// -----

func.func @sym_size_i32(%x: tensor<?x4xf32>) -> tensor<i32> {
  %r = aten.sym_size %x {dim = 0 : i64} : (tensor<?x4xf32>) -> tensor<i32>
  func.return %r : tensor<i32>
}
// CHECK: 'aten.sym_size': result must be a 0-d int64 tensor, got tensor<i32>

// -----

func.func @sym_size_of_scalar(%x: tensor<f32>) -> tensor<i64> {
  %r = aten.sym_size %x {dim = 0 : i64} : (tensor<f32>) -> tensor<i64>
  func.return %r : tensor<i64>
}
// CHECK: 'aten.sym_size': a 0-d tensor has no dims

// -----

func.func @assert_not_bool(%c: tensor<i64>) {
  aten.assert_scalar %c : tensor<i64>
  func.return
}
// CHECK: 'aten.assert_scalar': condition must be a boolean (i1) tensor, got tensor<i64>

// -----

func.func @assert_not_scalar(%c: tensor<2xi1>) {
  aten.assert_scalar %c : tensor<2xi1>
  func.return
}
// CHECK: 'aten.assert_scalar': condition must be 0-d, got tensor<2xi1>

// -----

func.func @dynamic_slice_float_start(%x: tensor<40x8xf32>, %s: tensor<f32>) -> tensor<3x8xf32> {
  %r = aten.dynamic_slice %x, %s {dim = 0 : i64} : (tensor<40x8xf32>, tensor<f32>) -> tensor<3x8xf32>
  func.return %r : tensor<3x8xf32>
}
// CHECK: 'aten.dynamic_slice': start must be a 0-d int64 or int32 tensor, got tensor<f32>

// -----

func.func @dynamic_slice_too_long(%x: tensor<40x8xf32>, %s: tensor<i64>) -> tensor<41x8xf32> {
  %r = aten.dynamic_slice %x, %s {dim = 0 : i64} : (tensor<40x8xf32>, tensor<i64>) -> tensor<41x8xf32>
  func.return %r : tensor<41x8xf32>
}
// CHECK: 'aten.dynamic_slice': length 41 exceeds the size 40 of dim 0

// -----

func.func @dynamic_slice_no_length(%x: tensor<40x8xf32>, %s: tensor<i64>) -> tensor<?x8xf32> {
  %r = aten.dynamic_slice %x, %s {dim = 0 : i64} : (tensor<40x8xf32>, tensor<i64>) -> tensor<?x8xf32>
  func.return %r : tensor<?x8xf32>
}
// CHECK: 'aten.dynamic_slice': a length operand is needed exactly when the result's dim is dynamic (?)

// -----

func.func @dynamic_slice_other_dim(%x: tensor<40x8xf32>, %s: tensor<i64>) -> tensor<3x4xf32> {
  %r = aten.dynamic_slice %x, %s {dim = 0 : i64} : (tensor<40x8xf32>, tensor<i64>) -> tensor<3x4xf32>
  func.return %r : tensor<3x4xf32>
}
// CHECK: 'aten.dynamic_slice': result 0 has shape [3, 4] but the operands imply [3, 8]

// -----

func.func @dynamic_update_wrong_type(%x: tensor<40x8xf32>, %u: tensor<3x8xf16>, %s: tensor<i64>) -> tensor<40x8xf32> {
  %r = aten.dynamic_update_slice %x, %u, %s {dim = 0 : i64} : (tensor<40x8xf32>, tensor<3x8xf16>, tensor<i64>) -> tensor<40x8xf32>
  func.return %r : tensor<40x8xf32>
}
// CHECK: 'aten.dynamic_update_slice': update (tensor<3x8xf16>) must have the element type of self (tensor<40x8xf32>)

// -----

func.func @dynamic_update_wrong_shape(%x: tensor<40x8xf32>, %u: tensor<3x4xf32>, %s: tensor<i64>) -> tensor<40x8xf32> {
  %r = aten.dynamic_update_slice %x, %u, %s {dim = 0 : i64} : (tensor<40x8xf32>, tensor<3x4xf32>, tensor<i64>) -> tensor<40x8xf32>
  func.return %r : tensor<40x8xf32>
}
// CHECK: 'aten.dynamic_update_slice': update of shape [3, 4] must have self's shape [40, 8] outside dim 0

// -----

func.func @dynamic_update_too_long(%x: tensor<40x8xf32>, %u: tensor<41x8xf32>, %s: tensor<i64>) -> tensor<40x8xf32> {
  %r = aten.dynamic_update_slice %x, %u, %s {dim = 0 : i64} : (tensor<40x8xf32>, tensor<41x8xf32>, tensor<i64>) -> tensor<40x8xf32>
  func.return %r : tensor<40x8xf32>
}
// CHECK: 'aten.dynamic_update_slice': update has 41 entries along dim 0 of size 40

// -----

func.func @dynamic_update_result_type(%x: tensor<40x8xf32>, %u: tensor<3x8xf32>, %s: tensor<i64>) -> tensor<40x8xf16> {
  %r = aten.dynamic_update_slice %x, %u, %s {dim = 0 : i64} : (tensor<40x8xf32>, tensor<3x8xf32>, tensor<i64>) -> tensor<40x8xf16>
  func.return %r : tensor<40x8xf16>
}
// CHECK: 'aten.dynamic_update_slice': result type tensor<40x8xf16> must equal the type of self tensor<40x8xf32>

// -----
// A static result dim is never computed from a dynamic one.

func.func @static_from_dynamic(%x: tensor<?x8xf32>) -> tensor<3x8xf32> {
  %r = aten.relu %x : (tensor<?x8xf32>) -> tensor<3x8xf32>
  func.return %r : tensor<3x8xf32>
}
// CHECK: 'aten.relu': result 0 has shape [3, 8] but the operands imply [?, 8]

// -----

func.func @dynamic_view_count(%x: tensor<?x8xf32>) -> tensor<?x3xf32> {
  %r = aten.view %x : (tensor<?x8xf32>) -> tensor<?x3xf32>
  func.return %r : tensor<?x3xf32>
}
// CHECK: 'aten.view': cannot view [?, 8] as [?, 3]: the element counts differ

// -----

func.func @upsample_rank(%x: tensor<2x3xf32>) -> tensor<4x6xf32> {
  %r = aten.upsample_nearest2d %x : (tensor<2x3xf32>) -> tensor<4x6xf32>
  func.return %r : tensor<4x6xf32>
}
// CHECK: 'aten.upsample_nearest2d': input must be 3-D or 4-D, got [2, 3]

// -----

func.func @upsample_channels(%x: tensor<1x2x3x4xf32>) -> tensor<1x3x6x8xf32> {
  %r = aten.upsample_bilinear2d %x : (tensor<1x2x3x4xf32>) -> tensor<1x3x6x8xf32>
  func.return %r : tensor<1x3x6x8xf32>
}
// CHECK: 'aten.upsample_bilinear2d': result 0 has shape [1, 3, 6, 8] but the operands imply [1, 2, 6, 8]

// -----

func.func @upsample_scale(%x: tensor<1x2x3x4xf32>) -> tensor<1x2x6x8xf32> {
  %r = aten.upsample_nearest2d %x {scales_h = -2.000000e+00 : f64} : (tensor<1x2x3x4xf32>) -> tensor<1x2x6x8xf32>
  func.return %r : tensor<1x2x6x8xf32>
}
// CHECK: 'aten.upsample_nearest2d': scales must be positive, got [-2.0, None]

// -----

func.func @signbit_float_result(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.signbit %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
// CHECK: 'aten.signbit': result must be a boolean (i1) tensor, got tensor<2x3xf32>

// -----

func.func @shift_float(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.bitwise_left_shift %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
// CHECK: 'aten.bitwise_left_shift': result must be an integer tensor, got tensor<2x3xf32>

// -----

func.func @topk_k_too_large(%x: tensor<2x3xf32>) -> (tensor<2x4xf32>, tensor<2x4xi64>) {
  %v, %i = aten.sort %x {dim = 1 : i64, k = 4 : i64} : (tensor<2x3xf32>) -> (tensor<2x4xf32>, tensor<2x4xi64>)
  func.return %v, %i : tensor<2x4xf32>, tensor<2x4xi64>
}
// CHECK: 'aten.sort': k = 4 is outside [0, 3] (dim 1's size)

// -----

func.func @sort_float_indices(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %v, %i = aten.sort %x {dim = 0 : i64} : (tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  func.return %v, %i : tensor<3xf32>, tensor<3xf32>
}
// CHECK: 'aten.sort': indices must
