// RUN: qopt-opt %s | qopt-opt | filecheck %s
// RUN: qopt-opt %s --print-op-generic | qopt-opt | filecheck %s
// Round trip of every op of the aten indexing family (qopt/dialects/aten/indexing.py).

// CHECK-LABEL: func.func @indexing(
// CHECK-NEXT:    %{{.*}} = aten.index %{{.*}}, %{{.*}}, %{{.*}} {indexed_dims = array<i64: 0, 2>} : (tensor<2x3x4xf32>, tensor<2x2xi64>, tensor<2x2xi64>) -> tensor<2x2x3xf32>
// CHECK-NEXT:    %{{.*}} = aten.index %{{.*}}, %{{.*}} {indexed_dims = array<i64: 1>} : (tensor<2x3x4xf32>, tensor<2x2xi64>) -> tensor<2x2x2x4xf32>
// CHECK-NEXT:    %{{.*}} = aten.index_select %{{.*}}, %{{.*}} {dim = 2 : i64} : (tensor<2x3x4xf32>, tensor<3xi32>) -> tensor<2x3x3xf32>
// CHECK-NEXT:    %{{.*}} = aten.gather %{{.*}}, %{{.*}} {dim = 0 : i64} : (tensor<2x3x4xf32>, tensor<1x2x4xi64>) -> tensor<1x2x4xf32>
func.func @indexing(%x: tensor<2x3x4xf32>, %i: tensor<2x2xi64>, %j: tensor<3xi32>, %g: tensor<1x2x4xi64>) -> tensor<2x2x3xf32> {
  %0 = aten.index %x, %i, %i {indexed_dims = array<i64: 0, 2>} : (tensor<2x3x4xf32>, tensor<2x2xi64>, tensor<2x2xi64>) -> tensor<2x2x3xf32>
  %1 = aten.index %x, %i {indexed_dims = array<i64: 1>} : (tensor<2x3x4xf32>, tensor<2x2xi64>) -> tensor<2x2x2x4xf32>
  %2 = aten.index_select %x, %j {dim = 2 : i64} : (tensor<2x3x4xf32>, tensor<3xi32>) -> tensor<2x3x3xf32>
  %3 = aten.gather %x, %g {dim = 0 : i64} : (tensor<2x3x4xf32>, tensor<1x2x4xi64>) -> tensor<1x2x4xf32>
  func.return %0 : tensor<2x2x3xf32>
}

// CHECK-LABEL: func.func @scatters(
// CHECK-NEXT:    %{{.*}} = aten.index_put %{{.*}}, %{{.*}}, %{{.*}} {indexed_dims = array<i64: 2>} : (tensor<1x2x8x4xf32>, tensor<1xi64>, tensor<1x2x1x4xf32>) -> tensor<1x2x8x4xf32>
// CHECK-NEXT:    %{{.*}} = aten.index_put %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {indexed_dims = array<i64: 0, 3>, accumulate = true} : (tensor<1x2x8x4xf32>, tensor<3xi32>, tensor<3xi64>, tensor<f32>) -> tensor<1x2x8x4xf32>
// CHECK-NEXT:    %{{.*}} = aten.index_copy %{{.*}}, %{{.*}}, %{{.*}} {dim = -2 : i64} : (tensor<1x2x8x4xf32>, tensor<1xi64>, tensor<1x2x1x4xf32>) -> tensor<1x2x8x4xf32>
// CHECK-NEXT:    %{{.*}} = aten.slice_scatter %{{.*}}, %{{.*}} {dim = 2 : i64, start = 3 : i64, end = 4 : i64, step = 1 : i64} : (tensor<1x2x8x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x8x4xf32>
// CHECK-NEXT:    %{{.*}} = aten.slice_scatter %{{.*}}, %{{.*}} {dim = -1 : i64, start = 1 : i64, end = 9223372036854775807 : i64, step = 2 : i64} : (tensor<1x2x8x4xf32>, tensor<1x2x8x2xi64>) -> tensor<1x2x8x4xf32>
// CHECK-NEXT:    %{{.*}} = aten.select_scatter %{{.*}}, %{{.*}} {dim = 2 : i64, index = -1 : i64} : (tensor<1x2x8x4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x8x4xf32>
func.func @scatters(%cache: tensor<1x2x8x4xf32>, %k: tensor<1x2x1x4xf32>, %pos: tensor<1xi64>, %i: tensor<3xi32>, %j: tensor<3xi64>, %v: tensor<f32>, %w: tensor<1x2x8x2xi64>, %s: tensor<1x2x4xf32>) -> tensor<1x2x8x4xf32> {
  %0 = aten.index_put %cache, %pos, %k {indexed_dims = array<i64: 2>} : (tensor<1x2x8x4xf32>, tensor<1xi64>, tensor<1x2x1x4xf32>) -> tensor<1x2x8x4xf32>
  %1 = aten.index_put %cache, %i, %j, %v {indexed_dims = array<i64: 0, 3>, accumulate = true} : (tensor<1x2x8x4xf32>, tensor<3xi32>, tensor<3xi64>, tensor<f32>) -> tensor<1x2x8x4xf32>
  %2 = aten.index_copy %cache, %pos, %k {dim = -2 : i64} : (tensor<1x2x8x4xf32>, tensor<1xi64>, tensor<1x2x1x4xf32>) -> tensor<1x2x8x4xf32>
  %3 = aten.slice_scatter %cache, %k {dim = 2 : i64, start = 3 : i64, end = 4 : i64, step = 1 : i64} : (tensor<1x2x8x4xf32>, tensor<1x2x1x4xf32>) -> tensor<1x2x8x4xf32>
  %4 = aten.slice_scatter %cache, %w {dim = -1 : i64, start = 1 : i64, end = 9223372036854775807 : i64, step = 2 : i64} : (tensor<1x2x8x4xf32>, tensor<1x2x8x2xi64>) -> tensor<1x2x8x4xf32>
  %5 = aten.select_scatter %cache, %s {dim = 2 : i64, index = -1 : i64} : (tensor<1x2x8x4xf32>, tensor<1x2x4xf32>) -> tensor<1x2x8x4xf32>
  func.return %0 : tensor<1x2x8x4xf32>
}

