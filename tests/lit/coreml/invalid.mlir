// RUN: qopt-opt %s --split-input-file --verify-diagnostics | filecheck %s
// Verifier messages of qopt/dialects/coreml.py (opsets and dtypes).

func.func @blockwise_needs_ios18(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {coreml.opset = "iOS17"} {
  %d = "coreml.const"() <{value = dense<1> : tensor<2x4xi8>}> : () -> tensor<2x4xi8>
  %s = "coreml.const"() <{value = dense<5.000000e-01> : tensor<2x1xf32>}> : () -> tensor<2x1xf32>
  %w = "coreml.constexpr_blockwise_shift_scale"(%d, %s) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<2x4xi8>, tensor<2x1xf32>) -> tensor<2x4xf32>
  func.return %w : tensor<2x4xf32>
}
// CHECK: 'coreml.constexpr_blockwise_shift_scale': needs opset iOS18 or newer, function is iOS17

// -----

func.func @quantize_needs_ios17(%x: tensor<2x4xf32>) -> tensor<2x4xi8> attributes {coreml.opset = "iOS16"} {
  %s = "coreml.const"() <{value = dense<5.000000e-02> : tensor<f32>}> : () -> tensor<f32>
  %q = "coreml.quantize"(%x, %s) <{operandSegmentSizes = array<i32: 1, 0, 1>, output_dtype = "int8"}> : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xi8>
  func.return %q : tensor<2x4xi8>
}
// CHECK: 'coreml.quantize': needs opset iOS17 or newer, function is iOS16

// -----

func.func @scale_tiles_data(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %d = "coreml.const"() <{value = dense<1> : tensor<2x4xi8>}> : () -> tensor<2x4xi8>
  %s = "coreml.const"() <{value = dense<5.000000e-01> : tensor<2x3xf32>}> : () -> tensor<2x3xf32>
  %w = "coreml.constexpr_blockwise_shift_scale"(%d, %s) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<2x4xi8>, tensor<2x3xf32>) -> tensor<2x4xf32>
  func.return %w : tensor<2x4xf32>
}
// CHECK: scale shape [2, 3] must tile data shape [2, 4]

// -----

