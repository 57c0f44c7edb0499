// RUN: qopt-opt %s --split-input-file --verify-diagnostics | filecheck %s
// Verifier messages of qopt/dialects/coreml/ (opsets and dtypes).

func.func @blockwise_needs_ios18(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {coreml.opset = "iOS17"} {
  %d = coreml.const dense<1> : tensor<2x4xi8>
  %s = coreml.const dense<5.000000e-01> : tensor<2x1xf32>
  %w = coreml.constexpr_blockwise_shift_scale %d, %s : (tensor<2x4xi8>, tensor<2x1xf32>) -> tensor<2x4xf32>
  func.return %w : tensor<2x4xf32>
}
// CHECK: 'coreml.constexpr_blockwise_shift_scale': needs opset iOS18 or newer, function is iOS17

// -----

func.func @quantize_needs_ios17(%x: tensor<2x4xf32>) -> tensor<2x4xi8> attributes {coreml.opset = "iOS16"} {
  %s = coreml.const dense<5.000000e-02> : tensor<f32>
  %q = coreml.quantize %x, %s {output_dtype = "int8"} : tensor<2x4xf32>, tensor<f32> -> tensor<2x4xi8>
  func.return %q : tensor<2x4xi8>
}
// CHECK: 'coreml.quantize': needs opset iOS17 or newer, function is iOS16

// -----

func.func @scale_tiles_data(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %d = coreml.const dense<1> : tensor<2x4xi8>
  %s = coreml.const dense<5.000000e-01> : tensor<2x3xf32>
  %w = coreml.constexpr_blockwise_shift_scale %d, %s : (tensor<2x4xi8>, tensor<2x3xf32>) -> tensor<2x4xf32>
  func.return %w : tensor<2x4xf32>
}
// CHECK: scale shape [2, 3] must tile data shape [2, 4]

// -----

func.func @linear_weight_const(%x: tensor<2x4xf32>, %w: tensor<3x4xf32>) -> tensor<2x3xf32> {
  %y = coreml.linear %x, %w : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: weight must be a compile-time constant

// -----

func.func @quantize_int_input(%x: tensor<2x4xi32>) -> tensor<2x4xi8> {
  %s = coreml.const dense<5.000000e-02> : tensor<f32>
  %q = coreml.quantize %x, %s {output_dtype = "int8"} : tensor<2x4xi32>, tensor<f32> -> tensor<2x4xi8>
  func.return %q : tensor<2x4xi8>
}
// CHECK: 'coreml.quantize': operand must be one of ['fp16', 'fp32', 'int8', 'uint8'], got int32

// -----

func.func @slice_mask_rank(%x: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %s = coreml.slice_by_index %x {begin = array<i64: 0, 0>, end = array<i64: 4, 5>, stride = array<i64: 1, 1>, end_mask = array<i1: true>} : (tensor<4x5xf32>) -> tensor<4x5xf32>
  func.return %s : tensor<4x5xf32>
}
// CHECK: end_mask must have one entry per dim of x (rank 2)

// -----

func.func @slice_squeeze_shape(%x: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %s = coreml.slice_by_index %x {begin = array<i64: 0, 1>, end = array<i64: 4, 5>, stride = array<i64: 1, 1>, squeeze_mask = array<i1: false, true>} : (tensor<4x5xf32>) -> tensor<4x5xf32>
  func.return %s : tensor<4x5xf32>
}
// CHECK: 'coreml.slice_by_index': result must have shape [4] and the element type of x

// -----

func.func @slice_squeeze_range(%x: tensor<4x5xf32>) -> tensor<4xf32> {
  %s = coreml.slice_by_index %x {begin = array<i64: 0, 5>, end = array<i64: 4, 5>, stride = array<i64: 1, 1>, squeeze_mask = array<i1: false, true>} : (tensor<4x5xf32>) -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}
// CHECK: squeezed index 5 is out of range for a dim of size 5

// -----

func.func @slice_int8_needs_ios17(%x: tensor<4xi8>) -> tensor<2xi8> attributes {coreml.opset = "iOS16"} {
  %s = coreml.slice_by_index %x {begin = array<i64: 0>, end = array<i64: 2>, stride = array<i64: 1>} : (tensor<4xi8>) -> tensor<2xi8>
  func.return %s : tensor<2xi8>
}
// CHECK: 'coreml.slice_by_index': x must be one of ['bool', 'fp16', 'fp32', 'int32'], got int8

// -----

func.func @compare_types(%x: tensor<3xf32>, %y: tensor<3xi32>) -> tensor<3xi1> {
  %c = coreml.greater %x, %y : (tensor<3xf32>, tensor<3xi32>) -> tensor<3xi1>
  func.return %c : tensor<3xi1>
}
// CHECK: 'coreml.greater': x and y must have the same element type

// -----

func.func @compare_result(%x: tensor<3xf32>) -> tensor<3xf32> {
  %c = coreml.less %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %c : tensor<3xf32>
}
// CHECK: 'coreml.less': result must be a bool tensor of shape [3]

// -----

func.func @select_cond(%c: tensor<3xf32>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %s = coreml.select %c, %x, %x : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %s : tensor<3xf32>
}
// CHECK: 'coreml.select': cond must be one of ['bool'], got fp32

// -----

func.func @select_branches(%c: tensor<3xi1>, %x: tensor<3xf32>, %y: tensor<3xi32>) -> tensor<3xf32> {
  %s = coreml.select %c, %x, %y : (tensor<3xi1>, tensor<3xf32>, tensor<3xi32>) -> tensor<3xf32>
  func.return %s : tensor<3xf32>
}
// CHECK: 'coreml.select': a and b must have the same element type

// -----

func.func @gather_shape(%x: tensor<4x5xf32>, %i: tensor<2xi32>) -> tensor<4x5xf32> {
  %g = coreml.gather %x, %i {axis = 1 : i64} : (tensor<4x5xf32>, tensor<2xi32>) -> tensor<4x5xf32>
  func.return %g : tensor<4x5xf32>
}
// CHECK: 'coreml.gather': result must have shape [4, 2] and the element type of x

// -----

func.func @gather_int8_indices_need_ios17(%x: tensor<4x5xf32>, %i: tensor<2xi8>) -> tensor<2x5xf32> attributes {coreml.opset = "iOS16"} {
  %g = coreml.gather %x, %i {axis = 0 : i64} : (tensor<4x5xf32>, tensor<2xi8>) -> tensor<2x5xf32>
  func.return %g : tensor<2x5xf32>
}
// CHECK: 'coreml.gather': indices must be one of ['int16', 'int32', 'uint16'], got int8

// -----

func.func @batch_norm_rank(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %m = coreml.const dense<0.000000e+00> : tensor<2xf32>
  %y = coreml.batch_norm %x, %m, %m {epsilon = 1.000000e-05 : f64} : tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  func.return %y : tensor<4x2xf32>
}
// CHECK: 'coreml.batch_norm': x must be [N, C, *D] of rank 3 to 5, got [4, 2]

// -----

func.func @batch_norm_const(%x: tensor<1x2x3xf32>, %m: tensor<2xf32>) -> tensor<1x2x3xf32> {
  %y = coreml.batch_norm %x, %m, %m {epsilon = 1.000000e-05 : f64} : tensor<1x2x3xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x3xf32>
  func.return %y : tensor<1x2x3xf32>
}
// CHECK: 'coreml.batch_norm': mean must be a compile-time constant

// -----

func.func @batch_norm_param_type(%x: tensor<1x2x3xf16>) -> tensor<1x2x3xf16> attributes {coreml.opset = "iOS16"} {
  %m = coreml.const dense<0.000000e+00> : tensor<2xf32>
  %y = coreml.batch_norm %x, %m, %m {epsilon = 1.000000e-05 : f64} : tensor<1x2x3xf16>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x3xf16>
  func.return %y : tensor<1x2x3xf16>
}
// CHECK: 'coreml.batch_norm': mean must have the element type of x before iOS17, got fp32

// -----

func.func @tile_reps_rank(%x: tensor<2x4xf32>) -> tensor<2x12xf32> {
  %t = coreml.tile %x {reps = array<i64: 3>} : (tensor<2x4xf32>) -> tensor<2x12xf32>
  func.return %t : tensor<2x12xf32>
}
// CHECK: 'coreml.tile': reps must have one entry per dim of x (rank 2)

// -----

func.func @tile_reps_positive(%x: tensor<2x4xf32>) -> tensor<0x4xf32> {
  %t = coreml.tile %x {reps = array<i64: 0, 1>} : (tensor<2x4xf32>) -> tensor<0x4xf32>
  func.return %t : tensor<0x4xf32>
}
// CHECK: 'coreml.tile': reps [0, 1] must all be at least 1

// -----

func.func @tile_shape(%x: tensor<2x4xf32>) -> tensor<2x8xf32> {
  %t = coreml.tile %x {reps = array<i64: 1, 3>} : (tensor<2x4xf32>) -> tensor<2x8xf32>
  func.return %t : tensor<2x8xf32>
}
// CHECK: 'coreml.tile': result must have shape [2, 12] and the element type of x

// -----

func.func @tile_type(%x: tensor<2x4xi8>) -> tensor<2x8xi8> {
  %t = coreml.tile %x {reps = array<i64: 1, 2>} : (tensor<2x4xi8>) -> tensor<2x8xi8>
  func.return %t : tensor<2x8xi8>
}
// CHECK: 'coreml.tile': operand must be one of ['bool', 'fp16', 'fp32', 'int32'], got int8

// -----

func.func @logical_operands(%x: tensor<3xf32>, %y: tensor<3xi1>) -> tensor<3xi1> {
  %l = coreml.logical_and %x, %y : (tensor<3xf32>, tensor<3xi1>) -> tensor<3xi1>
  func.return %l : tensor<3xi1>
}
// CHECK: 'coreml.logical_and': operand must be one of ['bool'], got fp32

// -----

func.func @logical_result(%x: tensor<3xi1>, %y: tensor<2x1xi1>) -> tensor<3xi1> {
  %l = coreml.logical_or %x, %y : (tensor<3xi1>, tensor<2x1xi1>) -> tensor<3xi1>
  func.return %l : tensor<3xi1>
}
// CHECK: 'coreml.logical_or': result must be a bool tensor of shape [2, 3]

// -----

func.func @logical_broadcast(%x: tensor<3xi1>, %y: tensor<2xi1>) -> tensor<3xi1> {
  %l = coreml.logical_xor %x, %y : (tensor<3xi1>, tensor<2xi1>) -> tensor<3xi1>
  func.return %l : tensor<3xi1>
}
// CHECK: 'coreml.logical_xor': x and y shapes do not broadcast

// -----

func.func @sigmoid_hard_type(%x: tensor<3xi32>) -> tensor<3xi32> {
  %y = coreml.sigmoid_hard %x {alpha = 0.16666666666666666 : f64, beta = 5.000000e-01 : f64} : (tensor<3xi32>) -> tensor<3xi32>
  func.return %y : tensor<3xi32>
}
// CHECK: 'coreml.sigmoid_hard': operand must be one of ['fp16', 'fp32'], got int32

// -----

func.func @leaky_relu_shape(%x: tensor<3xf32>) -> tensor<4xf32> {
  %y = coreml.leaky_relu %x {alpha = 1.000000e-02 : f64} : (tensor<3xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK: 'coreml.leaky_relu': result must have the input's shape

// -----

func.func @abs_type(%x: tensor<3xi1>) -> tensor<3xi1> {
  %y = coreml.abs %x : (tensor<3xi1>) -> tensor<3xi1>
  func.return %y : tensor<3xi1>
}
// CHECK: 'coreml.abs': operand must be one of ['fp16', 'fp32', 'int32'], got bool

// -----

func.func @abs_result(%x: tensor<3xi32>) -> tensor<3xf32> {
  %y = coreml.abs %x : (tensor<3xi32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}
// CHECK: 'coreml.abs': result must have the element type of x

// -----

func.func @floor_type(%x: tensor<3xi32>) -> tensor<3xi32> {
  %y = coreml.floor %x : (tensor<3xi32>) -> tensor<3xi32>
  func.return %y : tensor<3xi32>
}
// CHECK: 'coreml.floor': operand must be one of ['fp16', 'fp32'], got int32

// -----

func.func @log_type(%x: tensor<3xi32>) -> tensor<3xi32> {
  %y = coreml.log %x {epsilon = 0.000000e+00 : f64} : (tensor<3xi32>) -> tensor<3xi32>
  func.return %y : tensor<3xi32>
}
// CHECK: 'coreml.log': operand must be one of ['fp16', 'fp32'], got int32

// -----

func.func @inverse_shape(%x: tensor<3xf32>) -> tensor<1xf32> {
  %y = coreml.inverse %x {epsilon = 0.000000e+00 : f64} : (tensor<3xf32>) -> tensor<1xf32>
  func.return %y : tensor<1xf32>
}
// CHECK: 'coreml.inverse': result must have the input's shape

// -----

func.func @mod_type(%x: tensor<3xi1>) -> tensor<3xi1> {
  %y = coreml.mod %x, %x : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  func.return %y : tensor<3xi1>
}
// CHECK: 'coreml.mod': operand must be one of ['fp16', 'fp32', 'int32'], got bool

// -----

func.func @reduce_min_type(%x: tensor<3xi8>) -> tensor<i8> {
  %y = coreml.reduce_min %x {axes = array<i64: 0>, keep_dims = false} : (tensor<3xi8>) -> tensor<i8>
  func.return %y : tensor<i8>
}
// CHECK: 'coreml.reduce_min': operand must be one of ['fp16', 'fp32', 'int32'], got int8

// -----

// Result types: every op's result shape and element type follow MIL's rules.

func.func @add_types(%x: tensor<3xf32>, %y: tensor<3xi32>) -> tensor<3xf32> {
  %z = coreml.add %x, %y : (tensor<3xf32>, tensor<3xi32>) -> tensor<3xf32>
  func.return %z : tensor<3xf32>
}
// CHECK: 'coreml.add': x and y must have the same element type, got fp32 and int32

// -----

func.func @sub_broadcast_shape(%x: tensor<4x1xf32>, %y: tensor<3xf32>) -> tensor<4x1xf32> {
  %z = coreml.sub %x, %y : (tensor<4x1xf32>, tensor<3xf32>) -> tensor<4x1xf32>
  func.return %z : tensor<4x1xf32>
}
// CHECK: 'coreml.sub': result must have shape [4, 3], got [4, 1]

// -----

func.func @mul_broadcast(%x: tensor<3xf32>, %y: tensor<2xf32>) -> tensor<3xf32> {
  %z = coreml.mul %x, %y : (tensor<3xf32>, tensor<2xf32>) -> tensor<3xf32>
  func.return %z : tensor<3xf32>
}
// CHECK: 'coreml.mul': x and y shapes do not broadcast: [3] and [2]

// -----

func.func @real_div_type(%x: tensor<3xf32>) -> tensor<3xi32> {
  %z = coreml.real_div %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi32>
  func.return %z : tensor<3xi32>
}
// CHECK: 'coreml.real_div': result must have element type fp32, got int32

// -----

func.func @relu_type(%x: tensor<3xf32>) -> tensor<3xf16> {
  %y = coreml.relu %x : (tensor<3xf32>) -> tensor<3xf16>
  func.return %y : tensor<3xf16>
}
// CHECK: 'coreml.relu': result must have the element type of x, fp32, got fp16

// -----

func.func @softmax_axis(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = coreml.softmax %x {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: 'coreml.softmax': axis 2 is out of range for rank 2

// -----

func.func @select_shape(%c: tensor<3xi1>, %x: tensor<2x1xf32>) -> tensor<2x1xf32> {
  %s = coreml.select %c, %x, %x : (tensor<3xi1>, tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  func.return %s : tensor<2x1xf32>
}
// CHECK: 'coreml.select': result must have shape [2, 3], got [2, 1]

// -----

func.func @matmul_inner(%x: tensor<2x4xf32>, %y: tensor<3x5xf32>) -> tensor<2x5xf32> {
  %z = coreml.matmul %x, %y {transpose_x = false, transpose_y = false} : (tensor<2x4xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  func.return %z : tensor<2x5xf32>
}
// CHECK: 'coreml.matmul': x [2, 4] and y [3, 5] do not multiply: 4 columns against 3 rows

// -----

func.func @matmul_transpose_y(%x: tensor<2x4xf32>, %y: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %z = coreml.matmul %x, %y {transpose_x = false, transpose_y = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  func.return %z : tensor<2x4xf32>
}
// CHECK: 'coreml.matmul': result must have shape [2, 3], got [2, 4]

// -----

func.func @matmul_transpose_x(%x: tensor<4x2xf32>, %y: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %z = coreml.matmul %x, %y {transpose_x = true, transpose_y = false} : (tensor<4x2xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return %z : tensor<4x3xf32>
}
// CHECK: 'coreml.matmul': result must have shape [2, 3], got [4, 3]

// -----

func.func @matmul_batch(%x: tensor<2x3x4xf32>, %y: tensor<5x4x6xf32>) -> tensor<2x3x6xf32> {
  %z = coreml.matmul %x, %y {transpose_x = false, transpose_y = false} : (tensor<2x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x3x6xf32>
  func.return %z : tensor<2x3x6xf32>
}
// CHECK: 'coreml.matmul': the batch dims of x [2, 3, 4] and y [5, 4, 6] do not broadcast

// -----

func.func @matmul_batch_shape(%x: tensor<2x1x3x4xf32>, %y: tensor<5x4x6xf32>) -> tensor<2x3x6xf32> {
  %z = coreml.matmul %x, %y {transpose_x = false, transpose_y = false} : (tensor<2x1x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x3x6xf32>
  func.return %z : tensor<2x3x6xf32>
}
// CHECK: 'coreml.matmul': result must have shape [2, 5, 3, 6], got [2, 3, 6]

// -----

func.func @matmul_vector(%x: tensor<4xf32>, %y: tensor<2x4x3xf32>) -> tensor<2x1x3xf32> {
  %z = coreml.matmul %x, %y {transpose_x = false, transpose_y = false} : (tensor<4xf32>, tensor<2x4x3xf32>) -> tensor<2x1x3xf32>
  func.return %z : tensor<2x1x3xf32>
}
// CHECK: 'coreml.matmul': result must have shape [2, 3], got [2, 1, 3]

// -----

func.func @matmul_vector_y(%x: tensor<2x3x4xf32>, %y: tensor<4xf32>) -> tensor<2x3x1xf32> {
  %z = coreml.matmul %x, %y {transpose_x = false, transpose_y = false} : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x1xf32>
  func.return %z : tensor<2x3x1xf32>
}
// CHECK: 'coreml.matmul': result must have shape [2, 3], got [2, 3, 1]

// -----

func.func @matmul_transpose_vector(%x: tensor<4xf32>, %y: tensor<4x3xf32>) -> tensor<3xf32> {
  %z = coreml.matmul %x, %y {transpose_x = true, transpose_y = false} : (tensor<4xf32>, tensor<4x3xf32>) -> tensor<3xf32>
  func.return %z : tensor<3xf32>
}
// CHECK: 'coreml.matmul': transpose_x needs x of rank 2 or more

// -----

func.func @matmul_types_ios16(%x: tensor<2x4xf32>, %y: tensor<4x3xf16>) -> tensor<2x3xf32> attributes {coreml.opset = "iOS16"} {
  %z = coreml.matmul %x, %y {transpose_x = false, transpose_y = false} : (tensor<2x4xf32>, tensor<4x3xf16>) -> tensor<2x3xf32>
  func.return %z : tensor<2x3xf32>
}
// CHECK: 'coreml.matmul': x and y must have the same element type before iOS17, got fp32 and fp16

// -----

func.func @matmul_const_type(%x: tensor<2x4xf32>) -> tensor<2x3xf16> {
  %y = coreml.const dense<1.000000e+00> : tensor<4x3xf16>
  %z = coreml.matmul %x, %y {transpose_x = false, transpose_y = false} : (tensor<2x4xf32>, tensor<4x3xf16>) -> tensor<2x3xf16>
  func.return %z : tensor<2x3xf16>
}
// CHECK: 'coreml.matmul': result must have element type fp32, got fp16

// -----

func.func @linear_type(%x: tensor<2x4xf32>) -> tensor<2x3xf16> {
  %w = coreml.const dense<1.000000e+00> : tensor<3x4xf32>
  %y = coreml.linear %x, %w : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf16>
  func.return %y : tensor<2x3xf16>
}
// CHECK: 'coreml.linear': result must have element type fp32, got fp16

// -----

func.func @linear_weight_type_ios16(%x: tensor<2x4xf16>) -> tensor<2x3xf16> attributes {coreml.opset = "iOS16"} {
  %w = coreml.const dense<1.000000e+00> : tensor<3x4xf32>
  %y = coreml.linear %x, %w : (tensor<2x4xf16>, tensor<3x4xf32>) -> tensor<2x3xf16>
  func.return %y : tensor<2x3xf16>
}
// CHECK: 'coreml.linear': x and weight must have the same element type, got fp16 and fp32

// -----

func.func @conv_shape(%x: tensor<1x2x5x5xf32>) -> tensor<1x4x5x5xf32> {
  %w = coreml.const dense<1.000000e+00> : tensor<4x2x3x3xf32>
  %y = coreml.conv %x, %w {strides = array<i64: 2, 2>, pad_type = "custom", pad = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x5x5xf32>
  func.return %y : tensor<1x4x5x5xf32>
}
// CHECK: 'coreml.conv': result must have shape [1, 4, 3, 3], got [1, 4, 5, 5]

// -----

func.func @conv_same_dilated(%x: tensor<1x1x7x7xf32>) -> tensor<1x1x3x3xf32> {
  %w = coreml.const dense<1.000000e+00> : tensor<1x1x3x3xf32>
  %y = coreml.conv %x, %w {strides = array<i64: 2, 2>, pad_type = "same", pad = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>, groups = 1 : i64} : (tensor<1x1x7x7xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
  func.return %y : tensor<1x1x3x3xf32>
}
// CHECK: 'coreml.conv': result must have shape [1, 1, 4, 4], got [1, 1, 3, 3]

// -----

func.func @conv_dilated_valid(%x: tensor<1x1x7x7xf32>) -> tensor<1x1x5x5xf32> {
  %w = coreml.const dense<1.000000e+00> : tensor<1x1x3x3xf32>
  %y = coreml.conv %x, %w {strides = array<i64: 1, 1>, pad_type = "valid", pad = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>, groups = 1 : i64} : (tensor<1x1x7x7xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x5x5xf32>
  func.return %y : tensor<1x1x5x5xf32>
}
// CHECK: 'coreml.conv': result must have shape [1, 1, 3, 3], got [1, 1, 5, 5]

// -----

func.func @conv_type(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf16> {
  %w = coreml.const dense<1.000000e+00> : tensor<1x1x3x3xf32>
  %y = coreml.conv %x, %w {strides = array<i64: 1, 1>, pad_type = "valid", pad = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf16>
  func.return %y : tensor<1x1x2x2xf16>
}
// CHECK: 'coreml.conv': result must have element type fp32, got fp16

// -----

func.func @conv_strides(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %w = coreml.const dense<1.000000e+00> : tensor<1x1x3x3xf32>
  %y = coreml.conv %x, %w {strides = array<i64: 1>, pad_type = "valid", pad = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
  func.return %y : tensor<1x1x2x2xf32>
}
// CHECK: 'coreml.conv': strides must have one entry per spatial dim (2), got [1]

// -----

func.func @conv_custom_pad(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %w = coreml.const dense<1.000000e+00> : tensor<1x1x3x3xf32>
  %y = coreml.conv %x, %w {strides = array<i64: 1, 1>, pad_type = "custom", pad = array<i64: 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
  func.return %y : tensor<1x1x2x2xf32>
}
// CHECK: 'coreml.conv': pad must have two entries (begin, end) per spatial dim (4), got [0, 0]

// -----

func.func @conv_groups(%x: tensor<1x4x4x4xf32>) -> tensor<1x3x2x2xf32> {
  %w = coreml.const dense<1.000000e+00> : tensor<3x2x3x3xf32>
  %y = coreml.conv %x, %w {strides = array<i64: 1, 1>, pad_type = "valid", pad = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x4x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x2x2xf32>
  func.return %y : tensor<1x3x2x2xf32>
}
// CHECK: 'coreml.conv': output channels 3 must be a multiple of groups 2

// -----

func.func @conv_bias(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %w = coreml.const dense<1.000000e+00> : tensor<1x1x3x3xf32>
  %b = coreml.const dense<1.000000e+00> : tensor<2xf32>
  %y = coreml.conv %x, %w, %b {strides = array<i64: 1, 1>, pad_type = "valid", pad = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>, tensor<2xf32>) -> tensor<1x1x2x2xf32>
  func.return %y : tensor<1x1x2x2xf32>
}
// CHECK: 'coreml.conv': bias must have shape [1], got [2]

// -----

func.func @conv_window(%x: tensor<1x1x2x2xf32>) -> tensor<1x1x1x1xf32> {
  %w = coreml.const dense<1.000000e+00> : tensor<1x1x3x3xf32>
  %y = coreml.conv %x, %w {strides = array<i64: 1, 1>, pad_type = "valid", pad = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x1x2x2xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x1x1xf32>
  func.return %y : tensor<1x1x1x1xf32>
}
// CHECK: 'coreml.conv': the window does not fit the padded input [1, 1, 2, 2]: output spatial size [0, 0]

// -----

func.func @max_pool_shape(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32> {
  %y = coreml.max_pool %x {kernel_sizes = array<i64: 2, 2>, strides = array<i64: 2, 2>, pad_type = "valid", pad = array<i64: 0, 0, 0, 0>, ceil_mode = false} : (tensor<1x3x8x8xf32>) -> tensor<1x3x8x8xf32>
  func.return %y : tensor<1x3x8x8xf32>
}
// CHECK: 'coreml.max_pool': result must have shape [1, 3, 4, 4], got [1, 3, 8, 8]

// -----

func.func @max_pool_same(%x: tensor<1x1x5x5xf32>) -> tensor<1x1x2x2xf32> {
  %y = coreml.max_pool %x {kernel_sizes = array<i64: 3, 3>, strides = array<i64: 2, 2>, pad_type = "same", pad = array<i64: 0, 0, 0, 0>, ceil_mode = false} : (tensor<1x1x5x5xf32>) -> tensor<1x1x2x2xf32>
  func.return %y : tensor<1x1x2x2xf32>
}
// CHECK: 'coreml.max_pool': result must have shape [1, 1, 3, 3], got [1, 1, 2, 2]

// -----

func.func @avg_pool_ceil(%x: tensor<1x1x5x5xf32>) -> tensor<1x1x2x2xf32> {
  %y = coreml.avg_pool %x {kernel_sizes = array<i64: 2, 2>, strides = array<i64: 2, 2>, pad_type = "custom", pad = array<i64: 0, 0, 0, 0>, ceil_mode = true, exclude_padding_from_average = false} : (tensor<1x1x5x5xf32>) -> tensor<1x1x2x2xf32>
  func.return %y : tensor<1x1x2x2xf32>
}
// CHECK: 'coreml.avg_pool': result must have shape [1, 1, 3, 3], got [1, 1, 2, 2]

// -----

func.func @max_pool_ceil_last_window(%x: tensor<1x1x5x5xf32>) -> tensor<1x1x4x4xf32> {
  %y = coreml.max_pool %x {kernel_sizes = array<i64: 2, 2>, strides = array<i64: 2, 2>, pad_type = "custom", pad = array<i64: 1, 1, 1, 1>, ceil_mode = true} : (tensor<1x1x5x5xf32>) -> tensor<1x1x4x4xf32>
  func.return %y : tensor<1x1x4x4xf32>
}
// CHECK: 'coreml.max_pool': result must have shape [1, 1, 3, 3], got [1, 1, 4, 4]

// -----

func.func @max_pool_type(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf16> {
  %y = coreml.max_pool %x {kernel_sizes = array<i64: 2, 2>, strides = array<i64: 2, 2>, pad_type = "valid", pad = array<i64: 0, 0, 0, 0>, ceil_mode = false} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf16>
  func.return %y : tensor<1x1x2x2xf16>
}
// CHECK: 'coreml.max_pool': result must have element type fp32, got fp16

// -----

func.func @pool_ceil_same(%x: tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32> {
  %y = coreml.max_pool %x {kernel_sizes = array<i64: 2, 2>, strides = array<i64: 2, 2>, pad_type = "same", pad = array<i64: 0, 0, 0, 0>, ceil_mode = true} : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32>
  func.return %y : tensor<1x1x3x3xf32>
}
// CHECK: 'coreml.max_pool': ceil_mode needs pad_type valid or custom, got same

// -----

func.func @pool_ceil_asymmetric(%x: tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32> {
  %y = coreml.avg_pool %x {kernel_sizes = array<i64: 2, 2>, strides = array<i64: 2, 2>, pad_type = "custom", pad = array<i64: 0, 1, 0, 1>, ceil_mode = true, exclude_padding_from_average = true} : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32>
  func.return %y : tensor<1x1x3x3xf32>
}
// CHECK: 'coreml.avg_pool': ceil_mode needs symmetric padding, got pad [0, 1, 0, 1]

// -----

func.func @pool_ceil_3d(%x: tensor<1x1x4x4x4xf32>) -> tensor<1x1x2x2x2xf32> {
  %y = coreml.max_pool %x {kernel_sizes = array<i64: 2, 2, 2>, strides = array<i64: 2, 2, 2>, pad_type = "valid", pad = array<i64: 0, 0, 0, 0, 0, 0>, ceil_mode = true} : (tensor<1x1x4x4x4xf32>) -> tensor<1x1x2x2x2xf32>
  func.return %y : tensor<1x1x2x2x2xf32>
}
// CHECK: 'coreml.max_pool': ceil_mode is only for 1-D and 2-D pools

// -----

func.func @pool_kernel(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> {
  %y = coreml.max_pool %x {kernel_sizes = array<i64: 0, 1>, strides = array<i64: 1, 1>, pad_type = "valid", pad = array<i64: 0, 0, 0, 0>, ceil_mode = false} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  func.return %y : tensor<1x1x4x4xf32>
}
// CHECK: 'coreml.max_pool': kernel_sizes [0, 1] must all be at least 1

// -----

func.func @pool_pad(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %y = coreml.avg_pool %x {kernel_sizes = array<i64: 2, 2>, strides = array<i64: 2, 2>, pad_type = "valid", pad = array<i64: 0, 0>, ceil_mode = false, exclude_padding_from_average = false} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  func.return %y : tensor<1x1x2x2xf32>
}
// CHECK: 'coreml.avg_pool': pad must have two entries (begin, end) per spatial dim (4), got [0, 0]

// -----

func.func @pool_rank(%x: tensor<4x4xf32>) -> tensor<2x2xf32> {
  %y = coreml.max_pool %x {kernel_sizes = array<i64: 2>, strides = array<i64: 2>, pad_type = "valid", pad = array<i64: 0, 0>, ceil_mode = false} : (tensor<4x4xf32>) -> tensor<2x2xf32>
  func.return %y : tensor<2x2xf32>
}
// CHECK: 'coreml.max_pool': x must be [N, C, *D] of rank 3 to 5, got [4, 4]

// -----

func.func @reduce_shape(%x: tensor<2x3x4xf32>) -> tensor<2x1x4xf32> {
  %y = coreml.reduce_sum %x {axes = array<i64: 1>, keep_dims = false} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  func.return %y : tensor<2x1x4xf32>
}
// CHECK: 'coreml.reduce_sum': result must have shape [2, 4], got [2, 1, 4]

// -----

func.func @reduce_keep_dims(%x: tensor<2x3x4xf32>) -> tensor<2x4xf32> {
  %y = coreml.reduce_mean %x {axes = array<i64: -2>, keep_dims = true} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK: 'coreml.reduce_mean': result must have shape [2, 1, 4], got [2, 4]

// -----

func.func @reduce_axis_range(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %y = coreml.reduce_max %x {axes = array<i64: 2>, keep_dims = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}
// CHECK: 'coreml.reduce_max': axes entry 2 is out of range for rank 2

// -----

func.func @reduce_axis_twice(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %y = coreml.reduce_min %x {axes = array<i64: 1, -1>, keep_dims = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}
// CHECK: 'coreml.reduce_min': axes [1, -1] name a dim twice

// -----

func.func @reduce_type(%x: tensor<2x3xi32>) -> tensor<2xf32> {
  %y = coreml.reduce_sum %x {axes = array<i64: 1>, keep_dims = false} : (tensor<2x3xi32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}
// CHECK: 'coreml.reduce_sum': result must have element type int32, got fp32

// -----

func.func @layer_norm_shape(%x: tensor<4x64xf32>) -> tensor<4x128xf32> {
  %y = coreml.layer_norm %x {axes = array<i64: 1>, epsilon = 1.000000e-05 : f64} : tensor<4x64xf32> -> tensor<4x128xf32>
  func.return %y : tensor<4x128xf32>
}
// CHECK: 'coreml.layer_norm': result must have shape [4, 64], got [4, 128]

// -----

func.func @layer_norm_type(%x: tensor<4x64xf32>) -> tensor<4x64xf16> {
  %y = coreml.layer_norm %x {axes = array<i64: 1>, epsilon = 1.000000e-05 : f64} : tensor<4x64xf32> -> tensor<4x64xf16>
  func.return %y : tensor<4x64xf16>
}
// CHECK: 'coreml.layer_norm': result must have element type fp32, got fp16

// -----

func.func @layer_norm_gamma_shape(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %g = coreml.const dense<1.000000e+00> : tensor<4xf32>
  %y = coreml.layer_norm %x gamma %g {axes = array<i64: -1>, epsilon = 1.000000e-05 : f64} : tensor<4x64xf32> gamma tensor<4xf32> -> tensor<4x64xf32>
  func.return %y : tensor<4x64xf32>
}
// CHECK: 'coreml.layer_norm': gamma must have the normalized shape [64], got [4]

// -----

func.func @layer_norm_beta_shape(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %b = coreml.const dense<0.000000e+00> : tensor<4x3xf32>
  %y = coreml.layer_norm %x beta %b {axes = array<i64: 2, 1>, epsilon = 1.000000e-05 : f64} : tensor<2x3x4xf32> beta tensor<4x3xf32> -> tensor<2x3x4xf32>
  func.return %y : tensor<2x3x4xf32>
}
// CHECK: 'coreml.layer_norm': beta must have the normalized shape [3, 4], got [4, 3]


// -----

func.func @layer_norm_gamma_type(%x: tensor<4x64xf16>) -> tensor<4x64xf16> attributes {coreml.opset = "iOS16"} {
  %g = coreml.const dense<1.000000e+00> : tensor<64xf32>
  %y = coreml.layer_norm %x gamma %g {axes = array<i64: 1>, epsilon = 1.000000e-05 : f64} : tensor<4x64xf16> gamma tensor<64xf32> -> tensor<4x64xf16>
  func.return %y : tensor<4x64xf16>
}
// CHECK: 'coreml.layer_norm': gamma must have the element type of x before iOS17, got fp32

// -----

func.func @layer_norm_axes(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %y = coreml.layer_norm %x {axes = array<i64: 2>, epsilon = 1.000000e-05 : f64} : tensor<4x64xf32> -> tensor<4x64xf32>
  func.return %y : tensor<4x64xf32>
}
// CHECK: 'coreml.layer_norm': axes entry 2 is out of range for rank 2

// -----

func.func @concat_shape(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x3xf32> {
  %c = coreml.concat %a, %b {axis = 1 : i64, interleave = false} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x3xf32>
  func.return %c : tensor<2x3xf32>
}
// CHECK: 'coreml.concat': result must have shape [2, 8], got [2, 3]

// -----

func.func @concat_interleave_shape(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %c = coreml.concat %a, %a {axis = -1 : i64, interleave = true} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %c : tensor<2x3xf32>
}
// CHECK: 'coreml.concat': result must have shape [2, 6], got [2, 3]

// -----

func.func @concat_off_axis(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) -> tensor<2x6xf32> {
  %c = coreml.concat %a, %b {axis = 1 : i64, interleave = false} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x6xf32>
  func.return %c : tensor<2x6xf32>
}
// CHECK: 'coreml.concat': values must have equal dims off axis, got {{\[\[2, 3\], \[4, 3\]\]}}

// -----

func.func @concat_interleave(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x8xf32> {
  %c = coreml.concat %a, %b {axis = 1 : i64, interleave = true} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  func.return %c : tensor<2x8xf32>
}
// CHECK: 'coreml.concat': values must have the same shape with interleave, got {{\[\[2, 3\], \[2, 5\]\]}}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %c = coreml.concat %a, %a {axis = 2 : i64, interleave = false} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  func.return %c : tensor<4x3xf32>
}
// CHECK: 'coreml.concat': axis 2 is out of range for rank 2

// -----

func.func @concat_types(%a: tensor<2x3xf32>, %b: tensor<2x3xi32>) -> tensor<4x3xf32> {
  %c = coreml.concat %a, %b {axis = 0 : i64, interleave = false} : (tensor<2x3xf32>, tensor<2x3xi32>) -> tensor<4x3xf32>
  func.return %c : tensor<4x3xf32>
}
// CHECK: 'coreml.concat': values[0] and values[1] must have the same element type, got fp32 and int32

// -----

func.func @concat_ranks(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<5x3xf32> {
  %c = coreml.concat %a, %b {axis = 0 : i64, interleave = false} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<5x3xf32>
  func.return %c : tensor<5x3xf32>
}
// CHECK: 'coreml.concat': values must have one rank of at least 1, got {{\[\[2, 3\], \[3\]\]}}

// -----

func.func @expand_dims_shape(%x: tensor<2x3xf32>) -> tensor<1x2x3xf32> {
  %y = coreml.expand_dims %x {axes = array<i64: 0, -1>} : (tensor<2x3xf32>) -> tensor<1x2x3xf32>
  func.return %y : tensor<1x2x3xf32>
}
// CHECK: 'coreml.expand_dims': result must have shape [1, 2, 3, 1], got [1, 2, 3]

// -----

func.func @expand_dims_axis(%x: tensor<2x3xf32>) -> tensor<2x3x1xf32> {
  %y = coreml.expand_dims %x {axes = array<i64: 3>} : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
  func.return %y : tensor<2x3x1xf32>
}
// CHECK: 'coreml.expand_dims': axes entry 3 is out of range for rank 3

// -----

func.func @squeeze_shape(%x: tensor<1x3x1xf32>) -> tensor<3xf32> {
  %y = coreml.squeeze %x {axes = array<i64: 0>} : (tensor<1x3x1xf32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}
// CHECK: 'coreml.squeeze': result must have shape [3, 1], got [3]

// -----

func.func @squeeze_axis_twice(%x: tensor<1x3x1xf32>) -> tensor<3x1xf32> {
  %y = coreml.squeeze %x {axes = array<i64: 0, -3>} : (tensor<1x3x1xf32>) -> tensor<3x1xf32>
  func.return %y : tensor<3x1xf32>
}
// CHECK: 'coreml.squeeze': axes [0, -3] name a dim twice

// -----

func.func @squeeze_type(%x: tensor<1x3xi32>) -> tensor<3xf32> {
  %y = coreml.squeeze %x {axes = array<i64: 0>} : (tensor<1x3xi32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}
// CHECK: 'coreml.squeeze': result must have element type int32, got fp32

// -----

func.func @reshape_shape(%x: tensor<2x4xf32>) -> tensor<8xf32> {
  %y = coreml.reshape %x {shape = array<i64: 4, 2>} : (tensor<2x4xf32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}
// CHECK: 'coreml.reshape': result must have shape [4, 2], got [8]

// -----

func.func @reshape_inferred(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %y = coreml.reshape %x {shape = array<i64: -1, 2>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK: 'coreml.reshape': result must have shape [4, 2], got [2, 4]

// -----

func.func @reshape_two_inferred(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %y = coreml.reshape %x {shape = array<i64: -1, -1>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
// CHECK: 'coreml.reshape': shape [-1, -1] may hold one -1 and no other negative dim

// -----

func.func @reshape_count(%x: tensor<2x4xf32>) -> tensor<3x3xf32> {
  %y = coreml.reshape %x {shape = array<i64: 3, 3>} : (tensor<2x4xf32>) -> tensor<3x3xf32>
  func.return %y : tensor<3x3xf32>
}
// CHECK: 'coreml.reshape': reshape must keep the number of elements (8): [3, 3]

// -----

func.func @transpose_shape(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %y = coreml.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: 'coreml.transpose': result must have shape [3, 2], got [2, 3]

// -----

func.func @sdpa_shape(%q: tensor<1x4x8xf32>, %k: tensor<1x6x8xf32>, %v: tensor<1x6x5xf32>) -> tensor<1x4x8xf32> {
  %a = coreml.scaled_dot_product_attention %q, %k, %v : (tensor<1x4x8xf32>, tensor<1x6x8xf32>, tensor<1x6x5xf32>) -> tensor<1x4x8xf32>
  func.return %a : tensor<1x4x8xf32>
}
// CHECK: 'coreml.scaled_dot_product_attention': result must have shape [1, 4, 5], got [1, 4, 8]

// -----

func.func @sdpa_batch(%q: tensor<2x4x8xf32>, %k: tensor<1x6x8xf32>) -> tensor<2x4x8xf32> {
  %a = coreml.scaled_dot_product_attention %q, %k, %k : (tensor<2x4x8xf32>, tensor<1x6x8xf32>, tensor<1x6x8xf32>) -> tensor<2x4x8xf32>
  func.return %a : tensor<2x4x8xf32>
}
// CHECK: 'coreml.scaled_dot_product_attention': query, key and value must have the same batch dims, got [2], [1] and [1]

// -----

func.func @sdpa_mask(%q: tensor<1x4x8xf32>, %k: tensor<1x6x8xf32>, %m: tensor<4x4xi1>) -> tensor<1x4x8xf32> {
  %a = coreml.scaled_dot_product_attention %q, %k, %k, %m : (tensor<1x4x8xf32>, tensor<1x6x8xf32>, tensor<1x6x8xf32>, tensor<4x4xi1>) -> tensor<1x4x8xf32>
  func.return %a : tensor<1x4x8xf32>
}
// CHECK: 'coreml.scaled_dot_product_attention': attn_mask [4, 4] must broadcast to [1, 4, 6]

// -----

func.func @sdpa_types(%q: tensor<1x4x8xf32>, %k: tensor<1x6x8xf16>) -> tensor<1x4x8xf32> {
  %a = coreml.scaled_dot_product_attention %q, %k, %k : (tensor<1x4x8xf32>, tensor<1x6x8xf16>, tensor<1x6x8xf16>) -> tensor<1x4x8xf32>
  func.return %a : tensor<1x4x8xf32>
}
// CHECK: 'coreml.scaled_dot_product_attention': query and key must have the same element type, got fp32 and fp16

// -----

func.func @sdpa_bool_query(%q: tensor<1x4x8xi1>) -> tensor<1x4x8xi1> {
  %a = coreml.scaled_dot_product_attention %q, %q, %q : (tensor<1x4x8xi1>, tensor<1x4x8xi1>, tensor<1x4x8xi1>) -> tensor<1x4x8xi1>
  func.return %a : tensor<1x4x8xi1>
}
// CHECK: 'coreml.scaled_dot_product_attention': query must be one of ['fp16', 'fp32'], got bool

// -----

func.func @quantize_axis(%x: tensor<2x4xf32>) -> tensor<2x4xi8> {
  %s = coreml.const dense<5.000000e-02> : tensor<4xf32>
  %q = coreml.quantize %x, %s {axis = 2 : i64, output_dtype = "int8"} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xi8>
  func.return %q : tensor<2x4xi8>
}
// CHECK: 'coreml.quantize': axis 2 is out of range for rank 2

// -----

func.func @quantize_scale_type(%x: tensor<2x4xf16>) -> tensor<2x4xi8> {
  %s = coreml.const dense<5.000000e-02> : tensor<f32>
  %q = coreml.quantize %x, %s {output_dtype = "int8"} : tensor<2x4xf16>, tensor<f32> -> tensor<2x4xi8>
  func.return %q : tensor<2x4xi8>
}
// CHECK: 'coreml.quantize': input and scale must have the same element type, got fp16 and fp32

// -----

func.func @quantize_shape(%x: tensor<2x4xf32>) -> tensor<8xi8> {
  %s = coreml.const dense<5.000000e-02> : tensor<f32>
  %q = coreml.quantize %x, %s {output_dtype = "int8"} : tensor<2x4xf32>, tensor<f32> -> tensor<8xi8>
  func.return %q : tensor<8xi8>
}
// CHECK: 'coreml.quantize': result must have shape [2, 4], got [8]

// -----

func.func @dequantize_type(%x: tensor<2x4xi8>) -> tensor<2x4xf16> {
  %s = coreml.const dense<5.000000e-02> : tensor<f32>
  %d = coreml.dequantize %x, %s : tensor<2x4xi8>, tensor<f32> -> tensor<2x4xf16>
  func.return %d : tensor<2x4xf16>
}
// CHECK: 'coreml.dequantize': result must have element type fp32, got fp16

// -----

func.func @lut_vector_axis(%x: tensor<2x4xf32>) -> tensor<4x4xf32> {
  %vi = coreml.const dense<1> : tensor<2x4xui1>
  %vl = coreml.const dense<5.000000e-01> : tensor<1x1x2x2xf32>
  %v = coreml.constexpr_lut_to_dense %vi, %vl {vector_axis = 2 : i64} : (tensor<2x4xui1>, tensor<1x1x2x2xf32>) -> tensor<4x4xf32>
  func.return %v : tensor<4x4xf32>
}
// CHECK: 'coreml.constexpr_lut_to_dense': vector_axis 2 is out of range for rank 2

// -----

ml_program.global private mutable @cache : tensor<4xf16>
func.func @state_needs_ios18() -> tensor<4xf16> attributes {coreml.opset = "iOS17"} {
  %c = coreml.read_state @cache : tensor<4xf16>
  func.return %c : tensor<4xf16>
}
// CHECK: 'coreml.read_state': needs opset iOS18 or newer, function is iOS17

// -----

func.func @state_is_no_global() -> tensor<4xf16> {
  %c = coreml.read_state @cache : tensor<4xf16>
  func.return %c : tensor<4xf16>
}
// CHECK: 'coreml.read_state': {{.*}}@cache is not an ml_program.global

// -----

ml_program.global private @table(dense<1.0> : tensor<4xf16>) : tensor<4xf16>
func.func @state_must_be_mutable() -> tensor<4xf16> {
  %c = coreml.read_state @table : tensor<4xf16>
  func.return %c : tensor<4xf16>
}
// CHECK: 'coreml.read_state': @table is not a mutable global (a state)

// -----

ml_program.global private mutable @cache : tensor<4xf16>
func.func @update_has_the_state_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  %u = coreml.coreml_update_state @cache, %x : tensor<4xf32>
  func.return %u : tensor<4xf32>
}
// CHECK: 'coreml.coreml_update_state': type tensor<4xf32> differs from the type of state @cache, tensor<4xf16>

// -----

ml_program.global private mutable @steps : tensor<4xi64>
func.func @state_types(%x: tensor<4xi64>) -> tensor<4xi64> {
  %u = coreml.coreml_update_state @steps, %x : tensor<4xi64>
  func.return %u : tensor<4xi64>
}
// CHECK: 'coreml.coreml_update_state': operand must be one of ['bool', 'fp16', 'fp32', 'int16', 'int32', 'int8', 'uint16', 'uint8'], got int64

// -----

func.func @scatter_updates_shape(%x: tensor<2x5xf32>, %i: tensor<2xi32>, %u: tensor<2x3xf32>) -> tensor<2x5xf32> {
  %r = coreml.scatter %x, %i, %u {axis = 1 : i64, mode = "update"} : (tensor<2x5xf32>, tensor<2xi32>, tensor<2x3xf32>) -> tensor<2x5xf32>
  func.return %r : tensor<2x5xf32>
}
// CHECK: 'coreml.scatter': updates must have shape [2, 2] (data's with the indices on axis 1), got [2, 3]

// -----

func.func @scatter_mode(%x: tensor<5xf32>, %i: tensor<1xi32>, %u: tensor<1xf32>) -> tensor<5xf32> {
  %r = coreml.scatter %x, %i, %u {axis = 0 : i64, mode = "replace"} : (tensor<5xf32>, tensor<1xi32>, tensor<1xf32>) -> tensor<5xf32>
  func.return %r : tensor<5xf32>
}
// CHECK: 'coreml.scatter': mode must be one of update, add, sub, mul, div, max, min, got replace

// -----

func.func @pad_negative(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %p = coreml.pad %x {pad = array<i64: 0, -1>, mode = "constant", constant_val = 0.000000e+00 : f64} : (tensor<2x4xf32>) -> tensor<2x3xf32>
  func.return %p : tensor<2x3xf32>
}
// CHECK: pad amounts [0, -1] must be at least 0

// -----

func.func @pad_result_shape(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %p = coreml.pad %x {pad = array<i64: 1, 1>, mode = "constant", constant_val = 0.000000e+00 : f64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %p : tensor<2x4xf32>
}
// CHECK: result must have shape [2, 6] and the element type of x

// -----

func.func @pad_int(%x: tensor<2x4xi32>) -> tensor<2x6xi32> {
  %p = coreml.pad %x {pad = array<i64: 1, 1>, mode = "constant", constant_val = 0.000000e+00 : f64} : (tensor<2x4xi32>) -> tensor<2x6xi32>
  func.return %p : tensor<2x6xi32>
}
// CHECK: operand must be one of {{\[}}'fp16', 'fp32'], got int32
