// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-schedule-data-parallel{defer-waits=1})' | FileCheck %s
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-schedule-data-parallel)' | FileCheck %s --check-prefix=PLAIN
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-schedule-data-parallel{defer-waits=1 prefetch=1})' | FileCheck %s --check-prefix=PREFETCH
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-schedule-data-parallel{bucket-bytes=48})' | FileCheck %s --check-prefix=BUCKET
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-schedule-data-parallel{optimizer-in-backward=1},hir-insert-deallocations)' | FileCheck %s --check-prefix=EARLY

// A gradient's reduce-scatter is issued as soon as the gradient exists and waited only
// before the update reads the scattered rows: the backward of the layer before it (a
// kernel on other buffers) runs while it is in flight. Off: waited at once.
// CHECK-LABEL: func.func @early_reduce_scatter
// CHECK:       %[[W:.*]] = "hir.reduce_scatter"(%arg0, %[[G:.*]]) {{.*}} -> !hir.work
// CHECK-NEXT:  "hir.binary"(%arg2, %arg2, %arg3) {kind = "mul"}
// CHECK-NEXT:  "hir.wait"(%[[W]])
// CHECK-NEXT:  "hir.binary"(%arg1, %[[G]], %arg1) {kind = "sub"}
// PLAIN-LABEL: func.func @early_reduce_scatter
// PLAIN:       "hir.reduce_scatter"
// PLAIN-NEXT:  "hir.wait"
func.func @early_reduce_scatter(%arg0: memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %arg1: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>,
                                %arg2: memref<4xf32>, %arg3: memref<4xf32>) {
  %g = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
  %w = "hir.reduce_scatter"(%arg0, %g) {axis = 0 : i64, backend = "gloo", reduction = "sum", scatter_axis = 1 : i64, team = array<i64: 0, 1>} : (memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> !hir.work
  "hir.wait"(%w) : (!hir.work) -> ()
  "hir.binary"(%arg2, %arg2, %arg3) {kind = "mul"} : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  "hir.binary"(%arg1, %g, %arg1) {kind = "sub"} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
  return
}

// -----

// A gathered parameter is waited before its first reader, here a view of it; an op that
// writes the buffer the all-gather reads (the update of the shard) also waits.
// CHECK-LABEL: func.func @gather_waited_before_a_view
// CHECK:       %[[W:.*]] = "hir.allgather"(%arg0, %[[P:.*]]) {{.*}} -> !hir.work
// CHECK-NEXT:  "hir.binary"(%arg1, %arg1, %arg1) {kind = "add"}
// CHECK-NEXT:  "hir.wait"(%[[W]])
// CHECK-NEXT:  "hir.alias_reshape"(%[[P]])
// CHECK:       %[[W2:.*]] = "hir.allgather"(%arg0, %{{.*}}) {{.*}} -> !hir.work
// CHECK-NEXT:  "hir.wait"(%[[W2]])
// CHECK-NEXT:  "hir.binary"(%arg0, %arg0, %arg0) {kind = "add"}
func.func @gather_waited_before_a_view(%arg0: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %arg1: memref<4xf32>) -> memref<32xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>> {
  %p = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
  %w = "hir.allgather"(%arg0, %p) {axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  "hir.wait"(%w) : (!hir.work) -> ()
  "hir.binary"(%arg1, %arg1, %arg1) {kind = "add"} : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  %v = "hir.alias_reshape"(%p) {reassociation = [[0, 1]]} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> memref<32xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
  %q = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
  %w2 = "hir.allgather"(%arg0, %q) {axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  "hir.wait"(%w2) : (!hir.work) -> ()
  "hir.binary"(%arg0, %arg0, %arg0) {kind = "add"} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
  return %v : memref<32xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
}

// -----

// Prefetch: each parameter's all-gather is issued where the parameter before it is first
// read (one layer ahead: p2's is in flight while p1's layer runs), its wait at its own first
// reader; the first two are in flight from the top. A prefetched gather runs on the comm
// stream (the pool's last, high priority): the comm stream waits for the user stream's work
// so far (the shard written), the gather is issued, the user stream is current again, and
// the user stream's hir.wait is where the gathered parameter's readers start.
// PREFETCH:       module attributes {hir.high_priority_streams = array<i64: 3>}
// PREFETCH-LABEL: func.func @prefetch_next_layer
// PREFETCH:       %[[W0:.*]] = "hir.allgather"(%arg0
// PREFETCH-NEXT:  %[[P1:.*]] = memref.alloc
// PREFETCH-NEXT:  %[[U1:.*]] = "hir.get_current_stream"()
// PREFETCH-NEXT:  %[[C1:.*]] = arith.constant 3 : index
// PREFETCH-NEXT:  %[[S1:.*]] = "hir.get_stream"(%[[C1]])
// PREFETCH-NEXT:  "hir.set_current_stream"(%[[S1]])
// PREFETCH-NEXT:  "hir.synchronize"(%[[U1]])
// PREFETCH-NEXT:  %[[W1:.*]] = "hir.allgather"(%arg1, %[[P1]])
// PREFETCH-NEXT:  "hir.set_current_stream"(%[[U1]])
// PREFETCH-NEXT:  "hir.wait"(%[[W0]])
// PREFETCH-NEXT:  "hir.binary"(%alloc, %arg3, %arg3)
// PREFETCH-NEXT:  %[[P2:.*]] = memref.alloc
// PREFETCH-NEXT:  %[[U2:.*]] = "hir.get_current_stream"()
// PREFETCH-NEXT:  %[[C2:.*]] = arith.constant 3 : index
// PREFETCH-NEXT:  %[[S2:.*]] = "hir.get_stream"(%[[C2]])
// PREFETCH-NEXT:  "hir.set_current_stream"(%[[S2]])
// PREFETCH-NEXT:  "hir.synchronize"(%[[U2]])
// PREFETCH-NEXT:  %[[W2:.*]] = "hir.allgather"(%arg2, %[[P2]])
// PREFETCH-NEXT:  "hir.set_current_stream"(%[[U2]])
// PREFETCH-NEXT:  "hir.wait"(%[[W1]])
// PREFETCH-NEXT:  "hir.binary"(%[[P1]], %arg3, %arg3)
// PREFETCH-NEXT:  "hir.wait"(%[[W2]])
// PREFETCH-NEXT:  "hir.binary"(%[[P2]], %arg3, %arg3)
// PLAIN-LABEL: func.func @prefetch_next_layer
// PLAIN-COUNT-3: "hir.wait"
// PLAIN-NEXT:  "hir.binary"
func.func @prefetch_next_layer(%arg0: memref<16x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %arg1: memref<16x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %arg2: memref<16x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %arg3: memref<16x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) {
  %p0 = memref.alloc() : memref<16x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
  %w0 = "hir.allgather"(%arg0, %p0) {axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1>} : (memref<16x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<16x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  "hir.wait"(%w0) : (!hir.work) -> ()
  %p1 = memref.alloc() : memref<16x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
  %w1 = "hir.allgather"(%arg1, %p1) {axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1>} : (memref<16x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<16x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  "hir.wait"(%w1) : (!hir.work) -> ()
  %p2 = memref.alloc() : memref<16x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
  %w2 = "hir.allgather"(%arg2, %p2) {axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1>} : (memref<16x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<16x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  "hir.wait"(%w2) : (!hir.work) -> ()
  "hir.binary"(%p0, %arg3, %arg3) {kind = "mul"} : (memref<16x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<16x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<16x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
  "hir.binary"(%p1, %arg3, %arg3) {kind = "mul"} : (memref<16x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<16x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<16x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
  "hir.binary"(%p2, %arg3, %arg3) {kind = "mul"} : (memref<16x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<16x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<16x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
  return
}

// -----

// Buckets of at most 48 bytes: the two small gradients' all-reduces (16 and 32 bytes) go as
// one all-reduce of a [2, 12] bucket, placed where the second was: each device's rows copied
// into the bucket's columns, the bucket reduced and waited, each gradient's columns copied
// out. The 256-byte gradient does not fit and keeps its own all-reduce.
// BUCKET-LABEL: func.func @bucket
// BUCKET:       %[[R0:.*]] = memref.alloc() : memref<4xf32
// BUCKET-NEXT:  %[[R1:.*]] = memref.alloc() : memref<2x4xf32
// BUCKET-NEXT:  %[[IN:.*]] = memref.alloc() : memref<2x12xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
// BUCKET-NEXT:  %[[C0:.*]] = memref.subview %[[IN]][0, 0] [2, 4] [1, 1]
// BUCKET-NEXT:  "hir.set"(%arg0, %[[C0]])
// BUCKET-NEXT:  %[[G1:.*]] = "hir.alias_reshape"(%arg1) {reassociation = {{\[\[}}0], [1, 2]]}
// BUCKET-NEXT:  %[[C1:.*]] = memref.subview %[[IN]][0, 4] [2, 8] [1, 1]
// BUCKET-NEXT:  "hir.set"(%[[G1]], %[[C1]])
// BUCKET-NEXT:  %[[OUT:.*]] = memref.alloc() : memref<12xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
// BUCKET-NEXT:  %[[W:.*]] = "hir.allreduce"(%[[IN]], %[[OUT]]) {axis = 0 : i64, backend = "gloo", reduction = "sum", team = array<i64: 0, 1>}
// BUCKET-NEXT:  "hir.wait"(%[[W]])
// BUCKET-NEXT:  %[[O0:.*]] = memref.subview %[[OUT]][0] [4] [1]
// BUCKET-NEXT:  "hir.set"(%[[O0]], %[[R0]])
// BUCKET-NEXT:  %[[O1:.*]] = memref.subview %[[OUT]][4] [8] [1]
// BUCKET-NEXT:  %[[F1:.*]] = "hir.alias_reshape"(%[[R1]])
// BUCKET-NEXT:  "hir.set"(%[[O1]], %[[F1]])
// BUCKET:       "hir.allreduce"(%arg2
// BUCKET-NOT:   "hir.allreduce"
// PLAIN-LABEL:  func.func @bucket
// PLAIN-COUNT-3: "hir.allreduce"
func.func @bucket(%g0: memref<2x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %g1: memref<2x2x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %g2: memref<2x64xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>,
                  %p0: memref<4xf32>, %p1: memref<2x4xf32>, %p2: memref<64xf32>) {
  %r0 = memref.alloc() : memref<4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
  %w0 = "hir.allreduce"(%g0, %r0) {axis = 0 : i64, backend = "gloo", reduction = "sum", team = array<i64: 0, 1>} : (memref<2x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  "hir.wait"(%w0) : (!hir.work) -> ()
  %r1 = memref.alloc() : memref<2x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
  %w1 = "hir.allreduce"(%g1, %r1) {axis = 0 : i64, backend = "gloo", reduction = "sum", team = array<i64: 0, 1>} : (memref<2x2x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<2x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  "hir.wait"(%w1) : (!hir.work) -> ()
  %r2 = memref.alloc() : memref<64xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
  %w2 = "hir.allreduce"(%g2, %r2) {axis = 0 : i64, backend = "gloo", reduction = "sum", team = array<i64: 0, 1>} : (memref<2x64xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<64xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  "hir.wait"(%w2) : (!hir.work) -> ()
  return
}

// -----

// Optimizer in the backward: the update (everything after the last collective's wait) moves
// up op by op to just after what it depends on: layer 1's update of its shard (%arg2) runs
// right after its gradient's reduce-scatter is waited, before the backward of layer 0 (the
// kernel on %arg4) and its reduce-scatter, and the gradient is freed there. Layer 0's update
// waits for its own gradient. Off (PLAIN): both updates after the last wait.
// EARLY-LABEL: func.func @update_in_backward
// EARLY:       %[[G1:.*]] = memref.alloc
// EARLY-NEXT:  %[[W1:.*]] = "hir.reduce_scatter"(%arg0, %[[G1]])
// EARLY-NEXT:  "hir.wait"(%[[W1]])
// EARLY-NEXT:  %[[S1:.*]] = memref.alloc
// EARLY-NEXT:  "hir.binary"(%[[G1]], %[[G1]], %[[S1]]) {kind = "mul"}
// EARLY-NEXT:  memref.dealloc %[[G1]]
// EARLY-NEXT:  "hir.binary"(%arg2, %[[S1]], %arg2) {kind = "sub"}
// EARLY-NEXT:  memref.dealloc %[[S1]]
// EARLY-NEXT:  "hir.binary"(%arg4, %arg4, %arg4) {kind = "mul"}
// EARLY-NEXT:  %[[G0:.*]] = memref.alloc
// EARLY-NEXT:  %[[W0:.*]] = "hir.reduce_scatter"(%arg1, %[[G0]])
// EARLY-NEXT:  "hir.wait"(%[[W0]])
// EARLY-NEXT:  "hir.binary"(%arg3, %[[G0]], %arg3) {kind = "sub"}
// PLAIN-LABEL: func.func @update_in_backward
// PLAIN:       "hir.reduce_scatter"
// PLAIN:       "hir.reduce_scatter"
// PLAIN-NEXT:  "hir.wait"
// PLAIN-NEXT:  memref.alloc
// PLAIN-NEXT:  "hir.binary"(%alloc, %alloc
func.func @update_in_backward(%partial1: memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %partial0: memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>,
                              %p1: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %p0: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %x: memref<4xf32>) {
  %g1 = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
  %w1 = "hir.reduce_scatter"(%partial1, %g1) {axis = 0 : i64, backend = "gloo", reduction = "sum", scatter_axis = 1 : i64, team = array<i64: 0, 1>} : (memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> !hir.work
  "hir.wait"(%w1) : (!hir.work) -> ()
  "hir.binary"(%x, %x, %x) {kind = "mul"} : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  %g0 = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
  %w0 = "hir.reduce_scatter"(%partial0, %g0) {axis = 0 : i64, backend = "gloo", reduction = "sum", scatter_axis = 1 : i64, team = array<i64: 0, 1>} : (memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> !hir.work
  "hir.wait"(%w0) : (!hir.work) -> ()
  %s1 = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
  "hir.binary"(%g1, %g1, %s1) {kind = "mul"} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
  "hir.binary"(%p1, %s1, %p1) {kind = "sub"} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
  "hir.binary"(%p0, %g0, %p0) {kind = "sub"} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
  return
}
