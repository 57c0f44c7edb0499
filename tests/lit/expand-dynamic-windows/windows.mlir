// RUN: qopt-opt %s -p expand-dynamic-windows | filecheck %s
// RUN: qopt-opt %s -p expand-dynamic-windows | qopt-opt | filecheck %s
// RUN: qopt-opt %s -p qopt-vulkan --print-ir-after expand-dynamic-windows -o /dev/null 2>&1 | filecheck %s --check-prefix=PIPELINE
// RUN: qopt-opt %s -p qopt-coreml --print-ir-after expand-dynamic-windows -o /dev/null 2>&1 | filecheck %s --check-prefix=PIPELINE
// ExecuTorch's dynamic-shape cache write and read at `pos = input_pos[0].item()`: the
// item is its 0-d input, a window of static length L at run-time start s the indices
// s + arange(L), made once per (start, length); the check stays. Both pipelines run
// the pass before their conversion.

// CHECK-LABEL: func.func @forward(
// CHECK-NOT:     aten.item
// CHECK:         %[[S:.*]] = aten.select %p
// CHECK-NEXT:    %[[R2:.*]] = arith.constant dense<[0, 1]> : tensor<2xi64>
// CHECK-NEXT:    %[[I2:.*]] = aten.add %[[S]], %[[R2]] : (tensor<i64>, tensor<2xi64>) -> tensor<2xi64>
// CHECK-NEXT:    %[[R1:.*]] = arith.constant dense<0> : tensor<1xi64>
// CHECK-NEXT:    %[[I1:.*]] = aten.add %[[S]], %[[R1]] : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
// CHECK:         aten.assert_scalar
// CHECK:         %[[C:.*]] = aten.index_copy %cache, %[[I1]], %x {dim = 0 : i64}
// CHECK-NOT:     aten.dynamic
// CHECK:         aten.index_select %{{.*}}, %[[I2]] {dim = 0 : i64} : (tensor<4x2xf32>, tensor<2xi64>) -> tensor<2x2xf32>
// CHECK-NOT:     aten.dynamic

// PIPELINE:      IR Dump After expand-dynamic-windows
// PIPELINE-NOT:  aten.item
// PIPELINE:      aten.index_copy
// PIPELINE:      aten.index_select
func.func @forward(%p: tensor<1xi64>, %x: tensor<1x2xf32>) -> tensor<2x2xf32> {
  %cache = arith.constant dense<0.0> : tensor<4x2xf32>
  %s0 = aten.select %p {dim = 0 : i64, index = 0 : i64} : (tensor<1xi64>) -> tensor<i64>
  %s = aten.item %s0 {range = array<i64: 0, 2>} : (tensor<i64>) -> tensor<i64>
  %three = arith.constant dense<3> : tensor<i64>
  %ok = aten.lt %s, %three : (tensor<i64>, tensor<i64>) -> tensor<i1>
  aten.assert_scalar %ok {message = "u0 < 3"} : tensor<i1>
  %c = aten.dynamic_update_slice %cache, %x, %s {dim = 0 : i64} : (tensor<4x2xf32>, tensor<1x2xf32>, tensor<i64>) -> tensor<4x2xf32>
  %ones = arith.constant dense<1.0> : tensor<4x2xf32>
  %d = aten.add %c, %ones : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %w = aten.dynamic_slice %d, %s {dim = 0 : i64} : (tensor<4x2xf32>, tensor<i64>) -> tensor<2x2xf32>
  func.return %w : tensor<2x2xf32>
}
