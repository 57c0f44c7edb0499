func.func @rank6_sum(%x: tensor<4x6xf32>) -> tensor<1x2x1x3x2xf32> {
  %y = aten.view %x : (tensor<4x6xf32>) -> tensor<1x2x1x3x2x2xf32>
  %s = aten.sum %y {dims = array<i64: -1>} : (tensor<1x2x1x3x2x2xf32>) -> tensor<1x2x1x3x2xf32>
  func.return %s : tensor<1x2x1x3x2xf32>
}
