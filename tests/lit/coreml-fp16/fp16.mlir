// RUN: qopt-opt %s --split-input-file -p convert-to-coreml,coreml-fp16 --print-op-generic --print-weights | filecheck %s
// RUN: qopt-opt %s --split-input-file -p 'qopt-coreml{compute-precision=fp16}' --print-op-generic | filecheck %s --check-prefix=PIPE
// RUN: not qopt-opt %s --split-input-file -p 'qopt-coreml{compute-precision=fp8}' 2>&1 | filecheck %s --check-prefix=BADPREC
// RUN: not qopt-opt %s --split-input-file -p coreml-fp16 2>&1 | filecheck %s --check-prefix=UNLOWERED
// coreml-fp16 (coreml -> coreml): float constants and results become f16; fp32
// inputs are cast to fp16 on entry and fp16 outputs back to fp32 (the signature
// stays fp32); quantize / dequantize and their parameters stay fp32, and so does
// a static int8 region (dequantize -> linear -> quantize) with its weights.
// Generic form: the checks do not depend on the coreml assembly formats.

// BADPREC: qopt-opt: error: qopt-coreml: compute_precision must be 'fp32' or 'fp16', got 'fp8'
// UNLOWERED: qopt-opt: error: coreml-fp16: 'arith.constant' is not a coreml op: lower the module first

