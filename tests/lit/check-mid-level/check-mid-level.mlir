// RUN: qopt-opt %s -p 'check-mid-level{target=coreml}' 2>%t.err | filecheck %s
// RUN: filecheck %s --check-prefix=WARN-COREML < %t.err
// RUN: qopt-opt %s -p check-mid-level -o /dev/null 2>&1 | filecheck %s --check-prefix=WARN-VULKAN
// RUN: qopt-opt %s -p fuse-quant,check-mid-level -o /dev/null 2>&1 | filecheck %s --check-prefix=FUSED --allow-empty
// RUN: qopt-opt %s -p qopt-vulkan --time-passes -o /dev/null 2>&1 | filecheck %s --check-prefix=TIMES
// RUN: not qopt-opt %s -p 'check-mid-level{target=metal}' 2>&1 | filecheck %s --check-prefix=ERR
// An analysis: the module stays as it is. A quantized pattern fuse-quant would fuse
// (tried on a clone) reaching a conversion unfused is a warning naming the
// conversion; after fuse-quant there is none. Both pipelines run it (after
// fuse-quant), each a phase of --time-passes.

// CHECK:      func.func @weight_dq(
// CHECK-NEXT:   arith.constant dense<2> : tensor<3x4xi8>
// CHECK-NEXT:   arith.constant
// CHECK-NEXT:   quant.dequantize
// CHECK-NEXT:   aten.linear
// CHECK-NEXT:   func.return

// WARN-COREML: qopt-opt: warning: convert-to-coreml: 1 quantized pattern(s) are not fused (linear_q8csw x1): converted as they are, they run as separate dequantize and float ops (larger weights, slower); run fuse-quant first (-p fuse-quant,...) or the whole pipeline (qopt-coreml)
// WARN-VULKAN: qopt-opt: warning: convert-to-vkc: 1 quantized pattern(s) are not fused (linear_q8csw x1): {{.*}} (qopt-vulkan)

// FUSED-NOT: warning

// TIMES:      qopt-vulkan
// TIMES:        fuse-quant-fixpoint
// TIMES:        expand-dynamic-windows
// TIMES-NEXT:   check-mid-level
// TIMES-NEXT:   compose
// TIMES-NEXT:   fold-constants
// TIMES-NEXT:   convert-to-vkc

// ERR: qopt-opt: error: check-mid-level: target must be one of coreml, vulkan, got 'metal'
func.func @weight_dq(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<2> : tensor<3x4xi8>
  %s = arith.constant dense<[2.500000e-01, 5.000000e-01, 1.000000e+00]> : tensor<3xf32>
  %d = quant.dequantize %w, %s {block_size = array<i64: 1, 4>, qmin = -127 : i64, qmax = 127 : i64} : (tensor<3x4xi8>, tensor<3xf32>) -> tensor<3x4xf32>
  %y = aten.linear %x, %d : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
