// RUN: qopt-opt %s -p convert-to-vkc --print-debuginfo | filecheck %s
// Every vkc op a rule builds carries the location of the op it lowers (the user's
// source line from the frontend), so vkc-level errors and a status buffer's `what`
// name the user's file and line. Inputs take the function's location and outputs
// the return's; a kernel symbol takes the location of the op that first needs it,
// and a barrier the location of the dispatch that waits at it.

// CHECK:       vkc.kernel @matmul_0 {{.*}} loc("model.py":12:5)
// CHECK:       vkc.kernel @gather_rows_0 {{.*}} loc("model.py":13:7)
// CHECK:       vkc.kernel @unary_0 {{.*}} loc("model.py":13:20)
// CHECK-LABEL: func.func @forward
// CHECK:         vkc.input %x {{.*}} loc("model.py":10:1)
// CHECK:         vkc.constant {{.*}} loc("model.py":12:5)
// CHECK:         vkc.alloc {slot = 0 : i64} : !vkc.buffer<2x3xf32> loc("model.py":12:5)
// CHECK:         vkc.dispatch @matmul_0({{.*}} loc("model.py":12:5)
// CHECK:         vkc.constant {{.*}} : !vkc.buffer<5x3xf32> loc("model.py":13:7)
// CHECK:         vkc.alloc {status, what = "'aten.embedding' at model.py:13"} : !vkc.buffer<1xui32> loc("model.py":13:7)
// CHECK:         vkc.dispatch @gather_rows_0({{.*}} loc("model.py":13:7)
// CHECK:         vkc.barrier loc("model.py":13:20)
// CHECK:         vkc.dispatch @unary_0({{.*}} loc("model.py":13:20)
// CHECK:         vkc.output {{.*}} loc("model.py":14:3)
// CHECK:         func.return {{.*}} loc("model.py":14:3)
func.func @forward(%x: tensor<2x4xf32>, %ids: tensor<2xi64>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %w = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [0.5, 0.5, 0.5, 0.5], [-1.0, 0.0, 1.0, 0.0]]> : tensor<3x4xf32> loc("model.py":11:3)
  %y = aten.linear %x, %w : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32> loc("model.py":12:5)
  %t = arith.constant dense<1.5> : tensor<5x3xf32> loc("model.py":11:9)
  %e = aten.embedding %t, %ids : (tensor<5x3xf32>, tensor<2xi64>) -> tensor<2x3xf32> loc("model.py":13:7)
  %r = aten.relu %e : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("model.py":13:20)
  func.return %y, %r : tensor<2x3xf32>, tensor<2x3xf32> loc("model.py":14:3)
} loc("model.py":10:1)
