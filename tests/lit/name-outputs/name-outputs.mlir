// RUN: qopt-opt %s -p 'name-outputs{names=relu}' | filecheck %s
// RUN: qopt-opt %s -p 'qopt-coreml{output-names=relu,negated compute-precision=fp32}' --print-between-passes | filecheck %s --check-prefix=PIPELINE
// RUN: not qopt-opt %s -p 'name-outputs{names=a,b,c}' 2>&1 | filecheck %s --check-prefix=ERR
// name-outputs records the names a target gives the outputs (`output_<i>` past the
// last one named); qopt-coreml{output-names=...} runs it first, as a sub-pass.

// CHECK:      func.func @forward(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) attributes {qopt.output_names = ["relu", "output_1"]} {
// CHECK-NEXT:   %0 = aten.relu %x : (tensor<2xf32>) -> tensor<2xf32>

// PIPELINE:      IR after name-outputs:
// PIPELINE:      qopt.output_names = ["relu", "negated"]
// PIPELINE:      IR after fuse-quant:
// PIPELINE:      IR after fold-constants:
// PIPELINE:      IR after fuse-quant-fixpoint:
// PIPELINE:      IR after convert-to-coreml:
// PIPELINE-NOT:  IR after
// PIPELINE:      coreml.relu

// ERR: qopt-opt: error: name-outputs: 3 names ['a', 'b', 'c'] for the 2 output(s) of @forward: give at most one distinct, non-empty name per output
func.func @forward(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %0 = aten.relu %x : (tensor<2xf32>) -> tensor<2xf32>
  %1 = aten.neg %x : (tensor<2xf32>) -> tensor<2xf32>
  func.return %0, %1 : tensor<2xf32>, tensor<2xf32>
}
