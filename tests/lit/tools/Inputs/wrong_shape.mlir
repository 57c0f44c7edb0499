func.func @f(%x: tensor<2xf32>) -> tensor<3xf32> {
  %0 = aten.relu %x : (tensor<2xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
