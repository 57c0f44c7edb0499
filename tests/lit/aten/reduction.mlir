// RUN: qopt-opt %s | qopt-opt | filecheck %s
// RUN: QOPT_ROUNDTRIP
// RUN: QOPT_GENERIC_ROUNDTRIP
// Round trip of every op in qopt/dialects/aten/reduction.py.

// GENERIC-LABEL: "func.func"() <{sym_name = "sum_dims_keepdim"
// GENERIC:       "aten.sum"(%{{.*}}) <{dims = array<i64: 1, -1>, keepdim = true}> : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
// GENERIC-LABEL: "func.func"() <{sym_name = "max_dim"
// GENERIC:       %{{.*}}, %{{.*}} = "aten.max_dim"(%{{.*}}) <{dim = 1 : i64}> : (tensor<2x3x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xi64>)
// GENERIC-LABEL: "func.func"() <{sym_name = "std"
// GENERIC:       "aten.std"(%{{.*}}) <{dims = array<i64: 0, 2>, keepdim = true, correction = 0.000000e+00 : f64}> : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>

// CHECK-LABEL: func.func @sum_all(
// CHECK-SAME:    %[[SUM_ALL_X:[^:]*]]: tensor<2x3x4xf32>
// CHECK-NEXT:    %[[SUM_ALL_R0:[^ ,]*]] = aten.sum %[[SUM_ALL_X]] : (tensor<2x3x4xf32>) -> tensor<f32>
// CHECK-NEXT:    func.return %[[SUM_ALL_R0]]
func.func @sum_all(%x: tensor<2x3x4xf32>) -> tensor<f32> {
  %r = aten.sum %x : (tensor<2x3x4xf32>) -> tensor<f32>
  func.return %r : tensor<f32>
}

// CHECK-LABEL: func.func @sum_dims_keepdim(
// CHECK-SAME:    %[[SUM_DIMS_KEEPDIM_X:[^:]*]]: tensor<2x3x4xf32>
// CHECK-NEXT:    %[[SUM_DIMS_KEEPDIM_R0:[^ ,]*]] = aten.sum %[[SUM_DIMS_KEEPDIM_X]] {dims = array<i64: 1, -1>, keepdim = true} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
// CHECK-NEXT:    func.return %[[SUM_DIMS_KEEPDIM_R0]]
func.func @sum_dims_keepdim(%x: tensor<2x3x4xf32>) -> tensor<2x1x1xf32> {
  %r = aten.sum %x {dims = array<i64: 1, -1>, keepdim = true} : (tensor<2x3x4xf32>) -> tensor<2x1x1xf32>
  func.return %r : tensor<2x1x1xf32>
}

// CHECK-LABEL: func.func @sum_int(
// CHECK-SAME:    %[[SUM_INT_I:[^:]*]]: tensor<2x3xi32>
// CHECK-NEXT:    %[[SUM_INT_R0:[^ ,]*]] = aten.sum %[[SUM_INT_I]] {dims = array<i64: 0>} : (tensor<2x3xi32>) -> tensor<3xi64>
// CHECK-NEXT:    func.return %[[SUM_INT_R0]]
func.func @sum_int(%i: tensor<2x3xi32>) -> tensor<3xi64> {
  %r = aten.sum %i {dims = array<i64: 0>} : (tensor<2x3xi32>) -> tensor<3xi64>
  func.return %r : tensor<3xi64>
}

