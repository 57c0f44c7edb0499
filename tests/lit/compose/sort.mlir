// RUN: qopt-opt %s -p 'compose{target=coreml}' --print-debuginfo | filecheck %s
// RUN: qopt-opt %s -p 'compose{target=vulkan}' | filecheck %s --check-prefix=VULKAN
// RUN: qopt-opt %s -p 'compose{target=vulkan}' | qopt-opt | filecheck %s --check-prefix=VULKAN
// sort / topk (aten.sort) by ranks on both targets (qopt/lowering/compose.py,
// sort_as_ranks): the [i, j] comparisons (NaN the largest, ties by position), each
// entry's rank summed in float32, each output position's index the entry of that rank,
// the values gathered; a boolean sort stays (the rule's to refuse).

// CHECK-LABEL: func.func @topk(
// CHECK-NOT:     aten.sort
// CHECK:         %[[XI:.*]] = aten.view %x : (tensor<2x5xf32>) -> tensor<2x5x1xf32> loc("model.py":7:0)
// CHECK-NEXT:    %[[XJ:.*]] = aten.view %x : (tensor<2x5xf32>) -> tensor<2x1x5xf32> loc("model.py":7:0)
// CHECK-NEXT:    aten.gt %[[XJ]], %[[XI]] : (tensor<2x1x5xf32>, tensor<2x5x1xf32>) -> tensor<2x5x5xi1>
// CHECK:         aten.ne %[[XI]], %[[XI]]
// CHECK:         %[[RANK:.*]] = aten.sum %{{.*}} {dims = array<i64: 2>, keepdim = false} : (tensor<2x5x5xf32>) -> tensor<2x5xf32>
// CHECK:         aten.eq %{{.*}}, %{{.*}} : (tensor<2x1x5xf32>, tensor<3x1xf32>) -> tensor<2x3x5xi1>
// CHECK:         %[[POS:.*]] = aten.sum %{{.*}} {dims = array<i64: 2>, keepdim = false} : (tensor<2x3x5xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %i = aten.to %[[POS]] : (tensor<2x3xf32>) -> tensor<2x3xi64>
// CHECK-NEXT:    %v = aten.gather %x, %i {dim = 1 : i64} : (tensor<2x5xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %v, %i

// Integers: no NaN comparisons.
// CHECK-LABEL: func.func @ints(
// CHECK-NOT:     aten.ne
// CHECK:         aten.lt
// CHECK-NOT:     aten.sort
// CHECK:         aten.gather %x

// CHECK-LABEL: func.func @flags(
// CHECK-NEXT:    aten.sort %x

// VULKAN-NOT:    aten.sort %x {dim = 1
// VULKAN-LABEL:  func.func @ints(
// VULKAN-NOT:    aten.sort
// VULKAN-LABEL:  func.func @flags(
// VULKAN-NEXT:   aten.sort %x
func.func @topk(%x: tensor<2x5xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>) {
  %v, %i = aten.sort %x {dim = 1 : i64, descending = true, k = 3 : i64} : (tensor<2x5xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>) loc("model.py":7:0)
  func.return %v, %i : tensor<2x3xf32>, tensor<2x3xi64>
}
func.func @ints(%x: tensor<3x4xi32>) -> (tensor<3x4xi32>, tensor<3x4xi64>) {
  %v, %i = aten.sort %x {dim = 0 : i64} : (tensor<3x4xi32>) -> (tensor<3x4xi32>, tensor<3x4xi64>)
  func.return %v, %i : tensor<3x4xi32>, tensor<3x4xi64>
}
func.func @flags(%x: tensor<4xi1>) -> (tensor<4xi1>, tensor<4xi64>) {
  %v, %i = aten.sort %x {dim = 0 : i64} : (tensor<4xi1>) -> (tensor<4xi1>, tensor<4xi64>)
  func.return %v, %i : tensor<4xi1>, tensor<4xi64>
}
