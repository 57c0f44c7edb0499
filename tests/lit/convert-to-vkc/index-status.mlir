// RUN: qopt-opt %s -p convert-to-vkc | filecheck %s
// RUN: qopt-opt %s -p convert-to-vkc --print-weights -o %t.vkc.mlir
// RUN: %python -c "import numpy as np; np.savez('%t.ok.npz', np.ones((5, 4), np.float32), np.array([[0, 4, 2]]), np.array([1, 3]))"
// RUN: qopt-run %t.vkc.mlir --inputs %t.ok.npz | filecheck %s --check-prefix=OK
// RUN: %python -c "import numpy as np; np.savez('%t.bad.npz', np.ones((5, 4), np.float32), np.array([[0, 4, 2]]), np.array([1, 5]))"
// RUN: not qopt-run %t.vkc.mlir --inputs %t.bad.npz 2>&1 | filecheck %s --check-prefix=BAD
// RUN: %python -c "import numpy as np; np.savez('%t.neg.npz', np.ones((5, 4), np.float32), np.array([[0, -1, 2]]), np.array([1, 3]))"
// RUN: not qopt-run %t.vkc.mlir --inputs %t.neg.npz 2>&1 | filecheck %s --check-prefix=NEG
// Index status: every dispatch of a kernel that indexes a table with values read
// from a buffer (gather_rows, the embeddings) gets its own one-word status buffer,
// `vkc.alloc {status}` naming the op and its location, never placed in a memory
// slot; the kernel sets it for an index out of range, and running the program is
// then an error naming that op (here the vkc interpreter, as the device does).

// CHECK:       vkc.kernel @gather_rows_0 {kernel = "gather_rows", {{.*}}bindings = [#vkc.binding<"table", f32>, #vkc.binding<"idx", i32>, #vkc.binding<"y", f32, write>, #vkc.binding<"status", ui32, write>], push = [#vkc.push<"n", ui32>, #vkc.push<"D", ui32>, #vkc.push<"V", ui32>]}
// CHECK-LABEL: func.func @forward(
// CHECK-SAME:    attributes {vkc.planned_bytes = 80 : i64, vkc.unplanned_bytes = 80 : i64}
// CHECK:         %[[T:.*]] = vkc.input %table
// CHECK:         %[[I:.*]] = vkc.input %ids
// CHECK:         %[[R:.*]] = vkc.input %rows
// CHECK:         %[[E:.*]] = vkc.alloc {slot = 0 : i64} : !vkc.buffer<1x3x4xf32>
// CHECK-NEXT:    %[[ES:.*]] = vkc.alloc {status, what = "'aten.embedding' at model.py:12"} : !vkc.buffer<1xui32>
// CHECK-NEXT:    vkc.dispatch @gather_rows_0(%[[T]], %[[I]], %[[E]], %[[ES]]) {push = {n = 3 : i64, D = 4 : i64, V = 5 : i64}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<5x4xf32>, !vkc.buffer<1x3xi32>, !vkc.buffer<1x3x4xf32>, !vkc.buffer<1xui32>
// CHECK-NEXT:    %[[S:.*]] = vkc.alloc {slot = 1 : i64} : !vkc.buffer<2x4xf32>
// CHECK-NEXT:    %[[SS:.*]] = vkc.alloc {status, what = "'aten.index_select' at model.py:13"} : !vkc.buffer<1xui32>
// CHECK-NEXT:    vkc.dispatch @gather_rows_0(%[[T]], %[[R]], %[[S]], %[[SS]])
// CHECK-NOT:     status
// CHECK:         func.return

// OK: arr_0: shape [1, 3, 4] float32 min=1 max=1
// OK: arr_1: shape [2, 4] float32 min=1 max=1
// BAD: qopt-run: error: 'aten.index_select' at model.py:13: an index was out of range (Vulkan step 1, kernel gather_rows); check the inputs (token ids must be below the vocabulary size)
// (a negative token id is out of range too, as in torch)
// NEG: qopt-run: error: 'aten.embedding' at model.py:12: an index was out of range (Vulkan step 0, kernel gather_rows); check the inputs (token ids must be below the vocabulary size)

func.func @forward(%table: tensor<5x4xf32>, %ids: tensor<1x3xi64>, %rows: tensor<2xi64>) -> (tensor<1x3x4xf32>, tensor<2x4xf32>) {
  %e = aten.embedding %table, %ids : (tensor<5x4xf32>, tensor<1x3xi64>) -> tensor<1x3x4xf32> loc("model.py":12:8)
  %s = aten.index_select %table, %rows {dim = 0 : i64} : (tensor<5x4xf32>, tensor<2xi64>) -> tensor<2x4xf32> loc("model.py":13:8)
  func.return %e, %s : tensor<1x3x4xf32>, tensor<2x4xf32>
}
