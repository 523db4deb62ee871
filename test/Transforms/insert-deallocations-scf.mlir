// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-insert-deallocations)' | FileCheck %s
// A buffer yielded out of an scf.if branch escapes (it becomes the if's result): it is not
// freed; a temporary used only inside a branch is freed in that branch; one used inside a
// branch and after the scf.if is freed after its last use.

// CHECK-LABEL: func.func @main
func.func @main(%a: memref<4xf32>, %b: memref<4xf32>) -> memref<4xf32> {
  %flag = arith.constant false
  // CHECK: %[[K:.*]] = memref.alloc
  %keep = memref.alloc() : memref<4xf32>
  "hir.set"(%a, %keep) : (memref<4xf32>, memref<4xf32>) -> ()
  %r = scf.if %flag -> (memref<4xf32>) {
    scf.yield %a : memref<4xf32>
  } else {
    // CHECK: %[[T:.*]] = memref.alloc
    %t = memref.alloc() : memref<4xf32>
    // CHECK: %[[U:.*]] = memref.alloc
    %u = memref.alloc() : memref<4xf32>
    "hir.binary"(%keep, %b, %u) {kind = "add"} : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
    "hir.binary"(%u, %b, %t) {kind = "mul"} : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
    // CHECK: "hir.binary"{{.*}}kind = "mul"
    // CHECK-NEXT: memref.dealloc %[[U]]
    // CHECK-NOT: memref.dealloc %[[T]]
    // CHECK: scf.yield %[[T]]
    scf.yield %t : memref<4xf32>
  }
  %o = memref.alloc() : memref<4xf32>
  "hir.binary"(%r, %keep, %o) {kind = "sub"} : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  // CHECK: "hir.binary"
  // CHECK-NEXT: memref.dealloc %[[K]]
  // CHECK-NEXT: return
  return %o : memref<4xf32>
}
