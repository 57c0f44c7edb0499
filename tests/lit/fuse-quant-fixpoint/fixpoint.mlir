// RUN: qopt-opt %s -p fuse-quant,fold-constants --split-input-file | filecheck %s --check-prefix=ONCE
// RUN: qopt-opt %s -p fuse-quant,fold-constants,fuse-quant-fixpoint --split-input-file | filecheck %s
// fuse-quant-fixpoint: fuse-quant and fold-constants again until neither changes the
// module. A value PT2E quantizes that becomes a constant only after fold-constants
// (a rotary table built from arange) is quantized at compile time, and a linear whose
// weight becomes a constant only then is fused.

// The quantized "rotary table": cos(arange) is input-independent. One fuse-quant +
// fold-constants leaves a quantize of a constant (no target runs it); the fixed
// point folds it to its integers.
// ONCE-LABEL: func.func @rotary_table(
// ONCE:         quant.quantize %{{.*}} : (tensor<4xf32>, tensor<f64>, tensor<i64>) -> tensor<4xi8>
// CHECK-LABEL: func.func @rotary_table(
// CHECK-NOT:     aten.cos
// CHECK:         %[[T:.*]] = arith.constant dense<[40, 17, -31, -59]> : tensor<4xi8>
// CHECK-NOT:     quant.quantize {{.*}}tensor<4xf32>, tensor<f64>, tensor<i64>) -> tensor<4xi8>
// CHECK:         quant.dequantize %[[T]]
// CHECK:         aten.mul
func.func @rotary_table(%x: tensor<4xf32>) -> tensor<4xi8> {
  %a = aten.arange {start = 0 : i64, end = 4 : i64, step = 1 : i64} : tensor<4xf32>
  %c = aten.cos %a : (tensor<4xf32>) -> tensor<4xf32>
  %s = arith.constant dense<0.02> : tensor<f64>
  %z = arith.constant dense<-10> : tensor<i64>
  %cq = quant.quantize %c, %s, %z {block_size = array<i64: 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<4xf32>, tensor<f64>, tensor<i64>) -> tensor<4xi8>
  %cd = quant.dequantize %cq, %s, %z {block_size = array<i64: 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<4xi8>, tensor<f64>, tensor<i64>) -> tensor<4xf32>
  %y = aten.mul %x, %cd : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %ys = arith.constant dense<0.05> : tensor<f64>
  %yz = arith.constant dense<0> : tensor<i64>
  %yq = quant.quantize %y, %ys, %yz {block_size = array<i64: 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<4xf32>, tensor<f64>, tensor<i64>) -> tensor<4xi8>
  func.return %yq : tensor<4xi8>
}

// -----

// A weight computed from a constant (a transpose, as tied or re-laid-out weights
// export) and quantized per channel: the linear fuses only once the fold made the
// weight constant and the quantize of it became integers.
// ONCE-LABEL: func.func @folded_weight(
// ONCE:         aten.linear
// CHECK-LABEL: func.func @folded_weight(
// CHECK-NOT:     aten.permute
// CHECK-NOT:     aten.linear
// CHECK:         qfused.linear {{.*}}kernel = "linear_q8csw"
func.func @folded_weight(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<[[0.5, -1.0, 0.25], [1.0, 0.0, -0.5], [0.75, 0.5, -1.0], [-0.25, 1.0, 0.5]]> : tensor<4x3xf32>
  %wt = aten.permute %w {dims = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %s = arith.constant dense<[0.0078125, 0.0078125, 0.0078125]> : tensor<3xf32>
  %z = arith.constant dense<0> : tensor<3xi64>
  %wq = quant.quantize %wt, %s, %z {block_size = array<i64: 1, 4>, qmin = -127 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<3x4xf32>, tensor<3xf32>, tensor<3xi64>) -> tensor<3x4xi8>
  %wd = quant.dequantize %wq, %s, %z {block_size = array<i64: 1, 4>, qmin = -127 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<3x4xi8>, tensor<3xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  %y = aten.linear %x, %wd : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
