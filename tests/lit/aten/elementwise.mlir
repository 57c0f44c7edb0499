// RUN: QOPT_ROUNDTRIP
// RUN: QOPT_GENERIC_ROUNDTRIP
// Round trip of every op in qopt/dialects/aten/elementwise.py.

// GENERIC-LABEL: "func.func"() <{sym_name = "neg"
// GENERIC:       "aten.neg"(%{{.*}}) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "gelu_tanh"
// GENERIC:       "aten.gelu"(%{{.*}}) <{approximate = "tanh"}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "shrink"
// GENERIC:       "aten.hardshrink"(%{{.*}}) <{lambd = 5.000000e-01 : f64}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
// GENERIC:       "aten.softshrink"(%{{.*}}) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "where"
// GENERIC:       "aten.where"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>

// CHECK-LABEL: func.func @neg(
// CHECK-SAME:    %[[NEG_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[NEG_R:.*]] = aten.neg %[[NEG_X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[NEG_R]] : tensor<2x3xf32>
func.func @neg(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.neg %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @abs(
// CHECK-SAME:    %[[ABS_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[ABS_R:.*]] = aten.abs %[[ABS_X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[ABS_R]] : tensor<2x3xf32>
func.func @abs(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.abs %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @relu(
// CHECK-SAME:    %[[RELU_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[RELU_R:.*]] = aten.relu %[[RELU_X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[RELU_R]] : tensor<2x3xf32>
func.func @relu(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @silu(
// CHECK-SAME:    %[[SILU_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[SILU_R:.*]] = aten.silu %[[SILU_X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[SILU_R]] : tensor<2x3xf32>
func.func @silu(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.silu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @sigmoid(
// CHECK-SAME:    %[[SIGMOID_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[SIGMOID_R:.*]] = aten.sigmoid %[[SIGMOID_X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[SIGMOID_R]] : tensor<2x3xf32>
func.func @sigmoid(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.sigmoid %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @tanh(
// CHECK-SAME:    %[[TANH_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[TANH_R:.*]] = aten.tanh %[[TANH_X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[TANH_R]] : tensor<2x3xf32>
func.func @tanh(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.tanh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @exp(
// CHECK-SAME:    %[[EXP_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[EXP_R:.*]] = aten.exp %[[EXP_X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[EXP_R]] : tensor<2x3xf32>
func.func @exp(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.exp %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @log(
// CHECK-SAME:    %[[LOG_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[LOG_R:.*]] = aten.log %[[LOG_X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[LOG_R]] : tensor<2x3xf32>
func.func @log(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.log %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @sqrt(
// CHECK-SAME:    %[[SQRT_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[SQRT_R:.*]] = aten.sqrt %[[SQRT_X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[SQRT_R]] : tensor<2x3xf32>
func.func @sqrt(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.sqrt %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @rsqrt(
// CHECK-SAME:    %[[RSQRT_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[RSQRT_R:.*]] = aten.rsqrt %[[RSQRT_X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[RSQRT_R]] : tensor<2x3xf32>
func.func @rsqrt(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.rsqrt %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @reciprocal(
// CHECK-SAME:    %[[RECIPROCAL_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[RECIPROCAL_R:.*]] = aten.reciprocal %[[RECIPROCAL_X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[RECIPROCAL_R]] : tensor<2x3xf32>
func.func @reciprocal(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.reciprocal %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @sin(
// CHECK-SAME:    %[[SIN_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[SIN_R:.*]] = aten.sin %[[SIN_X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[SIN_R]] : tensor<2x3xf32>
func.func @sin(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.sin %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @cos(
// CHECK-SAME:    %[[COS_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[COS_R:.*]] = aten.cos %[[COS_X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[COS_R]] : tensor<2x3xf32>
func.func @cos(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.cos %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @erf(
// CHECK-SAME:    %[[ERF_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[ERF_R:.*]] = aten.erf %[[ERF_X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[ERF_R]] : tensor<2x3xf32>
func.func @erf(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.erf %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @floor(
// CHECK-SAME:    %[[FLOOR_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[FLOOR_R:.*]] = aten.floor %[[FLOOR_X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[FLOOR_R]] : tensor<2x3xf32>
func.func @floor(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.floor %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @ceil(
// CHECK-SAME:    %[[CEIL_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[CEIL_R:.*]] = aten.ceil %[[CEIL_X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[CEIL_R]] : tensor<2x3xf32>
func.func @ceil(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.ceil %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @round(
// CHECK-SAME:    %[[ROUND_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[ROUND_R:.*]] = aten.round %[[ROUND_X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[ROUND_R]] : tensor<2x3xf32>
func.func @round(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.round %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @hardswish(
// CHECK-SAME:    %[[HARDSWISH_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[HARDSWISH_R:.*]] = aten.hardswish %[[HARDSWISH_X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[HARDSWISH_R]] : tensor<2x3xf32>
func.func @hardswish(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.hardswish %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @hardsigmoid(
// CHECK-SAME:    %[[HARDSIGMOID_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[HARDSIGMOID_R:.*]] = aten.hardsigmoid %[[HARDSIGMOID_X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[HARDSIGMOID_R]] : tensor<2x3xf32>
func.func @hardsigmoid(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.hardsigmoid %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @clone(
// CHECK-SAME:    %[[CLONE_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[CLONE_R:.*]] = aten.clone %[[CLONE_X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[CLONE_R]] : tensor<2x3xf32>
func.func @clone(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.clone %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @gelu(
// CHECK-SAME:    %[[GELU_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[GELU_R:.*]] = aten.gelu %[[GELU_X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[GELU_R]] : tensor<2x3xf32>
func.func @gelu(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.gelu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @gelu_tanh(
// CHECK-SAME:    %[[GELU_TANH_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[GELU_TANH_R:.*]] = aten.gelu %[[GELU_TANH_X]] {approximate = "tanh"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[GELU_TANH_R]] : tensor<2x3xf32>
func.func @gelu_tanh(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.gelu %x {approximate = "tanh"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @leaky_relu(
// CHECK-SAME:    %[[LEAKY_RELU_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[LEAKY_RELU_R:.*]] = aten.leaky_relu %[[LEAKY_RELU_X]] {negative_slope = 1.000000e-02 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[LEAKY_RELU_R]] : tensor<2x3xf32>
func.func @leaky_relu(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.leaky_relu %x {negative_slope = 1.000000e-02 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @log10(
// CHECK-SAME:    %[[LOG10_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[LOG10_R:.*]] = aten.log10 %[[LOG10_X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[LOG10_R]] : tensor<2x3xf32>
func.func @log10(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.log10 %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @log2(
// CHECK-SAME:    %[[LOG2_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[LOG2_R:.*]] = aten.log2 %[[LOG2_X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[LOG2_R]] : tensor<2x3xf32>
func.func @log2(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.log2 %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @tan(
// CHECK-SAME:    %[[TAN_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[TAN_R:.*]] = aten.tan %[[TAN_X]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[TAN_R]] : tensor<2x3xf32>
func.func @tan(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.tan %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @shrink(
// CHECK-NEXT:    %[[SHRINK_H:.*]] = aten.hardshrink %{{.*}} {lambd = 5.000000e-01 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %[[SHRINK_S:.*]] = aten.softshrink %[[SHRINK_H]] : (tensor<2x3xf32>) -> tensor<2x3xf32>
func.func @shrink(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %h = aten.hardshrink %x {lambd = 5.000000e-01 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %s = aten.softshrink %h : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %s : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @clamp(
// CHECK-SAME:    %[[CLAMP_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[CLAMP_R:.*]] = aten.clamp %[[CLAMP_X]] {min = -1.000000e+00 : f64, max = 6.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[CLAMP_R]] : tensor<2x3xf32>
func.func @clamp(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.clamp %x {min = -1.000000e+00 : f64, max = 6.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @clamp_min_only(
// CHECK-SAME:    %[[CLAMP_MIN_ONLY_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[CLAMP_MIN_ONLY_R:.*]] = aten.clamp %[[CLAMP_MIN_ONLY_X]] {min = 0.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[CLAMP_MIN_ONLY_R]] : tensor<2x3xf32>
func.func @clamp_min_only(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.clamp %x {min = 0.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @logical_not(
// CHECK-SAME:    %[[LOGICAL_NOT_X:[^:]*]]: tensor<2x3xi1>
// CHECK-NEXT:    %[[LOGICAL_NOT_R:.*]] = aten.logical_not %[[LOGICAL_NOT_X]] : (tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:    func.return %[[LOGICAL_NOT_R]] : tensor<2x3xi1>
func.func @logical_not(%x: tensor<2x3xi1>) -> tensor<2x3xi1> {
  %r = aten.logical_not %x : (tensor<2x3xi1>) -> tensor<2x3xi1>
  func.return %r : tensor<2x3xi1>
}

// CHECK-LABEL: func.func @bitwise_not(
// CHECK-SAME:    %[[BITWISE_NOT_X:[^:]*]]: tensor<2x3xi32>
// CHECK-NEXT:    %[[BITWISE_NOT_R:.*]] = aten.bitwise_not %[[BITWISE_NOT_X]] : (tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:    func.return %[[BITWISE_NOT_R]] : tensor<2x3xi32>
func.func @bitwise_not(%x: tensor<2x3xi32>) -> tensor<2x3xi32> {
  %r = aten.bitwise_not %x : (tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return %r : tensor<2x3xi32>
}

// CHECK-LABEL: func.func @isnan(
// CHECK-SAME:    %[[ISNAN_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[ISNAN_R:.*]] = aten.isnan %[[ISNAN_X]] : (tensor<2x3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:    func.return %[[ISNAN_R]] : tensor<2x3xi1>
func.func @isnan(%x: tensor<2x3xf32>) -> tensor<2x3xi1> {
  %r = aten.isnan %x : (tensor<2x3xf32>) -> tensor<2x3xi1>
  func.return %r : tensor<2x3xi1>
}

// CHECK-LABEL: func.func @to_int(
// CHECK-SAME:    %[[TO_INT_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[TO_INT_R:.*]] = aten.to %[[TO_INT_X]] : (tensor<2x3xf32>) -> tensor<2x3xi32>
// CHECK-NEXT:    func.return %[[TO_INT_R]] : tensor<2x3xi32>
func.func @to_int(%x: tensor<2x3xf32>) -> tensor<2x3xi32> {
  %r = aten.to %x : (tensor<2x3xf32>) -> tensor<2x3xi32>
  func.return %r : tensor<2x3xi32>
}

// CHECK-LABEL: func.func @to_f16(
// CHECK-SAME:    %[[TO_F16_X:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[TO_F16_R:.*]] = aten.to %[[TO_F16_X]] : (tensor<2x3xf32>) -> tensor<2x3xf16>
// CHECK-NEXT:    func.return %[[TO_F16_R]] : tensor<2x3xf16>
func.func @to_f16(%x: tensor<2x3xf32>) -> tensor<2x3xf16> {
  %r = aten.to %x : (tensor<2x3xf32>) -> tensor<2x3xf16>
  func.return %r : tensor<2x3xf16>
}

// CHECK-LABEL: func.func @add(
// CHECK-SAME:    %[[ADD_X:[^:]*]]: tensor<2x3xf32>, %[[ADD_Y:[^:]*]]: tensor<3xf32>
// CHECK-NEXT:    %[[ADD_R:.*]] = aten.add %[[ADD_X]], %[[ADD_Y]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[ADD_R]] : tensor<2x3xf32>
func.func @add(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> tensor<2x3xf32> {
  %r = aten.add %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @add_alpha(
// CHECK-SAME:    %[[ADD_ALPHA_X:[^:]*]]: tensor<2x3xf32>, %[[ADD_ALPHA_Y:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[ADD_ALPHA_R:.*]] = aten.add %[[ADD_ALPHA_X]], %[[ADD_ALPHA_Y]] {alpha = 2.000000e+00 : f64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[ADD_ALPHA_R]] : tensor<2x3xf32>
func.func @add_alpha(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.add %x, %y {alpha = 2.000000e+00 : f64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @add_scalar(
// CHECK-SAME:    %[[ADD_SCALAR_X:[^:]*]]: tensor<2x3xf32>, %[[ADD_SCALAR_Y:[^:]*]]: tensor<f32>
// CHECK-NEXT:    %[[ADD_SCALAR_R:.*]] = aten.add %[[ADD_SCALAR_X]], %[[ADD_SCALAR_Y]] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[ADD_SCALAR_R]] : tensor<2x3xf32>
func.func @add_scalar(%x: tensor<2x3xf32>, %y: tensor<f32>) -> tensor<2x3xf32> {
  %r = aten.add %x, %y : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @sub(
// CHECK-SAME:    %[[SUB_X:[^:]*]]: tensor<2x3xf32>, %[[SUB_Y:[^:]*]]: tensor<3xf32>
// CHECK-NEXT:    %[[SUB_R:.*]] = aten.sub %[[SUB_X]], %[[SUB_Y]] {alpha = 5.000000e-01 : f64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[SUB_R]] : tensor<2x3xf32>
func.func @sub(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> tensor<2x3xf32> {
  %r = aten.sub %x, %y {alpha = 5.000000e-01 : f64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @mul_broadcast_both(
// CHECK-SAME:    %[[MUL_BROADCAST_BOTH_X:[^:]*]]: tensor<2x1xf32>, %[[MUL_BROADCAST_BOTH_Y:[^:]*]]: tensor<1x3xf32>
// CHECK-NEXT:    %[[MUL_BROADCAST_BOTH_R:.*]] = aten.mul %[[MUL_BROADCAST_BOTH_X]], %[[MUL_BROADCAST_BOTH_Y]] : (tensor<2x1xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[MUL_BROADCAST_BOTH_R]] : tensor<2x3xf32>
func.func @mul_broadcast_both(%x: tensor<2x1xf32>, %y: tensor<1x3xf32>) -> tensor<2x3xf32> {
  %r = aten.mul %x, %y : (tensor<2x1xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @div(
// CHECK-SAME:    %[[DIV_X:[^:]*]]: tensor<2x3xf32>, %[[DIV_Y:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[DIV_R:.*]] = aten.div %[[DIV_X]], %[[DIV_Y]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[DIV_R]] : tensor<2x3xf32>
func.func @div(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.div %x, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @div_floor(
// CHECK-SAME:    %[[DIV_FLOOR_X:[^:]*]]: tensor<2x3xi32>, %[[DIV_FLOOR_Y:[^:]*]]: tensor<2x3xi32>
// CHECK-NEXT:    %[[DIV_FLOOR_R:.*]] = aten.div %[[DIV_FLOOR_X]], %[[DIV_FLOOR_Y]] {rounding_mode = "floor"} : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:    func.return %[[DIV_FLOOR_R]] : tensor<2x3xi32>
func.func @div_floor(%x: tensor<2x3xi32>, %y: tensor<2x3xi32>) -> tensor<2x3xi32> {
  %r = aten.div %x, %y {rounding_mode = "floor"} : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return %r : tensor<2x3xi32>
}

// CHECK-LABEL: func.func @div_trunc(
// CHECK-SAME:    %[[DIV_TRUNC_X:[^:]*]]: tensor<2x3xf32>, %[[DIV_TRUNC_Y:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[DIV_TRUNC_R:.*]] = aten.div %[[DIV_TRUNC_X]], %[[DIV_TRUNC_Y]] {rounding_mode = "trunc"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[DIV_TRUNC_R]] : tensor<2x3xf32>
func.func @div_trunc(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.div %x, %y {rounding_mode = "trunc"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @remainder(
// CHECK-SAME:    %[[REMAINDER_X:[^:]*]]: tensor<2x3xf32>, %[[REMAINDER_Y:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[REMAINDER_R:.*]] = aten.remainder %[[REMAINDER_X]], %[[REMAINDER_Y]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[REMAINDER_R]] : tensor<2x3xf32>
func.func @remainder(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.remainder %x, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @pow(
// CHECK-SAME:    %[[POW_X:[^:]*]]: tensor<2x3xf32>, %[[POW_Y:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[POW_R:.*]] = aten.pow %[[POW_X]], %[[POW_Y]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[POW_R]] : tensor<2x3xf32>
func.func @pow(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.pow %x, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @maximum(
// CHECK-SAME:    %[[MAXIMUM_X:[^:]*]]: tensor<2x3xf32>, %[[MAXIMUM_Y:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[MAXIMUM_R:.*]] = aten.maximum %[[MAXIMUM_X]], %[[MAXIMUM_Y]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[MAXIMUM_R]] : tensor<2x3xf32>
func.func @maximum(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.maximum %x, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @minimum(
// CHECK-SAME:    %[[MINIMUM_X:[^:]*]]: tensor<2x3xf32>, %[[MINIMUM_Y:[^:]*]]: tensor<2x3xf32>
// CHECK-NEXT:    %[[MINIMUM_R:.*]] = aten.minimum %[[MINIMUM_X]], %[[MINIMUM_Y]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[MINIMUM_R]] : tensor<2x3xf32>
func.func @minimum(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = aten.minimum %x, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @eq(
// CHECK-SAME:    %[[EQ_X:[^:]*]]: tensor<2x3xf32>, %[[EQ_Y:[^:]*]]: tensor<3xf32>
// CHECK-NEXT:    %[[EQ_R:.*]] = aten.eq %[[EQ_X]], %[[EQ_Y]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:    func.return %[[EQ_R]] : tensor<2x3xi1>
func.func @eq(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> tensor<2x3xi1> {
  %r = aten.eq %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  func.return %r : tensor<2x3xi1>
}

// CHECK-LABEL: func.func @ne(
// CHECK-SAME:    %[[NE_X:[^:]*]]: tensor<2x3xf32>, %[[NE_Y:[^:]*]]: tensor<3xf32>
// CHECK-NEXT:    %[[NE_R:.*]] = aten.ne %[[NE_X]], %[[NE_Y]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:    func.return %[[NE_R]] : tensor<2x3xi1>
func.func @ne(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> tensor<2x3xi1> {
  %r = aten.ne %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  func.return %r : tensor<2x3xi1>
}

// CHECK-LABEL: func.func @lt(
// CHECK-SAME:    %[[LT_X:[^:]*]]: tensor<2x3xf32>, %[[LT_Y:[^:]*]]: tensor<3xf32>
// CHECK-NEXT:    %[[LT_R:.*]] = aten.lt %[[LT_X]], %[[LT_Y]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:    func.return %[[LT_R]] : tensor<2x3xi1>
func.func @lt(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> tensor<2x3xi1> {
  %r = aten.lt %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  func.return %r : tensor<2x3xi1>
}

// CHECK-LABEL: func.func @le(
// CHECK-SAME:    %[[LE_X:[^:]*]]: tensor<2x3xf32>, %[[LE_Y:[^:]*]]: tensor<3xf32>
// CHECK-NEXT:    %[[LE_R:.*]] = aten.le %[[LE_X]], %[[LE_Y]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:    func.return %[[LE_R]] : tensor<2x3xi1>
func.func @le(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> tensor<2x3xi1> {
  %r = aten.le %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  func.return %r : tensor<2x3xi1>
}

// CHECK-LABEL: func.func @gt(
// CHECK-SAME:    %[[GT_X:[^:]*]]: tensor<2x3xf32>, %[[GT_Y:[^:]*]]: tensor<3xf32>
// CHECK-NEXT:    %[[GT_R:.*]] = aten.gt %[[GT_X]], %[[GT_Y]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:    func.return %[[GT_R]] : tensor<2x3xi1>
func.func @gt(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> tensor<2x3xi1> {
  %r = aten.gt %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  func.return %r : tensor<2x3xi1>
}

// CHECK-LABEL: func.func @ge(
// CHECK-SAME:    %[[GE_X:[^:]*]]: tensor<2x3xf32>, %[[GE_Y:[^:]*]]: tensor<3xf32>
// CHECK-NEXT:    %[[GE_R:.*]] = aten.ge %[[GE_X]], %[[GE_Y]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:    func.return %[[GE_R]] : tensor<2x3xi1>
func.func @ge(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> tensor<2x3xi1> {
  %r = aten.ge %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  func.return %r : tensor<2x3xi1>
}

// CHECK-LABEL: func.func @logical_and(
// CHECK-SAME:    %[[LOGICAL_AND_X:[^:]*]]: tensor<2x3xi1>, %[[LOGICAL_AND_Y:[^:]*]]: tensor<2x3xi1>
// CHECK-NEXT:    %[[LOGICAL_AND_R:.*]] = aten.logical_and %[[LOGICAL_AND_X]], %[[LOGICAL_AND_Y]] : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:    func.return %[[LOGICAL_AND_R]] : tensor<2x3xi1>
func.func @logical_and(%x: tensor<2x3xi1>, %y: tensor<2x3xi1>) -> tensor<2x3xi1> {
  %r = aten.logical_and %x, %y : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  func.return %r : tensor<2x3xi1>
}

// CHECK-LABEL: func.func @logical_or(
// CHECK-SAME:    %[[LOGICAL_OR_X:[^:]*]]: tensor<2x3xi1>, %[[LOGICAL_OR_Y:[^:]*]]: tensor<2x3xi1>
// CHECK-NEXT:    %[[LOGICAL_OR_R:.*]] = aten.logical_or %[[LOGICAL_OR_X]], %[[LOGICAL_OR_Y]] : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:    func.return %[[LOGICAL_OR_R]] : tensor<2x3xi1>
func.func @logical_or(%x: tensor<2x3xi1>, %y: tensor<2x3xi1>) -> tensor<2x3xi1> {
  %r = aten.logical_or %x, %y : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  func.return %r : tensor<2x3xi1>
}

// CHECK-LABEL: func.func @logical_xor(
// CHECK-SAME:    %[[LOGICAL_XOR_X:[^:]*]]: tensor<2x3xi1>, %[[LOGICAL_XOR_Y:[^:]*]]: tensor<2x3xi1>
// CHECK-NEXT:    %[[LOGICAL_XOR_R:.*]] = aten.logical_xor %[[LOGICAL_XOR_X]], %[[LOGICAL_XOR_Y]] : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:    func.return %[[LOGICAL_XOR_R]] : tensor<2x3xi1>
func.func @logical_xor(%x: tensor<2x3xi1>, %y: tensor<2x3xi1>) -> tensor<2x3xi1> {
  %r = aten.logical_xor %x, %y : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  func.return %r : tensor<2x3xi1>
}

// CHECK-LABEL: func.func @bitwise_and(
// CHECK-SAME:    %[[BITWISE_AND_X:[^:]*]]: tensor<2x3xi32>, %[[BITWISE_AND_Y:[^:]*]]: tensor<2x3xi32>
// CHECK-NEXT:    %[[BITWISE_AND_R:.*]] = aten.bitwise_and %[[BITWISE_AND_X]], %[[BITWISE_AND_Y]] : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:    func.return %[[BITWISE_AND_R]] : tensor<2x3xi32>
func.func @bitwise_and(%x: tensor<2x3xi32>, %y: tensor<2x3xi32>) -> tensor<2x3xi32> {
  %r = aten.bitwise_and %x, %y : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return %r : tensor<2x3xi32>
}

// CHECK-LABEL: func.func @bitwise_or(
// CHECK-SAME:    %[[BITWISE_OR_X:[^:]*]]: tensor<2x3xi32>, %[[BITWISE_OR_Y:[^:]*]]: tensor<2x3xi32>
// CHECK-NEXT:    %[[BITWISE_OR_R:.*]] = aten.bitwise_or %[[BITWISE_OR_X]], %[[BITWISE_OR_Y]] : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:    func.return %[[BITWISE_OR_R]] : tensor<2x3xi32>
func.func @bitwise_or(%x: tensor<2x3xi32>, %y: tensor<2x3xi32>) -> tensor<2x3xi32> {
  %r = aten.bitwise_or %x, %y : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return %r : tensor<2x3xi32>
}

// CHECK-LABEL: func.func @bitwise_xor(
// CHECK-SAME:    %[[BITWISE_XOR_X:[^:]*]]: tensor<2x3xi32>, %[[BITWISE_XOR_Y:[^:]*]]: tensor<2x3xi32>
// CHECK-NEXT:    %[[BITWISE_XOR_R:.*]] = aten.bitwise_xor %[[BITWISE_XOR_X]], %[[BITWISE_XOR_Y]] : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:    func.return %[[BITWISE_XOR_R]] : tensor<2x3xi32>
func.func @bitwise_xor(%x: tensor<2x3xi32>, %y: tensor<2x3xi32>) -> tensor<2x3xi32> {
  %r = aten.bitwise_xor %x, %y : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return %r : tensor<2x3xi32>
}

// CHECK-LABEL: func.func @where(
// CHECK-SAME:    %[[WHERE_C:[^:]*]]: tensor<2x3xi1>, %[[WHERE_X:[^:]*]]: tensor<2x3xf32>, %[[WHERE_Y:[^:]*]]: tensor<f32>
// CHECK-NEXT:    %[[WHERE_R:.*]] = aten.where %[[WHERE_C]], %[[WHERE_X]], %[[WHERE_Y]] : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[WHERE_R]] : tensor<2x3xf32>
func.func @where(%c: tensor<2x3xi1>, %x: tensor<2x3xf32>, %y: tensor<f32>) -> tensor<2x3xf32> {
  %r = aten.where %c, %x, %y : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @masked_fill(
// CHECK-SAME:    %[[MASKED_FILL_X:[^:]*]]: tensor<2x3xf32>, %[[MASKED_FILL_M:[^:]*]]: tensor<1x3xi1>, %[[MASKED_FILL_V:[^:]*]]: tensor<f32>
// CHECK-NEXT:    %[[MASKED_FILL_R:.*]] = aten.masked_fill %[[MASKED_FILL_X]], %[[MASKED_FILL_M]], %[[MASKED_FILL_V]] : (tensor<2x3xf32>, tensor<1x3xi1>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[MASKED_FILL_R]] : tensor<2x3xf32>
func.func @masked_fill(%x: tensor<2x3xf32>, %m: tensor<1x3xi1>, %v: tensor<f32>) -> tensor<2x3xf32> {
  %r = aten.masked_fill %x, %m, %v : (tensor<2x3xf32>, tensor<1x3xi1>, tensor<f32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}


// CHECK-LABEL: func.func @trig_sign_trunc(
// CHECK-NEXT:    %{{.*}} = aten.asin %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.*}} = aten.acos %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.*}} = aten.atan %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.*}} = aten.sinh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.*}} = aten.cosh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.*}} = aten.trunc %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.*}} = aten.sign %i : (tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:    %{{.*}} = aten.isinf %x : (tensor<2x3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:    %{{.*}} = aten.isfinite %i : (tensor<2x3xi32>) -> tensor<2x3xi1>
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

// CHECK-LABEL: func.func @expm1_log1p(
// CHECK-NEXT:    %{{.*}} = aten.expm1 %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.*}} = aten.log1p %i : (tensor<2x3xi32>) -> tensor<2x3xf32>
func.func @expm1_log1p(%x: tensor<2x3xf32>, %i: tensor<2x3xi32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %a = aten.expm1 %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = aten.log1p %i : (tensor<2x3xi32>) -> tensor<2x3xf32>
  func.return %a, %b : tensor<2x3xf32>, tensor<2x3xf32>
}

// CHECK-LABEL: func.func @signbit(
// CHECK-NEXT:    %{{.*}} = aten.signbit %x : (tensor<2x3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:    %{{.*}} = aten.signbit %i : (tensor<2x3xi32>) -> tensor<2x3xi1>
func.func @signbit(%x: tensor<2x3xf32>, %i: tensor<2x3xi32>) -> (tensor<2x3xi1>, tensor<2x3xi1>) {
  %a = aten.signbit %x : (tensor<2x3xf32>) -> tensor<2x3xi1>
  %b = aten.signbit %i : (tensor<2x3xi32>) -> tensor<2x3xi1>
  func.return %a, %b : tensor<2x3xi1>, tensor<2x3xi1>
}

// CHECK-LABEL: func.func @fmod(
// CHECK-NEXT:    %{{.*}} = aten.fmod %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.*}} = aten.fmod %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
func.func @fmod(%x: tensor<2x3xf32>, %y: tensor<3xf32>, %i: tensor<2x3xi32>) -> (tensor<2x3xf32>, tensor<2x3xi32>) {
  %a = aten.fmod %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %b = aten.fmod %i, %i : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return %a, %b : tensor<2x3xf32>, tensor<2x3xi32>
}

// CHECK-LABEL: func.func @shifts(
// CHECK-NEXT:    %{{.*}} = aten.bitwise_left_shift %i, %j : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:    %{{.*}} = aten.bitwise_right_shift %i, %j : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
func.func @shifts(%i: tensor<2x3xi32>, %j: tensor<3xi32>) -> (tensor<2x3xi32>, tensor<2x3xi32>) {
  %a = aten.bitwise_left_shift %i, %j : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  %b = aten.bitwise_right_shift %i, %j : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  func.return %a, %b : tensor<2x3xi32>, tensor<2x3xi32>
}
