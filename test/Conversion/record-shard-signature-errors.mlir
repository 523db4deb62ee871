// RUN: not hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-record-shard-signature)' 2>&1 | FileCheck %s
// Signatures hir-record-shard-signature refuses to record, each at its op.

shard.grid @a(shape = 2)
shard.grid @b(shape = 2)
// CHECK: record-shard-signature-errors.mlir:[[# @LINE + 1]]:1: error: 'func.func' op @two_grids shards values on the grids @a, @b; hir converts a function on one grid
func.func @two_grids(%x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %sa = shard.sharding @a split_axes = [[0]] : !shard.sharding
  %sb = shard.sharding @b split_axes = [[0]] : !shard.sharding
  %x1 = shard.shard %x to %sa annotate_for_users : tensor<8xf32>
  %y1 = shard.shard %y to %sb annotate_for_users : tensor<8xf32>
  return %x1, %y1 : tensor<8xf32>, tensor<8xf32>
}

// -----

shard.grid @g(shape = 2)
func.func @sharding_argument(%x: tensor<8xf32>, %s: !shard.sharding) -> tensor<8xf32> {
  // CHECK: record-shard-signature-errors.mlir:[[# @LINE + 1]]:9: error: 'shard.shard' op: its sharding is not a shard.sharding op; hir records static shardings only
  %x1 = shard.shard %x to %s annotate_for_users : tensor<8xf32>
  return %x1 : tensor<8xf32>
}
