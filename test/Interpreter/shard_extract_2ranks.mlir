// A host read of a replicated tensor's element (tensor.extract -> memref.load), and host
// scalar arithmetic on it, run on 2 Gloo ranks as converted and after hir-lower.
// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-from-shard)' -o %t.mlir
// RUN: hir-run --nproc 2 %t.mlir arange --print > %t.before
// RUN: hir-opt %t.mlir --pass-pipeline='builtin.module(hir-lower)' -o %t.lowered.mlir
// RUN: hir-run --nproc 2 %t.lowered.mlir arange --print > %t.after
// RUN: diff %t.before %t.after
// RUN: FileCheck %s < %t.after
// RUN: FileCheck %s --check-prefix=IR < %t.mlir

// IR: memref.load %arg0[%{{.*}}] : memref<4xi64, #hir.shard<array<i64: 0, 1>, -1 : i64>>
// CHECK-DAG: rank 0: output 0: 3
// CHECK-DAG: rank 1: output 0: 3
shard.grid @g(shape = 2)
func.func @main(%x: tensor<4xi64>) -> i64 {
  %c3 = arith.constant 3 : index
  %c1 = arith.constant 1 : i64
  %e = tensor.extract %x[%c3] : tensor<4xi64>
  %m = arith.maxsi %e, %c1 : i64
  return %m : i64
}
