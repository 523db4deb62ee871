// One case per rule of packed #hir.shard placements, checked where an op reads the buffer.
// RUN: hir-opt %s --split-input-file --verify-diagnostics

func.func @not_dividing(%x: memref<6x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, packed = array<i64: 2>}>>, %y: memref<6x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) {
  // expected-error @+1 {{axis 0 of extent 6 does not split evenly over 4 parts}}
  "hir.set"(%x, %y) : (memref<6x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, packed = array<i64: 2>}>>, memref<6x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
  return
}

// -----

func.func @one_count_per_split_axis(%x: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, packed = array<i64: 2, 2>}>>, %y: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) {
  // expected-error @+1 {{packed [2, 2] must give one piece count (>= 1) per split axis [0]}}
  "hir.set"(%x, %y) : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, packed = array<i64: 2, 2>}>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
  return
}

// -----

func.func @packed_and_uneven(%x: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, offsets = array<i64: 0, 3, 8>, packed = array<i64: 2>}>>, %y: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) {
  // expected-error @+1 {{a split is packed or uneven, not both}}
  %w = "hir.allgather"(%x, %y) {axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, offsets = array<i64: 0, 3, 8>, packed = array<i64: 2>}>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  return
}

// -----

func.func @neither(%x: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64}>>, %y: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) {
  // expected-error @+1 {{an uneven or packed #hir.shard takes}}
  "hir.set"(%x, %y) : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64}>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
  return
}
