// Round trip of every hir op: parse, verify, print, and parse the printed form again.
// RUN: hir-opt %s | hir-opt | FileCheck %s

// CHECK-LABEL: func.func @streams
func.func @streams(%i: index) {
  // CHECK: %[[U:.*]] = "hir.get_current_stream"() : () -> !hir.stream
  %user = "hir.get_current_stream"() : () -> !hir.stream
  // CHECK: %[[S:.*]] = "hir.get_stream"(%{{.*}}) : (index) -> !hir.stream
  %s = "hir.get_stream"(%i) : (index) -> !hir.stream
  // CHECK: "hir.set_current_stream"(%[[S]]) : (!hir.stream) -> ()
  "hir.set_current_stream"(%s) : (!hir.stream) -> ()
  // CHECK: "hir.synchronize"(%[[U]]) : (!hir.stream) -> ()
  "hir.synchronize"(%user) : (!hir.stream) -> ()
  return
}

// CHECK-LABEL: func.func @views_and_loops
func.func @views_and_loops(%buf: memref<4x?xf32>, %sharded: memref<4x8x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  // CHECK: "hir.for"(%{{.*}}, %{{.*}}, %{{.*}}) ({
  // CHECK-NEXT: ^bb0(%[[I:.*]]: index):
  "hir.for"(%c0, %c4, %c1) ({
  ^bb0(%i: index):
    // CHECK: "hir.alias_select"(%{{.*}}, %[[I]]) {axis = 0 : i64} : (memref<4x?xf32>, index) -> memref<?xf32, strided<[1], offset: ?>>
    %row = "hir.alias_select"(%buf, %i) {axis = 0 : i64} : (memref<4x?xf32>, index) -> memref<?xf32, strided<[1], offset: ?>>
    // CHECK: "hir.alias_select"(%{{.*}}, %[[I]]) {axis = 1 : i64} : (memref<4x?xf32>, index) -> memref<4xf32, strided<[?], offset: ?>>
    %col = "hir.alias_select"(%buf, %i) {axis = 1 : i64} : (memref<4x?xf32>, index) -> memref<4xf32, strided<[?], offset: ?>>
    // The shard axis shifts down when an outer axis is selected away.
    // CHECK: -> memref<8x16xf32, strided<[16, 1], offset: ?>, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    %slab = "hir.alias_select"(%sharded, %i) {axis = 0 : i64} : (memref<4x8x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, index) -> memref<8x16xf32, strided<[16, 1], offset: ?>, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    // A chunk keeps its axis: static extents divide, dynamic ones stay dynamic, the
    // sharding is unchanged, and a chunk of a chunk composes the strides.
    // CHECK: "hir.alias_chunk"(%{{.*}}, %[[I]]) {axis = 0 : i64, chunks = 2 : i64} : (memref<4x?xf32>, index) -> memref<2x?xf32, strided<[?, 1], offset: ?>>
    %half = "hir.alias_chunk"(%buf, %i) {axis = 0 : i64, chunks = 2 : i64} : (memref<4x?xf32>, index) -> memref<2x?xf32, strided<[?, 1], offset: ?>>
    // CHECK: "hir.alias_chunk"(%{{.*}}, %[[I]]) {axis = 1 : i64, chunks = 4 : i64} : (memref<4x?xf32>, index) -> memref<4x?xf32, strided<[?, 1], offset: ?>>
    %cols = "hir.alias_chunk"(%buf, %i) {axis = 1 : i64, chunks = 4 : i64} : (memref<4x?xf32>, index) -> memref<4x?xf32, strided<[?, 1], offset: ?>>
    // CHECK: -> memref<4x4x16xf32, strided<[128, 16, 1], offset: ?>, #hir.shard<array<i64: 0, 1>, 2 : i64>>
    %rows = "hir.alias_chunk"(%sharded, %i) {axis = 1 : i64, chunks = 2 : i64} : (memref<4x8x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, index) -> memref<4x4x16xf32, strided<[128, 16, 1], offset: ?>, #hir.shard<array<i64: 0, 1>, 2 : i64>>
    // CHECK: -> memref<4x2x16xf32, strided<[128, 16, 1], offset: ?>, #hir.shard<array<i64: 0, 1>, 2 : i64>>
    %quarter = "hir.alias_chunk"(%rows, %i) {axis = 1 : i64, chunks = 2 : i64} : (memref<4x4x16xf32, strided<[128, 16, 1], offset: ?>, #hir.shard<array<i64: 0, 1>, 2 : i64>>, index) -> memref<4x2x16xf32, strided<[128, 16, 1], offset: ?>, #hir.shard<array<i64: 0, 1>, 2 : i64>>
    // CHECK: "hir.yield"() : () -> ()
    "hir.yield"() : () -> ()
  }) : (index, index, index) -> ()
  return
}

// CHECK-LABEL: func.func @compute
func.func @compute(%a: memref<8x16xf32>, %b: memref<16x4xf32>, %c: memref<8x4xf32>, %w: memref<4x16xf32>, %bias: memref<4xf32>, %r: memref<8xf32>, %row: memref<4xf32>) {
  // CHECK: "hir.set"(%{{.*}}, %{{.*}}) {stream_axis = 0 : i64} : (memref<8x4xf32>, memref<8x4xf32>) -> ()
  "hir.set"(%c, %c) {stream_axis = 0 : i64} : (memref<8x4xf32>, memref<8x4xf32>) -> ()
  // CHECK: "hir.binary"(%{{.*}}, %{{.*}}, %{{.*}}) {kind = "add"}
  "hir.binary"(%c, %c, %c) {kind = "add"} : (memref<8x4xf32>, memref<8x4xf32>, memref<8x4xf32>) -> ()
  // Broadcasting: [4] against [8, 4].
  // CHECK: "hir.binary"(%{{.*}}, %{{.*}}, %{{.*}}) {kind = "div"}
  "hir.binary"(%c, %row, %c) {kind = "div"} : (memref<8x4xf32>, memref<4xf32>, memref<8x4xf32>) -> ()
  // CHECK: "hir.reduction"(%{{.*}}, %{{.*}}) {axes = array<i64: 1>, kind = "sum"}
  "hir.reduction"(%c, %r) {axes = array<i64: 1>, kind = "sum"} : (memref<8x4xf32>, memref<8xf32>) -> ()
  // CHECK: "hir.matmul"(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<8x16xf32>, memref<16x4xf32>, memref<8x4xf32>) -> ()
  "hir.matmul"(%a, %b, %c) : (memref<8x16xf32>, memref<16x4xf32>, memref<8x4xf32>) -> ()
  // CHECK: "hir.linear"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {operandSegmentSizes = array<i32: 1, 1, 1, 1>}
  "hir.linear"(%a, %w, %c, %bias) {operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (memref<8x16xf32>, memref<4x16xf32>, memref<8x4xf32>, memref<4xf32>) -> ()
  // CHECK: "hir.linear"(%{{.*}}, %{{.*}}, %{{.*}}) {operandSegmentSizes = array<i32: 1, 1, 1, 0>}
  "hir.linear"(%a, %w, %c) {operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (memref<8x16xf32>, memref<4x16xf32>, memref<8x4xf32>) -> ()
  // CHECK: memref.alloc() : memref<8x4xf32>
  %t = memref.alloc() : memref<8x4xf32>
  // CHECK: memref.dealloc
  memref.dealloc %t : memref<8x4xf32>
  // Kernel segment: a call of a func marked hir.kernel.
  // CHECK: call @segment(%{{.*}}, %{{.*}}) : (memref<8x4xf32>, memref<8x4xf32>) -> ()
  func.call @segment(%c, %c) : (memref<8x4xf32>, memref<8x4xf32>) -> ()
  return
}

// CHECK-LABEL: func.func private @segment
// CHECK-SAME: attributes {hir.kernel}
func.func private @segment(%x: memref<8x4xf32>, %y: memref<8x4xf32>) attributes {hir.kernel} {
  "hir.binary"(%x, %x, %y) {kind = "mul"} : (memref<8x4xf32>, memref<8x4xf32>, memref<8x4xf32>) -> ()
  return
}

// CHECK-LABEL: func.func @communication
func.func @communication(
    %shard0: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>,
    %rep: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>,
    %partial: memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>,
    %rs_out: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>,
    %local: memref<8x4xf32>) {
  // CHECK: "hir.allgather"(%{{.*}}, %{{.*}}) {axis = 0 : i64, backend = "nccl", team = array<i64: 0, 1>}
  %w0 = "hir.allgather"(%shard0, %rep) {axis = 0 : i64, backend = "nccl", team = array<i64: 0, 1>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  // CHECK: "hir.wait"(%{{.*}}) : (!hir.work) -> ()
  "hir.wait"(%w0) : (!hir.work) -> ()
  // CHECK: "hir.allreduce"{{.*}}reduction = "sum"
  %w1 = "hir.allreduce"(%partial, %local) {axis = 0 : i64, backend = "gloo", reduction = "sum", team = array<i64: 0, 1>} : (memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32>) -> !hir.work
  // CHECK: "hir.reduce_scatter"{{.*}}scatter_axis = 1 : i64
  %w2 = "hir.reduce_scatter"(%partial, %rs_out) {axis = 0 : i64, backend = "nccl", reduction = "max", scatter_axis = 1 : i64, team = array<i64: 0, 1>} : (memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> !hir.work
  // CHECK: "hir.broadcast"{{.*}}root = 1 : i64
  %w3 = "hir.broadcast"(%local, %rep) {backend = "nccl", root = 1 : i64, team = array<i64: 0, 1>} : (memref<8x4xf32>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  // CHECK: "hir.scatter"{{.*}}root = 0 : i64
  %w4 = "hir.scatter"(%local, %shard0) {axis = 0 : i64, backend = "nccl", root = 0 : i64, team = array<i64: 0, 1>} : (memref<8x4xf32>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> !hir.work
  // CHECK: "hir.gather"{{.*}}root = 1 : i64
  %w5 = "hir.gather"(%shard0, %local) {axis = 0 : i64, backend = "nccl", root = 1 : i64, team = array<i64: 0, 1>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32>) -> !hir.work
  // CHECK: "hir.reduce"{{.*}}reduction = "min"{{.*}}root = 0 : i64
  %w6 = "hir.reduce"(%partial, %local) {axis = 0 : i64, backend = "nccl", reduction = "min", root = 0 : i64, team = array<i64: 0, 1>} : (memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32>) -> !hir.work
  // CHECK: "hir.send_recv"{{.*}}root = 1 : i64, team = array<i64: 1, 0>
  %w7 = "hir.send_recv"(%local, %local) {backend = "nccl", root = 1 : i64, team = array<i64: 1, 0>} : (memref<8x4xf32>, memref<8x4xf32>) -> !hir.work
  // CHECK: "hir.send"(%{{.*}}) {backend = "cuda", peer = 1 : i64} : (memref<8x4xf32>) -> !hir.work
  %w8 = "hir.send"(%local) {backend = "cuda", peer = 1 : i64} : (memref<8x4xf32>) -> !hir.work
  // CHECK: "hir.recv"(%{{.*}}) {backend = "cuda", peer = 0 : i64} : (memref<8x4xf32>) -> !hir.work
  %w9 = "hir.recv"(%local) {backend = "cuda", peer = 0 : i64} : (memref<8x4xf32>) -> !hir.work
  return
}

// Vector operands (stream slices of matmul M/N and linear N), as torch.matmul / linear.
// CHECK-LABEL: func.func @vectors
func.func @vectors(%k: memref<16xf32>, %b: memref<16x4xf32>, %n: memref<4xf32>, %a: memref<8x16xf32>, %m: memref<8xf32>, %bias: memref<f32>) {
  // CHECK: "hir.matmul"(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<16xf32>, memref<16x4xf32>, memref<4xf32>) -> ()
  "hir.matmul"(%k, %b, %n) : (memref<16xf32>, memref<16x4xf32>, memref<4xf32>) -> ()
  // CHECK: "hir.matmul"(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<8x16xf32>, memref<16xf32>, memref<8xf32>) -> ()
  "hir.matmul"(%a, %k, %m) : (memref<8x16xf32>, memref<16xf32>, memref<8xf32>) -> ()
  // CHECK: "hir.linear"{{.*}} : (memref<8x16xf32>, memref<16xf32>, memref<8xf32>, memref<f32>) -> ()
  "hir.linear"(%a, %k, %m, %bias) {operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (memref<8x16xf32>, memref<16xf32>, memref<8xf32>, memref<f32>) -> ()
  return
}

// CHECK-LABEL: func.func @p2p
func.func @p2p(%a: memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %t: memref<2x8xf32>, %j: index) {
  // CHECK: "hir.device_index"() {mesh = array<i64: 0, 1, 2, 3>} : () -> index
  %me = "hir.device_index"() {mesh = array<i64: 0, 1, 2, 3>} : () -> index
  // CHECK: "hir.shift"(%{{.*}}, %{{.*}}, %{{.*}}) {backend = "cuda", team = array<i64: 0, 1, 2, 3>} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<2x8xf32>, index) -> !hir.work
  %w = "hir.shift"(%a, %t, %j) {backend = "cuda", team = array<i64: 0, 1, 2, 3>} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<2x8xf32>, index) -> !hir.work
  // CHECK: "hir.shift"(%{{.*}}, %{{.*}}, %{{.*}}) {backend = "cuda", copies = 2 : i64, team = array<i64: 0, 1, 2, 3>}
  %w2 = "hir.shift"(%a, %t, %me) {backend = "cuda", copies = 2 : i64, team = array<i64: 0, 1, 2, 3>} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<2x8xf32>, index) -> !hir.work
  "hir.wait"(%w) : (!hir.work) -> ()
  "hir.wait"(%w2) : (!hir.work) -> ()
  return
}

// CHECK-LABEL: func.func @barrier
func.func @barrier() {
  // CHECK: %[[B:.*]] = "hir.barrier"() {backend = "cuda", team = array<i64: 0, 1>} : () -> !hir.work
  %b = "hir.barrier"() {backend = "cuda", team = array<i64: 0, 1>} : () -> !hir.work
  // CHECK: "hir.wait"(%[[B]])
  "hir.wait"(%b) : (!hir.work) -> ()
  return
}
