// RUN: qopt-opt %s | qopt-opt | filecheck %s
// RUN: qopt-opt %s --print-op-generic | qopt-opt | filecheck %s
// Round trip of the run-time scalar family (qopt/dialects/aten/scalar.py), the
// dynamic slices (qopt/dialects/aten/indexing.py) and dynamic (`?`) dims with their
// symbols (qopt/dialects/signature.py).

// CHECK-LABEL: func.func @scalars(
// CHECK-NEXT:    %[[P:.*]] = aten.select %{{.*}} {dim = 0 : i64, index = 0 : i64} : (tensor<3xi64>) -> tensor<i64>
// CHECK-NEXT:    %[[S:.*]] = aten.item %[[P]] {range = array<i64: 0, 37>} : (tensor<i64>) -> tensor<i64>
// CHECK-NEXT:    %{{.*}} = aten.item %{{.*}} : (tensor<1xf32>) -> tensor<f32>
// CHECK-NEXT:    %[[C:.*]] = arith.constant dense<40> : tensor<i64>
// CHECK-NEXT:    %[[OK:.*]] = aten.lt %[[S]], %[[C]] : (tensor<i64>, tensor<i64>) -> tensor<i1>
// CHECK-NEXT:    aten.assert_scalar %[[OK]] {message = "u0 < 40"} : tensor<i1>
// CHECK-NEXT:    aten.assert_scalar %[[OK]] : tensor<i1>
// CHECK-NEXT:    %{{.*}} = aten.div %[[S]], %[[C]] {rounding_mode = "floor"} : (tensor<i64>, tensor<i64>) -> tensor<i64>
// CHECK-NEXT:    %[[ROWS:.*]] = aten.dynamic_slice %{{.*}}, %[[S]] {dim = 0 : i64} : (tensor<40x8xf32>, tensor<i64>) -> tensor<3x8xf32>
// CHECK-NEXT:    %{{.*}} = aten.dynamic_update_slice %{{.*}}, %[[ROWS]], %[[S]] {dim = 0 : i64} : (tensor<40x8xf32>, tensor<3x8xf32>, tensor<i64>) -> tensor<40x8xf32>
func.func @scalars(%pos: tensor<3xi64>, %f: tensor<1xf32>, %table: tensor<40x8xf32>) -> tensor<40x8xf32> {
  %p = aten.select %pos {dim = 0 : i64, index = 0 : i64} : (tensor<3xi64>) -> tensor<i64>
  %s = aten.item %p {range = array<i64: 0, 37>} : (tensor<i64>) -> tensor<i64>
  %g = aten.item %f : (tensor<1xf32>) -> tensor<f32>
  %c = arith.constant dense<40> : tensor<i64>
  %ok = aten.lt %s, %c : (tensor<i64>, tensor<i64>) -> tensor<i1>
  aten.assert_scalar %ok {message = "u0 < 40"} : tensor<i1>
  aten.assert_scalar %ok : tensor<i1>
  %q = aten.div %s, %c {rounding_mode = "floor"} : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %rows = aten.dynamic_slice %table, %s {dim = 0 : i64} : (tensor<40x8xf32>, tensor<i64>) -> tensor<3x8xf32>
  %new = aten.dynamic_update_slice %table, %rows, %s {dim = 0 : i64} : (tensor<40x8xf32>, tensor<3x8xf32>, tensor<i64>) -> tensor<40x8xf32>
  func.return %new : tensor<40x8xf32>
}

