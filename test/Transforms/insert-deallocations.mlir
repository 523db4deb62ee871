// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-insert-deallocations)' | FileCheck %s

// An intermediate is freed after its last use; outputs and inputs are not.
// CHECK-LABEL: func.func @chain
// CHECK:       %[[T:.*]] = memref.alloc
// CHECK-NEXT:  "hir.set"(%arg0, %[[T]])
// CHECK-NEXT:  %[[OUT:.*]] = memref.alloc
// CHECK-NEXT:  "hir.binary"(%[[T]], %[[T]], %[[OUT]])
// CHECK-NEXT:  memref.dealloc %[[T]]
// CHECK-NEXT:  return %[[OUT]]
// CHECK-NOT:   memref.dealloc
func.func @chain(%arg0: memref<8xf32>) -> memref<8xf32> {
  %t = memref.alloc() : memref<8xf32>
  "hir.set"(%arg0, %t) : (memref<8xf32>, memref<8xf32>) -> ()
  %out = memref.alloc() : memref<8xf32>
  "hir.binary"(%t, %t, %out) {kind = "add"} : (memref<8xf32>, memref<8xf32>, memref<8xf32>) -> ()
  return %out : memref<8xf32>
}

// -----

// Uses inside a loop count as the loop; a view's uses count as the viewed buffer's; a buffer
// allocated in a body is freed in the body; a collective's buffer lives until its wait.
// CHECK-LABEL: func.func @loops
// CHECK:       %[[T:.*]] = memref.alloc
// CHECK:       "hir.for"
// CHECK:         %[[V:.*]] = "hir.alias_select"(%[[T]]
// CHECK:         %[[L:.*]] = memref.alloc
// CHECK-NEXT:    "hir.set"(%[[V]], %[[L]])
// CHECK-NEXT:    %[[W:.*]] = "hir.allreduce"(%[[L]]
// CHECK-NEXT:    "hir.wait"(%[[W]])
// CHECK-NEXT:    memref.dealloc %[[L]]
// CHECK-NEXT:    "hir.yield"
// CHECK:       memref.dealloc %[[T]]
// CHECK-NEXT:  return
func.func @loops(%arg0: memref<4x2x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> memref<8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %t = memref.alloc() : memref<4x2x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
  "hir.set"(%arg0, %t) : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<4x2x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
  %out = memref.alloc() : memref<8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
  "hir.for"(%c0, %c4, %c1) ({
  ^bb0(%i: index):
    %v = "hir.alias_select"(%t, %i) {axis = 0 : i64} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, index) -> memref<2x8xf32, strided<[8, 1], offset: ?>, #hir.shard<array<i64: 0, 1>, -1 : i64>>
    %l = memref.alloc() : memref<2x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    "hir.set"(%v, %l) : (memref<2x8xf32, strided<[8, 1], offset: ?>, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<2x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    %w = "hir.allreduce"(%l, %out) {axis = 0 : i64, backend = "gloo", reduction = "sum", team = array<i64: 0, 1>} : (memref<2x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
    "hir.wait"(%w) : (!hir.work) -> ()
    "hir.yield"() : () -> ()
  }) : (index, index, index) -> ()
  return %out : memref<8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
}

// -----

// A buffer returned through a view is an output: not freed.
// CHECK-LABEL: func.func @returned_view
// CHECK-NOT:   memref.dealloc
func.func @returned_view(%arg0: memref<4x8xf32>) -> memref<8xf32, strided<[1], offset: ?>> {
  %c0 = arith.constant 0 : index
  %t = memref.alloc() : memref<4x8xf32>
  "hir.set"(%arg0, %t) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  %v = "hir.alias_select"(%t, %c0) {axis = 0 : i64} : (memref<4x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
  return %v : memref<8xf32, strided<[1], offset: ?>>
}

// -----

// A last use issued on a pool stream (a P2P pipeline's local step 0) lasts until the user
// stream joins the pool streams, past the user-stream work in between: freed on the host
// right after the matmul, %a could go to an allocation whose kernels run before the matmul
// on pool stream 0 is done. %b, last read on the user stream, goes at once.
// CHECK-LABEL: func.func @pool_stream_use
// CHECK:         "hir.matmul"(%[[A:[a-z0-9_]+]], %{{.*}}, %{{.*}})
// CHECK-NEXT:    "hir.set_current_stream"
// CHECK-NEXT:    "hir.set"(%[[B:[a-z0-9_]+]], %[[C:[a-z0-9_]+]])
// CHECK-NEXT:    memref.dealloc %[[B]] :
// CHECK-NEXT:    "hir.binary"(%[[C]], %[[C]], %{{.*}})
// CHECK-NEXT:    "hir.for"
// CHECK:         "hir.synchronize"
// CHECK:         }) {hir.joins_pool_streams} : (index, index, index) -> ()
// CHECK-DAG:     memref.dealloc %[[A]] :
// CHECK-DAG:     memref.dealloc %[[C]] :
// CHECK:         return
func.func @pool_stream_use(%arg0: memref<4x8xf32>, %arg1: memref<8x8xf32>) -> (memref<4x8xf32>, memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc() : memref<4x8xf32>
  "hir.set"(%arg0, %a) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  %b = memref.alloc() : memref<4x8xf32>
  "hir.set"(%arg0, %b) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  %out = memref.alloc() : memref<4x8xf32>
  %copy = memref.alloc() : memref<4x8xf32>
  %sum = memref.alloc() : memref<4x8xf32>
  %user = "hir.get_current_stream"() : () -> !hir.stream
  %s0 = "hir.get_stream"(%c0) : (index) -> !hir.stream
  "hir.set_current_stream"(%s0) : (!hir.stream) -> ()
  "hir.synchronize"(%user) : (!hir.stream) -> ()
  "hir.matmul"(%a, %arg1, %out) : (memref<4x8xf32>, memref<8x8xf32>, memref<4x8xf32>) -> ()
  "hir.set_current_stream"(%user) : (!hir.stream) -> ()
  "hir.set"(%b, %copy) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  "hir.binary"(%copy, %copy, %sum) {kind = "add"} : (memref<4x8xf32>, memref<4x8xf32>, memref<4x8xf32>) -> ()
  "hir.for"(%c0, %c1, %c1) ({
  ^bb0(%s: index):
    %stream = "hir.get_stream"(%s) : (index) -> !hir.stream
    "hir.synchronize"(%stream) : (!hir.stream) -> ()
    "hir.yield"() : () -> ()
  }) {hir.joins_pool_streams} : (index, index, index) -> ()
  return %out, %sum : memref<4x8xf32>, memref<4x8xf32>
}
