// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-set-grid-shape{shape=2x4})' | FileCheck %s
// RUN: not hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-set-grid-shape{shape=4})' 2>&1 | FileCheck %s --check-prefix=RANK
// RUN: not hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-from-shard)' 2>&1 | FileCheck %s --check-prefix=UNSET
// RUN: not hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-set-grid-shape{shape=2x0})' 2>&1 | FileCheck %s --check-prefix=BAD
// A dynamic grid gets the extents of the world it runs on; static extents must agree.

// CHECK: shard.grid @g(shape = 2x4)
// CHECK: shard.grid @s(shape = 2x4)
// RANK: set-grid-shape.mlir:[[# @LINE + 3]]:1: error: 'shard.grid' op has shape ?x4, which shape=4 does not fit (one extent per axis; static ones kept)
// UNSET: set-grid-shape.mlir:[[# @LINE + 2]]:1: error: 'shard.grid' op has shape ?x4; give its extents with hir-set-grid-shape{shape=...} (the world it runs on)
// BAD: error: hir-set-grid-shape: shape must be positive extents joined by 'x' (e.g. 4 or 2x2), got '2x0'
shard.grid @g(shape = ?x4)
shard.grid @s(shape = 2x4)
func.func @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  return %x : tensor<8x4xf32>
}

// -----

// CHECK: shard.grid @h(shape = 2x4)
// RANK: set-grid-shape.mlir:[[# @LINE + 1]]:1: error: 'shard.grid' op has shape ?x?, which shape=4 does not fit
shard.grid @h(shape = ?x?)
