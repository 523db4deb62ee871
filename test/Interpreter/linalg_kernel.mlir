// RUN: hir-run %s arange:2x3 --print | FileCheck %s
// RUN: not hir-run %s arange:2x3 --entry bad 2>&1 | FileCheck %s --check-prefix=ERR
// A linalg-on-tensors kernel segment: the gelu payload that upstream shard-partition leaves
// in the Megatron MLP, then a row sum (a reduction iterator folded by arith.addf).

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func private @gelu_rowsum(%in: memref<2x3xf32>, %out: memref<2xf32>) attributes {hir.kernel} {
  %c0 = arith.constant 0.000000e+00 : f32
  %c1 = arith.constant 1.000000e+00 : f32
  %ch = arith.constant 5.000000e-01 : f32
  %cs = arith.constant 1.41421354 : f32
  %x = bufferization.to_tensor %in restrict : memref<2x3xf32> to tensor<2x3xf32>
  %e = tensor.empty() : tensor<2x3xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%v: f32, %o: f32):
    %0 = arith.divf %v, %cs : f32
    %1 = math.erf %0 : f32
    %2 = arith.addf %1, %c1 : f32
    %3 = arith.mulf %2, %ch : f32
    %4 = arith.mulf %v, %3 : f32
    linalg.yield %4 : f32
  } -> tensor<2x3xf32>
  %e2 = tensor.empty() : tensor<2xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<2xf32>) -> tensor<2xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%g : tensor<2x3xf32>) outs(%z : tensor<2xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %0 = arith.addf %v, %acc : f32
    linalg.yield %0 : f32
  } -> tensor<2xf32>
  bufferization.materialize_in_destination %s in restrict writable %out : (tensor<2xf32>, memref<2xf32>) -> ()
  return
}
func.func @main(%in: memref<2x3xf32>) -> memref<2xf32> {
  %out = memref.alloc() : memref<2xf32>
  func.call @gelu_rowsum(%in, %out) : (memref<2x3xf32>, memref<2xf32>) -> ()
  return %out : memref<2xf32>
}

// gelu(0) + gelu(1) + gelu(2) = 0 + 0.8413 + 1.9545; gelu(3) + gelu(4) + gelu(5) = 2.9960 + 3.9999 + 5.0000
// CHECK:      output 0: shape [2] f32
// CHECK-NEXT: [2.7958{{[0-9]*}}, 11.9958]

// A payload op with no torch equivalent fails when the plan is made, at the op.
func.func private @cube_root(%in: memref<2x3xf32>, %out: memref<2x3xf32>) attributes {hir.kernel} {
  %x = bufferization.to_tensor %in restrict : memref<2x3xf32> to tensor<2x3xf32>
  %e = tensor.empty() : tensor<2x3xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%v: f32, %o: f32):
    %0 = math.cbrt %v : f32
    linalg.yield %0 : f32
  } -> tensor<2x3xf32>
  bufferization.materialize_in_destination %g in restrict writable %out : (tensor<2x3xf32>, memref<2x3xf32>) -> ()
  return
}
func.func @bad(%in: memref<2x3xf32>) -> memref<2x3xf32> {
  %out = memref.alloc() : memref<2x3xf32>
  func.call @cube_root(%in, %out) : (memref<2x3xf32>, memref<2x3xf32>) -> ()
  return %out : memref<2x3xf32>
}
// ERR: linalg_kernel.mlir:50:10: error: 'math.cbrt' has no torch equivalent in the interpreter (payload of 'linalg.generic' at {{.*}}linalg_kernel.mlir:48:8)
// ERR-NOT: Traceback
