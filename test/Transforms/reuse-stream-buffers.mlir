// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-reuse-stream-buffers{num-streams=4})' | FileCheck %s --check-prefix=SLOTS
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-reuse-stream-buffers{num-streams=4},hir-expand-stream-loops)' | FileCheck %s

// The pass rebuilds the stream loop with slots = 4; the slot buffer is read at the body's
// stream slot (%i mod 4 once expanded).
// SLOTS-LABEL: func.func @static
// SLOTS:       %[[C4:.*]] = arith.constant 4 : index
// SLOTS-NEXT:  %[[T:.*]] = memref.alloc() : memref<4x4x8xf32>
// SLOTS:       "hir.stream_for"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[C4]]) ({
// SLOTS-NEXT:  ^bb0(%[[I:.*]]: index, %[[SLOT:.*]]: index):
// SLOTS-NEXT:    "hir.alias_select"(%arg0, %[[I]]) {axis = 0 : i64}
// SLOTS-NEXT:    "hir.alias_select"(%[[T]], %[[SLOT]]) {axis = 0 : i64}
// SLOTS:       }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (index, index, index, !hir.stream, index) -> ()
// SLOTS-LABEL: func.func @dynamic

// An intermediate used only as slice %i of one stream loop becomes a [4, ...] buffer read and
// written at slot %i mod 4, and the loop's pool stream becomes stream (%i mod 4); the output
// (returned) keeps its full size.
// CHECK-LABEL: func.func @static
// CHECK:       %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:  %[[T:.*]] = memref.alloc() : memref<4x4x8xf32>
// CHECK-NEXT:  %[[OUT:.*]] = memref.alloc() : memref<16x4x8xf32>
// CHECK:       "hir.for"
// CHECK:       "hir.for"
// CHECK-NEXT:  ^bb0(%[[I:.*]]: index):
// CHECK-NEXT:    %[[SLOT:.*]] = arith.remui %[[I]], %[[C4]] : index
// CHECK-NEXT:    %[[S:.*]] = "hir.get_stream"(%[[SLOT]])
// CHECK-NEXT:    "hir.set_current_stream"(%[[S]])
// CHECK-NEXT:    %[[A:.*]] = "hir.alias_select"(%arg0, %[[I]]) {axis = 0 : i64}
// CHECK-NEXT:    %[[TI:.*]] = "hir.alias_select"(%[[T]], %[[SLOT]]) {axis = 0 : i64} : (memref<4x4x8xf32>, index) -> memref<4x8xf32, strided<[8, 1], offset: ?>>
// CHECK-NEXT:    "hir.matmul"(%[[A]], %arg1, %[[TI]])
// CHECK-NEXT:    %[[OI:.*]] = "hir.alias_select"(%[[OUT]], %[[I]]) {axis = 0 : i64} : (memref<16x4x8xf32>, index)
// CHECK-NEXT:    "hir.binary"(%[[TI]], %[[TI]], %[[OI]])
// CHECK:       memref.dealloc %[[T]] : memref<4x4x8xf32>
// CHECK-NEXT:  return %[[OUT]] : memref<16x4x8xf32>
func.func @static(%arg0: memref<16x4x32xf32>, %arg1: memref<32x8xf32>) -> memref<16x4x8xf32> {
  %c16 = arith.constant 16 : index
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %alloc = memref.alloc() : memref<16x4x8xf32>
  %alloc_0 = memref.alloc() : memref<16x4x8xf32>
  %0 = "hir.get_current_stream"() : () -> !hir.stream
  "hir.stream_for"(%c0, %c16, %c1, %0) ({
  ^bb0(%arg2: index, %slot: index):
    %2 = "hir.alias_select"(%arg0, %arg2) {axis = 0 : i64} : (memref<16x4x32xf32>, index) -> memref<4x32xf32, strided<[32, 1], offset: ?>>
    %3 = "hir.alias_select"(%alloc, %arg2) {axis = 0 : i64} : (memref<16x4x8xf32>, index) -> memref<4x8xf32, strided<[8, 1], offset: ?>>
    "hir.matmul"(%2, %arg1, %3) : (memref<4x32xf32, strided<[32, 1], offset: ?>>, memref<32x8xf32>, memref<4x8xf32, strided<[8, 1], offset: ?>>) -> ()
    %4 = "hir.alias_select"(%alloc_0, %arg2) {axis = 0 : i64} : (memref<16x4x8xf32>, index) -> memref<4x8xf32, strided<[8, 1], offset: ?>>
    "hir.binary"(%3, %3, %4) {kind = "add"} : (memref<4x8xf32, strided<[8, 1], offset: ?>>, memref<4x8xf32, strided<[8, 1], offset: ?>>, memref<4x8xf32, strided<[8, 1], offset: ?>>) -> ()
    "hir.yield"() : () -> ()
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (index, index, index, !hir.stream) -> ()
  memref.dealloc %alloc : memref<16x4x8xf32>
  return %alloc_0 : memref<16x4x8xf32>
}

// -----

// Dynamic extent: the slot buffer is static ([4, 8]); the loop bound read from the old
// buffer (memref.dim) becomes the size it was allocated with.
// CHECK-LABEL: func.func @dynamic
// CHECK:       %[[DIM:.*]] = memref.dim %arg0
// CHECK:       %[[T:.*]] = memref.alloc() : memref<4x8xf32>
// CHECK-NOT:   memref.dim %[[T]]
// CHECK:       "hir.for"(%{{.*}}, %[[DIM]], %{{.*}})
// CHECK:       "hir.for"(%{{.*}}, %[[DIM]], %{{.*}})
// CHECK:         %[[SLOT:.*]] = arith.remui
// CHECK:         "hir.alias_select"(%[[T]], %[[SLOT]]) {axis = 0 : i64} : (memref<4x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
// CHECK:       memref.dealloc %[[T]] : memref<4x8xf32>
func.func @dynamic(%arg0: memref<?x32xf32>, %arg1: memref<32x8xf32>) -> memref<?x8xf32> {
  %c0 = arith.constant 0 : index
  %dim = memref.dim %arg0, %c0 : memref<?x32xf32>
  %alloc = memref.alloc(%dim) : memref<?x8xf32>
  %c1 = arith.constant 1 : index
  %dim_1 = memref.dim %alloc, %c0 : memref<?x8xf32>
  %alloc_2 = memref.alloc(%dim) : memref<?x8xf32>
  %0 = "hir.get_current_stream"() : () -> !hir.stream
  "hir.stream_for"(%c0, %dim_1, %c1, %0) ({
  ^bb0(%arg2: index, %slot: index):
    %2 = "hir.alias_select"(%arg0, %arg2) {axis = 0 : i64} : (memref<?x32xf32>, index) -> memref<32xf32, strided<[1], offset: ?>>
    %3 = "hir.alias_select"(%alloc, %arg2) {axis = 0 : i64} : (memref<?x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
    "hir.matmul"(%2, %arg1, %3) : (memref<32xf32, strided<[1], offset: ?>>, memref<32x8xf32>, memref<8xf32, strided<[1], offset: ?>>) -> ()
    %4 = "hir.alias_select"(%alloc_2, %arg2) {axis = 0 : i64} : (memref<?x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
    "hir.binary"(%3, %3, %4) {kind = "add"} : (memref<8xf32, strided<[1], offset: ?>>, memref<8xf32, strided<[1], offset: ?>>, memref<8xf32, strided<[1], offset: ?>>) -> ()
    "hir.yield"() : () -> ()
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (index, index, index, !hir.stream) -> ()
  memref.dealloc %alloc : memref<?x8xf32>
  return %alloc_2 : memref<?x8xf32>
}

// -----

// Left alone: a buffer also read after the loop, a loop of at most num-streams slices, and a
// payload that switches streams itself.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT:   arith.remui
// CHECK:       memref.alloc() : memref<8x8xf32>
// CHECK:       memref.alloc() : memref<4x8xf32>
// CHECK:       memref.alloc() : memref<8x8xf32>
// CHECK-NOT:   arith.remui
func.func @left_alone(%arg0: memref<8x8xf32>, %arg1: memref<4x8xf32>, %out: memref<8x8xf32>, %out2: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %after = memref.alloc() : memref<8x8xf32>
  %few = memref.alloc() : memref<4x8xf32>
  %switch = memref.alloc() : memref<8x8xf32>
  %0 = "hir.get_current_stream"() : () -> !hir.stream
  "hir.stream_for"(%c0, %c8, %c1, %0) ({
  ^bb0(%i: index, %slot: index):
    %a = "hir.alias_select"(%arg0, %i) {axis = 0 : i64} : (memref<8x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
    %t = "hir.alias_select"(%after, %i) {axis = 0 : i64} : (memref<8x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
    "hir.set"(%a, %t) : (memref<8xf32, strided<[1], offset: ?>>, memref<8xf32, strided<[1], offset: ?>>) -> ()
    "hir.yield"() : () -> ()
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (index, index, index, !hir.stream) -> ()
  "hir.set"(%after, %out) : (memref<8x8xf32>, memref<8x8xf32>) -> ()
  memref.dealloc %after : memref<8x8xf32>
  "hir.stream_for"(%c0, %c4, %c1, %0) ({
  ^bb0(%i: index, %slot: index):
    %a = "hir.alias_select"(%arg1, %i) {axis = 0 : i64} : (memref<4x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
    %t = "hir.alias_select"(%few, %i) {axis = 0 : i64} : (memref<4x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
    "hir.set"(%a, %t) : (memref<8xf32, strided<[1], offset: ?>>, memref<8xf32, strided<[1], offset: ?>>) -> ()
    %o = "hir.alias_select"(%out2, %i) {axis = 0 : i64} : (memref<4x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
    "hir.set"(%t, %o) : (memref<8xf32, strided<[1], offset: ?>>, memref<8xf32, strided<[1], offset: ?>>) -> ()
    "hir.yield"() : () -> ()
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (index, index, index, !hir.stream) -> ()
  memref.dealloc %few : memref<4x8xf32>
  "hir.stream_for"(%c0, %c8, %c1, %0) ({
  ^bb0(%i: index, %slot: index):
    %a = "hir.alias_select"(%arg0, %i) {axis = 0 : i64} : (memref<8x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
    %t = "hir.alias_select"(%switch, %i) {axis = 0 : i64} : (memref<8x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
    "hir.set"(%a, %t) : (memref<8xf32, strided<[1], offset: ?>>, memref<8xf32, strided<[1], offset: ?>>) -> ()
    "hir.set_current_stream"(%0) : (!hir.stream) -> ()
    %o = "hir.alias_select"(%out, %i) {axis = 0 : i64} : (memref<8x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
    "hir.set"(%t, %o) : (memref<8xf32, strided<[1], offset: ?>>, memref<8xf32, strided<[1], offset: ?>>) -> ()
    "hir.yield"() : () -> ()
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (index, index, index, !hir.stream) -> ()
  memref.dealloc %switch : memref<8x8xf32>
  return
}
