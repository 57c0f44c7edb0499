// A hexadecimal element of a float dense literal is the element's bit pattern, as in
// MLIR: xDSL's printer writes -inf and NaN that way, and parsing the text back must
// give the same values (xDSL 0.75's parser alone reads 0xff800000 as 4286578688.0).
// (bf16 and f64: tests/unit/test_weight_store.py.) Printing and re-parsing is the identity; qopt-run gives the values themselves.
// RUN: qopt-opt %s | filecheck %s
// RUN: qopt-opt %s | qopt-opt | filecheck %s
// RUN: %python -c "import numpy as np; np.savez('%t.in.npz')"
// RUN: qopt-run %s --inputs %t.in.npz --outputs %t.out.npz
// RUN: %python -c "import numpy as np; o = np.load('%t.out.npz'); print([(k, o[k].tolist()) for k in sorted(o.files)])" | filecheck %s --check-prefix=VALUES
// RUN: not qopt-opt %S/Inputs/hex_too_wide.mlir 2>&1 | filecheck %s --check-prefix=WIDE

// CHECK:      dense<[0xff800000, 0x7f800000, 1.000000e+00]> : tensor<3xf32>
// CHECK-NEXT: dense<0xff800000> : tensor<f32>
// CHECK-NEXT: dense<[0xfc00, 2.000000e+00]> : tensor<2xf16>
// CHECK-NEXT: dense<[16, 3]> : tensor<2xi32>

// VALUES: -inf, inf, 1.0
// VALUES-SAME: -inf
// VALUES-SAME: -inf, 2.0

// WIDE: hex_too_wide.mlir:{{[0-9]+}}:{{[0-9]+}}: the hexadecimal literal 0x1ff800000 is wider than its element type f32

builtin.module {
  func.func @f() -> (tensor<3xf32>, tensor<f32>, tensor<2xf16>, tensor<2xi32>) {
    %0 = arith.constant dense<[0xff800000, 0x7f800000, 1.0]> : tensor<3xf32>
    %1 = arith.constant dense<0xFF800000> : tensor<f32>
    %2 = arith.constant dense<[0xfc00, 2.0]> : tensor<2xf16>
    %3 = arith.constant dense<[0x10, 3]> : tensor<2xi32>
    func.return %0, %1, %2, %3 : tensor<3xf32>, tensor<f32>, tensor<2xf16>, tensor<2xi32>
  }
}
