// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-schedule-data-parallel{bucket-bytes=256})' | FileCheck %s
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-schedule-data-parallel)' | FileCheck %s --check-prefix=PLAIN
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-schedule-data-parallel{defer-waits=1 prefetch=1 bucket-bytes=256})' | FileCheck %s --check-prefix=PREFETCH

// Buckets of at most 256 bytes, fully sharded on 4 devices: the gathers of two small
// parameters (an [8, 4] and a [4, 4] shard: 128 and 64 bytes whole) go as one all-gather of
// a [4, 12] bucket where the first was: each shard copied in as one row of its device's
// elements (8 and 4 columns), the bucket gathered, and each parameter copied out of its
// columns right before its first reader, into its own buffer (allocated there). The
// 1024-byte parameter keeps its own gather.
// CHECK-LABEL: func.func @gathers
// CHECK:       "hir.allgather"(%arg2
// CHECK:       %[[IN:.*]] = memref.alloc() : memref<4x12xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
// CHECK-NEXT:  %[[F0:.*]] = "hir.alias_reshape"(%arg0) {reassociation = {{\[\[}}0, 1]]} {{.*}} -> memref<32xf32
// CHECK-NEXT:  %[[R0:.*]] = "hir.alias_reshape"(%[[F0]]) {reassociation = {{\[\[}}0, 1]]} {{.*}} -> memref<4x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
// CHECK-NEXT:  %[[C0:.*]] = memref.subview %[[IN]][0, 0] [4, 8] [1, 1]
// CHECK-NEXT:  "hir.set"(%[[R0]], %[[C0]])
// CHECK:       %[[C1:.*]] = memref.subview %[[IN]][0, 8] [4, 4] [1, 1]
// CHECK-NEXT:  "hir.set"(%{{.*}}, %[[C1]])
// CHECK-NEXT:  %[[OUT:.*]] = memref.alloc() : memref<4x12xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
// CHECK-NEXT:  %[[W:.*]] = "hir.allgather"(%[[IN]], %[[OUT]]) {axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1, 2, 3>}
// CHECK-NEXT:  "hir.wait"(%[[W]])
// CHECK:       %[[P0:.*]] = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
// CHECK-NEXT:  %[[O0:.*]] = memref.subview %[[OUT]][0, 0] [4, 8] [1, 1]
// CHECK:       "hir.set"(%[[O0]], %{{.*}})
// CHECK-NEXT:  "hir.binary"(%[[P0]], %[[P0]], %arg3) {kind = "add"}
// CHECK-NEXT:  %[[P1:.*]] = memref.alloc() : memref<4x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
// CHECK-NEXT:  %[[O1:.*]] = memref.subview %[[OUT]][0, 8] [4, 4] [1, 1]
// CHECK:       "hir.set"(%[[O1]], %{{.*}})
// CHECK-NEXT:  "hir.binary"(%[[P1]], %[[P1]], %arg4) {kind = "mul"}
// CHECK-NOT:   "hir.allgather"
// PLAIN-LABEL: func.func @gathers
// PLAIN-COUNT-3: "hir.allgather"(%arg
// Prefetched, the bucket is issued as a whole (its allocation and copies in with it) on the
// comm stream where the parameter gathered before it is first read.
// PREFETCH-LABEL: func.func @gathers
// PREFETCH:       %[[W2:.*]] = "hir.allgather"(%arg2
// PREFETCH:       "hir.synchronize"
// PREFETCH-NEXT:  %[[IN:.*]] = memref.alloc() : memref<4x12xf32
// PREFETCH-COUNT-2: "hir.set"
// PREFETCH:       %[[W:.*]] = "hir.allgather"(%[[IN]],
// PREFETCH-NEXT:  "hir.set_current_stream"
// PREFETCH-NEXT:  "hir.wait"(%[[W2]])
// PREFETCH-NEXT:  "hir.binary"(%{{.*}}, %{{.*}}, %arg5) {kind = "add"}
// PREFETCH-NEXT:  %{{.*}} = memref.alloc() : memref<8x4xf32
// PREFETCH-NEXT:  "hir.wait"(%[[W]])
func.func @gathers(%arg0: memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %arg1: memref<4x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>,
                   %arg2: memref<64x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %arg3: memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>,
                   %arg4: memref<4x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, %arg5: memref<64x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) {
  %p2 = memref.alloc() : memref<64x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  %w2 = "hir.allgather"(%arg2, %p2) {axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1, 2, 3>} : (memref<64x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<64x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> !hir.work
  "hir.wait"(%w2) : (!hir.work) -> ()
  %p0 = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  %w0 = "hir.allgather"(%arg0, %p0) {axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1, 2, 3>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> !hir.work
  "hir.wait"(%w0) : (!hir.work) -> ()
  %p1 = memref.alloc() : memref<4x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  %w1 = "hir.allgather"(%arg1, %p1) {axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1, 2, 3>} : (memref<4x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> !hir.work
  "hir.wait"(%w1) : (!hir.work) -> ()
  "hir.binary"(%p2, %p2, %arg5) {kind = "add"} : (memref<64x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<64x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<64x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  "hir.binary"(%p0, %p0, %arg3) {kind = "add"} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  "hir.binary"(%p1, %p1, %arg4) {kind = "mul"} : (memref<4x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<4x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<4x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  return
}

// -----

// Reduce-scatters of gradients' partial sums on 4 devices: an [8, 4] gradient (each
// device's partial sums in its row of axis 0), a [4, 1, 4] one whose partial sums are axis
// 1 of [4, 4, 1, 4] (the form of a weight gradient computed transposed) and a [1, 16] one
// scattered on its last axis (a norm weight's) go as one reduce-scatter of a [4, 4, 16]
// bucket where the last one was: each device's partial sums as [4 devices, c] rows
// (alias_stack_shards brings axis 1 out first), reduce-scattered on axis 1 into [4, 16],
// each gradient's columns copied out. What read the first gradient before the last was
// computed (the binary writing %arg6) now runs after the bucket; the op on other buffers
// (%arg7) stays where it was.
// CHECK-LABEL: func.func @scatters
// CHECK:       "hir.binary"(%arg7, %arg7, %arg7) {kind = "add"}
// CHECK:       "hir.binary"(%arg2, %arg2, %arg2) {kind = "mul"}
// CHECK:       "hir.alias_stack_shards"(%arg1) {at = 0 : i64, axis = 1 : i64}
// CHECK:       %[[IN:.*]] = memref.alloc() : memref<4x4x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
// CHECK:       %[[OUT:.*]] = memref.alloc() : memref<4x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
// CHECK-NEXT:  %[[W:.*]] = "hir.reduce_scatter"(%[[IN]], %[[OUT]]) {axis = 0 : i64, backend = "gloo", reduction = "sum", scatter_axis = 1 : i64, team = array<i64: 0, 1, 2, 3>}
// CHECK-NEXT:  "hir.wait"(%[[W]])
// CHECK-NEXT:  memref.subview %[[OUT]][0, 0] [4, 8] [1, 1]
// CHECK-NEXT:  "hir.set"
// CHECK-NEXT:  memref.subview %[[OUT]][0, 8] [4, 4] [1, 1]
// CHECK-NEXT:  "hir.set"
// CHECK-NEXT:  memref.subview %[[OUT]][0, 12] [4, 4] [1, 1]
// CHECK-NEXT:  "hir.set"
// CHECK-NEXT:  "hir.binary"(%{{.*}}, %{{.*}}, %arg6) {kind = "add"}
// CHECK-NOT:   "hir.reduce_scatter"
// PLAIN-LABEL: func.func @scatters
// PLAIN-COUNT-3: "hir.reduce_scatter"(%arg
func.func @scatters(%arg0: memref<4x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %arg1: memref<4x4x1x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>,
                    %arg2: memref<4x1x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %arg3: memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>,
                    %arg4: memref<4x1x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %arg5: memref<1x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>,
                    %arg6: memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %arg7: memref<4xf32>) {
  %g0 = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
  %w0 = "hir.reduce_scatter"(%arg0, %g0) {axis = 0 : i64, backend = "gloo", reduction = "sum", scatter_axis = 1 : i64, team = array<i64: 0, 1, 2, 3>} : (memref<4x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> !hir.work
  "hir.wait"(%w0) : (!hir.work) -> ()
  "hir.binary"(%g0, %g0, %arg6) {kind = "add"} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> ()
  "hir.binary"(%arg7, %arg7, %arg7) {kind = "add"} : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  %g1 = memref.alloc() : memref<4x1x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
  %w1 = "hir.reduce_scatter"(%arg1, %g1) {axis = 1 : i64, backend = "gloo", reduction = "sum", scatter_axis = 0 : i64, team = array<i64: 0, 1, 2, 3>} : (memref<4x4x1x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<4x1x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> !hir.work
  "hir.wait"(%w1) : (!hir.work) -> ()
  "hir.binary"(%arg2, %arg2, %arg2) {kind = "mul"} : (memref<4x1x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x1x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x1x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> ()
  %g2 = memref.alloc() : memref<1x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  %w2 = "hir.reduce_scatter"(%arg2, %g2) {axis = 0 : i64, backend = "gloo", reduction = "sum", scatter_axis = 2 : i64, team = array<i64: 0, 1, 2, 3>} : (memref<4x1x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<1x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> !hir.work
  "hir.wait"(%w2) : (!hir.work) -> ()
  "hir.binary"(%arg3, %g0, %arg3) {kind = "sub"} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> ()
  "hir.binary"(%arg4, %g1, %arg4) {kind = "sub"} : (memref<4x1x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x1x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x1x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> ()
  "hir.binary"(%arg5, %g2, %arg5) {kind = "sub"} : (memref<1x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<1x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<1x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> ()
  return
}
