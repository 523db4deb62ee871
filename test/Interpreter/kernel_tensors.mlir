// RUN: hir-run %s arange:2x3 --print | FileCheck %s
// A kernel segment computing on tensor values: buffers enter through
// bufferization.to_tensor (and the tensor <-> !torch.vtensor cast), the result leaves through
// bufferization.materialize_in_destination into the caller's buffer.

func.func private @segment(%in: memref<2x3xf32>, %out: memref<2x3xf32>) attributes {hir.kernel} {
  %t = bufferization.to_tensor %in restrict : memref<2x3xf32> to tensor<2x3xf32>
  %v = builtin.unrealized_conversion_cast %t : tensor<2x3xf32> to !torch.vtensor<[2,3],f32>
  %r = builtin.unrealized_conversion_cast %v : !torch.vtensor<[2,3],f32> to tensor<2x3xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<2x3xf32>, memref<2x3xf32>) -> ()
  return
}
func.func @main(%in: memref<2x3xf32>) -> memref<2x3xf32> {
  %out = memref.alloc() : memref<2x3xf32>
  func.call @segment(%in, %out) : (memref<2x3xf32>, memref<2x3xf32>) -> ()
  return %out : memref<2x3xf32>
}

// CHECK:      output 0: shape [2, 3] f32
// CHECK-NEXT: {{\[}}[0, 1, 2],
// CHECK-NEXT:  [3, 4, 5]]
