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

// shift: a team layout is 2-D, one team per row
func.func @shift_team_layout_rank(%a: memref<4x8xf32>, %t: memref<4x8xf32>, %j: index) {
  // expected-error @+1 {{a team layout must be 2-D (one team per row), got tensor<2x2x1xi64>}}
  %w = "hir.shift"(%a, %t, %j) {backend = "gloo", team = dense<[[[0], [1]], [[2], [3]]]> : tensor<2x2x1xi64>} : (memref<4x8xf32>, memref<4x8xf32>, index) -> !hir.work
  return
}

// -----

// shift: the teams of a layout hold distinct device ids
func.func @shift_team_layout_repeats(%a: memref<4x8xf32>, %t: memref<4x8xf32>, %j: index) {
  // expected-error @+1 {{team [[0, 1], [1, 2]] must hold distinct non-negative device ids}}
  %w = "hir.shift"(%a, %t, %j) {backend = "gloo", team = dense<[[0, 1], [1, 2]]> : tensor<2x2xi64>} : (memref<4x8xf32>, memref<4x8xf32>, index) -> !hir.work
  return
}

// -----

// shift: the team attribute is an array or a dense layout
func.func @shift_team_kind(%a: memref<4x8xf32>, %t: memref<4x8xf32>, %j: index) {
  // expected-error @+1 {{attribute 'team' must be array<i64: ...> or dense<...> : tensor<TxNxi64>, got "all"}}
  %w = "hir.shift"(%a, %t, %j) {backend = "gloo", team = "all"} : (memref<4x8xf32>, memref<4x8xf32>, index) -> !hir.work
  return
}

// -----

// shift: on a multi-D mesh the rows are the mesh's lines ([0, 3] is a diagonal of the 2x2 mesh)
func.func @shift_team_not_lines(%a: memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, %j: index) {
  // expected-error @+1 {{teams [[0, 3], [1, 2]] must be the lines of the input's mesh [0, 1, 2, 3] with splits [0, 1] along some mesh axes, each in mesh order}}
  %w = "hir.shift"(%a, %a, %j) {backend = "gloo", team = dense<[[0, 3], [1, 2]]> : tensor<2x2xi64>} : (memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, index) -> !hir.work
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

// shift: transfer is pull or push
func.func @shift_transfer(%a: memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %t: memref<2x8xf32>, %j: index) {
  // expected-error @+1 {{transfer}}
  %w = "hir.shift"(%a, %t, %j) {backend = "cuda", team = array<i64: 0, 1, 2, 3>, transfer = "throw"} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<2x8xf32>, index) -> !hir.work
  return
}

// -----

// own_block: the axis is split over the mesh, one block per device
func.func @own_block_not_split(%a: memref<4x4x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) {
  // expected-error @+1 {{input must be split along axis 0 over a 1-D device mesh}}
  %m = "hir.own_block"(%a) {axis = 0 : i64} : (memref<4x4x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> memref<4x8xf32, strided<[8, 1], offset: ?>, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  return
}

// -----

// own_block: one block per device
func.func @own_block_blocks(%a: memref<8x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) {
  // expected-error @+1 {{axis 0 has extent 8, not one block per device of the mesh of 4}}
  %m = "hir.own_block"(%a) {axis = 0 : i64} : (memref<8x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> memref<2x8xf32, strided<[8, 1], offset: ?>, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  return
}

// -----

// own_block: the result type
func.func @own_block_type(%a: memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) {
  // expected-error @+1 {{does not match the own-block view type}}
  %m = "hir.own_block"(%a) {axis = 0 : i64} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> memref<2x8xf32>
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
