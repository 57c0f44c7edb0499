// RUN: qopt-opt %s -p convert-to-vkc | filecheck %s
// RUN: qopt-opt %s -p convert-to-vkc --print-weights -o %t.vkc.mlir
// RUN: %python -c "import numpy as np; np.savez('%t.ok.npz', np.array([2]), np.ones((1, 2), np.float32))"
// RUN: qopt-run %t.vkc.mlir --inputs %t.ok.npz | filecheck %s --check-prefix=OK
// RUN: qopt-run %s --inputs %t.ok.npz | filecheck %s --check-prefix=OK
// RUN: %python -c "import numpy as np; np.savez('%t.bad.npz', np.array([3]), np.ones((1, 2), np.float32))"
// RUN: not qopt-run %t.vkc.mlir --inputs %t.bad.npz 2>&1 | filecheck %s --check-prefix=BAD
// RUN: not qopt-run %s --inputs %t.bad.npz 2>&1 | filecheck %s --check-prefix=BAD-REF
// RUN: qopt-opt %s -p convert-to-coreml | filecheck %s --check-prefix=COREML
// ExecuTorch's dynamic-shape cache write, `cache.narrow(0, pos, 1).copy_(x)` after
// `pos = input_pos[0].item(); torch._check(pos < 3)`: the item is its 0-d input, the
// window of static length L at run-time start s the indices s + arange(L)
// (index_copy / index_select: scatter_dim, gather_rows), the check an assert_true
// dispatch whose status names it (the reference interpreter raises the same check).

// CHECK:       vkc.kernel @assert_true_0 {kernel = "assert_true"
// CHECK-LABEL: func.func @forward(
// CHECK:         %[[C:.*]] = vkc.alloc {status, what = "'aten.assert_scalar' at model.py:7 ('u0 < 3')"} : !vkc.buffer<1xui32>
// CHECK:         vkc.dispatch @assert_true_0(%{{.*}}, %[[C]])
// CHECK:         vkc.dispatch @scatter_dim_
// CHECK:         vkc.dispatch @gather_rows_
// CHECK:         func.return

// OK: arr_0: shape [2, 2] float32 min=1 max=2

// BAD: 'aten.assert_scalar' at model.py:7 ('u0 < 3'): a run-time check recorded at export failed
// BAD-REF: the value is 3, outside the range [0, 2] the exported program asserts for it

// COREML-LABEL: func.func @forward(
// COREML-NOT:     assert
// COREML:         coreml.scatter
// COREML:         coreml.gather
func.func @forward(%p: tensor<1xi64>, %x: tensor<1x2xf32>) -> tensor<2x2xf32> {
  %cache = arith.constant dense<0.0> : tensor<4x2xf32>
  %s0 = aten.select %p {dim = 0 : i64, index = 0 : i64} : (tensor<1xi64>) -> tensor<i64> loc("model.py":6:0)
  %s = aten.item %s0 {range = array<i64: 0, 2>} : (tensor<i64>) -> tensor<i64> loc("model.py":6:0)
  %three = arith.constant dense<3> : tensor<i64>
  %ok = aten.lt %s, %three : (tensor<i64>, tensor<i64>) -> tensor<i1> loc("model.py":7:0)
  aten.assert_scalar %ok {message = "u0 < 3"} : tensor<i1> loc("model.py":7:0)
  %c = aten.dynamic_update_slice %cache, %x, %s {dim = 0 : i64} : (tensor<4x2xf32>, tensor<1x2xf32>, tensor<i64>) -> tensor<4x2xf32> loc("model.py":8:0)
  %ones = arith.constant dense<1.0> : tensor<4x2xf32>
  %d = aten.add %c, %ones : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %w = aten.dynamic_slice %d, %s {dim = 0 : i64} : (tensor<4x2xf32>, tensor<i64>) -> tensor<2x2xf32> loc("model.py":9:0)
  func.return %w : tensor<2x2xf32>
}
