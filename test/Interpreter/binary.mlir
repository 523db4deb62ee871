// RUN: hir-run %s arange ones --print | FileCheck %s
// A preallocated-free binary op and a reduction; outputs print in a stable format.

func.func @main(%a: memref<2x3xf32>, %b: memref<2x3xf32>) -> (memref<2x3xf32>, memref<2xf32>) {
  %sum = memref.alloc() : memref<2x3xf32>
  "hir.binary"(%a, %b, %sum) {kind = "add"} : (memref<2x3xf32>, memref<2x3xf32>, memref<2x3xf32>) -> ()
  %red = memref.alloc() : memref<2xf32>
  "hir.reduction"(%sum, %red) {kind = "max", axes = array<i64: 1>} : (memref<2x3xf32>, memref<2xf32>) -> ()
  return %sum, %red : memref<2x3xf32>, memref<2xf32>
}

// CHECK:      output 0: shape [2, 3] f32
// CHECK-NEXT: {{\[}}[1, 2, 3],
// CHECK-NEXT:  [4, 5, 6]]
// CHECK-NEXT: output 1: shape [2] f32
// CHECK-NEXT: [3, 6]
