// A partitioned program on a grid of unknown size (shape = ?), given the world it runs on
// by hir-set-grid-shape: device coordinates, grid extent and a gather, as converted and
// after hir-lower (the same values).
// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-set-grid-shape{shape=2},hir-convert-shard-to-hir{backend=gloo})' -o %t.mlir
// RUN: hir-run --nproc 2 %t.mlir --print > %t.before
// RUN: hir-opt %t.mlir --pass-pipeline='builtin.module(hir-lower)' -o %t.lowered.mlir
// RUN: hir-run --nproc 2 %t.lowered.mlir --print > %t.after
// RUN: diff %t.before %t.after
// RUN: FileCheck %s < %t.after

// CHECK-DAG: rank 0: output 0: 0
// CHECK-DAG: rank 1: output 0: 1
// CHECK-DAG: rank 0: output 1: 2
// CHECK-DAG: rank 1: output 1: 2
// CHECK-DAG: rank 0: output 2: shape [2] i64
// CHECK-DAG: rank 1: output 2: shape [2] i64
// CHECK-DAG: rank 0: [0, 1]
// CHECK-DAG: rank 1: [0, 1]
shard.grid @g(shape = ?)
func.func @main() -> (index, index, tensor<?xi64>) {
  %i = shard.process_linear_index on @g : index
  %n = shard.grid_shape @g axes = [0] : index
  %v = arith.index_cast %i : index to i64
  %e = tensor.empty() : tensor<1xi64>
  %t = linalg.fill ins(%v : i64) outs(%e : tensor<1xi64>) -> tensor<1xi64>
  %all = shard.all_gather %t on @g grid_axes = [0] gather_axis = 0 : tensor<1xi64> -> tensor<?xi64>
  return %i, %n, %all : index, index, tensor<?xi64>
}
