// RUN: not hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-shard-to-hir)' 2>&1 | FileCheck %s
// The shard ops hir has no lowering for yet: each refused at the op, the message listing the
// shard ops that convert (from the bridge's handler registry). hir's rooted gather / scatter /
// reduce take one team: a multi-D version would need a root per team, as hir.broadcast has.

shard.grid @g(shape = 2)
func.func @gather(%x: tensor<2x4xf32> {hir.split_axes = #shard<axisarray[[0]]>}) -> tensor<4x4xf32> {
  // CHECK: convert-shard-to-hir-refused.mlir:[[# @LINE + 1]]:8: error: 'shard.gather' op has no hir equivalent yet (converted: all_gather, all_reduce, all_slice, all_to_all, broadcast, grid_shape, {{.*}}, update_halo)
  %r = shard.gather %x on @g grid_axes = [0] gather_axis = 0 root = [0] : (tensor<2x4xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

shard.grid @g(shape = 2)
func.func @scatter(%x: tensor<2x4xf32> {hir.split_axes = #shard<axisarray[[]]>}) -> tensor<1x4xf32> {
  // CHECK: convert-shard-to-hir-refused.mlir:[[# @LINE + 1]]:8: error: 'shard.scatter' op has no hir equivalent yet (converted:
  %r = shard.scatter %x on @g grid_axes = [0] scatter_dim = 0 root = [0] : (tensor<2x4xf32>) -> tensor<1x4xf32>
  return %r : tensor<1x4xf32>
}

// -----

shard.grid @g(shape = 2)
func.func @reduce(%x: tensor<2x4xf32> {hir.split_axes = #shard<axisarray[[]]>}) -> tensor<2x4xf32> {
  // CHECK: convert-shard-to-hir-refused.mlir:[[# @LINE + 1]]:8: error: 'shard.reduce' op has no hir equivalent yet (converted:
  %r = shard.reduce %x on @g grid_axes = [0] root = [0] : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// -----

shard.grid @g(shape = 2)
func.func @send(%x: tensor<2x4xf32> {hir.split_axes = #shard<axisarray[[]]>}) -> tensor<2x4xf32> {
  // CHECK: convert-shard-to-hir-refused.mlir:[[# @LINE + 1]]:8: error: 'shard.send' op has no hir equivalent yet (converted:
  %r = shard.send %x on @g grid_axes = [0] destination = [1] : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// -----

shard.grid @g(shape = 2)
func.func @recv(%x: tensor<2x4xf32> {hir.split_axes = #shard<axisarray[[]]>}) -> tensor<2x4xf32> {
  // CHECK: convert-shard-to-hir-refused.mlir:[[# @LINE + 1]]:8: error: 'shard.recv' op has no hir equivalent yet (converted:
  %r = shard.recv %x on @g grid_axes = [0] source = [1] : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// -----

// A partitioned program holds no get_sharding (shard-partition resolves it).
shard.grid @g(shape = 2)
func.func @get_sharding(%x: tensor<2x4xf32> {hir.split_axes = #shard<axisarray[[]]>}) -> tensor<2x4xf32> {
  // CHECK: convert-shard-to-hir-refused.mlir:[[# @LINE + 1]]:8: error: 'shard.get_sharding' op has no hir equivalent yet (converted:
  %s = shard.get_sharding %x : tensor<2x4xf32> -> !shard.sharding
  %y = shard.shard %x to %s : tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
