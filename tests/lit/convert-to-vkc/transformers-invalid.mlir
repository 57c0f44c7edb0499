// RUN: not qopt-opt %s -p convert-to-vkc 2>&1 | filecheck %s
// addmm outside the matmul kernel's bias form is refused with what to do.
// CHECK: qopt-opt: error: convert-to-vkc: 'aten.addmm': addmm with beta=0.5, alpha=1.0 and a [6] input; use beta = alpha = 1 and a bias of shape [N] (or write mm + add)
func.func @forward(%x: tensor<2x4xf32>, %w: tensor<4x6xf32>, %b: tensor<6xf32>) -> tensor<2x6xf32> {
  %y = aten.addmm %b, %x, %w {beta = 0.5 : f64} : (tensor<6xf32>, tensor<2x4xf32>, tensor<4x6xf32>) -> tensor<2x6xf32>
  func.return %y : tensor<2x6xf32>
}
