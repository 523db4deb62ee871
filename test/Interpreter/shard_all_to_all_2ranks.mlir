// shard.all_to_all (the all_gather and all_slice it becomes) and an elementwise linalg.add
// (hir.binary) on 2 ranks: device d starts from rows filled with d, split along dim 0; after
// the exchange each device holds its 2 columns of every row, doubled; grid_shape is 2. Run
// converted and after hir-lower.
// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-convert-shard-to-hir{backend=gloo})' -o %t.mlir
// RUN: hir-run --nproc 2 %t.mlir --print > %t.before
// RUN: hir-opt %t.mlir --pass-pipeline='builtin.module(hir-lower)' -o %t.lowered.mlir
// RUN: hir-run --nproc 2 %t.lowered.mlir --print > %t.after
// RUN: diff %t.before %t.after
// RUN: FileCheck %s < %t.after
// RUN: FileCheck %s --check-prefix=IR < %t.mlir

// IR: "hir.allgather"
// IR: "hir.binary"
// CHECK:      rank 0: output 0: shape [4, 2] f32
// CHECK-NEXT: rank 0: {{\[\[}}0, 0],
// CHECK-NEXT: rank 0:  [0, 0],
// CHECK-NEXT: rank 0:  [2, 2],
// CHECK-NEXT: rank 0:  [2, 2]]
// CHECK:      rank 0: output 1: 2
// CHECK:      rank 1: output 0: shape [4, 2] f32
// CHECK-NEXT: rank 1: {{\[\[}}0, 0],
// CHECK-NEXT: rank 1:  [0, 0],
// CHECK-NEXT: rank 1:  [2, 2],
// CHECK-NEXT: rank 1:  [2, 2]]
shard.grid @g(shape = 2)
func.func @main() -> (tensor<4x2xf32>, index) {
  %i = shard.process_linear_index on @g : index
  %ii = arith.index_cast %i : index to i64
  %f = arith.sitofp %ii : i64 to f32
  %e = tensor.empty() : tensor<2x4xf32>
  %x = linalg.fill ins(%f : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  %t = shard.all_to_all %x on @g grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<2x4xf32> -> tensor<4x2xf32>
  %e2 = tensor.empty() : tensor<4x2xf32>
  %s = linalg.add ins(%t, %t : tensor<4x2xf32>, tensor<4x2xf32>) outs(%e2 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %n = shard.grid_shape @g axes = [0] : index
  return %s, %n : tensor<4x2xf32>, index
}
