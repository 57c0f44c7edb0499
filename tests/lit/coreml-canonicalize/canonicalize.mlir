// RUN: qopt-opt %s --split-input-file -p coreml-canonicalize | filecheck %s
// RUN: qopt-opt %s --split-input-file -p coreml-canonicalize --print-weights | filecheck %s --check-prefix=WEIGHTS
// RUN: qopt-opt %s --split-input-file -p coreml-canonicalize,coreml-canonicalize | filecheck %s
// coreml-canonicalize (coreml -> coreml): exact data-movement rewrites. Consecutive
// reshapes merge, a reshape to its operand's shape goes, transposes compose (and
// cancel when the composition is the identity), a whole slice goes, a slice of a
// slice merges, a reshape of a lone const folds. A second run
// changes nothing.

// Three reshapes become one; the result keeps the last shape.
// CHECK-LABEL: func.func @reshapes(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
// CHECK-NEXT:    %{{.*}} = coreml.reshape %x {shape = array<i64: 4, -1>} : (tensor<2x3x4xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:    func.return
func.func @reshapes(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %a = coreml.reshape %x {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %b = coreml.reshape %a {shape = array<i64: 24>} : (tensor<6x4xf32>) -> tensor<24xf32>
  %c = coreml.reshape %b {shape = array<i64: 4, -1>} : (tensor<24xf32>) -> tensor<4x6xf32>
  func.return %c : tensor<4x6xf32>
}

// -----

// A reshape back to the operand's shape goes, whatever else reads the inner one.
// CHECK-LABEL: func.func @round_trip(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<6xf32>) {
// CHECK-NEXT:    %[[A:.*]] = coreml.reshape %x {shape = array<i64: 6>} : (tensor<2x3xf32>) -> tensor<6xf32>
// CHECK-NEXT:    func.return %x, %[[A]] : tensor<2x3xf32>, tensor<6xf32>
func.func @round_trip(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<6xf32>) {
  %a = coreml.reshape %x {shape = array<i64: 6>} : (tensor<2x3xf32>) -> tensor<6xf32>
  %b = coreml.reshape %a {shape = array<i64: 2, 3>} : (tensor<6xf32>) -> tensor<2x3xf32>
  %c = coreml.reshape %b {shape = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %c, %a : tensor<2x3xf32>, tensor<6xf32>
}

// -----

// An inner reshape with another reader stays (merging would not remove an op), and
// an outer shape that copies dims (0) of the inner result is not merged.
// CHECK-LABEL: func.func @kept
// CHECK-NEXT:    %a = coreml.reshape %x {shape = array<i64: 6, 4>}
// CHECK-NEXT:    %b = coreml.reshape %a {shape = array<i64: 4, 6>}
// CHECK-NEXT:    %c = coreml.reshape %x {shape = array<i64: 6, 2, 2>}
// CHECK-NEXT:    %d = coreml.reshape %c {shape = array<i64: 0, 4, 1>}
// CHECK-NEXT:    func.return %a, %b, %d
func.func @kept(%x: tensor<2x3x4xf32>) -> (tensor<6x4xf32>, tensor<4x6xf32>, tensor<6x4x1xf32>) {
  %a = coreml.reshape %x {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %b = coreml.reshape %a {shape = array<i64: 4, 6>} : (tensor<6x4xf32>) -> tensor<4x6xf32>
  %c = coreml.reshape %x {shape = array<i64: 6, 2, 2>} : (tensor<2x3x4xf32>) -> tensor<6x2x2xf32>
  %d = coreml.reshape %c {shape = array<i64: 0, 4, 1>} : (tensor<6x2x2xf32>) -> tensor<6x4x1xf32>
  func.return %a, %b, %d : tensor<6x4xf32>, tensor<4x6xf32>, tensor<6x4x1xf32>
}

// -----

// Transposes compose: [0 2 1 3] then [0 1 3 2] reads x's dims [0 2 3 1].
// CHECK-LABEL: func.func @transposes(%x: tensor<1x2x3x4xf32>) -> tensor<1x3x4x2xf32> {
// CHECK-NEXT:    %{{.*}} = coreml.transpose %x {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x4x2xf32>
// CHECK-NEXT:    func.return
func.func @transposes(%x: tensor<1x2x3x4xf32>) -> tensor<1x3x4x2xf32> {
  %a = coreml.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x2x3x4xf32>) -> tensor<1x3x2x4xf32>
  %b = coreml.transpose %a {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x3x2x4xf32>) -> tensor<1x3x4x2xf32>
  func.return %b : tensor<1x3x4x2xf32>
}

// -----

// A transpose pair that cancels goes, as does an identity transpose; the inner one
// stays while something else reads it.
// CHECK-LABEL: func.func @cancel(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<4x3x2xf32>) {
// CHECK-NEXT:    %a = coreml.transpose %x {perm = array<i64: 2, 1, 0>}
// CHECK-NEXT:    func.return %x, %x, %a
func.func @cancel(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<4x3x2xf32>) {
  %a = coreml.transpose %x {perm = array<i64: 2, 1, 0>} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  %b = coreml.transpose %a {perm = array<i64: 2, 1, 0>} : (tensor<4x3x2xf32>) -> tensor<2x3x4xf32>
  %c = coreml.transpose %x {perm = array<i64: 0, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %b, %c, %a : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<4x3x2xf32>
}

// -----

// Only the identity permutation goes: a transpose that moves size-1 dims stays.
// CHECK-LABEL: func.func @ones
// CHECK-NEXT:    %a = coreml.transpose %x {perm = array<i64: 1, 0>}
func.func @ones(%x: tensor<1x1xf32>) -> tensor<1x1xf32> {
  %a = coreml.transpose %x {perm = array<i64: 1, 0>} : (tensor<1x1xf32>) -> tensor<1x1xf32>
  func.return %a : tensor<1x1xf32>
}

// -----

// A slice of every element in order goes; a reversed, a strided or a squeezing
// slice stays.
// CHECK-LABEL: func.func @slices
// CHECK-NEXT:    %b = coreml.slice_by_index %x {begin = array<i64: 0, 0>, end = array<i64: 2, 3>, stride = array<i64: 1, -1>, begin_mask = array<i1: false, true>, end_mask = array<i1: false, true>}
// CHECK-NEXT:    %c = coreml.slice_by_index %x {begin = array<i64: 0, 0>, end = array<i64: 2, 3>, stride = array<i64: 1, 2>}
// CHECK-NEXT:    %d = coreml.slice_by_index %x {begin = array<i64: 0, 0>, end = array<i64: 1, 3>, stride = array<i64: 1, 1>, squeeze_mask = array<i1: true, false>}
// CHECK-NEXT:    func.return %x, %b, %c, %d
func.func @slices(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x2xf32>, tensor<3xf32>) {
  %a = coreml.slice_by_index %x {begin = array<i64: 0, -3>, end = array<i64: 2, 3>, stride = array<i64: 1, 1>, end_mask = array<i1: true, false>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = coreml.slice_by_index %x {begin = array<i64: 0, 0>, end = array<i64: 2, 3>, stride = array<i64: 1, -1>, begin_mask = array<i1: false, true>, end_mask = array<i1: false, true>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %c = coreml.slice_by_index %x {begin = array<i64: 0, 0>, end = array<i64: 2, 3>, stride = array<i64: 1, 2>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  %d = coreml.slice_by_index %x {begin = array<i64: 0, 0>, end = array<i64: 1, 3>, stride = array<i64: 1, 1>, squeeze_mask = array<i1: true, false>} : (tensor<2x3xf32>) -> tensor<3xf32>
  func.return %a, %b, %c, %d : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x2xf32>, tensor<3xf32>
}

// -----

// A slice of a slice: rows 1, 3, .., 15, then of those columns 1, 3, .., 15 (swin's
// patch merging), as one slice; a slice with another reader stays.
// CHECK-LABEL: func.func @strided
// CHECK-NEXT:    %{{.*}} = coreml.slice_by_index %x {begin = array<i64: 0, 1, 1, 0>, end = array<i64: 1, 16, 16, 4>, stride = array<i64: 1, 2, 2, 1>} : (tensor<1x16x16x4xf32>) -> tensor<1x8x8x4xf32>
// CHECK-NEXT:    %c = coreml.slice_by_index %x {begin = array<i64: 0, 0, 0, 0>, end = array<i64: 1, 16, 16, 4>, stride = array<i64: 1, 2, 1, 1>}
// CHECK-NEXT:    %d = coreml.slice_by_index %c {begin = array<i64: 0, 0, 0, 0>, end = array<i64: 1, 8, 16, 4>, stride = array<i64: 1, 1, 2, 1>}
// CHECK-NEXT:    func.return
func.func @strided(%x: tensor<1x16x16x4xf32>) -> (tensor<1x8x8x4xf32>, tensor<1x8x16x4xf32>, tensor<1x8x8x4xf32>) {
  %a = coreml.slice_by_index %x {begin = array<i64: 0, 1, 0, 0>, end = array<i64: 1, 16, 16, 4>, stride = array<i64: 1, 2, 1, 1>} : (tensor<1x16x16x4xf32>) -> tensor<1x8x16x4xf32>
  %b = coreml.slice_by_index %a {begin = array<i64: 0, 0, 1, 0>, end = array<i64: 1, 8, 16, 4>, stride = array<i64: 1, 1, 2, 1>} : (tensor<1x8x16x4xf32>) -> tensor<1x8x8x4xf32>
  %c = coreml.slice_by_index %x {begin = array<i64: 0, 0, 0, 0>, end = array<i64: 1, 16, 16, 4>, stride = array<i64: 1, 2, 1, 1>} : (tensor<1x16x16x4xf32>) -> tensor<1x8x16x4xf32>
  %d = coreml.slice_by_index %c {begin = array<i64: 0, 0, 0, 0>, end = array<i64: 1, 8, 16, 4>, stride = array<i64: 1, 1, 2, 1>} : (tensor<1x8x16x4xf32>) -> tensor<1x8x8x4xf32>
  func.return %b, %c, %d : tensor<1x8x8x4xf32>, tensor<1x8x16x4xf32>, tensor<1x8x8x4xf32>
}

// -----

// A reshape of a const nothing else reads is the const in the new shape (the same
// bytes: 1, 2, 3, 4); a const with another reader keeps its reshape.
// CHECK-LABEL: func.func @consts
// CHECK-NEXT:    %{{.*}} = coreml.const dense_resource<reshaped> : tensor<4xf32>
// CHECK-NEXT:    %y = coreml.add
// CHECK-NEXT:    %k = coreml.const
// CHECK-NEXT:    %s = coreml.reshape %k
// WEIGHTS: reshaped: "0x080000000000803F000000400000404000008040"
func.func @consts(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<2x2xf32>) {
  %c = coreml.const dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %r = coreml.reshape %c {shape = array<i64: 4>} : (tensor<2x2xf32>) -> tensor<4xf32>
  %y = coreml.add %x, %r : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %k = coreml.const dense<[[5.0, 6.0], [7.0, 8.0]]> : tensor<2x2xf32>
  %s = coreml.reshape %k {shape = array<i64: 4>} : (tensor<2x2xf32>) -> tensor<4xf32>
  func.return %y, %s, %k : tensor<4xf32>, tensor<4xf32>, tensor<2x2xf32>
}

// -----

// A state update whose result nothing reads stays (it writes the caller's state: the
// rewriter's dead-code elimination once erased it, and a decoder forgot its KV cache).
// CHECK-LABEL: func.func @state_update_kept(
// CHECK:         coreml.read_state @k_cache
// CHECK:         coreml.coreml_update_state @k_cache, %{{.*}} : tensor<1x8x4xf16>
// CHECK:         func.return %x
ml_program.global private mutable @k_cache : tensor<1x8x4xf16>
func.func @state_update_kept(%x: tensor<2x2xf16>, %pos: tensor<1xi32>, %v: tensor<1x1x4xf16>) -> tensor<2x2xf16> attributes {coreml.opset = "iOS18"} {
  %k = coreml.read_state @k_cache : tensor<1x8x4xf16>
  %s = coreml.scatter %k, %pos, %v {axis = 1 : i64, mode = "update"} : (tensor<1x8x4xf16>, tensor<1xi32>, tensor<1x1x4xf16>) -> tensor<1x8x4xf16>
  %u = coreml.coreml_update_state @k_cache, %s : tensor<1x8x4xf16>
  func.return %x : tensor<2x2xf16>
}
