// hir.alias_broadcast verifier: one case per rule, reported at the op's location.
// RUN: hir-opt %s --split-input-file --verify-diagnostics

func.func @lower_rank(%a: memref<2x4xf32>) {
  // expected-error @+1 {{cannot broadcast rank 2 to the lower rank 1}}
  %b = "hir.alias_broadcast"(%a) : (memref<2x4xf32>) -> memref<4xf32, strided<[1], offset: ?>>
  return
}

// -----

func.func @not_unit(%a: memref<2x4xf32>) {
  // expected-error @+1 {{axis 0 of extent 2 cannot broadcast to 3 (only extent-1 axes broadcast)}}
  %b = "hir.alias_broadcast"(%a) : (memref<2x4xf32>) -> memref<3x4xf32, strided<[0, 1], offset: ?>>
  return
}

// -----

func.func @dynamic_broadcast(%a: memref<1x4xf32>) {
  // expected-error @+1 {{broadcast axis 0 must have a static extent}}
  %b = "hir.alias_broadcast"(%a) : (memref<1x4xf32>) -> memref<?x4xf32, strided<[0, 1], offset: ?>>
  return
}

// -----

func.func @wrong_strides(%a: memref<1x4xf32>) {
  // expected-error @+1 {{does not match the broadcast view type memref<3x4xf32, strided<[0, 1], offset: ?>>}}
  %b = "hir.alias_broadcast"(%a) : (memref<1x4xf32>) -> memref<3x4xf32, strided<[4, 1], offset: ?>>
  return
}

// -----

func.func @wrong_shard(%a: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) {
  // expected-error @+1 {{does not match the broadcast view type}}
  %b = "hir.alias_broadcast"(%a) : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<2x8x4xf32, strided<[0, 4, 1], offset: ?>, #hir.shard<array<i64: 0, 1>, 0 : i64>>
  return
}
