// RUN: qopt-opt %s -p 'compose{target=coreml}' | filecheck %s
// RUN: qopt-opt %s -p 'compose{target=vulkan}' | filecheck %s --check-prefix=VULKAN
// RUN: qopt-opt %s -p convert-to-coreml | filecheck %s --check-prefix=MIL
// Integer bitwise ops on CoreML (no MIL op for them) in exact int32 arithmetic
// (qopt/lowering/compose.py, bitwise_as_arithmetic): the operands broadcast and
// flattened to [n, 1], their low bits `q - 2 (q // 2)` of `q = x // [1, 2, .., 2^30]`,
// combined per bit and summed with the weights; the sign bits combined as bools add
// -2^31. `~x` is `-1 - x` (in int32 for an int8). Bools stay logical ops; Vulkan has
// integer bitwise kernels, so its ops stay.

// CHECK-LABEL: func.func @and(
// CHECK-NOT:     aten.bitwise_and
// CHECK:         %[[W:.*]] = arith.constant dense<{{\[\[}}1, 2, 4, {{.*}}, 1073741824]]> : tensor<1x31xi32>
// CHECK:         %[[TWO:.*]] = arith.constant dense<2> : tensor<1xi32>
// CHECK:         %[[A:.*]] = aten.view %a : (tensor<2x3xi32>) -> tensor<6x1xi32>
// CHECK-NEXT:    %[[QA:.*]] = aten.div %[[A]], %[[W]] {rounding_mode = "floor"} : (tensor<6x1xi32>, tensor<1x31xi32>) -> tensor<6x31xi32>
// CHECK-NEXT:    %[[HA:.*]] = aten.div %[[QA]], %[[TWO]] {rounding_mode = "floor"}
// CHECK-NEXT:    %[[DA:.*]] = aten.mul %[[HA]], %[[TWO]]
// CHECK-NEXT:    %[[BA:.*]] = aten.sub %[[QA]], %[[DA]]
// CHECK-NEXT:    %[[B:.*]] = aten.expand %b : (tensor<3xi32>) -> tensor<2x3xi32>
// CHECK:         %[[BB:.*]] = aten.sub
// CHECK-NEXT:    %[[BOTH:.*]] = aten.mul %[[BA]], %[[BB]] : (tensor<6x31xi32>, tensor<6x31xi32>) -> tensor<6x31xi32>
// CHECK-NEXT:    %[[WB:.*]] = aten.mul %[[BOTH]], %[[W]]
// CHECK-NEXT:    %[[LOW:.*]] = aten.sum %[[WB]] {dims = array<i64: 1>, keepdim = false} : (tensor<6x31xi32>) -> tensor<6xi32>
// CHECK-NEXT:    %[[V:.*]] = aten.view %[[LOW]] : (tensor<6xi32>) -> tensor<2x3xi32>
// CHECK:         %[[SA:.*]] = aten.lt %a
// CHECK-NEXT:    %[[SB:.*]] = aten.lt %b
// CHECK-NEXT:    %[[S:.*]] = aten.logical_and %[[SA]], %[[SB]] : (tensor<2x3xi1>, tensor<3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:    %[[MIN:.*]] = arith.constant dense<-2147483648> : tensor<1xi32>
// CHECK-NEXT:    %[[NEG:.*]] = aten.add %[[V]], %[[MIN]]
// CHECK-NEXT:    %y = aten.where %[[S]], %[[NEG]], %[[V]]

// An int16 has 15 low bits and its sign; or is the larger bit, xor the difference's magnitude.
// CHECK-LABEL: func.func @or_xor(
// CHECK:         aten.maximum %{{.*}}, %{{.*}} : (tensor<4x15xi32>, tensor<4x15xi32>)
// CHECK:         aten.logical_or
// CHECK:         aten.abs %{{.*}} : (tensor<4x15xi32>) -> tensor<4x15xi32>
// CHECK:         aten.logical_xor

