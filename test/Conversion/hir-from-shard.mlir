// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-from-shard)' | FileCheck %s
// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-from-shard,hir-lower)' | FileCheck %s --check-prefix=LOWER
// The sequence-parallel MLP annotated in the shard dialect (annotations on the
// intermediates): upstream propagation + partition + simplify, then the conversion.

// CHECK-NOT:   shard.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME:  (%arg0: memref<8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %arg1: memref<16x64xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, %arg2: memref<64x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> memref<8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
// CHECK:       "hir.allgather"(%arg0, %[[X:.*]]) {axis = 0 : i64, backend = "nccl"
// CHECK:       "hir.matmul"(%[[X]], %arg1, %[[H:.*]]) :
// CHECK:       call @mlp_kernel_0(%[[H]], %arg2, %[[P:.*]]) :
// CHECK:       "hir.reduce_scatter"(%[[P]], %[[Y:.*]]) {axis = 0 : i64, backend = "nccl", reduction = "sum", scatter_axis = 1 : i64
// CHECK:       return %[[Y]]
// LOWER-LABEL: func.func @mlp
// LOWER:       "hir.allgather"
// LOWER:       memref.dealloc
// LOWER:       "hir.reduce_scatter"

shard.grid @tp(shape = 4)
func.func @mlp(%x: tensor<8x16xf32>, %w1: tensor<16x64xf32>, %w2: tensor<64x16xf32>) -> tensor<8x16xf32> {
  %sr = shard.sharding @tp split_axes = [[]] : !shard.sharding
  %sc = shard.sharding @tp split_axes = [[], [0]] : !shard.sharding
  %srow = shard.sharding @tp split_axes = [[0]] : !shard.sharding
  %x0 = shard.shard %x to %srow : tensor<8x16xf32>
  %x1 = shard.shard %x0 to %sr annotate_for_users : tensor<8x16xf32>
  %w10 = shard.shard %w1 to %sc : tensor<16x64xf32>
  %w20 = shard.shard %w2 to %srow : tensor<64x16xf32>
  %c0 = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<8x64xf32>
  %z1 = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %h = linalg.matmul ins(%x1, %w10 : tensor<8x16xf32>, tensor<16x64xf32>) outs(%z1 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %h1 = shard.shard %h to %sc : tensor<8x64xf32>
  %e2 = tensor.empty() : tensor<8x16xf32>
  %z2 = linalg.fill ins(%c0 : f32) outs(%e2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%h1, %w20 : tensor<8x64xf32>, tensor<64x16xf32>) outs(%z2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y0 = shard.shard %y to %sr : tensor<8x16xf32>
  %y1 = shard.shard %y0 to %srow annotate_for_users : tensor<8x16xf32>
  return %y1 : tensor<8x16xf32>
}
