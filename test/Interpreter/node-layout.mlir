// Run-start checks of the node layout (python/hir/interpreter/nodes.py), before any rank
// waits on another: copy engines (backend = "cuda") on a team that spans nodes, by the
// program's hir.ranks_per_node or else by the launcher's LOCAL_WORLD_SIZE; a launcher whose
// nodes do not hold whole nodes of the program; ranks not numbered node by node. The
// launcher's variables are set by hand: each check fails before a process group is formed.
// RUN: not hir-run %s 2>&1 | FileCheck %s --check-prefix=COPY
// RUN: not env RANK=0 WORLD_SIZE=4 LOCAL_WORLD_SIZE=3 GROUP_RANK=0 hir-run %s 2>&1 | FileCheck %s --check-prefix=LOCAL
// RUN: not env RANK=3 WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 GROUP_RANK=0 hir-run %s 2>&1 | FileCheck %s --check-prefix=GROUP
// RUN: not env RANK=0 WORLD_SIZE=4 LOCAL_WORLD_SIZE=two hir-run %s 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: sed 's/hir.ranks_per_node = 2 : i64/hir.ranks_per_node = -2 : i64/' %s > %t.zero.mlir
// RUN: not hir-run %t.zero.mlir 2>&1 | FileCheck %s --check-prefix=ATTR
// RUN: sed 's/module attributes {hir.ranks_per_node = 2 : i64}/module/' %s > %t.mlir
// RUN: not env RANK=0 WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 GROUP_RANK=0 hir-run %t.mlir 2>&1 | FileCheck %s --check-prefix=LAUNCHER

// COPY: node-layout.mlir:[[# @LINE + 12]]:10: error: 'hir.allgather' runs on copy engines (backend = "cuda") but its team [0, 2] spans nodes 0 and 1 (hir.ranks_per_node = 2): copy engines and symmetric memory reach the GPUs of one node only; give it backend "nccl"
// LOCAL: node-layout.mlir: error: the program is laid out for 2 ranks per node (hir.ranks_per_node = 2), but this run has LOCAL_WORLD_SIZE=3 ranks on node GROUP_RANK=0, not a multiple of 2
// GROUP: error: RANK=3 runs on node GROUP_RANK=0 with LOCAL_WORLD_SIZE=2, but hir needs ranks numbered node by node (node RANK // LOCAL_WORLD_SIZE = 1)
// BAD: error: $LOCAL_WORLD_SIZE='two': expected an integer >= 1
// ATTR: node-layout.mlir.tmp.zero.mlir: error: module attribute hir.ranks_per_node must be a positive integer, got -2 : i64
// LAUNCHER: node-layout.mlir.tmp.mlir:[[# @LINE + 7]]:10: error: 'hir.allgather' runs on copy engines (backend = "cuda") but its team [0, 2] spans nodes 0 and 1 (LOCAL_WORLD_SIZE=2 ranks per node)
!s = memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>
!o = memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>
module attributes {hir.ranks_per_node = 2 : i64} {
  func.func @main(%s: !s) -> !o {
    %o = memref.alloc() : !o
    // dp (mesh axis 0) runs across the nodes: [0, 2] and [1, 3]
    %w = "hir.allgather"(%s, %o) {axis = 0 : i64, backend = "cuda", team = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>} : (!s, !o) -> !hir.work
    "hir.wait"(%w) : (!hir.work) -> ()
    return %o : !o
  }
}
