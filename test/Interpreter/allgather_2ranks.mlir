// RUN: hir-run --nproc 2 %s arange zeros --print | FileCheck %s
// Two local Gloo ranks: each holds 2 rows of %a and gathers the whole 4x2 buffer.

!shard = memref<4x2xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
func.func @main(%a: !shard, %b: memref<4x2xf32>) -> memref<4x2xf32> {
  %w = "hir.allgather"(%a, %b) {axis = 0 : i64, backend = "nccl", team = array<i64: 0, 1>} : (!shard, memref<4x2xf32>) -> !hir.work
  "hir.wait"(%w) : (!hir.work) -> ()
  return %b : memref<4x2xf32>
}

// CHECK:      rank 0: output 0: shape [4, 2] f32
// CHECK-NEXT: rank 0: {{\[}}[0, 1],
// CHECK-NEXT: rank 0:  [2, 3],
// CHECK-NEXT: rank 0:  [4, 5],
// CHECK-NEXT: rank 0:  [6, 7]]
// CHECK-NEXT: rank 1: output 0: shape [4, 2] f32
// CHECK-NEXT: rank 1: {{\[}}[0, 1],
// CHECK:      rank 1:  [6, 7]]
