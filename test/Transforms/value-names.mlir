// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-lower)' --print-value-names | FileCheck %s
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-lower)' | FileCheck %s --check-prefix=DEFAULT

// The README's example: the values hir-lower creates print with the names the passes give
// them (--print-value-names); a slice is named after its source where that has a name.
// CHECK-LABEL: func.func @main
// CHECK:         %user_stream = "hir.get_current_stream"()
// CHECK:         "hir.for"
// CHECK-NEXT:    ^bb0(%i: index):
// CHECK-NEXT:      %stream = "hir.get_stream"(%i)
// CHECK-NEXT:      "hir.set_current_stream"(%stream)
// CHECK-NEXT:      "hir.synchronize"(%user_stream)
// CHECK:         "hir.for"
// CHECK-NEXT:    ^bb0(%i: index):
// CHECK-NEXT:      %stream = "hir.get_stream"(%i)
// CHECK-NEXT:      "hir.set_current_stream"(%stream)
// CHECK-NEXT:      %arg0_slice = "hir.alias_select"(%arg0, %i) {axis = 0 : i64}
// CHECK-NEXT:      %slice = "hir.alias_select"(%alloc, %i) {axis = 0 : i64}
// CHECK-NEXT:      "hir.matmul"(%arg0_slice, %arg1, %slice)
// CHECK-NEXT:      %slice_1 = "hir.alias_select"(%alloc_0, %i) {axis = 0 : i64}
// CHECK-NEXT:      "hir.binary"(%slice, %slice, %slice_1) {kind = "add"}
// CHECK-NEXT:      "hir.set_current_stream"(%user_stream)
// CHECK-NEXT:      "hir.synchronize"(%stream)
// Without the flag, the printed IR is unchanged: MLIR's numbering.
// DEFAULT-LABEL: func.func @main
// DEFAULT:         %0 = "hir.get_current_stream"()
// DEFAULT:         ^bb0(%arg2: index):
// DEFAULT-NEXT:      %1 = "hir.get_stream"(%arg2)
// DEFAULT-NOT:     user_stream
func.func @main(%arg0: memref<?x32xf32>, %arg1: memref<32x8xf32>) -> memref<?x8xf32> {
  %c0 = arith.constant 0 : index
  %dim = memref.dim %arg0, %c0 : memref<?x32xf32>
  %alloc = memref.alloc(%dim) : memref<?x8xf32>
  "hir.matmul"(%arg0, %arg1, %alloc) {stream_axis = 0 : i64} : (memref<?x32xf32>, memref<32x8xf32>, memref<?x8xf32>) -> ()
  %alloc_0 = memref.alloc(%dim) : memref<?x8xf32>
  "hir.binary"(%alloc, %alloc, %alloc_0) {kind = "add", stream_axis = 0 : i64} : (memref<?x8xf32>, memref<?x8xf32>, memref<?x8xf32>) -> ()
  return %alloc_0 : memref<?x8xf32>
}

// -----

// Two stream loops of different extents (not fused) in one scope: MLIR keeps names unique
// by suffixing (%user_stream, %user_stream_1; the slices %arg0_slice, %arg1_slice).
// CHECK-LABEL: func.func @two
// CHECK:         %user_stream = "hir.get_current_stream"()
// CHECK:         %arg0_slice = "hir.alias_select"(%arg0, %i)
// CHECK:         %[[USER2:user_stream_[0-9]+]] = "hir.get_current_stream"()
// CHECK:         "hir.synchronize"(%[[USER2]])
// CHECK:         %arg1_slice = "hir.alias_select"(%arg1, %i)
// DEFAULT-LABEL: func.func @two
// DEFAULT-NOT:   _slice
func.func @two(%arg0: memref<4x8xf32>, %arg1: memref<6x8xf32>) -> (memref<4x8xf32>, memref<6x8xf32>) {
  %a = memref.alloc() : memref<4x8xf32>
  "hir.set"(%arg0, %a) {stream_axis = 0 : i64} : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  %b = memref.alloc() : memref<6x8xf32>
  "hir.set"(%arg1, %b) {stream_axis = 0 : i64} : (memref<6x8xf32>, memref<6x8xf32>) -> ()
  return %a, %b : memref<4x8xf32>, memref<6x8xf32>
}
