// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-hoist-parameter-work)' | FileCheck %s

// A kernel segment transposing a parameter, and an add of two parameters: both move into
// one function called once; their deallocations go, the others stay.
// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %[[W:.*]]:2 = call @main_parameter_work(%arg0, %arg1) {hir.once} : (memref<16x32xf32>, memref<16x32xf32>) -> (memref<32x16xf32>, memref<16x32xf32>)
// CHECK-NEXT:    %[[Y:.*]] = memref.alloc() : memref<16x16xf32>
// CHECK-NEXT:    "hir.matmul"(%arg2, %[[W]]#0, %[[Y]])
// CHECK-NEXT:    %[[Z:.*]] = memref.alloc() : memref<16x32xf32>
// CHECK-NEXT:    "hir.binary"(%[[W]]#1, %arg2, %[[Z]])
// CHECK-NEXT:    %[[O:.*]] = memref.alloc() : memref<16x16xf32>
// CHECK-NEXT:    "hir.matmul"(%[[Z]], %[[W]]#0, %[[O]])
// CHECK-NEXT:    memref.dealloc %[[Z]]
// CHECK-NEXT:    memref.dealloc %[[Y]]
// CHECK-NEXT:    return %[[O]]
// CHECK-LABEL: func.func private @main_parameter_work(%arg0: memref<16x32xf32>, %arg1: memref<16x32xf32>) -> (memref<32x16xf32>, memref<16x32xf32>)
// CHECK-NEXT:    %[[T:.*]] = memref.alloc() : memref<32x16xf32>
// CHECK-NEXT:    call @segment_0(%arg0, %[[T]])
// CHECK-NEXT:    %[[S:.*]] = memref.alloc() : memref<16x32xf32>
// CHECK-NEXT:    "hir.binary"(%arg0, %arg1, %[[S]]) {kind = "add"}
// CHECK-NEXT:    return %[[T]], %[[S]]
func.func @main(%w: memref<16x32xf32> {hir.parameter}, %v: memref<16x32xf32> {hir.parameter}, %x: memref<16x32xf32>) -> memref<16x16xf32> {
  %wt = memref.alloc() : memref<32x16xf32>
  call @segment_0(%w, %wt) : (memref<16x32xf32>, memref<32x16xf32>) -> ()
  %y = memref.alloc() : memref<16x16xf32>
  "hir.matmul"(%x, %wt, %y) : (memref<16x32xf32>, memref<32x16xf32>, memref<16x16xf32>) -> ()
  %s = memref.alloc() : memref<16x32xf32>
  "hir.binary"(%w, %v, %s) {kind = "add"} : (memref<16x32xf32>, memref<16x32xf32>, memref<16x32xf32>) -> ()
  %z = memref.alloc() : memref<16x32xf32>
  "hir.binary"(%s, %x, %z) {kind = "add"} : (memref<16x32xf32>, memref<16x32xf32>, memref<16x32xf32>) -> ()
  memref.dealloc %s : memref<16x32xf32>
  %o = memref.alloc() : memref<16x16xf32>
  "hir.matmul"(%z, %wt, %o) : (memref<16x32xf32>, memref<32x16xf32>, memref<16x16xf32>) -> ()
  memref.dealloc %z : memref<16x32xf32>
  memref.dealloc %wt : memref<32x16xf32>
  memref.dealloc %y : memref<16x16xf32>
  return %o : memref<16x16xf32>
}
func.func private @segment_0(%arg0: memref<16x32xf32>, %arg1: memref<32x16xf32>) attributes {hir.kernel} {
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %0 = bufferization.to_tensor %arg0 restrict : memref<16x32xf32> to tensor<16x32xf32>
  %1 = builtin.unrealized_conversion_cast %0 : tensor<16x32xf32> to !torch.vtensor<[16,32],f32>
  %2 = torch.aten.transpose.int %1, %int0, %int1 : !torch.vtensor<[16,32],f32>, !torch.int, !torch.int -> !torch.vtensor<[32,16],f32>
  %3 = builtin.unrealized_conversion_cast %2 : !torch.vtensor<[32,16],f32> to tensor<32x16xf32>
  bufferization.materialize_in_destination %3 in restrict writable %arg1 : (tensor<32x16xf32>, memref<32x16xf32>) -> ()
  return
}

// -----

// Nothing moves: an argument without hir.parameter, a parameter result that is returned,
// one written again later, and work inside a loop.
// CHECK-LABEL: func.func @stays(
// CHECK-NOT:     hir.once
// CHECK-NOT:     parameter_work
func.func @stays(%w: memref<8xf32> {hir.parameter}, %x: memref<8xf32>) -> (memref<8xf32>, memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc() : memref<8xf32>
  "hir.binary"(%w, %x, %a) {kind = "add"} : (memref<8xf32>, memref<8xf32>, memref<8xf32>) -> ()
  %r = memref.alloc() : memref<8xf32>
  "hir.binary"(%w, %w, %r) {kind = "mul"} : (memref<8xf32>, memref<8xf32>, memref<8xf32>) -> ()
  %b = memref.alloc() : memref<8xf32>
  "hir.binary"(%w, %w, %b) {kind = "add"} : (memref<8xf32>, memref<8xf32>, memref<8xf32>) -> ()
  "hir.binary"(%b, %a, %b) {kind = "add"} : (memref<8xf32>, memref<8xf32>, memref<8xf32>) -> ()
  "hir.for"(%c0, %c2, %c1) ({
  ^bb0(%i: index):
    %l = memref.alloc() : memref<8xf32>
    "hir.set"(%w, %l) : (memref<8xf32>, memref<8xf32>) -> ()
    "hir.binary"(%l, %a, %a) {kind = "add"} : (memref<8xf32>, memref<8xf32>, memref<8xf32>) -> ()
    memref.dealloc %l : memref<8xf32>
    "hir.yield"() : () -> ()
  }) : (index, index, index) -> ()
  "hir.binary"(%b, %a, %a) {kind = "add"} : (memref<8xf32>, memref<8xf32>, memref<8xf32>) -> ()
  memref.dealloc %b : memref<8xf32>
  return %a, %r : memref<8xf32>, memref<8xf32>
}
