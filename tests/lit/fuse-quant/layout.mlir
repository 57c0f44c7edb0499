// RUN: qopt-opt %s -p fuse-quant --split-input-file | filecheck %s
// fuse-quant, layout ops into the integer domain (qopt/lowering/fuse_quant/layout.py):
// Q(layout(DQ(q, P)), P) -> layout(q); a zero pad pads with the zero point.

// TF "same" padding between the dequantize and a depthwise conv: the pad moves onto
// the integers (value = the zero point, -3) and the conv reads them.
// CHECK-LABEL: func.func @pad_conv(
// CHECK-SAME:    %[[X:.*]]: tensor<1x2x4x4xi8>
// CHECK-NOT:     quant.
// CHECK:         %[[P:.*]] = aten.constant_pad_nd %[[X]] {pad = array<i64: 1, 1, 1, 1>, value = -3.000000e+00 : f64} : (tensor<1x2x4x4xi8>) -> tensor<1x2x6x6xi8>
// CHECK-NOT:     quant.
// CHECK:         qfused.conv2d %[[P]], {{.*}}kernel = "conv2d_q8ta_q8csw_q8to"
func.func @pad_conv(%x: tensor<1x2x4x4xi8>) -> tensor<1x2x4x4xi8> {
  %s = arith.constant dense<0.05> : tensor<f64>
  %z = arith.constant dense<-3> : tensor<i64>
  %d = quant.dequantize %x, %s, %z {block_size = array<i64: 1, 2, 4, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<1x2x4x4xi8>, tensor<f64>, tensor<i64>) -> tensor<1x2x4x4xf32>
  %p = aten.constant_pad_nd %d {pad = array<i64: 1, 1, 1, 1>, value = 0.0 : f64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x6x6xf32>
  %q = quant.quantize %p, %s, %z {block_size = array<i64: 1, 2, 6, 6>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<1x2x6x6xf32>, tensor<f64>, tensor<i64>) -> tensor<1x2x6x6xi8>
  %qd = quant.dequantize %q, %s, %z {block_size = array<i64: 1, 2, 6, 6>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<1x2x6x6xi8>, tensor<f64>, tensor<i64>) -> tensor<1x2x6x6xf32>
  %w = arith.constant dense<[[[[1, -2, 3], [0, 1, -1], [2, 2, -3]]], [[[2, 1, 0], [-1, -2, 1], [0, 3, 1]]]]> : tensor<2x1x3x3xi8>
  %ws = arith.constant dense<[0.01, 0.02]> : tensor<2xf32>
  %wz = arith.constant dense<0> : tensor<2xi64>
  %wd = quant.dequantize %w, %ws, %wz {block_size = array<i64: 1, 1, 3, 3>, qmin = -127 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x1x3x3xi8>, tensor<2xf32>, tensor<2xi64>) -> tensor<2x1x3x3xf32>
  %y = aten.conv2d %qd, %wd {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 2 : i64} : (tensor<1x2x6x6xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x4x4xf32>
  %os = arith.constant dense<0.02> : tensor<f64>
  %oz = arith.constant dense<1> : tensor<i64>
  %o = quant.quantize %y, %os, %oz {block_size = array<i64: 1, 2, 4, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<1x2x4x4xf32>, tensor<f64>, tensor<i64>) -> tensor<1x2x4x4xi8>
  func.return %o : tensor<1x2x4x4xi8>
}

// -----

// A view and a permute (a flatten before a linear, a transpose) and a cat of two
// values quantized alike: one integer chain, no quantize left.
// CHECK-LABEL: func.func @view_permute_cat(
// CHECK-SAME:    %[[A:.*]]: tensor<2x3xi8>, %[[B:.*]]: tensor<2x3xi8>
// CHECK-NOT:     quant.
// CHECK:         %[[C:.*]] = aten.cat %[[A]], %[[B]] {dim = 0 : i64} : (tensor<2x3xi8>, tensor<2x3xi8>) -> tensor<4x3xi8>
// CHECK:         %[[T:.*]] = aten.permute %[[C]] {dims = array<i64: 1, 0>} : (tensor<4x3xi8>) -> tensor<3x4xi8>
// CHECK:         %[[V:.*]] = aten.view %[[T]] : (tensor<3x4xi8>) -> tensor<12xi8>
// CHECK-NOT:     quant.
// CHECK:         func.return %[[V]]
func.func @view_permute_cat(%a: tensor<2x3xi8>, %b: tensor<2x3xi8>) -> tensor<12xi8> {
  %s = arith.constant dense<0.05> : tensor<f64>
  %z = arith.constant dense<2> : tensor<i64>
  %ad = quant.dequantize %a, %s, %z {block_size = array<i64: 2, 3>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x3xi8>, tensor<f64>, tensor<i64>) -> tensor<2x3xf32>
  %bd = quant.dequantize %b, %s, %z {block_size = array<i64: 2, 3>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x3xi8>, tensor<f64>, tensor<i64>) -> tensor<2x3xf32>
  %c = aten.cat %ad, %bd {dim = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %t = aten.permute %c {dims = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %v = aten.view %t : (tensor<3x4xf32>) -> tensor<12xf32>
  %q = quant.quantize %v, %s, %z {block_size = array<i64: 12>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<12xf32>, tensor<f64>, tensor<i64>) -> tensor<12xi8>
  func.return %q : tensor<12xi8>
}

// -----

// Must not move: a pad value that is not 0.0, parameters that differ (a requantize),
// and a float value that has another user.
// CHECK-LABEL: func.func @not_moved(
// CHECK:         aten.constant_pad_nd %{{.*}} {pad = array<i64: 1, 1>, value = 1.000000e+00 : f64} : (tensor<4xf32>)
// CHECK:         quant.quantize
// CHECK:         aten.view %{{.*}} : (tensor<4xf32>) -> tensor<2x2xf32>
// CHECK:         quant.quantize
// CHECK:         aten.permute %{{.*}} : (tensor<2x2xf32>) -> tensor<2x2xf32>
// CHECK:         quant.quantize
func.func @not_moved(%x: tensor<4xi8>, %y: tensor<2x2xi8>) -> (tensor<6xi8>, tensor<2x2xi8>, tensor<2x2xi8>, tensor<2x2xf32>) {
  %s = arith.constant dense<0.05> : tensor<f64>
  %z = arith.constant dense<2> : tensor<i64>
  %s2 = arith.constant dense<0.07> : tensor<f64>
  %xd = quant.dequantize %x, %s, %z {block_size = array<i64: 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<4xi8>, tensor<f64>, tensor<i64>) -> tensor<4xf32>
  %p = aten.constant_pad_nd %xd {pad = array<i64: 1, 1>, value = 1.0 : f64} : (tensor<4xf32>) -> tensor<6xf32>
  %pq = quant.quantize %p, %s, %z {block_size = array<i64: 6>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<6xf32>, tensor<f64>, tensor<i64>) -> tensor<6xi8>
  %v = aten.view %xd : (tensor<4xf32>) -> tensor<2x2xf32>
  %vq = quant.quantize %v, %s2, %z {block_size = array<i64: 2, 2>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x2xf32>, tensor<f64>, tensor<i64>) -> tensor<2x2xi8>
  %yd = quant.dequantize %y, %s, %z {block_size = array<i64: 2, 2>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x2xi8>, tensor<f64>, tensor<i64>) -> tensor<2x2xf32>
  %t = aten.permute %yd {dims = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %tq = quant.quantize %t, %s, %z {block_size = array<i64: 2, 2>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x2xf32>, tensor<f64>, tensor<i64>) -> tensor<2x2xi8>
  func.return %pq, %vq, %tq, %t : tensor<6xi8>, tensor<2x2xi8>, tensor<2x2xi8>, tensor<2x2xf32>
}
