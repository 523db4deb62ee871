// Uneven placements (MLIR's sharded_dims_offsets): #hir.shard with the part boundaries of
// every split axis. hir.allgather takes them; parse, verify, print, and parse again.
// RUN: hir-opt %s | hir-opt | FileCheck %s

// CHECK-LABEL: func.func @gather_uneven
// CHECK-SAME: memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, {axis = 0 : i64, offsets = array<i64: 0, 1, 4, 7, 8>}>>
func.func @gather_uneven(%x: memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, {axis = 0 : i64, offsets = array<i64: 0, 1, 4, 7, 8>}>>,
                         %y: memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) {
  // CHECK: "hir.allgather"
  %w = "hir.allgather"(%x, %y) {axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1, 2, 3>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, {axis = 0 : i64, offsets = array<i64: 0, 1, 4, 7, 8>}>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> !hir.work
  "hir.wait"(%w) : (!hir.work) -> ()
  return
}

// A 2x2 mesh: rows cut unevenly over mesh axis 0 (3 + 5), columns replicated; each team
// (a line along mesh axis 0) gathers its rows.
// CHECK-LABEL: func.func @gather_uneven_2d
// CHECK-SAME: {offsets = array<i64: 0, 3, 8>, splits = array<i64: 0, -1>}
func.func @gather_uneven_2d(%x: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, {offsets = array<i64: 0, 3, 8>, splits = array<i64: 0, -1>}>>,
                            %y: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) {
  %w = "hir.allgather"(%x, %y) {axis = 0 : i64, backend = "gloo", team = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>} : (memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, {offsets = array<i64: 0, 3, 8>, splits = array<i64: 0, -1>}>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) -> !hir.work
  "hir.wait"(%w) : (!hir.work) -> ()
  return
}
