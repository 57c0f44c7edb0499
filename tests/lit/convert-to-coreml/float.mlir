// RUN: qopt-opt %s -p convert-to-coreml --split-input-file | filecheck %s
// Lowering rules of float aten ops (and arith.constant) onto the coreml dialect.

// A float linear with bias: both constants stay inline (small), one linear op.
// CHECK-LABEL: func.func @linear(
// CHECK-SAME:    attributes {coreml.opset = "iOS18"}
// CHECK:         %[[W:.*]] = coreml.const dense<5.000000e-01> : tensor<3x4xf32>
// CHECK:         %[[B:.*]] = coreml.const dense<1.000000e+00> : tensor<3xf32>
// CHECK:         %[[Y:.*]] = coreml.linear %x, %[[W]], %[[B]]
// CHECK:         func.return %[[Y]]
func.func @linear(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<5.000000e-01> : tensor<3x4xf32>
  %b = arith.constant dense<1.000000e+00> : tensor<3xf32>
  %y = aten.linear %x, %w, %b : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// A run-time weight without bias: matmul with transpose_y (MIL linear wants a
// compile-time weight).
// CHECK-LABEL: func.func @linear_nobias(
// CHECK-NOT:     coreml.const
// CHECK:         coreml.matmul %x, %w {transpose_x = false, transpose_y = true}
func.func @linear_nobias(%x: tensor<2x4xf32>, %w: tensor<3x4xf32>) -> tensor<2x3xf32> {
  %y = aten.linear %x, %w : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// A constant weight without bias: linear, as coremltools writes it, with one zero
// bias per width shared by the linears of that width.
// CHECK-LABEL: func.func @linear_const_nobias(
// CHECK:         %[[W:.*]] = coreml.const {{.*}} : tensor<3x4xf32>
// CHECK:         %[[B:.*]] = coreml.const dense<0.000000e+00> : tensor<3xf32>
// CHECK-NEXT:    %[[Y:.*]] = coreml.linear %x, %[[W]], %[[B]]
// CHECK-NEXT:    %[[Z:.*]] = coreml.linear %[[Y]], %{{.*}}, %[[B]]
// CHECK-NOT:     coreml.const dense<0.000000e+00>
// CHECK:         func.return
func.func @linear_const_nobias(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [0.5, 0.5, 0.5, 0.5], [-1.0, 0.0, 1.0, 2.0]]> : tensor<3x4xf32>
  %v = arith.constant dense<[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]> : tensor<3x3xf32>
  %y = aten.linear %x, %w : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %z = aten.linear %y, %v : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
  func.return %z : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @matmul(
// CHECK:         coreml.matmul %a, %b {transpose_x = false, transpose_y = false}
func.func @matmul(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>) -> tensor<2x3xf32> {
  %y = aten.matmul %a, %b : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// Padding (ph, pw) becomes MIL's custom [top, bottom, left, right].
// CHECK-LABEL: func.func @conv2d(
// CHECK:         coreml.conv %x, %w, %b {strides = array<i64: 2, 2>, pad_type = "custom", pad = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64
func.func @conv2d(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>, %b: tensor<3xf32>) -> tensor<1x3x2x2xf32> {
  %y = aten.conv2d %x, %w, %b {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>) -> tensor<1x3x2x2xf32>
  func.return %y : tensor<1x3x2x2xf32>
}

// -----

// i64 indices (function arguments) become i32: MIL has no int64.
// CHECK-LABEL: func.func @embedding(%w: tensor<5x4xf32>, %i: tensor<3xi32>) -> tensor<3x4xf32>
// CHECK:         coreml.gather %w, %i {axis = 0 : i64}
func.func @embedding(%w: tensor<5x4xf32>, %i: tensor<3xi64>) -> tensor<3x4xf32> {
  %y = aten.embedding %w, %i : (tensor<5x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}

// -----

// One-to-one activations; an rsqrt whose input may be -0.0 is real_div(1, sqrt) (MIL
// rsqrt's epsilon turns -0.0 into +0.0), gelu gets its mode, neg is mul by -1.
// CHECK-LABEL: func.func @unary(
// CHECK:         %[[R0:.*]] = coreml.relu %x
// CHECK-NEXT:    %[[R1:.*]] = coreml.silu %[[R0]]
// CHECK-NEXT:    %[[R2:.*]] = coreml.sigmoid %[[R1]]
// CHECK-NEXT:    %[[R3:.*]] = coreml.tanh %[[R2]]
// CHECK-NEXT:    %[[R4:.*]] = coreml.exp %[[R3]]
// CHECK-NEXT:    %[[R5:.*]] = coreml.sqrt %[[R4]]
// CHECK-NEXT:    %[[R6:.*]] = coreml.sin %[[R5]]
// CHECK-NEXT:    %[[R7:.*]] = coreml.cos %[[R6]]
// CHECK-NEXT:    %[[R8:.*]] = coreml.erf %[[R7]]
// CHECK-NEXT:    %[[S9:.*]] = coreml.sqrt %[[R8]]
// CHECK-NEXT:    %[[ONE:.*]] = coreml.const dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[R9:.*]] = coreml.real_div %[[ONE]], %[[S9]]
// CHECK-NEXT:    %[[R10:.*]] = coreml.gelu %[[R9]] {mode = "EXACT"}
// CHECK-NEXT:    %[[R11:.*]] = coreml.gelu %[[R10]] {mode = "TANH_APPROXIMATION"}
// CHECK-NEXT:    %[[M1:.*]] = coreml.const dense<-1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[R12:.*]] = coreml.mul %[[R11]], %[[M1]]
// CHECK-NEXT:    func.return %[[R12]]
func.func @unary(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = aten.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = aten.silu %0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = aten.sigmoid %1 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = aten.tanh %2 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = aten.exp %3 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = aten.sqrt %4 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %6 = aten.sin %5 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %7 = aten.cos %6 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %8 = aten.erf %7 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %9 = aten.rsqrt %8 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %10 = aten.gelu %9 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %11 = aten.gelu %10 {approximate = "tanh"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %12 = aten.neg %11 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %12 : tensor<2x3xf32>
}

// -----

// RMSNorm's rsqrt(mean(x * x) + eps): a sum with a constant holding no -0.0 is never
// -0.0, so it is MIL rsqrt (epsilon 0), as coremltools writes it; plus -0.0 is not.
// CHECK-LABEL: func.func @rsqrt_of_sum(
// CHECK:         %[[S:.*]] = coreml.add %x, %{{.*}}
// CHECK-NEXT:    %[[R:.*]] = coreml.rsqrt %[[S]] {epsilon = 0.000000e+00 : f64}
// CHECK:         %[[T:.*]] = coreml.add %[[R]], %{{.*}}
// CHECK-NEXT:    %[[Q:.*]] = coreml.sqrt %[[T]]
// CHECK:         coreml.real_div %{{.*}}, %[[Q]]
func.func @rsqrt_of_sum(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %eps = arith.constant dense<1.000000e-06> : tensor<f32>
  %negzero = arith.constant dense<-0.000000e+00> : tensor<f32>
  %0 = aten.add %x, %eps : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %1 = aten.rsqrt %0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = aten.add %1, %negzero : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %3 = aten.rsqrt %2 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %3 : tensor<2x3xf32>
}

// -----

// Broadcasting binaries; sub's alpha scales the subtrahend; div is real_div.
// CHECK-LABEL: func.func @binary(
// CHECK:         %[[A:.*]] = coreml.add %x, %y
// CHECK-NEXT:    %[[ALPHA:.*]] = coreml.const dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT:    %[[YS:.*]] = coreml.mul %y, %[[ALPHA]]
// CHECK-NEXT:    %[[S:.*]] = coreml.sub %[[A]], %[[YS]]
// CHECK-NEXT:    %[[M:.*]] = coreml.mul %[[S]], %y
// CHECK-NEXT:    %[[D:.*]] = coreml.real_div %[[M]], %y
// CHECK-NEXT:    %[[P:.*]] = coreml.pow %[[D]], %x
// CHECK-NEXT:    %[[MX:.*]] = coreml.maximum %[[P]], %x
// CHECK-NEXT:    %[[MN:.*]] = coreml.minimum %[[MX]], %x
// CHECK-NEXT:    func.return %[[MN]]
func.func @binary(%x: tensor<2x3xf32>, %y: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = aten.add %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = aten.sub %0, %y {alpha = 5.000000e-01 : f64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %2 = aten.mul %1, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %3 = aten.div %2, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %4 = aten.pow %3, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = aten.maximum %4, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %6 = aten.minimum %5, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %6 : tensor<2x3xf32>
}

// -----

// clamp -> clip (a missing bound is +-inf); to -> cast; clone of the same type folds away.
// CHECK-LABEL: func.func @clamp_cast(
// CHECK:         %[[C0:.*]] = coreml.clip %x {alpha = -1.000000e+00 : f64, beta = 6.000000e+00 : f64}
// CHECK-NEXT:    %[[C1:.*]] = coreml.clip %x {alpha = 0.000000e+00 : f64, beta = 0x7ff0000000000000 : f64}
// CHECK-NEXT:    %[[C2:.*]] = coreml.cast %x {dtype = "int32"} : (tensor<2x3xf32>) -> tensor<2x3xi32>
// CHECK-NEXT:    func.return %[[C0]], %[[C1]], %[[C2]], %x :
func.func @clamp_cast(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x3xf32>) {
  %0 = aten.clamp %x {min = -1.000000e+00 : f64, max = 6.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = aten.clamp %x {min = 0.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = aten.to %x : (tensor<2x3xf32>) -> tensor<2x3xi32>
  %3 = aten.clone %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi32>, tensor<2x3xf32>
}

// -----

// A cast of a constant (codebook codes) folds into the constant.
// CHECK-LABEL: func.func @cast_const(
// CHECK-NEXT:    %[[C:.*]] = coreml.const dense<{{\[\[}}1, 2], [3, 4]]> : tensor<2x2xi32>
// CHECK-NEXT:    func.return %[[C]]
func.func @cast_const() -> tensor<2x2xi32> {
  %c = arith.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xui8>
  %0 = aten.to %c : (tensor<2x2xui8>) -> tensor<2x2xi32>
  func.return %0 : tensor<2x2xi32>
}

// -----

// Negative dims are normalised; no dims reduces all axes.
// CHECK-LABEL: func.func @reductions(
// CHECK:         coreml.reduce_mean %x {axes = array<i64: 2>, keep_dims = false}
// CHECK:         coreml.reduce_sum %x {axes = array<i64: 1>, keep_dims = true}
// CHECK:         coreml.reduce_max %x {axes = array<i64: 0, 1, 2>, keep_dims = false}
// CHECK:         coreml.softmax %x {axis = 2 : i64}
func.func @reductions(%x: tensor<2x3x4xf32>) -> (tensor<2x3xf32>, tensor<2x1x4xf32>, tensor<f32>, tensor<2x3x4xf32>) {
  %0 = aten.mean %x {dims = array<i64: -1>} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  %1 = aten.sum %x {dims = array<i64: 1>, keepdim = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %2 = aten.amax %x : (tensor<2x3x4xf32>) -> tensor<f32>
  %3 = aten.softmax %x {dim = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<2x1x4xf32>, tensor<f32>, tensor<2x3x4xf32>
}

// -----

// MIL layer_norm takes constant gamma / beta only: run-time ones are a mul and an add.
// CHECK-LABEL: func.func @layer_norm(
// CHECK:         %[[N:.*]] = coreml.layer_norm %x {axes = array<i64: 2>, epsilon = 1.000000e-05 : f64
// CHECK-NEXT:    %[[S:.*]] = coreml.mul %[[N]], %w
// CHECK-NEXT:    coreml.add %[[S]], %b
func.func @layer_norm(%x: tensor<2x3x4xf32>, %w: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2x3x4xf32> {
  %r = aten.layer_norm %x weight(%w : tensor<4xf32>) bias(%b : tensor<4xf32>) {normalized_shape = array<i64: 4>, eps = 1.000000e-05 : f64} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  func.return %r : tensor<2x3x4xf32>
}

// -----

// view / unsqueeze / squeeze are reshapes; transpose / permute carry a perm;
// slice is slice_by_index with the end clamped; cat is concat.
// CHECK-LABEL: func.func @shapes(
// CHECK:         %[[V:.*]] = coreml.reshape %x {shape = array<i64: 6, 4>}
// CHECK:         %[[U:.*]] = coreml.reshape %x {shape = array<i64: 2, 3, 4, 1>}
// CHECK:         %[[SQ:.*]] = coreml.reshape %[[U]] {shape = array<i64: 2, 3, 4>}
// CHECK:         %[[T:.*]] = coreml.transpose %[[SQ]] {perm = array<i64: 2, 1, 0>}
// CHECK:         %[[P:.*]] = coreml.transpose %x {perm = array<i64: 2, 0, 1>}
// CHECK:         %[[SL:.*]] = coreml.slice_by_index %x {begin = array<i64: 0, 0, 1>, end = array<i64: 2, 3, 4>, stride = array<i64: 1, 1, 2>}
// CHECK:         %[[CAT:.*]] = coreml.concat %x, %x {axis = 2 : i64, interleave = false}
// CHECK:         func.return %[[V]], %[[U]], %[[T]], %[[P]], %[[SL]], %[[CAT]] :
func.func @shapes(%x: tensor<2x3x4xf32>) -> (tensor<6x4xf32>, tensor<2x3x4x1xf32>, tensor<4x3x2xf32>, tensor<4x2x3xf32>, tensor<2x3x2xf32>, tensor<2x3x8xf32>) {
  %0 = aten.view %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = aten.unsqueeze %x {dim = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4x1xf32>
  %2 = aten.squeeze %1 {dims = array<i64: 3>} : (tensor<2x3x4x1xf32>) -> tensor<2x3x4xf32>
  %3 = aten.transpose %2 {dim0 = 0 : i64, dim1 = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  %4 = aten.permute %x {dims = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %5 = aten.slice %x {dim = 2 : i64, start = 1 : i64, end = 9223372036854775807 : i64, step = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>
  %6 = aten.cat %x, %x {dim = -1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x8xf32>
  func.return %0, %1, %3, %4, %5, %6 : tensor<6x4xf32>, tensor<2x3x4x1xf32>, tensor<4x3x2xf32>, tensor<4x2x3xf32>, tensor<2x3x2xf32>, tensor<2x3x8xf32>
}

// -----

// Pooling; adaptive to 1x1 is a reduce_mean, to a divisor an avg_pool with valid padding.
// CHECK-LABEL: func.func @pooling(
// CHECK:         coreml.max_pool %x {kernel_sizes = array<i64: 2, 2>, strides = array<i64: 2, 2>, pad_type = "custom", pad = array<i64: 0, 0, 0, 0>, ceil_mode = false}
// CHECK:         coreml.avg_pool %x {kernel_sizes = array<i64: 3, 3>, strides = array<i64: 2, 2>, pad_type = "custom", pad = array<i64: 1, 1, 1, 1>, ceil_mode = false, exclude_padding_from_average = true}
// CHECK:         coreml.reduce_mean %x {axes = array<i64: 2, 3>, keep_dims = true}
// CHECK:         coreml.avg_pool %x {kernel_sizes = array<i64: 2, 2>, strides = array<i64: 2, 2>, pad_type = "valid", pad = array<i64: 0, 0, 0, 0>, ceil_mode = false, exclude_padding_from_average = false}
func.func @pooling(%x: tensor<1x2x4x4xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x1x1xf32>, tensor<1x2x2x2xf32>) {
  %0 = aten.max_pool2d %x {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %1 = aten.avg_pool2d %x {kernel_size = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, count_include_pad = false} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %2 = aten.adaptive_avg_pool2d %x {output_size = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x1x1xf32>
  %3 = aten.adaptive_avg_pool2d %x {output_size = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  func.return %0, %1, %2, %3 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x1x1xf32>, tensor<1x2x2x2xf32>
}

// -----

// torch's pooling windows without MIL's ceil_mode: the end padding the last window
// needs (asymmetric); count_include_pad divides by the window clipped to the padded
// input (a constant [oh, ow] scale), divisor_override by a constant; an unbatched
// input is pooled as [1, C, H, W].
// CHECK-LABEL: func.func @pool_windows(
// CHECK:         %[[A:.*]] = coreml.avg_pool %x {{.*}}pad = array<i64: 1, 1, 0, 1>, ceil_mode = false, exclude_padding_from_average = false}
// CHECK-NEXT:    %[[S:.*]] = coreml.const dense<{{\[}}[1.000000e+00, 1.000000e+00, 1.500000e+00]{{.*}} : tensor<4x3xf32>
// CHECK-NEXT:    %[[AS:.*]] = coreml.mul %[[A]], %[[S]]
// CHECK:         %[[E:.*]] = coreml.avg_pool %x {{.*}}pad = array<i64: 1, 1, 0, 1>, ceil_mode = false, exclude_padding_from_average = true}
// CHECK:         %[[D:.*]] = coreml.avg_pool %x {kernel_sizes = array<i64: 2, 3>, {{.*}}exclude_padding_from_average = false}
// CHECK-NEXT:    %[[F:.*]] = coreml.const dense<1.500000e+00> : tensor<f32>
// CHECK-NEXT:    %[[DS:.*]] = coreml.mul %[[D]], %[[F]]
// CHECK:         %[[U:.*]] = coreml.reshape %u {shape = array<i64: 1, 2, 7, 6>}
// CHECK-NEXT:    %[[M:.*]] = coreml.max_pool %[[U]] {{.*}}pad = array<i64: 1, 1, 1, 2>, ceil_mode = false}
// CHECK-NEXT:    %[[MU:.*]] = coreml.reshape %[[M]] {shape = array<i64: 2, 4, 4>}
// CHECK:         func.return %[[AS]], %[[E]], %[[DS]], %[[MU]]
func.func @pool_windows(%x: tensor<1x2x7x6xf32>, %u: tensor<2x7x6xf32>) -> (tensor<1x2x4x3xf32>, tensor<1x2x4x3xf32>, tensor<1x2x3x2xf32>, tensor<2x4x4xf32>) {
  %0 = aten.avg_pool2d %x {kernel_size = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 0>, ceil_mode = true} : (tensor<1x2x7x6xf32>) -> tensor<1x2x4x3xf32>
  %1 = aten.avg_pool2d %x {kernel_size = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 0>, ceil_mode = true, count_include_pad = false} : (tensor<1x2x7x6xf32>) -> tensor<1x2x4x3xf32>
  %2 = aten.avg_pool2d %x {kernel_size = array<i64: 2, 3>, stride = array<i64: 2, 2>, divisor_override = 4 : i64} : (tensor<1x2x7x6xf32>) -> tensor<1x2x3x2xf32>
  %3 = aten.max_pool2d %u {kernel_size = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, ceil_mode = true} : (tensor<2x7x6xf32>) -> tensor<2x4x4xf32>
  func.return %0, %1, %2, %3 : tensor<1x2x4x3xf32>, tensor<1x2x4x3xf32>, tensor<1x2x3x2xf32>, tensor<2x4x4xf32>
}
