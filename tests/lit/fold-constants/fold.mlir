// RUN: qopt-opt %s -p fold-constants --split-input-file | filecheck %s
// fold-constants: input-independent aten subgraphs become constants; nothing
// that reads the inputs, no quant op, and no growth of stored weights.

// A causal mask built from arange (as transformers export it) folds to one
// constant; the add that reads %x stays. Masks with -inf are stored as blobs
// (exact bytes), finite ones inline.
// CHECK-LABEL: func.func @causal_mask(%x: tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:    %f = arith.constant dense<{{\[\[}}0.000000e+00, -1.000000e+09, -1.000000e+09, -1.000000e+09], [0.000000e+00, 0.000000e+00, -1.000000e+09, -1.000000e+09], [0.000000e+00, 0.000000e+00, 0.000000e+00, -1.000000e+09], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<4x4xf32>
// CHECK-NEXT:    %y = aten.add %x, %f : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT:    func.return %y : tensor<4x4xf32>
func.func @causal_mask(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %a = aten.arange {start = 0 : i64, end = 4 : i64, step = 1 : i64} : tensor<4xi64>
  %r = aten.unsqueeze %a {dim = 0 : i64} : (tensor<4xi64>) -> tensor<1x4xi64>
  %c = aten.unsqueeze %a {dim = 1 : i64} : (tensor<4xi64>) -> tensor<4x1xi64>
  %m = aten.le %r, %c : (tensor<1x4xi64>, tensor<4x1xi64>) -> tensor<4x4xi1>
  %z = arith.constant dense<0.0> : tensor<f32>
  %n = arith.constant dense<-1.0e+09> : tensor<f32>
  %f = aten.where %m, %z, %n : (tensor<4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<4x4xf32>
  %y = aten.add %x, %f : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %y : tensor<4x4xf32>
}

// -----

// A non-finite result goes into a dense_resource blob (xDSL would print -inf as
// a hex literal that its parser reads back as an integer).
// CHECK-LABEL: func.func @neg_inf() -> tensor<2xf32>
// CHECK-NEXT:    %{{.*}} = arith.constant dense_resource<[[B:.*]]> : tensor<2xf32>
// CHECK:         [[B]]: "0x08000000000080FF000080FF"
func.func @neg_inf() -> tensor<2xf32> {
  %a = aten.full {value = 1.0 : f64} : tensor<2xf32>
  %z = arith.constant dense<0.0> : tensor<f32>
  %d = aten.div %z, %a : (tensor<f32>, tensor<2xf32>) -> tensor<2xf32>
  %l = aten.log %d : (tensor<2xf32>) -> tensor<2xf32>
  func.return %l : tensor<2xf32>
}

// -----

// Weights: a dequantize never folds (it would store the float weight), and an
// expand of a weight does not either (the result would be larger than the
// weight); a transpose of a weight does (same size, computed once).
// CHECK-LABEL: func.func @weights(%x: tensor<2x4xf32>) -> (tensor<4x2xf32>, tensor<3x4x2xf32>, tensor<2x4xf32>)
// CHECK:         quant.dequantize
// CHECK:         aten.expand
// CHECK-NOT:     aten.transpose
// CHECK:         func.return
func.func @weights(%x: tensor<2x4xf32>) -> (tensor<4x2xf32>, tensor<3x4x2xf32>, tensor<2x4xf32>) {
  %w = arith.constant dense_resource<w> : tensor<2x4xi8>
  %s = arith.constant dense<0.5> : tensor<f32>
  %wf = quant.dequantize %w, %s {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f32>) -> tensor<2x4xf32>
  %t = arith.constant dense_resource<t> : tensor<2x4xf32>
  %tt = aten.transpose %t {dim0 = 0 : i64, dim1 = 1 : i64} : (tensor<2x4xf32>) -> tensor<4x2xf32>
  %e = aten.expand %tt : (tensor<4x2xf32>) -> tensor<3x4x2xf32>
  %y = aten.add %x, %wf : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %tt, %e, %y : tensor<4x2xf32>, tensor<3x4x2xf32>, tensor<2x4xf32>
}

{-#
  dialect_resources: {
    builtin: {
      w: "0x0100000001020304050607F8",
      t: "0x040000000000803F0000004000004040000080400000A0400000C0400000E04000000041"
    }
  }
#-}
