// RUN: not hir-run %s zeros:4 2>&1 | FileCheck %s
// An op with no torch.ops counterpart fails when the program is planned, at its location,
// before anything runs (here the FX importer's spelling of an op torch-mlir has no class for).

func.func private @segment(%x: memref<4xf32>, %out: memref<4xf32>) attributes {hir.kernel} {
  %t = bufferization.to_tensor %x restrict : memref<4xf32> to tensor<4xf32>
  %v = builtin.unrealized_conversion_cast %t : tensor<4xf32> to !torch.vtensor<[4],f32>
  %0 = torch.operator "torch.mylib.frobnicate"(%v) : (!torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32>
  %r = builtin.unrealized_conversion_cast %0 : !torch.vtensor<[4],f32> to tensor<4xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<4xf32>, memref<4xf32>) -> ()
  return
}
func.func @main(%x: memref<4xf32>) -> memref<4xf32> {
  %out = memref.alloc() : memref<4xf32>
  func.call @segment(%x, %out) : (memref<4xf32>, memref<4xf32>) -> ()
  return %out : memref<4xf32>
}

// CHECK: aten_errors.mlir:8:8: error: 'torch.operator' runs 'torch.mylib.frobnicate', which has no torch.ops counterpart in torch
// CHECK-NOT: Traceback
