// RUN: not hir-run %s zeros 5 2>&1 | FileCheck %s
// A run-time error is reported at the op, with no traceback.

func.func @main(%a: memref<4x8xf32>, %i: index) {
  %r = "hir.alias_select"(%a, %i) {axis = 0 : i64} : (memref<4x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
  return
}

// CHECK: errors.mlir:5:8: error: 'hir.alias_select' index 5 is out of range for axis 0 of %arg0 (local shape [4, 8])
// CHECK-NOT: Traceback
