// RUN: hir-run %s arange:2x2 ones:2x2 --print | FileCheck %s
// A kernel segment (func.func with hir.kernel) runs as one unit, writing the caller's buffer.

func.func private @segment(%a: memref<2x2xf32>, %b: memref<2x2xf32>, %out: memref<2x2xf32>) attributes {hir.kernel} {
  "hir.matmul"(%a, %b, %out) : (memref<2x2xf32>, memref<2x2xf32>, memref<2x2xf32>) -> ()
  return
}
func.func @main(%a: memref<2x2xf32>, %b: memref<2x2xf32>) -> memref<2x2xf32> {
  %out = memref.alloc() : memref<2x2xf32>
  func.call @segment(%a, %b, %out) : (memref<2x2xf32>, memref<2x2xf32>, memref<2x2xf32>) -> ()
  return %out : memref<2x2xf32>
}

// CHECK:      output 0: shape [2, 2] f32
// CHECK-NEXT: {{\[}}[1, 1],
// CHECK-NEXT:  [5, 5]]
