// RUN: qopt-opt %s | qopt-opt | filecheck %s
// RUN: qopt-opt %s --print-op-generic | qopt-opt | filecheck %s
// Round trip of every op of the aten shape family (qopt/dialects/aten/shape.py).

// CHECK-LABEL: func.func @views(
// CHECK-NEXT:    %{{.*}} = aten.view %{{.*}} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT:    %{{.*}} = aten.unsqueeze %{{.*}} {dim = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4x1xf32>
// CHECK-NEXT:    %{{.*}} = aten.squeeze %{{.*}} {dims = array<i64: 0, 2>} : (tensor<1x3x1xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %{{.*}} = aten.permute %{{.*}} {dims = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    %{{.*}} = aten.transpose %{{.*}} {dim0 = 0 : i64, dim1 = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
// CHECK-NEXT:    %{{.*}} = aten.expand %{{.*}} : (tensor<1x3x1xf32>) -> tensor<5x2x3x4xf32>
// CHECK-NEXT:    %{{.*}} = aten.repeat %{{.*}} {repeats = array<i64: 2, 2, 1, 3>} : (tensor<1x3x1xf32>) -> tensor<2x2x3x3xf32>
// CHECK-NEXT:    %{{.*}} = aten.repeat_interleave %{{.*}} {repeats = 2 : i64, dim = -2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x6x4xf32>
// CHECK-NEXT:    %{{.*}} = aten.repeat_interleave %{{.*}} {repeats = 3 : i64} : (tensor<1x3x1xf32>) -> tensor<9xf32>
// CHECK-NEXT:    %{{.*}} = aten.flip %{{.*}} {dims = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %{{.*}} = aten.roll %{{.*}} {shifts = array<i64: 1, -2>, dims = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
func.func @views(%x: tensor<2x3x4xf32>, %y: tensor<1x3x1xf32>) -> tensor<6x4xf32> {
  %0 = aten.view %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = aten.unsqueeze %x {dim = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4x1xf32>
  %2 = aten.squeeze %y {dims = array<i64: 0, 2>} : (tensor<1x3x1xf32>) -> tensor<3xf32>
  %3 = aten.permute %x {dims = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %4 = aten.transpose %x {dim0 = 0 : i64, dim1 = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  %5 = aten.expand %y : (tensor<1x3x1xf32>) -> tensor<5x2x3x4xf32>
  %6 = aten.repeat %y {repeats = array<i64: 2, 2, 1, 3>} : (tensor<1x3x1xf32>) -> tensor<2x2x3x3xf32>
  %r0 = aten.repeat_interleave %x {repeats = 2 : i64, dim = -2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x6x4xf32>
  %r1 = aten.repeat_interleave %y {repeats = 3 : i64} : (tensor<1x3x1xf32>) -> tensor<9xf32>
  %7 = aten.flip %x {dims = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %8 = aten.roll %x {shifts = array<i64: 1, -2>, dims = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %0 : tensor<6x4xf32>
}

// CHECK-LABEL: func.func @slicing(
// CHECK-NEXT:    %{{.*}} = aten.slice %{{.*}} {dim = 2 : i64, start = 1 : i64, end = 9223372036854775807 : i64, step = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>
// CHECK-NEXT:    %{{.*}} = aten.select %{{.*}} {dim = 1 : i64, index = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
func.func @slicing(%x: tensor<2x3x4xf32>) -> tensor<2x3x2xf32> {
  %0 = aten.slice %x {dim = 2 : i64, start = 1 : i64, end = 9223372036854775807 : i64, step = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>
  %1 = aten.select %x {dim = 1 : i64, index = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x3x2xf32>
}

// CHECK-LABEL: func.func @joins(
// CHECK-NEXT:    %{{.*}} = aten.cat %{{.*}}, %{{.*}} {dim = 2 : i64} : (tensor<2x3x4xf32>, tensor<2x3x1xi64>) -> tensor<2x3x5xf32>
// CHECK-NEXT:    %{{.*}} = aten.stack %{{.*}}, %{{.*}} {dim = -1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4x2xf32>
// CHECK-NEXT:    %{{.*}}, %{{.*}} = aten.split %{{.*}} {sizes = array<i64: 1, 3>, dim = 2 : i64} : (tensor<2x3x4xf32>) -> (tensor<2x3x1xf32>, tensor<2x3x3xf32>)
func.func @joins(%x: tensor<2x3x4xf32>, %y: tensor<2x3x1xi64>) -> tensor<2x3x5xf32> {
  %0 = aten.cat %x, %y {dim = 2 : i64} : (tensor<2x3x4xf32>, tensor<2x3x1xi64>) -> tensor<2x3x5xf32>
  %1 = aten.stack %x, %x {dim = -1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4x2xf32>
  %2, %3 = aten.split %x {sizes = array<i64: 1, 3>, dim = 2 : i64} : (tensor<2x3x4xf32>) -> (tensor<2x3x1xf32>, tensor<2x3x3xf32>)
  func.return %0 : tensor<2x3x5xf32>
}

// CHECK-LABEL: func.func @misc(
// CHECK-NEXT:    %{{.*}} = aten.tril %{{.*}} {diagonal = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %{{.*}} = aten.triu %{{.*}} {diagonal = 1 : i64} : (tensor<3x4xi1>) -> tensor<3x4xi1>
// CHECK-NEXT:    %{{.*}} = aten.constant_pad_nd %{{.*}} {pad = array<i64: 1, 2, 0, -1>, value = -1.500000e+00 : f64} : (tensor<2x3x4xf32>) -> tensor<2x2x7xf32>
// CHECK-NEXT:    %{{.*}} = aten.diff %{{.*}} {n = 2 : i64, dim = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>
// CHECK-NEXT:    %{{.*}} = aten.cumsum %{{.*}} {dim = 0 : i64} : (tensor<3x4xi1>) -> tensor<3x4xi64>
func.func @misc(%x: tensor<2x3x4xf32>, %b: tensor<3x4xi1>) -> tensor<2x3x4xf32> {
  %0 = aten.tril %x {diagonal = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %1 = aten.triu %b {diagonal = 1 : i64} : (tensor<3x4xi1>) -> tensor<3x4xi1>
  %2 = aten.constant_pad_nd %x {pad = array<i64: 1, 2, 0, -1>, value = -1.500000e+00 : f64} : (tensor<2x3x4xf32>) -> tensor<2x2x7xf32>
  %3 = aten.diff %x {n = 2 : i64, dim = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>
  %4 = aten.cumsum %b {dim = 0 : i64} : (tensor<3x4xi1>) -> tensor<3x4xi64>
  func.return %0 : tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @creation(
// CHECK-NEXT:    %{{.*}} = aten.arange {start = 1.000000e+00 : f64, end = 2.000000e+00 : f64, step = 3.000000e-01 : f64} : tensor<4xf32>
// CHECK-NEXT:    %{{.*}} = aten.arange {start = 10 : i64, end = 0 : i64, step = -3 : i64} : tensor<4xi64>
// CHECK-NEXT:    %{{.*}} = aten.full {value = 0xfff0000000000000 : f64} : tensor<2x2xf32>
// CHECK-NEXT:    %{{.*}} = aten.full {value = -9223372036854775808 : i64} : tensor<3xi64>
// CHECK-NEXT:    %{{.*}} = aten.full {value = 1 : i64} : tensor<i1>
func.func @creation() -> tensor<4xf32> {
  %0 = aten.arange {start = 1.000000e+00 : f64, end = 2.000000e+00 : f64, step = 3.000000e-01 : f64} : tensor<4xf32>
  %1 = aten.arange {start = 10 : i64, end = 0 : i64, step = -3 : i64} : tensor<4xi64>
  %2 = aten.full {value = 0xFFF0000000000000 : f64} : tensor<2x2xf32>
  %3 = aten.full {value = -9223372036854775808 : i64} : tensor<3xi64>
  %4 = aten.full {value = 1 : i64} : tensor<i1>
  func.return %0 : tensor<4xf32>
}
