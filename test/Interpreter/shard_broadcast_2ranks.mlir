// shard.broadcast from root 1: each device fills a tensor with its index, and every device
// ends with device 1's (ones), as converted and after hir-lower.
// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-convert-shard-to-hir{backend=gloo})' -o %t.mlir
// RUN: hir-run --nproc 2 %t.mlir --print > %t.before
// RUN: hir-opt %t.mlir --pass-pipeline='builtin.module(hir-lower)' -o %t.lowered.mlir
// RUN: hir-run --nproc 2 %t.lowered.mlir --print > %t.after
// RUN: diff %t.before %t.after
// RUN: FileCheck %s < %t.after
// RUN: FileCheck %s --check-prefix=IR < %t.mlir

// IR: "hir.broadcast"(%{{.*}}, %{{.*}}) {backend = "gloo", root = 1 : i64, team = array<i64: 0, 1>}
// CHECK:     rank 0: output 0: shape [2, 3] f32
// CHECK-NEXT: rank 0: {{\[\[}}1, 1, 1],
// CHECK-NEXT: rank 0:  [1, 1, 1]]
// CHECK:     rank 1: output 0: shape [2, 3] f32
// CHECK-NEXT: rank 1: {{\[\[}}1, 1, 1],
shard.grid @g(shape = 2)
func.func @main() -> tensor<2x3xf32> {
  %i = shard.process_linear_index on @g : index
  %ii = arith.index_cast %i : index to i64
  %f = arith.sitofp %ii : i64 to f32
  %e = tensor.empty() : tensor<2x3xf32>
  %x = linalg.fill ins(%f : f32) outs(%e : tensor<2x3xf32>) -> tensor<2x3xf32>
  %t = shard.broadcast %x on @g grid_axes = [0] root = [1] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %t : tensor<2x3xf32>
}
