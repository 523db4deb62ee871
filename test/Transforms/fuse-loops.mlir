// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-stream-lowering,hir-fuse-loops,hir-expand-stream-loops)' | FileCheck %s

// Seed 001 TwoSetOps: tv1 = set(tv0), tv2 = set(tv1), both stream-parallel on axis 0: one
// pair of loops; both outputs allocated first; tv1's slice is taken once and reused.
// CHECK-LABEL: func.func @two_set_ops
// CHECK:       %[[T1:.*]] = memref.alloc
// CHECK:       %[[T2:.*]] = memref.alloc
// CHECK:       %[[USER:.*]] = "hir.get_current_stream"
// CHECK-NEXT:  "hir.for"
// CHECK:         "hir.synchronize"(%[[USER]])
// CHECK:       "hir.for"
// CHECK-NEXT:  ^bb0(%[[I:.*]]: index):
// CHECK-NEXT:    %[[S:.*]] = "hir.get_stream"(%[[I]])
// CHECK-NEXT:    "hir.set_current_stream"(%[[S]])
// CHECK-NEXT:    %[[T0_I:.*]] = "hir.alias_select"(%arg0, %[[I]])
// CHECK-NEXT:    %[[T1_I:.*]] = "hir.alias_select"(%[[T1]], %[[I]])
// CHECK-NEXT:    "hir.set"(%[[T0_I]], %[[T1_I]])
// CHECK-NEXT:    %[[T2_I:.*]] = "hir.alias_select"(%[[T2]], %[[I]])
// CHECK-NEXT:    "hir.set"(%[[T1_I]], %[[T2_I]])
// CHECK-NEXT:    "hir.set_current_stream"(%[[USER]])
// CHECK-NEXT:    "hir.synchronize"(%[[S]])
// CHECK-NEXT:    "hir.yield"
// CHECK-NOT:   "hir.for"
// CHECK-NOT:   "hir.get_current_stream"
func.func @two_set_ops(%arg0: memref<?x8xf32>) -> memref<?x8xf32> {
  %c0 = arith.constant 0 : index
  %d0 = memref.dim %arg0, %c0 : memref<?x8xf32>
  %1 = memref.alloc(%d0) : memref<?x8xf32>
  "hir.set"(%arg0, %1) {stream_axis = 0 : i64} : (memref<?x8xf32>, memref<?x8xf32>) -> ()
  %2 = memref.alloc(%d0) : memref<?x8xf32>
  "hir.set"(%1, %2) {stream_axis = 0 : i64} : (memref<?x8xf32>, memref<?x8xf32>) -> ()
  return %2 : memref<?x8xf32>
}

// -----

// Seed 001 ThreeSetOpsWithDisjointsForLoops: tv2 = set(tv1) is not stream-parallel and sits
// between the loops of tv1 and tv3, which stay apart.
// CHECK-LABEL: func.func @three_set_ops_disjoint
// CHECK:       %[[T1:.*]] = memref.alloc
// CHECK:       "hir.get_current_stream"
// CHECK:       "hir.for"
// CHECK:       "hir.for"
// CHECK:         "hir.set"
// CHECK:       %[[T2:.*]] = memref.alloc
// CHECK-NEXT:  "hir.set"(%[[T1]], %[[T2]])
// CHECK:       %[[T3:.*]] = memref.alloc
// CHECK:       "hir.get_current_stream"
// CHECK:       "hir.for"
// CHECK:       "hir.for"
// CHECK:         "hir.alias_select"(%[[T2]]
func.func @three_set_ops_disjoint(%arg0: memref<?x8xf32>) -> memref<?x8xf32> {
  %c0 = arith.constant 0 : index
  %d0 = memref.dim %arg0, %c0 : memref<?x8xf32>
  %1 = memref.alloc(%d0) : memref<?x8xf32>
  "hir.set"(%arg0, %1) {stream_axis = 0 : i64} : (memref<?x8xf32>, memref<?x8xf32>) -> ()
  %2 = memref.alloc(%d0) : memref<?x8xf32>
  "hir.set"(%1, %2) : (memref<?x8xf32>, memref<?x8xf32>) -> ()
  %3 = memref.alloc(%d0) : memref<?x8xf32>
  "hir.set"(%2, %3) {stream_axis = 0 : i64} : (memref<?x8xf32>, memref<?x8xf32>) -> ()
  return %3 : memref<?x8xf32>
}

// -----

// Adjacent loops that must stay apart: the second reads the first's output whole (matmul
// streamed on M reads all of B, which the first loop writes slice by slice)...
// CHECK-LABEL: func.func @dependency
// CHECK-COUNT-4: "hir.for"
func.func @dependency(%arg0: memref<2x4x4xf32>, %arg1: memref<4x4xf32>) -> memref<2x4x4xf32> {
  %b = memref.alloc() : memref<4x4xf32>
  "hir.set"(%arg1, %b) {stream_axis = 0 : i64} : (memref<4x4xf32>, memref<4x4xf32>) -> ()
  %0 = memref.alloc() : memref<2x4x4xf32>
  "hir.matmul"(%arg0, %b, %0) {stream_axis = 1 : i64} : (memref<2x4x4xf32>, memref<4x4xf32>, memref<2x4x4xf32>) -> ()
  return %0 : memref<2x4x4xf32>
}

// -----

// ...or slices it along another axis, or the extents differ.
// CHECK-LABEL: func.func @other_axis
// CHECK-COUNT-4: "hir.for"
// CHECK-LABEL: func.func @other_extent
// CHECK-COUNT-4: "hir.for"
func.func @other_axis(%arg0: memref<4x4xf32>) -> memref<4x4xf32> {
  %1 = memref.alloc() : memref<4x4xf32>
  "hir.set"(%arg0, %1) {stream_axis = 0 : i64} : (memref<4x4xf32>, memref<4x4xf32>) -> ()
  %2 = memref.alloc() : memref<4x4xf32>
  "hir.set"(%1, %2) {stream_axis = 1 : i64} : (memref<4x4xf32>, memref<4x4xf32>) -> ()
  return %2 : memref<4x4xf32>
}
func.func @other_extent(%arg0: memref<4x6xf32>) -> memref<4x6xf32> {
  %1 = memref.alloc() : memref<4x6xf32>
  "hir.set"(%arg0, %1) {stream_axis = 0 : i64} : (memref<4x6xf32>, memref<4x6xf32>) -> ()
  %2 = memref.alloc() : memref<4x6xf32>
  "hir.binary"(%1, %1, %2) {kind = "add", stream_axis = 1 : i64} : (memref<4x6xf32>, memref<4x6xf32>, memref<4x6xf32>) -> ()
  return %2 : memref<4x6xf32>
}
