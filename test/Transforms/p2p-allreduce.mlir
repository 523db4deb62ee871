// RUN: hir-opt %s --split-input-file --print-value-names --pass-pipeline='builtin.module(hir-convert-to-communication,hir-p2p-pipeline{allreduce=chunked chunks=2})' | FileCheck %s
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication,hir-p2p-pipeline{allreduce=chunked})' | FileCheck %s --check-prefix=WHOLE
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication,hir-p2p-pipeline{chunks=2 overlap=off})' | FileCheck %s --check-prefix=WHOLE
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{overlap=auto})' | FileCheck %s --check-prefix=WHOLE
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication,hir-p2p-pipeline{allreduce=chunked chunks=2},hir-lower)' | FileCheck %s --check-prefix=LOWER
// RUN: hir-opt %s --split-input-file --print-value-names --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{allreduce=rs-ag})' | FileCheck %s --check-prefix=RSAG
// RUN: hir-opt %s --split-input-file --print-value-names --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline)' | FileCheck %s --check-prefix=RSAG
// RUN: hir-opt %s --split-input-file --print-value-names --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{overlap=auto copy-gbps=0.0001 compute-tflops=0.0000001})' | FileCheck %s --check-prefix=RSAG
// RUN: hir-opt %s --split-input-file --print-value-names --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{allreduce=rs-ag accumulate=1 chunks=2 transfer=push comm-stream=1},hir-lower)' | FileCheck %s --check-prefix=RING
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication,hir-p2p-pipeline{allreduce=rs-ag chunks=2})' | FileCheck %s --check-prefix=UNEVEN
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication,hir-p2p-pipeline{chunks=2})' | FileCheck %s --check-prefix=FALLBACK
// RUN: hir-opt %s --split-input-file --mlir-print-debuginfo --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{allreduce=rs-ag})' | FileCheck %s --check-prefix=BIASLOC

// The tensor-parallel form (async-TP's idea): the row-parallel matmul writes a partial sum
// [D, T, N] split on the summed axis, and an all-reduce makes it whole. hir-p2p-pipeline
// runs the pair in row blocks: block c's matmul on pool stream c, then its all-reduce from
// the same stream, so block c's all-reduce runs while block c + 1 multiplies.
// (allreduce=chunked: this form, not the reduce-scatter + all-gather below.)
// CHECK: module attributes {hir.num_streams = 4 : i64}
// CHECK-LABEL: func.func @tp_matmul_allreduce
// CHECK: %user_stream = "hir.get_current_stream"
// CHECK: "hir.for"
// CHECK: "hir.synchronize"(%user_stream)
// CHECK: "hir.for"(%c0, %c2, %c1)
// CHECK-NEXT: ^bb0(%c: index):
// CHECK-NEXT: %stream = "hir.get_stream"(%c)
// CHECK-NEXT: "hir.set_current_stream"(%stream)
// CHECK-NEXT: %arg0_part = "hir.alias_chunk"(%arg0, %c) {axis = 1 : i64, chunks = 2 : i64}
// CHECK-NEXT: %part = "hir.alias_chunk"(%alloc, %c) {axis = 1 : i64, chunks = 2 : i64}
// CHECK-NEXT: "hir.matmul"(%arg0_part, %arg1, %part)
// CHECK-NEXT: %part_1 = "hir.alias_chunk"(%alloc_0, %c) {axis = 0 : i64, chunks = 2 : i64}
// CHECK-NEXT: %work = "hir.allreduce"(%part, %part_1)
// CHECK-NEXT: "hir.wait"(%work)
// CHECK-NEXT: "hir.set_current_stream"(%user_stream)
// CHECK-NEXT: "hir.synchronize"(%stream)
// CHECK-NOT: "hir.allreduce"
// CHECK: return %alloc_0

// The row blocks with chunks = 1 (the default), overlap = off, and overlap = auto at this
// size (cost.py: the rule's gain is below the per-step cost) leave the pair whole.
// WHOLE-LABEL: func.func @tp_matmul_allreduce
// WHOLE-NOT: hir.for
// WHOLE: "hir.matmul"
// WHOLE-NEXT: memref.alloc
// WHOLE-NEXT: "hir.allreduce"
// WHOLE-NEXT: "hir.wait"

// LOWER: "hir.for"
// LOWER: "hir.allreduce"
// LOWER: memref.dealloc %alloc :