// A bounded dynamic length: `?` dims, the symbol's range on the function, each
// argument's dims' symbols, and the run-time length read with aten.sym_size.
// CHECK-LABEL: func.func @prefill(
// CHECK-SAME:    %{{.*}}: tensor<1x?xi64> {qopt.dims = ["", "s0"]}, %{{.*}}: tensor<?xi64> {qopt.dims = ["s0"]}, %{{.*}}: tensor<1x?x8xf32> {qopt.dims = ["", "s0", ""]}, %{{.*}}: tensor<40x40xf32>)
// CHECK-SAME:    -> tensor<1x2x40x4xf32> attributes {qopt.symbols = {s0 = array<i64: 1, 31>}}
// CHECK-NEXT:    %[[N:.*]] = aten.sym_size %{{.*}} {dim = 1 : i64, range = array<i64: 1, 31>} : (tensor<1x?xi64>) -> tensor<i64>
// CHECK-NEXT:    %[[P:.*]] = aten.select %{{.*}} {dim = 0 : i64, index = 0 : i64} : (tensor<?xi64>) -> tensor<i64>
// CHECK-NEXT:    %[[S:.*]] = aten.item %[[P]] {range = array<i64: 0, 38>} : (tensor<i64>) -> tensor<i64>
// CHECK-NEXT:    %{{.*}} = aten.dynamic_slice %{{.*}}, %[[S]], %[[N]] {dim = 0 : i64} : (tensor<40x40xf32>, tensor<i64>, tensor<i64>) -> tensor<?x40xf32>
// CHECK-NEXT:    %[[K:.*]] = aten.view %{{.*}} : (tensor<1x?x8xf32>) -> tensor<1x?x2x4xf32>
// CHECK-NEXT:    %[[T:.*]] = aten.transpose %[[K]] {dim0 = 1 : i64, dim1 = 2 : i64} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
// CHECK-NEXT:    %[[Z:.*]] = aten.full {value = 0.000000e+00 : f64} : tensor<1x2x40x4xf32>
// CHECK-NEXT:    %{{.*}} = aten.dynamic_update_slice %[[Z]], %[[T]], %[[S]] {dim = 2 : i64} : (tensor<1x2x40x4xf32>, tensor<1x2x?x4xf32>, tensor<i64>) -> tensor<1x2x40x4xf32>
func.func @prefill(%tokens: tensor<1x?xi64> {qopt.dims = ["", "s0"]}, %input_pos: tensor<?xi64> {qopt.dims = ["s0"]}, %k: tensor<1x?x8xf32> {qopt.dims = ["", "s0", ""]}, %mask: tensor<40x40xf32>) -> tensor<1x2x40x4xf32> attributes {qopt.symbols = {s0 = array<i64: 1, 31>}} {
  %n = aten.sym_size %tokens {dim = 1 : i64, range = array<i64: 1, 31>} : (tensor<1x?xi64>) -> tensor<i64>
  %p = aten.select %input_pos {dim = 0 : i64, index = 0 : i64} : (tensor<?xi64>) -> tensor<i64>
  %s = aten.item %p {range = array<i64: 0, 38>} : (tensor<i64>) -> tensor<i64>
  %rows = aten.dynamic_slice %mask, %s, %n {dim = 0 : i64} : (tensor<40x40xf32>, tensor<i64>, tensor<i64>) -> tensor<?x40xf32>
  %heads = aten.view %k : (tensor<1x?x8xf32>) -> tensor<1x?x2x4xf32>
  %t = aten.transpose %heads {dim0 = 1 : i64, dim1 = 2 : i64} : (tensor<1x?x2x4xf32>) -> tensor<1x2x?x4xf32>
  %cache = aten.full {value = 0.0 : f64} : tensor<1x2x40x4xf32>
  %new = aten.dynamic_update_slice %cache, %t, %s {dim = 2 : i64} : (tensor<1x2x40x4xf32>, tensor<1x2x?x4xf32>, tensor<i64>) -> tensor<1x2x40x4xf32>
  func.return %new : tensor<1x2x40x4xf32>
}

// A size used as a value: `x.reshape(-1) * x.numel()` and `torch.full_like(x,
// x.shape[0])` at a `?` dim (flattening a `?` dim into one `?`, a 0-d run-time
// fill broadcast by aten.expand), and the unflatten back.
// CHECK-LABEL: func.func @sizes_as_values(
// CHECK-NEXT:    %[[N:.*]] = aten.sym_size %{{.*}} {dim = 0 : i64} : (tensor<?x4xf32>) -> tensor<i64>
// CHECK-NEXT:    %[[FLAT:.*]] = aten.view %{{.*}} : (tensor<?x4xf32>) -> tensor<?xf32>
// CHECK-NEXT:    %[[BACK:.*]] = aten.view %[[FLAT]] : (tensor<?xf32>) -> tensor<?x2xf32>
// CHECK-NEXT:    %[[F:.*]] = aten.to %[[N]] : (tensor<i64>) -> tensor<f32>
// CHECK-NEXT:    %{{.*}} = aten.expand %[[F]] : (tensor<f32>) -> tensor<8x4xf32>
func.func @sizes_as_values(%x: tensor<?x4xf32> {qopt.dims = ["s0", ""]}) -> tensor<8x4xf32> attributes {qopt.symbols = {s0 = array<i64: 1, 8>}} {
  %n = aten.sym_size %x {dim = 0 : i64} : (tensor<?x4xf32>) -> tensor<i64>
  %flat = aten.view %x : (tensor<?x4xf32>) -> tensor<?xf32>
  %back = aten.view %flat : (tensor<?xf32>) -> tensor<?x2xf32>
  %f = aten.to %n : (tensor<i64>) -> tensor<f32>
  %full = aten.expand %f : (tensor<f32>) -> tensor<8x4xf32>
  func.return %full : tensor<8x4xf32>
}
