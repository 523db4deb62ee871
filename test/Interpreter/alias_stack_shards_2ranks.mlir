// RUN: hir-run --nproc 2 %s arange zeros --print | FileCheck %s
// hir.alias_stack_shards on two Gloo ranks: each holds 2 of the 4 columns of %a
// (arange(12) as [3, 4]). Its view [2, 3, 2] split on 0 is each rank's [3, 2] shard with
// a unit axis in front (no copy: doubling it in place doubles %a's shard). Gathered whole,
// the view is the shards stacked: %g[d, t, j] = %a[t, 2d + j].

!cols = memref<3x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
!stacked = memref<2x3x2xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
func.func @main(%a: !cols, %g: memref<2x3x2xf32>) -> (memref<2x3x2xf32>, !cols) {
  %v = "hir.alias_stack_shards"(%a) {axis = 1 : i64, at = 0 : i64} : (!cols) -> !stacked
  "hir.binary"(%v, %v, %v) {kind = "add"} : (!stacked, !stacked, !stacked) -> ()
  %w = "hir.allgather"(%v, %g) {axis = 0 : i64, backend = "nccl", team = array<i64: 0, 1>} : (!stacked, memref<2x3x2xf32>) -> !hir.work
  "hir.wait"(%w) : (!hir.work) -> ()
  return %g, %a : memref<2x3x2xf32>, !cols
}

// CHECK:      rank 0: output 0: shape [2, 3, 2] f32
// CHECK-NEXT: rank 0: {{\[}}{{\[}}[0, 2],
// CHECK-NEXT: rank 0:   [8, 10],
// CHECK-NEXT: rank 0:   [16, 18]],
// CHECK-NEXT: rank 0:  {{\[}}[4, 6],
// CHECK-NEXT: rank 0:   [12, 14],
// CHECK-NEXT: rank 0:   [20, 22]]]
// CHECK-NEXT: rank 0: output 1: shape [3, 2] f32
// CHECK-NEXT: rank 0: {{\[}}[0, 2],
// CHECK-NEXT: rank 0:  [8, 10],
// CHECK-NEXT: rank 0:  [16, 18]]
// CHECK-NEXT: rank 1: output 0: shape [2, 3, 2] f32
// CHECK-NEXT: rank 1: {{\[}}{{\[}}[0, 2],
// CHECK:      rank 1:   [20, 22]]]
// CHECK-NEXT: rank 1: output 1: shape [3, 2] f32
// CHECK-NEXT: rank 1: {{\[}}[4, 6],
// CHECK-NEXT: rank 1:  [12, 14],
// CHECK-NEXT: rank 1:  [20, 22]]
