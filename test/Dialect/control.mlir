// Round trip of the control ops (control group): parse, verify, print, and parse the printed
// form again. (Loops over views: views.mlir; stream loops: streams.mlir, Transforms/.)
// RUN: hir-opt %s | hir-opt | FileCheck %s

// CHECK-LABEL: func.func @nested_loops
func.func @nested_loops(%n: index, %buf: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  // CHECK: "hir.for"(%{{.*}}, %{{.*}}, %{{.*}}) ({
  // CHECK-NEXT: ^bb0(%[[I:.*]]: index):
  "hir.for"(%c0, %n, %c2) ({
  ^bb0(%i: index):
    // CHECK: "hir.for"(%[[I]], %{{.*}}, %{{.*}}) ({
    // CHECK-NEXT: ^bb0(%[[J:.*]]: index):
    "hir.for"(%i, %n, %c1) ({
    ^bb0(%j: index):
      // CHECK: memref.dim %{{.*}}, %[[J]]
      %d = memref.dim %buf, %j : memref<4x8xf32>
      // CHECK: "hir.yield"() : () -> ()
      "hir.yield"() : () -> ()
    }) : (index, index, index) -> ()
    // CHECK: "hir.yield"() : () -> ()
    "hir.yield"() : () -> ()
  }) : (index, index, index) -> ()
  return
}
