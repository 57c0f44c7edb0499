// RUN: qopt-opt %s -p fuse-quant --split-input-file | filecheck %s
// fuse-quant, quantized add (qopt/lowering/fuse_quant/elementwise.py; docs/fusion-patterns.md).

// DQ(Q(a)) + DQ(Q(b)) -> Q: ET `q8ta_add`; both float inputs are quantized in the kernel.
// CHECK-LABEL: func.func @add_float_inputs(
// CHECK-SAME:    %[[A:.*]]: tensor<2x4xf32>, %[[B:.*]]: tensor<2x4xf32>
// CHECK-NOT:     quant.
// CHECK:         %[[Y:.*]] = qfused.add %[[A]], %[[B]] {lhs_act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, rhs_act = #qfused.static<scale = 0.1, zero_point = -2, range = [-128, 127]>, requant = #qfused.static<scale = 0.15, zero_point = 0, range = [-128, 127]>, kernel = "add_q8ta_q8ta_q8to"} : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xi8>
// CHECK-NOT:     quant.
// CHECK:         func.return %[[Y]]
func.func @add_float_inputs(%a: tensor<2x4xf32>, %b: tensor<2x4xf32>) -> tensor<2x4xi8> {
  %as = arith.constant dense<0.05> : tensor<f64>
  %az = arith.constant dense<3> : tensor<i64>
  %aq = quant.quantize %a, %as, %az {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x4xf32>, tensor<f64>, tensor<i64>) -> tensor<2x4xi8>
  %ad = quant.dequantize %aq, %as, %az {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f64>, tensor<i64>) -> tensor<2x4xf32>
  %bs = arith.constant dense<0.1> : tensor<f64>
  %bz = arith.constant dense<-2> : tensor<i64>
  %bq = quant.quantize %b, %bs, %bz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x4xf32>, tensor<f64>, tensor<i64>) -> tensor<2x4xi8>
  %bd = quant.dequantize %bq, %bs, %bz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f64>, tensor<i64>) -> tensor<2x4xf32>
  %y = aten.add %ad, %bd : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %ys = arith.constant dense<0.15> : tensor<f64>
  %yz = arith.constant dense<0> : tensor<i64>
  %yq = quant.quantize %y, %ys, %yz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x4xf32>, tensor<f64>, tensor<i64>) -> tensor<2x4xi8>
  func.return %yq : tensor<2x4xi8>
}

// -----

// Integer operands (DQs of i8 arguments), relu before the output Q: the relu is
// applied explicitly (clamp_min = 0.0), not left to the output zero point.
// CHECK-LABEL: func.func @add_int_inputs_relu(
// CHECK-SAME:    %[[A:.*]]: tensor<2x4xi8>, %[[B:.*]]: tensor<2x4xi8>
// CHECK-NOT:     quant.
// CHECK-NOT:     aten.relu
// CHECK:         %[[Y:.*]] = qfused.add %[[A]], %[[B]] {{{.*}}requant = #qfused.static<scale = 0.15, zero_point = 5, range = [-128, 127]>, clamp_min = 0.000000e+00 : f64, kernel = "add_q8ta_q8ta_q8to"} : tensor<2x4xi8>, tensor<2x4xi8> -> tensor<2x4xi8>
// CHECK-NOT:     aten.relu
// CHECK:         func.return %[[Y]]
func.func @add_int_inputs_relu(%a: tensor<2x4xi8>, %b: tensor<2x4xi8>) -> tensor<2x4xi8> {
  %as = arith.constant dense<0.05> : tensor<f64>
  %az = arith.constant dense<3> : tensor<i64>
  %ad = quant.dequantize %a, %as, %az {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f64>, tensor<i64>) -> tensor<2x4xf32>
  %bs = arith.constant dense<0.1> : tensor<f64>
  %bz = arith.constant dense<-2> : tensor<i64>
  %bd = quant.dequantize %b, %bs, %bz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f64>, tensor<i64>) -> tensor<2x4xf32>
  %y = aten.add %ad, %bd : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %r = aten.relu %y : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %ys = arith.constant dense<0.15> : tensor<f64>
  %yz = arith.constant dense<5> : tensor<i64>
  %yq = quant.quantize %r, %ys, %yz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x4xf32>, tensor<f64>, tensor<i64>) -> tensor<2x4xi8>
  func.return %yq : tensor<2x4xi8>
}

// -----

