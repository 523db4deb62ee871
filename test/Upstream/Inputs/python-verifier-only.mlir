func.func @bad_backend(%x: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %y: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) {
  %w = "hir.allgather"(%x, %y) {axis = 0 : i64, backend = "mpi", team = array<i64: 0, 1>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  "hir.wait"(%w) : (!hir.work) -> ()
  return
}
