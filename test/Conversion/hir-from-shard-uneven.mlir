// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-record-shard-signature)' | FileCheck %s --check-prefix=SIG
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-from-shard-no-propagation)' | FileCheck %s
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-from-shard-no-propagation,hir-lower)' | FileCheck %s --check-prefix=LOWER
// An uneven split (sharded_dims_offsets) of a fully annotated program: the signature records
// the boundaries beside the split axes, shard-partition (no propagation) sizes the local
// tensor.empty by shard.shard_shape, and the conversion places the buffers unevenly and
// computes the device's extent on the host. test_from_shard_uneven.py runs it on Gloo ranks.

shard.grid @g(shape = 4)
// SIG-LABEL: func.func @exp_rows
// SIG-SAME: hir.global_type = tensor<8x4xf32>, hir.sharded_dims_offsets = array<i64: 0, 1, 4, 7, 8>, hir.split_axes = #shard<axisarray{{\[\[}}0]]>
// CHECK-LABEL: func.func @exp_rows
// CHECK-SAME: (%[[X:.*]]: memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, {axis = 0 : i64, offsets = array<i64: 0, 1, 4, 7, 8>}>>)
// CHECK: %[[D:.*]] = "hir.device_index"() {mesh = array<i64: 0, 1, 2, 3>}
// CHECK: arith.cmpi eq, %[[D]]
// CHECK: arith.select
// CHECK: arith.cmpi eq, %[[D]]
// CHECK: %[[N:.*]] = arith.select
// CHECK: %[[Y:.*]] = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, {axis = 0 : i64, offsets = array<i64: 0, 1, 4, 7, 8>}>>
// CHECK: call @exp_rows_kernel_0(%[[X]], %[[N]], %[[Y]])
// CHECK: return %[[Y]]
// LOWER-LABEL: func.func @exp_rows
// LOWER: call @exp_rows_kernel_0
func.func @exp_rows(%a: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %s = shard.sharding @g split_axes = [[0]] sharded_dims_offsets = [0, 1, 4, 7, 8] : !shard.sharding
  %a1 = shard.shard %a to %s : tensor<8x4xf32>
  %a2 = shard.shard %a1 to %s annotate_for_users : tensor<8x4xf32>
  %e = tensor.empty() : tensor<8x4xf32>
  %e1 = shard.shard %e to %s : tensor<8x4xf32>
  %e2 = shard.shard %e1 to %s annotate_for_users : tensor<8x4xf32>
  %y = linalg.exp ins(%a2 : tensor<8x4xf32>) outs(%e2 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %y1 = shard.shard %y to %s : tensor<8x4xf32>
  %y2 = shard.shard %y1 to %s annotate_for_users : tensor<8x4xf32>
  return %y2 : tensor<8x4xf32>
}
