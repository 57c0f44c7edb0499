// RUN: qopt-opt %s --split-input-file --verify-diagnostics | filecheck %s
// One chunk per verifier message of qopt/dialects/vkc/ (attributes and ops).

vkc.kernel @k {kernel = "test", glsl = "t.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1, 1>, spec = {}, bindings = [#vkc.binding<"x", f32>, #vkc.binding<"y", f32, write>], push = [#vkc.push<"n", ui32>]}
func.func @binding_count(%x: tensor<4xf32>) {
  %b = vkc.input %x : tensor<4xf32> -> !vkc.buffer<4xf32>
  vkc.dispatch @k(%b) {push = {n = 4 : i32}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<4xf32>
  func.return
}
// CHECK: kernel test has 2 bindings (x, y), got 1 buffers

// -----

vkc.kernel @k {kernel = "test", glsl = "t.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1, 1>, spec = {}, bindings = [#vkc.binding<"x", f32>, #vkc.binding<"y", f32, write>], push = [#vkc.push<"n", ui32>]}
func.func @binding_dtype(%x: tensor<4xf32>) {
  %b = vkc.input %x : tensor<4xf32> -> !vkc.buffer<4xf32>
  %w = vkc.constant dense<[1]> : tensor<1xui32> : !vkc.buffer<1xui32, "q4">
  vkc.dispatch @k(%b, %w) {push = {n = 4 : i32}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<4xf32>, !vkc.buffer<1xui32, "q4">
  func.return
}
// CHECK: binding y of kernel test takes f32 elements, got !vkc.buffer<1xui32, "q4">

// -----

vkc.kernel @k {kernel = "test", glsl = "t.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1, 1>, spec = {}, bindings = [#vkc.binding<"x", f32>, #vkc.binding<"y", f32, write>], push = [#vkc.push<"n", ui32>, #vkc.push<"a", f32>]}
func.func @push_missing(%x: tensor<4xf32>) {
  %b = vkc.input %x : tensor<4xf32> -> !vkc.buffer<4xf32>
  vkc.dispatch @k(%b, %b) {push = {n = 4 : i32}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<4xf32>, !vkc.buffer<4xf32>
  func.return
}
// CHECK: kernel test takes push constants ['n', 'a'], got ['n']

// -----

vkc.kernel @k {kernel = "test", glsl = "t.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1, 1>, spec = {}, bindings = [#vkc.binding<"x", f32>], push = [#vkc.push<"a", f32>]}
func.func @push_type(%x: tensor<4xf32>) {
  %b = vkc.input %x : tensor<4xf32> -> !vkc.buffer<4xf32>
  vkc.dispatch @k(%b) {push = {a = 4 : i32}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<4xf32>
  func.return
}
// CHECK: push constant a must be an f32 float attribute

// -----

vkc.kernel @k {kernel = "test", glsl = "t.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1, 1>, spec = {}, bindings = [#vkc.binding<"x", f32>], push = []}
func.func @workgroups(%x: tensor<4xf32>) {
  %b = vkc.input %x : tensor<4xf32> -> !vkc.buffer<4xf32>
  vkc.dispatch @k(%b) {push = {}, workgroups = array<i64: 0, 1, 1>} : !vkc.buffer<4xf32>
  func.return
}
// CHECK: workgroups must be 3 counts in [1, 65535], got [0, 1, 1]

// -----

vkc.kernel @k {kernel = "test", glsl = "t.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1>, spec = {}, bindings = [#vkc.binding<"x", f32>], push = []}
// CHECK: local_size must be 3 positive sizes, got [64, 1]

// -----

vkc.kernel @k {kernel = "test", glsl = "t.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1, 1>, spec = {}, bindings = [#vkc.binding<"x", f64>], push = []}
// CHECK: binding x reads f64: use f32, i32 or ui32

// -----

vkc.kernel @k {kernel = "unary", glsl = "unary.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1, 1>, spec = {}, bindings = [#vkc.binding<"x", f32>], push = []}
// CHECK: bindings of kernel unary are [#vkc.binding<"x", f32>, #vkc.binding<"y", f32, write>]

// -----

vkc.kernel @k {kernel = "unary", glsl = "unary.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1, 1>, spec = {}, bindings = [#vkc.binding<"x", f32>, #vkc.binding<"y", f32, write>], push = [#vkc.push<"n", i32>, #vkc.push<"a", f32>, #vkc.push<"b", f32>]}
// CHECK: push constants of kernel unary are [#vkc.push<"n", ui32>, #vkc.push<"a", f32>, #vkc.push<"b", f32>]

// -----

vkc.kernel @k {kernel = "test", glsl = "t.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1, 1>, spec = {}, bindings = [], push = [#vkc.push<"n", i64>]}
// CHECK: push constant n is i64: use i32, ui32 or f32

// -----

func.func @input_shape(%x: tensor<4xf32>) {
  %b = vkc.input %x : tensor<4xf32> -> !vkc.buffer<5xf32>
  func.return
}
// CHECK: input tensor<4xf32> has 4 elements but the buffer holds 5

// -----

func.func @input_dtype(%x: tensor<4xi64>) {
  %b = vkc.input %x : tensor<4xi64> -> !vkc.buffer<4xf32>
  func.return
}
// CHECK: input tensor<4xi64> travels as i32 buffers, not f32

// -----

func.func @view(%x: tensor<4xf32>) {
  %b = vkc.input %x : tensor<4xf32> -> !vkc.buffer<4xf32>
  %v = vkc.view %b : !vkc.buffer<4xf32> -> !vkc.buffer<2x3xf32>
  func.return
}
// CHECK: a view keeps the element count, element type and layout

// -----

func.func @constant() {
  %w = vkc.constant dense<[1, 2]> : tensor<2xui32> : !vkc.buffer<3xui32>
  func.return
}
// CHECK: constant value tensor<2xui32> does not match buffer

// -----

func.func @buffer_elem() {
  %t = vkc.alloc : !vkc.buffer<4xf64>
  func.return
}
// CHECK: buffer elements must be f32, i32 or ui32, got f64

// -----

vkc.kernel @linear_q4gsw_0 {kernel = "linear_q4gsw", glsl = "linear_qw.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1, 1>, spec = {WBITS = 4 : i64, GROUP_SIZE = 32 : i64, HAS_ZERO_POINT = 0 : i64, HAS_BIAS = 0 : i64, NPW = 4 : i64, MT = 1 : i64, WG = 64 : i64}, bindings = [#vkc.binding<"x", f32>, #vkc.binding<"w", ui32>, #vkc.binding<"scales", f32>, #vkc.binding<"zeros", i32>, #vkc.binding<"bias", f32>, #vkc.binding<"out", f32, write>], push = [#vkc.push<"M", ui32>, #vkc.push<"N", ui32>, #vkc.push<"K", ui32>, #vkc.push<"row_words", ui32>, #vkc.push<"ngroups", ui32>]}
func.func @packed_weights_row_major(%x: tensor<1x64xf32>) {
  %b = vkc.input %x : tensor<1x64xf32> -> !vkc.buffer<1x64xf32>
  %w = vkc.constant dense<[1, 2]> : tensor<2xui32> : !vkc.buffer<2xui32>
  vkc.dispatch @linear_q4gsw_0(%b, %w, %b, %b, %b, %b) {push = {M = 1 : i64, N = 1 : i64, K = 64 : i64, row_words = 8 : i64, ngroups = 2 : i64}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<1x64xf32>, !vkc.buffer<2xui32>, !vkc.buffer<1x64xf32>, !vkc.buffer<1x64xf32>, !vkc.buffer<1x64xf32>, !vkc.buffer<1x64xf32>
  func.return
}
// CHECK: binding w of kernel linear_q4gsw takes weights packed in a 'q<bits>' layout, got !vkc.buffer<2xui32>

// -----

func.func @status_type() {
  %s = vkc.alloc {status, what = "'aten.embedding'"} : !vkc.buffer<2xui32>
  func.return
}
// CHECK: a status buffer is !vkc.buffer<1xui32>, got !vkc.buffer<2xui32>

// -----

func.func @status_elem() {
  %s = vkc.alloc {status} : !vkc.buffer<1xi32>
  func.return
}
// CHECK: a status buffer is !vkc.buffer<1xui32>, got !vkc.buffer<1xi32>

// -----

func.func @status_slot() {
  %s = vkc.alloc {slot = 0 : i64, status, what = "'aten.embedding'"} : !vkc.buffer<1xui32>
  func.return
}
// CHECK: a status buffer has its own memory: it takes no slot

// -----

func.func @what_without_status() {
  %s = vkc.alloc {what = "'aten.embedding'"} : !vkc.buffer<1xui32>
  func.return
}
// CHECK: 'what' names the op a status buffer guards: add 'status'

// -----

vkc.kernel @g {kernel = "test", glsl = "t.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1, 1>, spec = {}, bindings = [#vkc.binding<"idx", i32>, #vkc.binding<"y", f32, write>, #vkc.binding<"status", ui32, write>], push = []}
func.func @status_shared(%i: tensor<4xi32>) {
  %b = vkc.input %i : tensor<4xi32> -> !vkc.buffer<4xi32>
  %y = vkc.alloc : !vkc.buffer<4xf32>
  %s = vkc.alloc {status} : !vkc.buffer<1xui32>
  vkc.dispatch @g(%b, %y, %s) {push = {}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<4xi32>, !vkc.buffer<4xf32>, !vkc.buffer<1xui32>
  vkc.dispatch @g(%b, %y, %s) {push = {}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<4xi32>, !vkc.buffer<4xf32>, !vkc.buffer<1xui32>
  func.return
}
// CHECK: a status buffer is bound by one dispatch only, at its status binding (used by vkc.dispatch, 2 use(s))

// -----

func.func @status_output() {
  %s = vkc.alloc {status} : !vkc.buffer<1xui32>
  %o = vkc.output %s : !vkc.buffer<1xui32> -> tensor<1xui32>
  func.return
}
// CHECK: a status buffer is bound by one dispatch only, at its status binding (used by vkc.output, 1 use(s))

// -----

vkc.kernel @g {kernel = "test", glsl = "t.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1, 1>, spec = {}, bindings = [#vkc.binding<"idx", i32>, #vkc.binding<"y", f32, write>, #vkc.binding<"status", ui32, write>], push = []}
func.func @status_binding_plain_buffer(%i: tensor<4xi32>) {
  %b = vkc.input %i : tensor<4xi32> -> !vkc.buffer<4xi32>
  %y = vkc.alloc : !vkc.buffer<4xf32>
  %s = vkc.alloc : !vkc.buffer<1xui32>
  vkc.dispatch @g(%b, %y, %s) {push = {}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<4xi32>, !vkc.buffer<4xf32>, !vkc.buffer<1xui32>
  func.return
}
// CHECK: binding status of kernel test takes a status buffer (vkc.alloc {status} : !vkc.buffer<1xui32>)

// -----

vkc.kernel @g {kernel = "test", glsl = "t.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1, 1>, spec = {}, bindings = [#vkc.binding<"x", ui32>, #vkc.binding<"y", ui32, write>], push = []}
func.func @status_at_other_binding(%i: tensor<4xi32>) {
  %b = vkc.input %i : tensor<4xi32> -> !vkc.buffer<4xi32>
  %s = vkc.alloc {status} : !vkc.buffer<1xui32>
  vkc.dispatch @g(%b, %s) {push = {}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<4xi32>, !vkc.buffer<1xui32>
  func.return
}
// CHECK: binding y of kernel test is not a status binding: a status buffer is bound only at the status binding of its dispatch

// -----

vkc.kernel @gather_rows_0 {kernel = "gather_rows", glsl = "gather_rows.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1, 1>, spec = {WG = 64 : i64}, bindings = [#vkc.binding<"table", f32>, #vkc.binding<"idx", i32>, #vkc.binding<"y", f32, write>], push = [#vkc.push<"n", ui32>, #vkc.push<"D", ui32>, #vkc.push<"V", ui32>]}
// CHECK: bindings of kernel gather_rows are [#vkc.binding<"table", f32>, #vkc.binding<"idx", i32>, #vkc.binding<"y", f32, write>, #vkc.binding<"status", ui32, write>]

// -----

// A verifier message names the op's source location (what convert-to-vkc copies
// from the op it lowers).
vkc.kernel @k {kernel = "test", glsl = "t.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1, 1>, spec = {}, bindings = [#vkc.binding<"x", f32>, #vkc.binding<"y", f32, write>], push = [#vkc.push<"n", ui32>]}
func.func @located(%x: tensor<4xf32>) {
  %b = vkc.input %x : tensor<4xf32> -> !vkc.buffer<4xf32>
  vkc.dispatch @k(%b) {push = {n = 4 : i32}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<4xf32> loc("model.py":7:5)
  func.return
}
// CHECK: 'vkc.dispatch' at model.py:7: kernel test has 2 bindings (x, y), got 1 buffers

// -----

func.func @state_of_no_global() {
  %k = vkc.state @nope : !vkc.buffer<4xf32>
  func.return
}
// CHECK: @nope is not an ml_program.global

// -----

ml_program.global private @c(dense<1.0> : tensor<4xf32>) : tensor<4xf32>
func.func @state_of_an_immutable_global() {
  %k = vkc.state @c : !vkc.buffer<4xf32>
  func.return
}
// CHECK: @c is not mutable: it is no program state

// -----

ml_program.global private mutable @k(dense<0.0> : tensor<2x4xf32>) : tensor<2x4xf32>
func.func @state_size() {
  %k = vkc.state @k : !vkc.buffer<4xf32>
  func.return
}
// CHECK: state @k tensor<2x4xf32> has 8 elements but the buffer holds 4

// -----

ml_program.global private mutable @n(dense<0> : tensor<2xi64>) : tensor<2xi64>
func.func @state_element_type() {
  %k = vkc.state @n : !vkc.buffer<2xf32>
  func.return
}
// CHECK: state @n tensor<2xi64> travels as i32 buffers, not f32

// -----

// Only transient and state buffers are written: never a constant (or an input).
vkc.kernel @scatter_dim_0 {kernel = "scatter_dim", glsl = "scatter_dim.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1, 1>, spec = {NEG = 0 : i64, WG = 64 : i64}, bindings = [#vkc.binding<"vals", ui32>, #vkc.binding<"idx", i32>, #vkc.binding<"out", ui32, write>, #vkc.binding<"status", ui32, write>], push = [#vkc.push<"P", ui32>, #vkc.push<"N", ui32>, #vkc.push<"Q", ui32>, #vkc.push<"S", ui32>]}
func.func @write_into_a_constant(%v: tensor<2xf32>, %pos: tensor<1xi64>) {
  %vb = vkc.input %v : tensor<2xf32> -> !vkc.buffer<2xf32>
  %pb = vkc.input %pos : tensor<1xi64> -> !vkc.buffer<1xi32>
  %w = vkc.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32> : !vkc.buffer<4x2xf32>
  %s = vkc.alloc {status} : !vkc.buffer<1xui32>
  vkc.dispatch @scatter_dim_0(%vb, %pb, %w, %s) {push = {P = 1 : i64, N = 4 : i64, Q = 2 : i64, S = 1 : i64}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<2xf32>, !vkc.buffer<1xi32>, !vkc.buffer<4x2xf32>, !vkc.buffer<1xui32>
  func.return
}
// CHECK: binding out of kernel scatter_dim writes a buffer of vkc.constant: only transient (vkc.alloc) and state (vkc.state) buffers are written

// -----

ml_program.global private mutable @k(dense<0.0> : tensor<4x2xf32>) : tensor<4x2xf32>
vkc.kernel @scatter_dim_0 {kernel = "scatter_dim", glsl = "scatter_dim.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1, 1>, spec = {NEG = 0 : i64, WG = 64 : i64}, bindings = [#vkc.binding<"vals", ui32>, #vkc.binding<"idx", i32>, #vkc.binding<"out", ui32, write>, #vkc.binding<"status", ui32, write>], push = [#vkc.push<"P", ui32>, #vkc.push<"N", ui32>, #vkc.push<"Q", ui32>, #vkc.push<"S", ui32>]}
func.func @scatter_past_the_state(%v: tensor<2xf32>, %pos: tensor<1xi64>) {
  %vb = vkc.input %v : tensor<2xf32> -> !vkc.buffer<2xf32>
  %pb = vkc.input %pos : tensor<1xi64> -> !vkc.buffer<1xi32>
  %k = vkc.state @k : !vkc.buffer<4x2xf32>
  %s = vkc.alloc {status} : !vkc.buffer<1xui32>
  vkc.dispatch @scatter_dim_0(%vb, %pb, %k, %s) {push = {P = 1 : i64, N = 5 : i64, Q = 2 : i64, S = 1 : i64}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<2xf32>, !vkc.buffer<1xi32>, !vkc.buffer<4x2xf32>, !vkc.buffer<1xui32>
  func.return
}
// CHECK: kernel scatter_dim: binding out can touch 10 words with these push constants, but its buffer holds 8

// -----

func.func @host_writes_an_input(%x: tensor<4xf32>) {
  %b = vkc.input %x : tensor<4xf32> -> !vkc.buffer<4xf32>
  %o = vkc.input %x : tensor<4xf32> -> !vkc.buffer<4xf32>
  vkc.host_call ins(%b : !vkc.buffer<4xf32>) outs(%o : !vkc.buffer<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %c = aten.cumsum %a {dim = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    vkc.host_yield %c : tensor<4xf32>
  }
  func.return
}
// CHECK: outs buffer 0 must be a transient buffer (vkc.alloc), got vkc.input

// -----

func.func @host_op_not_allowed(%x: tensor<4xf32>) {
  %b = vkc.input %x : tensor<4xf32> -> !vkc.buffer<4xf32>
  %o = vkc.alloc : !vkc.buffer<4xf32>
  vkc.host_call ins(%b : !vkc.buffer<4xf32>) outs(%o : !vkc.buffer<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %c = arith.constant dense<1.0> : tensor<4xf32>
    vkc.host_yield %c : tensor<4xf32>
  }
  func.return
}
// CHECK: 'arith.constant' cannot run in a host segment (only ops of the aten, quant dialects)

// -----

func.func @host_result_size(%x: tensor<4xf32>) {
  %b = vkc.input %x : tensor<4xf32> -> !vkc.buffer<4xf32>
  %o = vkc.alloc : !vkc.buffer<2xf32>
  vkc.host_call ins(%b : !vkc.buffer<4xf32>) outs(%o : !vkc.buffer<2xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %c = aten.cumsum %a {dim = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    vkc.host_yield %c : tensor<4xf32>
  }
  func.return
}
// CHECK: result 0 of the body tensor<4xf32> has 4 elements but the buffer holds 2

// -----

func.func @host_arguments(%x: tensor<4xf32>) {
  %b = vkc.input %x : tensor<4xf32> -> !vkc.buffer<4xf32>
  %o = vkc.alloc : !vkc.buffer<4xf32>
  vkc.host_call ins(%b : !vkc.buffer<4xf32>) outs(%o : !vkc.buffer<4xf32>) {
  ^bb0(%a: tensor<4xf32>, %extra: tensor<4xf32>):
    vkc.host_yield %a : tensor<4xf32>
  }
  func.return
}
// CHECK: the body takes 2 tensors for 1 ins buffers
