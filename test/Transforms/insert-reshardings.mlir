// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-insert-reshardings)' | FileCheck %s
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-lower)' | FileCheck %s --check-prefix=LOWER
// Reshardings before compute ops whose operands are placed differently from what they need
// (nvFuser's insertReshardings). Mesh {0 1 2 3}.

!A = memref<?x4x8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
!Afull = memref<?x4x8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
!B = memref<16x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
!C = memref<?x4x8x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
// AG + matmul as nvFuser writes it: A split along axis 1, the output replicated. A gets
// gathered into a replicated buffer, streamed along the op's stream axis.
// CHECK-LABEL: func.func @ag_matmul
// CHECK:       %[[OUT:.*]] = memref.alloc
// CHECK:       %[[N:.*]] = memref.dim %arg0
// CHECK-NEXT:  %[[FULL:.*]] = memref.alloc(%[[N]]) : memref<?x4x8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
// CHECK-NEXT:  "hir.set"(%arg0, %[[FULL]]) {stream_axis = 0 : i64}
// CHECK-NEXT:  "hir.matmul"(%[[FULL]], %arg1, %[[OUT]]) {stream_axis = 0 : i64}
// The all-gather pipeline: one loop, allgather + wait then matmul per stream index.
// LOWER-LABEL: func.func @ag_matmul
// LOWER:       %[[OUT:.*]] = memref.alloc
// LOWER-NEXT:  %[[AG:.*]] = memref.alloc
// LOWER:       "hir.for"
// LOWER:       "hir.for"
// LOWER:         %[[A_I:.*]] = "hir.alias_select"(%arg0
// LOWER-NEXT:    %[[AG_I:.*]] = "hir.alias_select"(%[[AG]]
// LOWER-NEXT:    %[[W:.*]] = "hir.allgather"(%[[A_I]], %[[AG_I]]) {axis = 0 : i64
// LOWER-NEXT:    "hir.wait"(%[[W]])
// LOWER-NEXT:    %[[OUT_I:.*]] = "hir.alias_select"(%[[OUT]]
// LOWER-NEXT:    "hir.matmul"(%[[AG_I]], %arg1, %[[OUT_I]])
// LOWER-NOT:   "hir.for"
// LOWER:       memref.dealloc %[[AG]]
// LOWER-NEXT:  return %[[OUT]]
func.func @ag_matmul(%a: !A, %b: !B) -> !C {
  %c0 = arith.constant 0 : index
  %d0 = memref.dim %a, %c0 : !A
  %out = memref.alloc(%d0) : !C
  "hir.matmul"(%a, %b, %out) {stream_axis = 0 : i64} : (!A, !B, !C) -> ()
  return %out : !C
}

// -----

!S = memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
!R = memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
!Row = memref<4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
// A split output: the replicated operand is scattered to the output's split, the broadcast
// row operand is used as it is; an operand already split right is left alone.
// CHECK-LABEL: func.func @binary
// CHECK:       "hir.set"(%arg1, %[[T:[a-z_0-9]+]]) : ({{.*}}, memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>)
// CHECK-NEXT:  "hir.binary"(%arg0, %[[T]], %{{.*}}) {kind = "add"}
// CHECK-NOT:   "hir.set"
// CHECK:       "hir.binary"(%{{.*}}, %arg2, %{{.*}}) {kind = "mul"}
// LOWER-LABEL: func.func @binary
// LOWER:       "hir.scatter"(%arg1
// LOWER:       "hir.binary"
func.func @binary(%s: !S, %r: !R, %row: !Row) -> !S {
  %o = memref.alloc() : !S
  "hir.binary"(%s, %r, %o) {kind = "add"} : (!S, !R, !S) -> ()
  %p = memref.alloc() : !S
  "hir.binary"(%o, %row, %p) {kind = "mul"} : (!S, !Row, !S) -> ()
  return %p : !S
}

// -----

!In = memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
!Sum = memref<4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
!Max = memref<8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
// A reduction over the split axis is a collective of its own (untouched); one over another
// axis with a replicated output needs its input gathered first.
// CHECK-LABEL: func.func @reductions
// CHECK-NEXT:  %[[S:.*]] = memref.alloc
// CHECK-NEXT:  "hir.reduction"(%arg0, %[[S]]) {axes = array<i64: 0>, kind = "sum"}
// CHECK-NEXT:  %[[M:.*]] = memref.alloc
// CHECK-NEXT:  %[[G:.*]] = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
// CHECK-NEXT:  "hir.set"(%arg0, %[[G]])
// CHECK-NEXT:  "hir.reduction"(%[[G]], %[[M]]) {axes = array<i64: 1>, kind = "max"}
// LOWER-LABEL: func.func @reductions
// LOWER:       "hir.allreduce"
// LOWER:       "hir.allgather"
func.func @reductions(%x: !In) -> (!Sum, !Max) {
  %s = memref.alloc() : !Sum
  "hir.reduction"(%x, %s) {kind = "sum", axes = array<i64: 0>} : (!In, !Sum) -> ()
  %m = memref.alloc() : !Max
  "hir.reduction"(%x, %m) {kind = "max", axes = array<i64: 1>} : (!In, !Max) -> ()
  return %s, %m : !Sum, !Max
}

// -----

!X = memref<8x16xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
!W = memref<4x16xf32, #hir.shard<array<i64: 2, 3>, -1 : i64>>
!Y = memref<8x4xf32, #hir.shard<array<i64: 2, 3>, 0 : i64>>
// Another mesh: x moves to the output's mesh, split along M; the weight is in place.
// CHECK-LABEL: func.func @linear_other_mesh
// CHECK:       %[[T:.*]] = memref.alloc() : memref<8x16xf32, #hir.shard<array<i64: 2, 3>, 0 : i64>>
// CHECK-NEXT:  "hir.set"(%arg0, %[[T]])
// CHECK-NEXT:  "hir.linear"(%[[T]], %arg1, %{{.*}})
func.func @linear_other_mesh(%x: !X, %w: !W) -> !Y {
  %y = memref.alloc() : !Y
  "hir.linear"(%x, %w, %y) {operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (!X, !W, !Y) -> ()
  return %y : !Y
}
