// RUN: qopt-opt %s | qopt-opt | filecheck %s
// RUN: QOPT_ROUNDTRIP
// RUN: QOPT_GENERIC_ROUNDTRIP
// Round trip of every op in qopt/dialects/aten/layers.py.

// GENERIC-LABEL: "func.func"() <{sym_name = "native_layer_norm"
// GENERIC:       %{{.*}}, %{{.*}}, %{{.*}} = "aten.layer_norm"(%{{.*}}, %{{.*}}) <{normalized_shape = array<i64: 4>, eps = 1.000000e-06 : f64, operandSegmentSizes = array<i32: 1, 0, 1>}>
// GENERIC-LABEL: "func.func"() <{sym_name = "batch_norm"
// GENERIC:       "aten.batch_norm"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{eps = 1.000000e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>}>
// GENERIC-LABEL: "func.func"() <{sym_name = "sdpa_mask"
// GENERIC:       "aten.scaled_dot_product_attention"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (tensor<1x2x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x6xf32>, tensor<3x5xi1>) -> tensor<1x2x3x6xf32>

// CHECK-LABEL: func.func @layer_norm(
// CHECK-SAME:    %[[LAYER_NORM_X:[^:]*]]: tensor<2x4x3x4xf32>
// CHECK-SAME:    %[[LAYER_NORM_W:[^:]*]]: tensor<4xf32>
// CHECK-SAME:    %[[LAYER_NORM_B:[^:]*]]: tensor<4xf32>
// CHECK-NEXT:    %[[LAYER_NORM_R0:[^ ,]*]] = aten.layer_norm %[[LAYER_NORM_X]] weight(%[[LAYER_NORM_W]] : tensor<4xf32>) bias(%[[LAYER_NORM_B]] : tensor<4xf32>) {normalized_shape = array<i64: 4>, eps = 1.000000e-05 : f64} : tensor<2x4x3x4xf32> -> tensor<2x4x3x4xf32>
// CHECK-NEXT:    func.return %[[LAYER_NORM_R0]]
func.func @layer_norm(%x: tensor<2x4x3x4xf32>, %w: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2x4x3x4xf32> {
  %r = aten.layer_norm %x weight(%w : tensor<4xf32>) bias(%b : tensor<4xf32>) {normalized_shape = array<i64: 4>, eps = 1.000000e-05 : f64} : tensor<2x4x3x4xf32> -> tensor<2x4x3x4xf32>
  func.return %r : tensor<2x4x3x4xf32>
}

// CHECK-LABEL: func.func @layer_norm_plain(
// CHECK-SAME:    %[[LAYER_NORM_PLAIN_X:[^:]*]]: tensor<2x4x3x4xf32>
// CHECK-NEXT:    %[[LAYER_NORM_PLAIN_R0:[^ ,]*]] = aten.layer_norm %[[LAYER_NORM_PLAIN_X]] {normalized_shape = array<i64: 3, 4>, eps = 1.000000e-05 : f64} : tensor<2x4x3x4xf32> -> tensor<2x4x3x4xf32>
// CHECK-NEXT:    func.return %[[LAYER_NORM_PLAIN_R0]]
func.func @layer_norm_plain(%x: tensor<2x4x3x4xf32>) -> tensor<2x4x3x4xf32> {
  %r = aten.layer_norm %x {normalized_shape = array<i64: 3, 4>, eps = 1.000000e-05 : f64} : tensor<2x4x3x4xf32> -> tensor<2x4x3x4xf32>
  func.return %r : tensor<2x4x3x4xf32>
}

// CHECK-LABEL: func.func @native_layer_norm(
// CHECK-SAME:    %[[NATIVE_LAYER_NORM_X:[^:]*]]: tensor<2x4x3x4xf32>
// CHECK-SAME:    %[[NATIVE_LAYER_NORM_B:[^:]*]]: tensor<4xf32>
// CHECK-NEXT:    %[[NATIVE_LAYER_NORM_R0:[^ ,]*]], %[[NATIVE_LAYER_NORM_R1:[^ ,]*]], %[[NATIVE_LAYER_NORM_R2:[^ ,]*]] = aten.layer_norm %[[NATIVE_LAYER_NORM_X]] bias(%[[NATIVE_LAYER_NORM_B]] : tensor<4xf32>) {normalized_shape = array<i64: 4>, eps = 1.000000e-06 : f64} : tensor<2x4x3x4xf32> -> tensor<2x4x3x4xf32>, tensor<2x4x3x1xf32>, tensor<2x4x3x1xf32>
// CHECK-NEXT:    func.return %[[NATIVE_LAYER_NORM_R0]], %[[NATIVE_LAYER_NORM_R1]], %[[NATIVE_LAYER_NORM_R2]]
func.func @native_layer_norm(%x: tensor<2x4x3x4xf32>, %b: tensor<4xf32>) -> (tensor<2x4x3x4xf32>, tensor<2x4x3x1xf32>, tensor<2x4x3x1xf32>) {
  %r, %mean, %rstd = aten.layer_norm %x bias(%b : tensor<4xf32>) {normalized_shape = array<i64: 4>, eps = 1.000000e-06 : f64} : tensor<2x4x3x4xf32> -> tensor<2x4x3x4xf32>, tensor<2x4x3x1xf32>, tensor<2x4x3x1xf32>
  func.return %r, %mean, %rstd : tensor<2x4x3x4xf32>, tensor<2x4x3x1xf32>, tensor<2x4x3x1xf32>
}

// CHECK-LABEL: func.func @group_norm(
// CHECK-SAME:    %[[GROUP_NORM_X:[^:]*]]: tensor<2x4x3x4xf32>
// CHECK-SAME:    %[[GROUP_NORM_W:[^:]*]]: tensor<4xf32>
// CHECK-SAME:    %[[GROUP_NORM_B:[^:]*]]: tensor<4xf32>
// CHECK-NEXT:    %[[GROUP_NORM_R0:[^ ,]*]] = aten.group_norm %[[GROUP_NORM_X]] weight(%[[GROUP_NORM_W]] : tensor<4xf32>) bias(%[[GROUP_NORM_B]] : tensor<4xf32>) {num_groups = 2 : i64, eps = 1.000000e-05 : f64} : tensor<2x4x3x4xf32> -> tensor<2x4x3x4xf32>
// CHECK-NEXT:    func.return %[[GROUP_NORM_R0]]
func.func @group_norm(%x: tensor<2x4x3x4xf32>, %w: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2x4x3x4xf32> {
  %r = aten.group_norm %x weight(%w : tensor<4xf32>) bias(%b : tensor<4xf32>) {num_groups = 2 : i64, eps = 1.000000e-05 : f64} : tensor<2x4x3x4xf32> -> tensor<2x4x3x4xf32>
  func.return %r : tensor<2x4x3x4xf32>
}

// CHECK-LABEL: func.func @native_group_norm(
// CHECK-SAME:    %[[NATIVE_GROUP_NORM_X:[^:]*]]: tensor<2x4x3x4xf32>
// CHECK-NEXT:    %[[NATIVE_GROUP_NORM_R0:[^ ,]*]], %[[NATIVE_GROUP_NORM_R1:[^ ,]*]], %[[NATIVE_GROUP_NORM_R2:[^ ,]*]] = aten.group_norm %[[NATIVE_GROUP_NORM_X]] {num_groups = 2 : i64, eps = 1.000000e-05 : f64} : tensor<2x4x3x4xf32> -> tensor<2x4x3x4xf32>, tensor<2x2xf32>, tensor<2x2xf32>
// CHECK-NEXT:    func.return %[[NATIVE_GROUP_NORM_R0]], %[[NATIVE_GROUP_NORM_R1]], %[[NATIVE_GROUP_NORM_R2]]
func.func @native_group_norm(%x: tensor<2x4x3x4xf32>) -> (tensor<2x4x3x4xf32>, tensor<2x2xf32>, tensor<2x2xf32>) {
  %r, %mean, %rstd = aten.group_norm %x {num_groups = 2 : i64, eps = 1.000000e-05 : f64} : tensor<2x4x3x4xf32> -> tensor<2x4x3x4xf32>, tensor<2x2xf32>, tensor<2x2xf32>
  func.return %r, %mean, %rstd : tensor<2x4x3x4xf32>, tensor<2x2xf32>, tensor<2x2xf32>
}

// CHECK-LABEL: func.func @batch_norm(
// CHECK-SAME:    %[[BATCH_NORM_X:[^:]*]]: tensor<2x4x3x4xf32>
// CHECK-SAME:    %[[BATCH_NORM_M:[^:]*]]: tensor<4xf32>
// CHECK-SAME:    %[[BATCH_NORM_V:[^:]*]]: tensor<4xf32>
// CHECK-SAME:    %[[BATCH_NORM_W:[^:]*]]: tensor<4xf32>
// CHECK-SAME:    %[[BATCH_NORM_B:[^:]*]]: tensor<4xf32>
// CHECK-NEXT:    %[[BATCH_NORM_R0:[^ ,]*]] = aten.batch_norm %[[BATCH_NORM_X]], %[[BATCH_NORM_M]], %[[BATCH_NORM_V]] weight(%[[BATCH_NORM_W]] : tensor<4xf32>) bias(%[[BATCH_NORM_B]] : tensor<4xf32>) {eps = 1.000000e-05 : f64} : tensor<2x4x3x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x4x3x4xf32>
// CHECK-NEXT:    func.return %[[BATCH_NORM_R0]]
func.func @batch_norm(%x: tensor<2x4x3x4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %w: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2x4x3x4xf32> {
  %r = aten.batch_norm %x, %m, %v weight(%w : tensor<4xf32>) bias(%b : tensor<4xf32>) {eps = 1.000000e-05 : f64} : tensor<2x4x3x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x4x3x4xf32>
  func.return %r : tensor<2x4x3x4xf32>
}

// CHECK-LABEL: func.func @batch_norm_legit(
// CHECK-SAME:    %[[BATCH_NORM_LEGIT_X:[^:]*]]: tensor<2x4x3x4xf32>
// CHECK-SAME:    %[[BATCH_NORM_LEGIT_M:[^:]*]]: tensor<4xf32>
// CHECK-SAME:    %[[BATCH_NORM_LEGIT_V:[^:]*]]: tensor<4xf32>
// CHECK-NEXT:    %[[BATCH_NORM_LEGIT_R0:[^ ,]*]], %[[BATCH_NORM_LEGIT_R1:[^ ,]*]], %[[BATCH_NORM_LEGIT_R2:[^ ,]*]] = aten.batch_norm %[[BATCH_NORM_LEGIT_X]], %[[BATCH_NORM_LEGIT_M]], %[[BATCH_NORM_LEGIT_V]] {eps = 1.000000e-03 : f64} : tensor<2x4x3x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x4x3x4xf32>, tensor<0xf32>, tensor<0xf32>
// CHECK-NEXT:    func.return %[[BATCH_NORM_LEGIT_R0]], %[[BATCH_NORM_LEGIT_R1]], %[[BATCH_NORM_LEGIT_R2]]
func.func @batch_norm_legit(%x: tensor<2x4x3x4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>) -> (tensor<2x4x3x4xf32>, tensor<0xf32>, tensor<0xf32>) {
  %r, %s0, %s1 = aten.batch_norm %x, %m, %v {eps = 1.000000e-03 : f64} : tensor<2x4x3x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x4x3x4xf32>, tensor<0xf32>, tensor<0xf32>
  func.return %r, %s0, %s1 : tensor<2x4x3x4xf32>, tensor<0xf32>, tensor<0xf32>
}

// CHECK-LABEL: func.func @max_pool2d(
// CHECK-SAME:    %[[MAX_POOL2D_X:[^:]*]]: tensor<2x4x3x4xf32>
// CHECK-NEXT:    %[[MAX_POOL2D_R0:[^ ,]*]] = aten.max_pool2d %[[MAX_POOL2D_X]] {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>} : (tensor<2x4x3x4xf32>) -> tensor<2x4x1x2xf32>
// CHECK-NEXT:    func.return %[[MAX_POOL2D_R0]]
func.func @max_pool2d(%x: tensor<2x4x3x4xf32>) -> tensor<2x4x1x2xf32> {
  %r = aten.max_pool2d %x {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>} : (tensor<2x4x3x4xf32>) -> tensor<2x4x1x2xf32>
  func.return %r : tensor<2x4x1x2xf32>
}

// CHECK-LABEL: func.func @max_pool2d_with_indices(
// CHECK-SAME:    %[[MAX_POOL2D_WITH_INDICES_X:[^:]*]]: tensor<2x4x3x4xf32>
// CHECK-NEXT:    %[[MAX_POOL2D_WITH_INDICES_R0:[^ ,]*]], %[[MAX_POOL2D_WITH_INDICES_R1:[^ ,]*]] = aten.max_pool2d %[[MAX_POOL2D_WITH_INDICES_X]] {kernel_size = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, ceil_mode = true, dilation = array<i64: 1, 1>} : (tensor<2x4x3x4xf32>) -> (tensor<2x4x2x3xf32>, tensor<2x4x2x3xi64>)
// CHECK-NEXT:    func.return %[[MAX_POOL2D_WITH_INDICES_R0]], %[[MAX_POOL2D_WITH_INDICES_R1]]
func.func @max_pool2d_with_indices(%x: tensor<2x4x3x4xf32>) -> (tensor<2x4x2x3xf32>, tensor<2x4x2x3xi64>) {
  %r, %n = aten.max_pool2d %x {kernel_size = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, ceil_mode = true, dilation = array<i64: 1, 1>} : (tensor<2x4x3x4xf32>) -> (tensor<2x4x2x3xf32>, tensor<2x4x2x3xi64>)
  func.return %r, %n : tensor<2x4x2x3xf32>, tensor<2x4x2x3xi64>
}

// CHECK-LABEL: func.func @avg_pool2d(
// CHECK-SAME:    %[[AVG_POOL2D_X:[^:]*]]: tensor<2x4x3x4xf32>
// CHECK-NEXT:    %[[AVG_POOL2D_R0:[^ ,]*]] = aten.avg_pool2d %[[AVG_POOL2D_X]] {kernel_size = array<i64: 2, 2>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, count_include_pad = false, divisor_override = 3 : i64} : (tensor<2x4x3x4xf32>) -> tensor<2x4x4x5xf32>
// CHECK-NEXT:    func.return %[[AVG_POOL2D_R0]]
func.func @avg_pool2d(%x: tensor<2x4x3x4xf32>) -> tensor<2x4x4x5xf32> {
  %r = aten.avg_pool2d %x {kernel_size = array<i64: 2, 2>, stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, count_include_pad = false, divisor_override = 3 : i64} : (tensor<2x4x3x4xf32>) -> tensor<2x4x4x5xf32>
  func.return %r : tensor<2x4x4x5xf32>
}

// CHECK-LABEL: func.func @adaptive_avg_pool2d(
// CHECK-SAME:    %[[ADAPTIVE_AVG_POOL2D_X:[^:]*]]: tensor<2x4x3x4xf32>
// CHECK-NEXT:    %[[ADAPTIVE_AVG_POOL2D_R0:[^ ,]*]] = aten.adaptive_avg_pool2d %[[ADAPTIVE_AVG_POOL2D_X]] {output_size = array<i64: 2, 3>} : (tensor<2x4x3x4xf32>) -> tensor<2x4x2x3xf32>
// CHECK-NEXT:    func.return %[[ADAPTIVE_AVG_POOL2D_R0]]
func.func @adaptive_avg_pool2d(%x: tensor<2x4x3x4xf32>) -> tensor<2x4x2x3xf32> {
  %r = aten.adaptive_avg_pool2d %x {output_size = array<i64: 2, 3>} : (tensor<2x4x3x4xf32>) -> tensor<2x4x2x3xf32>
  func.return %r : tensor<2x4x2x3xf32>
}

// CHECK-LABEL: func.func @sdpa_mask(
// CHECK-SAME:    %[[SDPA_MASK_Q:[^:]*]]: tensor<1x2x3x8xf32>
// CHECK-SAME:    %[[SDPA_MASK_K:[^:]*]]: tensor<1x2x5x8xf32>
// CHECK-SAME:    %[[SDPA_MASK_V:[^:]*]]: tensor<1x2x5x6xf32>
// CHECK-SAME:    %[[SDPA_MASK_M:[^:]*]]: tensor<3x5xi1>
// CHECK-NEXT:    %[[SDPA_MASK_R0:[^ ,]*]] = aten.scaled_dot_product_attention %[[SDPA_MASK_Q]], %[[SDPA_MASK_K]], %[[SDPA_MASK_V]], %[[SDPA_MASK_M]] : (tensor<1x2x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x6xf32>, tensor<3x5xi1>) -> tensor<1x2x3x6xf32>
// CHECK-NEXT:    func.return %[[SDPA_MASK_R0]]
func.func @sdpa_mask(%q: tensor<1x2x3x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x6xf32>, %m: tensor<3x5xi1>) -> tensor<1x2x3x6xf32> {
  %r = aten.scaled_dot_product_attention %q, %k, %v, %m : (tensor<1x2x3x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x6xf32>, tensor<3x5xi1>) -> tensor<1x2x3x6xf32>
  func.return %r : tensor<1x2x3x6xf32>
}

// CHECK-LABEL: func.func @sdpa_causal_gqa(
// CHECK-SAME:    %[[SDPA_CAUSAL_GQA_Q:[^:]*]]: tensor<1x2x3x8xf32>
// CHECK-SAME:    %[[SDPA_CAUSAL_GQA_K:[^:]*]]: tensor<1x1x5x8xf32>
// CHECK-SAME:    %[[SDPA_CAUSAL_GQA_V:[^:]*]]: tensor<1x1x5x6xf32>
// CHECK-NEXT:    %[[SDPA_CAUSAL_GQA_R0:[^ ,]*]] = aten.scaled_dot_product_attention %[[SDPA_CAUSAL_GQA_Q]], %[[SDPA_CAUSAL_GQA_K]], %[[SDPA_CAUSAL_GQA_V]] {is_causal = true, scale = 5.000000e-01 : f64, enable_gqa = true} : (tensor<1x2x3x8xf32>, tensor<1x1x5x8xf32>, tensor<1x1x5x6xf32>) -> tensor<1x2x3x6xf32>
// CHECK-NEXT:    func.return %[[SDPA_CAUSAL_GQA_R0]]
func.func @sdpa_causal_gqa(%q: tensor<1x2x3x8xf32>, %k: tensor<1x1x5x8xf32>, %v: tensor<1x1x5x6xf32>) -> tensor<1x2x3x6xf32> {
  %r = aten.scaled_dot_product_attention %q, %k, %v {is_causal = true, scale = 5.000000e-01 : f64, enable_gqa = true} : (tensor<1x2x3x8xf32>, tensor<1x1x5x8xf32>, tensor<1x1x5x6xf32>) -> tensor<1x2x3x6xf32>
  func.return %r : tensor<1x2x3x6xf32>
}

// CHECK-LABEL: func.func @pixel_shuffle(
// CHECK-SAME:    %[[PIXEL_SHUFFLE_X:[^:]*]]: tensor<2x4x3x4xf32>
// CHECK-NEXT:    %[[PIXEL_SHUFFLE_R0:[^ ,]*]] = aten.pixel_shuffle %[[PIXEL_SHUFFLE_X]] {upscale_factor = 2 : i64} : (tensor<2x4x3x4xf32>) -> tensor<2x1x6x8xf32>
// CHECK-NEXT:    func.return %[[PIXEL_SHUFFLE_R0]]
func.func @pixel_shuffle(%x: tensor<2x4x3x4xf32>) -> tensor<2x1x6x8xf32> {
  %r = aten.pixel_shuffle %x {upscale_factor = 2 : i64} : (tensor<2x4x3x4xf32>) -> tensor<2x1x6x8xf32>
  func.return %r : tensor<2x1x6x8xf32>
}

// GENERIC-LABEL: "func.func"() <{sym_name = "upsample"
// GENERIC:       "aten.upsample_nearest2d"(%{{.*}}) <{scales_h = 2.000000e+00 : f64, scales_w = 2.000000e+00 : f64}> : (tensor<1x2x3x4xf32>) -> tensor<1x2x6x8xf32>
// GENERIC:       "aten.upsample_bilinear2d"(%{{.*}}) <{align_corners = true}> : (tensor<1x2x3x4xf32>) -> tensor<1x2x5x7xf32>
// CHECK-LABEL: func.func @upsample(
// CHECK-SAME:    %[[UPSAMPLE_X:[^:]*]]: tensor<1x2x3x4xf32>
// CHECK-NEXT:    %[[UPSAMPLE_N:[^ ,]*]] = aten.upsample_nearest2d %[[UPSAMPLE_X]] {scales_h = 2.000000e+00 : f64, scales_w = 2.000000e+00 : f64} : (tensor<1x2x3x4xf32>) -> tensor<1x2x6x8xf32>
// CHECK-NEXT:    %[[UPSAMPLE_B:[^ ,]*]] = aten.upsample_bilinear2d %[[UPSAMPLE_X]] {align_corners = true} : (tensor<1x2x3x4xf32>) -> tensor<1x2x5x7xf32>
// CHECK-NEXT:    func.return %[[UPSAMPLE_N]], %[[UPSAMPLE_B]]
func.func @upsample(%x: tensor<1x2x3x4xf32>) -> (tensor<1x2x6x8xf32>, tensor<1x2x5x7xf32>) {
  %n = aten.upsample_nearest2d %x {scales_h = 2.000000e+00 : f64, scales_w = 2.000000e+00 : f64} : (tensor<1x2x3x4xf32>) -> tensor<1x2x6x8xf32>
  %b = aten.upsample_bilinear2d %x {align_corners = true} : (tensor<1x2x3x4xf32>) -> tensor<1x2x5x7xf32>
  func.return %n, %b : tensor<1x2x6x8xf32>, tensor<1x2x5x7xf32>
}
