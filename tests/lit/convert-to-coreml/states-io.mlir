// RUN: qopt-opt %s -p 'convert-to-coreml{target=iOS16 states=io}' | filecheck %s
// RUN: not qopt-opt %s -p 'convert-to-coreml{target=iOS16}' 2>&1 | filecheck %s --check-prefix=ERR
// Below iOS18 (no Core ML states) a program's state can travel through every call:
// the global becomes an extra last input named after it and, where the function
// writes it, an extra last output `<name>_out`; the caller keeps it between calls.

// CHECK-NOT:   ml_program.global
// CHECK-LABEL: func.func @forward(%x: tensor<2xf32>, %step_count: tensor<i32>) -> (tensor<2xf32>, tensor<i32>)
// CHECK-SAME:    qopt.output_names = ["y", "step_count_out"]
// CHECK-NOT:     read_state
// CHECK:         coreml.add
// CHECK:         func.return

// ERR: Core ML states (MIL read_state / coreml_update_state) exist from iOS18, the target is iOS16: use convert-to-coreml{target=iOS18} / minimum_deployment_target='iOS18', or pass the states as inputs and outputs of every call (convert-to-coreml{states=io} / states='io')
ml_program.global private mutable @step.count(dense<0> : tensor<i64>) : tensor<i64>
func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> attributes {qopt.output_names = ["y"]} {
  %n = ml_program.global_load @step.count : tensor<i64>
  %one = arith.constant dense<1> : tensor<i64>
  %m = aten.add %n, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
  ml_program.global_store @step.count = %m : tensor<i64>
  %f = aten.add %x, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %f : tensor<2xf32>
}
