// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-stream-lowering{chunks=2},hir-expand-stream-loops)' | FileCheck %s
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-insert-reshardings,hir-convert-to-communication,hir-stream-lowering{chunks=2},hir-fuse-loops,hir-insert-deallocations,hir-expand-stream-loops,canonicalize,cse)' | FileCheck %s --check-prefix=LOWER
// Stream-axis split: the stream axis of extent N runs as 2 stream iterations of N/2 rows,
// each operand viewed with hir.alias_chunk (the axis is kept: reduction axes are not
// renumbered, matmul slices stay matrices, an extent-1 broadcast operand is used whole).

// CHECK-LABEL: func.func @chunks
// CHECK:       %[[C2:.*]] = arith.constant 2 : index
// CHECK:       "hir.for"(%{{.*}}, %[[C2]], %{{.*}})
// CHECK:       "hir.for"(%{{.*}}, %[[C2]], %{{.*}})
// CHECK-NEXT:  ^bb0(%[[I:.*]]: index):
// CHECK:         %[[A:.*]] = "hir.alias_chunk"(%arg0, %[[I]]) {axis = 0 : i64, chunks = 2 : i64} : (memref<8x4xf32>, index) -> memref<4x4xf32, strided<[4, 1], offset: ?>>
// CHECK-NEXT:    %[[M:.*]] = "hir.alias_chunk"(%{{.*}}, %[[I]]) {axis = 0 : i64, chunks = 2 : i64} : (memref<8x3xf32>, index) -> memref<4x3xf32, strided<[3, 1], offset: ?>>
// CHECK-NEXT:    "hir.matmul"(%[[A]], %arg1, %[[M]])
// CHECK:       "hir.for"
// CHECK:       "hir.for"
// CHECK:         "hir.alias_chunk"(%{{.*}}) {axis = 0 : i64, chunks = 2 : i64}
// CHECK-NOT:     "hir.alias_chunk"(%arg2
// CHECK:         "hir.binary"(%{{.*}}, %arg2, %{{.*}}) {kind = "add"}
// CHECK:       "hir.for"
// CHECK:       "hir.for"
// CHECK:         "hir.reduction"(%{{.*}}, %{{.*}}) {axes = array<i64: 1>, kind = "sum"}
// The three chunked loops fuse into one.
// LOWER-LABEL: func.func @chunks
// LOWER-COUNT-2: "hir.for"
// LOWER-NOT:   "hir.for"
// LOWER:       return
func.func @chunks(%a: memref<8x4xf32>, %w: memref<4x3xf32>, %bias: memref<1x3xf32>) -> (memref<8x3xf32>, memref<8xf32>) {
  %m = memref.alloc() : memref<8x3xf32>
  "hir.matmul"(%a, %w, %m) {stream_axis = 0 : i64} : (memref<8x4xf32>, memref<4x3xf32>, memref<8x3xf32>) -> ()
  %o = memref.alloc() : memref<8x3xf32>
  "hir.binary"(%m, %bias, %o) {kind = "add", stream_axis = 0 : i64} : (memref<8x3xf32>, memref<1x3xf32>, memref<8x3xf32>) -> ()
  %r = memref.alloc() : memref<8xf32>
  "hir.reduction"(%o, %r) {kind = "sum", axes = array<i64: 1>, stream_axis = 0 : i64} : (memref<8x3xf32>, memref<8xf32>) -> ()
  return %o, %r : memref<8x3xf32>, memref<8xf32>
}

// -----

// A dynamic extent: the chunk count is the loop extent, each chunk checked when it is taken.
// CHECK-LABEL: func.func @dynamic
// CHECK:       %[[C2:.*]] = arith.constant 2 : index
// CHECK:       "hir.for"(%{{.*}}, %[[C2]], %{{.*}})
// CHECK:       "hir.alias_chunk"(%arg0, %{{.*}}) {axis = 0 : i64, chunks = 2 : i64} : (memref<?x4xf32>, index) -> memref<?x4xf32, strided<[4, 1], offset: ?>>
func.func @dynamic(%x: memref<?x4xf32>) -> memref<?x4xf32> {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x4xf32>
  %o = memref.alloc(%n) : memref<?x4xf32>
  "hir.set"(%x, %o) {stream_axis = 0 : i64} : (memref<?x4xf32>, memref<?x4xf32>) -> ()
  return %o : memref<?x4xf32>
}

// -----

!A = memref<4x8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
!B = memref<16x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
!C = memref<4x8x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
// AG + matmul streamed along M, which is not the device axis: each of the 2 iterations
// all-gathers 4 rows of every shard, then multiplies them.
// LOWER-LABEL: func.func @ag_matmul_chunks
// LOWER:       "hir.for"
// LOWER:       "hir.for"
// LOWER:         %[[A_I:.*]] = "hir.alias_chunk"(%arg0, %{{.*}}) {axis = 1 : i64, chunks = 2 : i64}
// LOWER-NEXT:    %[[G_I:.*]] = "hir.alias_chunk"(%{{.*}}) {axis = 1 : i64, chunks = 2 : i64}
// LOWER-NEXT:    %[[W:.*]] = "hir.allgather"(%[[A_I]], %[[G_I]]) {axis = 0 : i64
// LOWER-NEXT:    "hir.wait"(%[[W]])
// LOWER-NEXT:    %[[O_I:.*]] = "hir.alias_chunk"(%{{.*}}) {axis = 1 : i64, chunks = 2 : i64}
// LOWER-NEXT:    "hir.matmul"(%[[G_I]], %arg1, %[[O_I]])
func.func @ag_matmul_chunks(%a: !A, %b: !B) -> !C {
  %out = memref.alloc() : !C
  "hir.matmul"(%a, %b, %out) {stream_axis = 1 : i64} : (!A, !B, !C) -> ()
  return %out : !C
}
