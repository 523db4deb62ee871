// hir-p2p-pipeline{allreduce=...} takes auto, rs-ag or chunked; another value is an error
// at the all-reduce it would shape (exit status 1, no traceback, no output).
// RUN: not hir-opt %s --pass-pipeline='builtin.module(hir-convert-to-communication,hir-p2p-pipeline{allreduce=rsag})' 2>&1 | FileCheck %s
// CHECK: p2p-allreduce-errors.mlir:13:3: error: hir-p2p-pipeline: allreduce 'rsag' is not one of auto, rs-ag, chunked
// CHECK-NOT: Traceback
// CHECK-NOT: func.func

func.func @tp(%a: memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %w: memref<2x4x3xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<8x3xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>> {
  %partial = memref.alloc() : memref<2x8x3xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
  "hir.matmul"(%a, %w, %partial) : (memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<2x4x3xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<2x8x3xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
  %out = memref.alloc() : memref<8x3xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
  // the reduction that hir-convert-to-communication makes the hir.allreduce
  "hir.reduction"(%partial, %out) {axes = array<i64: 0>, kind = "sum"} : (memref<2x8x3xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x3xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
  return %out : memref<8x3xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
}
