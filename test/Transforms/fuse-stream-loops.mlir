// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-fuse-loops)' | FileCheck %s

// One application of the fusion pattern: two adjacent stream loops of the same extent, the
// second reading slice %i of what the first writes at slice %i. The second loop takes the
// first's body before its own, its bounds and its user stream; the allocation between them
// moves above the first; the slice of %t both take is taken once; the second user stream
// and the first loop go.
// CHECK-LABEL: func.func @pair
// CHECK:       %[[T:.*]] = memref.alloc() : memref<8x4xf32>
// CHECK-NEXT:  %[[OUT:.*]] = memref.alloc() : memref<8x4xf32>
// CHECK-NEXT:  %[[USER:.*]] = "hir.get_current_stream"()
// CHECK-NEXT:  "hir.stream_for"(%c0, %c8, %c1, %[[USER]]) ({
// CHECK-NEXT:  ^bb0(%[[I:.*]]: index, %{{.*}}: index):
// CHECK-NEXT:    %[[A:.*]] = "hir.alias_select"(%arg0, %[[I]])
// CHECK-NEXT:    %[[TI:.*]] = "hir.alias_select"(%[[T]], %[[I]])
// CHECK-NEXT:    "hir.set"(%[[A]], %[[TI]])
// CHECK-NEXT:    %[[OI:.*]] = "hir.alias_select"(%[[OUT]], %[[I]])
// CHECK-NEXT:    "hir.binary"(%[[TI]], %[[TI]], %[[OI]]) {kind = "add"}
// CHECK-NEXT:    "hir.yield"() : () -> ()
// CHECK-NEXT:  }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>}
// CHECK-NEXT:  return %[[OUT]]
func.func @pair(%arg0: memref<8x4xf32>) -> memref<8x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %t = memref.alloc() : memref<8x4xf32>
  %u1 = "hir.get_current_stream"() : () -> !hir.stream
  "hir.stream_for"(%c0, %c8, %c1, %u1) ({
  ^bb0(%i: index, %s: index):
    %a = "hir.alias_select"(%arg0, %i) {axis = 0 : i64} : (memref<8x4xf32>, index) -> memref<4xf32, strided<[1], offset: ?>>
    %ti = "hir.alias_select"(%t, %i) {axis = 0 : i64} : (memref<8x4xf32>, index) -> memref<4xf32, strided<[1], offset: ?>>
    "hir.set"(%a, %ti) : (memref<4xf32, strided<[1], offset: ?>>, memref<4xf32, strided<[1], offset: ?>>) -> ()
    "hir.yield"() : () -> ()
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (index, index, index, !hir.stream) -> ()
  %out = memref.alloc() : memref<8x4xf32>
  %u2 = "hir.get_current_stream"() : () -> !hir.stream
  "hir.stream_for"(%c0, %c8, %c1, %u2) ({
  ^bb0(%j: index, %s2: index):
    %tj = "hir.alias_select"(%t, %j) {axis = 0 : i64} : (memref<8x4xf32>, index) -> memref<4xf32, strided<[1], offset: ?>>
    %oj = "hir.alias_select"(%out, %j) {axis = 0 : i64} : (memref<8x4xf32>, index) -> memref<4xf32, strided<[1], offset: ?>>
    "hir.binary"(%tj, %tj, %oj) {kind = "add"} : (memref<4xf32, strided<[1], offset: ?>>, memref<4xf32, strided<[1], offset: ?>>, memref<4xf32, strided<[1], offset: ?>>) -> ()
    "hir.yield"() : () -> ()
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (index, index, index, !hir.stream) -> ()
  return %out : memref<8x4xf32>
}

// -----

// A loop reading the whole buffer the first writes slice by slice is no twin: both stay.
// CHECK-LABEL: func.func @whole_read
// CHECK-COUNT-2: "hir.stream_for"
func.func @whole_read(%arg0: memref<8x4xf32>, %out: memref<8x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %t = memref.alloc() : memref<8x4xf32>
  %u1 = "hir.get_current_stream"() : () -> !hir.stream
  "hir.stream_for"(%c0, %c8, %c1, %u1) ({
  ^bb0(%i: index, %s: index):
    %a = "hir.alias_select"(%arg0, %i) {axis = 0 : i64} : (memref<8x4xf32>, index) -> memref<4xf32, strided<[1], offset: ?>>
    %ti = "hir.alias_select"(%t, %i) {axis = 0 : i64} : (memref<8x4xf32>, index) -> memref<4xf32, strided<[1], offset: ?>>
    "hir.set"(%a, %ti) : (memref<4xf32, strided<[1], offset: ?>>, memref<4xf32, strided<[1], offset: ?>>) -> ()
    "hir.yield"() : () -> ()
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (index, index, index, !hir.stream) -> ()
  %u2 = "hir.get_current_stream"() : () -> !hir.stream
  "hir.stream_for"(%c0, %c8, %c1, %u2) ({
  ^bb0(%j: index, %s2: index):
    %oj = "hir.alias_select"(%out, %j) {axis = 0 : i64} : (memref<8x4xf32>, index) -> memref<4xf32, strided<[1], offset: ?>>
    "hir.set"(%t, %out) : (memref<8x4xf32>, memref<8x4xf32>) -> ()
    "hir.yield"() : () -> ()
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (index, index, index, !hir.stream) -> ()
  return
}