// allreduce=rs-ag (also the default allreduce=auto, and overlap=auto where the rule says
// it pays: here with rates that make these tiny buffers slow): the matmul in nvFuser's P2P
// form with its rows T = 8 split over the team ([4, 2]; the weight broadcast over the row
// blocks), its reduce-scatter pipelined by the reduce-scatter pattern (one shift per peer
// on copy engines, the slot reduction into %scattered), then the whole all-gather of the
// scattered rows into the all-reduce's output.
// RSAG-LABEL: func.func @tp_matmul_allreduce
// RSAG-NOT: "hir.allreduce"
// RSAG: %[[OUT:.+]] = memref.alloc() : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
// RSAG-NEXT: %arg0_rows = "hir.alias_reshape"(%arg0) {reassociation = {{\[\[}}0], [1, 2], [3]]} : ({{.*}}) -> memref<4x4x2x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
// RSAG-NEXT: %arg1_rows = "hir.alias_reshape"(%arg1) {reassociation = {{\[\[}}0], [1, 2], [3]]} : ({{.*}}) -> memref<4x1x4x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
// RSAG-NEXT: %scattered = memref.alloc() : memref<4x2x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
// RSAG: %slots = memref.alloc() {hir.symmetric} : memref<4x4x2x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
// RSAG: %[[A:.+]] = "hir.alias_select"(%arg0_rows, %position) {axis = 1 : i64}
// RSAG: "hir.matmul"(%[[A]], %{{.*}}, %slots_slice)
// RSAG: "hir.shift"(%slots_slice, %{{.*}}, %j) {backend = "cuda", team = array<i64: 0, 1, 2, 3>}
// RSAG: "hir.alias_select"(%arg0_rows, %me) {axis = 1 : i64}
// RSAG: "hir.reduction"(%received, %scattered) {axes = array<i64: 1>, kind = "sum"}
// RSAG-NEXT: %out_rows = "hir.alias_reshape"(%[[OUT]]) {reassociation = {{\[\[}}0, 1], [2]]} : ({{.*}}) -> memref<4x2x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
// RSAG-NEXT: %ag_work = "hir.allgather"(%scattered, %out_rows) {axis = 0 : i64, backend = "cuda", team = array<i64: 0, 1, 2, 3>}
// RSAG-NEXT: "hir.wait"(%ag_work)
// RSAG-NEXT: return %[[OUT]]

