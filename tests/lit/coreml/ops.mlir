// RUN: qopt-opt %s --print-weights | qopt-opt --print-weights | filecheck %s
// RUN: QOPT_ROUNDTRIP
// RUN: QOPT_GENERIC_ROUNDTRIP
// Every coreml op (qopt/dialects/coreml/) in its custom form: parsed, printed and
// re-parsed (CHECK, twice: from this text and from the generic printout), and
// printed in the generic form (GENERIC). tests/unit/test_coreml_format.py checks
// that each op of the dialect appears here.

// Compression (iOS18): blockwise shift-scale with and without offset, the per-block LUT with vectors.
// CHECK-LABEL: func.func @compressed_linear(
// CHECK-NEXT:    %d = coreml.const dense<1> : tensor<2x4xi8>
// CHECK-NEXT:    %s = coreml.const dense<5.000000e-01> : tensor<2x2xf32>
// CHECK-NEXT:    %w = coreml.constexpr_blockwise_shift_scale %d, %s : (tensor<2x4xi8>, tensor<2x2xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %o = coreml.const dense<2> : tensor<2x2xi8>
// CHECK-NEXT:    %wo = coreml.constexpr_blockwise_shift_scale %d, %s, %o : (tensor<2x4xi8>, tensor<2x2xf32>, tensor<2x2xi8>) -> tensor<2x4xf32>
// CHECK-NEXT:    %b = coreml.const dense<1.000000e+00> : tensor<2xf32>
// CHECK-NEXT:    %y = coreml.linear %x, %w, %b : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT:    %yn = coreml.linear %x, %wo : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x2xf32>
// CHECK-NEXT:    %i = coreml.const dense<3> : tensor<2x4xui8>
// CHECK-NEXT:    %l = coreml.const dense<2.500000e-01> : tensor<1x1x256x1xf32>
// CHECK-NEXT:    %w2 = coreml.constexpr_lut_to_dense %i, %l : (tensor<2x4xui8>, tensor<1x1x256x1xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %z = coreml.matmul %x, %w2 {transpose_x = false, transpose_y = true} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x2xf32>
// CHECK-NEXT:    %r = coreml.add %y, %z : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT:    %r2 = coreml.add %r, %yn : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT:    %vi = coreml.const dense<1> : tensor<2x4xui1>
// CHECK-NEXT:    %vl = coreml.const dense<5.000000e-01> : tensor<1x1x2x2xf32>
// CHECK-NEXT:    %v = coreml.constexpr_lut_to_dense %vi, %vl {vector_axis = 0 : i64} : (tensor<2x4xui1>, tensor<1x1x2x2xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:    func.return %r2, %v : tensor<2x2xf32>, tensor<4x4xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "compressed_linear"
// GENERIC:       %d = "coreml.const"() <{value = dense<1> : tensor<2x4xi8>}> : () -> tensor<2x4xi8>
// GENERIC:       %s = "coreml.const"() <{value = dense<5.000000e-01> : tensor<2x2xf32>}> : () -> tensor<2x2xf32>
// GENERIC:       %w = "coreml.constexpr_blockwise_shift_scale"(%d, %s) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<2x4xi8>, tensor<2x2xf32>) -> tensor<2x4xf32>
// GENERIC:       %o = "coreml.const"() <{value = dense<2> : tensor<2x2xi8>}> : () -> tensor<2x2xi8>
// GENERIC:       %wo = "coreml.constexpr_blockwise_shift_scale"(%d, %s, %o) <{operandSegmentSizes = array<i32: 1, 1, 1>}> : (tensor<2x4xi8>, tensor<2x2xf32>, tensor<2x2xi8>) -> tensor<2x4xf32>
// GENERIC:       %b = "coreml.const"() <{value = dense<1.000000e+00> : tensor<2xf32>}> : () -> tensor<2xf32>
// GENERIC:       %y = "coreml.linear"(%x, %w, %b) <{operandSegmentSizes = array<i32: 1, 1, 1>}> : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2xf32>) -> tensor<2x2xf32>
// GENERIC:       %yn = "coreml.linear"(%x, %wo) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x2xf32>
// GENERIC:       %i = "coreml.const"() <{value = dense<3> : tensor<2x4xui8>}> : () -> tensor<2x4xui8>
// GENERIC:       %l = "coreml.const"() <{value = dense<2.500000e-01> : tensor<1x1x256x1xf32>}> : () -> tensor<1x1x256x1xf32>
// GENERIC:       %w2 = "coreml.constexpr_lut_to_dense"(%i, %l) : (tensor<2x4xui8>, tensor<1x1x256x1xf32>) -> tensor<2x4xf32>
// GENERIC:       %z = "coreml.matmul"(%x, %w2) <{transpose_x = false, transpose_y = true}> : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x2xf32>
// GENERIC:       %r = "coreml.add"(%y, %z) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
// GENERIC:       %r2 = "coreml.add"(%r, %yn) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
// GENERIC:       %vi = "coreml.const"() <{value = dense<1> : tensor<2x4xui1>}> : () -> tensor<2x4xui1>
// GENERIC:       %vl = "coreml.const"() <{value = dense<5.000000e-01> : tensor<1x1x2x2xf32>}> : () -> tensor<1x1x2x2xf32>
// GENERIC:       %v = "coreml.constexpr_lut_to_dense"(%vi, %vl) <{vector_axis = 0 : i64}> : (tensor<2x4xui1>, tensor<1x1x2x2xf32>) -> tensor<4x4xf32>
func.func @compressed_linear(%x: tensor<2x4xf32>) -> (tensor<2x2xf32>, tensor<4x4xf32>) attributes {coreml.opset = "iOS18"} {
  %d = coreml.const dense<1> : tensor<2x4xi8>
  %s = coreml.const dense<5.000000e-01> : tensor<2x2xf32>
  %w = coreml.constexpr_blockwise_shift_scale %d, %s : (tensor<2x4xi8>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %o = coreml.const dense<2> : tensor<2x2xi8>
  %wo = coreml.constexpr_blockwise_shift_scale %d, %s, %o : (tensor<2x4xi8>, tensor<2x2xf32>, tensor<2x2xi8>) -> tensor<2x4xf32>
  %b = coreml.const dense<1.000000e+00> : tensor<2xf32>
  %y = coreml.linear %x, %w, %b : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %yn = coreml.linear %x, %wo : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x2xf32>
  %i = coreml.const dense<3> : tensor<2x4xui8>
  %l = coreml.const dense<2.500000e-01> : tensor<1x1x256x1xf32>
  %w2 = coreml.constexpr_lut_to_dense %i, %l : (tensor<2x4xui8>, tensor<1x1x256x1xf32>) -> tensor<2x4xf32>
  %z = coreml.matmul %x, %w2 {transpose_x = false, transpose_y = true} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x2xf32>
  %r = coreml.add %y, %z : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %r2 = coreml.add %r, %yn : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %vi = coreml.const dense<1> : tensor<2x4xui1>
  %vl = coreml.const dense<5.000000e-01> : tensor<1x1x2x2xf32>
  %v = coreml.constexpr_lut_to_dense %vi, %vl {vector_axis = 0 : i64} : (tensor<2x4xui1>, tensor<1x1x2x2xf32>) -> tensor<4x4xf32>
  func.return %r2, %v : tensor<2x2xf32>, tensor<4x4xf32>
}

// Compression (iOS16/17): affine dequantize along an axis, the packed single-table LUT.
// CHECK-LABEL: func.func @compressed_ios16(
// CHECK-NEXT:    %q = coreml.const dense<1> : tensor<2x4xi8>
// CHECK-NEXT:    %zp = coreml.const dense<0> : tensor<2xi8>
// CHECK-NEXT:    %s = coreml.const dense<2.500000e-01> : tensor<2xf32>
// CHECK-NEXT:    %a = coreml.constexpr_affine_dequantize %q, %zp, %s {axis = 0 : i64} : (tensor<2x4xi8>, tensor<2xi8>, tensor<2xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %i = coreml.const dense<[27, 228]> : tensor<2xui8>
// CHECK-NEXT:    %l = coreml.const dense<[0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<4xf32>
// CHECK-NEXT:    %p = coreml.constexpr_lut_to_dense %i, %l {shape = array<i64: 2, 4>} : (tensor<2xui8>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %a, %p : tensor<2x4xf32>, tensor<2x4xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "compressed_ios16"
// GENERIC:       %q = "coreml.const"() <{value = dense<1> : tensor<2x4xi8>}> : () -> tensor<2x4xi8>
// GENERIC:       %zp = "coreml.const"() <{value = dense<0> : tensor<2xi8>}> : () -> tensor<2xi8>
// GENERIC:       %s = "coreml.const"() <{value = dense<2.500000e-01> : tensor<2xf32>}> : () -> tensor<2xf32>
// GENERIC:       %a = "coreml.constexpr_affine_dequantize"(%q, %zp, %s) <{axis = 0 : i64}> : (tensor<2x4xi8>, tensor<2xi8>, tensor<2xf32>) -> tensor<2x4xf32>
// GENERIC:       %i = "coreml.const"() <{value = dense<[27, 228]> : tensor<2xui8>}> : () -> tensor<2xui8>
// GENERIC:       %l = "coreml.const"() <{value = dense<[0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<4xf32>}> : () -> tensor<4xf32>
// GENERIC:       %p = "coreml.constexpr_lut_to_dense"(%i, %l) <{shape = array<i64: 2, 4>}> : (tensor<2xui8>, tensor<4xf32>) -> tensor<2x4xf32>
func.func @compressed_ios16() -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {coreml.opset = "iOS16"} {
  %q = coreml.const dense<1> : tensor<2x4xi8>
  %zp = coreml.const dense<0> : tensor<2xi8>
  %s = coreml.const dense<2.500000e-01> : tensor<2xf32>
  %a = coreml.constexpr_affine_dequantize %q, %zp, %s {axis = 0 : i64} : (tensor<2x4xi8>, tensor<2xi8>, tensor<2xf32>) -> tensor<2x4xf32>
  %i = coreml.const dense<[27, 228]> : tensor<2xui8>
  %l = coreml.const dense<[0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<4xf32>
  %p = coreml.constexpr_lut_to_dense %i, %l {shape = array<i64: 2, 4>} : (tensor<2xui8>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return %a, %p : tensor<2x4xf32>, tensor<2x4xf32>
}

// A dense_resource constant prints as MIL `const`: the handle and the type.
// CHECK-LABEL: func.func @resource_const(
// CHECK-NEXT:    %w = coreml.const dense_resource<w_fp32> : tensor<2x2xf32>
// CHECK-NEXT:    %y = coreml.mul %x, %w : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT:    func.return %y : tensor<2x2xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "resource_const"
// GENERIC:       %w = "coreml.const"() <{value = dense_resource<w_fp32> : tensor<2x2xf32>}> : () -> tensor<2x2xf32>
// GENERIC:       %y = "coreml.mul"(%x, %w) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
func.func @resource_const(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %w = coreml.const dense_resource<w_fp32> : tensor<2x2xf32>
  %y = coreml.mul %x, %w : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  func.return %y : tensor<2x2xf32>
}

// Activation quantization (iOS17): zero_point is named, since MIL puts it between input and scale.
// CHECK-LABEL: func.func @activation_quant(
// CHECK-NEXT:    %zp = coreml.const dense<3> : tensor<i8>
// CHECK-NEXT:    %s = coreml.const dense<5.000000e-02> : tensor<f32>
// CHECK-NEXT:    %q = coreml.quantize %x, %s zero_point %zp {output_dtype = "int8"} : tensor<2x4xf32>, tensor<f32> zero_point tensor<i8> -> tensor<2x4xi8>
// CHECK-NEXT:    %d = coreml.dequantize %q, %s zero_point %zp : tensor<2x4xi8>, tensor<f32> zero_point tensor<i8> -> tensor<2x4xf32>
// CHECK-NEXT:    %cs = coreml.const dense<[1.000000e-01, 2.000000e-01, 3.000000e-01, 4.000000e-01]> : tensor<4xf32>
// CHECK-NEXT:    %qa = coreml.quantize %x, %cs {axis = 1 : i64, output_dtype = "uint8"} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xui8>
// CHECK-NEXT:    %da = coreml.dequantize %qa, %cs {axis = 1 : i64} : tensor<2x4xui8>, tensor<4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %d, %da : tensor<2x4xf32>, tensor<2x4xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "activation_quant"
// GENERIC:       %zp = "coreml.const"() <{value = dense<3> : tensor<i8>}> : () -> tensor<i8>
// GENERIC:       %s = "coreml.const"() <{value = dense<5.000000e-02> : tensor<f32>}> : () -> tensor<f32>
// GENERIC:       %q = "coreml.quantize"(%x, %zp, %s) <{output_dtype = "int8", operandSegmentSizes = array<i32: 1, 1, 1>}> : (tensor<2x4xf32>, tensor<i8>, tensor<f32>) -> tensor<2x4xi8>
// GENERIC:       %d = "coreml.dequantize"(%q, %zp, %s) <{operandSegmentSizes = array<i32: 1, 1, 1>}> : (tensor<2x4xi8>, tensor<i8>, tensor<f32>) -> tensor<2x4xf32>
// GENERIC:       %cs = "coreml.const"() <{value = dense<[1.000000e-01, 2.000000e-01, 3.000000e-01, 4.000000e-01]> : tensor<4xf32>}> : () -> tensor<4xf32>
// GENERIC:       %qa = "coreml.quantize"(%x, %cs) <{axis = 1 : i64, output_dtype = "uint8", operandSegmentSizes = array<i32: 1, 0, 1>}> : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xui8>
// GENERIC:       %da = "coreml.dequantize"(%qa, %cs) <{axis = 1 : i64, operandSegmentSizes = array<i32: 1, 0, 1>}> : (tensor<2x4xui8>, tensor<4xf32>) -> tensor<2x4xf32>
func.func @activation_quant(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) attributes {coreml.opset = "iOS17"} {
  %zp = coreml.const dense<3> : tensor<i8>
  %s = coreml.const dense<5.000000e-02> : tensor<f32>
  %q = coreml.quantize %x, %s zero_point %zp {output_dtype = "int8"} : tensor<2x4xf32>, tensor<f32> zero_point tensor<i8> -> tensor<2x4xi8>
  %d = coreml.dequantize %q, %s zero_point %zp : tensor<2x4xi8>, tensor<f32> zero_point tensor<i8> -> tensor<2x4xf32>
  %cs = coreml.const dense<[1.000000e-01, 2.000000e-01, 3.000000e-01, 4.000000e-01]> : tensor<4xf32>
  %qa = coreml.quantize %x, %cs {axis = 1 : i64, output_dtype = "uint8"} : tensor<2x4xf32>, tensor<4xf32> -> tensor<2x4xui8>
  %da = coreml.dequantize %qa, %cs {axis = 1 : i64} : tensor<2x4xui8>, tensor<4xf32> -> tensor<2x4xf32>
  func.return %d, %da : tensor<2x4xf32>, tensor<2x4xf32>
}

// CHECK-LABEL: func.func @float_ops(
// CHECK-NEXT:    %a = coreml.reshape %x {shape = array<i64: 4, 2>} : (tensor<2x4xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:    %b = coreml.transpose %a {perm = array<i64: 1, 0>} : (tensor<4x2xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %c = coreml.softmax %b {axis = -1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %t = coreml.transpose %c {perm = array<i64: 1, 0>} : (tensor<2x4xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:    %m = coreml.reduce_mean %t {axes = array<i64: 1>, keep_dims = true} : (tensor<4x2xf32>) -> tensor<4x1xf32>
// CHECK-NEXT:    %g = coreml.gelu %m {mode = "EXACT"} : (tensor<4x1xf32>) -> tensor<4x1xf32>
// CHECK-NEXT:    func.return %g : tensor<4x1xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "float_ops"
// GENERIC:       %a = "coreml.reshape"(%x) <{shape = array<i64: 4, 2>}> : (tensor<2x4xf32>) -> tensor<4x2xf32>
// GENERIC:       %b = "coreml.transpose"(%a) <{perm = array<i64: 1, 0>}> : (tensor<4x2xf32>) -> tensor<2x4xf32>
// GENERIC:       %c = "coreml.softmax"(%b) <{axis = -1 : i64}> : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GENERIC:       %t = "coreml.transpose"(%c) <{perm = array<i64: 1, 0>}> : (tensor<2x4xf32>) -> tensor<4x2xf32>
// GENERIC:       %m = "coreml.reduce_mean"(%t) <{axes = array<i64: 1>, keep_dims = true}> : (tensor<4x2xf32>) -> tensor<4x1xf32>
// GENERIC:       %g = "coreml.gelu"(%m) <{mode = "EXACT"}> : (tensor<4x1xf32>) -> tensor<4x1xf32>
func.func @float_ops(%x: tensor<2x4xf32>) -> tensor<4x1xf32> {
  %a = coreml.reshape %x {shape = array<i64: 4, 2>} : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %b = coreml.transpose %a {perm = array<i64: 1, 0>} : (tensor<4x2xf32>) -> tensor<2x4xf32>
  %c = coreml.softmax %b {axis = -1 : i64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %t = coreml.transpose %c {perm = array<i64: 1, 0>} : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %m = coreml.reduce_mean %t {axes = array<i64: 1>, keep_dims = true} : (tensor<4x2xf32>) -> tensor<4x1xf32>
  %g = coreml.gelu %m {mode = "EXACT"} : (tensor<4x1xf32>) -> tensor<4x1xf32>
  func.return %g : tensor<4x1xf32>
}

// Binary arithmetic with broadcasting, the unary math ops and activations.
// CHECK-LABEL: func.func @arithmetic(
// CHECK-NEXT:    %a = coreml.sub %x, %y : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %b = coreml.real_div %a, %y : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %c = coreml.pow %b, %y : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %d = coreml.maximum %c, %x : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %e = coreml.minimum %d, %y : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %u0 = coreml.relu %e : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %u1 = coreml.silu %u0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %u2 = coreml.sigmoid %u1 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %u3 = coreml.tanh %u2 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %u4 = coreml.exp %u3 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %u5 = coreml.sqrt %u4 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %u6 = coreml.sin %u5 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %u7 = coreml.cos %u6 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %u8 = coreml.erf %u7 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %p0 = coreml.rsqrt %u8 {epsilon = 1.000000e-12 : f64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %p1 = coreml.clip %p0 {alpha = 0.000000e+00 : f64, beta = 6.000000e+00 : f64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %p2 = coreml.gelu %p1 {mode = "TANH_APPROXIMATION"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %e, %p2 : tensor<2x4xf32>, tensor<2x4xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "arithmetic"
// GENERIC:       %a = "coreml.sub"(%x, %y) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// GENERIC:       %b = "coreml.real_div"(%a, %y) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// GENERIC:       %c = "coreml.pow"(%b, %y) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// GENERIC:       %d = "coreml.maximum"(%c, %x) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
// GENERIC:       %e = "coreml.minimum"(%d, %y) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// GENERIC:       %u0 = "coreml.relu"(%e) : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GENERIC:       %u1 = "coreml.silu"(%u0) : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GENERIC:       %u2 = "coreml.sigmoid"(%u1) : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GENERIC:       %u3 = "coreml.tanh"(%u2) : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GENERIC:       %u4 = "coreml.exp"(%u3) : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GENERIC:       %u5 = "coreml.sqrt"(%u4) : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GENERIC:       %u6 = "coreml.sin"(%u5) : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GENERIC:       %u7 = "coreml.cos"(%u6) : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GENERIC:       %u8 = "coreml.erf"(%u7) : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GENERIC:       %p0 = "coreml.rsqrt"(%u8) <{epsilon = 1.000000e-12 : f64}> : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GENERIC:       %p1 = "coreml.clip"(%p0) <{alpha = 0.000000e+00 : f64, beta = 6.000000e+00 : f64}> : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GENERIC:       %p2 = "coreml.gelu"(%p1) <{mode = "TANH_APPROXIMATION"}> : (tensor<2x4xf32>) -> tensor<2x4xf32>
func.func @arithmetic(%x: tensor<2x4xf32>, %y: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %a = coreml.sub %x, %y : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %b = coreml.real_div %a, %y : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %c = coreml.pow %b, %y : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %d = coreml.maximum %c, %x : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %e = coreml.minimum %d, %y : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %u0 = coreml.relu %e : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %u1 = coreml.silu %u0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %u2 = coreml.sigmoid %u1 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %u3 = coreml.tanh %u2 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %u4 = coreml.exp %u3 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %u5 = coreml.sqrt %u4 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %u6 = coreml.sin %u5 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %u7 = coreml.cos %u6 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %u8 = coreml.erf %u7 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %p0 = coreml.rsqrt %u8 {epsilon = 1.000000e-12 : f64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %p1 = coreml.clip %p0 {alpha = 0.000000e+00 : f64, beta = 6.000000e+00 : f64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %p2 = coreml.gelu %p1 {mode = "TANH_APPROXIMATION"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %e, %p2 : tensor<2x4xf32>, tensor<2x4xf32>
}

// Inverse trigonometric and hyperbolic functions (iOS15).
// CHECK-LABEL: func.func @inverse_trig_hyperbolic(
// CHECK-NEXT:    %h0 = coreml.asin %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %h1 = coreml.acos %h0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %h2 = coreml.atan %h1 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %h3 = coreml.sinh %h2 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %h4 = coreml.cosh %h3 : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %h4 : tensor<2x4xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "inverse_trig_hyperbolic"
// GENERIC:       %h0 = "coreml.asin"(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GENERIC:       %h1 = "coreml.acos"(%h0) : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GENERIC:       %h2 = "coreml.atan"(%h1) : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GENERIC:       %h3 = "coreml.sinh"(%h2) : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GENERIC:       %h4 = "coreml.cosh"(%h3) : (tensor<2x4xf32>) -> tensor<2x4xf32>
func.func @inverse_trig_hyperbolic(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %h0 = coreml.asin %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %h1 = coreml.acos %h0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %h2 = coreml.atan %h1 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %h3 = coreml.sinh %h2 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %h4 = coreml.cosh %h3 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %h4 : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @tan_floor_div(
// CHECK-NEXT:    %t = coreml.tan %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %f = coreml.floor_div %a, %b : (tensor<2x4xi32>, tensor<4xi32>) -> tensor<2x4xi32>
// GENERIC-LABEL: "func.func"() <{sym_name = "tan_floor_div"
// GENERIC:       %t = "coreml.tan"(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GENERIC:       %f = "coreml.floor_div"(%a, %b) : (tensor<2x4xi32>, tensor<4xi32>) -> tensor<2x4xi32>
func.func @tan_floor_div(%x: tensor<2x4xf32>, %a: tensor<2x4xi32>, %b: tensor<4xi32>) -> (tensor<2x4xf32>, tensor<2x4xi32>) {
  %t = coreml.tan %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %f = coreml.floor_div %a, %b : (tensor<2x4xi32>, tensor<4xi32>) -> tensor<2x4xi32>
  func.return %t, %f : tensor<2x4xf32>, tensor<2x4xi32>
}

// CHECK-LABEL: func.func @indexing(
// CHECK-NEXT:    %s = coreml.slice_by_index %x {begin = array<i64: 7, -2, 0>, end = array<i64: 2, 0, 0>, stride = array<i64: 1, 1, -1>, begin_mask = array<i1: true, false, true>, end_mask = array<i1: false, false, true>, squeeze_mask = array<i1: false, true, false>} : (tensor<4x5x6xf32>) -> tensor<2x6xf32>
// CHECK-NEXT:    %i = coreml.const dense<[5, 0]> : tensor<2xi32>
// CHECK-NEXT:    %g = coreml.gather %x, %i {axis = 2 : i64} : (tensor<4x5x6xf32>, tensor<2xi32>) -> tensor<4x5x2xf32>
// CHECK-NEXT:    %z = coreml.const dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %c0 = coreml.greater %x, %z : (tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xi1>
// CHECK-NEXT:    %c1 = coreml.less_equal %x, %z : (tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xi1>
// CHECK-NEXT:    %c2 = coreml.equal %x, %z : (tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xi1>
// CHECK-NEXT:    %c3 = coreml.not_equal %x, %z : (tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xi1>
// CHECK-NEXT:    %c4 = coreml.less %x, %z : (tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xi1>
// CHECK-NEXT:    %c5 = coreml.greater_equal %x, %z : (tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xi1>
// CHECK-NEXT:    %w = coreml.select %c0, %x, %z : (tensor<4x5x6xi1>, tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xf32>
// CHECK-NEXT:    func.return %s, %g, %w : tensor<2x6xf32>, tensor<4x5x2xf32>, tensor<4x5x6xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "indexing"
// GENERIC:       %s = "coreml.slice_by_index"(%x) <{begin = array<i64: 7, -2, 0>, end = array<i64: 2, 0, 0>, stride = array<i64: 1, 1, -1>, begin_mask = array<i1: true, false, true>, end_mask = array<i1: false, false, true>, squeeze_mask = array<i1: false, true, false>}> : (tensor<4x5x6xf32>) -> tensor<2x6xf32>
// GENERIC:       %i = "coreml.const"() <{value = dense<[5, 0]> : tensor<2xi32>}> : () -> tensor<2xi32>
// GENERIC:       %g = "coreml.gather"(%x, %i) <{axis = 2 : i64}> : (tensor<4x5x6xf32>, tensor<2xi32>) -> tensor<4x5x2xf32>
// GENERIC:       %z = "coreml.const"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
// GENERIC:       %c0 = "coreml.greater"(%x, %z) : (tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xi1>
// GENERIC:       %c1 = "coreml.less_equal"(%x, %z) : (tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xi1>
// GENERIC:       %c2 = "coreml.equal"(%x, %z) : (tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xi1>
// GENERIC:       %c3 = "coreml.not_equal"(%x, %z) : (tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xi1>
// GENERIC:       %c4 = "coreml.less"(%x, %z) : (tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xi1>
// GENERIC:       %c5 = "coreml.greater_equal"(%x, %z) : (tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xi1>
// GENERIC:       %w = "coreml.select"(%c0, %x, %z) : (tensor<4x5x6xi1>, tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xf32>
func.func @indexing(%x: tensor<4x5x6xf32>) -> (tensor<2x6xf32>, tensor<4x5x2xf32>, tensor<4x5x6xf32>) attributes {coreml.opset = "iOS16"} {
  %s = coreml.slice_by_index %x {begin = array<i64: 7, -2, 0>, end = array<i64: 2, 0, 0>, stride = array<i64: 1, 1, -1>, begin_mask = array<i1: true, false, true>, end_mask = array<i1: false, false, true>, squeeze_mask = array<i1: false, true, false>} : (tensor<4x5x6xf32>) -> tensor<2x6xf32>
  %i = coreml.const dense<[5, 0]> : tensor<2xi32>
  %g = coreml.gather %x, %i {axis = 2 : i64} : (tensor<4x5x6xf32>, tensor<2xi32>) -> tensor<4x5x2xf32>
  %z = coreml.const dense<0.000000e+00> : tensor<f32>
  %c0 = coreml.greater %x, %z : (tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xi1>
  %c1 = coreml.less_equal %x, %z : (tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xi1>
  %c2 = coreml.equal %x, %z : (tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xi1>
  %c3 = coreml.not_equal %x, %z : (tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xi1>
  %c4 = coreml.less %x, %z : (tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xi1>
  %c5 = coreml.greater_equal %x, %z : (tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xi1>
  %w = coreml.select %c0, %x, %z : (tensor<4x5x6xi1>, tensor<4x5x6xf32>, tensor<f32>) -> tensor<4x5x6xf32>
  func.return %s, %g, %w : tensor<2x6xf32>, tensor<4x5x2xf32>, tensor<4x5x6xf32>
}

// Shape ops: a variadic concat, expand_dims/squeeze, a cast, and the reductions with keep_dims.
// CHECK-LABEL: func.func @shapes(
// CHECK-NEXT:    %c = coreml.concat %x, %y {axis = 1 : i64, interleave = false} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:    %e = coreml.expand_dims %x {axes = array<i64: 0>} : (tensor<2x4xf32>) -> tensor<1x2x4xf32>
// CHECK-NEXT:    %s = coreml.squeeze %e {axes = array<i64: 0>} : (tensor<1x2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %i = coreml.cast %s {dtype = "int32"} : (tensor<2x4xf32>) -> tensor<2x4xi32>
// CHECK-NEXT:    %r = coreml.reduce_sum %x {axes = array<i64: 1>, keep_dims = false} : (tensor<2x4xf32>) -> tensor<2xf32>
// CHECK-NEXT:    %m = coreml.reduce_max %y {axes = array<i64: -1>, keep_dims = true} : (tensor<2x4xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:    func.return %c, %i, %r, %m : tensor<2x8xf32>, tensor<2x4xi32>, tensor<2xf32>, tensor<2x1xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "shapes"
// GENERIC:       %c = "coreml.concat"(%x, %y) <{axis = 1 : i64, interleave = false}> : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
// GENERIC:       %e = "coreml.expand_dims"(%x) <{axes = array<i64: 0>}> : (tensor<2x4xf32>) -> tensor<1x2x4xf32>
// GENERIC:       %s = "coreml.squeeze"(%e) <{axes = array<i64: 0>}> : (tensor<1x2x4xf32>) -> tensor<2x4xf32>
// GENERIC:       %i = "coreml.cast"(%s) <{dtype = "int32"}> : (tensor<2x4xf32>) -> tensor<2x4xi32>
// GENERIC:       %r = "coreml.reduce_sum"(%x) <{axes = array<i64: 1>, keep_dims = false}> : (tensor<2x4xf32>) -> tensor<2xf32>
// GENERIC:       %m = "coreml.reduce_max"(%y) <{axes = array<i64: -1>, keep_dims = true}> : (tensor<2x4xf32>) -> tensor<2x1xf32>
func.func @shapes(%x: tensor<2x4xf32>, %y: tensor<2x4xf32>) -> (tensor<2x8xf32>, tensor<2x4xi32>, tensor<2xf32>, tensor<2x1xf32>) {
  %c = coreml.concat %x, %y {axis = 1 : i64, interleave = false} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x8xf32>
  %e = coreml.expand_dims %x {axes = array<i64: 0>} : (tensor<2x4xf32>) -> tensor<1x2x4xf32>
  %s = coreml.squeeze %e {axes = array<i64: 0>} : (tensor<1x2x4xf32>) -> tensor<2x4xf32>
  %i = coreml.cast %s {dtype = "int32"} : (tensor<2x4xf32>) -> tensor<2x4xi32>
  %r = coreml.reduce_sum %x {axes = array<i64: 1>, keep_dims = false} : (tensor<2x4xf32>) -> tensor<2xf32>
  %m = coreml.reduce_max %y {axes = array<i64: -1>, keep_dims = true} : (tensor<2x4xf32>) -> tensor<2x1xf32>
  func.return %c, %i, %r, %m : tensor<2x8xf32>, tensor<2x4xi32>, tensor<2xf32>, tensor<2x1xf32>
}

// Norms: gamma and beta are both optional, so each is named.
// CHECK-LABEL: func.func @norms(
// CHECK-NEXT:    %m = coreml.const dense<[1.000000e+00, -1.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %v = coreml.const dense<[4.000000e+00, 2.500000e-01]> : tensor<2xf32>
// CHECK-NEXT:    %b = coreml.const dense<[5.000000e-01, 0.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %y = coreml.batch_norm %x, %m, %v beta %b {epsilon = 1.000000e-05 : f64} : tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32> beta tensor<2xf32> -> tensor<1x2x3x3xf32>
// CHECK-NEXT:    %y2 = coreml.batch_norm %x, %m, %v gamma %v beta %b {epsilon = 1.000000e-05 : f64} : tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32> gamma tensor<2xf32> beta tensor<2xf32> -> tensor<1x2x3x3xf32>
// CHECK-NEXT:    %g = coreml.const dense<2.000000e+00> : tensor<4xf32>
// CHECK-NEXT:    %l0 = coreml.layer_norm %h {axes = array<i64: -1>, epsilon = 1.000000e-05 : f64} : tensor<2x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %l1 = coreml.layer_norm %h gamma %g {axes = array<i64: -1>, epsilon = 1.000000e-05 : f64} : tensor<2x4xf32> gamma tensor<4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %l2 = coreml.layer_norm %h beta %g {axes = array<i64: -1>, epsilon = 1.000000e-05 : f64} : tensor<2x4xf32> beta tensor<4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %y, %y2, %l0, %l1, %l2 : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "norms"
// GENERIC:       %m = "coreml.const"() <{value = dense<[1.000000e+00, -1.000000e+00]> : tensor<2xf32>}> : () -> tensor<2xf32>
// GENERIC:       %v = "coreml.const"() <{value = dense<[4.000000e+00, 2.500000e-01]> : tensor<2xf32>}> : () -> tensor<2xf32>
// GENERIC:       %b = "coreml.const"() <{value = dense<[5.000000e-01, 0.000000e+00]> : tensor<2xf32>}> : () -> tensor<2xf32>
// GENERIC:       %y = "coreml.batch_norm"(%x, %m, %v, %b) <{epsilon = 1.000000e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1>}> : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
// GENERIC:       %y2 = "coreml.batch_norm"(%x, %m, %v, %v, %b) <{epsilon = 1.000000e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>}> : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
// GENERIC:       %g = "coreml.const"() <{value = dense<2.000000e+00> : tensor<4xf32>}> : () -> tensor<4xf32>
// GENERIC:       %l0 = "coreml.layer_norm"(%h) <{axes = array<i64: -1>, epsilon = 1.000000e-05 : f64, operandSegmentSizes = array<i32: 1, 0, 0>}> : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GENERIC:       %l1 = "coreml.layer_norm"(%h, %g) <{axes = array<i64: -1>, epsilon = 1.000000e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// GENERIC:       %l2 = "coreml.layer_norm"(%h, %g) <{axes = array<i64: -1>, epsilon = 1.000000e-05 : f64, operandSegmentSizes = array<i32: 1, 0, 1>}> : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
func.func @norms(%x: tensor<1x2x3x3xf32>, %h: tensor<2x4xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %m = coreml.const dense<[1.000000e+00, -1.000000e+00]> : tensor<2xf32>
  %v = coreml.const dense<[4.000000e+00, 2.500000e-01]> : tensor<2xf32>
  %b = coreml.const dense<[5.000000e-01, 0.000000e+00]> : tensor<2xf32>
  %y = coreml.batch_norm %x, %m, %v beta %b {epsilon = 1.000000e-05 : f64} : tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32> beta tensor<2xf32> -> tensor<1x2x3x3xf32>
  %y2 = coreml.batch_norm %x, %m, %v gamma %v beta %b {epsilon = 1.000000e-05 : f64} : tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32> gamma tensor<2xf32> beta tensor<2xf32> -> tensor<1x2x3x3xf32>
  %g = coreml.const dense<2.000000e+00> : tensor<4xf32>
  %l0 = coreml.layer_norm %h {axes = array<i64: -1>, epsilon = 1.000000e-05 : f64} : tensor<2x4xf32> -> tensor<2x4xf32>
  %l1 = coreml.layer_norm %h gamma %g {axes = array<i64: -1>, epsilon = 1.000000e-05 : f64} : tensor<2x4xf32> gamma tensor<4xf32> -> tensor<2x4xf32>
  %l2 = coreml.layer_norm %h beta %g {axes = array<i64: -1>, epsilon = 1.000000e-05 : f64} : tensor<2x4xf32> beta tensor<4xf32> -> tensor<2x4xf32>
  func.return %y, %y2, %l0, %l1, %l2 : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}

// Convolution with and without bias, and the two pools.
// CHECK-LABEL: func.func @conv_pool(
// CHECK-NEXT:    %w = coreml.const dense<5.000000e-01> : tensor<3x2x3x3xf32>
// CHECK-NEXT:    %b = coreml.const dense<1.000000e+00> : tensor<3xf32>
// CHECK-NEXT:    %y = coreml.conv %x, %w, %b {strides = array<i64: 2, 2>, pad_type = "custom", pad = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>) -> tensor<1x3x2x2xf32>
// CHECK-NEXT:    %y2 = coreml.conv %x, %w {strides = array<i64: 1, 1>, pad_type = "same", pad = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT:    %mp = coreml.max_pool %x {kernel_sizes = array<i64: 2, 2>, strides = array<i64: 2, 2>, pad_type = "valid", pad = array<i64: 0, 0, 0, 0>, ceil_mode = false} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
// CHECK-NEXT:    %ap = coreml.avg_pool %x {kernel_sizes = array<i64: 2, 2>, strides = array<i64: 2, 2>, pad_type = "valid", pad = array<i64: 0, 0, 0, 0>, ceil_mode = false, exclude_padding_from_average = true} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
// CHECK-NEXT:    func.return %y, %y2, %mp, %ap : tensor<1x3x2x2xf32>, tensor<1x3x4x4xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "conv_pool"
// GENERIC:       %w = "coreml.const"() <{value = dense<5.000000e-01> : tensor<3x2x3x3xf32>}> : () -> tensor<3x2x3x3xf32>
// GENERIC:       %b = "coreml.const"() <{value = dense<1.000000e+00> : tensor<3xf32>}> : () -> tensor<3xf32>
// GENERIC:       %y = "coreml.conv"(%x, %w, %b) <{strides = array<i64: 2, 2>, pad_type = "custom", pad = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>}> : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>) -> tensor<1x3x2x2xf32>
// GENERIC:       %y2 = "coreml.conv"(%x, %w) <{strides = array<i64: 1, 1>, pad_type = "same", pad = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
// GENERIC:       %mp = "coreml.max_pool"(%x) <{kernel_sizes = array<i64: 2, 2>, strides = array<i64: 2, 2>, pad_type = "valid", pad = array<i64: 0, 0, 0, 0>, ceil_mode = false}> : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
// GENERIC:       %ap = "coreml.avg_pool"(%x) <{kernel_sizes = array<i64: 2, 2>, strides = array<i64: 2, 2>, pad_type = "valid", pad = array<i64: 0, 0, 0, 0>, ceil_mode = false, exclude_padding_from_average = true}> : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
func.func @conv_pool(%x: tensor<1x2x4x4xf32>) -> (tensor<1x3x2x2xf32>, tensor<1x3x4x4xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %w = coreml.const dense<5.000000e-01> : tensor<3x2x3x3xf32>
  %b = coreml.const dense<1.000000e+00> : tensor<3xf32>
  %y = coreml.conv %x, %w, %b {strides = array<i64: 2, 2>, pad_type = "custom", pad = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>) -> tensor<1x3x2x2xf32>
  %y2 = coreml.conv %x, %w {strides = array<i64: 1, 1>, pad_type = "same", pad = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x4x4xf32>
  %mp = coreml.max_pool %x {kernel_sizes = array<i64: 2, 2>, strides = array<i64: 2, 2>, pad_type = "valid", pad = array<i64: 0, 0, 0, 0>, ceil_mode = false} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %ap = coreml.avg_pool %x {kernel_sizes = array<i64: 2, 2>, strides = array<i64: 2, 2>, pad_type = "valid", pad = array<i64: 0, 0, 0, 0>, ceil_mode = false, exclude_padding_from_average = true} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  func.return %y, %y2, %mp, %ap : tensor<1x3x2x2xf32>, tensor<1x3x4x4xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}

// Attention (iOS18) with and without a mask.
// CHECK-LABEL: func.func @attention(
// CHECK-NEXT:    %a = coreml.scaled_dot_product_attention %q, %k, %v, %mask : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<3x3xi1>) -> tensor<1x2x3x4xf32>
// CHECK-NEXT:    %b = coreml.scaled_dot_product_attention %q, %k, %v : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
// CHECK-NEXT:    func.return %a, %b : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "attention"
// GENERIC:       %a = "coreml.scaled_dot_product_attention"(%q, %k, %v, %mask) <{operandSegmentSizes = array<i32: 1, 1, 1, 1>}> : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<3x3xi1>) -> tensor<1x2x3x4xf32>
// GENERIC:       %b = "coreml.scaled_dot_product_attention"(%q, %k, %v) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
func.func @attention(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x3x4xf32>, %v: tensor<1x2x3x4xf32>, %mask: tensor<3x3xi1>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) attributes {coreml.opset = "iOS18"} {
  %a = coreml.scaled_dot_product_attention %q, %k, %v, %mask : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<3x3xi1>) -> tensor<1x2x3x4xf32>
  %b = coreml.scaled_dot_product_attention %q, %k, %v : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  func.return %a, %b : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>
}

// CHECK-LABEL: func.func @tile_and_logic(
// CHECK-NEXT:    %t = coreml.tile %x {reps = array<i64: 1, 3>} : (tensor<2x4xf32>) -> tensor<2x12xf32>
// CHECK-NEXT:    %m = coreml.tile %a {reps = array<i64: 1, 1, 8, 1>} : (tensor<1x1x1x8xi1>) -> tensor<1x1x8x8xi1>
// CHECK-NEXT:    %l0 = coreml.logical_and %a, %b : (tensor<1x1x1x8xi1>, tensor<1x1x8x1xi1>) -> tensor<1x1x8x8xi1>
// CHECK-NEXT:    %l1 = coreml.logical_or %l0, %m : (tensor<1x1x8x8xi1>, tensor<1x1x8x8xi1>) -> tensor<1x1x8x8xi1>
// CHECK-NEXT:    %l2 = coreml.logical_xor %l1, %b : (tensor<1x1x8x8xi1>, tensor<1x1x8x1xi1>) -> tensor<1x1x8x8xi1>
// CHECK-NEXT:    func.return %t, %l0, %l2 : tensor<2x12xf32>, tensor<1x1x8x8xi1>, tensor<1x1x8x8xi1>
// GENERIC-LABEL: "func.func"() <{sym_name = "tile_and_logic"
// GENERIC:       %t = "coreml.tile"(%x) <{reps = array<i64: 1, 3>}> : (tensor<2x4xf32>) -> tensor<2x12xf32>
// GENERIC:       %m = "coreml.tile"(%a) <{reps = array<i64: 1, 1, 8, 1>}> : (tensor<1x1x1x8xi1>) -> tensor<1x1x8x8xi1>
// GENERIC:       %l0 = "coreml.logical_and"(%a, %b) : (tensor<1x1x1x8xi1>, tensor<1x1x8x1xi1>) -> tensor<1x1x8x8xi1>
// GENERIC:       %l1 = "coreml.logical_or"(%l0, %m) : (tensor<1x1x8x8xi1>, tensor<1x1x8x8xi1>) -> tensor<1x1x8x8xi1>
// GENERIC:       %l2 = "coreml.logical_xor"(%l1, %b) : (tensor<1x1x8x8xi1>, tensor<1x1x8x1xi1>) -> tensor<1x1x8x8xi1>
func.func @tile_and_logic(%x: tensor<2x4xf32>, %a: tensor<1x1x1x8xi1>, %b: tensor<1x1x8x1xi1>) -> (tensor<2x12xf32>, tensor<1x1x8x8xi1>, tensor<1x1x8x8xi1>) attributes {coreml.opset = "iOS16"} {
  %t = coreml.tile %x {reps = array<i64: 1, 3>} : (tensor<2x4xf32>) -> tensor<2x12xf32>
  %m = coreml.tile %a {reps = array<i64: 1, 1, 8, 1>} : (tensor<1x1x1x8xi1>) -> tensor<1x1x8x8xi1>
  %l0 = coreml.logical_and %a, %b : (tensor<1x1x1x8xi1>, tensor<1x1x8x1xi1>) -> tensor<1x1x8x8xi1>
  %l1 = coreml.logical_or %l0, %m : (tensor<1x1x8x8xi1>, tensor<1x1x8x8xi1>) -> tensor<1x1x8x8xi1>
  %l2 = coreml.logical_xor %l1, %b : (tensor<1x1x8x8xi1>, tensor<1x1x8x1xi1>) -> tensor<1x1x8x8xi1>
  func.return %t, %l0, %l2 : tensor<2x12xf32>, tensor<1x1x8x8xi1>, tensor<1x1x8x8xi1>
}

// CHECK-LABEL: func.func @pad(
// CHECK-NEXT:    %p = coreml.pad %x {pad = array<i64: 2, 1, 0, 1>, mode = "constant", constant_val = -2.500000e-01 : f64} : (tensor<1x2x3x4xf32>) -> tensor<1x2x6x5xf32>
// CHECK-NEXT:    %q = coreml.pad %h {pad = array<i64: 1, 1>, mode = "constant", constant_val = 0.000000e+00 : f64} : (tensor<2x4xf16>) -> tensor<2x6xf16>
// CHECK-NEXT:    func.return %p, %q : tensor<1x2x6x5xf32>, tensor<2x6xf16>
// GENERIC-LABEL: "func.func"() <{sym_name = "pad"
// GENERIC:       %p = "coreml.pad"(%x) <{pad = array<i64: 2, 1, 0, 1>, mode = "constant", constant_val = -2.500000e-01 : f64}> : (tensor<1x2x3x4xf32>) -> tensor<1x2x6x5xf32>
func.func @pad(%x: tensor<1x2x3x4xf32>, %h: tensor<2x4xf16>) -> (tensor<1x2x6x5xf32>, tensor<2x6xf16>) {
  %p = coreml.pad %x {pad = array<i64: 2, 1, 0, 1>, mode = "constant", constant_val = -2.500000e-01 : f64} : (tensor<1x2x3x4xf32>) -> tensor<1x2x6x5xf32>
  %q = coreml.pad %h {pad = array<i64: 1, 1>, mode = "constant", constant_val = 0.000000e+00 : f64} : (tensor<2x4xf16>) -> tensor<2x6xf16>
  func.return %p, %q : tensor<1x2x6x5xf32>, tensor<2x6xf16>
}

// CHECK-LABEL: func.func @activations_and_rounding(
// CHECK-NEXT:    %h = coreml.sigmoid_hard %x {alpha = 0.16666666666666666 : f64, beta = 5.000000e-01 : f64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %l = coreml.leaky_relu %x {alpha = 1.000000e-02 : f64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %a = coreml.abs %n : (tensor<2x4xi32>) -> tensor<2x4xi32>
// CHECK-NEXT:    %f = coreml.floor %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %c = coreml.ceil %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %g = coreml.log %x {epsilon = 0.000000e+00 : f64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %i = coreml.inverse %x {epsilon = 0.000000e+00 : f64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %m = coreml.mod %n, %n : (tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<2x4xi32>
// CHECK-NEXT:    %r = coreml.reduce_min %x {axes = array<i64: 1>, keep_dims = false} : (tensor<2x4xf32>) -> tensor<2xf32>
// CHECK-NEXT:    func.return %h, %l, %a, %f, %c, %g, %i, %m, %r : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xi32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xi32>, tensor<2xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "activations_and_rounding"
// GENERIC:       %h = "coreml.sigmoid_hard"(%x) <{alpha = 0.16666666666666666 : f64, beta = 5.000000e-01 : f64}> : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GENERIC:       %l = "coreml.leaky_relu"(%x) <{alpha = 1.000000e-02 : f64}> : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GENERIC:       %a = "coreml.abs"(%n) : (tensor<2x4xi32>) -> tensor<2x4xi32>
// GENERIC:       %f = "coreml.floor"(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GENERIC:       %c = "coreml.ceil"(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GENERIC:       %g = "coreml.log"(%x) <{epsilon = 0.000000e+00 : f64}> : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GENERIC:       %i = "coreml.inverse"(%x) <{epsilon = 0.000000e+00 : f64}> : (tensor<2x4xf32>) -> tensor<2x4xf32>
// GENERIC:       %m = "coreml.mod"(%n, %n) : (tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<2x4xi32>
// GENERIC:       %r = "coreml.reduce_min"(%x) <{axes = array<i64: 1>, keep_dims = false}> : (tensor<2x4xf32>) -> tensor<2xf32>
func.func @activations_and_rounding(%x: tensor<2x4xf32>, %n: tensor<2x4xi32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xi32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xi32>, tensor<2xf32>) attributes {coreml.opset = "iOS16"} {
  %h = coreml.sigmoid_hard %x {alpha = 0.16666666666666666 : f64, beta = 5.000000e-01 : f64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %l = coreml.leaky_relu %x {alpha = 1.000000e-02 : f64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %a = coreml.abs %n : (tensor<2x4xi32>) -> tensor<2x4xi32>
  %f = coreml.floor %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %c = coreml.ceil %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %g = coreml.log %x {epsilon = 0.000000e+00 : f64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %i = coreml.inverse %x {epsilon = 0.000000e+00 : f64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %m = coreml.mod %n, %n : (tensor<2x4xi32>, tensor<2x4xi32>) -> tensor<2x4xi32>
  %r = coreml.reduce_min %x {axes = array<i64: 1>, keep_dims = false} : (tensor<2x4xf32>) -> tensor<2xf32>
  func.return %h, %l, %a, %f, %c, %g, %i, %m, %r : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xi32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xi32>, tensor<2xf32>
}

// States (iOS18): a mutable ml_program.global per state, read and updated by symbol;
// a KV-cache write at run-time positions is a scatter along the cache's axis.
// CHECK:         ml_program.global private mutable @layers.0.k_cache : tensor<1x2x8x4xf16>
// CHECK-LABEL: func.func @states(
// CHECK-NEXT:    %k = coreml.read_state @layers.0.k_cache : tensor<1x2x8x4xf16>
// CHECK-NEXT:    %s = coreml.scatter %k, %pos, %v {axis = 2 : i64, mode = "update"} : (tensor<1x2x8x4xf16>, tensor<1xi32>, tensor<1x2x1x4xf16>) -> tensor<1x2x8x4xf16>
// CHECK-NEXT:    %u = coreml.coreml_update_state @layers.0.k_cache, %s : tensor<1x2x8x4xf16>
// CHECK-NEXT:    func.return %u : tensor<1x2x8x4xf16>
// GENERIC:       "ml_program.global"() <{sym_name = "layers.0.k_cache", type = tensor<1x2x8x4xf16>, is_mutable, sym_visibility = "private"}> : () -> ()
// GENERIC-LABEL: "func.func"() <{sym_name = "states"
// GENERIC:       %k = "coreml.read_state"() <{state = @layers.0.k_cache}> : () -> tensor<1x2x8x4xf16>
// GENERIC:       %s = "coreml.scatter"(%k, %pos, %v) <{axis = 2 : i64, mode = "update"}> : (tensor<1x2x8x4xf16>, tensor<1xi32>, tensor<1x2x1x4xf16>) -> tensor<1x2x8x4xf16>
// GENERIC:       %u = "coreml.coreml_update_state"(%s) <{state = @layers.0.k_cache}> : (tensor<1x2x8x4xf16>) -> tensor<1x2x8x4xf16>
ml_program.global private mutable @layers.0.k_cache : tensor<1x2x8x4xf16>
func.func @states(%pos: tensor<1xi32>, %v: tensor<1x2x1x4xf16>) -> tensor<1x2x8x4xf16> attributes {coreml.opset = "iOS18"} {
  %k = coreml.read_state @layers.0.k_cache : tensor<1x2x8x4xf16>
  %s = coreml.scatter %k, %pos, %v {axis = 2 : i64, mode = "update"} : (tensor<1x2x8x4xf16>, tensor<1xi32>, tensor<1x2x1x4xf16>) -> tensor<1x2x8x4xf16>
  %u = coreml.coreml_update_state @layers.0.k_cache, %s : tensor<1x2x8x4xf16>
  func.return %u : tensor<1x2x8x4xf16>
}

// Prefix sums (int32 and fp16; exclusive and reverse).
// CHECK-LABEL: func.func @cumsum(
// CHECK-NEXT:    %c = coreml.cumsum %x {axis = 1 : i64, exclusive = false, reverse = false} : (tensor<2x5xi32>) -> tensor<2x5xi32>
// CHECK-NEXT:    %d = coreml.cumsum %f {axis = 0 : i64, exclusive = true, reverse = true} : (tensor<3x4xf16>) -> tensor<3x4xf16>
// CHECK-NEXT:    func.return %c, %d : tensor<2x5xi32>, tensor<3x4xf16>
// GENERIC-LABEL: "func.func"() <{sym_name = "cumsum"
// GENERIC:       %c = "coreml.cumsum"(%x) <{axis = 1 : i64, exclusive = false, reverse = false}> : (tensor<2x5xi32>) -> tensor<2x5xi32>
// GENERIC:       %d = "coreml.cumsum"(%f) <{axis = 0 : i64, exclusive = true, reverse = true}> : (tensor<3x4xf16>) -> tensor<3x4xf16>
func.func @cumsum(%x: tensor<2x5xi32>, %f: tensor<3x4xf16>) -> (tensor<2x5xi32>, tensor<3x4xf16>) {
  %c = coreml.cumsum %x {axis = 1 : i64, exclusive = false, reverse = false} : (tensor<2x5xi32>) -> tensor<2x5xi32>
  %d = coreml.cumsum %f {axis = 0 : i64, exclusive = true, reverse = true} : (tensor<3x4xf16>) -> tensor<3x4xf16>
  func.return %c, %d : tensor<2x5xi32>, tensor<3x4xf16>
}

// Gather along an axis (torch.gather): the result has the indices' shape.
// CHECK-LABEL: func.func @gather_along_axis(
// CHECK-NEXT:    %g = coreml.gather_along_axis %x, %i {axis = 1 : i64} : (tensor<2x5xf32>, tensor<2x3xi32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %g : tensor<2x3xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "gather_along_axis"
// GENERIC:       %g = "coreml.gather_along_axis"(%x, %i) <{axis = 1 : i64}> : (tensor<2x5xf32>, tensor<2x3xi32>) -> tensor<2x3xf32>
func.func @gather_along_axis(%x: tensor<2x5xf32>, %i: tensor<2x3xi32>) -> tensor<2x3xf32> {
  %g = coreml.gather_along_axis %x, %i {axis = 1 : i64} : (tensor<2x5xf32>, tensor<2x3xi32>) -> tensor<2x3xf32>
  func.return %g : tensor<2x3xf32>
}

// CHECK:       w_fp32: "0x080000000000803F000000400000404000008040"
{-#
  dialect_resources: {
    builtin: {
      w_fp32: "0x080000000000803F000000400000404000008040"
    }
  }
#-}