// Windows at a run-time start (a 0-d integer tensor): narrow at a SymInt and the
// in-place write through it; a `?` length takes the length operand.
// CHECK-LABEL: func.func @dynamic_windows(
// CHECK-NEXT:    %{{.*}} = aten.dynamic_slice %{{.*}}, %{{.*}} {dim = 2 : i64} : (tensor<1x2x8x4xf32>, tensor<i64>) -> tensor<1x2x1x4xf32>
// CHECK-NEXT:    %{{.*}} = aten.dynamic_slice %{{.*}}, %{{.*}}, %{{.*}} {dim = -2 : i64} : (tensor<1x2x8x4xf32>, tensor<i32>, tensor<i64>) -> tensor<1x2x?x4xf32>
// CHECK-NEXT:    %{{.*}} = aten.dynamic_update_slice %{{.*}}, %{{.*}}, %{{.*}} {dim = 2 : i64} : (tensor<1x2x8x4xf32>, tensor<1x2x1x4xf32>, tensor<i64>) -> tensor<1x2x8x4xf32>
// CHECK-NEXT:    %{{.*}} = aten.dynamic_update_slice %{{.*}}, %{{.*}}, %{{.*}} {dim = 2 : i64} : (tensor<1x2x8x4xf32>, tensor<1x2x?x4xf32>, tensor<i32>) -> tensor<1x2x8x4xf32>
func.func @dynamic_windows(%cache: tensor<1x2x8x4xf32>, %k: tensor<1x2x1x4xf32>, %start: tensor<i64>, %s32: tensor<i32>, %n: tensor<i64>) -> tensor<1x2x8x4xf32> {
  %0 = aten.dynamic_slice %cache, %start {dim = 2 : i64} : (tensor<1x2x8x4xf32>, tensor<i64>) -> tensor<1x2x1x4xf32>
  %1 = aten.dynamic_slice %cache, %s32, %n {dim = -2 : i64} : (tensor<1x2x8x4xf32>, tensor<i32>, tensor<i64>) -> tensor<1x2x?x4xf32>
  %2 = aten.dynamic_update_slice %cache, %k, %start {dim = 2 : i64} : (tensor<1x2x8x4xf32>, tensor<1x2x1x4xf32>, tensor<i64>) -> tensor<1x2x8x4xf32>
  %3 = aten.dynamic_update_slice %2, %1, %s32 {dim = 2 : i64} : (tensor<1x2x8x4xf32>, tensor<1x2x?x4xf32>, tensor<i32>) -> tensor<1x2x8x4xf32>
  func.return %3 : tensor<1x2x8x4xf32>
}
