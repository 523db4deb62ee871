// RUN: hir-run --nproc 2 %s arange --print | FileCheck %s
// hir.alias_reshape on two Gloo ranks: each holds 2 of the 4 columns of %a. Viewed as
// [2, 2, 4] (split on axis 2, the columns' group) it is doubled into a [2, 2, 4] buffer,
// which is viewed back as [4, 4] split on axis 1 and returned: rank r gets columns 2r and
// 2r + 1 of 2 * arange.

!cols = memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
!grid = memref<2x2x4xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>
func.func @main(%a: !cols) -> !cols {
  %v = "hir.alias_reshape"(%a) {reassociation = [[0, 1], [2]]} : (!cols) -> !grid
  %out = memref.alloc() : !grid
  "hir.binary"(%v, %v, %out) {kind = "add"} : (!grid, !grid, !grid) -> ()
  %r = "hir.alias_reshape"(%out) {reassociation = [[0, 1], [2]]} : (!grid) -> !cols
  return %r : !cols
}

// CHECK:      rank 0: output 0: shape [4, 2] f32
// CHECK-NEXT: rank 0: {{\[}}[0, 2],
// CHECK-NEXT: rank 0:  [8, 10],
// CHECK-NEXT: rank 0:  [16, 18],
// CHECK-NEXT: rank 0:  [24, 26]]
// CHECK-NEXT: rank 1: output 0: shape [4, 2] f32
// CHECK-NEXT: rank 1: {{\[}}[4, 6],
// CHECK-NEXT: rank 1:  [12, 14],
// CHECK-NEXT: rank 1:  [20, 22],
// CHECK-NEXT: rank 1:  [28, 30]]
