// RUN: qopt-opt %s -p convert-to-coreml --split-input-file | filecheck %s
// Forms of ops MIL lacks, composed by the lowering in ops it has
// (qopt/lowering/compose.py).

// tril: select with a constant lower-triangular mask.
// CHECK-LABEL: func.func @tril(
// CHECK:         %[[M:.*]] = coreml.const {{.*}} : tensor<3x3xi1>
// CHECK:         %[[Z:.*]] = coreml.const dense<0.000000e+00> : tensor<1xf32>
// CHECK:         coreml.select %[[M]], %x, %[[Z]]
func.func @tril(%x: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %y = aten.tril %x : (tensor<3x3xf32>) -> tensor<3x3xf32>
  func.return %y : tensor<3x3xf32>
}

// -----

// any over dim 1: reduce_max of (x != 0) as int32, compared with 0.
// CHECK-LABEL: func.func @any(
// CHECK:         coreml.not_equal
// CHECK:         coreml.cast %{{.*}} {dtype = "int32"}
// CHECK:         coreml.reduce_max %{{.*}} {axes = array<i64: 1>, keep_dims = false}
// CHECK:         coreml.not_equal
func.func @any(%x: tensor<2x4xi1>) -> tensor<2xi1> {
  %y = aten.any %x {dims = array<i64: 1>} : (tensor<2x4xi1>) -> tensor<2xi1>
  func.return %y : tensor<2xi1>
}
