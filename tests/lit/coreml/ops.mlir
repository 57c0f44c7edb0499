// RUN: QOPT_ROUNDTRIP
// Round trip of the coreml op families (generic form).

// CHECK-LABEL: func.func @compressed_linear(
// CHECK:         "coreml.constexpr_blockwise_shift_scale"
// CHECK:         "coreml.linear"
// CHECK:         "coreml.constexpr_lut_to_dense"
// CHECK:         "coreml.matmul"
func.func @compressed_linear(%x: tensor<2x4xf32>) -> tensor<2x2xf32> attributes {coreml.opset = "iOS18"} {
  %d = "coreml.const"() <{value = dense<1> : tensor<2x4xi8>}> : () -> tensor<2x4xi8>
  %s = "coreml.const"() <{value = dense<5.000000e-01> : tensor<2x2xf32>}> : () -> tensor<2x2xf32>
  %w = "coreml.constexpr_blockwise_shift_scale"(%d, %s) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<2x4xi8>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %b = "coreml.const"() <{value = dense<1.000000e+00> : tensor<2xf32>}> : () -> tensor<2xf32>
  %y = "coreml.linear"(%x, %w, %b) <{operandSegmentSizes = array<i32: 1, 1, 1>}> : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %i = "coreml.const"() <{value = dense<3> : tensor<2x4xui8>}> : () -> tensor<2x4xui8>
  %l = "coreml.const"() <{value = dense<2.500000e-01> : tensor<1x1x256x1xf32>}> : () -> tensor<1x1x256x1xf32>
  %w2 = "coreml.constexpr_lut_to_dense"(%i, %l) : (tensor<2x4xui8>, tensor<1x1x256x1xf32>) -> tensor<2x4xf32>
  %z = "coreml.matmul"(%x, %w2) <{transpose_x = false, transpose_y = true}> : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x2xf32>
  %r = "coreml.add"(%y, %z) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  func.return %r : tensor<2x2xf32>
}

