// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-recompute-layers)' | FileCheck %s
// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-recompute-layers,hir-insert-deallocations)' | FileCheck %s --check-prefix=FREED

// Two layers (h = (x @ w)^2 each), a loss outside them, then the backward: layer 1's
// forward is computed again before its backward's first read of its square's input,
// layer 0's before its own (layer 0's output %h0 is layer 1's input: read by layer 1's
// backward, it is not what places layer 0's recomputation). The backward reads the clones;
// the clones of each layer's output (its square), which nothing reads, are dropped.
// CHECK-LABEL: func.func @two_layers
// CHECK-NOT:   hir.layer
// CHECK:       "hir.binary"(%[[LOSS_IN:.*]], %[[LOSS_IN]], %[[Y:.*]]) {kind = "add"}
// CHECK-NEXT:  %[[G1:.*]] = memref.alloc() :
// CHECK-NEXT:  %[[A1:.*]] = memref.alloc() {hir.recomputed = "layers.1"}
// CHECK-NEXT:  "hir.matmul"(%[[H0:.*]], %arg2, %[[A1]]) {hir.recomputed = "layers.1"}
// CHECK-NEXT:  "hir.binary"(%[[A1]], %[[Y]], %[[G1]]) {kind = "mul"}
// CHECK-NEXT:  "hir.matmul"(%[[H0]], %[[G1]], %arg4)
// CHECK-NEXT:  %[[DH0:.*]] = memref.alloc()
// CHECK-NEXT:  "hir.matmul"(%[[G1]], %arg2, %[[DH0]])
// CHECK-NEXT:  %[[G0:.*]] = memref.alloc() :
// CHECK-NEXT:  %[[A0:.*]] = memref.alloc() {hir.recomputed = "layers.0"}
// CHECK-NEXT:  "hir.matmul"(%arg0, %arg1, %[[A0]]) {hir.recomputed = "layers.0"}
// CHECK-NEXT:  "hir.binary"(%[[A0]], %[[DH0]], %[[G0]]) {kind = "mul"}
// CHECK-NEXT:  "hir.matmul"(%arg0, %[[G0]], %arg3)
// CHECK-NEXT:  return %[[Y]]
// The forward's own buffers are freed in the forward: only the layers' inputs (%h0) and
// the loss stay live into the backward.
// FREED-LABEL: func.func @two_layers
// FREED:       "hir.matmul"(%arg0, %arg1, %[[FA0:.*]]) :
// FREED:       "hir.binary"(%[[FA0]], %[[FA0]], %[[FH0:.*]]) {kind = "mul"}
// FREED-NEXT:  memref.dealloc %[[FA0]] :
// FREED:       "hir.binary"(%[[FA1:.*]], %[[FA1]], %{{.*}}) {kind = "mul"}
// FREED-NEXT:  memref.dealloc %[[FA1]] :
// FREED-NOT:   memref.dealloc %[[FH0]]
// FREED:       {hir.recomputed = "layers.1"}
// FREED:       memref.dealloc %[[FH0]]
// FREED:       {hir.recomputed = "layers.0"}
func.func @two_layers(%arg0: memref<8x8xf32>, %arg1: memref<8x8xf32>, %arg2: memref<8x8xf32>, %arg3: memref<8x8xf32>, %arg4: memref<8x8xf32>) -> memref<8x8xf32> {
  %a0 = memref.alloc() {hir.forward, hir.layer = "layers.0"} : memref<8x8xf32>
  "hir.matmul"(%arg0, %arg1, %a0) {hir.forward, hir.layer = "layers.0"} : (memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>) -> ()
  %h0 = memref.alloc() {hir.forward, hir.layer = "layers.0"} : memref<8x8xf32>
  "hir.binary"(%a0, %a0, %h0) {hir.forward, hir.layer = "layers.0", kind = "mul"} : (memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>) -> ()
  %a1 = memref.alloc() {hir.forward, hir.layer = "layers.1"} : memref<8x8xf32>
  "hir.matmul"(%h0, %arg2, %a1) {hir.forward, hir.layer = "layers.1"} : (memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>) -> ()
  %h1 = memref.alloc() {hir.forward, hir.layer = "layers.1"} : memref<8x8xf32>
  "hir.binary"(%a1, %a1, %h1) {hir.forward, hir.layer = "layers.1", kind = "mul"} : (memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>) -> ()
  %y = memref.alloc() {hir.forward} : memref<8x8xf32>
  "hir.binary"(%h1, %h1, %y) {hir.forward, kind = "add"} : (memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>) -> ()
  %g1 = memref.alloc() : memref<8x8xf32>
  "hir.binary"(%a1, %y, %g1) {kind = "mul"} : (memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>) -> ()
  "hir.matmul"(%h0, %g1, %arg4) : (memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>) -> ()
  %dh0 = memref.alloc() : memref<8x8xf32>
  "hir.matmul"(%g1, %arg2, %dh0) : (memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>) -> ()
  %g0 = memref.alloc() : memref<8x8xf32>
  "hir.binary"(%a0, %dh0, %g0) {kind = "mul"} : (memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>) -> ()
  "hir.matmul"(%arg0, %g0, %arg3) : (memref<8x8xf32>, memref<8x8xf32>, memref<8x8xf32>) -> ()
  return %y : memref<8x8xf32>
}
