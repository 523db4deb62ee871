// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-lower)' | FileCheck %s

// Views of split buffers keep their split (the view's dim map moves the split axis), so
// the passes see where each device's part lies. Mesh {0 1 2 3}.

// nvFuser's matmul_RS_through_bcast (seed 003) as nvFuser writes it: B [DIDx(D), K, N] is
// broadcast with flags {t, f, t, f, f} to [1, DIDx(D), 1, K, N] (a reshape to the unit
// axes, the split moving to axis 1, then a broadcast against A's batch axes). The stream
// loop selects the broadcast B per stream index (stride 0), each slice's product is
// reduce-scattered over D.
// CHECK-LABEL: func.func @matmul_reduce_scatter_through_bcast
// CHECK:       %[[U:.*]] = "hir.alias_reshape"(%arg1) {{.*}} -> memref<1x4x1x16x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
// CHECK-NEXT:  %[[B:.*]] = "hir.alias_broadcast"(%[[U]]) {{.*}} -> memref<3x4x8x16x32xf32, strided<[0, 512, 0, 32, 1], offset: ?>, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
// CHECK:       "hir.for"
// CHECK:       "hir.for"
// CHECK-NEXT:  ^bb0(%[[I:.*]]: index):
// CHECK:         %[[A_I:.*]] = "hir.alias_select"(%arg0, %[[I]]) {axis = 0 : i64}
// CHECK-NEXT:    %[[B_I:.*]] = "hir.alias_select"(%[[B]], %[[I]]) {axis = 0 : i64} : {{.*}} -> memref<4x8x16x32xf32, strided<[512, 0, 32, 1], offset: ?>, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
// CHECK-NEXT:    %[[P_I:.*]] = "hir.alias_select"
// CHECK-NEXT:    "hir.matmul"(%[[A_I]], %[[B_I]], %[[P_I]])
// CHECK-NEXT:    %[[OUT_I:.*]] = "hir.alias_select"
// CHECK-NEXT:    %[[W:.*]] = "hir.reduce_scatter"(%[[P_I]], %[[OUT_I]]) {axis = 0 : i64, backend = "nccl", reduction = "sum", scatter_axis = 1 : i64, team = array<i64: 0, 1, 2, 3>}
// CHECK-NEXT:    "hir.wait"(%[[W]])
func.func @matmul_reduce_scatter_through_bcast(%a: memref<3x4x8x2x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, %w: memref<4x16x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> memref<3x8x2x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>> {
  %u = "hir.alias_reshape"(%w) {reassociation = [[0, 1, 2], [3], [4]]} : (memref<4x16x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> memref<1x4x1x16x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  %b = "hir.alias_broadcast"(%u) : (memref<1x4x1x16x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> memref<3x4x8x16x32xf32, strided<[0, 512, 0, 32, 1], offset: ?>, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  %p = memref.alloc() : memref<3x4x8x2x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  "hir.matmul"(%a, %b, %p) {stream_axis = 0 : i64} : (memref<3x4x8x2x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<3x4x8x16x32xf32, strided<[0, 512, 0, 32, 1], offset: ?>, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<3x4x8x2x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> ()
  %out = memref.alloc() : memref<3x8x2x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  "hir.reduction"(%p, %out) {kind = "sum", axes = array<i64: 1>, stream_axis = 0 : i64} : (memref<3x4x8x2x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<3x8x2x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> ()
  return %out : memref<3x8x2x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
}

// -----

// An unsqueezed split buffer gathered: [D*4, 8] on 0 viewed as [1, D*4, 8] on 1, then made
// replicated: the allgather gathers along the moved split axis 1.
// CHECK-LABEL: func.func @gather_unsqueezed
// CHECK:       %[[U:.*]] = "hir.alias_reshape"(%arg0) {{.*}} -> memref<1x16x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
// CHECK:       "hir.allgather"(%[[U]], %{{.*}}) {axis = 1 : i64, backend = "nccl", team = array<i64: 0, 1, 2, 3>}
func.func @gather_unsqueezed(%x: memref<16x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> memref<1x16x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>> {
  %u = "hir.alias_reshape"(%x) {reassociation = [[0, 1], [2]]} : (memref<16x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> memref<1x16x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  %r = memref.alloc() : memref<1x16x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.set"(%u, %r) : (memref<1x16x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<1x16x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  return %r : memref<1x16x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
}

// -----

// A flatten of unsplit axes in front of the split: [2, 3, D*2, 4] on 2 viewed as
// [6, D*2, 4] on 1 and reduced over its split axis: an allreduce.
// CHECK-LABEL: func.func @reduce_flattened
// CHECK:       %[[F:.*]] = "hir.alias_reshape"(%arg0) {{.*}} -> memref<6x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
// CHECK:       "hir.allreduce"
func.func @reduce_flattened(%x: memref<2x3x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 2 : i64>>) -> memref<6x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>> {
  %f = "hir.alias_reshape"(%x) {reassociation = [[0, 1], [2], [3]]} : (memref<2x3x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 2 : i64>>) -> memref<6x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  %r = memref.alloc() : memref<6x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.reduction"(%f, %r) {kind = "sum", axes = array<i64: 1>} : (memref<6x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<6x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  return %r : memref<6x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
}
