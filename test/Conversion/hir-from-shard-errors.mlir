// RUN: not hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-from-shard)' 2>&1 | FileCheck %s
// Shardings hir-from-shard refuses, each at its `shard.sharding` (hir-record-shard-signature),
// and an uneven split of an intermediate, which upstream partitioning refuses at the reshard
// after propagation (hir-from-shard-no-propagation converts it: hir-from-shard-uneven.mlir).

shard.grid @g(shape = 2)
func.func @dynamic_offsets(%a: tensor<8x4xf32>, %o: i64) -> tensor<8x4xf32> {
  // CHECK: hir-from-shard-errors.mlir:[[# @LINE + 1]]:8: error: 'shard.sharding' op has dynamic halo sizes or offsets; hir converts static shardings only
  %s = shard.sharding @g split_axes = [[0]] sharded_dims_offsets = [0, %o, 8] : !shard.sharding
  %a1 = shard.shard %a to %s annotate_for_users : tensor<8x4xf32>
  return %a1 : tensor<8x4xf32>
}

// -----

// sharding-propagation shards the linalg.add producing %c evenly (its sharding options carry
// no offsets); shard-partition cannot reshard that to %u's uneven split (the pinned wheel's message).
shard.grid @g(shape = 2)
func.func @uneven_intermediate(%a: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %u = shard.sharding @g split_axes = [[0]] sharded_dims_offsets = [0, 3, 8] : !shard.sharding
  %a1 = shard.shard %a to %s annotate_for_users : tensor<8x4xf32>
  %e = tensor.empty() : tensor<8x4xf32>
  %c = linalg.add ins(%a1, %a1 : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  // CHECK: hir-from-shard-errors.mlir:[[# @LINE + 1]]:9: error: Failed to reshard; probably hitting an unknown resharding pattern: got Sharding<grid=g, split_axes={{\[\[0\]\]}}> expected Sharding<grid=g, split_axes={{\[\[0\]\]}}, sharded_dims_offsets=[0, 3, 8]>
  %c1 = shard.shard %c to %u : tensor<8x4xf32>
  %c2 = shard.shard %c1 to %s annotate_for_users : tensor<8x4xf32>
  %e2 = tensor.empty() : tensor<8x4xf32>
  %d = linalg.add ins(%c2, %c2 : tensor<8x4xf32>, tensor<8x4xf32>) outs(%e2 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %d1 = shard.shard %d to %s : tensor<8x4xf32>
  return %d1 : tensor<8x4xf32>
}