func.func @linear_weight_const(%x: tensor<2x4xf32>, %w: tensor<3x4xf32>) -> tensor<2x3xf32> {
  %y = "coreml.linear"(%x, %w) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
// CHECK: weight must be a compile-time constant

// -----

func.func @quantize_int_input(%x: tensor<2x4xi32>) -> tensor<2x4xi8> {
  %s = "coreml.const"() <{value = dense<5.000000e-02> : tensor<f32>}> : () -> tensor<f32>
  %q = "coreml.quantize"(%x, %s) <{operandSegmentSizes = array<i32: 1, 0, 1>, output_dtype = "int8"}> : (tensor<2x4xi32>, tensor<f32>) -> tensor<2x4xi8>
  func.return %q : tensor<2x4xi8>
}
// CHECK: 'coreml.quantize': operand must be one of ['fp16', 'fp32', 'int8', 'uint8'], got int32

// -----

func.func @slice_mask_rank(%x: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %s = "coreml.slice_by_index"(%x) <{begin = array<i64: 0, 0>, end = array<i64: 4, 5>, stride = array<i64: 1, 1>, end_mask = array<i1: true>}> : (tensor<4x5xf32>) -> tensor<4x5xf32>
  func.return %s : tensor<4x5xf32>
}
// CHECK: end_mask must have one entry per dim of x (rank 2)

// -----

func.func @slice_squeeze_shape(%x: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %s = "coreml.slice_by_index"(%x) <{begin = array<i64: 0, 1>, end = array<i64: 4, 5>, stride = array<i64: 1, 1>, squeeze_mask = array<i1: false, true>}> : (tensor<4x5xf32>) -> tensor<4x5xf32>
  func.return %s : tensor<4x5xf32>
}
// CHECK: 'coreml.slice_by_index': result must have shape [4] and the element type of x

// -----

func.func @slice_squeeze_range(%x: tensor<4x5xf32>) -> tensor<4xf32> {
  %s = "coreml.slice_by_index"(%x) <{begin = array<i64: 0, 5>, end = array<i64: 4, 5>, stride = array<i64: 1, 1>, squeeze_mask = array<i1: false, true>}> : (tensor<4x5xf32>) -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}
// CHECK: squeezed index 5 is out of range for a dim of size 5

// -----

func.func @slice_int8_needs_ios17(%x: tensor<4xi8>) -> tensor<2xi8> attributes {coreml.opset = "iOS16"} {
  %s = "coreml.slice_by_index"(%x) <{begin = array<i64: 0>, end = array<i64: 2>, stride = array<i64: 1>}> : (tensor<4xi8>) -> tensor<2xi8>
  func.return %s : tensor<2xi8>
}
// CHECK: 'coreml.slice_by_index': x must be one of ['bool', 'fp16', 'fp32', 'int32'], got int8

// -----

func.func @compare_types(%x: tensor<3xf32>, %y: tensor<3xi32>) -> tensor<3xi1> {
  %c = "coreml.greater"(%x, %y) : (tensor<3xf32>, tensor<3xi32>) -> tensor<3xi1>
  func.return %c : tensor<3xi1>
}
// CHECK: 'coreml.greater': x and y must have the same element type

// -----

func.func @compare_result(%x: tensor<3xf32>) -> tensor<3xf32> {
  %c = "coreml.less"(%x, %x) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %c : tensor<3xf32>
}
// CHECK: 'coreml.less': result must be a bool tensor of shape [3]

// -----

func.func @select_cond(%c: tensor<3xf32>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %s = "coreml.select"(%c, %x, %x) : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %s : tensor<3xf32>
}
// CHECK: 'coreml.select': cond must be one of ['bool'], got fp32

// -----

func.func @select_branches(%c: tensor<3xi1>, %x: tensor<3xf32>, %y: tensor<3xi32>) -> tensor<3xf32> {
  %s = "coreml.select"(%c, %x, %y) : (tensor<3xi1>, tensor<3xf32>, tensor<3xi32>) -> tensor<3xf32>
  func.return %s : tensor<3xf32>
}
// CHECK: 'coreml.select': a and b must have the same element type

// -----

func.func @gather_shape(%x: tensor<4x5xf32>, %i: tensor<2xi32>) -> tensor<4x5xf32> {
  %g = "coreml.gather"(%x, %i) <{axis = 1 : i64}> : (tensor<4x5xf32>, tensor<2xi32>) -> tensor<4x5xf32>
  func.return %g : tensor<4x5xf32>
}
// CHECK: 'coreml.gather': result must have shape [4, 2] and the element type of x

// -----

func.func @gather_int8_indices_need_ios17(%x: tensor<4x5xf32>, %i: tensor<2xi8>) -> tensor<2x5xf32> attributes {coreml.opset = "iOS16"} {
  %g = "coreml.gather"(%x, %i) <{axis = 0 : i64}> : (tensor<4x5xf32>, tensor<2xi8>) -> tensor<2x5xf32>
  func.return %g : tensor<2x5xf32>
}
// CHECK: 'coreml.gather': indices must be one of ['int16', 'int32', 'uint16'], got int8

// -----

func.func @batch_norm_rank(%x: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %m = "coreml.const"() <{value = dense<0.000000e+00> : tensor<2xf32>}> : () -> tensor<2xf32>
  %y = "coreml.batch_norm"(%x, %m, %m) <{epsilon = 1.000000e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (tensor<4x2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  func.return %y : tensor<4x2xf32>
}
// CHECK: 'coreml.batch_norm': x must be [N, C, *D] of rank 3 to 5, got [4, 2]

// -----

func.func @batch_norm_const(%x: tensor<1x2x3xf32>, %m: tensor<2xf32>) -> tensor<1x2x3xf32> {
  %y = "coreml.batch_norm"(%x, %m, %m) <{epsilon = 1.000000e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (tensor<1x2x3xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3xf32>
  func.return %y : tensor<1x2x3xf32>
}
// CHECK: 'coreml.batch_norm': mean must be a compile-time constant

// -----

func.func @batch_norm_param_type(%x: tensor<1x2x3xf16>) -> tensor<1x2x3xf16> attributes {coreml.opset = "iOS16"} {
  %m = "coreml.const"() <{value = dense<0.000000e+00> : tensor<2xf32>}> : () -> tensor<2xf32>
  %y = "coreml.batch_norm"(%x, %m, %m) <{epsilon = 1.000000e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (tensor<1x2x3xf16>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3xf16>
  func.return %y : tensor<1x2x3xf16>
}
// CHECK: 'coreml.batch_norm': mean must have the element type of x before iOS17, got fp32

// -----

func.func @tile_reps_rank(%x: tensor<2x4xf32>) -> tensor<2x12xf32> {
  %t = "coreml.tile"(%x) <{reps = array<i64: 3>}> : (tensor<2x4xf32>) -> tensor<2x12xf32>
  func.return %t : tensor<2x12xf32>
}
// CHECK: 'coreml.tile': reps must have one entry per dim of x (rank 2)

// -----

func.func @tile_reps_positive(%x: tensor<2x4xf32>) -> tensor<0x4xf32> {
  %t = "coreml.tile"(%x) <{reps = array<i64: 0, 1>}> : (tensor<2x4xf32>) -> tensor<0x4xf32>
  func.return %t : tensor<0x4xf32>
}
// CHECK: 'coreml.tile': reps [0, 1] must all be at least 1

// -----

func.func @tile_shape(%x: tensor<2x4xf32>) -> tensor<2x8xf32> {
  %t = "coreml.tile"(%x) <{reps = array<i64: 1, 3>}> : (tensor<2x4xf32>) -> tensor<2x8xf32>
  func.return %t : tensor<2x8xf32>
}
// CHECK: 'coreml.tile': result must have shape [2, 12] and the element type of x

// -----

func.func @tile_type(%x: tensor<2x4xi8>) -> tensor<2x8xi8> {
  %t = "coreml.tile"(%x) <{reps = array<i64: 1, 2>}> : (tensor<2x4xi8>) -> tensor<2x8xi8>
  func.return %t : tensor<2x8xi8>
}
// CHECK: 'coreml.tile': operand must be one of ['bool', 'fp16', 'fp32', 'int32'], got int8

// -----

func.func @logical_operands(%x: tensor<3xf32>, %y: tensor<3xi1>) -> tensor<3xi1> {
  %l = "coreml.logical_and"(%x, %y) : (tensor<3xf32>, tensor<3xi1>) -> tensor<3xi1>
  func.return %l : tensor<3xi1>
}
// CHECK: 'coreml.logical_and': operand must be one of ['bool'], got fp32

// -----

func.func @logical_result(%x: tensor<3xi1>, %y: tensor<2x1xi1>) -> tensor<3xi1> {
  %l = "coreml.logical_or"(%x, %y) : (tensor<3xi1>, tensor<2x1xi1>) -> tensor<3xi1>
  func.return %l : tensor<3xi1>
}
// CHECK: 'coreml.logical_or': result must be a bool tensor of shape [2, 3]

// -----

func.func @logical_broadcast(%x: tensor<3xi1>, %y: tensor<2xi1>) -> tensor<3xi1> {
  %l = "coreml.logical_xor"(%x, %y) : (tensor<3xi1>, tensor<2xi1>) -> tensor<3xi1>
  func.return %l : tensor<3xi1>
}
// CHECK: 'coreml.logical_xor': x and y shapes do not broadcast

// -----

func.func @sigmoid_hard_type(%x: tensor<3xi32>) -> tensor<3xi32> {
  %y = "coreml.sigmoid_hard"(%x) <{alpha = 0.16666666666666666 : f64, beta = 5.000000e-01 : f64}> : (tensor<3xi32>) -> tensor<3xi32>
  func.return %y : tensor<3xi32>
}
// CHECK: 'coreml.sigmoid_hard': operand must be one of ['fp16', 'fp32'], got int32

// -----

func.func @leaky_relu_shape(%x: tensor<3xf32>) -> tensor<4xf32> {
  %y = "coreml.leaky_relu"(%x) <{alpha = 1.000000e-02 : f64}> : (tensor<3xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
// CHECK: 'coreml.leaky_relu': result must have the input's shape

// -----

func.func @abs_type(%x: tensor<3xi1>) -> tensor<3xi1> {
  %y = "coreml.abs"(%x) : (tensor<3xi1>) -> tensor<3xi1>
  func.return %y : tensor<3xi1>
}
// CHECK: 'coreml.abs': operand must be one of ['fp16', 'fp32', 'int32'], got bool

// -----

func.func @abs_result(%x: tensor<3xi32>) -> tensor<3xf32> {
  %y = "coreml.abs"(%x) : (tensor<3xi32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}
// CHECK: 'coreml.abs': result must have the element type of x

// -----

func.func @floor_type(%x: tensor<3xi32>) -> tensor<3xi32> {
  %y = "coreml.floor"(%x) : (tensor<3xi32>) -> tensor<3xi32>
  func.return %y : tensor<3xi32>
}
// CHECK: 'coreml.floor': operand must be one of ['fp16', 'fp32'], got int32

// -----

func.func @log_type(%x: tensor<3xi32>) -> tensor<3xi32> {
  %y = "coreml.log"(%x) <{epsilon = 0.000000e+00 : f64}> : (tensor<3xi32>) -> tensor<3xi32>
  func.return %y : tensor<3xi32>
}
// CHECK: 'coreml.log': operand must be one of ['fp16', 'fp32'], got int32

// -----

func.func @inverse_shape(%x: tensor<3xf32>) -> tensor<1xf32> {
  %y = "coreml.inverse"(%x) <{epsilon = 0.000000e+00 : f64}> : (tensor<3xf32>) -> tensor<1xf32>
  func.return %y : tensor<1xf32>
}
// CHECK: 'coreml.inverse': result must have the input's shape

// -----

func.func @mod_type(%x: tensor<3xi1>) -> tensor<3xi1> {
  %y = "coreml.mod"(%x, %x) : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  func.return %y : tensor<3xi1>
}
// CHECK: 'coreml.mod': operand must be one of ['fp16', 'fp32', 'int32'], got bool

// -----

func.func @reduce_min_type(%x: tensor<3xi8>) -> tensor<i8> {
  %y = "coreml.reduce_min"(%x) <{axes = array<i64: 0>, keep_dims = false}> : (tensor<3xi8>) -> tensor<i8>
  func.return %y : tensor<i8>
}
// CHECK: 'coreml.reduce_min': operand must be one of ['fp16', 'fp32', 'int32'], got int8
