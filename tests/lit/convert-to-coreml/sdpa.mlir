// RUN: qopt-opt %s -p convert-to-coreml --split-input-file | filecheck %s
// RUN: qopt-opt %s -p 'convert-to-coreml{target=iOS17}' --split-input-file | filecheck %s --check-prefix=OLD
// RUN: qopt-opt %s -p 'convert-to-coreml{target=iOS16}' --split-input-file | filecheck %s --check-prefix=OLD
// scaled_dot_product_attention: one op on iOS18, coremltools' decomposition before.

// is_causal becomes a constant lower-triangular i1 mask.
// CHECK-LABEL: func.func @sdpa_causal(
// CHECK:         %[[MASK:.*]] = coreml.const dense_resource<{{.*}}> : tensor<3x3xi1>
// CHECK-NEXT:    %[[R:.*]] = coreml.scaled_dot_product_attention %q, %k, %v, %[[MASK]]
// CHECK-NEXT:    func.return %[[R]]
// OLD-LABEL: func.func @sdpa_causal(
// OLD:         %[[MASK:.*]] = coreml.const dense_resource<{{.*}}> : tensor<3x3xi1>
// OLD-NEXT:    %[[S:.*]] = coreml.matmul %q, %k {transpose_x = false, transpose_y = true}
// OLD-NEXT:    %[[F:.*]] = coreml.const dense<0.353553385> : tensor<f32>
// OLD-NEXT:    %[[SS:.*]] = coreml.mul %[[S]], %[[F]]
// OLD-NEXT:    %[[NINF:.*]] = coreml.const dense_resource<{{.*}}> : tensor<f32>
// OLD-NEXT:    %[[SEL:.*]] = coreml.select %[[MASK]], %[[SS]], %[[NINF]]
// OLD-NEXT:    %[[P:.*]] = coreml.softmax %[[SEL]] {axis = -1 : i64}
// OLD-NEXT:    %[[R:.*]] = coreml.matmul %[[P]], %v {transpose_x = false, transpose_y = false}
// OLD-NEXT:    func.return %[[R]]
func.func @sdpa_causal(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x3x8xf32>, %v: tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32> {
  %r = aten.scaled_dot_product_attention %q, %k, %v {is_causal = true} : (tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32>
  func.return %r : tensor<1x2x3x8xf32>
}

// -----

// A custom scale pre-multiplies q by scale * sqrt(E); a float mask is added.
// CHECK-LABEL: func.func @sdpa_scale_mask(
// CHECK:         %[[F:.*]] = coreml.const dense<0.707106769> : tensor<f32>
// CHECK-NEXT:    %[[Q:.*]] = coreml.mul %q, %[[F]]
// CHECK-NEXT:    coreml.scaled_dot_product_attention %[[Q]], %k, %v, %m
// OLD-LABEL: func.func @sdpa_scale_mask(
// OLD:         %[[F:.*]] = coreml.const dense<0.707106769> : tensor<f32>
// OLD-NEXT:    %[[Q:.*]] = coreml.mul %q, %[[F]]
// OLD-NEXT:    %[[S:.*]] = coreml.matmul %[[Q]], %k {transpose_x = false, transpose_y = true}
// OLD-NEXT:    %[[F2:.*]] = coreml.const dense<0.353553385> : tensor<f32>
// OLD-NEXT:    %[[SS:.*]] = coreml.mul %[[S]], %[[F2]]
// OLD-NEXT:    %[[SM:.*]] = coreml.add %[[SS]], %m
// OLD-NEXT:    %[[P:.*]] = coreml.softmax %[[SM]] {axis = -1 : i64}
// OLD-NEXT:    coreml.matmul %[[P]], %v
func.func @sdpa_scale_mask(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x6xf32>, %m: tensor<3x5xf32>) -> tensor<1x2x3x6xf32> {
  %r = aten.scaled_dot_product_attention %q, %k, %v, %m {scale = 2.500000e-01 : f64} : (tensor<1x2x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x6xf32>, tensor<3x5xf32>) -> tensor<1x2x3x6xf32>
  func.return %r : tensor<1x2x3x6xf32>
}
