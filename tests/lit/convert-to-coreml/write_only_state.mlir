// RUN: qopt-opt %s -p 'convert-to-coreml{target=iOS16}' | filecheck %s
// A state the program never reads (every load unused: transformers' cumulative_length,
// overwritten from cache_position before any use) is dropped: no output depends on
// it, and Core ML holds no integer state. With no other state, iOS16 is fine.

// CHECK-NOT:   ml_program.global
// CHECK-LABEL: func.func @forward(
// CHECK-NOT:     read_state
// CHECK-NOT:     update_state
// CHECK:         func.return
ml_program.global private mutable @cumulative_length_0(dense<0> : tensor<i64>) : tensor<i64>
func.func @forward(%p: tensor<1xi64>, %x: tensor<2xf32>) -> tensor<2xf32> {
  %old = ml_program.global_load @cumulative_length_0 : tensor<i64>
  %c = arith.constant dense<2.0> : tensor<f32>
  %y = aten.mul %x, %c : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %s = aten.select %p {dim = 0 : i64, index = 0 : i64} : (tensor<1xi64>) -> tensor<i64>
  ml_program.global_store @cumulative_length_0 = %s : tensor<i64>
  func.return %y : tensor<2xf32>
}