// CHECK-LABEL: func.func @activation_quant(
// CHECK:         "coreml.quantize"
// CHECK-SAME:    output_dtype = "int8"
// CHECK:         "coreml.dequantize"
func.func @activation_quant(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {coreml.opset = "iOS17"} {
  %zp = "coreml.const"() <{value = dense<3> : tensor<i8>}> : () -> tensor<i8>
  %s = "coreml.const"() <{value = dense<5.000000e-02> : tensor<f32>}> : () -> tensor<f32>
  %q = "coreml.quantize"(%x, %zp, %s) <{operandSegmentSizes = array<i32: 1, 1, 1>, output_dtype = "int8"}> : (tensor<2x4xf32>, tensor<i8>, tensor<f32>) -> tensor<2x4xi8>
  %d = "coreml.dequantize"(%q, %zp, %s) <{operandSegmentSizes = array<i32: 1, 1, 1>}> : (tensor<2x4xi8>, tensor<i8>, tensor<f32>) -> tensor<2x4xf32>
  func.return %d : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @float_ops(
// CHECK:         "coreml.reshape"
// CHECK:         "coreml.transpose"
// CHECK:         "coreml.softmax"
// CHECK:         "coreml.reduce_mean"
// CHECK:         "coreml.gelu"
func.func @float_ops(%x: tensor<2x4xf32>) -> tensor<4x1xf32> {
  %a = "coreml.reshape"(%x) <{shape = array<i64: 4, 2>}> : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %b = "coreml.transpose"(%a) <{perm = array<i64: 1, 0>}> : (tensor<4x2xf32>) -> tensor<2x4xf32>
  %c = "coreml.softmax"(%b) <{axis = -1 : i64}> : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %t = "coreml.transpose"(%c) <{perm = array<i64: 1, 0>}> : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %m = "coreml.reduce_mean"(%t) <{axes = array<i64: 1>, keep_dims = true}> : (tensor<4x2xf32>) -> tensor<4x1xf32>
  %g = "coreml.gelu"(%m) <{mode = "EXACT"}> : (tensor<4x1xf32>) -> tensor<4x1xf32>
  func.return %g : tensor<4x1xf32>
}

// CHECK-LABEL: func.func @indexing(
// CHECK:         "coreml.slice_by_index"(%x) <{begin = array<i64: 7, -2, 0>, end = array<i64: 2, 0, 0>, stride = array<i64: 1, 1, -1>, begin_mask = array<i1: true, false, true>, end_mask = array<i1: false, false, true>, squeeze_mask = array<i1: false, true, false>}>
// CHECK:         "coreml.gather"(%x, %{{.*}}) <{axis = 2 : i64}>
// CHECK:         "coreml.greater"
// CHECK:         "coreml.less_equal"
// CHECK:         "coreml.equal"
// CHECK:         "coreml.not_equal"
// CHECK:         "coreml.less"
// CHECK:         "coreml.greater_equal"
// CHECK:         "coreml.select"
func.func @indexing(%x: tensor<4x5x6xf32>) -> (tensor<2x6xf32>, tensor<4x5x2xf32>, tensor<4x5x6xf32>) attributes {coreml.opset = "iOS16"} {
  %s = "coreml.slice_by_index"(%x) <{begin = array<i64: 7, -2, 0>, end = array<i64: 2, 0, 0>, stride = array<i64: 1, 1, -1>, begin_mask = array<i1: true, false, true>, end_mask = array<i1: false, false, true>, squeeze_mask = array<i1: false, true, false>}> : (tensor<4x5x6xf32>) -> tensor<2x6xf32>
  %i = "coreml.const"() <{value = dense<[5, 0]> : tensor<2xi32>}> : () -> tensor<2xi32>
  %g = "coreml.gather"(%x, %i) <{axis = 2 : i64}> : (tensor<4x5x6xf32>, tensor<2xi32>) -> tensor<4x5x2xf32>
  %z = "coreml.const"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
  %c0 = "coreml.greater"(%x, %z) : (tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xi1>
  %c1 = "coreml.less_equal"(%x, %z) : (tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xi1>
  %c2 = "coreml.equal"(%x, %z) : (tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xi1>
  %c3 = "coreml.not_equal"(%x, %z) : (tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xi1>
  %c4 = "coreml.less"(%x, %z) : (tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xi1>
  %c5 = "coreml.greater_equal"(%x, %z) : (tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xi1>
  %w = "coreml.select"(%c0, %x, %z) : (tensor<4x5x6xi1>, tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xf32>
  func.return %s, %g, %w : tensor<2x6xf32>, tensor<4x5x2xf32>, tensor<4x5x6xf32>
}

// CHECK-LABEL: func.func @batch_norm(
// CHECK:         "coreml.batch_norm"(%x, %{{.*}}, %{{.*}}, %{{.*}}) <{epsilon = 1.000000e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1>}>
func.func @batch_norm(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %m = "coreml.const"() <{value = dense<[1.000000e+00, -1.000000e+00]> : tensor<2xf32>}> : () -> tensor<2xf32>
  %v = "coreml.const"() <{value = dense<[4.000000e+00, 2.500000e-01]> : tensor<2xf32>}> : () -> tensor<2xf32>
  %b = "coreml.const"() <{value = dense<[5.000000e-01, 0.000000e+00]> : tensor<2xf32>}> : () -> tensor<2xf32>
  %y = "coreml.batch_norm"(%x, %m, %v, %b) <{epsilon = 1.000000e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1>}> : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  func.return %y : tensor<1x2x3x3xf32>
}

// CHECK-LABEL: func.func @tile_and_logic(
// CHECK:         "coreml.tile"(%x) <{reps = array<i64: 1, 3>}> : (tensor<2x4xf32>) -> tensor<2x12xf32>
// CHECK:         "coreml.tile"(%a) <{reps = array<i64: 1, 1, 8, 1>}> : (tensor<1x1x1x8xi1>) -> tensor<1x1x8x8xi1>
// CHECK:         "coreml.logical_and"(%a, %b) : (tensor<1x1x1x8xi1>, tensor<1x1x8x1xi1>) -> tensor<1x1x8x8xi1>
// CHECK:         "coreml.logical_or"
// CHECK:         "coreml.logical_xor"
func.func @tile_and_logic(%x: tensor<2x4xf32>, %a: tensor<1x1x1x8xi1>, %b: tensor<1x1x8x1xi1>) -> (tensor<2x12xf32>, tensor<1x1x8x8xi1>, tensor<1x1x8x8xi1>) attributes {coreml.opset = "iOS16"} {
  %t = "coreml.tile"(%x) <{reps = array<i64: 1, 3>}> : (tensor<2x4xf32>) -> tensor<2x12xf32>
  %m = "coreml.tile"(%a) <{reps = array<i64: 1, 1, 8, 1>}> : (tensor<1x1x1x8xi1>) -> tensor<1x1x8x8xi1>
  %l0 = "coreml.logical_and"(%a, %b) : (tensor<1x1x1x8xi1>, tensor<1x1x8x1xi1>) -> tensor<1x1x8x8xi1>
  %l1 = "coreml.logical_or"(%l0, %m) : (tensor<1x1x8x8xi1>, tensor<1x1x8x8xi1>) -> tensor<1x1x8x8xi1>
  %l2 = "coreml.logical_xor"(%l1, %b) : (tensor<1x1x8x8xi1>, tensor<1x1x8x1xi1>) -> tensor<1x1x8x8xi1>
  func.return %t, %l0, %l2 : tensor<2x12xf32>, tensor<1x1x8x8xi1>, tensor<1x1x8x8xi1>
}

// CHECK-LABEL: func.func @activations_and_rounding(
// CHECK:         "coreml.sigmoid_hard"(%x) <{alpha = 0.16666666666666666 : f64, beta = 5.000000e-01 : f64}> : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK:         "coreml.leaky_relu"(%x) <{alpha = 1.000000e-02 : f64}> : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK:         "coreml.abs"(%n) : (tensor<2x4xi32>) -> tensor<2x4xi32>
// CHECK:         "coreml.floor"(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK:         "coreml.ceil"(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK:         "coreml.log"(%x) <{epsilon = 0.000000e+00 : f64}> : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK:         "coreml.inverse"(%x) <{epsilon = 0.000000e+00 : f64}> : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK:         "coreml.mod"(%n, %n) : (tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<2x4xi32>
// CHECK:         "coreml.reduce_min"(%x) <{axes = array<i64: 1>, keep_dims = false}> : (tensor<2x4xf32>) -> tensor<2xf32>
func.func @activations_and_rounding(%x: tensor<2x4xf32>, %n: tensor<2x4xi32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xi32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xi32>, tensor<2xf32>) attributes {coreml.opset = "iOS16"} {
  %h = "coreml.sigmoid_hard"(%x) <{alpha = 0.16666666666666666 : f64, beta = 5.000000e-01 : f64}> : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %l = "coreml.leaky_relu"(%x) <{alpha = 1.000000e-02 : f64}> : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %a = "coreml.abs"(%n) : (tensor<2x4xi32>) -> tensor<2x4xi32>
  %f = "coreml.floor"(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c = "coreml.ceil"(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %g = "coreml.log"(%x) <{epsilon = 0.000000e+00 : f64}> : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %i = "coreml.inverse"(%x) <{epsilon = 0.000000e+00 : f64}> : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %m = "coreml.mod"(%n, %n) : (tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<2x4xi32>
  %r = "coreml.reduce_min"(%x) <{axes = array<i64: 1>, keep_dims = false}> : (tensor<2x4xf32>) -> tensor<2xf32>
  func.return %h, %l, %a, %f, %c, %g, %i, %m, %r : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xi32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xi32>, tensor<2xf32>
}
