// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda})' | FileCheck %s --check-prefix=WHOLE
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline)' | FileCheck %s
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-insert-reshardings,hir-convert-to-communication,hir-p2p-pipeline{backend=cuda chunks=auto overlap=on},hir-lower)' | FileCheck %s --check-prefix=OVERLAP
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{accumulate=1 chunks=2})' | FileCheck %s --check-prefix=ACCUMULATE

// The backward of a sequence-parallel MLP block (tokens split over 4 devices; up's weight
// split on its rows, down's on its columns) as hir.train_step imports it (excerpts of
// @main, the ops between them in kernel segments taken as arguments). The gradient of
// down's input is the all-gathered gradient of the block's output (split tokens) times
// down's weight: an all-gather + matmul, the mirror of the forward's reduce-scatter.

// WHOLE-LABEL: func.func @down_input_gradient
// WHOLE: "hir.allgather"
// WHOLE: "hir.matmul"
// CHECK-LABEL: func.func @down_input_gradient
// CHECK-NOT: "hir.allgather"
// CHECK: "hir.for"
// CHECK: "hir.shift"
// CHECK: "hir.matmul"
// OVERLAP-LABEL: func.func @down_input_gradient
// OVERLAP-NOT: "hir.allgather"
// OVERLAP: "hir.shift"
func.func @down_input_gradient(%grad_rows: memref<8x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %down_weight: memref<8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> memref<8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>> {
  %0 = "hir.alias_reshape"(%grad_rows) {reassociation = [[0, 1], [2]]} : (memref<8x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
  %gathered = memref.alloc() : memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.set"(%0, %gathered) {stream_axis = 0 : i64} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  %product = memref.alloc() : memref<4x2x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 2 : i64>>
  "hir.matmul"(%gathered, %down_weight, %product) {stream_axis = 0 : i64} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<4x2x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 2 : i64>>) -> ()
  %1 = "hir.alias_reshape"(%product) {reassociation = [[0, 1], [2]]} : (memref<4x2x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 2 : i64>>) -> memref<8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  return %1 : memref<8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
}

// -----

// The gradient of up's input: the gradient of its output (split on up's rows) times up's
// weight, a contraction over the split dim, per token block a partial sum that each device
// reduces for its own tokens: matmul + reduce-scatter, the mirror of the forward's all-gather.

// WHOLE-LABEL: func.func @up_input_gradient
// WHOLE: "hir.matmul"
// WHOLE: "hir.reduce_scatter"
// CHECK-LABEL: func.func @up_input_gradient
// CHECK-NOT: "hir.reduce_scatter"
// CHECK: "hir.shift"
// CHECK: "hir.reduction"
// OVERLAP-LABEL: func.func @up_input_gradient
// OVERLAP-NOT: "hir.reduce_scatter"
// OVERLAP: "hir.shift"
// ACCUMULATE-LABEL: func.func @up_input_gradient
// ACCUMULATE-NOT: "hir.reduce_scatter"
// ACCUMULATE: "hir.shift"
// ACCUMULATE: accumulate
func.func @up_input_gradient(%grad_features: memref<8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, %up_weight: memref<16x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> memref<8x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>> {
  %0 = "hir.alias_reshape"(%grad_features) {reassociation = [[0, 1], [2]]} : (memref<8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> memref<4x2x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 2 : i64>>
  %1 = "hir.alias_stack_shards"(%0) {at = 1 : i64, axis = 2 : i64} : (memref<4x2x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 2 : i64>>) -> memref<4x4x2x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  %2 = "hir.alias_stack_shards"(%up_weight) {at = 0 : i64, axis = 0 : i64} : (memref<16x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> memref<4x4x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
  %3 = "hir.alias_reshape"(%2) {reassociation = [[0, 1], [2], [3]]} : (memref<4x4x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> memref<1x4x4x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  %partial = memref.alloc() : memref<4x4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  "hir.matmul"(%1, %3, %partial) {stream_axis = 0 : i64} : (memref<4x4x2x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<1x4x4x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<4x4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> ()
  %summed = memref.alloc() : memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
  "hir.reduction"(%partial, %summed) {axes = array<i64: 1>, kind = "sum", stream_axis = 0 : i64} : (memref<4x4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> ()
  %4 = "hir.alias_reshape"(%summed) {reassociation = [[0, 1], [2]]} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> memref<8x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
  return %4 : memref<8x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
}
