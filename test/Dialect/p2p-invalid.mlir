// One case per verifier rule of the point-to-point ops (p2p group); each must fail with its
// message at the op's location.
// RUN: hir-opt %s --split-input-file --verify-diagnostics

// device_index: the mesh holds distinct device ids
func.func @device_index_mesh() {
  // expected-error @+1 {{mesh [0, 0] must hold distinct non-negative device ids}}
  %me = "hir.device_index"() {mesh = array<i64: 0, 0>} : () -> index
  return
}

// -----

// shift: the team holds distinct device ids
func.func @shift_team(%a: memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %t: memref<2x8xf32>, %j: index) {
  // expected-error @+1 {{team [0, 1, 1] must hold distinct non-negative device ids}}
  %w = "hir.shift"(%a, %t, %j) {backend = "cuda", team = array<i64: 0, 1, 1>} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<2x8xf32>, index) -> !hir.work
  return
}

// -----

// shift: a known backend
func.func @shift_backend(%a: memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %t: memref<2x8xf32>, %j: index) {
  // expected-error @+1 {{backend}}
  %w = "hir.shift"(%a, %t, %j) {backend = "mpi", team = array<i64: 0, 1, 2, 3>} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<2x8xf32>, index) -> !hir.work
  return
}

// -----

// shift: input and output element types agree
func.func @shift_types(%a: memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %t: memref<2x8xf16>, %j: index) {
  // expected-error @+1 {{element type}}
  %w = "hir.shift"(%a, %t, %j) {backend = "cuda", team = array<i64: 0, 1, 2, 3>} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<2x8xf16>, index) -> !hir.work
  return
}

// -----

// shift: at least one copy
func.func @shift_copies(%a: memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %t: memref<2x8xf32>, %j: index) {
  // expected-error @+1 {{copies must be at least 1, got 0}}
  %w = "hir.shift"(%a, %t, %j) {backend = "cuda", copies = 0 : i64, team = array<i64: 0, 1, 2, 3>} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<2x8xf32>, index) -> !hir.work
  return
}

// -----

// shift: signal is pairwise or none
func.func @shift_signal(%a: memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %t: memref<2x8xf32>, %j: index) {
  // expected-error @+1 {{signal}}
  %w = "hir.shift"(%a, %t, %j) {backend = "cuda", signal = "maybe", team = array<i64: 0, 1, 2, 3>} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<2x8xf32>, index) -> !hir.work
  return
}

// -----

// barrier: the team holds distinct device ids
func.func @barrier_team() {
  // expected-error @+1 {{team [1, 1] must hold distinct non-negative device ids}}
  %b = "hir.barrier"() {backend = "cuda", team = array<i64: 1, 1>} : () -> !hir.work
  return
}

// -----

// barrier: a known backend
func.func @barrier_backend() {
  // expected-error @+1 {{backend}}
  %b = "hir.barrier"() {backend = "tcp", team = array<i64: 0, 1>} : () -> !hir.work
  return
}
