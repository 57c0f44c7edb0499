// RUN: qopt-opt %s -p 'convert-to-vkc{schedule=false}' 2>&1 | filecheck %s
// addmm outside the matmul kernel's bias form (beta = 0.5): the lowering writes it as
// the matmul kernel without a bias, beta * input and an add (qopt/lowering/compose.py).
// CHECK:     vkc.dispatch @matmul_0({{.*}}) {push = {M = 2 : i64, N = 6 : i64, K = 4 : i64, batch = 1 : i64
// CHECK:     vkc.dispatch @binary_0
// CHECK:     vkc.dispatch @binary_1
// CHECK-NOT: error
func.func @forward(%x: tensor<2x4xf32>, %w: tensor<4x6xf32>, %b: tensor<6xf32>) -> tensor<2x6xf32> {
  %y = aten.addmm %b, %x, %w {beta = 0.5 : f64} : (tensor<6xf32>, tensor<2x4xf32>, tensor<4x6xf32>) -> tensor<2x6xf32>
  func.return %y : tensor<2x6xf32>
}
