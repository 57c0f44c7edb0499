// RUN: qopt-opt %s -p vkc-plan-buffers --split-input-file | filecheck %s
// Transient buffers whose lifetimes do not overlap share a memory slot; the
// function records the planned and unplanned bytes.

// A chain of three dispatches: the first result dies at the second dispatch, so
// the third result takes its slot (two slots, 512 of 768 bytes).
// CHECK-LABEL: func.func @chain(%x: tensor<64xf32>) -> tensor<64xf32>
// CHECK-SAME:    attributes {vkc.planned_bytes = 512 : i64, vkc.unplanned_bytes = 768 : i64}
// CHECK:         %[[A:.*]] = vkc.alloc {slot = 0 : i64} : !vkc.buffer<64xf32>
// CHECK:         %[[B:.*]] = vkc.alloc {slot = 1 : i64} : !vkc.buffer<64xf32>
// CHECK:         %[[C:.*]] = vkc.alloc {slot = 0 : i64} : !vkc.buffer<64xf32>
// CHECK-NOT:     vkc.barrier
vkc.kernel @map {kernel = "test_map", glsl = "t.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1, 1>, spec = {}, bindings = [#vkc.binding<"x", f32>, #vkc.binding<"y", f32, write>], push = []}
func.func @chain(%x: tensor<64xf32>) -> tensor<64xf32> {
  %in = vkc.input %x : tensor<64xf32> -> !vkc.buffer<64xf32>
  %a = vkc.alloc : !vkc.buffer<64xf32>
  vkc.dispatch @map(%in, %a) {push = {}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<64xf32>, !vkc.buffer<64xf32>
  %b = vkc.alloc : !vkc.buffer<64xf32>
  vkc.dispatch @map(%a, %b) {push = {}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<64xf32>, !vkc.buffer<64xf32>
  %c = vkc.alloc : !vkc.buffer<64xf32>
  vkc.dispatch @map(%b, %c) {push = {}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<64xf32>, !vkc.buffer<64xf32>
  %out = vkc.output %c : !vkc.buffer<64xf32> -> tensor<64xf32>
  func.return %out : tensor<64xf32>
}

// -----

// A use through a view keeps the viewed buffer alive: %a is read (as %v) by the
// third dispatch, so %c cannot take its slot; %c takes %b's (dead after the
// second dispatch).
// CHECK-LABEL: func.func @view_use
// CHECK-SAME:    attributes {vkc.planned_bytes = 512 : i64, vkc.unplanned_bytes = 768 : i64}
// CHECK:         vkc.alloc {slot = 0 : i64} : !vkc.buffer<64xf32>
// CHECK:         vkc.alloc {slot = 1 : i64} : !vkc.buffer<64xf32>
// CHECK:         vkc.view
// CHECK:         vkc.alloc {slot = 1 : i64} : !vkc.buffer<64xf32>
vkc.kernel @map {kernel = "test_map", glsl = "t.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1, 1>, spec = {}, bindings = [#vkc.binding<"x", f32>, #vkc.binding<"y", f32, write>], push = []}
func.func @view_use(%x: tensor<64xf32>) -> tensor<64xf32> {
  %in = vkc.input %x : tensor<64xf32> -> !vkc.buffer<64xf32>
  %a = vkc.alloc : !vkc.buffer<64xf32>
  vkc.dispatch @map(%in, %a) {push = {}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<64xf32>, !vkc.buffer<64xf32>
  %b = vkc.alloc : !vkc.buffer<64xf32>
  vkc.dispatch @map(%in, %b) {push = {}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<64xf32>, !vkc.buffer<64xf32>
  %v = vkc.view %a : !vkc.buffer<64xf32> -> !vkc.buffer<8x8xf32>
  %c = vkc.alloc : !vkc.buffer<64xf32>
  vkc.dispatch @map(%v, %c) {push = {}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<8x8xf32>, !vkc.buffer<64xf32>
  %out = vkc.output %c : !vkc.buffer<64xf32> -> tensor<64xf32>
  func.return %out : tensor<64xf32>
}

// -----

// Best fit: the 16-byte buffer takes the free 16-byte slot, not the free 256-byte
// one; a status buffer keeps its own memory (no slot), and an output's buffer
// lives to the end (nothing reuses slot 2).
// CHECK-LABEL: func.func @best_fit
// CHECK-SAME:    attributes {vkc.planned_bytes = 528 : i64, vkc.unplanned_bytes = 544 : i64}
// CHECK:         vkc.alloc {slot = 0 : i64} : !vkc.buffer<64xf32>
// CHECK:         vkc.alloc {slot = 1 : i64} : !vkc.buffer<4xf32>
// CHECK:         vkc.alloc {slot = 2 : i64} : !vkc.buffer<64xf32>
// CHECK:         vkc.alloc {slot = 1 : i64} : !vkc.buffer<4xf32>
// CHECK:         vkc.alloc {status, what = "'aten.embedding' at model.py:3"} : !vkc.buffer<1xui32>
vkc.kernel @map {kernel = "test_map", glsl = "t.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1, 1>, spec = {}, bindings = [#vkc.binding<"x", f32>, #vkc.binding<"y", f32, write>], push = []}
vkc.kernel @lookup {kernel = "test_lookup", glsl = "t.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1, 1>, spec = {}, bindings = [#vkc.binding<"x", f32>, #vkc.binding<"y", f32, write>, #vkc.binding<"status", ui32, write>], push = []}
func.func @best_fit(%x: tensor<64xf32>) -> tensor<64xf32> {
  %in = vkc.input %x : tensor<64xf32> -> !vkc.buffer<64xf32>
  %big = vkc.alloc : !vkc.buffer<64xf32>
  vkc.dispatch @map(%in, %big) {push = {}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<64xf32>, !vkc.buffer<64xf32>
  %small = vkc.alloc : !vkc.buffer<4xf32>
  vkc.dispatch @map(%in, %small) {push = {}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<64xf32>, !vkc.buffer<4xf32>
  %res = vkc.alloc : !vkc.buffer<64xf32>
  vkc.dispatch @map(%big, %res) {push = {}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<64xf32>, !vkc.buffer<64xf32>
  vkc.dispatch @map(%small, %res) {push = {}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<4xf32>, !vkc.buffer<64xf32>
  %tiny = vkc.alloc : !vkc.buffer<4xf32>
  %s = vkc.alloc {status, what = "'aten.embedding' at model.py:3"} : !vkc.buffer<1xui32>
  vkc.dispatch @lookup(%in, %tiny, %s) {push = {}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<64xf32>, !vkc.buffer<4xf32>, !vkc.buffer<1xui32>
  %out = vkc.output %res : !vkc.buffer<64xf32> -> tensor<64xf32>
  func.return %out : tensor<64xf32>
}

// -----

// A function that already has a plan is left as it is (the pass can run again).
// CHECK-LABEL: func.func @planned
// CHECK-SAME:    attributes {vkc.planned_bytes = 256 : i64, vkc.unplanned_bytes = 256 : i64}
// CHECK:         vkc.alloc {slot = 3 : i64} : !vkc.buffer<64xf32>
vkc.kernel @map {kernel = "test_map", glsl = "t.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1, 1>, spec = {}, bindings = [#vkc.binding<"x", f32>, #vkc.binding<"y", f32, write>], push = []}
func.func @planned(%x: tensor<64xf32>) -> tensor<64xf32> attributes {vkc.planned_bytes = 256 : i64, vkc.unplanned_bytes = 256 : i64} {
  %in = vkc.input %x : tensor<64xf32> -> !vkc.buffer<64xf32>
  %a = vkc.alloc {slot = 3 : i64} : !vkc.buffer<64xf32>
  vkc.dispatch @map(%in, %a) {push = {}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<64xf32>, !vkc.buffer<64xf32>
  %out = vkc.output %a : !vkc.buffer<64xf32> -> tensor<64xf32>
  func.return %out : tensor<64xf32>
}

// -----

// A function at the mid level (no vkc ops) gets no plan.
// CHECK-LABEL: func.func @mid
// CHECK-NOT:     vkc.planned_bytes
func.func @mid(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = aten.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
