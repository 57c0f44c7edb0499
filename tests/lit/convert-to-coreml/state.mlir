// RUN: qopt-opt %s -p convert-to-coreml | filecheck %s
// RUN: qopt-opt %s -p convert-to-coreml -t mlpackage -o %t.mlpackage && qopt-opt %t.mlpackage | filecheck %s --check-prefix=PKG
// RUN: not qopt-opt %s -p 'convert-to-coreml{target=iOS17}' 2>&1 | filecheck %s --check-prefix=IOS17
// Program state (a KV cache) on Core ML: the mutable global stays, typed as its
// fp16 state; its load is read_state (+ cast to the computation's fp32), its store
// coreml_update_state (after a cast to fp16); the write at a run-time position is
// a scatter of the index made non-negative (torch counts negative indices from
// the end); the mask row at that position is a gather of the same index.

// CHECK:       ml_program.global private mutable @layers.0.k_cache : tensor<1x2x8x4xf16>
// CHECK-LABEL: func.func @forward(%k: tensor<1x2x1x4xf32>, %pos: tensor<1xi32>) -> (tensor<1x2x8x4xf32>, tensor<1x8xf32>)
// CHECK-SAME:    attributes {coreml.opset = "iOS18"}
// CHECK:         %[[S:.*]] = coreml.read_state @layers.0.k_cache : tensor<1x2x8x4xf16>
// CHECK-NEXT:    %[[C:.*]] = coreml.cast %[[S]] {dtype = "fp32"} : (tensor<1x2x8x4xf16>) -> tensor<1x2x8x4xf32>
// CHECK:         %[[NEG:.*]] = coreml.less %pos, %{{.*}} : (tensor<1xi32>, tensor<i32>) -> tensor<1xi1>
// CHECK:         %[[SHIFT:.*]] = coreml.add %pos, %{{.*}} : (tensor<1xi32>, tensor<i32>) -> tensor<1xi32>
// CHECK-NEXT:    %[[I:.*]] = coreml.select %[[NEG]], %[[SHIFT]], %pos : (tensor<1xi1>, tensor<1xi32>, tensor<1xi32>) -> tensor<1xi32>
// CHECK-NEXT:    %[[W:.*]] = coreml.scatter %[[C]], %[[I]], %k {axis = 2 : i64, mode = "update"} : (tensor<1x2x8x4xf32>, tensor<1xi32>, tensor<1x2x1x4xf32>) -> tensor<1x2x8x4xf32>
// CHECK:         %{{.*}} = coreml.gather %{{.*}}, %[[I]] {axis = 0 : i64} : (tensor<8x8xf32>, tensor<1xi32>) -> tensor<1x8xf32>
// CHECK:         %[[H:.*]] = coreml.cast %[[W]] {dtype = "fp16"} : (tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf16>
// CHECK-NEXT:    %{{.*}} = coreml.coreml_update_state @layers.0.k_cache, %[[H]] : tensor<1x2x8x4xf16>
// CHECK-NEXT:    func.return %[[W]], %{{.*}} : tensor<1x2x8x4xf32>, tensor<1x8xf32>

// The package declares the state and writes it (write_state), which reads back as
// the same ops, the state named after the buffer again (the package's metadata).
// PKG:         ml_program.global private mutable @layers.0.k_cache : tensor<1x2x8x4xf16>
// PKG-LABEL:   func.func @forward(
// PKG:           %{{.*}} = coreml.read_state @layers.0.k_cache : tensor<1x2x8x4xf16>
// PKG:           %{{.*}} = coreml.scatter
// PKG:           %{{.*}} = coreml.coreml_update_state @layers.0.k_cache, %{{.*}} : tensor<1x2x8x4xf16>

// IOS17: convert-to-coreml: the program keeps state between calls (layers.0.k_cache: buffers it mutates, e.g. a KV cache); Core ML states (MIL read_state / coreml_update_state) exist from iOS18, the target is iOS17: use convert-to-coreml{target=iOS18} / minimum_deployment_target='iOS18'

ml_program.global private mutable @layers.0.k_cache(dense<0.0> : tensor<1x2x8x4xf32>) : tensor<1x2x8x4xf32>
func.func @forward(%k: tensor<1x2x1x4xf32>, %pos: tensor<1xi64>) -> (tensor<1x2x8x4xf32>, tensor<1x8xf32>) {
  %cache = ml_program.global_load @layers.0.k_cache : tensor<1x2x8x4xf32>
  %new = aten.index_put %cache, %pos, %k {indexed_dims = array<i64: 2>} : (tensor<1x2x8x4xf32>, tensor<1xi64>, tensor<1x2x1x4xf32>) -> tensor<1x2x8x4xf32>
  %mask = arith.constant dense<1.0> : tensor<8x8xf32>
  %row = aten.index %mask, %pos {indexed_dims = array<i64: 0>} : (tensor<8x8xf32>, tensor<1xi64>) -> tensor<1x8xf32>
  ml_program.global_store @layers.0.k_cache = %new : tensor<1x2x8x4xf32>
  func.return %new, %row : tensor<1x2x8x4xf32>, tensor<1x8xf32>
}
