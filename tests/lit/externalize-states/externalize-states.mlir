// RUN: qopt-opt %s -p externalize-states | filecheck %s
// RUN: qopt-opt %s -p externalize-states | qopt-opt | filecheck %s
// RUN: qopt-opt %s -p 'qopt-coreml{states=io target=iOS16 compute-precision=fp32}' --print-ir-after externalize-states -o /dev/null 2>&1 | filecheck %s --check-prefix=PIPELINE
// RUN: not qopt-opt %s -p 'qopt-coreml{target=iOS18}' --print-ir-after externalize-states -o /dev/null 2>&1 | filecheck %s --check-prefix=NOT-LISTED
// The program's mutable globals travel through every call instead: each function
// that reads or writes @g takes it as an extra last input named after it (letters,
// digits and `_`), each that writes it returns the new value as an extra last output
// `<name>_out`; functions that use no state keep their signature. qopt-coreml{states=io} lists the pass before convert-to-coreml; with
// Core ML states (the default) it is not in the pipeline.

// CHECK-NOT:   ml_program.global
// CHECK-LABEL: func.func @forward(%x: tensor<2xf32>, %layers_0_k_cache: tensor<2xf32>, %step_count: tensor<i64>) -> (tensor<2xf32>, tensor<i64>)
// CHECK-SAME:    qopt.output_names = ["y", "step_count_out"]
// CHECK:         %[[M:.*]] = aten.add %step_count, %one
// CHECK:         %[[F:.*]] = aten.add %x, %layers_0_k_cache
// CHECK:         %[[G:.*]] = aten.mul %[[F]], %x
// CHECK:         func.return %[[G]], %[[M]] : tensor<2xf32>, tensor<i64>
// CHECK-LABEL: func.func @reset(%x: tensor<2xf32>) -> tensor<2xf32> {

// PIPELINE:      IR Dump After externalize-states
// PIPELINE:      func.func @forward(%x: tensor<2xf32>, %layers_0_k_cache: tensor<2xf32>, %step_count: tensor<i64>)

// NOT-LISTED: error: --print-ir-after: 'externalize-states' is not a pass of the pipeline
ml_program.global private mutable @layers.0.k_cache(dense<0.0> : tensor<2xf32>) : tensor<2xf32>
ml_program.global private mutable @step.count(dense<0> : tensor<i64>) : tensor<i64>
func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> attributes {qopt.output_names = ["y"]} {
  %n = ml_program.global_load @step.count : tensor<i64>
  %one = arith.constant dense<1> : tensor<i64>
  %m = aten.add %n, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
  ml_program.global_store @step.count = %m : tensor<i64>
  %k = ml_program.global_load @layers.0.k_cache : tensor<2xf32>
  %f = aten.add %x, %k : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %g = aten.mul %f, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %g : tensor<2xf32>
}
func.func @reset(%x: tensor<2xf32>) -> tensor<2xf32> {
  %r = aten.neg %x : (tensor<2xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}
