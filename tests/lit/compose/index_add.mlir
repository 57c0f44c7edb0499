// RUN: qopt-opt %s -p 'compose{target=coreml}' | filecheck %s
// RUN: qopt-opt %s -p 'compose{target=vulkan}' | filecheck %s
// index_put with accumulate (index_add) along one dim with a 1-D index, of a float
// tensor, as sums over the [size, q] pairs index == position (qopt/lowering/compose.py,
// index_add_as_sums); values that broadcast, or integers, stay (the rule's to refuse).

// CHECK-LABEL: func.func @index_add(
// CHECK-NOT:     aten.index_put
// CHECK:         %[[AT:.*]] = aten.to %i : (tensor<3xi64>) -> tensor<3xf32>
// CHECK:         aten.where %{{.*}}, %{{.*}}, %[[AT]]
// CHECK:         aten.eq %{{.*}}, %{{.*}} : (tensor<1x3x1xf32>, tensor<4x1x1xf32>) -> tensor<4x3x1xi1>
// CHECK:         %[[V:.*]] = aten.view %v : (tensor<2x3x5xf32>) -> tensor<2x1x3x5xf32>
// CHECK:         aten.where %{{.*}}, %[[V]], %{{.*}} : ({{.*}}) -> tensor<2x4x3x5xf32>
// CHECK:         %[[S:.*]] = aten.sum %{{.*}} {dims = array<i64: 2>, keepdim = false} : (tensor<2x4x3x5xf32>) -> tensor<2x4x5xf32>
// CHECK-NEXT:    %r = aten.add %x, %[[S]]

// CHECK-LABEL: func.func @broadcast(
// CHECK-NEXT:    aten.index_put
// CHECK-LABEL: func.func @ints(
// CHECK-NEXT:    aten.index_put
func.func @index_add(%x: tensor<2x4x5xf32>, %i: tensor<3xi64>, %v: tensor<2x3x5xf32>) -> tensor<2x4x5xf32> {
  %r = aten.index_put %x, %i, %v {indexed_dims = array<i64: 1>, accumulate = true} : (tensor<2x4x5xf32>, tensor<3xi64>, tensor<2x3x5xf32>) -> tensor<2x4x5xf32>
  func.return %r : tensor<2x4x5xf32>
}
func.func @broadcast(%x: tensor<4x3xf32>, %i: tensor<2xi64>, %u: tensor<3xf32>) -> tensor<4x3xf32> {
  %r = aten.index_put %x, %i, %u {indexed_dims = array<i64: 0>, accumulate = true} : (tensor<4x3xf32>, tensor<2xi64>, tensor<3xf32>) -> tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}
func.func @ints(%x: tensor<4x3xi32>, %i: tensor<2xi64>, %u: tensor<2x3xi32>) -> tensor<4x3xi32> {
  %r = aten.index_put %x, %i, %u {indexed_dims = array<i64: 0>, accumulate = true} : (tensor<4x3xi32>, tensor<2xi64>, tensor<2x3xi32>) -> tensor<4x3xi32>
  func.return %r : tensor<4x3xi32>
}
