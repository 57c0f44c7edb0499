// RUN: qopt-opt %s | filecheck %s
// RUN: qopt-opt %s | qopt-opt | filecheck %s
// Program state: mutable globals named by the buffer's qualified name, loaded at
// the start of a call and stored (once) at its end; a global without a value
// starts as zeros.

// CHECK:      ml_program.global private mutable @layers.0.k_cache(dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>) : tensor<2xf32>
// CHECK-NEXT: ml_program.global private mutable @step : tensor<i64>
// CHECK-NEXT: ml_program.global private @table(dense<[1, 2]> : tensor<2xi32>) : tensor<2xi32>
// CHECK:      %k = ml_program.global_load @layers.0.k_cache : tensor<2xf32>
// CHECK-NEXT: %t = ml_program.global_load_const @table : tensor<2xi32>
// CHECK-NEXT: %s = aten.add %k, %x
// CHECK-NEXT: ml_program.global_store @layers.0.k_cache = %s : tensor<2xf32>
// CHECK-NEXT: func.return %s
ml_program.global private mutable @layers.0.k_cache(dense<[1.0, 2.0]> : tensor<2xf32>) : tensor<2xf32>
ml_program.global private mutable @step : tensor<i64>
ml_program.global private @table(dense<[1, 2]> : tensor<2xi32>) : tensor<2xi32>
func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
  %k = ml_program.global_load @layers.0.k_cache : tensor<2xf32>
  %t = ml_program.global_load_const @table : tensor<2xi32>
  %s = aten.add %k, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  ml_program.global_store @layers.0.k_cache = %s : tensor<2xf32>
  func.return %s : tensor<2xf32>
}
