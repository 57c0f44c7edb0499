// RUN: qopt-opt %s -p 'fold-constants{target=vulkan}' --split-input-file | filecheck %s
// fold-constants{target=vulkan}: convert-to-vkc's policy. Every op whose operands are
// all constants folds, whatever its size (a dequantize and an expand of a weight
// included), and so does an op whose results are all empty; the program's state and
// what reads the inputs stay. Only the last value of a chain is written.

// The weight chain dequantize -> transpose -> expand folds to one constant (the
// expand's: the dequantize and transpose results are no constants of the module).
// CHECK-LABEL: func.func @weights(%x: tensor<3x4x2xf32>) -> tensor<3x4x2xf32>
// CHECK-NEXT:    %e = arith.constant dense_resource<[[E:folded]]> : tensor<3x4x2xf32>
// CHECK-NEXT:    %y = aten.add %x, %e
// CHECK-NEXT:    func.return %y
// w * 0.5 = [[0.5 1 1.5 2] [2.5 3 3.5 -4]], transposed and repeated 3 times:
// CHECK:         [[E]]: "0x080000000000003F000020400000803F000040400000C03F0000604000000040000080C00000003F000020400000803F000040400000C03F0000604000000040000080C00000003F000020400000803F000040400000C03F0000604000000040000080C0"
// CHECK-NOT:     folded_0
func.func @weights(%x: tensor<3x4x2xf32>) -> tensor<3x4x2xf32> {
  %w = arith.constant dense_resource<w> : tensor<2x4xi8>
  %s = arith.constant dense<0.5> : tensor<f32>
  %wf = quant.dequantize %w, %s {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f32>) -> tensor<2x4xf32>
  %tt = aten.transpose %wf {dim0 = 0 : i64, dim1 = 1 : i64} : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %e = aten.expand %tt : (tensor<4x2xf32>) -> tensor<3x4x2xf32>
  %y = aten.add %x, %e : (tensor<3x4x2xf32>, tensor<3x4x2xf32>) -> tensor<3x4x2xf32>
  func.return %y : tensor<3x4x2xf32>
}

{-#
  dialect_resources: {
    builtin: {
      w: "0x0100000001020304050607F8"
    }
  }
#-}

// -----

// A value read by an op that stays and by one that folds is written once; the
// rope-like table built from arange folds whatever its size (over max_elements).
// CHECK-LABEL: func.func @shared(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<70000xf32>)
// CHECK-NEXT:    %f = arith.constant dense<[0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<4xf32>
// CHECK-NEXT:    %y = aten.mul %x, %f
// CHECK-NEXT:    %big = arith.constant dense_resource<folded> : tensor<70000xf32>
// CHECK-NEXT:    func.return %y, %big
func.func @shared(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<70000xf32>) {
  %a = aten.arange {start = 0 : i64, end = 4 : i64, step = 1 : i64} : tensor<4xi64>
  %f = aten.to %a {dtype = 6 : i64} : (tensor<4xi64>) -> tensor<4xf32>
  %y = aten.mul %x, %f : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %n = aten.arange {start = 0 : i64, end = 70000 : i64, step = 1 : i64} : tensor<70000xi64>
  %big = aten.to %n {dtype = 6 : i64} : (tensor<70000xi64>) -> tensor<70000xf32>
  func.return %y, %big : tensor<4xf32>, tensor<70000xf32>
}

// -----

// An op whose result is empty folds whatever its operands; the program's state never
// folds, even where its operands are constants.
// CHECK-LABEL: func.func @state_and_empty(%x: tensor<0x4xf32>) -> tensor<0x4xf32>
// CHECK-NEXT:    %l = ml_program.global_load @cache
// CHECK-NEXT:    %c = arith.constant dense<1.000000e+00> : tensor<1x4xf32>
// CHECK-NEXT:    ml_program.global_store @cache = %c
// CHECK-NEXT:    %e = arith.constant dense<> : tensor<0x4xf32>
// CHECK-NEXT:    func.return %e
ml_program.global private mutable @cache(dense<0.0> : tensor<1x4xf32>) : tensor<1x4xf32>
func.func @state_and_empty(%x: tensor<0x4xf32>) -> tensor<0x4xf32> {
  %l = ml_program.global_load @cache : tensor<1x4xf32>
  %c = arith.constant dense<1.0> : tensor<1x4xf32>
  ml_program.global_store @cache = %c : tensor<1x4xf32>
  %e = aten.add %x, %l : (tensor<0x4xf32>, tensor<1x4xf32>) -> tensor<0x4xf32>
  func.return %e : tensor<0x4xf32>
}
