// RUN: hir-run %s arange:4x3 arange:4x3 zeros --num-streams 2 --print | FileCheck %s
// A stream-lowered loop: row i of the output is written through views on pool stream i % 2,
// with the initial and final synchronizations of hir-stream-lowering.

!row = memref<3xf32, strided<[1], offset: ?>>
func.func @main(%a: memref<4x3xf32>, %b: memref<4x3xf32>, %out: memref<4x3xf32>) -> memref<4x3xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %user = "hir.get_current_stream"() : () -> !hir.stream
  "hir.for"(%c0, %c4, %c1) ({
  ^bb0(%i: index):
    %s = "hir.get_stream"(%i) : (index) -> !hir.stream
    "hir.set_current_stream"(%s) : (!hir.stream) -> ()
    "hir.synchronize"(%user) : (!hir.stream) -> ()
    %ra = "hir.alias_select"(%a, %i) {axis = 0 : i64} : (memref<4x3xf32>, index) -> !row
    %rb = "hir.alias_select"(%b, %i) {axis = 0 : i64} : (memref<4x3xf32>, index) -> !row
    %ro = "hir.alias_select"(%out, %i) {axis = 0 : i64} : (memref<4x3xf32>, index) -> !row
    "hir.binary"(%ra, %rb, %ro) {kind = "mul"} : (!row, !row, !row) -> ()
    "hir.set_current_stream"(%user) : (!hir.stream) -> ()
    "hir.synchronize"(%s) : (!hir.stream) -> ()
    "hir.yield"() : () -> ()
  }) : (index, index, index) -> ()
  return %out : memref<4x3xf32>
}

// CHECK:      output 0: shape [4, 3] f32
// CHECK-NEXT: {{\[}}[0, 1, 4],
// CHECK-NEXT:  [9, 16, 25],
// CHECK-NEXT:  [36, 49, 64],
// CHECK-NEXT:  [81, 100, 121]]
