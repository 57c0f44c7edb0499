// RUN: QOPT_ROUNDTRIP
// RUN: QOPT_GENERIC_ROUNDTRIP
// Round trip of every op in qopt/dialects/aten/nn.py.

// GENERIC-LABEL: "func.func"() <{sym_name = "linear"
// GENERIC:       "aten.linear"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<4x64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<4x32xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "conv2d"
// GENERIC:       "aten.conv2d"(%{{.*}}, %{{.*}}, %{{.*}}) <{stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64}>

// CHECK-LABEL: func.func @linear(
// CHECK-SAME:    %[[LINEAR_X:[^:]*]]: tensor<4x64xf32>, %[[LINEAR_W:[^:]*]]: tensor<32x64xf32>, %[[LINEAR_B:[^:]*]]: tensor<32xf32>
// CHECK-NEXT:    %[[LINEAR_R:.*]] = aten.linear %[[LINEAR_X]], %[[LINEAR_W]], %[[LINEAR_B]] : (tensor<4x64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<4x32xf32>
// CHECK-NEXT:    func.return %[[LINEAR_R]] : tensor<4x32xf32>
func.func @linear(%x: tensor<4x64xf32>, %w: tensor<32x64xf32>, %b: tensor<32xf32>) -> tensor<4x32xf32> {
  %r = aten.linear %x, %w, %b : (tensor<4x64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  func.return %r : tensor<4x32xf32>
}

// CHECK-LABEL: func.func @linear_no_bias_batched(
// CHECK-SAME:    %[[LINEAR_NO_BIAS_BATCHED_X:[^:]*]]: tensor<2x5x64xf32>, %[[LINEAR_NO_BIAS_BATCHED_W:[^:]*]]: tensor<32x64xf32>
// CHECK-NEXT:    %[[LINEAR_NO_BIAS_BATCHED_R:.*]] = aten.linear %[[LINEAR_NO_BIAS_BATCHED_X]], %[[LINEAR_NO_BIAS_BATCHED_W]] : (tensor<2x5x64xf32>, tensor<32x64xf32>) -> tensor<2x5x32xf32>
// CHECK-NEXT:    func.return %[[LINEAR_NO_BIAS_BATCHED_R]] : tensor<2x5x32xf32>
func.func @linear_no_bias_batched(%x: tensor<2x5x64xf32>, %w: tensor<32x64xf32>) -> tensor<2x5x32xf32> {
  %r = aten.linear %x, %w : (tensor<2x5x64xf32>, tensor<32x64xf32>) -> tensor<2x5x32xf32>
  func.return %r : tensor<2x5x32xf32>
}

// CHECK-LABEL: func.func @matmul(
// CHECK-SAME:    %[[MATMUL_A:[^:]*]]: tensor<4x8xf32>, %[[MATMUL_B:[^:]*]]: tensor<8x3xf32>
// CHECK-NEXT:    %[[MATMUL_R:.*]] = aten.matmul %[[MATMUL_A]], %[[MATMUL_B]] : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    func.return %[[MATMUL_R]] : tensor<4x3xf32>
func.func @matmul(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %r = aten.matmul %a, %b : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}

// CHECK-LABEL: func.func @matmul_batched_broadcast(
// CHECK-SAME:    %[[MATMUL_BATCHED_BROADCAST_A:[^:]*]]: tensor<2x4x4x8xf32>, %[[MATMUL_BATCHED_BROADCAST_B:[^:]*]]: tensor<4x8x16xf32>
// CHECK-NEXT:    %[[MATMUL_BATCHED_BROADCAST_R:.*]] = aten.matmul %[[MATMUL_BATCHED_BROADCAST_A]], %[[MATMUL_BATCHED_BROADCAST_B]] : (tensor<2x4x4x8xf32>, tensor<4x8x16xf32>) -> tensor<2x4x4x16xf32>
// CHECK-NEXT:    func.return %[[MATMUL_BATCHED_BROADCAST_R]] : tensor<2x4x4x16xf32>
func.func @matmul_batched_broadcast(%a: tensor<2x4x4x8xf32>, %b: tensor<4x8x16xf32>) -> tensor<2x4x4x16xf32> {
  %r = aten.matmul %a, %b : (tensor<2x4x4x8xf32>, tensor<4x8x16xf32>) -> tensor<2x4x4x16xf32>
  func.return %r : tensor<2x4x4x16xf32>
}

// CHECK-LABEL: func.func @matmul_vector(
// CHECK-SAME:    %[[MATMUL_VECTOR_A:[^:]*]]: tensor<8xf32>, %[[MATMUL_VECTOR_B:[^:]*]]: tensor<8x3xf32>
// CHECK-NEXT:    %[[MATMUL_VECTOR_R:.*]] = aten.matmul %[[MATMUL_VECTOR_A]], %[[MATMUL_VECTOR_B]] : (tensor<8xf32>, tensor<8x3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    func.return %[[MATMUL_VECTOR_R]] : tensor<3xf32>
func.func @matmul_vector(%a: tensor<8xf32>, %b: tensor<8x3xf32>) -> tensor<3xf32> {
  %r = aten.matmul %a, %b : (tensor<8xf32>, tensor<8x3xf32>) -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// CHECK-LABEL: func.func @addmm(
// CHECK-SAME:    %[[ADDMM_C:[^:]*]]: tensor<3xf32>, %[[ADDMM_A:[^:]*]]: tensor<4x8xf32>, %[[ADDMM_B:[^:]*]]: tensor<8x3xf32>
// CHECK-NEXT:    %[[ADDMM_R:.*]] = aten.addmm %[[ADDMM_C]], %[[ADDMM_A]], %[[ADDMM_B]] {beta = 1.000000e+00 : f64, alpha = 5.000000e-01 : f64} : (tensor<3xf32>, tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    func.return %[[ADDMM_R]] : tensor<4x3xf32>
func.func @addmm(%c: tensor<3xf32>, %a: tensor<4x8xf32>, %b: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %r = aten.addmm %c, %a, %b {beta = 1.000000e+00 : f64, alpha = 5.000000e-01 : f64} : (tensor<3xf32>, tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}

// CHECK-LABEL: func.func @baddbmm(
// CHECK-SAME:    %[[BADDBMM_C:[^:]*]]: tensor<2x4x3xf32>, %[[BADDBMM_A:[^:]*]]: tensor<2x4x8xf32>, %[[BADDBMM_B:[^:]*]]: tensor<2x8x3xf32>
// CHECK-NEXT:    %[[BADDBMM_R:.*]] = aten.addmm %[[BADDBMM_C]], %[[BADDBMM_A]], %[[BADDBMM_B]] : (tensor<2x4x3xf32>, tensor<2x4x8xf32>, tensor<2x8x3xf32>) -> tensor<2x4x3xf32>
// CHECK-NEXT:    func.return %[[BADDBMM_R]] : tensor<2x4x3xf32>
func.func @baddbmm(%c: tensor<2x4x3xf32>, %a: tensor<2x4x8xf32>, %b: tensor<2x8x3xf32>) -> tensor<2x4x3xf32> {
  %r = aten.addmm %c, %a, %b : (tensor<2x4x3xf32>, tensor<2x4x8xf32>, tensor<2x8x3xf32>) -> tensor<2x4x3xf32>
  func.return %r : tensor<2x4x3xf32>
}

// CHECK-LABEL: func.func @embedding(
// CHECK-SAME:    %[[EMBEDDING_W:[^:]*]]: tensor<100x16xf32>, %[[EMBEDDING_I:[^:]*]]: tensor<2x5xi64>
// CHECK-NEXT:    %[[EMBEDDING_R:.*]] = aten.embedding %[[EMBEDDING_W]], %[[EMBEDDING_I]] : (tensor<100x16xf32>, tensor<2x5xi64>) -> tensor<2x5x16xf32>
// CHECK-NEXT:    func.return %[[EMBEDDING_R]] : tensor<2x5x16xf32>
func.func @embedding(%w: tensor<100x16xf32>, %i: tensor<2x5xi64>) -> tensor<2x5x16xf32> {
  %r = aten.embedding %w, %i : (tensor<100x16xf32>, tensor<2x5xi64>) -> tensor<2x5x16xf32>
  func.return %r : tensor<2x5x16xf32>
}

// CHECK-LABEL: func.func @conv2d(
// CHECK-SAME:    %[[CONV2D_X:[^:]*]]: tensor<1x3x16x16xf32>, %[[CONV2D_W:[^:]*]]: tensor<8x3x3x3xf32>, %[[CONV2D_B:[^:]*]]: tensor<8xf32>
// CHECK-NEXT:    %[[CONV2D_R:.*]] = aten.conv2d %[[CONV2D_X]], %[[CONV2D_W]], %[[CONV2D_B]] {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x16x16xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
// CHECK-NEXT:    func.return %[[CONV2D_R]] : tensor<1x8x8x8xf32>
func.func @conv2d(%x: tensor<1x3x16x16xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<8xf32>) -> tensor<1x8x8x8xf32> {
  %r = aten.conv2d %x, %w, %b {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x3x16x16xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  func.return %r : tensor<1x8x8x8xf32>
}

// CHECK-LABEL: func.func @conv2d_depthwise_dilated(
// CHECK-SAME:    %[[CONV2D_DEPTHWISE_DILATED_X:[^:]*]]: tensor<1x8x10x10xf32>, %[[CONV2D_DEPTHWISE_DILATED_W:[^:]*]]: tensor<8x1x3x3xf32>
// CHECK-NEXT:    %[[CONV2D_DEPTHWISE_DILATED_R:.*]] = aten.conv2d %[[CONV2D_DEPTHWISE_DILATED_X]], %[[CONV2D_DEPTHWISE_DILATED_W]] {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 2, 2>, groups = 8 : i64} : (tensor<1x8x10x10xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x6x6xf32>
// CHECK-NEXT:    func.return %[[CONV2D_DEPTHWISE_DILATED_R]] : tensor<1x8x6x6xf32>
func.func @conv2d_depthwise_dilated(%x: tensor<1x8x10x10xf32>, %w: tensor<8x1x3x3xf32>) -> tensor<1x8x6x6xf32> {
  %r = aten.conv2d %x, %w {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 2, 2>, groups = 8 : i64} : (tensor<1x8x10x10xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x6x6xf32>
  func.return %r : tensor<1x8x6x6xf32>
}

