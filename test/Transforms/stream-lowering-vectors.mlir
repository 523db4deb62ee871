// Stream axes whose slices are vectors: matmul M with a 2-D A, matmul N with a 2-D B,
// linear N (the weight slice is 1-D, the bias slice 0-D).
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-stream-lowering,hir-expand-stream-loops)' | FileCheck %s

// CHECK-LABEL: func.func @matmul_m
// CHECK:       "hir.for"
// CHECK:       "hir.for"
// CHECK:       %[[A:.*]] = "hir.alias_select"(%arg0, %[[I:.*]]) {axis = 0 : i64} : (memref<4x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
// CHECK:       %[[O:.*]] = "hir.alias_select"(%{{.*}}, %[[I]]) {axis = 0 : i64} : (memref<4x2xf32>, index) -> memref<2xf32, strided<[1], offset: ?>>
// CHECK:       "hir.matmul"(%[[A]], %arg1, %[[O]])
func.func @matmul_m(%arg0: memref<4x8xf32>, %arg1: memref<8x2xf32>) -> memref<4x2xf32> {
  %0 = memref.alloc() : memref<4x2xf32>
  "hir.matmul"(%arg0, %arg1, %0) {stream_axis = 0 : i64} : (memref<4x8xf32>, memref<8x2xf32>, memref<4x2xf32>) -> ()
  return %0 : memref<4x2xf32>
}

// -----

// CHECK-LABEL: func.func @matmul_n
// CHECK:       %[[B:.*]] = "hir.alias_select"(%arg1, %[[I:.*]]) {axis = 1 : i64} : (memref<8x2xf32>, index) -> memref<8xf32, strided<[2], offset: ?>>
// CHECK:       %[[O:.*]] = "hir.alias_select"(%{{.*}}, %[[I]]) {axis = 1 : i64} : (memref<4x2xf32>, index) -> memref<4xf32, strided<[2], offset: ?>>
// CHECK:       "hir.matmul"(%arg0, %[[B]], %[[O]])
func.func @matmul_n(%arg0: memref<4x8xf32>, %arg1: memref<8x2xf32>) -> memref<4x2xf32> {
  %0 = memref.alloc() : memref<4x2xf32>
  "hir.matmul"(%arg0, %arg1, %0) {stream_axis = 1 : i64} : (memref<4x8xf32>, memref<8x2xf32>, memref<4x2xf32>) -> ()
  return %0 : memref<4x2xf32>
}

// -----

// CHECK-LABEL: func.func @linear_n
// CHECK:       %[[W:.*]] = "hir.alias_select"(%arg1, %[[I:.*]]) {axis = 0 : i64} : (memref<2x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
// CHECK:       %[[B:.*]] = "hir.alias_select"(%arg2, %[[I]]) {axis = 0 : i64} : (memref<2xf32>, index) -> memref<f32, strided<[], offset: ?>>
// CHECK:       "hir.linear"(%arg0, %[[W]], %{{.*}}, %[[B]])
func.func @linear_n(%arg0: memref<4x8xf32>, %arg1: memref<2x8xf32>, %arg2: memref<2xf32>) -> memref<4x2xf32> {
  %0 = memref.alloc() : memref<4x2xf32>
  "hir.linear"(%arg0, %arg1, %0, %arg2) {operandSegmentSizes = array<i32: 1, 1, 1, 1>, stream_axis = 1 : i64} : (memref<4x8xf32>, memref<2x8xf32>, memref<4x2xf32>, memref<2xf32>) -> ()
  return %0 : memref<4x2xf32>
}
