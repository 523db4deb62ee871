// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-stream-lowering)' | FileCheck %s --check-prefix=LOOP
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-stream-lowering,hir-expand-stream-loops)' | FileCheck %s

// The pass itself writes one hir.stream_for per stream-parallel op (LOOP); the CHECK lines
// show it with hir-expand-stream-loops after it, in nvFuser's form.
// LOOP-LABEL: func.func @single_set
// LOOP:       %[[OUT:.*]] = memref.alloc
// LOOP:       %[[C0:.*]] = arith.constant 0 : index
// LOOP-NEXT:  %[[C1:.*]] = arith.constant 1 : index
// LOOP-NEXT:  %[[N:.*]] = memref.dim %[[OUT]], %[[C0]]
// LOOP-NEXT:  %[[USER:.*]] = "hir.get_current_stream"() : () -> !hir.stream
// LOOP-NEXT:  "hir.stream_for"(%[[C0]], %[[N]], %[[C1]], %[[USER]]) ({
// LOOP-NEXT:  ^bb0(%[[I:.*]]: index, %{{.*}}: index):
// LOOP-NEXT:    %[[IN_I:.*]] = "hir.alias_select"(%arg0, %[[I]]) {axis = 0 : i64} : (memref<?x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
// LOOP-NEXT:    %[[OUT_I:.*]] = "hir.alias_select"(%[[OUT]], %[[I]]) {axis = 0 : i64} : (memref<?x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
// LOOP-NEXT:    "hir.set"(%[[IN_I]], %[[OUT_I]]) : (
// LOOP-NEXT:    "hir.yield"
// LOOP-NEXT:  }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (index, index, index, !hir.stream) -> ()
// LOOP-NEXT:  return %[[OUT]]

// Seed 001 SingleSetOp: tv1 = set(tv0), tv1 axis 0 stream-parallel. The full output stays
// allocated before the loops; the loop extent is the output's (dynamic) axis 0.
// CHECK-LABEL: func.func @single_set
// CHECK:       %[[OUT:.*]] = memref.alloc
// CHECK:       %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:  %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:  %[[N:.*]] = memref.dim %[[OUT]], %[[C0]]
// CHECK-NEXT:  %[[USER:.*]] = "hir.get_current_stream"() : () -> !hir.stream
// CHECK-NEXT:  "hir.for"(%[[C0]], %[[N]], %[[C1]]) ({
// CHECK-NEXT:  ^bb0(%[[J:.*]]: index):
// CHECK-NEXT:    %[[SJ:.*]] = "hir.get_stream"(%[[J]])
// CHECK-NEXT:    "hir.set_current_stream"(%[[SJ]])
// CHECK-NEXT:    "hir.synchronize"(%[[USER]])
// CHECK-NEXT:    "hir.yield"
// CHECK-NEXT:  })
// CHECK-NEXT:  "hir.for"(%[[C0]], %[[N]], %[[C1]]) ({
// CHECK-NEXT:  ^bb0(%[[I:.*]]: index):
// CHECK-NEXT:    %[[S:.*]] = "hir.get_stream"(%[[I]])
// CHECK-NEXT:    "hir.set_current_stream"(%[[S]])
// CHECK-NEXT:    %[[IN_I:.*]] = "hir.alias_select"(%arg0, %[[I]]) {axis = 0 : i64} : (memref<?x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:    %[[OUT_I:.*]] = "hir.alias_select"(%[[OUT]], %[[I]]) {axis = 0 : i64} : (memref<?x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:    "hir.set"(%[[IN_I]], %[[OUT_I]]) : (
// CHECK-NEXT:    "hir.set_current_stream"(%[[USER]])
// CHECK-NEXT:    "hir.synchronize"(%[[S]])
// CHECK-NEXT:    "hir.yield"
// CHECK-NEXT:  })
// CHECK-NEXT:  return %[[OUT]]
func.func @single_set(%arg0: memref<?x8xf32>) -> memref<?x8xf32> {
  %c0 = arith.constant 0 : index
  %d0 = memref.dim %arg0, %c0 : memref<?x8xf32>
  %0 = memref.alloc(%d0) : memref<?x8xf32>
  "hir.set"(%arg0, %0) {stream_axis = 0 : i64} : (memref<?x8xf32>, memref<?x8xf32>) -> ()
  return %0 : memref<?x8xf32>
}