// A uint8 has 8 low bits and no sign bit; the result is cast back.
// CHECK-LABEL: func.func @uint8(
// CHECK:         arith.constant dense<{{\[\[}}1, 2, 4, 8, 16, 32, 64, 128]]> : tensor<1x8xi32>
// CHECK-NOT:     aten.lt
// CHECK:         %y = aten.to %{{.*}} : (tensor<4xi32>) -> tensor<4xui8>

// CHECK-LABEL: func.func @not(
// CHECK-NEXT:    %[[X:.*]] = aten.to %a : (tensor<4xi8>) -> tensor<4xi32>
// CHECK-NEXT:    %[[M:.*]] = arith.constant dense<-1> : tensor<1xi32>
// CHECK-NEXT:    %[[R:.*]] = aten.sub %[[M]], %[[X]]
// CHECK-NEXT:    %y = aten.to %[[R]] : (tensor<4xi32>) -> tensor<4xi8>

// CHECK-LABEL: func.func @not_long(
// CHECK-NEXT:    %[[M:.*]] = arith.constant dense<-1> : tensor<1xi64>
// CHECK-NEXT:    %y = aten.sub %[[M]], %a : (tensor<1xi64>, tensor<4xi64>) -> tensor<4xi64>

// CHECK-LABEL: func.func @mask(
// CHECK-NEXT:    aten.bitwise_or %a, %b

// VULKAN-NOT: aten.sum
// VULKAN:     aten.bitwise_and
// VULKAN:     aten.bitwise_or
// VULKAN:     aten.bitwise_xor

// MIL-LABEL: func.func @and(
// MIL-COUNT-2: coreml.floor_div %{{.*}} : (tensor<6x1xi32>, tensor<1x31xi32>) -> tensor<6x31xi32>
// MIL:       coreml.reduce_sum %{{.*}} {axes = array<i64: 1>, keep_dims = false} : (tensor<6x31xi32>) -> tensor<6xi32>
// MIL:       coreml.select
// MIL-LABEL: func.func @not(
// MIL-NEXT:    coreml.cast %a {dtype = "int32"}
// MIL:         coreml.sub
// MIL-NEXT:    coreml.cast %{{.*}} {dtype = "int8"}
// MIL-LABEL: func.func @mask(
// MIL:         coreml.logical_or
func.func @and(%a: tensor<2x3xi32>, %b: tensor<3xi32>) -> tensor<2x3xi32> {
  %y = aten.bitwise_and %a, %b : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  func.return %y : tensor<2x3xi32>
}
func.func @or_xor(%a: tensor<4xi16>, %b: tensor<4xi16>) -> tensor<4xi16> {
  %o = aten.bitwise_or %a, %b : (tensor<4xi16>, tensor<4xi16>) -> tensor<4xi16>
  %y = aten.bitwise_xor %o, %b : (tensor<4xi16>, tensor<4xi16>) -> tensor<4xi16>
  func.return %y : tensor<4xi16>
}
func.func @uint8(%a: tensor<4xui8>, %b: tensor<4xui8>) -> tensor<4xui8> {
  %y = aten.bitwise_and %a, %b : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  func.return %y : tensor<4xui8>
}
func.func @not(%a: tensor<4xi8>) -> tensor<4xi8> {
  %y = aten.bitwise_not %a : (tensor<4xi8>) -> tensor<4xi8>
  func.return %y : tensor<4xi8>
}
func.func @not_long(%a: tensor<4xi64>) -> tensor<4xi64> {
  %y = aten.bitwise_not %a : (tensor<4xi64>) -> tensor<4xi64>
  func.return %y : tensor<4xi64>
}
func.func @mask(%a: tensor<4xi1>, %b: tensor<4xi1>) -> tensor<4xi1> {
  %y = aten.bitwise_or %a, %b : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return %y : tensor<4xi1>
}