// A float program: everything computes in fp16 between the two casts.
// CHECK-LABEL: "func.func"() <{sym_name = "float", function_type = (tensor<2x4xf32>) -> tensor<2x3xf32>}>
// CHECK:         %[[X:.*]] = "coreml.cast"(%x) <{dtype = "fp16"}> : (tensor<2x4xf32>) -> tensor<2x4xf16>
// CHECK:         %[[W:.*]] = "coreml.const"() {{.*}} : () -> tensor<3x4xf16>
// CHECK:         %[[B:.*]] = "coreml.const"() {{.*}} : () -> tensor<3xf16>
// CHECK:         %[[Y:.*]] = "coreml.linear"(%[[X]], %[[W]], %[[B]]) {{.*}}: (tensor<2x4xf16>, tensor<3x4xf16>, tensor<3xf16>) -> tensor<2x3xf16>
// CHECK:         %[[R:.*]] = "coreml.relu"(%[[Y]]) : (tensor<2x3xf16>) -> tensor<2x3xf16>
// CHECK:         %[[O:.*]] = "coreml.cast"(%[[R]]) <{dtype = "fp32"}> : (tensor<2x3xf16>) -> tensor<2x3xf32>
// CHECK:         "func.return"(%[[O]]) : (tensor<2x3xf32>) -> ()
// The weights are converted at compile time (0.5 and 1.0 in fp16).
// CHECK:         "0x08000000003800380038003800380038003800380038003800380038"
// CHECK-SAME:    "0x08000000003C003C003C"
// PIPE-LABEL: "func.func"() <{sym_name = "float"
// PIPE:         "coreml.cast"(%x) <{dtype = "fp16"}>
// PIPE:         "coreml.linear"({{.*}}) -> tensor<2x3xf16>
// PIPE:         "coreml.cast"({{.*}}) <{dtype = "fp32"}>
func.func @float(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<5.000000e-01> : tensor<3x4xf32>
  %b = arith.constant dense<1.000000e+00> : tensor<3xf32>
  %y = aten.linear %x, %w, %b : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %r = aten.relu %y : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

// A static int8 region stays fp32: the input feeds only a quantizer (its mul by
// 1 / scale, then quantize; no cast), the quantization parameters, the linear and
// its weights keep f32; the last dequantize is cast to fp16 for the float op after it.
// CHECK-LABEL: "func.func"() <{sym_name = "int8_region"
// CHECK-NOT:     "coreml.cast"(%x)
// CHECK:         %[[I:.*]] = "coreml.const"() <{value = dense<2.000000e+01> : tensor<f32>}>
// CHECK:         %[[V:.*]] = "coreml.mul"(%x, %[[I]]) : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
// CHECK:         %[[Z:.*]] = "coreml.const"() <{value = dense<3> : tensor<i8>}>
// CHECK:         %[[S:.*]] = "coreml.const"() <{value = dense<1.000000e+00> : tensor<f32>}>
// CHECK:         %[[Q:.*]] = "coreml.quantize"(%[[V]], %[[Z]], %[[S]]) {{.*}}: (tensor<2x4xf32>, tensor<i8>, tensor<f32>) -> tensor<2x4xi8>
// CHECK:         %[[D:.*]] = "coreml.dequantize"(%[[Q]], {{.*}}) {{.*}}-> tensor<2x4xf32>
// CHECK:         %[[W:.*]] = "coreml.const"() <{value = dense<2.500000e-01> : tensor<3x4xf32>}>
// CHECK:         %[[B:.*]] = "coreml.const"() <{value = dense<1.000000e+00> : tensor<3xf32>}>
// CHECK:         %[[Y:.*]] = "coreml.linear"(%[[D]], %[[W]], %[[B]]) {{.*}}: (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK:         "coreml.const"() <{value = dense<1.000000e+01> : tensor<f32>}>
// CHECK:         %[[V2:.*]] = "coreml.mul"(%[[Y]], {{.*}}) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK:         %[[Q2:.*]] = "coreml.quantize"(%[[V2]], {{.*}}) {{.*}}-> tensor<2x3xi8>
// CHECK:         %[[D2:.*]] = "coreml.dequantize"(%[[Q2]], {{.*}}) {{.*}}-> tensor<2x3xf32>
// CHECK-NEXT:    %[[H:.*]] = "coreml.cast"(%[[D2]]) <{dtype = "fp16"}> : (tensor<2x3xf32>) -> tensor<2x3xf16>
// CHECK-NEXT:    %[[T:.*]] = "coreml.tanh"(%[[H]]) : (tensor<2x3xf16>) -> tensor<2x3xf16>
// CHECK-NEXT:    %[[O:.*]] = "coreml.cast"(%[[T]]) <{dtype = "fp32"}> : (tensor<2x3xf16>) -> tensor<2x3xf32>
// CHECK-NEXT:    "func.return"(%[[O]])
func.func @int8_region(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %s = arith.constant dense<5.000000e-02> : tensor<f32>
  %z = arith.constant dense<3> : tensor<i8>
  %q = quant.quantize %x, %s, %z {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xf32>, tensor<f32>, tensor<i8>) -> tensor<2x4xi8>
  %d = quant.dequantize %q, %s, %z {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f32>, tensor<i8>) -> tensor<2x4xf32>
  %w = arith.constant dense<2.500000e-01> : tensor<3x4xf32>
  %b = arith.constant dense<1.000000e+00> : tensor<3xf32>
  %y = aten.linear %d, %w, %b : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %s2 = arith.constant dense<1.000000e-01> : tensor<f32>
  %z2 = arith.constant dense<-2> : tensor<i8>
  %q2 = quant.quantize %y, %s2, %z2 {block_size = array<i64: 2, 3>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x3xf32>, tensor<f32>, tensor<i8>) -> tensor<2x3xi8>
  %d2 = quant.dequantize %q2, %s2, %z2 {block_size = array<i64: 2, 3>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x3xi8>, tensor<f32>, tensor<i8>) -> tensor<2x3xf32>
  %t = aten.tanh %d2 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %t : tensor<2x3xf32>
}

// -----

// A quantize of an fp16 value: its quantizer (the mul by f32(1 / scale) and the
// clip to a narrow range) computes in fp32, as the quantize does: the cast to
// fp32 comes before the mul, whose constant stays f32.
// CHECK-LABEL: "func.func"() <{sym_name = "quantize_fp16_value"
// CHECK:         %[[T:.*]] = "coreml.tanh"({{.*}}) : (tensor<2x4xf16>) -> tensor<2x4xf16>
// CHECK:         %[[I:.*]] = "coreml.const"() <{value = dense<2.000000e+01> : tensor<f32>}>
// CHECK:         %[[F:.*]] = "coreml.cast"(%[[T]]) <{dtype = "fp32"}> : (tensor<2x4xf16>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[V:.*]] = "coreml.mul"(%[[F]], %[[I]]) : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[C:.*]] = "coreml.clip"(%[[V]]) {{.*}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK:         "coreml.quantize"(%[[C]], {{.*}}) {{.*}}: (tensor<2x4xf32>, tensor<i8>, tensor<f32>) -> tensor<2x4xi8>
func.func @quantize_fp16_value(%x: tensor<2x4xf32>) -> tensor<2x4xi8> {
  %t = aten.tanh %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %s = arith.constant dense<5.000000e-02> : tensor<f32>
  %z = arith.constant dense<3> : tensor<i8>
  %q = quant.quantize %t, %s, %z {block_size = array<i64: 2, 4>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<2x4xf32>, tensor<f32>, tensor<i8>) -> tensor<2x4xi8>
  func.return %q : tensor<2x4xi8>
}

// -----

// Integer values are left alone; a cast of a bool mask to float is renamed fp16;
// a -3.4e38 mask fill becomes -inf in fp16, as in coremltools' fp16 pass.
// CHECK-LABEL: "func.func"() <{sym_name = "mixed", function_type = (tensor<2x4xf32>, tensor<2xi32>) -> (tensor<2x4xf32>, tensor<2xi32>)}>
// CHECK:         %[[X:.*]] = "coreml.cast"(%x) <{dtype = "fp16"}> : (tensor<2x4xf32>) -> tensor<2x4xf16>
// CHECK-NOT:     "coreml.cast"(%ids)
// CHECK:         %[[Y:.*]] = "coreml.add"(%[[X]], %{{.*}}) : (tensor<2x4xf16>, tensor<2x4xf16>) -> tensor<2x4xf16>
// CHECK:         %[[LT:.*]] = "coreml.less"(%[[X]], %{{.*}}) : (tensor<2x4xf16>, tensor<2x4xf16>) -> tensor<2x4xi1>
// CHECK:         %[[F:.*]] = "coreml.cast"(%[[LT]]) <{dtype = "fp16"}> : (tensor<2x4xi1>) -> tensor<2x4xf16>
// CHECK:         %[[M:.*]] = "coreml.mul"(%[[Y]], %[[F]]) : (tensor<2x4xf16>, tensor<2x4xf16>) -> tensor<2x4xf16>
// CHECK:         %[[I:.*]] = "coreml.add"(%ids, %ids) : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
// CHECK:         %[[O:.*]] = "coreml.cast"(%[[M]]) <{dtype = "fp32"}> : (tensor<2x4xf16>) -> tensor<2x4xf32>
// CHECK:         "func.return"(%[[O]], %[[I]]) : (tensor<2x4xf32>, tensor<2xi32>) -> ()
// CHECK:         "0x0800000000FC00FC00FC00FC00FC00FC00FC00FC"
func.func @mixed(%x: tensor<2x4xf32>, %ids: tensor<2xi32>) -> (tensor<2x4xf32>, tensor<2xi32>) {
  %m = arith.constant dense<-3.400000e+38> : tensor<2x4xf32>
  %y = aten.add %x, %m : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %z = arith.constant dense<0.000000e+00> : tensor<2x4xf32>
  %lt = aten.lt %x, %z : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xi1>
  %f = aten.to %lt : (tensor<2x4xi1>) -> tensor<2x4xf32>
  %o = aten.mul %y, %f : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %i = aten.add %ids, %ids : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  func.return %o, %i : tensor<2x4xf32>, tensor<2xi32>
}

// -----

// A conv read only by a batch_norm: one conv, the norm folded into its weight and
// bias (computed in float64, rounded to fp32, then fp16), as coremltools does.
// CHECK-LABEL: "func.func"() <{sym_name = "conv_batch_norm"
// CHECK-NOT:     "coreml.batch_norm"
// CHECK:         "coreml.conv"({{.*}}) {{.*}} : (tensor<1x2x4x4xf16>, tensor<2x2x1x1xf16>, tensor<2xf16>) -> tensor<1x2x4x4xf16>
// CHECK-NOT:     "coreml.batch_norm"
// CHECK:         "func.return"
func.func @conv_batch_norm(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = arith.constant dense<[[[[1.0]], [[0.5]]], [[[-1.0]], [[2.0]]]]> : tensor<2x2x1x1xf32>
  %m = arith.constant dense<[1.0, -1.0]> : tensor<2xf32>
  %v = arith.constant dense<[4.0, 0.25]> : tensor<2xf32>
  %c = aten.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %y = aten.batch_norm %c, %m, %v {eps = 1.000000e-03 : f64} : tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x4x4xf32>
  func.return %y : tensor<1x2x4x4xf32>
}
