// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline)' | FileCheck %s
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{algorithm=ring})' | FileCheck %s --check-prefix=RING

// nvFuser AG_matmul_P2p: A [4, 2, 8] split along the device axis, which is also the stream
// axis: one step per peer, local shard first, hir.shift + wait then the matmul of the slice.
// CHECK-LABEL: func.func @ag_matmul
// CHECK-NOT: hir.allgather
// CHECK: %[[ME:.*]] = "hir.device_index"() {mesh = array<i64: 0, 1, 2, 3>} : () -> index
// CHECK: %[[USER:.*]] = "hir.get_current_stream"
// CHECK: "hir.for"
// CHECK: "hir.synchronize"(%[[USER]])
// CHECK: "hir.for"
// CHECK-NEXT: ^bb0(%[[J:.*]]: index):
// CHECK-NEXT: %[[S:.*]] = "hir.get_stream"(%[[J]])
// CHECK-NEXT: "hir.set_current_stream"(%[[S]])
// CHECK-NEXT: %[[SUM:.*]] = arith.addi %[[ME]], %[[J]] : index
// CHECK-NEXT: %[[P:.*]] = arith.remui %[[SUM]], %{{.*}} : index
// CHECK-NEXT: %[[T:.*]] = "hir.alias_select"(%{{.*}}, %[[P]]) {axis = 0 : i64}
// CHECK-NEXT: %[[W:.*]] = "hir.shift"(%arg0, %[[T]], %[[J]]) {backend = "cuda", team = array<i64: 0, 1, 2, 3>}
// CHECK-NEXT: "hir.wait"(%[[W]])
// CHECK-NEXT: %[[O:.*]] = "hir.alias_select"(%{{.*}}, %[[P]]) {axis = 0 : i64}
// CHECK-NEXT: "hir.matmul"(%[[T]], %arg1, %[[O]])
// CHECK-NOT: stream_axis
// CHECK-NEXT: "hir.set_current_stream"(%[[USER]])
// CHECK-NEXT: "hir.synchronize"(%[[S]])
// RING-LABEL: func.func @ag_matmul
// RING: %[[D:.*]] = arith.subi %{{.*}}, %[[J:.*]] : index
// RING-NEXT: %[[OFF:.*]] = arith.remui %[[D]], %{{.*}} : index
// RING-NEXT: arith.addi %{{.*}}, %[[OFF]] : index
// RING: "hir.shift"(%arg0, %{{.*}}, %[[OFF]])
func.func @ag_matmul(%a: memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %b: memref<8x5xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> memref<4x2x5xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>> {
  %tmp = memref.alloc() : memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  %out = memref.alloc() : memref<4x2x5xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.set"(%a, %tmp) {stream_axis = 0 : i64} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  "hir.matmul"(%tmp, %b, %out) {stream_axis = 0 : i64} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<8x5xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<4x2x5xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  return %out : memref<4x2x5xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
}
