// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-record-shard-signature)' | FileCheck %s --check-prefix=SIG
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-from-shard-no-propagation)' | FileCheck %s
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-from-shard-no-propagation,hir-lower)' | FileCheck %s --check-prefix=LOWER
// Halos on function arguments and results (upstream's ew_chain_with_halo and
// test_shard_update_halo(2d) of mlir/test/Dialect/Shard/partition.mlir, smaller): after
// shard-partition each device's argument / result is its block with its halos, so its hir
// global type is the devices' padded blocks side by side: 8 rows on a grid of 4 with halos
// [2, 1] are 4 blocks of 2 + 2 + 1 = 5 rows, 20.

shard.grid @g(shape = 4)
// SIG-LABEL: func.func @ew_chain_with_halo
// SIG-SAME: %arg0: tensor<8x16xf32> {hir.global_type = tensor<20x16xf32>, hir.split_axes = #shard<axisarray{{\[\[}}0]]>}
// SIG-SAME: -> (tensor<8x16xf32> {hir.global_type = tensor<20x16xf32>, hir.split_axes = #shard<axisarray{{\[\[}}0]]>})
// CHECK-LABEL: func.func @ew_chain_with_halo(%arg0: memref<20x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> memref<20x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
// CHECK-NOT: hir.shift
// CHECK: return
// LOWER-LABEL: func.func @ew_chain_with_halo(%arg0: memref<20x16xf32
func.func @ew_chain_with_halo(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %s = shard.sharding @g split_axes = [[0]] halo_sizes = [2, 1] : !shard.sharding
  %0 = shard.shard %arg0 to %s annotate_for_users : tensor<8x16xf32>
  %1 = tosa.tanh %0 : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %2 = shard.shard %1 to %s : tensor<8x16xf32>
  %3 = shard.shard %2 to %s annotate_for_users : tensor<8x16xf32>
  %4 = tosa.abs %3 : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %5 = shard.shard %4 to %s : tensor<8x16xf32>
  %6 = shard.shard %5 to %s annotate_for_users : tensor<8x16xf32>
  return %6 : tensor<8x16xf32>
}

// -----

// A block without halos in, with halos [2, 2] out: the result's 4 blocks of 4 + 2 + 2 rows.
shard.grid @g(shape = 4)
// SIG-LABEL: func.func @update_halo_result
// SIG-SAME: %arg0: tensor<16x12xi64> {hir.global_type = tensor<16x12xi64>, hir.split_axes = #shard<axisarray{{\[\[}}0]]>}
// SIG-SAME: -> (tensor<16x12xi64> {hir.global_type = tensor<32x12xi64>, hir.split_axes = #shard<axisarray{{\[\[}}0]]>})
// CHECK-LABEL: func.func @update_halo_result(%arg0: memref<16x12xi64, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> memref<32x12xi64, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
// CHECK-COUNT-2: "hir.shift"({{.*}}) {backend = "nccl", team = array<i64: 0, 1, 2, 3>}
// LOWER-LABEL: func.func @update_halo_result
// LOWER-COUNT-2: "hir.shift"
func.func @update_halo_result(%arg0: tensor<16x12xi64>) -> tensor<16x12xi64> {
  %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %0 = shard.shard %arg0 to %s : tensor<16x12xi64>
  %h = shard.sharding @g split_axes = [[0]] halo_sizes = [2, 2] : !shard.sharding
  %1 = shard.shard %0 to %h : tensor<16x12xi64>
  %2 = shard.shard %1 to %h annotate_for_users : tensor<16x12xi64>
  return %2 : tensor<16x12xi64>
}

// -----

// On a 2x2 grid, both dims split with halos [1, 3] and [2, 2]: 2 blocks of 8 + 4 rows and of
// 8 + 4 columns; the halos are exchanged per dim from the last, each along its grid axis with
// one hir.shift team per line of the grid.
shard.grid @g(shape = 2x2)
// SIG-LABEL: func.func @update_halo_2d
// SIG-SAME: -> (tensor<16x16xi64> {hir.global_type = tensor<24x24xi64>, hir.split_axes = #shard<axisarray{{\[\[}}0], [1]]>})
// CHECK-LABEL: func.func @update_halo_2d(%arg0: memref<16x16xi64, {{.*}}>) -> memref<24x24xi64, #hir.shard<dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>
// CHECK-COUNT-2: "hir.shift"({{.*}}) {backend = "nccl", team = dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>}
// CHECK-COUNT-2: "hir.shift"({{.*}}) {backend = "nccl", team = dense<{{\[\[}}0, 2], [1, 3]]> : tensor<2x2xi64>}
func.func @update_halo_2d(%arg0: tensor<16x16xi64>) -> tensor<16x16xi64> {
  %s = shard.sharding @g split_axes = [[0], [1]] : !shard.sharding
  %0 = shard.shard %arg0 to %s : tensor<16x16xi64>
  %h = shard.sharding @g split_axes = [[0], [1]] halo_sizes = [1, 3, 2, 2] : !shard.sharding
  %1 = shard.shard %0 to %h : tensor<16x16xi64>
  %2 = shard.shard %1 to %h annotate_for_users : tensor<16x16xi64>
  return %2 : tensor<16x16xi64>
}
