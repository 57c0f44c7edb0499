// RUN: qopt-opt %s -p convert-to-coreml --print-op-generic --print-debuginfo | filecheck %s
// RUN: qopt-opt %s -p convert-to-coreml,coreml-fp16 --print-op-generic --print-debuginfo | filecheck %s --check-prefix=FP16
// RUN: qopt-opt %s -p convert-to-coreml --print-debuginfo -o %t.coreml.mlir
// RUN: %python -c "import numpy as np; np.savez('%t.bad.npz', np.ones((5, 4), np.float32), np.array([[0, 7, 2]]))"
// RUN: not qopt-run %t.coreml.mlir --inputs %t.bad.npz 2>&1 | filecheck %s --check-prefix=ERR
// Every coreml op a rule creates carries the location of the op it lowers (the
// frontend's FileLineColLoc; fuse-quant copies it onto qfused ops), also when one
// op lowers to many (round) and for the constants a rule makes (a qfused op's
// weight, scale and activation parameters); coreml-fp16's casts and f16
// constants take the location of the op they serve. So an error at the coreml
// level names the user's line: here the coreml interpreter's index check (the
// IR written with --print-debuginfo keeps the locations).
// Generic form: the checks do not depend on the coreml assembly formats.

// ERR: qopt-run: error: 'coreml.gather' at model.py:13: index 7 is out of range for a dimension of size 5

// CHECK-LABEL: "func.func"() <{sym_name = "forward"
// CHECK:         "coreml.gather"(%table, %ids) {{.*}} loc("model.py":13:8)
func.func @forward(%table: tensor<5x4xf32>, %ids: tensor<1x3xi64>) -> tensor<1x3x4xf32> {
  %e = aten.embedding %table, %ids : (tensor<5x4xf32>, tensor<1x3xi64>) -> tensor<1x3x4xf32> loc("model.py":13:8)
  func.return %e : tensor<1x3x4xf32>
}

// CHECK-LABEL: "func.func"() <{sym_name = "float"
// CHECK:         %[[W:.*]] = "coreml.const"() {{.*}} loc("model.py":9:4)
// CHECK-NEXT:    %[[B:.*]] = "coreml.const"() {{.*}} loc("model.py":9:4)
// CHECK-NEXT:    %[[Y:.*]] = "coreml.linear"(%x, %[[W]], %[[B]]) {{.*}} loc("model.py":10:4)
// CHECK-NEXT:    "coreml.floor"(%[[Y]]) {{.*}} loc("model.py":11:4)
// CHECK-NEXT:    "coreml.sub"{{.*}} loc("model.py":11:4)
// CHECK-NEXT:    "coreml.const"{{.*}} loc("model.py":11:4)
// CHECK-NEXT:    "coreml.greater"{{.*}} loc("model.py":11:4)
// CHECK-NEXT:    "coreml.equal"{{.*}} loc("model.py":11:4)
// CHECK-NEXT:    "coreml.mul"{{.*}} loc("model.py":11:4)
// CHECK-NEXT:    "coreml.floor"{{.*}} loc("model.py":11:4)
// CHECK-NEXT:    "coreml.not_equal"{{.*}} loc("model.py":11:4)
// CHECK-NEXT:    "coreml.logical_and"{{.*}} loc("model.py":11:4)
// CHECK-NEXT:    "coreml.logical_or"{{.*}} loc("model.py":11:4)
// CHECK-NEXT:    "coreml.const"{{.*}} loc("model.py":11:4)
// CHECK-NEXT:    "coreml.add"{{.*}} loc("model.py":11:4)
// CHECK-NEXT:    "coreml.select"{{.*}} loc("model.py":11:4)
// CHECK-NEXT:    "coreml.const"{{.*}} loc("model.py":11:4)
// CHECK-NEXT:    "coreml.less"{{.*}} loc("model.py":11:4)
// CHECK-NEXT:    "coreml.const"{{.*}} loc("model.py":11:4)
// CHECK-NEXT:    "coreml.equal"{{.*}} loc("model.py":11:4)
// CHECK-NEXT:    "coreml.logical_and"{{.*}} loc("model.py":11:4)
// CHECK-NEXT:    "coreml.const"{{.*}} loc("model.py":11:4)
// CHECK-NEXT:    %[[R:.*]] = "coreml.select"{{.*}} loc("model.py":11:4)
// CHECK-NEXT:    "func.return"(%[[R]])
// FP16-LABEL: "func.func"() <{sym_name = "float"
// FP16:         "coreml.const"() {{.*}} -> tensor<3x4xf16> loc("model.py":9:4)
// FP16:         "coreml.linear"{{.*}} -> tensor<2x3xf16> loc("model.py":10:4)
// FP16:         "coreml.select"{{.*}} -> tensor<2x3xf16> loc("model.py":11:4)
// FP16:         %[[R:.*]] = "coreml.select"{{.*}} -> tensor<2x3xf16> loc("model.py":11:4)
// FP16-NEXT:    %[[O:.*]] = "coreml.cast"(%[[R]]) <{dtype = "fp32"}> {{.*}} loc("model.py":11:4)
// FP16-NEXT:    "func.return"(%[[O]])
func.func @float(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<5.000000e-01> : tensor<3x4xf32> loc("model.py":9:4)
  %b = arith.constant dense<1.000000e+00> : tensor<3xf32> loc("model.py":9:4)
  %y = aten.linear %x, %w, %b : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("model.py":10:4)
  %r = aten.round %y : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("model.py":11:4)
  func.return %r : tensor<2x3xf32>
}

