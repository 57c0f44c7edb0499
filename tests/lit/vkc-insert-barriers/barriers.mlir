// RUN: qopt-opt %s -p vkc-insert-barriers --split-input-file | filecheck %s
// A barrier goes before each dispatch that touches memory an earlier dispatch
// since the last barrier wrote (read after write, write after write) or read
// (write after read); what a dispatch reads and writes is its kernel's signature.

// Read after write: the second dispatch reads what the first wrote. The third
// only reads the input and writes a fresh buffer: no barrier before it.
// CHECK-LABEL: func.func @raw
// CHECK:         vkc.dispatch @map(%{{.*}}, %[[A:.*]]) {
// CHECK-NEXT:    %[[B:.*]] = vkc.alloc
// CHECK-NEXT:    vkc.barrier
// CHECK-NEXT:    vkc.dispatch @map(%[[A]], %[[B]])
// CHECK-NEXT:    %[[C:.*]] = vkc.alloc
// CHECK-NEXT:    vkc.dispatch @map(%{{.*}}, %[[C]])
vkc.kernel @map {kernel = "test_map", glsl = "t.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1, 1>, spec = {}, bindings = [#vkc.binding<"x", f32>, #vkc.binding<"y", f32, write>], push = []}
func.func @raw(%x: tensor<64xf32>) -> tensor<64xf32> {
  %in = vkc.input %x : tensor<64xf32> -> !vkc.buffer<64xf32>
  %a = vkc.alloc : !vkc.buffer<64xf32>
  vkc.dispatch @map(%in, %a) {push = {}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<64xf32>, !vkc.buffer<64xf32>
  %b = vkc.alloc : !vkc.buffer<64xf32>
  vkc.dispatch @map(%a, %b) {push = {}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<64xf32>, !vkc.buffer<64xf32>
  %c = vkc.alloc : !vkc.buffer<64xf32>
  vkc.dispatch @map(%in, %c) {push = {}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<64xf32>, !vkc.buffer<64xf32>
  %out = vkc.output %b : !vkc.buffer<64xf32> -> tensor<64xf32>
  func.return %out : tensor<64xf32>
}

// -----

// Write after write through a view: two copies into halves of one buffer (the
// kernel cannot know they are disjoint).
// CHECK-LABEL: func.func @waw_view
// CHECK:         vkc.dispatch @map(%{{.*}}, %[[Y:.*]]) {
// CHECK-NEXT:    %[[V:.*]] = vkc.view %[[Y]]
// CHECK-NEXT:    vkc.barrier
// CHECK-NEXT:    vkc.dispatch @map(%{{.*}}, %[[V]])
vkc.kernel @map {kernel = "test_map", glsl = "t.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1, 1>, spec = {}, bindings = [#vkc.binding<"x", f32>, #vkc.binding<"y", f32, write>], push = []}
func.func @waw_view(%x: tensor<64xf32>) -> tensor<128xf32> {
  %in = vkc.input %x : tensor<64xf32> -> !vkc.buffer<64xf32>
  %y = vkc.alloc : !vkc.buffer<128xf32>
  vkc.dispatch @map(%in, %y) {push = {}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<64xf32>, !vkc.buffer<128xf32>
  %v = vkc.view %y : !vkc.buffer<128xf32> -> !vkc.buffer<2x64xf32>
  vkc.dispatch @map(%in, %v) {push = {}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<64xf32>, !vkc.buffer<2x64xf32>
  %out = vkc.output %y : !vkc.buffer<128xf32> -> tensor<128xf32>
  func.return %out : tensor<128xf32>
}

// -----

// Write after read through a shared memory slot: %b reuses %a's slot, so writing
// it must wait for the dispatch that reads %a.
// CHECK-LABEL: func.func @war_slot
// CHECK:         vkc.dispatch @map(%[[A:.*]], %{{.*}}) {
// CHECK-NEXT:    %[[B:.*]] = vkc.alloc {slot = 0 : i64}
// CHECK-NEXT:    vkc.barrier
// CHECK-NEXT:    vkc.dispatch @map(%{{.*}}, %[[B]])
vkc.kernel @map {kernel = "test_map", glsl = "t.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1, 1>, spec = {}, bindings = [#vkc.binding<"x", f32>, #vkc.binding<"y", f32, write>], push = []}
func.func @war_slot(%x: tensor<64xf32>) -> tensor<64xf32> {
  %in = vkc.input %x : tensor<64xf32> -> !vkc.buffer<64xf32>
  %a = vkc.alloc {slot = 0 : i64} : !vkc.buffer<64xf32>
  %c = vkc.alloc {slot = 1 : i64} : !vkc.buffer<64xf32>
  vkc.dispatch @map(%a, %c) {push = {}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<64xf32>, !vkc.buffer<64xf32>
  %b = vkc.alloc {slot = 0 : i64} : !vkc.buffer<64xf32>
  vkc.dispatch @map(%in, %b) {push = {}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<64xf32>, !vkc.buffer<64xf32>
  %out = vkc.output %b : !vkc.buffer<64xf32> -> tensor<64xf32>
  func.return %out : tensor<64xf32>
}

// -----

// A barrier already there is a synchronisation point: no second one is added (the
// pass can run again), and none before a dispatch it already covers.
// CHECK-LABEL: func.func @existing
// CHECK:         vkc.barrier
// CHECK-NOT:     vkc.barrier
vkc.kernel @map {kernel = "test_map", glsl = "t.glsl", entry = "main", hash = "0", local_size = array<i64: 64, 1, 1>, spec = {}, bindings = [#vkc.binding<"x", f32>, #vkc.binding<"y", f32, write>], push = []}
func.func @existing(%x: tensor<64xf32>) -> tensor<64xf32> {
  %in = vkc.input %x : tensor<64xf32> -> !vkc.buffer<64xf32>
  %a = vkc.alloc : !vkc.buffer<64xf32>
  vkc.dispatch @map(%in, %a) {push = {}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<64xf32>, !vkc.buffer<64xf32>
  vkc.barrier
  %b = vkc.alloc : !vkc.buffer<64xf32>
  vkc.dispatch @map(%a, %b) {push = {}, workgroups = array<i64: 1, 1, 1>} : !vkc.buffer<64xf32>, !vkc.buffer<64xf32>
  %out = vkc.output %b : !vkc.buffer<64xf32> -> tensor<64xf32>
  func.return %out : tensor<64xf32>
}
