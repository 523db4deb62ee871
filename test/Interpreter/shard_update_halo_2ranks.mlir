// shard.update_halo on a 2-device grid: a 3-point stencil over blocks padded with one row of
// halo on each side (zeros past the global ends), as converted and after hir-lower.
// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-convert-shard-to-hir{backend=gloo})' -o %t.mlir
// RUN: hir-run --nproc 2 %t.mlir arange --print > %t.before
// RUN: hir-opt %t.mlir --pass-pipeline='builtin.module(hir-lower)' -o %t.lowered.mlir
// RUN: hir-run --nproc 2 %t.lowered.mlir arange --print > %t.after
// RUN: diff %t.before %t.after
// RUN: FileCheck %s < %t.after

shard.grid @g(shape = 2)
func.func @main(%x: tensor<2x1xf32> {hir.split_axes = #shard<axisarray[[0]]>}) -> tensor<2x1xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x1xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x1xf32>) -> tensor<4x1xf32>
  %p = tensor.insert_slice %x into %f[1, 0] [2, 1] [1, 1] : tensor<2x1xf32> into tensor<4x1xf32>
  %h = shard.update_halo %p on @g split_axes = [[0]] halo_sizes = [1, 1] : tensor<4x1xf32>
  %a = tensor.extract_slice %h[0, 0] [2, 1] [1, 1] : tensor<4x1xf32> to tensor<2x1xf32>
  %b = tensor.extract_slice %h[1, 0] [2, 1] [1, 1] : tensor<4x1xf32> to tensor<2x1xf32>
  %c = tensor.extract_slice %h[2, 0] [2, 1] [1, 1] : tensor<4x1xf32> to tensor<2x1xf32>
  %s0 = arith.addf %a, %b : tensor<2x1xf32>
  %s1 = arith.addf %s0, %c : tensor<2x1xf32>
  return %s1 : tensor<2x1xf32>
}

// x = [0, 1, 2, 3] (rank 0 holds 0, 1; rank 1 holds 2, 3): y[i] = x[i-1] + x[i] + x[i+1].
// CHECK:      rank 0: output 0: shape [2, 1] f32
// CHECK-NEXT: rank 0: {{\[}}[1],
// CHECK-NEXT: rank 0:  [3]]
// CHECK:      rank 1: output 0: shape [2, 1] f32
// CHECK-NEXT: rank 1: {{\[}}[6],
// CHECK-NEXT: rank 1:  [5]]
