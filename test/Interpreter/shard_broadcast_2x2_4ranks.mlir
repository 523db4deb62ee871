// shard.broadcast on a 2x2 grid: each device fills a tensor with its linear index. Along grid
// axis 0 with root = [1] each line (devices 0, 2 and 1, 3) gets the tensor of its device at
// coordinate 1 (2 and 3); over both axes with root = [1, 1] every device gets device 3's.
// As converted and after hir-lower.
// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-convert-shard-to-hir{backend=gloo})' -o %t.mlir
// RUN: hir-run --nproc 4 %t.mlir --print > %t.before
// RUN: hir-opt %t.mlir --pass-pipeline='builtin.module(hir-lower)' -o %t.lowered.mlir
// RUN: hir-run --nproc 4 %t.lowered.mlir --print > %t.after
// RUN: diff %t.before %t.after
// RUN: FileCheck %s < %t.after
// RUN: FileCheck %s --check-prefix=IR < %t.mlir

// IR: "hir.broadcast"(%{{.*}}, %{{.*}}) {backend = "gloo", root = array<i64: 2, 3>, team = dense<{{\[\[}}0, 2], [1, 3]]> : tensor<2x2xi64>}
// IR: "hir.broadcast"(%{{.*}}, %{{.*}}) {backend = "gloo", root = array<i64: 3>, team = dense<{{\[\[}}0, 1, 2, 3]]> : tensor<1x4xi64>}
// CHECK:      rank 0: output 0: shape [3] f32
// CHECK-NEXT: rank 0: [2, 2, 2]
// CHECK:      rank 0: output 1: shape [3] f32
// CHECK-NEXT: rank 0: [3, 3, 3]
// CHECK:      rank 1: output 0: shape [3] f32
// CHECK-NEXT: rank 1: [3, 3, 3]
// CHECK:      rank 2: output 0: shape [3] f32
// CHECK-NEXT: rank 2: [2, 2, 2]
// CHECK:      rank 3: output 0: shape [3] f32
// CHECK-NEXT: rank 3: [3, 3, 3]
// CHECK:      rank 3: output 1: shape [3] f32
// CHECK-NEXT: rank 3: [3, 3, 3]
shard.grid @g(shape = 2x2)
func.func @main() -> (tensor<3xf32>, tensor<3xf32>) {
  %i = shard.process_linear_index on @g : index
  %ii = arith.index_cast %i : index to i64
  %f = arith.sitofp %ii : i64 to f32
  %e = tensor.empty() : tensor<3xf32>
  %x = linalg.fill ins(%f : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %t = shard.broadcast %x on @g grid_axes = [0] root = [1] : (tensor<3xf32>) -> tensor<3xf32>
  %u = shard.broadcast %x on @g grid_axes = [0, 1] root = [1, 1] : (tensor<3xf32>) -> tensor<3xf32>
  return %t, %u : tensor<3xf32>, tensor<3xf32>
}
