// Device coordinates and neighbors of a partitioned shard program, computed on the host of
// each rank, as converted and after hir-lower (the same values).
// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-convert-shard-to-hir{backend=gloo})' -o %t.mlir
// RUN: hir-run --nproc 2 %t.mlir --print > %t.before
// RUN: hir-opt %t.mlir --pass-pipeline='builtin.module(hir-lower)' -o %t.lowered.mlir
// RUN: hir-run --nproc 2 %t.lowered.mlir --print > %t.after
// RUN: diff %t.before %t.after
// RUN: FileCheck %s < %t.after

// 2x1 grid: rank 0 has no device before it along axis 0, rank 1 none after.
// CHECK-DAG: rank 0: output 0: 0
// CHECK-DAG: rank 0: output 1: -1
// CHECK-DAG: rank 0: output 2: 1
// CHECK-DAG: rank 1: output 0: 1
// CHECK-DAG: rank 1: output 1: 0
// CHECK-DAG: rank 1: output 2: -1
shard.grid @g(shape = 2x1)
func.func @main() -> (index, index, index) {
  %i:2 = shard.process_multi_index on @g : index, index
  %n:2 = shard.neighbors_linear_indices on @g[%i#0, %i#1] split_axes = [0] : index, index
  return %i#0, %n#0, %n#1 : index, index, index
}
