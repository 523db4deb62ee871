// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{accumulate=1 chunks=2 comm-stream=1})' | FileCheck %s
// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{accumulate=1 transfer=push},hir-lower)' | FileCheck %s --check-prefix=PUSH
// RUN: hir-opt %s --print-value-names --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{accumulate=1 chunks=2 transfer=push comm-stream=1})' | FileCheck %s --check-prefix=PARTS

// hir-p2p-pipeline{accumulate=1}: the partial sums travel the ring (shift offset 1) and
// each rank adds its partial in the matmul's epilogue ({accumulate}); no slot reduction.
// Step 0 computes destination (me + 1) mod 4 into slot 0; steps 1..2 receive slot s - 1
// into slot s and accumulate; step 3 receives into the output and adds the own partial.
// Part c of every step runs on pool stream c; the shifts on the high-priority comm stream.
// CHECK: module attributes {hir.high_priority_streams = array<i64: 2>
// CHECK-LABEL: func.func @matmul_rs
// CHECK-NOT: hir.reduce_scatter
// CHECK-NOT: hir.reduction
// CHECK: %[[ME:[^ ,)]+]] = "hir.device_index"
// CHECK: %[[COMM:[^ ,)]+]] = "hir.get_stream"
// CHECK: %[[SLOTS:[^ ,)]+]] = memref.alloc() {hir.symmetric} : memref<4x4x2x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
// Step 0: a plain matmul per part, part after part (nothing else orders them: together
// they would share the SMs and part 0, sent first, would end last).
// CHECK: %[[S0:[^ ,)]+]] = "hir.get_stream"(%c0{{.*}})
// CHECK-NEXT: "hir.set_current_stream"(%[[S0]])
// CHECK-NOT: "hir.synchronize"
// CHECK: "hir.matmul"(%{{.*}}, %{{.*}}, %{{.*}}) : (
// CHECK: %[[S1:[^ ,)]+]] = "hir.get_stream"(%c1{{.*}})
// CHECK-NEXT: "hir.set_current_stream"(%[[S1]])
// CHECK-NEXT: "hir.synchronize"(%[[S0]])
// CHECK: "hir.matmul"(%{{.*}}, %{{.*}}, %{{.*}}) : (
// Steps 1..2: shift on the comm stream after the part's stream, wait, accumulate.
// CHECK: "hir.for"
// CHECK: "hir.for"
// CHECK: "hir.set_current_stream"(%[[COMM]])
// CHECK-NEXT: "hir.synchronize"
// CHECK: %[[W:[^ ,)]+]] = "hir.shift"(%{{.*}}, %{{.*}}, %{{.*}}) {backend = "cuda", team = array<i64: 0, 1, 2, 3>}
// CHECK-NEXT: "hir.set_current_stream"
// CHECK-NEXT: "hir.wait"(%[[W]])
// CHECK: "hir.matmul"(%{{.*}}, %{{.*}}, %{{.*}}) {accumulate}
// Step 3: into the output, the own partial (team position %me).
// CHECK: "hir.shift"
// CHECK: "hir.alias_select"(%arg0, %[[ME]]) {axis = 0 : i64}
// CHECK: "hir.matmul"(%{{.*}}, %{{.*}}, %{{.*}}) {accumulate}
// CHECK-NOT: "hir.matmul"
// CHECK: return

// A pushed ring lands in symmetric slots only: the last step accumulates in slot 3 and
// copies it to the output.
// PUSH-LABEL: func.func @matmul_rs
// PUSH-NOT: hir.reduction
// PUSH: "hir.shift"{{.*}}transfer = "push"
// PUSH: "hir.shift"{{.*}}transfer = "push"
// PUSH: "hir.matmul"(%{{.*}}, %{{.*}}, %{{.*}}) {accumulate}
// PUSH-NEXT: "hir.set"
// Pushed parts: a "pushed" signal names its sender, not the part, so every part's wait
// runs on one receiver stream (pool index chunks = 2), in the order the sender signalled,
// and the part's stream synchronizes with it (the issue-39 race: part 1's wait on its own
// stream took part 0's signal and accumulated into a slot part still in flight). The comm
// stream moves past it, and the receiver is joined at the end.
// PARTS: module attributes {hir.high_priority_streams = array<i64: 3>, hir.num_streams = 4 : i64}
// PARTS: %[[REC:receiver]] = "hir.get_stream"(%c2)
// PARTS: %work = "hir.shift"{{.*}}transfer = "push"
// PARTS-NEXT: "hir.set_current_stream"(%[[REC]])
// PARTS-NEXT: "hir.wait"(%work)
// PARTS-NEXT: "hir.set_current_stream"(%[[STREAM:stream[_0-9]*]])
// PARTS-NEXT: "hir.synchronize"(%[[REC]])
// PARTS: "hir.matmul"{{.*}} {accumulate}
// PARTS: "hir.synchronize"(%comm_stream)
// PARTS-NEXT: "hir.synchronize"(%[[REC]])
func.func @matmul_rs(%a: memref<4x4x2x2xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, %w: memref<1x4x2x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> memref<4x2x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>> {
  %partial = memref.alloc() : memref<4x4x2x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  "hir.matmul"(%a, %w, %partial) {stream_axis = 0 : i64} : (memref<4x4x2x2xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<1x4x2x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<4x4x2x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> ()
  %out = memref.alloc() : memref<4x2x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
  "hir.reduction"(%partial, %out) {axes = array<i64: 1>, kind = "sum", stream_axis = 0 : i64} : (memref<4x4x2x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<4x2x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> ()
  return %out : memref<4x2x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
}
