// RUN: hir-opt %s --print-value-names --pass-pipeline='builtin.module(hir-convert-to-communication,hir-p2p-pipeline{chunks=2})' | FileCheck %s
// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-convert-to-communication,hir-p2p-pipeline)' | FileCheck %s --check-prefix=WHOLE
// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-convert-to-communication,hir-p2p-pipeline{chunks=2 overlap=off})' | FileCheck %s --check-prefix=WHOLE
// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-convert-to-communication,hir-p2p-pipeline{chunks=2},hir-lower)' | FileCheck %s --check-prefix=LOWER

// The tensor-parallel form (async-TP's idea): the row-parallel matmul writes a partial sum
// [D, T, N] split on the summed axis, and an all-reduce makes it whole. hir-p2p-pipeline
// runs the pair in row blocks: block c's matmul on pool stream c, then its all-reduce from
// the same stream, so block c's all-reduce runs while block c + 1 multiplies.
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

// chunks = 1 (the default) and overlap = off leave the pair whole.
// WHOLE-LABEL: func.func @tp_matmul_allreduce
// WHOLE-NOT: hir.for
// WHOLE: "hir.matmul"
// WHOLE-NEXT: memref.alloc
// WHOLE-NEXT: "hir.allreduce"
// WHOLE-NEXT: "hir.wait"

// LOWER: "hir.for"
// LOWER: "hir.allreduce"
// LOWER: memref.dealloc %alloc :
func.func @tp_matmul_allreduce(%a: memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %w: memref<2x4x3xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<8x3xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>> {
  %partial = memref.alloc() : memref<2x8x3xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
  "hir.matmul"(%a, %w, %partial) : (memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<2x4x3xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<2x8x3xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
  %out = memref.alloc() : memref<8x3xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
  "hir.reduction"(%partial, %out) {axes = array<i64: 0>, kind = "sum"} : (memref<2x8x3xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
  return %out : memref<8x3xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
}
