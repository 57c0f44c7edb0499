// RUN: qopt-opt %s -p 'compose{target=vulkan}' --print-debuginfo | filecheck %s --check-prefix=VULKAN
// RUN: qopt-opt %s -p 'compose{target=coreml}' | filecheck %s --check-prefix=COREML
// RUN: qopt-opt %s -p 'compose{target=vulkan}' | qopt-opt | filecheck %s --check-prefix=VULKAN-TEXT
// RUN: qopt-opt %s -p qopt-vulkan --print-ir-after compose -o /dev/null 2>&1 | filecheck %s --check-prefix=PIPELINE
// RUN: not qopt-opt %s -p 'compose{target=metal}' 2>&1 | filecheck %s --check-prefix=ERR
// Forms of ops a target lacks, written in aten ops it has (qopt/lowering/compose.py),
// at the location of the op they replace; a form the target has stays. Both
// pipelines run the pass before their conversion.

// A batched, scaled addmm (baddbmm): Vulkan has no such kernel, so a batched matmul,
// input * beta and the add; CoreML lowers addmm itself.
// VULKAN-LABEL: func.func @baddbmm(
// VULKAN-NOT:     aten.addmm
// VULKAN:         %[[P:.*]] = aten.matmul %a, %b : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32> loc("model.py":3:0)
// VULKAN-NEXT:    %[[BETA:.*]] = arith.constant dense<5.000000e-01> : tensor<1xf32> loc("model.py":3:0)
// VULKAN-NEXT:    %[[S:.*]] = aten.mul %c, %[[BETA]] : {{.*}} loc("model.py":3:0)
// VULKAN-NEXT:    %y = aten.add %[[S]], %[[P]] : {{.*}} loc("model.py":3:0)
// COREML-LABEL: func.func @baddbmm(
// COREML-NEXT:    aten.addmm %c, %a, %b

// diff along dim 1, on both: two windows and a subtraction.
// VULKAN-LABEL: func.func @diff(
// VULKAN:         %[[A:.*]] = aten.slice %x {dim = 1 : i64, start = 1 : i64, end = 5 : i64, step = 1 : i64}
// VULKAN-NEXT:    %[[B:.*]] = aten.slice %x {dim = 1 : i64, start = 0 : i64, end = 4 : i64, step = 1 : i64}
// VULKAN-NEXT:    %y = aten.sub %[[A]], %[[B]]
// COREML-LABEL: func.func @diff(
// COREML-NOT:     aten.diff
// COREML:         aten.sub

// VULKAN-TEXT-NOT: aten.addmm
// VULKAN-TEXT-NOT: aten.diff

// PIPELINE:      IR Dump After compose
// PIPELINE-NOT:  aten.diff
// PIPELINE:      aten.matmul

// ERR: qopt-opt: error: compose: target must be one of coreml, vulkan, got 'metal'
func.func @baddbmm(%c: tensor<2x3x5xf32>, %a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
  %y = aten.addmm %c, %a, %b {beta = 5.000000e-01 : f64} : (tensor<2x3x5xf32>, tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32> loc("model.py":3:0)
  func.return %y : tensor<2x3x5xf32>
}
func.func @diff(%x: tensor<2x5xf32>) -> tensor<2x4xf32> {
  %y = aten.diff %x {n = 1 : i64, dim = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
