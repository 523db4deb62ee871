// The stream pool size is a property of the IR: hir-p2p-pipeline sets hir.num_streams to at
// least what its steps use. The chunked reduce-scatter's reducer runs on pool stream
// `streams` (4 here), past the 4 compute streams: 5 pool streams, so it aliases none of them.
// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{streams=4 chunks=2})' | FileCheck %s
// Without chunks the default pool (4) is enough.
// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{streams=4})' | FileCheck %s --check-prefix=PLAIN
// A pool fixed too small by an earlier pass is an error.
// RUN: sed 's/^module {/module attributes {hir.num_streams = 2 : i64} {/' %s | not hir-opt --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{streams=4 chunks=2})' 2>&1 | FileCheck %s --check-prefix=SMALL
// (test_transforms_run_equal.py runs the pipelines above on 4 Gloo ranks and compares the
// results; test_p2p.py counts the distinct pool streams a run uses; test_num_streams.py has
// the readers: Program, hir-run and hir-reuse-stream-buffers.)

// CHECK: module attributes {hir.num_streams = 5 : i64}
// CHECK: %c4 = arith.constant 4 : index
// CHECK: %[[POOL:.*]] = arith.constant 4 : index
// CHECK: "hir.get_stream"(%[[POOL]])
// PLAIN: module attributes {hir.num_streams = 4 : i64}
// SMALL: error: hir-p2p-pipeline: the pipelines use 5 pool streams, but the module fixes hir.num_streams = 2

module {
  func.func @main(%a: memref<4x4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, %w: memref<1x4x8x6xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> memref<4x2x6xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>> {
    %partial = memref.alloc() : memref<4x4x2x6xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
    "hir.matmul"(%a, %w, %partial) {stream_axis = 0 : i64} : (memref<4x4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<1x4x8x6xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<4x4x2x6xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> ()
    %out = memref.alloc() : memref<4x2x6xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
    "hir.reduction"(%partial, %out) {axes = array<i64: 1>, kind = "sum", stream_axis = 0 : i64} : (memref<4x4x2x6xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, memref<4x2x6xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> ()
    return %out : memref<4x2x6xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
  }
}
