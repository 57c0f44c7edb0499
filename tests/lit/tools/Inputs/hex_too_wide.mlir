// A hexadecimal float literal wider than its element type (hex-float-literal.mlir).
builtin.module {
  func.func @f() -> tensor<f32> {
    %0 = arith.constant dense<0x1ff800000> : tensor<f32>
    func.return %0 : tensor<f32>
  }
}
