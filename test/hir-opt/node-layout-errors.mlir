// hir-set-node-layout's errors: no count, a count contradicting the module's, and a module
// that already runs copy engines on a team the new layout puts on two nodes; a layout
// attribute that is not a positive count, in the passes that read it.
// RUN: not hir-opt %s --pass-pipeline='builtin.module(hir-set-node-layout)' 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not hir-opt %s --pass-pipeline='builtin.module(hir-set-node-layout{ranks-per-node=4})' 2>&1 | FileCheck %s --check-prefix=OTHER
// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-set-node-layout{ranks-per-node=2})' | FileCheck %s --check-prefix=SAME
// RUN: sed 's/module attributes {hir.ranks_per_node = 2 : i64}/module/' %s | not hir-opt --pass-pipeline='builtin.module(hir-set-node-layout{ranks-per-node=1})' 2>&1 | FileCheck %s --check-prefix=PLACED
// RUN: sed 's/module attributes {hir.ranks_per_node = 2 : i64}/module/' %s | hir-opt --pass-pipeline='builtin.module(hir-set-node-layout{ranks-per-node=4})' | FileCheck %s --check-prefix=FITS
// RUN: sed 's/hir.ranks_per_node = 2 : i64/hir.ranks_per_node = 0 : i64/' %s | not hir-opt --pass-pipeline='builtin.module(hir-convert-to-communication{backend=cuda})' 2>&1 | FileCheck %s --check-prefix=ZERO

// NONE: node-layout-errors.mlir: error: hir-set-node-layout: ranks-per-node must be a positive number of ranks (torchrun's --nproc-per-node), got 0
// OTHER: node-layout-errors.mlir: error: hir-set-node-layout: ranks-per-node=4 contradicts the module's hir.ranks_per_node = 2
// SAME: module attributes {hir.ranks_per_node = 2 : i64}
// PLACED: <stdin>:[[# @LINE + 10]]:10: error: 'hir.allreduce' op runs on copy engines (backend = "cuda") but its team [0, 1] spans nodes 0 and 1 (hir.ranks_per_node = 1); lower with hir-set-node-layout before hir-convert-to-communication / hir-p2p-pipeline
// FITS: module attributes {hir.ranks_per_node = 4 : i64}
// ZERO: error: module attribute hir.ranks_per_node must be a positive integer, got 0 : i64
!p = memref<2x4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>
!s = memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>
!o = memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>
module attributes {hir.ranks_per_node = 2 : i64} {
  func.func @main(%p: !p) -> !s {
    %s = memref.alloc() : !s
    // tp (mesh axis 1): [0, 1] and [2, 3], inside nodes of 2
    %w = "hir.allreduce"(%p, %s) {axis = 0 : i64, backend = "cuda", reduction = "sum", team = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (!p, !s) -> !hir.work
    "hir.wait"(%w) : (!hir.work) -> ()
    return %s : !s
  }
  // a resharding copy: hir-convert-to-communication reads the layout for its collective
  func.func @gather(%s: !s) -> !o {
    %o = memref.alloc() : !o
    "hir.set"(%s, %o) : (!s, !o) -> ()
    return %o : !o
  }
}
