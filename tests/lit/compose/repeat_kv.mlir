// RUN: qopt-opt %s -p 'compose{target=vulkan}' | filecheck %s
// RUN: qopt-opt %s -p 'compose{target=coreml}' | filecheck %s --check-prefix=COREML
// RUN: qopt-opt %s -p qopt-vulkan | filecheck %s --check-prefix=VKC
// Grouped-query attention as transformers writes it (repeat_kv: unsqueeze, expand,
// view) becomes, on Vulkan, the repeat_interleave of the key/value heads that the sdpa
// rule reads in place (no copy of the cache per query head); the layout ops left dead
// go. A repeat read by anything else than sdpa stays. CoreML keeps the form.

// CHECK-LABEL: func.func @gqa(
// CHECK-NOT:     aten.expand
// CHECK:         %[[K:.*]] = aten.repeat_interleave %k {repeats = 2 : i64, dim = 1 : i64} : (tensor<1x2x16x8xf32>) -> tensor<1x4x16x8xf32>
// CHECK-NEXT:    %[[V:.*]] = aten.repeat_interleave %v {repeats = 2 : i64, dim = 1 : i64}
// CHECK-NEXT:    aten.scaled_dot_product_attention %q, %[[K]], %[[V]], %mask
// CHECK-LABEL: func.func @elsewhere(
// CHECK:         aten.expand
// CHECK-NOT:     aten.repeat_interleave

// COREML-LABEL: func.func @gqa(
// COREML:         aten.expand
// COREML-NOT:     aten.repeat_interleave

// VKC-LABEL: func.func @gqa(
// VKC-NOT:     @copy_strided
// VKC:         vkc.dispatch @sdpa
// VKC-LABEL: func.func @elsewhere(
// VKC:         vkc.dispatch @copy_strided

func.func @gqa(%q: tensor<1x4x1x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>, %mask: tensor<1x1x1x16xi1>) -> tensor<1x4x1x8xf32> {
  %k1 = aten.unsqueeze %k {dim = 2 : i64} : (tensor<1x2x16x8xf32>) -> tensor<1x2x1x16x8xf32>
  %k2 = aten.expand %k1 : (tensor<1x2x1x16x8xf32>) -> tensor<1x2x2x16x8xf32>
  %k3 = aten.view %k2 : (tensor<1x2x2x16x8xf32>) -> tensor<1x4x16x8xf32>
  %v1 = aten.unsqueeze %v {dim = 2 : i64} : (tensor<1x2x16x8xf32>) -> tensor<1x2x1x16x8xf32>
  %v2 = aten.expand %v1 : (tensor<1x2x1x16x8xf32>) -> tensor<1x2x2x16x8xf32>
  %v3 = aten.view %v2 : (tensor<1x2x2x16x8xf32>) -> tensor<1x4x16x8xf32>
  %y = aten.scaled_dot_product_attention %q, %k3, %v3, %mask {scale = 0.35355339059327379 : f64} : (tensor<1x4x1x8xf32>, tensor<1x4x16x8xf32>, tensor<1x4x16x8xf32>, tensor<1x1x1x16xi1>) -> tensor<1x4x1x8xf32>
  func.return %y : tensor<1x4x1x8xf32>
}
func.func @elsewhere(%k: tensor<1x2x16x8xf32>) -> tensor<1x4x16x8xf32> {
  %k1 = aten.unsqueeze %k {dim = 2 : i64} : (tensor<1x2x16x8xf32>) -> tensor<1x2x1x16x8xf32>
  %k2 = aten.expand %k1 : (tensor<1x2x1x16x8xf32>) -> tensor<1x2x2x16x8xf32>
  %k3 = aten.view %k2 : (tensor<1x2x2x16x8xf32>) -> tensor<1x4x16x8xf32>
  func.return %k3 : tensor<1x4x16x8xf32>
}
