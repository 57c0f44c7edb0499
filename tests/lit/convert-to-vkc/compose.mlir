// RUN: qopt-opt %s -p 'convert-to-vkc{schedule=false}' --split-input-file | filecheck %s
// Forms of ops the Vulkan kernels lack, composed by the lowering in ops they have
// (qopt/lowering/compose.py).

// A batched, scaled addmm (baddbmm): the batched matmul kernel (batch = 2), then
// input * beta and the add.
// CHECK-LABEL: func.func @baddbmm(
// CHECK:         %[[P:.*]] = vkc.alloc : !vkc.buffer<2x3x5xf32>
// CHECK-NEXT:    vkc.dispatch @matmul_0(%{{.*}}, %{{.*}}, %[[P]], %[[P]]) {push = {M = 3 : i64, N = 5 : i64, K = 4 : i64, batch = 2 : i64
// CHECK:         %[[BETA:.*]] = vkc.constant dense_resource<{{.*}}> : tensor<1xf32> : !vkc.buffer<1xf32>
// CHECK:         vkc.dispatch @binary_0(%{{.*}}, %[[BETA]], %[[S:.*]])
// CHECK:         vkc.dispatch @binary_1(%[[S]], %[[P]], %{{.*}})
func.func @baddbmm(%c: tensor<2x3x5xf32>, %a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
  %y = aten.addmm %c, %a, %b {beta = 5.000000e-01 : f64} : (tensor<2x3x5xf32>, tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  func.return %y : tensor<2x3x5xf32>
}

// -----

// diff along dim 1: two strided windows and a subtraction, no aten.diff left.
// CHECK-LABEL: func.func @diff(
// CHECK-NOT:     aten.diff
// CHECK:         vkc.dispatch @binary_0
// CHECK:         func.return
func.func @diff(%x: tensor<2x5xf32>) -> tensor<2x4xf32> {
  %y = aten.diff %x {n = 1 : i64, dim = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
