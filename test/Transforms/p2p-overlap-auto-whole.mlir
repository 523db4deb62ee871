// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication,hir-p2p-pipeline{overlap=auto})' | FileCheck %s --check-prefix=AUTO
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication,hir-p2p-pipeline{overlap=auto},hir-lower)' | FileCheck %s --check-prefix=LOWER
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication,hir-p2p-pipeline)' | FileCheck %s --check-prefix=ON
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{overlap=auto})' | FileCheck %s --check-prefix=CUDA

// nvFuser's seed-003 matmul+RS: the stream axis (0, S = 2 chunks) is not the device axis
// (1), so hir-lower would issue one reduce-scatter per chunk. Through NCCL the chunks do
// not overlap (passes/p2p/cost.py), so overlap=auto drops the collective's stream axis and
// the matmul's, chunked only to overlap it: hir-lower then runs one matmul and one whole
// reduce-scatter after it, with no stream loop (the benchmarks' "sequential" row).
// overlap=on keeps nvFuser's form, as does the copy-engine backend.
// AUTO-LABEL: func.func @seed_matmul_rs
// AUTO: "hir.matmul"(%{{[^)]*}}) : (
// AUTO: %[[W:[^ ,)]+]] = "hir.reduce_scatter"({{.*}}) {axis = 1 : i64, backend = "nccl", reduction = "sum", scatter_axis = 2 : i64, team = array<i64: 0, 1, 2, 3>}
// AUTO-NEXT: "hir.wait"(%[[W]])
// LOWER-LABEL: func.func @seed_matmul_rs
// LOWER-NOT: "hir.for"
// LOWER: "hir.matmul"
// LOWER-NEXT: memref.alloc()
// LOWER-NEXT: %[[W:[^ ,)]+]] = "hir.reduce_scatter"
// LOWER-NEXT: "hir.wait"(%[[W]])
// LOWER-NOT: "hir.reduce_scatter"
// LOWER-NOT: "hir.for"
// LOWER: return
// ON-LABEL: func.func @seed_matmul_rs
// ON: "hir.reduce_scatter"({{.*}}) {axis = 1 : i64, backend = "nccl", reduction = "sum", scatter_axis = 2 : i64, stream_axis = 0 : i64, team
// CUDA-LABEL: func.func @seed_matmul_rs
// CUDA: "hir.reduce_scatter"({{.*}}) {axis = 1 : i64, backend = "cuda", reduction = "sum", scatter_axis = 2 : i64, stream_axis = 0 : i64, team
func.func @seed_matmul_rs(%a: memref<2x4x4x2xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, %w: memref<1x4x2x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> memref<2x4x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>> {
  %partial = memref.alloc() : memref<2x4x4x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  "hir.matmul"(%a, %w, %partial) {stream_axis = 0 : i64} : (memref<2x4x4x2xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<1x4x2x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<2x4x4x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> ()
  %out = memref.alloc() : memref<2x4x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  "hir.reduction"(%partial, %out) {axes = array<i64: 1>, kind = "sum", stream_axis = 0 : i64} : (memref<2x4x4x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<2x4x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> ()
  return %out : memref<2x4x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
}

// -----

// Seed-003's AG+matmul: the all-gather runs whole, then one matmul.
// AUTO-LABEL: func.func @seed_ag_matmul
// AUTO: %[[W:[^ ,)]+]] = "hir.allgather"({{.*}}) {axis = 1 : i64, backend = "nccl", team = array<i64: 0, 1, 2, 3>}
// AUTO: "hir.matmul"(%{{[^)]*}}) : (
// LOWER-LABEL: func.func @seed_ag_matmul
// LOWER-NOT: "hir.for"
// LOWER: %[[W:[^ ,)]+]] = "hir.allgather"
// LOWER-NEXT: "hir.wait"(%[[W]])
// LOWER-NOT: "hir.for"
// LOWER: "hir.matmul"
// LOWER-NOT: "hir.allgather"
// LOWER-NOT: "hir.for"
// LOWER: return
// ON-LABEL: func.func @seed_ag_matmul
// ON: "hir.allgather"({{.*}}) {axis = 1 : i64, backend = "nccl", stream_axis = 0 : i64, team
// CUDA-LABEL: func.func @seed_ag_matmul
// CUDA: "hir.allgather"({{.*}}) {axis = 1 : i64, backend = "cuda", stream_axis = 0 : i64, team
func.func @seed_ag_matmul(%a: memref<2x4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, %w: memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> memref<2x4x2x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 3 : i64>> {
  %full = memref.alloc() : memref<2x4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.set"(%a, %full) {stream_axis = 0 : i64} : (memref<2x4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<2x4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  %out = memref.alloc() : memref<2x4x2x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 3 : i64>>
  "hir.matmul"(%full, %w, %out) {stream_axis = 0 : i64} : (memref<2x4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<2x4x2x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 3 : i64>>) -> ()
  return %out : memref<2x4x2x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 3 : i64>>
}

// -----

// A matmul reading two seed-form NCCL all-gathers: both run whole, so the matmul, chunked
// only to overlap them, runs whole too (were either still chunked, it would keep its axis).
// AUTO-LABEL: func.func @two_gathers
// AUTO: "hir.allgather"({{.*}}) {axis = 1 : i64, backend = "nccl", team
// AUTO: "hir.allgather"({{.*}}) {axis = 2 : i64, backend = "nccl", team
// AUTO: "hir.matmul"(%{{[^)]*}}) : (
// LOWER-LABEL: func.func @two_gathers
// LOWER-NOT: "hir.for"
// LOWER: "hir.matmul"
// LOWER-NOT: "hir.for"
// LOWER: return
// ON-LABEL: func.func @two_gathers
// ON: "hir.matmul"({{.*}}) {stream_axis = 0 : i64}
// CUDA-LABEL: func.func @two_gathers
// CUDA: "hir.matmul"({{.*}}) {stream_axis = 0 : i64}
func.func @two_gathers(%a: memref<2x4x4x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, %b: memref<2x1x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 2 : i64>>) -> memref<2x4x4x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>> {
  %full_a = memref.alloc() : memref<2x4x4x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.set"(%a, %full_a) {stream_axis = 0 : i64} : (memref<2x4x4x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<2x4x4x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  %full_b = memref.alloc() : memref<2x1x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.set"(%b, %full_b) {stream_axis = 0 : i64} : (memref<2x1x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 2 : i64>>, memref<2x1x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  %out = memref.alloc() : memref<2x4x4x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.matmul"(%full_a, %full_b, %out) {stream_axis = 0 : i64} : (memref<2x4x4x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<2x1x8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, memref<2x4x4x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  return %out : memref<2x4x4x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
}
