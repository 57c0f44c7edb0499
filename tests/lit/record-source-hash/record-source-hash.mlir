// RUN: qopt-opt %s -p record-source-hash | filecheck %s
// RUN: qopt-opt %s -p record-source-hash,record-source-hash | filecheck %s
// RUN: qopt-opt %s -p record-source-hash | qopt-opt -p record-source-hash | filecheck %s
// RUN: qopt-opt %s -p 'qopt-coreml{compute-precision=fp32}' --print-ir-after record-source-hash -o /dev/null 2>&1 | filecheck %s --check-prefix=PIPELINE
// An annotation: the SHA-256 of the program as the CoreML preparation receives it
// (the package's qopt.source_sha256 metadata), recorded once; no op changes.
// qopt-coreml runs it after fuse-quant and fold-constants.

// CHECK:      builtin.module attributes {qopt.source_sha256 = "[[HASH:[0-9a-f]{64}]]"} {
// CHECK-NEXT:   func.func @weight_dq(
// CHECK-NEXT:     arith.constant dense<2> : tensor<3x4xi8>
// CHECK-NEXT:     arith.constant
// CHECK-NEXT:     quant.dequantize
// CHECK-NEXT:     aten.linear

// PIPELINE:      IR Dump After record-source-hash
// PIPELINE-NEXT: builtin.module attributes {qopt.source_sha256 = "{{[0-9a-f]+}}"} {
// PIPELINE-NEXT:   func.func @weight_dq(
// PIPELINE:          qfused.linear
func.func @weight_dq(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<2> : tensor<3x4xi8>
  %s = arith.constant dense<[2.500000e-01, 5.000000e-01, 1.000000e+00]> : tensor<3xf32>
  %d = quant.dequantize %w, %s {block_size = array<i64: 1, 4>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<3x4xi8>, tensor<3xf32>) -> tensor<3x4xf32>
  %y = aten.linear %x, %d : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
