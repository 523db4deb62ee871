// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-stream-lowering,hir-expand-stream-loops)' | FileCheck %s
// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-lower)' | FileCheck %s --check-prefix=LOWER
// Stream lowering through views: the stream axis survives a broadcast (a new inner axis),
// an expand_shape of the inner axis and a subview of rows, so each loop slices the views.

!bcast = memref<4x8xf32, strided<[0, 1], offset: ?>>
!rows = memref<4x8xf32, strided<[8, 1], offset: 8>>
// CHECK-LABEL: func.func @main
func.func @main(%in: memref<6x8xf32>, %bias: memref<8xf32>) -> memref<4x2x4xf32> {
  // CHECK: %[[B:.*]] = "hir.alias_broadcast"
  %b = "hir.alias_broadcast"(%bias) : (memref<8xf32>) -> !bcast
  // CHECK: %[[R:.*]] = memref.subview
  %r = memref.subview %in[1, 0] [4, 8] [1, 1] : memref<6x8xf32> to !rows
  %t = memref.alloc() : memref<4x8xf32>
  // CHECK: "hir.for"
  // CHECK: "hir.for"
  // CHECK: "hir.alias_select"(%[[R]], %{{.*}}) {axis = 0 : i64} : (memref<4x8xf32, strided<[8, 1], offset: 8>>, index) -> memref<8xf32, strided<[1], offset: ?>>
  // CHECK: "hir.alias_select"(%[[B]], %{{.*}}) {axis = 0 : i64} : (memref<4x8xf32, strided<[0, 1], offset: ?>>, index) -> memref<8xf32, strided<[1], offset: ?>>
  // CHECK: "hir.binary"
  "hir.binary"(%r, %b, %t) {kind = "add", stream_axis = 0 : i64} : (!rows, !bcast, memref<4x8xf32>) -> ()
  // CHECK: %[[E:.*]] = memref.expand_shape
  %e = memref.expand_shape %t [[0], [1, 2]] output_shape [4, 2, 4] : memref<4x8xf32> into memref<4x2x4xf32>
  %out = memref.alloc() : memref<4x2x4xf32>
  // CHECK: "hir.alias_select"(%[[E]], %{{.*}}) {axis = 0 : i64} : (memref<4x2x4xf32>, index) -> memref<2x4xf32, strided<[4, 1], offset: ?>>
  // CHECK: "hir.set"
  "hir.set"(%e, %out) {stream_axis = 0 : i64} : (memref<4x2x4xf32>, memref<4x2x4xf32>) -> ()
  return %out : memref<4x2x4xf32>
}
// The temporary viewed by the expand_shape lives until the loop reading the view ends (the
// loops stay apart: fusion sees the view as a whole-buffer access).
// LOWER: %[[T:.*]] = memref.alloc() : memref<4x8xf32>
// LOWER: "hir.for"
// LOWER: "hir.binary"
// LOWER: memref.expand_shape %[[T]]
// LOWER: "hir.for"
// LOWER: "hir.set"
// LOWER: memref.dealloc %[[T]]
// LOWER-NEXT: return
