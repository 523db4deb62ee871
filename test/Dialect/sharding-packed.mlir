// Packed placements (DTensor's _StridedShard, HF's packed_colwise): #hir.shard with the
// number of pieces of every split axis; each device holds its part of every piece. A
// compute op reads them where they lie; parse, verify, print, and parse again.
// RUN: hir-opt %s | hir-opt | FileCheck %s

!W = memref<16x8xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, packed = array<i64: 2>}>>
!X = memref<4x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
!Y = memref<4x16xf32, #hir.shard<array<i64: 0, 1>, {axis = 1 : i64, packed = array<i64: 2>}>>
// CHECK-LABEL: func.func @fused_gate_up
// CHECK-SAME: memref<16x8xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, packed = array<i64: 2>}>>
// CHECK: "hir.linear"
// CHECK-SAME: memref<4x16xf32, #hir.shard<array<i64: 0, 1>, {axis = 1 : i64, packed = array<i64: 2>}>>
func.func @fused_gate_up(%w: !W, %x: !X) -> !Y {
  %y = memref.alloc() : !Y
  "hir.linear"(%x, %w, %y) {operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (!X, !W, !Y) -> ()
  return %y : !Y
}

// A 2x2 mesh: dim 1 packed of 2 pieces over mesh axis 1, one piece count per split axis.
// CHECK-LABEL: func.func @packed_2d
// CHECK-SAME: {packed = array<i64: 1, 2>, splits = array<i64: 0, 1>}
func.func @packed_2d(%x: memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, {packed = array<i64: 1, 2>, splits = array<i64: 0, 1>}>>) {
  return
}
