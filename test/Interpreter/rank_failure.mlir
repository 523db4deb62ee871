// RUN: not hir-run --nproc 2 %s 2>&1 | FileCheck %s
// Rank 1 fails before an allreduce that rank 0 waits in: every rank stops, the root cause
// is reported.

!one = memref<4xf32, #hir.shard<array<i64: 1>, -1 : i64>>
!two = memref<2x3xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
func.func @main(%x: !one, %a: !two, %o: memref<3xf32>) {
  %c9 = arith.constant 9 : index
  %v = "hir.alias_select"(%x, %c9) {axis = 0 : i64} : (!one, index) -> memref<f32, strided<[], offset: ?>, #hir.shard<array<i64: 1>, -1 : i64>>
  %w = "hir.allreduce"(%a, %o) {axis = 0 : i64, backend = "gloo", reduction = "sum", team = array<i64: 0, 1>} : (!two, memref<3xf32>) -> !hir.work
  "hir.wait"(%w) : (!hir.work) -> ()
  return
}

// CHECK: rank_failure.mlir:9:8: error: 'hir.alias_select' index 9 is out of range for axis 0
// CHECK: hir-run: rank 1 failed