// alpha is carried over from the aten op; a broadcast rank-0 operand (a DQ'd
// constant, as llama's RMSNorm eps) is fine.
// CHECK-LABEL: func.func @add_alpha_broadcast(
// CHECK-SAME:    %[[A:.*]]: tensor<2x4xi8>
// CHECK-NOT:     quant.
// CHECK:         %[[Y:.*]] = qfused.add %[[A]], %{{.*}} {{{.*}}alpha = 2.000000e+00 : f64, {{.*}}kernel = "add_q8ta_q8ta_q8to"} : tensor<2x4xi8>, tensor<i8> -> tensor<2x4xi8>
// CHECK:         func.return %[[Y]]
func.func @add_alpha_broadcast(%a: tensor<2x4xi8>) -> tensor<2x4xi8> {
  %as = arith.constant dense<0.05> : tensor<f64>
  %az = arith.constant dense<3> : tensor<i64>
  %ad = quant.dequantize %a, %as, %az {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f64>, tensor<i64>) -> tensor<2x4xf32>
  %e = arith.constant dense<1> : tensor<i8>
  %es = arith.constant dense<0.001> : tensor<f64>
  %ez = arith.constant dense<-128> : tensor<i64>
  %ed = quant.dequantize %e, %es, %ez {block_size = array<i64>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<i8>, tensor<f64>, tensor<i64>) -> tensor<f32>
  %y = aten.add %ad, %ed {alpha = 2.000000e+00 : f64} : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  %ys = arith.constant dense<0.06> : tensor<f64>
  %yz = arith.constant dense<0> : tensor<i64>
  %yq = quant.quantize %y, %ys, %yz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x4xf32>, tensor<f64>, tensor<i64>) -> tensor<2x4xi8>
  func.return %yq : tensor<2x4xi8>
}

// -----

// A squeeze-excitation's gate times its feature map: DQ(x) * DQ(gate) -> Q, the gate
// [1, C, 1, 1] broadcast over [1, C, H, W]: qfused.mul on the integers.
// CHECK-LABEL: func.func @mul_squeeze_excitation(
// CHECK-SAME:    %[[X:.*]]: tensor<1x2x3x3xi8>, %[[G:.*]]: tensor<1x2x1x1xi8>
// CHECK-NOT:     quant.
// CHECK:         %[[Y:.*]] = qfused.mul %[[X]], %[[G]] {lhs_act = #qfused.static<scale = 0.05, zero_point = 3, range = [-128, 127]>, rhs_act = #qfused.static<scale = 0.0039, zero_point = -128, range = [-128, 127]>, requant = #qfused.static<scale = 0.04, zero_point = 1, range = [-128, 127]>, kernel = "mul_q8ta_q8ta_q8to"} : tensor<1x2x3x3xi8>, tensor<1x2x1x1xi8> -> tensor<1x2x3x3xi8>
// CHECK-NOT:     quant.
// CHECK:         func.return %[[Y]]
func.func @mul_squeeze_excitation(%x: tensor<1x2x3x3xi8>, %g: tensor<1x2x1x1xi8>) -> tensor<1x2x3x3xi8> {
  %xs = arith.constant dense<0.05> : tensor<f64>
  %xz = arith.constant dense<3> : tensor<i64>
  %xd = quant.dequantize %x, %xs, %xz {block_size = array<i64: 1, 2, 3, 3>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<1x2x3x3xi8>, tensor<f64>, tensor<i64>) -> tensor<1x2x3x3xf32>
  %gs = arith.constant dense<0.0039> : tensor<f64>
  %gz = arith.constant dense<-128> : tensor<i64>
  %gd = quant.dequantize %g, %gs, %gz {block_size = array<i64: 1, 2, 1, 1>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<1x2x1x1xi8>, tensor<f64>, tensor<i64>) -> tensor<1x2x1x1xf32>
  %y = aten.mul %xd, %gd : (tensor<1x2x3x3xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %ys = arith.constant dense<0.04> : tensor<f64>
  %yz = arith.constant dense<1> : tensor<i64>
  %yq = quant.quantize %y, %ys, %yz {block_size = array<i64: 1, 2, 3, 3>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<1x2x3x3xf32>, tensor<f64>, tensor<i64>) -> tensor<1x2x3x3xi8>
  func.return %yq : tensor<1x2x3x3xi8>
}

// -----

// A float mul of a dequantized value by a float tensor stays (nothing to fuse).
// CHECK-LABEL: func.func @mul_float_operand(
// CHECK:         quant.dequantize
// CHECK:         aten.mul
// CHECK-NOT:     qfused.mul
func.func @mul_float_operand(%x: tensor<2x4xi8>, %f: tensor<2x4xf32>) -> tensor<2x4xi8> {
  %xs = arith.constant dense<0.05> : tensor<f64>
  %xz = arith.constant dense<3> : tensor<i64>
  %xd = quant.dequantize %x, %xs, %xz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64} : (tensor<2x4xi8>, tensor<f64>, tensor<i64>) -> tensor<2x4xf32>
  %y = aten.mul %xd, %f : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %ys = arith.constant dense<0.04> : tensor<f64>
  %yz = arith.constant dense<1> : tensor<i64>
  %yq = quant.quantize %y, %ys, %yz {block_size = array<i64: 2, 4>, qmin = -128 : i64, qmax = 127 : i64, compute_type = f32} : (tensor<2x4xf32>, tensor<f64>, tensor<i64>) -> tensor<2x4xi8>
  func.return %yq : tensor<2x4xi8>
}
