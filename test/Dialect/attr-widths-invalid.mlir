// Integer attributes are documented as `N : i64`: another width (i1, i8, i32, ui64, index)
// is refused at the op's location, on declared attributes (axis, peer, ...) and on the
// discardable ones the verifiers read (stream_axis); and the module attribute
// hir.num_streams must be a positive i64.
// RUN: hir-opt %s --split-input-file --verify-diagnostics

func.func @axis_i1(%a: memref<4x8xf32>, %i: index) {
  // expected-error @+1 {{'hir.alias_select' op attribute 'axis' must be a 64-bit signless integer (N : i64), got 0 : i1}}
  %v = "hir.alias_select"(%a, %i) {axis = 0 : i1} : (memref<4x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
  return
}

// -----

func.func @axis_i8(%a: memref<4x8xf32>, %i: index) {
  // expected-error @+1 {{attribute 'axis' must be a 64-bit signless integer (N : i64), got 0 : i8}}
  %v = "hir.alias_select"(%a, %i) {axis = 0 : i8} : (memref<4x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
  return
}

// -----

func.func @axis_ui64(%a: memref<4x8xf32>, %i: index) {
  // expected-error @+1 {{attribute 'axis' must be a 64-bit signless integer (N : i64), got 0 : ui64}}
  %v = "hir.alias_select"(%a, %i) {axis = 0 : ui64} : (memref<4x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
  return
}

// -----

func.func @axis_index(%a: memref<4x8xf32>, %i: index) {
  // expected-error @+1 {{attribute 'axis' must be a 64-bit signless integer (N : i64), got 0 : index}}
  %v = "hir.alias_select"(%a, %i) {axis = 0 : index} : (memref<4x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
  return
}

// -----

func.func @allgather_axis_i32(%a: memref<4x3xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %b: memref<4x3xf32>) {
  // expected-error @+1 {{'hir.allgather' op attribute 'axis' must be a 64-bit signless integer (N : i64), got 0 : i32}}
  %w = "hir.allgather"(%a, %b) {axis = 0 : i32, backend = "gloo", team = array<i64: 0, 1>} : (memref<4x3xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<4x3xf32>) -> !hir.work
  "hir.wait"(%w) : (!hir.work) -> ()
  return
}

// -----

func.func @peer_i32(%x: memref<4xf32>) {
  // expected-error @+1 {{'hir.send' op attribute 'peer' must be a 64-bit signless integer (N : i64), got 1 : i32}}
  %w = "hir.send"(%x) {peer = 1 : i32, backend = "gloo"} : (memref<4xf32>) -> !hir.work
  "hir.wait"(%w) : (!hir.work) -> ()
  return
}

// -----

func.func @stream_axis_i32(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
  // expected-error @+1 {{'hir.binary' op attribute 'stream_axis' must be a 64-bit signless integer (N : i64), got 0 : i32}}
  "hir.binary"(%a, %a, %b) {kind = "add", stream_axis = 0 : i32} : (memref<4x8xf32>, memref<4x8xf32>, memref<4x8xf32>) -> ()
  return
}

// -----

// expected-error @+1 {{module attribute hir.num_streams must be a positive integer (N : i64, N >= 1), got 0 : i64}}
module attributes {hir.num_streams = 0 : i64} {
  func.func @none() {
    return
  }
}

// -----

// expected-error @+1 {{module attribute hir.num_streams must be a positive integer (N : i64, N >= 1), got -1 : i64}}
module attributes {hir.num_streams = -1 : i64} {
  func.func @negative() {
    return
  }
}

// -----

// expected-error @+1 {{module attribute hir.num_streams must be a positive integer (N : i64, N >= 1), got 2 : i32}}
module attributes {hir.num_streams = 2 : i32} {
  func.func @narrow() {
    return
  }
}