// -----

// A static stream axis (axis 1) gives a constant extent; a binary operand of lower rank is
// used whole, an extent-1 operand axis is read at index 0.
// CHECK-LABEL: func.func @binary_broadcast
// CHECK:       %[[C0:.*]] = arith.constant 0 : index
// CHECK:       %[[N:.*]] = arith.constant 6 : index
// CHECK:       "hir.for"(%[[C0]], %[[N]]
// CHECK:       "hir.for"(%[[C0]], %[[N]]
// CHECK-NEXT:  ^bb0(%[[I:.*]]: index):
// CHECK:         %[[A:.*]] = "hir.alias_select"(%arg0, %[[I]]) {axis = 1 : i64} : (memref<4x6x8xf32>, index) -> memref<4x8xf32, strided<[48, 1], offset: ?>>
// CHECK-NEXT:    %[[B:.*]] = "hir.alias_select"(%arg1, %[[C0]]) {axis = 0 : i64} : (memref<1x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
// CHECK-NEXT:    %[[O:.*]] = "hir.alias_select"(%{{.*}}, %[[I]]) {axis = 1 : i64}
// CHECK-NEXT:    "hir.binary"(%[[A]], %[[B]], %[[O]]) {kind = "mul"}
func.func @binary_broadcast(%arg0: memref<4x6x8xf32>, %arg1: memref<1x8xf32>) -> memref<4x6x8xf32> {
  %0 = memref.alloc() : memref<4x6x8xf32>
  "hir.binary"(%arg0, %arg1, %0) {kind = "mul", stream_axis = 1 : i64} : (memref<4x6x8xf32>, memref<1x8xf32>, memref<4x6x8xf32>) -> ()
  return %0 : memref<4x6x8xf32>
}

// -----

// Reduction: output axis 1 is input axis 2 (axis 1 is reduced); slicing input axis 2 leaves
// the reduced axis number unchanged, slicing below it renumbers.
// CHECK-LABEL: func.func @reduction
// CHECK:         %[[A:.*]] = "hir.alias_select"(%arg0, %{{.*}}) {axis = 2 : i64} : (memref<3x4x5xf32>, index) -> memref<3x4xf32, strided<[20, 5], offset: ?>>
// CHECK-NEXT:    %[[O:.*]] = "hir.alias_select"(%{{.*}}, %{{.*}}) {axis = 1 : i64}
// CHECK-NEXT:    "hir.reduction"(%[[A]], %[[O]]) {axes = array<i64: 1>, kind = "max"}
// CHECK-LABEL: func.func @reduction_renumbered
// CHECK:         "hir.alias_select"(%arg0, %{{.*}}) {axis = 0 : i64}
// CHECK:         "hir.reduction"({{.*}}) {axes = array<i64: 0>, kind = "sum"}
func.func @reduction(%arg0: memref<3x4x5xf32>) -> memref<3x5xf32> {
  %0 = memref.alloc() : memref<3x5xf32>
  "hir.reduction"(%arg0, %0) {kind = "max", axes = array<i64: 1>, stream_axis = 1 : i64} : (memref<3x4x5xf32>, memref<3x5xf32>) -> ()
  return %0 : memref<3x5xf32>
}
func.func @reduction_renumbered(%arg0: memref<3x4x5xf32>) -> memref<3x5xf32> {
  %0 = memref.alloc() : memref<3x5xf32>
  "hir.reduction"(%arg0, %0) {kind = "sum", axes = array<i64: 1>, stream_axis = 0 : i64} : (memref<3x4x5xf32>, memref<3x5xf32>) -> ()
  return %0 : memref<3x5xf32>
}

