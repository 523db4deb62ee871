// RUN: not hir-opt %s --pass-pipeline='builtin.module(func.func(sharding-propagation,shard-partition))' 2>&1 | FileCheck %s
// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-from-shard)' | FileCheck %s --check-prefix=PIPELINE
// The pinned wheel's shard-partition fails without emitting a diagnostic on a tensor constant
// that carries no sharding (tosa.matmul's zero points after tosa-to-linalg: the hir-from-shard
// pipeline runs canonicalize first, which drops them). The error names the upstream pipeline
// that failed (there is no location to give), never "Failure while executing pass pipeline".
// CHECK: hir-from-shard-upstream-silent.mlir: error: upstream 'func.func(sharding-propagation,shard-partition)' failed without a diagnostic
// CHECK-NOT: Traceback
// PIPELINE-LABEL: func.func @f(
// PIPELINE-SAME:  memref<8x16xf32, #hir.shard<dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>
shard.grid @grid(shape = 2x2)
func.func @f(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %zp = arith.constant dense<0.0> : tensor<1xf32>
  %s = shard.sharding @grid split_axes = [[0], [1]] : !shard.sharding
  %x1 = shard.shard %x to %s annotate_for_users : tensor<8x16xf32>
  %h = tosa.sigmoid %x1 : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %hs = shard.shard %h to %s : tensor<8x16xf32>
  %r = shard.shard %hs to %s annotate_for_users : tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
