// RUN: qopt-opt %s -p convert-to-coreml --split-input-file --verify-diagnostics | filecheck %s
// RUN: qopt-opt %s -p 'convert-to-coreml{target=iOS16}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=IOS16
// Lowering rules of comparisons, where, select and index_select (the same MIL
// ops on every target).

// A comparison with a 0-d constant, then where: MIL greater + select.
// CHECK-LABEL: func.func @where_gt(
// CHECK:         %[[C:.*]] = coreml.const dense<1.000000e-01> : tensor<f32>
// CHECK-NEXT:    %[[G:.*]] = coreml.greater %x, %[[C]] : (tensor<4x5xf32>, tensor<f32>) -> tensor<4x5xi1>
// CHECK-NEXT:    %[[S:.*]] = coreml.select %[[G]], %x, %y : (tensor<4x5xi1>, tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
// CHECK-NEXT:    func.return %[[S]]
// IOS16-LABEL: func.func @where_gt(
// IOS16-SAME:    attributes {coreml.opset = "iOS16"}
// IOS16:         coreml.greater
// IOS16-NEXT:    coreml.select
func.func @where_gt(%x: tensor<4x5xf32>, %y: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %0 = arith.constant dense<1.000000e-01> : tensor<f32>
  %1 = aten.gt %x, %0 : (tensor<4x5xf32>, tensor<f32>) -> tensor<4x5xi1>
  %2 = aten.where %1, %x, %y : (tensor<4x5xi1>, tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  func.return %2 : tensor<4x5xf32>
}

// -----

// where's branches take the result type: a constant converts at compile time,
// a value gets a cast.
// CHECK-LABEL: func.func @where_mixed(
// CHECK:         %[[Z:.*]] = coreml.const dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[S:.*]] = coreml.select %c, %x, %[[Z]] : (tensor<3xi1>, tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
func.func @where_mixed(%c: tensor<3xi1>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = arith.constant dense<0> : tensor<i64>
  %1 = aten.where %c, %x, %0 : (tensor<3xi1>, tensor<3xf32>, tensor<i64>) -> tensor<3xf32>
  func.return %1 : tensor<3xf32>
}

// -----

// MIL compares two operands of one type (fp16, fp32, int32): int64 becomes
// int32, int against float compares in float, bools compare as int32.
// CHECK-LABEL: func.func @compare_types(%a: tensor<3xi32>, %x: tensor<3xf32>)
// CHECK:         %[[ONE:.*]] = coreml.const dense<1> : tensor<i32>
// CHECK-NEXT:    %[[EQ:.*]] = coreml.equal %a, %[[ONE]] : (tensor<3xi32>, tensor<i32>) -> tensor<3xi1>
// CHECK-NEXT:    %[[AF:.*]] = coreml.cast %a {dtype = "fp32"}
// CHECK-NEXT:    %[[LT:.*]] = coreml.less %x, %[[AF]] : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
// CHECK-NEXT:    %[[E32:.*]] = coreml.cast %[[EQ]] {dtype = "int32"}
// CHECK-NEXT:    %[[L32:.*]] = coreml.cast %[[LT]] {dtype = "int32"}
// CHECK-NEXT:    %[[NE:.*]] = coreml.not_equal %[[E32]], %[[L32]]
// CHECK-NEXT:    %[[GE:.*]] = coreml.greater_equal %x, %x
// CHECK-NEXT:    %[[LE:.*]] = coreml.less_equal %x, %x
func.func @compare_types(%a: tensor<3xi64>, %x: tensor<3xf32>) -> (tensor<3xi1>, tensor<3xi1>, tensor<3xi1>) {
  %0 = arith.constant dense<1> : tensor<i64>
  %1 = aten.eq %a, %0 : (tensor<3xi64>, tensor<i64>) -> tensor<3xi1>
  %2 = aten.lt %x, %a : (tensor<3xf32>, tensor<3xi64>) -> tensor<3xi1>
  %3 = aten.ne %1, %2 : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  %4 = aten.ge %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
  %5 = aten.le %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
  func.return %3, %4, %5 : tensor<3xi1>, tensor<3xi1>, tensor<3xi1>
}

// -----

// select: the index (here -1) taken as [i, i + 1) with squeeze_mask on its dim.
// CHECK-LABEL: func.func @select(
// CHECK:         %[[S:.*]] = coreml.slice_by_index %x {begin = array<i64: 0, 0, 4>, end = array<i64: 2, 4, 5>, stride = array<i64: 1, 1, 1>, squeeze_mask = array<i1: false, false, true>} : (tensor<2x4x5xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %[[S]]
// IOS16-LABEL: func.func @select(
// IOS16:         coreml.slice_by_index %x {{.*}}squeeze_mask = array<i1: false, false, true>
func.func @select(%x: tensor<2x4x5xf32>) -> tensor<2x4xf32> {
  %0 = aten.select %x {dim = 2 : i64, index = -1 : i64} : (tensor<2x4x5xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}

// -----

// index_select is gather on the dim: constant indices become an int32 constant,
// run-time ones (int64 arguments) int32 arguments.
// CHECK-LABEL: func.func @index_select(%x: tensor<4x5xf32>, %i: tensor<2xi32>) -> tensor<2x3xf32>
// CHECK:         %[[I:.*]] = coreml.const dense<[3, 0, 2]> : tensor<3xi32>
// CHECK-NEXT:    %[[G:.*]] = coreml.gather %x, %[[I]] {axis = 1 : i64} : (tensor<4x5xf32>, tensor<3xi32>) -> tensor<4x3xf32>
// CHECK-NEXT:    %[[R:.*]] = coreml.gather %[[G]], %i {axis = 0 : i64} : (tensor<4x3xf32>, tensor<2xi32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[R]]
func.func @index_select(%x: tensor<4x5xf32>, %i: tensor<2xi64>) -> tensor<2x3xf32> {
  %0 = arith.constant dense<[3, 0, 2]> : tensor<3xi64>
  %1 = aten.index_select %x, %0 {dim = 1 : i64} : (tensor<4x5xf32>, tensor<3xi64>) -> tensor<4x3xf32>
  %2 = aten.index_select %1, %i {dim = 0 : i64} : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  func.return %2 : tensor<2x3xf32>
}

// -----

// A 0-d run-time index becomes a [1] index (the dim keeps size 1).
// CHECK-LABEL: func.func @index_select_scalar(
// CHECK:         %[[I:.*]] = coreml.reshape %i {shape = array<i64: 1>} : (tensor<i32>) -> tensor<1xi32>
// CHECK-NEXT:    coreml.gather %x, %[[I]] {axis = 1 : i64} : (tensor<4x5xf32>, tensor<1xi32>) -> tensor<4x1xf32>
func.func @index_select_scalar(%x: tensor<4x5xf32>, %i: tensor<i64>) -> tensor<4x1xf32> {
  %0 = aten.index_select %x, %i {dim = -1 : i64} : (tensor<4x5xf32>, tensor<i64>) -> tensor<4x1xf32>
  func.return %0 : tensor<4x1xf32>
}

// -----

// CHECK: 'aten.index_select': index 7 (1 in all) is out of range for dim 1 of size 5
// IOS16: 'aten.index_select': index 7 (1 in all) is out of range for dim 1 of size 5
func.func @index_out_of_range(%x: tensor<4x5xf32>) -> tensor<4x2xf32> {
  %0 = arith.constant dense<[0, 7]> : tensor<2xi64>
  %1 = aten.index_select %x, %0 {dim = 1 : i64} : (tensor<4x5xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  func.return %1 : tensor<4x2xf32>
}