// A qfused linear with a static activation: the quantize (torch's multiply by
// f32(1 / scale), then MIL's quantize with scale 1) / dequantize pair, the
// compressed weight and every constant carry the qfused op's location.
// CHECK-LABEL: "func.func"() <{sym_name = "qlinear"
// CHECK:         "coreml.const"() <{value = dense<2.000000e+01> : tensor<f32>}> {{.*}} loc("model.py":20:8)
// CHECK-NEXT:    "coreml.mul"{{.*}} loc("model.py":20:8)
// CHECK-NEXT:    "coreml.const"() <{value = dense<0> : tensor<i8>}> {{.*}} loc("model.py":20:8)
// CHECK-NEXT:    "coreml.const"() <{value = dense<1.000000e+00> : tensor<f32>}> {{.*}} loc("model.py":20:8)
// CHECK-NEXT:    "coreml.quantize"{{.*}} loc("model.py":20:8)
// CHECK-NEXT:    "coreml.const"{{.*}} loc("model.py":20:8)
// CHECK-NEXT:    "coreml.const"{{.*}} loc("model.py":20:8)
// CHECK-NEXT:    "coreml.dequantize"{{.*}} loc("model.py":20:8)
// CHECK-NEXT:    "coreml.const"() <{value = dense<1> : tensor<3x4xi8>}> {{.*}} loc("model.py":20:8)
// CHECK-NEXT:    "coreml.const"() <{value = dense<5.000000e-01> : tensor<3x1xf32>}> {{.*}} loc("model.py":20:8)
// CHECK-NEXT:    "coreml.constexpr_blockwise_shift_scale"{{.*}} loc("model.py":20:8)
// CHECK-NEXT:    "coreml.const"() <{value = dense<0.000000e+00> : tensor<3xf32>}> {{.*}} loc("model.py":20:8)
// CHECK-NEXT:    "coreml.linear"{{.*}} loc("model.py":20:8)
// CHECK-NEXT:    "func.return"
func.func @qlinear(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<1> : tensor<3x4xi8>
  %s = arith.constant dense<5.000000e-01> : tensor<3x1xf32>
  %y = qfused.linear %x, %w, %s {weight_scheme = #qfused.affine<bits = 8, range = [-128, 127], block = [1, 4]>, act = #qfused.static<scale = 5.000000e-02, zero_point = 0, range = [-128, 127]>, kernel = "linear_q8ta_q8csw"} : tensor<2x4xf32>, tensor<3x4xi8>, tensor<3x1xf32> -> tensor<2x3xf32> loc("model.py":20:8)
  func.return %y : tensor<2x3xf32>
}
