// One case per rule of uneven #hir.shard placements (offsets), checked where an op reads
// the buffer, and the refusal of uneven buffers by ops that take even splits only.
// RUN: hir-opt %s --split-input-file --verify-diagnostics

func.func @too_few(%x: memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, {axis = 0 : i64, offsets = array<i64: 0, 4, 8>}>>, %y: memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) {
  // expected-error @+1 {{offsets [0, 4, 8] give too few boundaries: axis 0 is cut into 4 parts (needs 5, for every split axis in order)}}
  %w = "hir.allgather"(%x, %y) {axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1, 2, 3>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, {axis = 0 : i64, offsets = array<i64: 0, 4, 8>}>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> !hir.work
  return
}

// -----

func.func @not_rising(%x: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, offsets = array<i64: 0, 9, 8>}>>, %y: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) {
  // expected-error @+1 {{offsets [0, 9, 8] of axis 0 must rise from 0 to its extent 8}}
  %w = "hir.allgather"(%x, %y) {axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, offsets = array<i64: 0, 9, 8>}>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  return
}

// -----

func.func @short_of_extent(%x: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, offsets = array<i64: 0, 3, 7>}>>, %y: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) {
  // expected-error @+1 {{offsets [0, 3, 7] of axis 0 must rise from 0 to its extent 8}}
  %w = "hir.allgather"(%x, %y) {axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, offsets = array<i64: 0, 3, 7>}>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  return
}

// -----

func.func @dynamic_extent(%x: memref<?x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, offsets = array<i64: 0, 3, 8>}>>, %y: memref<?x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) {
  // expected-error @+1 {{axis 0 is dynamic; an uneven split needs a static extent}}
  %w = "hir.allgather"(%x, %y) {axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1>} : (memref<?x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, offsets = array<i64: 0, 3, 8>}>>, memref<?x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  return
}

// -----

func.func @replicated(%x: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %y: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, {axis = -1 : i64, offsets = array<i64: 0, 8>}>>) {
  // expected-error @+1 {{offsets [0, 8] on a replicated buffer}}
  %w = "hir.allgather"(%x, %y) {axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, {axis = -1 : i64, offsets = array<i64: 0, 8>}>>) -> !hir.work
  return
}

// -----

func.func @no_offsets(%x: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64}>>, %y: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) {
  // expected-error @+1 {{an uneven or packed #hir.shard takes {axis = N : i64, offsets = array<i64: ...>, packed = array<i64: ...>} (1-D mesh; splits = array<i64: ...> on a multi-D one; offsets or packed or both), got {axis = 0 : i64}}}
  %w = "hir.allgather"(%x, %y) {axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64}>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  return
}

// -----

// An even split that does not divide points at offsets.
func.func @even_not_dividing(%x: memref<7x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %y: memref<7x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) {
  // expected-error @+1 {{axis 0 of extent 7 does not split evenly over 2 devices (an uneven split gives its offsets)}}
  %w = "hir.allgather"(%x, %y) {axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1>} : (memref<7x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<7x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  return
}

// -----

// Ops other than hir.allgather take even splits only.
func.func @allreduce_uneven(%x: memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, offsets = array<i64: 0, 1, 2>}>>, %y: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) {
  // expected-error @+1 {{'hir.allreduce' op operand #0 is split unevenly (memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, offsets = array<i64: 0, 1, 2>}>>); this op needs even splits (ops taking uneven ones: hir.allgather)}}
  %w = "hir.allreduce"(%x, %y) {axis = 0 : i64, backend = "gloo", reduction = "sum", team = array<i64: 0, 1>} : (memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, offsets = array<i64: 0, 1, 2>}>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  return
}

// -----

func.func @binary_uneven(%a: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, offsets = array<i64: 0, 3, 8>}>>, %o: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, offsets = array<i64: 0, 3, 8>}>>) {
  // expected-error @+1 {{'hir.binary' op operand #0 is split unevenly}}
  "hir.binary"(%a, %a, %o) {kind = "add"} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, offsets = array<i64: 0, 3, 8>}>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, offsets = array<i64: 0, 3, 8>}>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, offsets = array<i64: 0, 3, 8>}>>) -> ()
  return
}
