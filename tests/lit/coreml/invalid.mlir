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
