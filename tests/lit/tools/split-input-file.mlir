// RUN: qopt-opt %s --split-input-file --print-weights | filecheck %s
// Each chunk is a module of its own: a resource key used by two chunks keeps its
// name and its blob in both.

// CHECK:       func.func @first
// CHECK:         arith.constant dense_resource<w> : tensor<2xf32>
// CHECK:       w: "0x080000000000803F00000040"
// CHECK:       {{^//[ ]-----$}}
// CHECK:       func.func @second
// CHECK:         arith.constant dense_resource<w> : tensor<2xf32>
// CHECK:       w: "0x080000000000404000008040"
func.func @first() -> tensor<2xf32> {
  %w = arith.constant dense_resource<w> : tensor<2xf32>
  func.return %w : tensor<2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      w: "0x080000000000803F00000040"
    }
  }
#-}

// -----

func.func @second() -> tensor<2xf32> {
  %w = arith.constant dense_resource<w> : tensor<2xf32>
  func.return %w : tensor<2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      w: "0x080000000000404000008040"
    }
  }
#-}
