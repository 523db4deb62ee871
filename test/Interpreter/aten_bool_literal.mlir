// RUN: hir-run %s arange:2x5 --print | FileCheck %s
// A bool vtensor.literal (not a splat) is folded at plan time: here the mask of masked_fill.

func.func private @segment(%x: memref<2x5xf32>, %out: memref<2x5xf32>) attributes {hir.kernel} {
  %tx = bufferization.to_tensor %x restrict : memref<2x5xf32> to tensor<2x5xf32>
  %vx = builtin.unrealized_conversion_cast %tx : tensor<2x5xf32> to !torch.vtensor<[2,5],f32>
  %mask = torch.vtensor.literal(dense<[[true, false, true, true, false], [false, false, true, false, true]]> : tensor<2x5xi1>) : !torch.vtensor<[2,5],i1>
  %zero = torch.constant.float 0.000000e+00
  %r0 = torch.aten.masked_fill.Scalar %vx, %mask, %zero : !torch.vtensor<[2,5],f32>, !torch.vtensor<[2,5],i1>, !torch.float -> !torch.vtensor<[2,5],f32>
  %r = builtin.unrealized_conversion_cast %r0 : !torch.vtensor<[2,5],f32> to tensor<2x5xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<2x5xf32>, memref<2x5xf32>) -> ()
  return
}
func.func @main(%x: memref<2x5xf32>) -> memref<2x5xf32> {
  %out = memref.alloc() : memref<2x5xf32>
  func.call @segment(%x, %out) : (memref<2x5xf32>, memref<2x5xf32>) -> ()
  return %out : memref<2x5xf32>
}

// CHECK: output 0: shape [2, 5] f32
// CHECK-NEXT: {{\[}}[0, 1, 0, 0, 4],
// CHECK-NEXT:  [5, 6, 0, 8, 0]]
