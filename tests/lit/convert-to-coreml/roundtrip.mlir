// RUN: qopt-opt %s -p convert-to-coreml -t mlpackage -o %t.mlpackage && qopt-opt %t.mlpackage | filecheck %s
// RUN: qopt-opt %s -p 'convert-to-coreml{target=iOS17}' -t mlpackage -o %t.ios17.mlpackage && qopt-opt %t.ios17.mlpackage | filecheck %s --check-prefix=IOS17
// A saved .mlpackage reads back as the coreml dialect: the opset, the compressed
// weight (still int8, still constexpr) and the op chain survive the round trip.

// CHECK-LABEL: func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x3xf32>
// CHECK-SAME:    attributes {coreml.opset = "iOS18", qopt.output_names = ["output_0"]}
// CHECK-DAG:     %[[B:.*]] = coreml.const dense<1.000000e+00> : tensor<3xf32>
// CHECK-DAG:     %[[S:.*]] = coreml.const dense<{{\[\[}}2.500000e-01], [5.000000e-01], [1.000000e+00]]> : tensor<3x1xf32>
// CHECK-DAG:     %[[D:.*]] = coreml.const dense<{{\[\[}}1, 2, 3, 4], [-1, -2, -3, -4], [0, 7, -8, 1]]> : tensor<3x4xi8>
// CHECK:         %[[W:.*]] = coreml.constexpr_blockwise_shift_scale %[[D]], %[[S]] :
// CHECK-NEXT:    %[[Y:.*]] = coreml.linear %x, %[[W]], %[[B]]
// CHECK-NEXT:    %[[R:.*]] = coreml.relu %[[Y]]
// CHECK-NEXT:    func.return %[[R]] : tensor<2x3xf32>

// IOS17-LABEL: func.func @forward(
// IOS17-SAME:    attributes {coreml.opset = "iOS17", qopt.output_names = ["output_0"]}
// IOS17-DAG:     %[[S:.*]] = coreml.const dense<[2.500000e-01, 5.000000e-01, 1.000000e+00]> : tensor<3xf32>
// IOS17-DAG:     %[[D:.*]] = coreml.const dense<{{.*}}> : tensor<3x4xi8>
// IOS17-DAG:     %[[Z:.*]] = coreml.const dense<0> : tensor<3xi8>
// IOS17:         %[[W:.*]] = coreml.constexpr_affine_dequantize %[[D]], %[[Z]], %[[S]] {axis = 0 : i64}
// IOS17-NEXT:    %[[Y:.*]] = coreml.linear %x, %[[W]], %{{.*}}
// IOS17-NEXT:    coreml.relu %[[Y]]
func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = arith.constant dense<[[1, 2, 3, 4], [-1, -2, -3, -4], [0, 7, -8, 1]]> : tensor<3x4xi8>
  %s = arith.constant dense<[[2.500000e-01], [5.000000e-01], [1.000000e+00]]> : tensor<3x1xf32>
  %b = arith.constant dense<1.000000e+00> : tensor<3xf32>
  %y = qfused.linear %x, %w, %s bias %b {weight_scheme = #qfused.affine<bits = 8, range = [-128, 127], block = [1, 4]>, kernel = "linear_q8csw"} : tensor<2x4xf32>, tensor<3x4xi8>, tensor<3x1xf32> bias tensor<3xf32> -> tensor<2x3xf32>
  %r = aten.relu %y : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}
