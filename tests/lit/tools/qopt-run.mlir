// qopt-run on an .mlir module: npz inputs in, npz outputs or a summary out.
// RUN: %python -c "import numpy as np; np.savez('%t.in.npz', np.array([[1, -2, 3], [-4, 5, -6]], np.float32), np.array([1, 2, 3], np.float32))"
// RUN: qopt-run %s --inputs %t.in.npz | filecheck %s
// RUN: qopt-run %s --inputs %t.in.npz --outputs %t.out.npz
// RUN: %python -c "import numpy as np; print(np.load('%t.out.npz')['arr_0'].tolist())" | filecheck %s --check-prefix=NPZ
// RUN: qopt-run %s --inputs %t.in.npz --device vulkan 2>&1 | filecheck %s --check-prefix=VULKAN
// RUN: qopt-opt %s -p qopt-vulkan --print-weights -o %t.vkc.mlir
// RUN: qopt-run %t.vkc.mlir --inputs %t.in.npz | filecheck %s
// RUN: qopt-opt %s -p qopt-vulkan -t vkbundle -o %t.qvk
// RUN: %python -c "print(open('%t.qvk', 'rb').read(4))" | filecheck %s --check-prefix=MAGIC
// RUN: not qopt-run %t.qvk --inputs %t.in.npz 2>&1 | filecheck %s --check-prefix=BUNDLE

// relu(x + b) * w, w = [0.5, 1, 2]
// CHECK: arr_0: shape [2, 3] float32 min=0 max=12 mean=
// NPZ: {{\[\[}}1.0, 0.0, 12.0], [0.0, 7.0, 0.0]]
// (the Vulkan run needs a device: without one, qopt-run says why and exits 1;
// the vkc-level module interpreted and the bundle's magic are checked everywhere)
// VULKAN: {{arr_0: shape \[2, 3\] float32 min=0 max=12 mean=|qopt-run: error: --device vulkan: no usable Vulkan device}}
// MAGIC: b'QVKB'
// BUNDLE: qopt-run: error: {{.*}}.qvk' is a Vulkan bundle: run it with --device vulkan

func.func @forward(%x: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = aten.add %x, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = aten.relu %0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %w = arith.constant dense_resource<w> : tensor<3xf32>
  %2 = aten.mul %1, %w : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %2 : tensor<2x3xf32>
}
{-#
  dialect_resources: {
    builtin: {
      w: "0x080000000000003F0000803F00000040"
    }
  }
#-}
