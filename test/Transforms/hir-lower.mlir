// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-lower)' | FileCheck %s

// The collective-based stream pipelines of nvFuser's MultiDeviceStreamParallelTypeTest
// (seed 003), from program-level inputs. Mesh {0 1 2 3}; the stream axis is axis 0.

// Allgather: [i0, DIDx(i2)] -> [Stream(i0), i2].
// CHECK-LABEL: func.func @allgather
// CHECK:       %[[OUT:.*]] = memref.alloc
// CHECK-NEXT:  %[[USER:.*]] = "hir.get_current_stream"
// CHECK-NEXT:  "hir.for"
// CHECK-NEXT:  ^bb0(%[[J:.*]]: index):
// CHECK-NEXT:    %[[S0:.*]] = "hir.get_stream"(%[[J]])
// CHECK-NEXT:    "hir.set_current_stream"(%[[S0]])
// CHECK-NEXT:    "hir.synchronize"(%[[USER]])
// CHECK-NEXT:    "hir.yield"
// CHECK:       "hir.for"
// CHECK-NEXT:  ^bb0(%[[I:.*]]: index):
// CHECK-NEXT:    %[[S:.*]] = "hir.get_stream"(%[[I]])
// CHECK-NEXT:    "hir.set_current_stream"(%[[S]])
// CHECK-NEXT:    %[[IN_I:.*]] = "hir.alias_select"(%arg0, %[[I]]) {axis = 0 : i64}
// CHECK-NEXT:    %[[OUT_I:.*]] = "hir.alias_select"(%[[OUT]], %[[I]]) {axis = 0 : i64}
// CHECK-NEXT:    %[[W:.*]] = "hir.allgather"(%[[IN_I]], %[[OUT_I]]) {axis = 0 : i64, backend = "nccl", team = array<i64: 0, 1, 2, 3>}
// CHECK-NEXT:    "hir.wait"(%[[W]])
// CHECK-NEXT:    "hir.set_current_stream"(%[[USER]])
// CHECK-NEXT:    "hir.synchronize"(%[[S]])
// CHECK-NEXT:    "hir.yield"
// CHECK-NOT:   hir.for
// CHECK-NOT:   memref.dealloc
// CHECK:       return %[[OUT]]
func.func @allgather(%arg0: memref<?x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> memref<?x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>> {
  %c0 = arith.constant 0 : index
  %d0 = memref.dim %arg0, %c0 : memref<?x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  %0 = memref.alloc(%d0) : memref<?x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.set"(%arg0, %0) {stream_axis = 0 : i64} : (memref<?x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<?x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  return %0 : memref<?x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
}

// -----

// Allreduce: [i0, DIDx(i2), i3] -> [Stream(i0), r(i2), i3].
// CHECK-LABEL: func.func @allreduce
// CHECK:       %[[OUT:.*]] = memref.alloc
// CHECK-NEXT:  %[[USER:.*]] = "hir.get_current_stream"
// CHECK-NEXT:  "hir.for"
// CHECK:         "hir.synchronize"(%[[USER]])
// CHECK:       "hir.for"
// CHECK-NEXT:  ^bb0(%[[I:.*]]: index):
// CHECK-NEXT:    %[[S:.*]] = "hir.get_stream"(%[[I]])
// CHECK-NEXT:    "hir.set_current_stream"(%[[S]])
// CHECK-NEXT:    %[[IN_I:.*]] = "hir.alias_select"(%arg0, %[[I]]) {axis = 0 : i64} : {{.*}} -> memref<4x8xf32, strided<[8, 1], offset: ?>, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
// CHECK-NEXT:    %[[OUT_I:.*]] = "hir.alias_select"(%[[OUT]], %[[I]]) {axis = 0 : i64}
// CHECK-NEXT:    %[[W:.*]] = "hir.allreduce"(%[[IN_I]], %[[OUT_I]]) {axis = 0 : i64, backend = "nccl", reduction = "sum", team = array<i64: 0, 1, 2, 3>}
// CHECK-NEXT:    "hir.wait"(%[[W]])
// CHECK-NEXT:    "hir.set_current_stream"(%[[USER]])
// CHECK-NEXT:    "hir.synchronize"(%[[S]])
func.func @allreduce(%arg0: memref<?x4x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> memref<?x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>> {
  %c0 = arith.constant 0 : index
  %d0 = memref.dim %arg0, %c0 : memref<?x4x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  %0 = memref.alloc(%d0) : memref<?x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.reduction"(%arg0, %0) {kind = "sum", axes = array<i64: 1>, stream_axis = 0 : i64} : (memref<?x4x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<?x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  return %0 : memref<?x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
}

// -----

// ReduceScatter: [i0, DIDx(i2), i3, i4] -> [Stream(i0), r(i2), DIDx(i3), i4]; the output's
// split axis 0 of the slice is input axis 1 once past the reduced axis.
// CHECK-LABEL: func.func @reduce_scatter
// CHECK:       %[[OUT:.*]] = memref.alloc
// CHECK-NEXT:  %[[USER:.*]] = "hir.get_current_stream"
// CHECK:       "hir.for"
// CHECK:       "hir.for"
// CHECK:         %[[IN_I:.*]] = "hir.alias_select"(%arg0
// CHECK-NEXT:    %[[OUT_I:.*]] = "hir.alias_select"(%[[OUT]]
// CHECK-NEXT:    %[[W:.*]] = "hir.reduce_scatter"(%[[IN_I]], %[[OUT_I]]) {axis = 0 : i64, backend = "nccl", reduction = "sum", scatter_axis = 1 : i64, team = array<i64: 0, 1, 2, 3>}
// CHECK-NEXT:    "hir.wait"(%[[W]])
// CHECK-NEXT:    "hir.set_current_stream"(%[[USER]])
func.func @reduce_scatter(%arg0: memref<?x4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> memref<?x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>> {
  %c0 = arith.constant 0 : index
  %d0 = memref.dim %arg0, %c0 : memref<?x4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  %0 = memref.alloc(%d0) : memref<?x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  "hir.reduction"(%arg0, %0) {kind = "sum", axes = array<i64: 1>, stream_axis = 0 : i64} : (memref<?x4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<?x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> ()
  return %0 : memref<?x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
}

// -----

// AG_matmul: the all-gathered A and the matmul output are allocated before one pair of
// loops; per stream index, allgather + wait, then matmul on the gathered slice and whole B.
// CHECK-LABEL: func.func @ag_matmul
// CHECK:       %[[AG:.*]] = memref.alloc
// CHECK-NEXT:  %[[OUT:.*]] = memref.alloc
// CHECK-NEXT:  %[[USER:.*]] = "hir.get_current_stream"
// CHECK-NEXT:  "hir.for"
// CHECK:         "hir.synchronize"(%[[USER]])
// CHECK:       "hir.for"
// CHECK-NEXT:  ^bb0(%[[I:.*]]: index):
// CHECK-NEXT:    %[[S:.*]] = "hir.get_stream"(%[[I]])
// CHECK-NEXT:    "hir.set_current_stream"(%[[S]])
// CHECK-NEXT:    %[[A_I:.*]] = "hir.alias_select"(%arg0, %[[I]]) {axis = 0 : i64}
// CHECK-NEXT:    %[[AG_I:.*]] = "hir.alias_select"(%[[AG]], %[[I]]) {axis = 0 : i64}
// CHECK-NEXT:    %[[W:.*]] = "hir.allgather"(%[[A_I]], %[[AG_I]]) {axis = 0 : i64
// CHECK-NEXT:    "hir.wait"(%[[W]])
// CHECK-NEXT:    %[[OUT_I:.*]] = "hir.alias_select"(%[[OUT]], %[[I]]) {axis = 0 : i64}
// CHECK-NEXT:    "hir.matmul"(%[[AG_I]], %arg1, %[[OUT_I]])
// CHECK-NEXT:    "hir.set_current_stream"(%[[USER]])
// CHECK-NEXT:    "hir.synchronize"(%[[S]])
// CHECK-NEXT:    "hir.yield"
// CHECK-NOT:   "hir.for"
// CHECK:       memref.dealloc %[[AG]]
// CHECK-NEXT:  return %[[OUT]]
func.func @ag_matmul(%arg0: memref<?x4x8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, %arg1: memref<16x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> memref<?x4x8x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>> {
  %c0 = arith.constant 0 : index
  %d0 = memref.dim %arg0, %c0 : memref<?x4x8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  %0 = memref.alloc(%d0) : memref<?x4x8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.set"(%arg0, %0) {stream_axis = 0 : i64} : (memref<?x4x8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<?x4x8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  %1 = memref.alloc(%d0) : memref<?x4x8x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.matmul"(%0, %arg1, %1) {stream_axis = 0 : i64} : (memref<?x4x8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<16x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<?x4x8x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  return %1 : memref<?x4x8x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
}

// -----

// matmul_AR: A [S, DIDx(D), M, K] times B [DIDx(D), K, N] gives partial sums [S, DIDx(D), M, N]
// (stream axis S, a batch axis: B is used whole), then an allreduce over D per slice.
// CHECK-LABEL: func.func @matmul_allreduce
// CHECK:       %[[P:.*]] = memref.alloc
// CHECK-NEXT:  %[[OUT:.*]] = memref.alloc
// CHECK-NEXT:  %[[USER:.*]] = "hir.get_current_stream"
// CHECK-NEXT:  "hir.for"
// CHECK:       "hir.for"
// CHECK-NEXT:  ^bb0(%[[I:.*]]: index):
// CHECK-NEXT:    %[[S:.*]] = "hir.get_stream"(%[[I]])
// CHECK-NEXT:    "hir.set_current_stream"(%[[S]])
// CHECK-NEXT:    %[[A_I:.*]] = "hir.alias_select"(%arg0, %[[I]]) {axis = 0 : i64}
// CHECK-NEXT:    %[[P_I:.*]] = "hir.alias_select"(%[[P]], %[[I]]) {axis = 0 : i64}
// CHECK-NEXT:    "hir.matmul"(%[[A_I]], %arg1, %[[P_I]])
// CHECK-NEXT:    %[[OUT_I:.*]] = "hir.alias_select"(%[[OUT]], %[[I]]) {axis = 0 : i64}
// CHECK-NEXT:    %[[W:.*]] = "hir.allreduce"(%[[P_I]], %[[OUT_I]]) {axis = 0 : i64, backend = "nccl", reduction = "sum", team = array<i64: 0, 1, 2, 3>}
// CHECK-NEXT:    "hir.wait"(%[[W]])
// CHECK-NEXT:    "hir.set_current_stream"(%[[USER]])
// CHECK-NEXT:    "hir.synchronize"(%[[S]])
// CHECK:       memref.dealloc %[[P]]
// CHECK-NEXT:  return %[[OUT]]
func.func @matmul_allreduce(%arg0: memref<?x4x8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, %arg1: memref<4x16x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> memref<?x8x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>> {
  %c0 = arith.constant 0 : index
  %d0 = memref.dim %arg0, %c0 : memref<?x4x8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  %0 = memref.alloc(%d0) : memref<?x4x8x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  "hir.matmul"(%arg0, %arg1, %0) {stream_axis = 0 : i64} : (memref<?x4x8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<4x16x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<?x4x8x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> ()
  %1 = memref.alloc(%d0) : memref<?x8x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.reduction"(%0, %1) {kind = "sum", axes = array<i64: 1>, stream_axis = 0 : i64} : (memref<?x4x8x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<?x8x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  return %1 : memref<?x8x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
}

// -----

// matmul_RS_through_bcast: nvFuser broadcasts B [DIDx(D), K, N] to [1, DIDx(D), 1, K, N] in
// a kernel segment before the loops; here B arrives broadcast. Its extent-1 axis 0 is read at
// index 0 for every stream index. Then a reduce-scatter over D per slice.
// CHECK-LABEL: func.func @matmul_reduce_scatter_through_bcast
// CHECK:       %[[P:.*]] = memref.alloc
// CHECK-NEXT:  %[[OUT:.*]] = memref.alloc
// CHECK-NEXT:  %[[USER:.*]] = "hir.get_current_stream"
// CHECK-NEXT:  "hir.for"
// CHECK:       "hir.for"
// CHECK-NEXT:  ^bb0(%[[I:.*]]: index):
// CHECK-NEXT:    %[[S:.*]] = "hir.get_stream"(%[[I]])
// CHECK-NEXT:    "hir.set_current_stream"(%[[S]])
// CHECK-NEXT:    %[[A_I:.*]] = "hir.alias_select"(%arg0, %[[I]]) {axis = 0 : i64}
// CHECK-NEXT:    %[[B_0:.*]] = "hir.alias_select"(%arg1, %c0{{.*}}) {axis = 0 : i64}
// CHECK-NEXT:    %[[P_I:.*]] = "hir.alias_select"(%[[P]], %[[I]]) {axis = 0 : i64}
// CHECK-NEXT:    "hir.matmul"(%[[A_I]], %[[B_0]], %[[P_I]])
// CHECK-NEXT:    %[[OUT_I:.*]] = "hir.alias_select"(%[[OUT]], %[[I]]) {axis = 0 : i64}
// CHECK-NEXT:    %[[W:.*]] = "hir.reduce_scatter"(%[[P_I]], %[[OUT_I]]) {axis = 0 : i64, backend = "nccl", reduction = "sum", scatter_axis = 1 : i64, team = array<i64: 0, 1, 2, 3>}
// CHECK-NEXT:    "hir.wait"(%[[W]])
// CHECK-NEXT:    "hir.set_current_stream"(%[[USER]])
// CHECK-NEXT:    "hir.synchronize"(%[[S]])
// CHECK:       memref.dealloc %[[P]]
// CHECK-NEXT:  return %[[OUT]]
func.func @matmul_reduce_scatter_through_bcast(%arg0: memref<?x4x8x2x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, %arg1: memref<1x4x1x16x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> memref<?x8x2x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>> {
  %c0 = arith.constant 0 : index
  %d0 = memref.dim %arg0, %c0 : memref<?x4x8x2x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  %0 = memref.alloc(%d0) : memref<?x4x8x2x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  "hir.matmul"(%arg0, %arg1, %0) {stream_axis = 0 : i64} : (memref<?x4x8x2x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<1x4x1x16x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<?x4x8x2x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> ()
  %1 = memref.alloc(%d0) : memref<?x8x2x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  "hir.reduction"(%0, %1) {kind = "sum", axes = array<i64: 1>, stream_axis = 0 : i64} : (memref<?x4x8x2x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<?x8x2x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> ()
  return %1 : memref<?x8x2x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
}
