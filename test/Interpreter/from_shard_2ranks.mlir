// A hand-written partitioned shard program (sequence-parallel MLP without gelu) on a 2-device
// grid: converted to hir, run on 2 Gloo ranks as converted and after hir-lower, same output.
// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-convert-shard-to-hir{backend=gloo})' -o %t.mlir
// RUN: hir-run --nproc 2 %t.mlir arange ones ones --print > %t.before
// RUN: hir-opt %t.mlir --pass-pipeline='builtin.module(hir-lower)' -o %t.lowered.mlir
// RUN: hir-run --nproc 2 %t.lowered.mlir arange ones ones --print > %t.after
// RUN: diff %t.before %t.after
// RUN: FileCheck %s < %t.after

shard.grid @g(shape = 2)
func.func @main(%x: tensor<2x4xf32> {hir.split_axes = #shard<axisarray[[0]]>},
                %w1: tensor<4x2xf32> {hir.split_axes = #shard<axisarray[[], [0]]>},
                %w2: tensor<2x4xf32> {hir.split_axes = #shard<axisarray[[0]]>}) -> tensor<2x4xf32> {
  %z = arith.constant 0.0 : f32
  %xg = shard.all_gather %x on @g grid_axes = [0] gather_axis = 0 : tensor<2x4xf32> -> tensor<4x4xf32>
  %e1 = tensor.empty() : tensor<4x2xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %h = linalg.matmul ins(%xg, %w1 : tensor<4x4xf32>, tensor<4x2xf32>) outs(%f1 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %e2 = tensor.empty() : tensor<4x4xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %p = linalg.matmul ins(%h, %w2 : tensor<4x2xf32>, tensor<2x4xf32>) outs(%f2 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = shard.reduce_scatter %p on @g grid_axes = [0] scatter_dim = 0 : tensor<4x4xf32> -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// x = arange(16).view(4, 4), w1 = w2 = ones: y = x @ ones(4, 4) @ ones(4, 4) = 4 * row sums.
// Each rank prints its rows of y (split along dim 0).
// CHECK:      rank 0: output 0: shape [2, 4] f32
// CHECK-NEXT: rank 0: {{\[}}[24, 24, 24, 24],
// CHECK-NEXT: rank 0:  [88, 88, 88, 88]]
// CHECK-NEXT: rank 1: output 0: shape [2, 4] f32
// CHECK-NEXT: rank 1: {{\[}}[152, 152, 152, 152],
// CHECK-NEXT: rank 1:  [216, 216, 216, 216]]
