// RUN: hir-import %S/Inputs/megatron_mlp.py | FileCheck %s
// RUN: hir-import %S/Inputs/megatron_mlp.py | hir-opt --pass-pipeline='builtin.module(hir-convert-to-communication{backend=gloo})' | FileCheck %s --check-prefix=TP
// RUN: env HIR_SP=1 hir-import %S/Inputs/megatron_mlp.py | hir-opt --pass-pipeline='builtin.module(hir-convert-to-communication{backend=gloo})' | FileCheck %s --check-prefix=SP
// RUN: env HIR_SP=1 hir-import %S/Inputs/megatron_mlp.py | hir-opt --pass-pipeline='builtin.module(hir-lower)' | FileCheck %s --check-prefix=LOWER
// The Megatron MLP from placements: fc1 is a local column-parallel hir.linear, the GELU a
// kernel segment on local shards, fc2 a local matmul into a leading mesh axis whose sum is
// the allreduce (tensor parallel) or the reduce_scatter (sequence parallel).

// CHECK-LABEL: func.func @main(
// CHECK-SAME:    %[[W1:.*]]: memref<64x16xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %[[B1:.*]]: memref<64xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %[[W2:.*]]: memref<16x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, %[[B2:.*]]: memref<16xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, %[[X:.*]]: memref<8x16xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>)
// CHECK:         "hir.linear"(%[[X]], %[[W1]], %[[H:.*]], %[[B1]]) {{.*}} -> ()
// CHECK:         call @segment_0(%[[H]], %[[G:.*]]) : (memref<8x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
// CHECK:         call @segment_1(%[[G]], %[[GO:.*]]) : {{.*}} memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
// CHECK:         call @segment_2(%[[W2]], %[[WO:.*]]) : {{.*}} memref<2x32x16xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
// CHECK:         "hir.matmul"(%[[GO]], %[[WO]], %[[P:.*]]) : {{.*}} memref<2x8x16xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
// CHECK:         "hir.reduction"(%[[P]], %[[S:.*]]) {axes = array<i64: 0>, kind = "sum"} : {{.*}} memref<8x16xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
// CHECK:         "hir.binary"(%[[S]], %[[B2]], %{{.*}}) {kind = "add"}
// The GELU runs on this device's [8, 32] shard of the [8, 64] buffer.
// CHECK-LABEL: func.func private @segment_0(
// CHECK:         builtin.unrealized_conversion_cast %{{.*}} : tensor<8x64xf32> to !torch.vtensor<[8,32],f32>
// CHECK-NEXT:    torch.constant.str "tanh"
// CHECK-NEXT:    torch.aten.gelu %{{.*}} : !torch.vtensor<[8,32],f32>, !torch.str -> !torch.vtensor<[8,32],f32>

// TP-LABEL: func.func @main(
// TP:         "hir.linear"
// TP-NEXT:    memref.alloc
// TP-NEXT:    call @segment_0
// TP:         "hir.matmul"
// TP-NEXT:    memref.alloc
// TP-NEXT:    %[[W:.*]] = "hir.allreduce"({{.*}}) {axis = 0 : i64, backend = "gloo", reduction = "sum", team = array<i64: 0, 1>}
// TP-NEXT:    "hir.wait"(%[[W]])
// TP-NOT:     "hir.set"
// TP-NOT:     "hir.reduction"

// SP-LABEL: func.func @main(
// SP:         "hir.allgather"(%arg4, %{{.*}}) {axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1>}
// SP-NEXT:    "hir.wait"
// SP:         "hir.linear"
// SP:         call @segment_0
// SP:         "hir.matmul"
// SP:         "hir.reduce_scatter"({{.*}}) {axis = 0 : i64, backend = "gloo", reduction = "sum", scatter_axis = 1 : i64, team = array<i64: 0, 1>}
// SP-NOT:     "hir.set"

// LOWER-LABEL: func.func @main(
// LOWER:       "hir.allgather"
// LOWER:       "hir.reduce_scatter"
// LOWER:       memref.dealloc
