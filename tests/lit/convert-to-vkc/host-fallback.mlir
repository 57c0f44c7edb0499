// RUN: qopt-opt %s -p 'convert-to-vkc{fallback=true}' | filecheck %s
// RUN: not qopt-opt %s -p convert-to-vkc 2>&1 | filecheck %s --check-prefix=ERR
// Ops without a Vulkan lowering (two sorts of 4096 entries, longer than compose.py
// writes as ranks) run on the host in one segment: the mul
// that does not depend on them is lowered before it, and the add that reads the
// segment's result comes after it. No barrier is needed across the segment (the
// runtime splits the submission there). (tests/unit/backends/vulkan/
// test_vulkan_fallback.py checks that these ops still have no rule.)

// ERR: qopt-opt: error: convert-to-vkc: 2 ops have no Vulkan lowering: 'aten.sort', 'aten.sort'; run them on the host between the device's work with the host fallback (qopt.compile(..., target='vulkan', fallback=True); qopt-opt --host-fallback, or -p 'qopt-vulkan{fallback=true}' / 'convert-to-vkc{fallback=true}'), run fuse-quant first, rewrite the model without them, or add a rule to a family of qopt/lowering/convert_to_vkc/

// CHECK-LABEL: func.func @forward(
// CHECK:         %[[X:.*]] = vkc.input %{{.*}} : tensor<2x4096xf32> -> !vkc.buffer<2x4096xf32>
// CHECK:         %[[W:.*]] = vkc.input %{{.*}} : tensor<2x4096xf32> -> !vkc.buffer<2x4096xf32>
// CHECK:         vkc.dispatch @unary_0(%[[X]], %[[R:[^)]*]])
// CHECK:         vkc.dispatch @binary_0(%[[W]], %[[W]], %[[M:[^)]*]])
// CHECK:         %[[C:.*]] = vkc.alloc {slot = {{[0-9]+}} : i64} : !vkc.buffer<2x4096xf32>
// CHECK:         %[[P:.*]] = vkc.alloc {slot = {{[0-9]+}} : i64} : !vkc.buffer<2x1xf32>
// CHECK-NEXT:    vkc.host_call ins(%[[R]] : !vkc.buffer<2x4096xf32>) outs(%[[C]], %[[P]] : !vkc.buffer<2x4096xf32>, !vkc.buffer<2x1xf32>) {
// CHECK-NEXT:    ^{{.*}}(%[[A:.*]]: tensor<2x4096xf32>):
// CHECK-NEXT:      %[[C2:[^ ,]*]], %{{.*}} = aten.sort %[[A]] {dim = 1 : i64} : (tensor<2x4096xf32>) -> (tensor<2x4096xf32>, tensor<2x4096xi64>)
// CHECK-NEXT:      %[[P2:[^ ,]*]], %{{.*}} = aten.sort %[[C2]] {dim = 1 : i64, descending = true, k = 1 : i64} : (tensor<2x4096xf32>) -> (tensor<2x1xf32>, tensor<2x1xi64>)
// CHECK-NEXT:      vkc.host_yield %[[C2]], %[[P2]] : tensor<2x4096xf32>, tensor<2x1xf32>
// CHECK-NEXT:    }
// CHECK-NOT:     vkc.barrier
// CHECK:         vkc.dispatch @binary_1(%[[M]], %[[P]], %{{.*}})
// CHECK:         vkc.output
// CHECK:         vkc.output %[[C]]
func.func @forward(%x: tensor<2x4096xf32>, %w: tensor<2x4096xf32>) -> (tensor<2x4096xf32>, tensor<2x4096xf32>) {
  %a = aten.relu %x : (tensor<2x4096xf32>) -> tensor<2x4096xf32>
  %c, %ci = aten.sort %a {dim = 1 : i64} : (tensor<2x4096xf32>) -> (tensor<2x4096xf32>, tensor<2x4096xi64>)
  %d = aten.mul %w, %w : (tensor<2x4096xf32>, tensor<2x4096xf32>) -> tensor<2x4096xf32>
  %p, %pi = aten.sort %c {dim = 1 : i64, descending = true, k = 1 : i64} : (tensor<2x4096xf32>) -> (tensor<2x1xf32>, tensor<2x1xi64>)
  %e = aten.add %d, %p : (tensor<2x4096xf32>, tensor<2x1xf32>) -> tensor<2x4096xf32>
  func.return %e, %c : tensor<2x4096xf32>, tensor<2x4096xf32>
}
