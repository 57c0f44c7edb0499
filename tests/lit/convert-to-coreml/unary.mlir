// RUN: qopt-opt %s -p convert-to-coreml --split-input-file --verify-diagnostics | filecheck %s
// Activations, rounding, logs, remainder, masked_fill and index reductions
// (the ops with a Vulkan lowering that CoreML lacked). Where MIL leaves a rule
// unspecified (round's halves, mod's sign on device, argmax's ties), the lowering
// composes torch's semantics from exact steps.

// hardswish is x * sigmoid_hard(x, 1/6, 0.5) (MIL has no hardswish op).
// CHECK-LABEL: func.func @hardswish(
// CHECK-NEXT:    %[[G:.*]] = coreml.sigmoid_hard %x {alpha = 0.16666666666666666 : f64, beta = 5.000000e-01 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[Y:.*]] = coreml.mul %x, %[[G]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @hardswish(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.hardswish %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @hardsigmoid(
// CHECK-NEXT:    %[[G:.*]] = coreml.sigmoid_hard %x {alpha = 0.16666666666666666 : f64, beta = 5.000000e-01 : f64}
// CHECK-NEXT:    func.return %[[G]]
func.func @hardsigmoid(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.hardsigmoid %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

// negative_slope is alpha; torch's default is 0.01.
// CHECK-LABEL: func.func @leaky_relu(
// CHECK-NEXT:    coreml.leaky_relu %x {alpha = 2.000000e-01 : f64}
// CHECK-NEXT:    coreml.leaky_relu %x {alpha = 1.000000e-02 : f64}
func.func @leaky_relu(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %a = aten.leaky_relu %x {negative_slope = 2.000000e-01 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = aten.leaky_relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %a, %b : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @abs(%x: tensor<2x3xf32>, %n: tensor<4xi32>)
// CHECK-NEXT:    coreml.abs %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    coreml.abs %n : (tensor<4xi32>) -> tensor<4xi32>
func.func @abs(%x: tensor<2x3xf32>, %n: tensor<4xi64>) -> (tensor<2x3xf32>, tensor<4xi64>) {
  %a = aten.abs %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = aten.abs %n : (tensor<4xi64>) -> tensor<4xi64>
  func.return %a, %b : tensor<2x3xf32>, tensor<4xi64>
}

// -----

// CHECK: 'aten.abs': abs of a int8 tensor has no CoreML lowering (MIL abs takes fp16, fp32 or int32): cast the input first
func.func @abs_int8(%x: tensor<4xi8>) -> tensor<4xi8> {
  %a = aten.abs %x : (tensor<4xi8>) -> tensor<4xi8>
  func.return %a : tensor<4xi8>
}

// -----

// floor / ceil of an integer tensor is the input (as in torch).
// CHECK-LABEL: func.func @floor_ceil(
// CHECK-NEXT:    %[[F:.*]] = coreml.floor %x
// CHECK-NEXT:    %[[C:.*]] = coreml.ceil %x
// CHECK-NEXT:    func.return %[[F]], %[[C]], %n
func.func @floor_ceil(%x: tensor<2x3xf32>, %n: tensor<4xi32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xi32>) {
  %a = aten.floor %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = aten.ceil %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %c = aten.ceil %n : (tensor<4xi32>) -> tensor<4xi32>
  func.return %a, %b, %c : tensor<2x3xf32>, tensor<2x3xf32>, tensor<4xi32>
}

// -----

// Halves to even from exact steps: floor, x - floor, f + 1 where the fraction is
// above 1/2, or equal to 1/2 with an odd floor (MIL round leaves halves to the backend);
// then -0.0 where x < 0 rounds to 0, as torch.
// CHECK-LABEL: func.func @round(
// CHECK-NEXT:    %[[F:.*]] = coreml.floor %x
// CHECK-NEXT:    %[[D:.*]] = coreml.sub %x, %[[F]]
// CHECK-NEXT:    %[[H:.*]] = coreml.const dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT:    %[[UP:.*]] = coreml.greater %[[D]], %[[H]]
// CHECK-NEXT:    %[[TIE:.*]] = coreml.equal %[[D]], %[[H]]
// CHECK-NEXT:    %[[HALF:.*]] = coreml.mul %[[F]], %[[H]]
// CHECK-NEXT:    %[[HF:.*]] = coreml.floor %[[HALF]]
// CHECK-NEXT:    %[[ODD:.*]] = coreml.not_equal %[[HF]], %[[HALF]]
// CHECK-NEXT:    %[[OT:.*]] = coreml.logical_and %[[TIE]], %[[ODD]]
// CHECK-NEXT:    %[[BUMP:.*]] = coreml.logical_or %[[UP]], %[[OT]]
// CHECK-NEXT:    %[[ONE:.*]] = coreml.const dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[F1:.*]] = coreml.add %[[F]], %[[ONE]]
// CHECK-NEXT:    %[[RR:.*]] = coreml.select %[[BUMP]], %[[F1]], %[[F]] : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[Z:.*]] = coreml.const dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[NEG:.*]] = coreml.less %x, %[[Z]]
// CHECK-NEXT:    %[[Z2:.*]] = coreml.const dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[ZERO:.*]] = coreml.equal %[[RR]], %[[Z2]]
// CHECK-NEXT:    %[[NZ:.*]] = coreml.logical_and %[[NEG]], %[[ZERO]]
// CHECK-NEXT:    %[[MZ:.*]] = coreml.const dense<-0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[R:.*]] = coreml.select %[[NZ]], %[[MZ]], %[[RR]]
// CHECK-NEXT:    func.return %[[R]]
func.func @round(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.round %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

// log with epsilon 0, reciprocal real_div(1, x) (MIL inverse's epsilon makes 1 / -0.0
// +inf); log of an integer tensor casts it to float.
// CHECK-LABEL: func.func @log_reciprocal(
// CHECK-NEXT:    %[[C:.*]] = coreml.cast %n {dtype = "fp32"}
// CHECK-NEXT:    coreml.log %[[C]] {epsilon = 0.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[ONE:.*]] = coreml.const dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    coreml.real_div %[[ONE]], %x : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @log_reciprocal(%x: tensor<2x3xf32>, %n: tensor<2x3xi32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %a = aten.log %n : (tensor<2x3xi32>) -> tensor<2x3xf32>
  %b = aten.reciprocal %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %a, %b : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// (x - max) - log(sum(exp(x - max))) along dim 1.
// CHECK-LABEL: func.func @log_softmax(
// CHECK-NEXT:    %[[M:.*]] = coreml.reduce_max %x {axes = array<i64: 1>, keep_dims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// CHECK-NEXT:    %[[S:.*]] = coreml.sub %x, %[[M]]
// CHECK-NEXT:    %[[E:.*]] = coreml.exp %[[S]]
// CHECK-NEXT:    %[[T:.*]] = coreml.reduce_sum %[[E]] {axes = array<i64: 1>, keep_dims = true}
// CHECK-NEXT:    %[[L:.*]] = coreml.log %[[T]] {epsilon = 0.000000e+00 : f64}
// CHECK-NEXT:    %[[R:.*]] = coreml.sub %[[S]], %[[L]] : (tensor<2x3x4xf32>, tensor<2x1x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    func.return %[[R]]
func.func @log_softmax(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %r = aten.log_softmax %x {dim = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %r : tensor<2x3x4xf32>
}

// -----

// mod, then + y where the remainder is non-zero and its sign differs from y's; a zero
// result takes x's sign (torch's fmod-based remainder).
// CHECK-LABEL: func.func @remainder(
// CHECK-NEXT:    %[[M:.*]] = coreml.mod %x, %y : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[Z:.*]] = coreml.const dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[NZ:.*]] = coreml.not_equal %[[M]], %[[Z]]
// CHECK-NEXT:    %[[MN:.*]] = coreml.less %[[M]], %[[Z]]
// CHECK-NEXT:    %[[Z2:.*]] = coreml.const dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[YN:.*]] = coreml.less %y, %[[Z2]] : (tensor<1x3xf32>, tensor<f32>) -> tensor<1x3xi1>
// CHECK-NEXT:    %[[X:.*]] = coreml.logical_xor %[[MN]], %[[YN]]
// CHECK-NEXT:    %[[FIX:.*]] = coreml.logical_and %[[NZ]], %[[X]]
// CHECK-NEXT:    %[[SH:.*]] = coreml.add %[[M]], %y
// CHECK-NEXT:    %[[RR:.*]] = coreml.select %[[FIX]], %[[SH]], %[[M]]
// CHECK-NEXT:    %[[Z3:.*]] = coreml.const dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[ISZ:.*]] = coreml.equal %[[RR]], %[[Z3]]
// CHECK-NEXT:    %[[ABS:.*]] = coreml.abs %[[RR]]
// CHECK-NEXT:    %[[UNS:.*]] = coreml.select %[[ISZ]], %[[ABS]], %[[RR]]
// CHECK:         %[[XNEG:.*]] = coreml.logical_or
// CHECK-NEXT:    %[[NZERO:.*]] = coreml.logical_and %[[ISZ]], %[[XNEG]]
// CHECK-NEXT:    %[[MZ:.*]] = coreml.const dense<-0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[R:.*]] = coreml.select %[[NZERO]], %[[MZ]], %[[UNS]]
// CHECK-NEXT:    func.return %[[R]]
func.func @remainder(%x: tensor<2x3xf32>, %y: tensor<1x3xf32>) -> tensor<2x3xf32> {
  %r = aten.remainder %x, %y : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

// A constant divisor of one sign: one comparison (less for y > 0, greater for y < 0);
// then the zero's sign, as above.
// CHECK-LABEL: func.func @remainder_constant(
// CHECK:         %[[A:.*]] = coreml.mod %x, %p
// CHECK-NEXT:    %[[Z:.*]] = coreml.const
// CHECK-NEXT:    %[[FA:.*]] = coreml.less %[[A]], %[[Z]]
// CHECK-NEXT:    %[[SA:.*]] = coreml.add %[[A]], %p
// CHECK-NEXT:    coreml.select %[[FA]], %[[SA]], %[[A]]
// CHECK:         %[[B:.*]] = coreml.mod %x, %n
// CHECK-NEXT:    %[[Z2:.*]] = coreml.const
// CHECK-NEXT:    %[[FB:.*]] = coreml.greater %[[B]], %[[Z2]]
// CHECK-NEXT:    %[[SB:.*]] = coreml.add %[[B]], %n
// CHECK-NEXT:    coreml.select %[[FB]], %[[SB]], %[[B]]
func.func @remainder_constant(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %p = arith.constant dense<1.5> : tensor<f32>
  %n = arith.constant dense<-2.0> : tensor<f32>
  %a = aten.remainder %x, %p : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %b = aten.remainder %x, %n : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  func.return %a, %b : tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// CHECK: 'aten.remainder': remainder on int8 tensors has no CoreML lowering (MIL mod takes fp16, fp32 or int32): cast the operands first
func.func @remainder_int8(%x: tensor<3xi8>, %y: tensor<3xi8>) -> tensor<3xi8> {
  %r = aten.remainder %x, %y : (tensor<3xi8>, tensor<3xi8>) -> tensor<3xi8>
  func.return %r : tensor<3xi8>
}

// -----

// select(mask, value, input): the input branch has the result's shape.
// CHECK-LABEL: func.func @masked_fill(
// CHECK-NEXT:    %[[V:.*]] = coreml.const dense<-1.000000e+04> : tensor<f32>
// CHECK-NEXT:    %[[R:.*]] = coreml.select %m, %[[V]], %x : (tensor<1x3xi1>, tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[R]]
func.func @masked_fill(%x: tensor<2x3xf32>, %m: tensor<1x3xi1>) -> tensor<2x3xf32> {
  %v = arith.constant dense<-1.0e+04> : tensor<f32>
  %r = aten.masked_fill %x, %m, %v : (tensor<2x3xf32>, tensor<1x3xi1>, tensor<f32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

// A run-time fill value is cast to the input's type (int64 is int32 in MIL).
// CHECK-LABEL: func.func @masked_fill_runtime(
// CHECK-NEXT:    %[[V:.*]] = coreml.cast %v {dtype = "int32"} : (tensor<f32>) -> tensor<i32>
// CHECK-NEXT:    coreml.select %m, %[[V]], %x : (tensor<2x3xi1>, tensor<i32>, tensor<2x3xi32>) -> tensor<2x3xi32>
func.func @masked_fill_runtime(%x: tensor<2x3xi64>, %m: tensor<2x3xi1>, %v: tensor<f32>) -> tensor<2x3xi64> {
  %r = aten.masked_fill %x, %m, %v : (tensor<2x3xi64>, tensor<2x3xi1>, tensor<f32>) -> tensor<2x3xi64>
  func.return %r : tensor<2x3xi64>
}

// -----

// CHECK-LABEL: func.func @amin(
// CHECK-NEXT:    coreml.reduce_min %x {axes = array<i64: 2>, keep_dims = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
func.func @amin(%x: tensor<2x3x4xf32>) -> tensor<2x3x1xf32> {
  %r = aten.amin %x {dims = array<i64: -1>, keepdim = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  func.return %r : tensor<2x3x1xf32>
}

// -----

// The first index where x equals its minimum, or the first NaN of a slice that has
// one: reduce_min(select(hit, iota, n)), int32.
// CHECK-LABEL: func.func @argmin(
// CHECK-NEXT:    %[[M:.*]] = coreml.reduce_min %x {axes = array<i64: 1>, keep_dims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// CHECK-NEXT:    %[[EQ:.*]] = coreml.equal %x, %[[M]]
// CHECK-NEXT:    %[[NAN:.*]] = coreml.not_equal %x, %x
// CHECK-NEXT:    %[[NI:.*]] = coreml.cast %[[NAN]] {dtype = "int32"}
// CHECK-NEXT:    %[[ANY:.*]] = coreml.reduce_max %[[NI]] {axes = array<i64: 1>, keep_dims = true} : (tensor<2x3x4xi32>) -> tensor<2x1x4xi32>
// CHECK-NEXT:    %[[AB:.*]] = coreml.cast %[[ANY]] {dtype = "bool"}
// CHECK-NEXT:    %[[HIT:.*]] = coreml.select %[[AB]], %[[NAN]], %[[EQ]] : (tensor<2x1x4xi1>, tensor<2x3x4xi1>, tensor<2x3x4xi1>) -> tensor<2x3x4xi1>
// CHECK-NEXT:    %[[IOTA:.*]] = coreml.const dense<{{\[\[\[}}0], [1], [2]]]> : tensor<1x3x1xi32>
// CHECK-NEXT:    %[[IT:.*]] = coreml.tile %[[IOTA]] {reps = array<i64: 2, 1, 4>} : (tensor<1x3x1xi32>) -> tensor<2x3x4xi32>
// CHECK-NEXT:    %[[N:.*]] = coreml.const dense<3> : tensor<i32>
// CHECK-NEXT:    %[[C:.*]] = coreml.select %[[HIT]], %[[IT]], %[[N]]
// CHECK-NEXT:    %[[R:.*]] = coreml.reduce_min %[[C]] {axes = array<i64: 1>, keep_dims = true} : (tensor<2x3x4xi32>) -> tensor<2x1x4xi32>
// CHECK-NEXT:    func.return %[[R]] : tensor<2x1x4xi32>
func.func @argmin(%x: tensor<2x3x4xf32>) -> tensor<2x1x4xi64> {
  %r = aten.argmin %x {dim = 1 : i64, keepdim = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xi64>
  func.return %r : tensor<2x1x4xi64>
}

// -----

// int32 inputs have no NaN.
// CHECK-LABEL: func.func @argmax_int(
// CHECK-NEXT:    coreml.reduce_max %x {axes = array<i64: 1>, keep_dims = true}
// CHECK-NEXT:    coreml.equal
// CHECK-NEXT:    coreml.const dense<{{\[\[}}0, 1, 2, 3]]> : tensor<1x4xi32>
// CHECK-NEXT:    coreml.tile
// CHECK-NEXT:    coreml.const dense<4> : tensor<i32>
// CHECK-NEXT:    coreml.select
// CHECK-NEXT:    coreml.reduce_min {{.*}} {axes = array<i64: 1>, keep_dims = false} : (tensor<3x4xi32>) -> tensor<3xi32>
func.func @argmax_int(%x: tensor<3x4xi32>) -> tensor<3xi64> {
  %r = aten.argmax %x {dim = -1 : i64} : (tensor<3x4xi32>) -> tensor<3xi64>
  func.return %r : tensor<3xi64>
}

// -----

// No dim: the flattened input; keepdim reshapes the index to all-1 dims.
// CHECK-LABEL: func.func @argmax_all(
// CHECK-NEXT:    %[[F:.*]] = coreml.reshape %x {shape = array<i64: 6>}
// CHECK-NEXT:    coreml.reduce_max %[[F]] {axes = array<i64: 0>, keep_dims = true}
// CHECK:         coreml.const dense<[0, 1, 2, 3, 4, 5]> : tensor<6xi32>
// CHECK-NOT:     coreml.tile
// CHECK:         %[[I:.*]] = coreml.reduce_min {{.*}} {axes = array<i64: 0>, keep_dims = true} : (tensor<6xi32>) -> tensor<1xi32>
// CHECK-NEXT:    %[[R:.*]] = coreml.reshape %[[I]] {shape = array<i64: 1, 1>} : (tensor<1xi32>) -> tensor<1x1xi32>
// CHECK-NEXT:    func.return %[[R]]
func.func @argmax_all(%x: tensor<2x3xf32>) -> tensor<1x1xi64> {
  %r = aten.argmax %x {keepdim = true} : (tensor<2x3xf32>) -> tensor<1x1xi64>
  func.return %r : tensor<1x1xi64>
}

// -----

// CHECK: 'aten.argmax': argmax of a bool tensor has no CoreML lowering (MIL reductions take fp16, fp32 or int32): cast the input first
func.func @argmax_bool(%x: tensor<3xi1>) -> tensor<i64> {
  %r = aten.argmax %x : (tensor<3xi1>) -> tensor<i64>
  func.return %r : tensor<i64>
}

// -----

// MIL has only the natural log: log10 and log2 divide it by ln(10) / ln(2).
// CHECK-LABEL: func.func @log_bases(
// CHECK-NEXT:    %[[L:.*]] = coreml.log %x {epsilon = 0.000000e+00 : f64}
// CHECK-NEXT:    %[[C:.*]] = coreml.const {{.*}}2.30258512
// CHECK-NEXT:    %[[T:.*]] = coreml.real_div %[[L]], %[[C]]
// CHECK-NEXT:    %[[L2:.*]] = coreml.log %x {epsilon = 0.000000e+00 : f64}
// CHECK-NEXT:    %[[C2:.*]] = coreml.const {{.*}}0.693147182
// CHECK-NEXT:    %[[B:.*]] = coreml.real_div %[[L2]], %[[C2]]
// CHECK-NEXT:    %[[N:.*]] = coreml.tan %x
// CHECK-NEXT:    func.return %[[T]], %[[B]], %[[N]]
func.func @log_bases(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %a = aten.log10 %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = aten.log2 %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %c = aten.tan %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %a, %b, %c : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// hardshrink: 0 where -l <= x <= l (NaN fails both tests and passes through).
// CHECK-LABEL: func.func @hardshrink(
// CHECK:         %[[GE:.*]] = coreml.greater_equal %x, %{{.*}}
// CHECK-NEXT:    %[[LE:.*]] = coreml.less_equal %x, %{{.*}}
// CHECK-NEXT:    %[[IN:.*]] = coreml.logical_and %[[GE]], %[[LE]]
// CHECK-NEXT:    %[[Z:.*]] = coreml.const
// CHECK-NEXT:    %[[Y:.*]] = coreml.select %[[IN]], %[[Z]], %x
// CHECK-NEXT:    func.return %[[Y]]
func.func @hardshrink(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.hardshrink %x {lambd = 2.500000e-01 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

// softshrink: x - l above l, x + l below -l, else x * 0 (torch's order).
// CHECK-LABEL: func.func @softshrink(
// CHECK:         %[[ZERO:.*]] = coreml.mul %x,
// CHECK-NEXT:    %[[BELOW:.*]] = coreml.less %x,
// CHECK-NEXT:    %[[UP:.*]] = coreml.add %x,
// CHECK-NEXT:    %[[LOW:.*]] = coreml.select %[[BELOW]], %[[UP]], %[[ZERO]]
// CHECK-NEXT:    %[[ABOVE:.*]] = coreml.greater %x,
// CHECK-NEXT:    %[[DOWN:.*]] = coreml.sub %x,
// CHECK-NEXT:    %[[Y:.*]] = coreml.select %[[ABOVE]], %[[DOWN]], %[[LOW]]
// CHECK-NEXT:    func.return %[[Y]]
func.func @softshrink(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.softshrink %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// -----

// Rounding division: torch's float floor division from fmod (mod(|x|, |y|) with x's
// sign): d = (x - m) / y, less 1 where m and y differ in sign, floor(d) plus 1 above a
// half, a zero with x / y's sign, x / y where y is 0; int32 floor is MIL floor_div.
// CHECK-LABEL: func.func @floor_division(
// CHECK-NEXT:    %[[Q:.*]] = coreml.real_div %x, %y
// CHECK:         %[[M:.*]] = coreml.mod
// CHECK:         %[[FM:.*]] = coreml.select %{{.*}}, %{{.*}}, %[[M]]
// CHECK-NEXT:    %[[XM:.*]] = coreml.sub %x, %[[FM]]
// CHECK-NEXT:    %[[D:.*]] = coreml.real_div %[[XM]], %y
// CHECK:         %[[D1:.*]] = coreml.select %{{.*}}, %{{.*}}, %[[D]]
// CHECK-NEXT:    %[[FL:.*]] = coreml.floor %[[D1]]
// CHECK:         %[[ZF:.*]] = coreml.select
// CHECK:         %[[BYZ:.*]] = coreml.equal %y,
// CHECK-NEXT:    %[[F:.*]] = coreml.select %[[BYZ]], %[[Q]], %{{.*}}
// CHECK-NEXT:    %[[I:.*]] = coreml.floor_div %a, %b : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:    func.return %[[F]], %[[I]]
func.func @floor_division(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>, %a: tensor<2x3xi32>, %b: tensor<2x3xi32>) -> (tensor<2x3xf32>, tensor<2x3xi32>) {
  %f = aten.div %x, %y {rounding_mode = "floor"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %i = aten.div %a, %b {rounding_mode = "floor"} : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return %f, %i : tensor<2x3xf32>, tensor<2x3xi32>
}

// -----

// "trunc": ceil of a negative float quotient; on int32 the floor plus one where the
// remainder is nonzero and the signs differ.
// CHECK-LABEL: func.func @trunc_division(
// CHECK:         %[[Q:.*]] = coreml.real_div %x, %y
// CHECK-NEXT:    %[[F:.*]] = coreml.floor %[[Q]]
// CHECK:         %[[N:.*]] = coreml.less %[[Q]],
// CHECK-NEXT:    %[[C:.*]] = coreml.ceil %[[Q]]
// CHECK-NEXT:    %[[T:.*]] = coreml.select %[[N]], %[[C]], %[[F]]
// CHECK:         %[[FD:.*]] = coreml.floor_div %a, %b
// CHECK:         %[[FIX:.*]] = coreml.logical_and
// CHECK:         %[[UP:.*]] = coreml.add %[[FD]],
// CHECK-NEXT:    %[[I:.*]] = coreml.select %[[FIX]], %[[UP]], %[[FD]]
// CHECK-NEXT:    func.return %[[T]], %[[I]]
func.func @trunc_division(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>, %a: tensor<2x3xi32>, %b: tensor<2x3xi32>) -> (tensor<2x3xf32>, tensor<2x3xi32>) {
  %f = aten.div %x, %y {rounding_mode = "trunc"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %i = aten.div %a, %b {rounding_mode = "trunc"} : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return %f, %i : tensor<2x3xf32>, tensor<2x3xi32>
}

// -----

// asin / acos / atan / sinh / cosh are MIL ops; trunc is select(x < 0, ceil, floor);
// sign is (x > 0) - (x < 0), the comparisons cast (NaN: 0, as torch); isinf / isfinite
// compare abs(x) with inf (an integer input as fp32 first).
// CHECK-LABEL: func.func @trig_sign_trunc(
// CHECK-NEXT:    %[[A:.*]] = coreml.asin %x
// CHECK-NEXT:    %[[B:.*]] = coreml.acos %x
// CHECK-NEXT:    %[[C:.*]] = coreml.atan %x
// CHECK-NEXT:    %[[D:.*]] = coreml.sinh %x
// CHECK-NEXT:    %[[E:.*]] = coreml.cosh %x
// CHECK:         %[[NEG:.*]] = coreml.less %x, %{{.*}}
// CHECK-NEXT:    %[[UP:.*]] = coreml.ceil %x
// CHECK-NEXT:    %[[DOWN:.*]] = coreml.floor %x
// CHECK-NEXT:    %[[F:.*]] = coreml.select %[[NEG]], %[[UP]], %[[DOWN]]
// CHECK:         %[[GT:.*]] = coreml.greater %i, %{{.*}}
// CHECK-NEXT:    %[[GTI:.*]] = coreml.cast %[[GT]] {dtype = "int32"}
// CHECK-NEXT:    %[[LT:.*]] = coreml.less %i, %{{.*}}
// CHECK-NEXT:    %[[LTI:.*]] = coreml.cast %[[LT]] {dtype = "int32"}
// CHECK-NEXT:    %[[G:.*]] = coreml.sub %[[GTI]], %[[LTI]]
// CHECK-NEXT:    %[[ABS:.*]] = coreml.abs %x
// CHECK-NEXT:    %[[INF:.*]] = coreml.const
// CHECK-NEXT:    %[[H:.*]] = coreml.equal %[[ABS]], %[[INF]]
// CHECK-NEXT:    %[[IF:.*]] = coreml.cast %i {dtype = "fp32"}
// CHECK-NEXT:    %[[ABSI:.*]] = coreml.abs %[[IF]]
// CHECK-NEXT:    %[[INF2:.*]] = coreml.const
// CHECK-NEXT:    %[[K:.*]] = coreml.less %[[ABSI]], %[[INF2]]
// CHECK-NEXT:    func.return %[[A]], %[[B]], %[[C]], %[[D]], %[[E]], %[[F]], %[[G]], %[[H]], %[[K]]
func.func @trig_sign_trunc(%x: tensor<2x3xf32>, %i: tensor<2x3xi32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x3xi1>, tensor<2x3xi1>) {
  %a = aten.asin %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = aten.acos %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %c = aten.atan %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %d = aten.sinh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %e = aten.cosh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %f = aten.trunc %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %g = aten.sign %i : (tensor<2x3xi32>) -> tensor<2x3xi32>
  %h = aten.isinf %x : (tensor<2x3xf32>) -> tensor<2x3xi1>
  %k = aten.isfinite %i : (tensor<2x3xi32>) -> tensor<2x3xi1>
  func.return %a, %b, %c, %d, %e, %f, %g, %h, %k : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x3xi1>, tensor<2x3xi1>
}

// -----

// MIL has no expm1 / log1p: Kahan's forms. expm1: u = exp(x), (u - 1) * (x / log(u)),
// then selects for u - 1 == -1 (-1), u == inf (u), u == 1 (x). log1p: u = 1 + x,
// log(u) * (x / (u - 1)), then u == inf (u), u == 1 (x). An integer input is cast first.
// CHECK-LABEL: func.func @expm1_log1p(
// CHECK-NEXT:    %[[U:.*]] = coreml.exp %x
// CHECK-NEXT:    %{{.*}} = coreml.const dense<1.000000e+00>
// CHECK-NEXT:    %[[UM1:.*]] = coreml.sub %[[U]], %{{.*}}
// CHECK-NEXT:    %[[LOG:.*]] = coreml.log %[[U]] {epsilon = 0.000000e+00 : f64}
// CHECK-NEXT:    %[[RATIO:.*]] = coreml.real_div %x, %[[LOG]]
// CHECK-NEXT:    %[[R:.*]] = coreml.mul %[[UM1]], %[[RATIO]]
// CHECK:         %[[S1:.*]] = coreml.select %{{.*}}, %{{.*}}, %[[R]]
// CHECK-NEXT:    %[[S2:.*]] = coreml.select %{{.*}}, %[[U]], %[[S1]]
// CHECK-NEXT:    %[[A:.*]] = coreml.select %{{.*}}, %x, %[[S2]]
// CHECK-NEXT:    %{{.*}} = coreml.const dense<1.000000e+00>
// CHECK-NEXT:    %[[V:.*]] = coreml.add %x, %{{.*}}
// CHECK-NEXT:    %{{.*}} = coreml.const dense<1.000000e+00>
// CHECK-NEXT:    %[[VM1:.*]] = coreml.sub %[[V]], %{{.*}}
// CHECK-NEXT:    %[[VLOG:.*]] = coreml.log %[[V]] {epsilon = 0.000000e+00 : f64}
// CHECK-NEXT:    %[[VRATIO:.*]] = coreml.real_div %x, %[[VM1]]
// CHECK-NEXT:    %[[VR:.*]] = coreml.mul %[[VLOG]], %[[VRATIO]]
// CHECK:         %[[T1:.*]] = coreml.select %{{.*}}, %[[V]], %[[VR]]
// CHECK-NEXT:    %[[B:.*]] = coreml.select %{{.*}}, %x, %[[T1]]
// CHECK-NEXT:    %[[IF:.*]] = coreml.cast %i {dtype = "fp32"}
// CHECK-NEXT:    %{{.*}} = coreml.exp %[[IF]]
// CHECK:         %[[C:.*]] = coreml.select %{{.*}}, %[[IF]], %{{.*}}
// CHECK-NEXT:    func.return %[[A]], %[[B]], %[[C]]
func.func @expm1_log1p(%x: tensor<2x3xf32>, %i: tensor<2x3xi32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %a = aten.expm1 %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = aten.log1p %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %c = aten.expm1 %i : (tensor<2x3xi32>) -> tensor<2x3xf32>
  func.return %a, %b, %c : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// signbit: x < 0 or 1 / x < 0 (the division catches -0.0; MIL cannot read a NaN's
// sign bit); an integer tensor is cast to fp32 first.
// CHECK-LABEL: func.func @signbit(
// CHECK-NEXT:    %[[Z:.*]] = coreml.const dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[LT:.*]] = coreml.less %x, %[[Z]]
// CHECK-NEXT:    %[[ONE:.*]] = coreml.const dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[INV:.*]] = coreml.real_div %[[ONE]], %x
// CHECK-NEXT:    %[[NZ:.*]] = coreml.less %[[INV]], %[[Z]]
// CHECK-NEXT:    %[[A:.*]] = coreml.logical_or %[[LT]], %[[NZ]]
// CHECK-NEXT:    %[[IF:.*]] = coreml.cast %i {dtype = "fp32"}
// CHECK:         %[[B:.*]] = coreml.logical_or
// CHECK-NEXT:    func.return %[[A]], %[[B]]
func.func @signbit(%x: tensor<2x3xf32>, %i: tensor<2x3xi32>) -> (tensor<2x3xi1>, tensor<2x3xi1>) {
  %a = aten.signbit %x : (tensor<2x3xf32>) -> tensor<2x3xi1>
  %b = aten.signbit %i : (tensor<2x3xi32>) -> tensor<2x3xi1>
  func.return %a, %b : tensor<2x3xi1>, tensor<2x3xi1>
}

// -----

// fmod: mod(|x|, |y|) (one sign rule for non-negative operands) with x's sign: its bit
// but for NaN on floats (x < 0 or 1 / x < 0), x < 0 on int32.
// CHECK-LABEL: func.func @fmod(
// CHECK-NEXT:    %[[AX:.*]] = coreml.abs %x
// CHECK-NEXT:    %[[AY:.*]] = coreml.abs %y
// CHECK-NEXT:    %[[M:.*]] = coreml.mod %[[AX]], %[[AY]] : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
// CHECK:         %[[NEG:.*]] = coreml.logical_or
// CHECK-NEXT:    %[[M1:.*]] = coreml.const dense<-1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[NM:.*]] = coreml.mul %[[M]], %[[M1]]
// CHECK-NEXT:    %[[A:.*]] = coreml.select %[[NEG]], %[[NM]], %[[M]]
// CHECK:         %[[IM:.*]] = coreml.mod
// CHECK-NEXT:    %[[IZ:.*]] = coreml.const dense<0> : tensor<i32>
// CHECK-NEXT:    %[[INEG:.*]] = coreml.less %i, %[[IZ]]
// CHECK-NEXT:    %[[IM1:.*]] = coreml.const dense<-1> : tensor<i32>
// CHECK-NEXT:    %[[INM:.*]] = coreml.mul %[[IM]], %[[IM1]]
// CHECK-NEXT:    %[[B:.*]] = coreml.select %[[INEG]], %[[INM]], %[[IM]]
// CHECK-NEXT:    func.return %[[A]], %[[B]]
func.func @fmod(%x: tensor<2x3xf32>, %y: tensor<1x3xf32>, %i: tensor<2x3xi32>, %j: tensor<2x3xi32>) -> (tensor<2x3xf32>, tensor<2x3xi32>) {
  %a = aten.fmod %x, %y : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  %b = aten.fmod %i, %j : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return %a, %b : tensor<2x3xf32>, tensor<2x3xi32>
}
