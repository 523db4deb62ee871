// Round trip of the control ops (control group): parse, verify, print, and parse the printed
// form again. (Loops over views: views.mlir; stream loops: streams.mlir, Transforms/.)
// RUN: hir-opt %s | hir-opt | FileCheck %s

// CHECK-LABEL: func.func @nested_loops
func.func @nested_loops(%n: index, %buf: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  // CHECK: "hir.for"(%{{.*}}, %{{.*}}, %{{.*}}) ({
  // CHECK-NEXT: ^bb0(%[[I:.*]]: index):
  "hir.for"(%c0, %n, %c2) ({
  ^bb0(%i: index):
    // CHECK: "hir.for"(%[[I]], %{{.*}}, %{{.*}}) ({
    // CHECK-NEXT: ^bb0(%[[J:.*]]: index):
    "hir.for"(%i, %n, %c1) ({
    ^bb0(%j: index):
      // CHECK: memref.dim %{{.*}}, %[[J]]
      %d = memref.dim %buf, %j : memref<4x8xf32>
      // CHECK: "hir.yield"() : () -> ()
      "hir.yield"() : () -> ()
    }) : (index, index, index) -> ()
    // CHECK: "hir.yield"() : () -> ()
    "hir.yield"() : () -> ()
  }) : (index, index, index) -> ()
  return
}

// A join of the pool streams: the current stream waits for each pool stream it indexes.
// CHECK-LABEL: func.func @join
// CHECK: "hir.synchronize"
// CHECK-NEXT: "hir.yield"() : () -> ()
// CHECK-NEXT: }) {hir.joins_pool_streams} : (index, index, index) -> ()
func.func @join(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "hir.for"(%c0, %n, %c1) ({
  ^bb0(%s: index):
    %stream = "hir.get_stream"(%s) : (index) -> !hir.stream
    "hir.synchronize"(%stream) : (!hir.stream) -> ()
    "hir.yield"() : () -> ()
  }) {hir.joins_pool_streams} : (index, index, index) -> ()
  return
}

// The stream loop: bounds, the user stream, optionally the stream slot count; the body takes
// the index and the stream slot.
// CHECK-LABEL: func.func @stream_loops
func.func @stream_loops(%n: index, %buf: memref<8x4xf32>, %slots: memref<2x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %user = "hir.get_current_stream"() : () -> !hir.stream
  // CHECK: "hir.stream_for"(%{{.*}}, %{{.*}}, %{{.*}}, %[[U:.*]]) ({
  // CHECK-NEXT: ^bb0(%[[I:.*]]: index, %{{.*}}: index):
  // CHECK-NEXT: "hir.alias_select"(%{{.*}}, %[[I]])
  // CHECK: }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (index, index, index, !hir.stream) -> ()
  "hir.stream_for"(%c0, %n, %c1, %user) ({
  ^bb0(%i: index, %slot: index):
    %row = "hir.alias_select"(%buf, %i) {axis = 0 : i64} : (memref<8x4xf32>, index) -> memref<4xf32, strided<[1], offset: ?>>
    "hir.yield"() : () -> ()
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (index, index, index, !hir.stream) -> ()
  // CHECK: "hir.stream_for"(%{{.*}}, %{{.*}}, %{{.*}}, %[[U]], %{{.*}}) ({
  // CHECK-NEXT: ^bb0(%{{.*}}: index, %[[S:.*]]: index):
  // CHECK-NEXT: "hir.alias_select"(%{{.*}}, %[[S]])
  // CHECK: }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (index, index, index, !hir.stream, index) -> ()
  "hir.stream_for"(%c0, %n, %c1, %user, %c2) ({
  ^bb0(%i: index, %slot: index):
    %row = "hir.alias_select"(%slots, %slot) {axis = 0 : i64} : (memref<2x4xf32>, index) -> memref<4xf32, strided<[1], offset: ?>>
    "hir.yield"() : () -> ()
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (index, index, index, !hir.stream, index) -> ()
  return
}
