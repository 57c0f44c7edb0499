// An aten.relu on int8: no CoreML lowering (promotion_and_gqa.mlir checks the error).
func.func @relu_i8(%x: tensor<2x3xi8>) -> tensor<2x3xi8> {
  %r = aten.relu %x : (tensor<2x3xi8>) -> tensor<2x3xi8>
  func.return %r : tensor<2x3xi8>
}
