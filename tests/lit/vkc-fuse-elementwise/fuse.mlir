// RUN: qopt-opt %s -p 'convert-to-vkc{schedule=false},vkc-fuse-elementwise' --split-input-file | filecheck %s
// RUN: qopt-opt %s -p 'qopt-vulkan{fuse-elementwise=false}' --split-input-file | filecheck %s --check-prefix=OFF
// vkc-fuse-elementwise merges chains of elementwise dispatches (unary, binary,
// copy_strided) into one fused_elementwise dispatch, and a square read only by a
// sum/mean reduction into that reduction (reduce_rows PRE = 1); with
// fuse-elementwise=false qopt-vulkan keeps one dispatch per op. (Idempotence and
// translation validation: tests/unit/lowering/test_vkc_schedule_passes.py.)

// RMSNorm: pow(x, 2) -> mean -> + eps -> rsqrt -> * x -> * w is 6 dispatches; fused,
// the square goes into the mean and the tail is one kernel of 4 instructions.
// CHECK-DAG:   vkc.kernel @[[RED:reduce_rows_[0-9]+]] {kernel = "reduce_rows"{{.*}}spec = {OP = 1 : i64, PRE = 1 : i64}
// CHECK-DAG:   vkc.kernel @[[TAIL:fused_elementwise_[0-9]+]] {kernel = "fused_elementwise"{{.*}}I0_OP = 64 : i64{{.*}}I1_OP = 8 : i64{{.*}}I2_OP = 66 : i64{{.*}}I3_OP = 66 : i64{{.*}}I4_OP = -1 : i64
// CHECK-LABEL: func.func @rms_norm
// CHECK:         %[[X:[0-9]+]] = vkc.input %x
// CHECK:         vkc.dispatch @[[RED]](%[[X]], %[[M:[0-9]+]])
// CHECK-NOT:     @{{binary|unary|copy_strided}}
// CHECK:         vkc.dispatch @[[TAIL]](%[[X]], %[[M]],
// CHECK-NOT:     vkc.dispatch
// CHECK:         func.return
// OFF-LABEL:   func.func @rms_norm
// OFF-COUNT-6:   vkc.dispatch
// OFF-NOT:       vkc.dispatch
// OFF:           func.return
func.func @rms_norm(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %two = arith.constant dense<2.0> : tensor<f32>
  %eps = arith.constant dense<1.0e-05> : tensor<f32>
  %w = arith.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %0 = aten.pow %x, %two : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %1 = aten.mean %0 {dims = array<i64: -1>, keepdim = true} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %2 = aten.add %1, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %3 = aten.rsqrt %2 : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %4 = aten.mul %x, %3 : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %5 = aten.mul %4, %w : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  func.return %5 : tensor<2x8xf32>
}

// -----

// SiLU gate and a residual add, with the gate's input transposed: the transpose
// (a copy) becomes a strided load of the fused kernel.
// CHECK:       vkc.kernel @[[GATE:fused_elementwise_[0-9]+]] {kernel = "fused_elementwise"
// CHECK-SAME:    D4 = 3 : i64, D5 = 2 : i64
// CHECK-SAME:    L1_BUF = 1 : i64, L1_OFF = 0 : i64, L1_S0 = 0 : i64, L1_S1 = 0 : i64, L1_S2 = 0 : i64, L1_S3 = 0 : i64, L1_S4 = 1 : i64, L1_S5 = 3 : i64
// CHECK-SAME:    I0_OP = 2 : i64{{.*}}I1_OP = 66 : i64{{.*}}I2_OP = 64 : i64
// CHECK-LABEL: func.func @silu_gate
// CHECK-COUNT-1: vkc.dispatch @[[GATE]](
// CHECK-NOT:     vkc.dispatch
// CHECK:         func.return
func.func @silu_gate(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>, %r: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %0 = aten.transpose %a {dim0 = 0 : i64, dim1 = 1 : i64} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %1 = aten.silu %0 : (tensor<3x2xf32>) -> tensor<3x2xf32>
  %2 = aten.mul %1, %b : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %3 = aten.add %r, %2 : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  func.return %3 : tensor<3x2xf32>
}

// -----

// Rotary embedding's rotate_half: x * cos + cat(-x2, x1) * sin. The slices fuse into
// the cat pieces, the pieces (loads windowed to their half, chosen by a select on the
// last index) into the multiply, and everything into the add: one dispatch.
// CHECK:       vkc.kernel @[[ROT:fused_elementwise_[0-9]+]] {kernel = "fused_elementwise"
// CHECK-SAME:    L{{[0-9]}}_AX = 5 : i64, L{{[0-9]}}_LO = 0 : i64, L{{[0-9]}}_N = 2 : i64
// CHECK-SAME:    L{{[0-9]}}_AX = 5 : i64, L{{[0-9]}}_LO = 2 : i64, L{{[0-9]}}_N = 2 : i64
// CHECK-SAME:    I{{[0-9]}}_OP = 128 : i64, {{.*}}I{{[0-9]}}_X = 5 : i64, I{{[0-9]}}_Y = 2 : i64
// CHECK-LABEL: func.func @rotary
// CHECK-COUNT-1: vkc.dispatch @[[ROT]](
// CHECK-NOT:     vkc.dispatch
// CHECK:         func.return
func.func @rotary(%x: tensor<2x4xf32>, %cos: tensor<2x4xf32>, %sin: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %0 = aten.mul %x, %cos : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %1 = aten.slice %x {dim = 1 : i64, start = 0 : i64, end = 2 : i64, step = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x2xf32>
  %2 = aten.slice %x {dim = 1 : i64, start = 2 : i64, end = 9223372036854775807 : i64, step = 1 : i64} : (tensor<2x4xf32>) -> tensor<2x2xf32>
  %3 = aten.neg %2 : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %4 = aten.cat %3, %1 {dim = -1 : i64} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %5 = aten.mul %4, %sin : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %6 = aten.add %0, %5 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %6 : tensor<2x4xf32>
}

// -----

// Not fused: an intermediate with two users that is more than a copy (it would be
// computed twice), and a program output.
// CHECK-LABEL: func.func @shared
// CHECK:         vkc.dispatch @binary_{{[0-9]+}}(
// CHECK:         vkc.dispatch @unary_{{[0-9]+}}(
// CHECK:         vkc.dispatch @unary_{{[0-9]+}}(
// CHECK-NOT:     vkc.dispatch
// CHECK:         func.return
func.func @shared(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = aten.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = aten.neg %0 : (tensor<4xf32>) -> tensor<4xf32>
  %2 = aten.exp %0 : (tensor<4xf32>) -> tensor<4xf32>
  func.return %1, %2 : tensor<4xf32>, tensor<4xf32>
}
