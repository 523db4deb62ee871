// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline)' | FileCheck %s
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{algorithm=ring streams=4})' | FileCheck %s --check-prefix=RING
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline,hir-lower)' | FileCheck %s --check-prefix=LOWER
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{copies=2})' | FileCheck %s --check-prefix=COPIES
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{chunks=2})' | FileCheck %s --check-prefix=CHUNKS
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{chunks=2},hir-lower)' | FileCheck %s --check-prefix=CHUNKS-LOWER
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-lower)' | FileCheck %s --check-prefix=PLAIN
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{transfer=push})' | FileCheck %s --check-prefix=PUSH
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{transfer=push chunks=2},hir-lower)' | FileCheck %s --check-prefix=PUSH-CHUNKS
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{algorithm=ring transfer=push chunks=2 copies=2})' | FileCheck %s --check-prefix=PUSH-RING

// nvFuser AG_matmul_P2p: A [4, 2, 8] split along the device axis, which is also the stream
// axis. The local shard is published once into a symmetric buffer, then one barrier; step
// 0 (own shard, read in place through hir.own_block: no copy before it) runs on pool stream 0; steps 1..3 shift one peer's shard each
// on the user stream without handshakes, and the matmul of a step waits for its own shift.
// CHECK-LABEL: func.func @ag_matmul
// CHECK-NOT: hir.allgather
// CHECK: %[[ME:[^ ,)]+]] = "hir.device_index"() {mesh = array<i64: 0, 1, 2, 3>} : () -> index
// CHECK: %[[USER:[^ ,)]+]] = "hir.get_current_stream"
// CHECK: "hir.for"
// CHECK: "hir.synchronize"(%[[USER]])
// CHECK: "hir.set_current_stream"(%[[USER]])
// CHECK-NEXT: %[[STAGED:[^ ,)]+]] = memref.alloc() {hir.symmetric} : memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
// CHECK-NEXT: "hir.set"(%arg0, %[[STAGED]])
// CHECK-NEXT: %[[B:[^ ,)]+]] = "hir.barrier"() {backend = "cuda", team = array<i64: 0, 1, 2, 3>} : () -> !hir.work
// CHECK-NEXT: "hir.wait"(%[[B]])
// CHECK-NEXT: %[[S0:[^ ,)]+]] = "hir.get_stream"(%[[C0:[^ ,)]+]])
// CHECK-NEXT: "hir.set_current_stream"(%[[S0]])
// CHECK-NEXT: %[[T0:[^ ,)]+]] = "hir.own_block"(%arg0) {axis = 0 : i64}
// CHECK-NOT: "hir.shift"
// CHECK-NEXT: %[[O0:[^ ,)]+]] = "hir.alias_select"(%{{.*}}, %[[ME]]) {axis = 0 : i64}
// CHECK-NEXT: "hir.matmul"(%[[T0]], %arg1, %[[O0]])
// CHECK-NEXT: "hir.set_current_stream"(%[[USER]])
// CHECK-NEXT: "hir.for"(%[[C1:[^ ,)]+]], %[[C4:[^ ,)]+]], %[[C1]])
// CHECK-NEXT: ^bb0(%[[J:[^ ,)]+]]: index):
// CHECK-NEXT: %[[SUM:[^ ,)]+]] = arith.addi %[[ME]], %[[J]] : index
// CHECK-NEXT: %[[P:[^ ,)]+]] = arith.remui %[[SUM]], %[[C4]] : index
// CHECK-NEXT: %[[S:[^ ,)]+]] = "hir.get_stream"(%[[C0]])
// CHECK-NEXT: %[[T:[^ ,)]+]] = "hir.alias_select"(%{{.*}}, %[[P]]) {axis = 0 : i64}
// CHECK-NEXT: %[[W:[^ ,)]+]] = "hir.shift"(%[[STAGED]], %[[T]], %[[J]]) {backend = "cuda", signal = "none", team = array<i64: 0, 1, 2, 3>}
// CHECK-NEXT: "hir.set_current_stream"(%[[S]])
// CHECK-NEXT: "hir.wait"(%[[W]])
// CHECK-NEXT: %[[O:[^ ,)]+]] = "hir.alias_select"(%{{.*}}, %[[P]]) {axis = 0 : i64}
// CHECK-NEXT: "hir.matmul"(%[[T]], %arg1, %[[O]])
// CHECK-NOT: stream_axis
// CHECK-NEXT: "hir.set_current_stream"(%[[USER]])
// CHECK-NEXT: "hir.yield"
// CHECK: "hir.for"
// CHECK-NEXT: ^bb0(%[[K:[^ ,)]+]]: index):
// CHECK-NEXT: %[[SK:[^ ,)]+]] = "hir.get_stream"(%[[K]])
// CHECK-NEXT: "hir.synchronize"(%[[SK]])
// RING-LABEL: func.func @ag_matmul
// RING: "hir.matmul"
// RING: "hir.for"(%[[C1:[^ ,)]+]], %[[C4:[^ ,)]+]], %[[C1]])
// RING-NEXT: ^bb0(%[[J:[^ ,)]+]]: index):
// RING-NEXT: %[[OFF:[^ ,)]+]] = arith.subi %[[C4]], %[[J]] : index
// RING-NEXT: %[[SUM:[^ ,)]+]] = arith.addi %{{.*}}, %[[OFF]] : index
// RING-NEXT: arith.remui %[[SUM]], %[[C4]] : index
// RING-NEXT: "hir.get_stream"(%[[J]])
// RING: "hir.shift"(%{{.*}}, %{{.*}}, %[[OFF]])
// The symmetric buffer and the gathered one are freed after the pool streams are joined.
// LOWER-LABEL: func.func @ag_matmul
// LOWER: "hir.shift"
// LOWER: "hir.synchronize"
// LOWER-NEXT: "hir.yield"
// LOWER-NEXT: }) : (index, index, index) -> ()
// LOWER-NEXT: memref.dealloc
// LOWER-SAME: : memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
// LOWER-NEXT: memref.dealloc
// LOWER-SAME: : memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
// COPIES-LABEL: func.func @ag_matmul
// COPIES: "hir.shift"({{.*}}) {backend = "cuda", copies = 2 : i64, signal = "none", team
// chunks = 2: each peer's shard moves in two halves (rows of the shard, axis 1 of the
// staged buffer, axis 0 of a step's slice); each half's matmul waits for its own copy.
// The own shard (step 0) is not chunked: it needs no copy from a peer.
// CHUNKS-LABEL: func.func @ag_matmul
// CHUNKS: %[[STAGED:[^ ,)]+]] = memref.alloc() {hir.symmetric}
// CHUNKS: "hir.matmul"(%{{.*}}, %arg1, %{{.*}}) : (memref<2x8xf32
// CHUNKS: "hir.for"(%[[C1:[^ ,)]+]], %[[C4:[^ ,)]+]], %[[C1]])
// CHUNKS-NEXT: ^bb0(%[[J:[^ ,)]+]]: index):
// CHUNKS: %[[S:[^ ,)]+]] = "hir.get_stream"
// CHUNKS-NEXT: %[[T:[^ ,)]+]] = "hir.alias_select"(%{{.*}}, %{{.*}}) {axis = 0 : i64}
// CHUNKS-NEXT: "hir.for"(%[[C0:[^ ,)]+]], %[[C2:[^ ,)]+]], %[[C1]])
// CHUNKS-NEXT: ^bb0(%[[C:[^ ,)]+]]: index):
// CHUNKS-NEXT: %[[PART:[^ ,)]+]] = "hir.alias_chunk"(%[[STAGED]], %[[C]]) {axis = 1 : i64, chunks = 2 : i64} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, index) -> memref<4x1x8xf32, strided<[16, 8, 1], offset: ?>, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
// CHUNKS-NEXT: %[[TC:[^ ,)]+]] = "hir.alias_chunk"(%[[T]], %[[C]]) {axis = 0 : i64, chunks = 2 : i64} : (memref<2x8xf32, {{.*}}) -> memref<1x8xf32
// CHUNKS-NEXT: %[[W:[^ ,)]+]] = "hir.shift"(%[[PART]], %[[TC]], %[[J]]) {backend = "cuda", signal = "none", team = array<i64: 0, 1, 2, 3>}
// CHUNKS-NEXT: "hir.set_current_stream"(%[[S]])
// CHUNKS-NEXT: "hir.wait"(%[[W]])
// CHUNKS-NEXT: %[[O:[^ ,)]+]] = "hir.alias_select"(%{{.*}}, %{{.*}}) {axis = 0 : i64}
// CHUNKS-NEXT: %[[OC:[^ ,)]+]] = "hir.alias_chunk"(%[[O]], %[[C]]) {axis = 0 : i64, chunks = 2 : i64}
// CHUNKS-NEXT: "hir.matmul"(%[[TC]], %arg1, %[[OC]]) : (memref<1x8xf32
// The views keep the staged buffer alive until the join: it is freed after the last loop.
// Without hir-p2p-pipeline, hir-lower runs the P2P-form allgather whole (there is no
// per-slice collective of a split axis), then the matmul's stream loop.
// PLAIN-LABEL: func.func @ag_matmul
// PLAIN:      "hir.allgather"
// PLAIN-NOT:  stream_axis
// PLAIN-NEXT: "hir.wait"
// PLAIN:      "hir.for"
// PLAIN:      "hir.for"
// PLAIN:      "hir.matmul"
// PLAIN-NOT:  "hir.allgather"
// PLAIN:      return
// CHUNKS-LOWER-LABEL: func.func @ag_matmul
// CHUNKS-LOWER: "hir.alias_chunk"
// CHUNKS-LOWER: "hir.synchronize"
// CHUNKS-LOWER-NEXT: "hir.yield"
// CHUNKS-LOWER-NEXT: }) : (index, index, index) -> ()
// CHUNKS-LOWER-NEXT: memref.dealloc
// CHUNKS-LOWER-SAME: : memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
// transfer=push: no staging copy and no barrier; step j pushes the own shard (read in place
// through hir.own_block) into slot j - 1 of the symmetric %received (3 slots: the own shard
// needs none) of position me - j, which signals after the copy; the step's matmul waits for
// that signal from position me + j and reads its shard from our slot j - 1. The gathered
// buffer is gone.
// PUSH-LABEL: func.func @ag_matmul
// PUSH-NOT: memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
// PUSH: %[[ME:[^ ,)]+]] = "hir.device_index"()
// PUSH: %[[RECV:[^ ,)]+]] = memref.alloc() {hir.symmetric} : memref<3x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
// PUSH-NOT: "hir.set"
// PUSH-NOT: "hir.barrier"
// PUSH: %[[SHARD:[^ ,)]+]] = "hir.own_block"(%arg0) {axis = 0 : i64}
// PUSH: "hir.matmul"(%[[SHARD]], %arg1, %{{.*}})
// PUSH: "hir.for"(%[[C1:[^ ,)]+]], %[[C4:[^ ,)]+]], %[[C1]])
// PUSH-NEXT: ^bb0(%[[J:[^ ,)]+]]: index):
// PUSH-NEXT: %[[SUM:[^ ,)]+]] = arith.addi %[[ME]], %[[J]] : index
// PUSH-NEXT: %[[P:[^ ,)]+]] = arith.remui %[[SUM]], %[[C4]] : index
// PUSH-NEXT: %[[S:[^ ,)]+]] = "hir.get_stream"
// PUSH-NEXT: %[[K:[^ ,)]+]] = arith.subi %[[J]], %[[C1]] : index
// PUSH-NEXT: %[[SLOT:[^ ,)]+]] = "hir.alias_select"(%[[RECV]], %[[K]]) {axis = 0 : i64}
// PUSH-NEXT: %[[W:[^ ,)]+]] = "hir.shift"(%[[SHARD]], %[[SLOT]], %[[J]]) {backend = "cuda", team = array<i64: 0, 1, 2, 3>, transfer = "push"}
// PUSH-NEXT: "hir.set_current_stream"(%[[S]])
// PUSH-NEXT: "hir.wait"(%[[W]])
// PUSH-NEXT: %[[O:[^ ,)]+]] = "hir.alias_select"(%{{.*}}, %[[P]]) {axis = 0 : i64}
// PUSH-NEXT: "hir.matmul"(%[[SLOT]], %arg1, %[[O]])
// With chunks = 2 each push moves half the shard; the received buffer is freed after the join
// (its dealloc barrier guards the next run's pushes).
// PUSH-CHUNKS-LABEL: func.func @ag_matmul
// PUSH-CHUNKS: %[[RECV:[^ ,)]+]] = memref.alloc() {hir.symmetric}
// PUSH-CHUNKS: %[[SHARD:[^ ,)]+]] = "hir.own_block"(%arg0) {axis = 0 : i64}
// PUSH-CHUNKS: %[[SLOT:[^ ,)]+]] = "hir.alias_select"(%[[RECV]], %{{.*}}) {axis = 0 : i64}
// PUSH-CHUNKS: ^bb0(%[[C:[^ ,)]+]]: index):
// PUSH-CHUNKS-NEXT: %[[PART:[^ ,)]+]] = "hir.alias_chunk"(%[[SHARD]], %[[C]]) {axis = 0 : i64, chunks = 2 : i64}
// PUSH-CHUNKS-NEXT: %[[SLOTPART:[^ ,)]+]] = "hir.alias_chunk"(%[[SLOT]], %[[C]]) {axis = 0 : i64, chunks = 2 : i64}
// PUSH-CHUNKS-NEXT: "hir.shift"(%[[PART]], %[[SLOTPART]], %{{.*}}) {backend = "cuda", team = array<i64: 0, 1, 2, 3>, transfer = "push"}
// PUSH-CHUNKS: "hir.matmul"(%[[SLOTPART]], %arg1, %{{.*}})
// PUSH-CHUNKS: "hir.synchronize"
// PUSH-CHUNKS-NEXT: "hir.yield"
// PUSH-CHUNKS-NEXT: }) : (index, index, index) -> ()
// PUSH-CHUNKS-NEXT: memref.dealloc %[[RECV]]
// The ring: step j's offset is n - j; the slot is offset - 1 on both sides of the push.
// PUSH-RING-LABEL: func.func @ag_matmul
// PUSH-RING: "hir.for"(%[[C1:[^ ,)]+]], %[[C4:[^ ,)]+]], %[[C1]])
// PUSH-RING-NEXT: ^bb0(%[[J:[^ ,)]+]]: index):
// PUSH-RING-NEXT: %[[OFF:[^ ,)]+]] = arith.subi %[[C4]], %[[J]] : index
// PUSH-RING: %[[K:[^ ,)]+]] = arith.subi %[[OFF]], %[[C1]] : index
// PUSH-RING-NEXT: %[[SLOT:[^ ,)]+]] = "hir.alias_select"(%{{.*}}, %[[K]]) {axis = 0 : i64}
// PUSH-RING: "hir.shift"(%{{.*}}, %{{.*}}, %[[OFF]]) {backend = "cuda", copies = 2 : i64, team = array<i64: 0, 1, 2, 3>, transfer = "push"}
func.func @ag_matmul(%a: memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %b: memref<8x5xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> memref<4x2x5xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>> {
  %tmp = memref.alloc() : memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  %out = memref.alloc() : memref<4x2x5xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.set"(%a, %tmp) {stream_axis = 0 : i64} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  "hir.matmul"(%tmp, %b, %out) {stream_axis = 0 : i64} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<8x5xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<4x2x5xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  return %out : memref<4x2x5xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
}

// -----

// The reduce-scatter mirror: partial [4 (destination), 4 (device), 2, 3] split on the
// device axis, reduce-scattered along the stream axis. Step j computes the slice for
// position (me - j) mod 4 into slot j of a symmetric buffer, the user stream waits for it
// and shifts it; the own slice is computed last into slot 0 of %recv, then one reduction.
// CHECK-LABEL: func.func @matmul_rs
// CHECK-NOT: hir.reduce_scatter
// CHECK: %[[ME:[^ ,)]+]] = "hir.device_index"
// CHECK: %[[USER:[^ ,)]+]] = "hir.get_current_stream"
// CHECK: %[[SLOTS:[^ ,)]+]] = memref.alloc() {hir.symmetric} : memref<4x4x2x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
// CHECK-NEXT: %[[RECV:[^ ,)]+]] = memref.alloc() : memref<4x4x2x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
// CHECK-NEXT: "hir.for"(%[[C1:[^ ,)]+]], %[[C4:[^ ,)]+]], %[[C1]])
// CHECK-NEXT: ^bb0(%[[J:[^ ,)]+]]: index):
// CHECK-NEXT: %[[S:[^ ,)]+]] = "hir.get_stream"
// CHECK-NEXT: "hir.set_current_stream"(%[[S]])
// CHECK-NEXT: %[[SLOT:[^ ,)]+]] = "hir.alias_select"(%[[SLOTS]], %[[J]]) {axis = 0 : i64}
// CHECK-NEXT: %[[UP:[^ ,)]+]] = arith.addi %[[ME]], %[[C4]] : index
// CHECK-NEXT: %[[DOWN:[^ ,)]+]] = arith.subi %[[UP]], %[[J]] : index
// CHECK-NEXT: %[[P:[^ ,)]+]] = arith.remui %[[DOWN]], %[[C4]] : index
// CHECK-NEXT: %[[AP:[^ ,)]+]] = "hir.alias_select"(%arg0, %[[P]]) {axis = 0 : i64}
// CHECK-NEXT: %[[W0:[^ ,)]+]] = "hir.alias_select"(%arg1, %{{.*}}) {axis = 0 : i64}
// CHECK-NEXT: "hir.matmul"(%[[AP]], %[[W0]], %[[SLOT]])
// CHECK-NEXT: "hir.set_current_stream"(%[[USER]])
// CHECK-NEXT: "hir.synchronize"(%[[S]])
// CHECK-NEXT: %[[INTO:[^ ,)]+]] = "hir.alias_select"(%[[RECV]], %[[J]]) {axis = 0 : i64}
// CHECK-NEXT: %[[W:[^ ,)]+]] = "hir.shift"(%[[SLOT]], %[[INTO]], %[[J]]) {backend = "cuda", team = array<i64: 0, 1, 2, 3>}
// CHECK-NEXT: "hir.wait"(%[[W]])
// CHECK: "hir.set_current_stream"
// CHECK-NEXT: %[[OWN:[^ ,)]+]] = "hir.alias_select"(%[[RECV]], %{{.*}}) {axis = 0 : i64}
// CHECK-NEXT: %[[AME:[^ ,)]+]] = "hir.alias_select"(%arg0, %[[ME]]) {axis = 0 : i64}
// CHECK: "hir.matmul"(%[[AME]], %{{.*}}, %[[OWN]])
// CHECK: "hir.reduction"(%[[RECV]], %{{.*}}) {axes = array<i64: 0>, kind = "sum"}
// RING-LABEL: func.func @matmul_rs
// RING: memref.alloc() {hir.symmetric}
// RING: ^bb0(%[[J:[^ ,)]+]]: index):
// RING-NEXT: %[[OFF:[^ ,)]+]] = arith.subi %{{.*}}, %[[J]] : index
// RING-NEXT: %[[S:[^ ,)]+]] = "hir.get_stream"(%[[J]])
// RING: "hir.shift"(%{{.*}}, %{{.*}}, %[[OFF]])
// LOWER-LABEL: func.func @matmul_rs
// LOWER: "hir.reduction"
// LOWER-NEXT: memref.dealloc
// COPIES-LABEL: func.func @matmul_rs
// COPIES: "hir.shift"({{.*}}) {backend = "cuda", copies = 2 : i64, team
// chunks = 2, chunk by chunk: for each half of the rows, steps 1..3 compute and shift
// that half of one slot, the own half goes into %recv[0], and the half's reduction runs on
// pool stream 1 (past the compute stream) while the next half is copied and computed.
// CHUNKS-LABEL: func.func @matmul_rs
// CHUNKS: %[[USER:[^ ,)]+]] = "hir.get_current_stream"
// CHUNKS: %[[SLOTS:[^ ,)]+]] = memref.alloc() {hir.symmetric}
// CHUNKS-NEXT: %[[RECV:[^ ,)]+]] = memref.alloc()
// CHUNKS-NEXT: %[[RED:[^ ,)]+]] = "hir.get_stream"(%[[C1:[^ ,)]+]])
// CHUNKS-NEXT: "hir.for"(%[[C0:[^ ,)]+]], %[[C2:[^ ,)]+]], %[[C1]])
// CHUNKS-NEXT: ^bb0(%[[C:[^ ,)]+]]: index):
// CHUNKS-NEXT: "hir.for"(%[[C1]], %[[C4:[^ ,)]+]], %[[C1]])
// CHUNKS-NEXT: ^bb0(%[[J:[^ ,)]+]]: index):
// CHUNKS: %[[SLOT:[^ ,)]+]] = "hir.alias_select"(%[[SLOTS]], %[[J]]) {axis = 0 : i64}
// CHUNKS-NEXT: %[[HALF:[^ ,)]+]] = "hir.alias_chunk"(%[[SLOT]], %[[C]]) {axis = 1 : i64, chunks = 2 : i64}
// CHUNKS: %[[AC:[^ ,)]+]] = "hir.alias_chunk"(%{{.*}}, %[[C]]) {axis = 1 : i64, chunks = 2 : i64}
// CHUNKS-NEXT: "hir.matmul"(%[[AC]], %{{.*}}, %[[HALF]])
// CHUNKS: %[[INTO:[^ ,)]+]] = "hir.alias_select"(%[[RECV]], %[[J]]) {axis = 0 : i64}
// CHUNKS-NEXT: %[[INTOC:[^ ,)]+]] = "hir.alias_chunk"(%[[INTO]], %[[C]])
// CHUNKS-NEXT: "hir.shift"(%[[HALF]], %[[INTOC]], %[[J]])
// CHUNKS: "hir.matmul"
// CHUNKS: "hir.set_current_stream"(%[[RED]])
// CHUNKS-NEXT: "hir.synchronize"(%[[USER]])
// CHUNKS-NEXT: %[[S0:[^ ,)]+]] = "hir.get_stream"(%[[C0]])
// CHUNKS-NEXT: "hir.synchronize"(%[[S0]])
// CHUNKS-NEXT: %[[PARTS:[^ ,)]+]] = "hir.alias_chunk"(%[[RECV]], %[[C]]) {axis = 2 : i64, chunks = 2 : i64} : (memref<4x4x2x3xf32, {{.*}}>, index) -> memref<4x4x1x3xf32
// CHUNKS-NEXT: %[[OUT:[^ ,)]+]] = "hir.alias_chunk"(%{{.*}}, %[[C]]) {axis = 1 : i64, chunks = 2 : i64} : (memref<4x2x3xf32, {{.*}}>, index) -> memref<4x1x3xf32
// CHUNKS-NEXT: "hir.reduction"(%[[PARTS]], %[[OUT]]) {axes = array<i64: 0>, kind = "sum"}
// CHUNKS-NEXT: "hir.set_current_stream"(%[[USER]])
// CHUNKS-NEXT: "hir.yield"
// CHUNKS: "hir.synchronize"(%[[RED]])
// PLAIN-LABEL: func.func @matmul_rs
// PLAIN:      "hir.for"
// PLAIN:      "hir.for"
// PLAIN:      "hir.matmul"
// PLAIN:      }) : (index, index, index) -> ()
// PLAIN:      "hir.reduce_scatter"
// PLAIN-NOT:  stream_axis
// PLAIN-NEXT: "hir.wait"
// PLAIN-NEXT: memref.dealloc
// CHUNKS-LOWER-LABEL: func.func @matmul_rs
// CHUNKS-LOWER: "hir.reduction"
// CHUNKS-LOWER: "hir.for"
// CHUNKS-LOWER: }) : (index, index, index) -> ()
// CHUNKS-LOWER-NEXT: "hir.synchronize"
// CHUNKS-LOWER-NEXT: memref.dealloc
func.func @matmul_rs(%a: memref<4x4x2x2xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, %w: memref<1x4x2x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> memref<4x2x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>> {
  %partial = memref.alloc() : memref<4x4x2x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  "hir.matmul"(%a, %w, %partial) {stream_axis = 0 : i64} : (memref<4x4x2x2xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<1x4x2x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<4x4x2x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> ()
  %out = memref.alloc() : memref<4x2x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
  "hir.reduction"(%partial, %out) {axes = array<i64: 1>, kind = "sum", stream_axis = 0 : i64} : (memref<4x4x2x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<4x2x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> ()
  return %out : memref<4x2x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
}

// -----

// The gathered buffer is also read later inside a loop (nested, not an op of the block):
// the steps fill it, own block included (a local shift at offset 0), and with
// transfer=push the all-gather keeps pulling (pushed shards would land in slots only).
// PUSH-LABEL: func.func @ag_matmul_gathered_read_in_a_loop
// PUSH: %[[STAGED:[^ ,)]+]] = memref.alloc() {hir.symmetric} : memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
// PUSH: "hir.shift"(%arg0, %{{.*}}, %{{.*}}) {backend = "cuda", team = array<i64: 0, 1, 2, 3>}
// PUSH: "hir.shift"(%[[STAGED]], %{{.*}}, %{{.*}}) {backend = "cuda", signal = "none", team = array<i64: 0, 1, 2, 3>}
// PUSH-NOT: transfer
// PUSH: "hir.set"(%{{.*}}, %{{.*}}) : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
func.func @ag_matmul_gathered_read_in_a_loop(%a: memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %b: memref<8x5xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> (memref<4x2x5xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) {
  %tmp = memref.alloc() : memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  %out = memref.alloc() : memref<4x2x5xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  %copy = memref.alloc() : memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.set"(%a, %tmp) {stream_axis = 0 : i64} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  "hir.matmul"(%tmp, %b, %out) {stream_axis = 0 : i64} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<8x5xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<4x2x5xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "hir.for"(%c0, %c1, %c1) ({
  ^bb0(%i: index):
    "hir.set"(%tmp, %copy) : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
    "hir.yield"() : () -> ()
  }) : (index, index, index) -> ()
  return %out, %copy : memref<4x2x5xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
}