// CHECK-LABEL: func.func @mean(
// CHECK-SAME:    %[[MEAN_X:[^:]*]]: tensor<2x3x4xf32>
// CHECK-NEXT:    %[[MEAN_R0:[^ ,]*]] = aten.mean %[[MEAN_X]] {dims = array<i64: -1>} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %[[MEAN_R0]]
func.func @mean(%x: tensor<2x3x4xf32>) -> tensor<2x3xf32> {
  %r = aten.mean %x {dims = array<i64: -1>} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @prod(
// CHECK-SAME:    %[[PROD_X:[^:]*]]: tensor<2x3x4xf32>
// CHECK-NEXT:    %[[PROD_R0:[^ ,]*]] = aten.prod %[[PROD_X]] {dims = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %[[PROD_R0]]
func.func @prod(%x: tensor<2x3x4xf32>) -> tensor<2x4xf32> {
  %r = aten.prod %x {dims = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @amax(
// CHECK-SAME:    %[[AMAX_X:[^:]*]]: tensor<2x3x4xf32>
// CHECK-NEXT:    %[[AMAX_R0:[^ ,]*]] = aten.amax %[[AMAX_X]] {dims = array<i64: 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    func.return %[[AMAX_R0]]
func.func @amax(%x: tensor<2x3x4xf32>) -> tensor<4xf32> {
  %r = aten.amax %x {dims = array<i64: 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func @amin(
// CHECK-SAME:    %[[AMIN_X:[^:]*]]: tensor<2x3x4xf32>
// CHECK-NEXT:    %[[AMIN_R0:[^ ,]*]] = aten.amin %[[AMIN_X]] {dims = array<i64: -1>, keepdim = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
// CHECK-NEXT:    func.return %[[AMIN_R0]]
func.func @amin(%x: tensor<2x3x4xf32>) -> tensor<2x3x1xf32> {
  %r = aten.amin %x {dims = array<i64: -1>, keepdim = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  func.return %r : tensor<2x3x1xf32>
}

// CHECK-LABEL: func.func @any(
// CHECK-SAME:    %[[ANY_B:[^:]*]]: tensor<2x3x4xi1>
// CHECK-NEXT:    %[[ANY_R0:[^ ,]*]] = aten.any %[[ANY_B]] : (tensor<2x3x4xi1>) -> tensor<i1>
// CHECK-NEXT:    func.return %[[ANY_R0]]
func.func @any(%b: tensor<2x3x4xi1>) -> tensor<i1> {
  %r = aten.any %b : (tensor<2x3x4xi1>) -> tensor<i1>
  func.return %r : tensor<i1>
}

// CHECK-LABEL: func.func @all(
// CHECK-SAME:    %[[ALL_B:[^:]*]]: tensor<2x3x4xi1>
// CHECK-NEXT:    %[[ALL_R0:[^ ,]*]] = aten.all %[[ALL_B]] {dims = array<i64: 1>} : (tensor<2x3x4xi1>) -> tensor<2x4xi1>
// CHECK-NEXT:    func.return %[[ALL_R0]]
func.func @all(%b: tensor<2x3x4xi1>) -> tensor<2x4xi1> {
  %r = aten.all %b {dims = array<i64: 1>} : (tensor<2x3x4xi1>) -> tensor<2x4xi1>
  func.return %r : tensor<2x4xi1>
}

// CHECK-LABEL: func.func @max(
// CHECK-SAME:    %[[MAX_X:[^:]*]]: tensor<2x3x4xf32>
// CHECK-NEXT:    %[[MAX_R0:[^ ,]*]] = aten.max %[[MAX_X]] : (tensor<2x3x4xf32>) -> tensor<f32>
// CHECK-NEXT:    func.return %[[MAX_R0]]
func.func @max(%x: tensor<2x3x4xf32>) -> tensor<f32> {
  %r = aten.max %x : (tensor<2x3x4xf32>) -> tensor<f32>
  func.return %r : tensor<f32>
}

// CHECK-LABEL: func.func @min(
// CHECK-SAME:    %[[MIN_X:[^:]*]]: tensor<2x3x4xf32>
// CHECK-NEXT:    %[[MIN_R0:[^ ,]*]] = aten.min %[[MIN_X]] : (tensor<2x3x4xf32>) -> tensor<f32>
// CHECK-NEXT:    func.return %[[MIN_R0]]
func.func @min(%x: tensor<2x3x4xf32>) -> tensor<f32> {
  %r = aten.min %x : (tensor<2x3x4xf32>) -> tensor<f32>
  func.return %r : tensor<f32>
}

// CHECK-LABEL: func.func @max_dim(
// CHECK-SAME:    %[[MAX_DIM_X:[^:]*]]: tensor<2x3x4xf32>
// CHECK-NEXT:    %[[MAX_DIM_R0:[^ ,]*]], %[[MAX_DIM_R1:[^ ,]*]] = aten.max_dim %[[MAX_DIM_X]] {dim = 1 : i64} : (tensor<2x3x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xi64>)
// CHECK-NEXT:    func.return %[[MAX_DIM_R0]], %[[MAX_DIM_R1]]
func.func @max_dim(%x: tensor<2x3x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xi64>) {
  %v, %n = aten.max_dim %x {dim = 1 : i64} : (tensor<2x3x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xi64>)
  func.return %v, %n : tensor<2x4xf32>, tensor<2x4xi64>
}

// CHECK-LABEL: func.func @min_dim(
// CHECK-SAME:    %[[MIN_DIM_X:[^:]*]]: tensor<2x3x4xf32>
// CHECK-NEXT:    %[[MIN_DIM_R0:[^ ,]*]], %[[MIN_DIM_R1:[^ ,]*]] = aten.min_dim %[[MIN_DIM_X]] {dim = -1 : i64, keepdim = true} : (tensor<2x3x4xf32>) -> (tensor<2x3x1xf32>, tensor<2x3x1xi64>)
// CHECK-NEXT:    func.return %[[MIN_DIM_R0]], %[[MIN_DIM_R1]]
func.func @min_dim(%x: tensor<2x3x4xf32>) -> (tensor<2x3x1xf32>, tensor<2x3x1xi64>) {
  %v, %n = aten.min_dim %x {dim = -1 : i64, keepdim = true} : (tensor<2x3x4xf32>) -> (tensor<2x3x1xf32>, tensor<2x3x1xi64>)
  func.return %v, %n : tensor<2x3x1xf32>, tensor<2x3x1xi64>
}

// CHECK-LABEL: func.func @argmax_all(
// CHECK-SAME:    %[[ARGMAX_ALL_X:[^:]*]]: tensor<2x3x4xf32>
// CHECK-NEXT:    %[[ARGMAX_ALL_R0:[^ ,]*]] = aten.argmax %[[ARGMAX_ALL_X]] : (tensor<2x3x4xf32>) -> tensor<i64>
// CHECK-NEXT:    func.return %[[ARGMAX_ALL_R0]]
func.func @argmax_all(%x: tensor<2x3x4xf32>) -> tensor<i64> {
  %r = aten.argmax %x : (tensor<2x3x4xf32>) -> tensor<i64>
  func.return %r : tensor<i64>
}

// CHECK-LABEL: func.func @argmin(
// CHECK-SAME:    %[[ARGMIN_X:[^:]*]]: tensor<2x3x4xf32>
// CHECK-NEXT:    %[[ARGMIN_R0:[^ ,]*]] = aten.argmin %[[ARGMIN_X]] {dim = 1 : i64, keepdim = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xi64>
// CHECK-NEXT:    func.return %[[ARGMIN_R0]]
func.func @argmin(%x: tensor<2x3x4xf32>) -> tensor<2x1x4xi64> {
  %r = aten.argmin %x {dim = 1 : i64, keepdim = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xi64>
  func.return %r : tensor<2x1x4xi64>
}

// CHECK-LABEL: func.func @var(
// CHECK-SAME:    %[[VAR_X:[^:]*]]: tensor<2x3x4xf32>
// CHECK-NEXT:    %[[VAR_R0:[^ ,]*]] = aten.var %[[VAR_X]] {dims = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %[[VAR_R0]]
func.func @var(%x: tensor<2x3x4xf32>) -> tensor<2x4xf32> {
  %r = aten.var %x {dims = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @std(
// CHECK-SAME:    %[[STD_X:[^:]*]]: tensor<2x3x4xf32>
// CHECK-NEXT:    %[[STD_R0:[^ ,]*]] = aten.std %[[STD_X]] {dims = array<i64: 0, 2>, keepdim = true, correction = 0.000000e+00 : f64} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
// CHECK-NEXT:    func.return %[[STD_R0]]
func.func @std(%x: tensor<2x3x4xf32>) -> tensor<1x3x1xf32> {
  %r = aten.std %x {dims = array<i64: 0, 2>, keepdim = true, correction = 0.000000e+00 : f64} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
  func.return %r : tensor<1x3x1xf32>
}

// CHECK-LABEL: func.func @softmax(
// CHECK-SAME:    %[[SOFTMAX_X:[^:]*]]: tensor<2x3x4xf32>
// CHECK-NEXT:    %[[SOFTMAX_R0:[^ ,]*]] = aten.softmax %[[SOFTMAX_X]] {dim = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    func.return %[[SOFTMAX_R0]]
func.func @softmax(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %r = aten.softmax %x {dim = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %r : tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @safe_softmax(
// CHECK-SAME:    %[[SAFE_SOFTMAX_X:[^:]*]]: tensor<2x3x4xf32>
// CHECK-NEXT:    %[[SAFE_SOFTMAX_R0:[^ ,]*]] = aten.softmax %[[SAFE_SOFTMAX_X]] {dim = 2 : i64, safe = true} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    func.return %[[SAFE_SOFTMAX_R0]]
func.func @safe_softmax(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %r = aten.softmax %x {dim = 2 : i64, safe = true} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %r : tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @log_softmax(
// CHECK-SAME:    %[[LOG_SOFTMAX_X:[^:]*]]: tensor<2x3x4xf32>
// CHECK-NEXT:    %[[LOG_SOFTMAX_R0:[^ ,]*]] = aten.log_softmax %[[LOG_SOFTMAX_X]] {dim = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    func.return %[[LOG_SOFTMAX_R0]]
func.func @log_softmax(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %r = aten.log_softmax %x {dim = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %r : tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @sort(
// CHECK-SAME:    %[[SORT_X:[^:]*]]: tensor<2x3x4xf32>
// CHECK-NEXT:    %[[SORT_R0:[^ ,]*]], %[[SORT_R1:[^ ,]*]] = aten.sort %[[SORT_X]] {dim = -1 : i64, descending = true} : (tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xi64>)
// CHECK-NEXT:    func.return %[[SORT_R0]], %[[SORT_R1]]
func.func @sort(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xi64>) {
  %v, %i = aten.sort %x {dim = -1 : i64, descending = true} : (tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xi64>)
  func.return %v, %i : tensor<2x3x4xf32>, tensor<2x3x4xi64>
}

// CHECK-LABEL: func.func @topk(
// CHECK-SAME:    %[[TOPK_X:[^:]*]]: tensor<2x3x4xi32>
// CHECK-NEXT:    %[[TOPK_R0:[^ ,]*]], %[[TOPK_R1:[^ ,]*]] = aten.sort %[[TOPK_X]] {dim = 1 : i64, k = 2 : i64} : (tensor<2x3x4xi32>) -> (tensor<2x2x4xi32>, tensor<2x2x4xi64>)
// CHECK-NEXT:    func.return %[[TOPK_R0]], %[[TOPK_R1]]
func.func @topk(%x: tensor<2x3x4xi32>) -> (tensor<2x2x4xi32>, tensor<2x2x4xi64>) {
  %v, %i = aten.sort %x {dim = 1 : i64, k = 2 : i64} : (tensor<2x3x4xi32>) -> (tensor<2x2x4xi32>, tensor<2x2x4xi64>)
  func.return %v, %i : tensor<2x2x4xi32>, tensor<2x2x4xi64>
}