// -----

// Matmul: a batch stream axis slices A's and the output's batch axis (a B without batch axes
// is used whole); M with a 2-D B slices A's M axis. Linear: a leading axis slices the input.
// CHECK-LABEL: func.func @matmul_batch
// CHECK:         %[[A:.*]] = "hir.alias_select"(%arg0, %[[I:.*]]) {axis = 0 : i64}
// CHECK-NEXT:    %[[O:.*]] = "hir.alias_select"(%{{.*}}, %[[I]]) {axis = 0 : i64}
// CHECK-NEXT:    "hir.matmul"(%[[A]], %arg1, %[[O]])
// CHECK-LABEL: func.func @matmul_m
// CHECK:         %[[A:.*]] = "hir.alias_select"(%arg0, %[[I:.*]]) {axis = 1 : i64} : (memref<2x8x16xf32>, index) -> memref<2x16xf32
// CHECK-NEXT:    %[[O:.*]] = "hir.alias_select"(%{{.*}}, %[[I]]) {axis = 1 : i64}
// CHECK-NEXT:    "hir.matmul"(%[[A]], %arg1, %[[O]])
// CHECK-LABEL: func.func @linear
// CHECK:         %[[X:.*]] = "hir.alias_select"(%arg0, %[[I:.*]]) {axis = 0 : i64}
// CHECK-NEXT:    %[[O:.*]] = "hir.alias_select"(%{{.*}}, %[[I]]) {axis = 0 : i64}
// CHECK-NEXT:    "hir.linear"(%[[X]], %arg1, %[[O]], %arg2)
func.func @matmul_batch(%arg0: memref<?x8x16xf32>, %arg1: memref<16x4xf32>) -> memref<?x8x4xf32> {
  %c0 = arith.constant 0 : index
  %d0 = memref.dim %arg0, %c0 : memref<?x8x16xf32>
  %0 = memref.alloc(%d0) : memref<?x8x4xf32>
  "hir.matmul"(%arg0, %arg1, %0) {stream_axis = 0 : i64} : (memref<?x8x16xf32>, memref<16x4xf32>, memref<?x8x4xf32>) -> ()
  return %0 : memref<?x8x4xf32>
}
func.func @matmul_m(%arg0: memref<2x8x16xf32>, %arg1: memref<16x4xf32>) -> memref<2x8x4xf32> {
  %0 = memref.alloc() : memref<2x8x4xf32>
  "hir.matmul"(%arg0, %arg1, %0) {stream_axis = 1 : i64} : (memref<2x8x16xf32>, memref<16x4xf32>, memref<2x8x4xf32>) -> ()
  return %0 : memref<2x8x4xf32>
}
func.func @linear(%arg0: memref<8x16xf32>, %arg1: memref<4x16xf32>, %arg2: memref<4xf32>) -> memref<8x4xf32> {
  %0 = memref.alloc() : memref<8x4xf32>
  "hir.linear"(%arg0, %arg1, %0, %arg2) {operandSegmentSizes = array<i32: 1, 1, 1, 1>, stream_axis = 0 : i64} : (memref<8x16xf32>, memref<4x16xf32>, memref<8x4xf32>, memref<4xf32>) -> ()
  return %0 : memref<8x4xf32>
}

// -----

// Ops without stream_axis are left alone.
// CHECK-LABEL: func.func @no_stream
// CHECK-NOT:   hir.for
// CHECK:       "hir.set"(%arg0
func.func @no_stream(%arg0: memref<8xf32>) -> memref<8xf32> {
  %0 = memref.alloc() : memref<8xf32>
  "hir.set"(%arg0, %0) : (memref<8xf32>, memref<8xf32>) -> ()
  return %0 : memref<8xf32>
}