// With the accumulating ring (pushed parts, a comm stream): the ring's shifts and
// {accumulate} matmuls, no slot reduction, then the all-gather.
// RING-LABEL: func.func @tp_matmul_allreduce
// RING-NOT: "hir.reduction"
// RING: "hir.shift"{{.*}}transfer = "push"
// RING: "hir.matmul"{{.*}} {accumulate}
// RING: "hir.allgather"(%scattered, %out_rows) {axis = 0 : i64, backend = "cuda", team = array<i64: 0, 1, 2, 3>}
// UNEVEN-LABEL: func.func @tp_matmul_allreduce
// UNEVEN-NOT: "hir.allreduce"
// UNEVEN: "hir.shift"
// UNEVEN: "hir.allgather"
func.func @tp_matmul_allreduce(%a: memref<4x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %w: memref<4x4x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>> {
  %partial = memref.alloc() : memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
  "hir.matmul"(%a, %w, %partial) : (memref<4x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x4x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> ()
  %out = memref.alloc() : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.reduction"(%partial, %out) {axes = array<i64: 0>, kind = "sum"} : (memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  return %out : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
}


// -----

// Rows that do not split evenly over the team (T = 6 over 4 ranks): no rs-ag form; with
// allreduce=rs-ag the pair stays whole, with the default (auto) and chunks = 2 it takes the
// row blocks.
// UNEVEN-LABEL: func.func @tp_uneven_rows
// UNEVEN-NOT: "hir.for"
// UNEVEN: "hir.allreduce"
// FALLBACK-LABEL: func.func @tp_uneven_rows
// FALLBACK: "hir.for"
// FALLBACK: "hir.for"
// FALLBACK: "hir.alias_chunk"
// FALLBACK: "hir.allreduce"
// RSAG-LABEL: func.func @tp_uneven_rows
// RSAG-NOT: "hir.shift"
// RSAG: "hir.allreduce"
// RING-LABEL: func.func @tp_uneven_rows
// RING-NOT: "hir.shift"
// RING: "hir.allreduce"
func.func @tp_uneven_rows(%a: memref<4x6x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %w: memref<4x4x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> memref<6x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>> {
  %partial = memref.alloc() : memref<4x6x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
  "hir.matmul"(%a, %w, %partial) : (memref<4x6x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x4x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x6x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> ()
  %out = memref.alloc() : memref<6x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.reduction"(%partial, %out) {axes = array<i64: 0>, kind = "sum"} : (memref<4x6x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<6x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  return %out : memref<6x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
}


// -----

// The row-parallel linear's bias (a whole [N] argument, broadcast over the rows) after the
// all-reduce: with rs-ag it is added to the scattered rows (a quarter of the elements) and
// the all-gather writes the add's output; the all-reduce's own output buffer is gone.
// RSAG-LABEL: func.func @tp_matmul_allreduce_bias
// RSAG-NOT: "hir.allreduce"
// RSAG: %scattered = memref.alloc() : memref<4x2x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
// RSAG: "hir.reduction"(%received, %scattered) {axes = array<i64: 1>, kind = "sum"}
// RSAG: %biased = memref.alloc() : memref<4x2x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
// RSAG-NEXT: "hir.binary"(%scattered, %arg2, %biased) {kind = "add"}
// RSAG-NEXT: %[[Y:.+]] = memref.alloc() : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
// RSAG-NEXT: %[[YR:.+]] = "hir.alias_reshape"(%[[Y]]) {reassociation = {{\[\[}}0, 1], [2]]}
// RSAG-NEXT: %ag_work = "hir.allgather"(%biased, %[[YR]])
// RSAG-NEXT: "hir.wait"(%ag_work)
// RSAG-NOT: "hir.binary"
// RSAG: return %[[Y]]
// The moved add keeps its own location, name included.
// BIASLOC-LABEL: func.func @tp_matmul_allreduce_bias
// BIASLOC: "hir.binary"({{.*}}) {kind = "add"} : ({{.*}}) -> () loc([[LOC:#loc[0-9]*]])
// BIASLOC: [[LOC]] = loc("fc2.bias"(
// RING-LABEL: func.func @tp_matmul_allreduce_bias
// RING: "hir.binary"(%scattered, %arg2, %biased) {kind = "add"}
// RING: "hir.allgather"(%biased,
func.func @tp_matmul_allreduce_bias(%a: memref<4x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %w: memref<4x4x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %b: memref<3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>> {
  %partial = memref.alloc() : memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
  "hir.matmul"(%a, %w, %partial) : (memref<4x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x4x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> ()
  %out = memref.alloc() : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.reduction"(%partial, %out) {axes = array<i64: 0>, kind = "sum"} : (memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  %y = memref.alloc() : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.binary"(%out, %b, %y) {kind = "add"} : (memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> () loc("fc2.bias"("mlp.py":12:3))
  return %y : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
}


// -----

// An operand that spans the rows ([8, 3]: a different value per row) does not commute with
// the all-gather: the add stays after it, on the whole output; so does one whose sum the
// function also returns (%out has a second reader).
// RSAG-LABEL: func.func @tp_matmul_allreduce_rows_operand
// RSAG: "hir.allgather"(%scattered, %out_rows)
// RSAG: "hir.binary"(%arg2, %{{.*}}, %{{.*}}) {kind = "mul"}
// RSAG-LABEL: func.func @tp_matmul_allreduce_bias_kept
// RSAG: "hir.allgather"(%scattered, %out_rows)
// RSAG: "hir.binary"(%{{.*}}, %arg2, %{{.*}}) {kind = "add"}
func.func @tp_matmul_allreduce_rows_operand(%a: memref<4x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %w: memref<4x4x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %s: memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>> {
  %partial = memref.alloc() : memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
  "hir.matmul"(%a, %w, %partial) : (memref<4x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x4x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> ()
  %out = memref.alloc() : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.reduction"(%partial, %out) {axes = array<i64: 0>, kind = "sum"} : (memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  %y = memref.alloc() : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.binary"(%s, %out, %y) {kind = "mul"} : (memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  return %y : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
}

func.func @tp_matmul_allreduce_bias_kept(%a: memref<4x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %w: memref<4x4x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %b: memref<3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> (memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) {
  %partial = memref.alloc() : memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
  "hir.matmul"(%a, %w, %partial) : (memref<4x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x4x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> ()
  %out = memref.alloc() : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.reduction"(%partial, %out) {axes = array<i64: 0>, kind = "sum"} : (memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  %y = memref.alloc() : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.binary"(%out, %b, %y) {kind = "add"} : (memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  return %y, %out : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
}


// -----

// The bias as the left operand of a non-commutative op keeps its place: b - y.
// RSAG-LABEL: func.func @tp_bias_minus_sum
// RSAG: "hir.binary"(%arg2, %scattered, %biased) {kind = "sub"}
// RSAG-NEXT: memref.alloc
// RSAG: "hir.allgather"(%biased,
func.func @tp_bias_minus_sum(%a: memref<4x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %w: memref<4x4x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %b: memref<3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>> {
  %partial = memref.alloc() : memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
  "hir.matmul"(%a, %w, %partial) : (memref<4x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x4x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> ()
  %out = memref.alloc() : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.reduction"(%partial, %out) {axes = array<i64: 0>, kind = "sum"} : (memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  %y = memref.alloc() : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.binary"(%b, %out, %y) {kind = "sub"} : (memref<3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  return %y : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
}


// -----

// Refused, the add stays after the all-gather: its output is written and read before it
// (the all-gather would write it first), it sits in a loop (its alloc would leave the loop
// its dealloc is in), its output is used before the all-reduce, and the bias is written
// through a view in between.
// RSAG-LABEL: func.func @tp_bias_output_used_first
// RSAG: "hir.allgather"(%scattered, %out_rows)
// RSAG: "hir.binary"(%alloc_{{[0-9]+}}, %arg2, %alloc) {kind = "add"}
// RSAG-LABEL: func.func @tp_bias_in_a_loop
// RSAG: "hir.allgather"(%scattered, %out_rows)
// RSAG: scf.for
// RSAG: "hir.binary"(%{{.*}}, %arg2, %{{.*}}) {kind = "add"}
// RSAG-LABEL: func.func @tp_bias_output_read_before
// RSAG: "hir.allgather"(%scattered, %out_rows)
// RSAG: "hir.binary"(%{{.*}}, %arg2, %{{.*}}) {kind = "add"}
// RSAG-LABEL: func.func @tp_bias_written_through_a_view
// RSAG: "hir.allgather"(%scattered, %out_rows)
// RSAG: "hir.binary"(%{{.*}}, %arg2, %{{.*}}) {kind = "add"}
func.func @tp_bias_output_used_first(%a: memref<4x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %w: memref<4x4x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %b: memref<3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, %x: memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, %z: memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>> {
  %y = memref.alloc() : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  %partial = memref.alloc() : memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
  "hir.matmul"(%a, %w, %partial) : (memref<4x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x4x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> ()
  %out = memref.alloc() : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.reduction"(%partial, %out) {axes = array<i64: 0>, kind = "sum"} : (memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  "hir.set"(%x, %y) : (memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  "hir.set"(%y, %z) : (memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  "hir.binary"(%out, %b, %y) {kind = "add"} : (memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  return %y : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
}

func.func @tp_bias_in_a_loop(%a: memref<4x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %w: memref<4x4x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %b: memref<3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, %z: memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) {
  %partial = memref.alloc() : memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
  "hir.matmul"(%a, %w, %partial) : (memref<4x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x4x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> ()
  %out = memref.alloc() : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.reduction"(%partial, %out) {axes = array<i64: 0>, kind = "sum"} : (memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  scf.for %i = %c0 to %c3 step %c1 {
    %y = memref.alloc() : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
    "hir.binary"(%out, %b, %y) {kind = "add"} : (memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
    "hir.binary"(%y, %z, %z) {kind = "add"} : (memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
    memref.dealloc %y : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  }
  return
}

func.func @tp_bias_output_read_before(%a: memref<4x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %w: memref<4x4x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %b: memref<3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, %z: memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>> {
  %y = memref.alloc() : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.set"(%z, %y) : (memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  "hir.set"(%y, %z) : (memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  %partial = memref.alloc() : memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
  "hir.matmul"(%a, %w, %partial) : (memref<4x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x4x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> ()
  %out = memref.alloc() : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.reduction"(%partial, %out) {axes = array<i64: 0>, kind = "sum"} : (memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  "hir.binary"(%out, %b, %y) {kind = "add"} : (memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  return %y : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
}

func.func @tp_bias_written_through_a_view(%a: memref<4x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %w: memref<4x4x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %b: memref<3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, %c: memref<1x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>> {
  %partial = memref.alloc() : memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
  "hir.matmul"(%a, %w, %partial) : (memref<4x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x4x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> ()
  %out = memref.alloc() : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.reduction"(%partial, %out) {axes = array<i64: 0>, kind = "sum"} : (memref<4x8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  %bv = "hir.alias_reshape"(%b) {reassociation = [[0, 1]]} : (memref<3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> memref<1x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.set"(%c, %bv) : (memref<1x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<1x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  %y = memref.alloc() : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.binary"(%out, %b, %y) {kind = "add"} : (memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  return %y : memref<8x3xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
}
