// RUN: hir-import %S/Inputs/megatron_mlp.py | tee %t.tp.mlir | FileCheck %s
// RUN: hir-opt %t.tp.mlir --pass-pipeline='builtin.module(hir-convert-to-communication{backend=gloo})' | FileCheck %s --check-prefix=TP
// RUN: env HIR_SP=1 hir-import %S/Inputs/megatron_mlp.py > %t.sp.mlir
// RUN: hir-opt %t.sp.mlir --pass-pipeline='builtin.module(hir-convert-to-communication{backend=gloo})' | FileCheck %s --check-prefix=SP
// RUN: hir-opt %t.sp.mlir --pass-pipeline='builtin.module(hir-lower)' | FileCheck %s --check-prefix=LOWER
// RUN: hir-opt %t.sp.mlir --pass-pipeline='builtin.module(hir-convert-to-communication{backend=gloo},hir-p2p-pipeline,hir-lower)' | FileCheck %s --check-prefix=P2P
// (Each configuration is imported once: an import is a torch.export, seconds on CI.)
// The Megatron MLP from placements: fc1 is a local column-parallel hir.linear, the GELU a
// kernel segment on local shards, fc2 a local matmul into a leading mesh axis whose sum is
// the allreduce (tensor parallel) or the reduce_scatter (sequence parallel).

// CHECK-LABEL: func.func @main(
// CHECK-SAME:    %[[W1:.*]]: memref<64x16xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>> {hir.parameter}, %[[B1:.*]]: memref<64xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>> {hir.parameter}, %[[W2:.*]]: memref<16x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>> {hir.parameter}, %[[B2:.*]]: memref<16xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>> {hir.parameter}, %[[X:.*]]: memref<8x16xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>)
// CHECK:         "hir.linear"(%[[X]], %[[W1]], %[[H:.*]], %[[B1]]) {{.*}} -> ()
// CHECK:         call @segment_0(%[[H]], %[[G:.*]]) : (memref<8x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
// fc2's input needs no copy: each device's part of [D, T, H/D] split on 0 is its [T, H/D]
// shard, unsqueezed (hir.alias_stack_shards); only the weight is transposed by a kernel.
// CHECK:         %[[GO:.*]] = "hir.alias_stack_shards"(%[[G]]) {at = 0 : i64, axis = 1 : i64} : (memref<8x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
// CHECK:         call @segment_1(%[[W2]], %[[WO:.*]]) : {{.*}} memref<2x32x16xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
// CHECK:         "hir.matmul"(%[[GO]], %[[WO]], %[[P:.*]]) : {{.*}} memref<2x8x16xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
// CHECK:         "hir.reduction"(%[[P]], %[[S:.*]]) {axes = array<i64: 0>, kind = "sum"} : {{.*}} memref<8x16xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
// CHECK:         "hir.binary"(%[[S]], %[[B2]], %{{.*}}) {kind = "add"}
// The GELU runs on this device's [8, 32] shard of the [8, 64] buffer.
// CHECK-LABEL: func.func private @segment_0(
// CHECK:         builtin.unrealized_conversion_cast %{{.*}} : tensor<8x64xf32> to !torch.vtensor<[8,32],f32>
// CHECK-NEXT:    torch.constant.str "tanh"
// CHECK-NEXT:    torch.aten.gelu %{{.*}} : !torch.vtensor<[8,32],f32>, !torch.str -> !torch.vtensor<[8,32],f32>
// The one other segment transposes the weight; nothing unsqueezes the activation.
// CHECK-LABEL: func.func private @segment_1(
// CHECK:         torch.aten.transpose.int
// CHECK-NOT:     func.func private @segment_2(

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

// Sequence parallel: nvFuser's stream-parallel form. The row-split input is viewed as
// [D, T/D, K] and gathered with stream_axis = 0 (an allgather streamed along its split
// axis), fc1 runs per stream slice, and fc2's partial products [S, D, T/S, N] are summed
// over the mesh axis 1 onto the scatter axis 0 (a reduce_scatter streamed along it).
// SP-LABEL: func.func @main(
// SP:         %[[XV:.*]] = "hir.alias_reshape"(%arg4) {reassociation = {{\[\[}}0, 1], [2]]} : (memref<8x16xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<2x4x16xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
// SP:         "hir.allgather"(%[[XV]], %{{.*}}) {axis = 0 : i64, backend = "gloo", stream_axis = 0 : i64, team = array<i64: 0, 1>}
// SP-NEXT:    "hir.wait"
// SP:         "hir.linear"({{.*}}) {operandSegmentSizes = array<i32: 1, 1, 1, 1>, stream_axis = 0 : i64} : {{.*}} memref<2x4x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>
// SP-NEXT:    "hir.alias_reshape"({{.*}}) -> memref<8x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
// SP:         call @segment_0(%{{.*}}, %[[G:.*]]) :
// fc2's x as [S, D, T/S, K/D]: the rows viewed as [S, T/S, K], the shards stacked at 1.
// SP-NEXT:    %[[GR:.*]] = "hir.alias_reshape"(%[[G]]) {reassociation = {{\[\[}}0, 1], [2]]} : (memref<8x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> memref<2x4x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>
// SP-NEXT:    %[[GO:.*]] = "hir.alias_stack_shards"(%[[GR]]) {at = 1 : i64, axis = 2 : i64} : {{.*}} -> memref<2x2x4x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
// SP:         "hir.matmul"(%[[GO]], {{.*}}) {stream_axis = 0 : i64} : {{.*}} memref<2x2x4x16xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
// SP:         "hir.reduce_scatter"({{.*}}) {axis = 1 : i64, backend = "gloo", reduction = "sum", scatter_axis = 0 : i64, stream_axis = 0 : i64, team = array<i64: 0, 1>}
// SP:         "hir.alias_reshape"({{.*}}) -> memref<8x16xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
// SP-NOT:     "hir.set"
// The weight's [1, D, K/D, N] is still a kernel (a transpose); it is the last segment.
// SP-LABEL: func.func private @segment_1(
// SP:         torch.aten.transpose.int
// SP-NOT:     func.func private @segment_2(

// LOWER-LABEL: func.func @main(
// LOWER:       "hir.allgather"
// LOWER:       "hir.reduce_scatter"
// LOWER:       memref.dealloc

// hir-p2p-pipeline pipelines both: the gathered rows arrive by hir.shift (one peer each,
// from a symmetric staging buffer) and fc1 runs on each as it lands, on the own block first; fc2's products for a
// peer are shifted to it and summed there. No collective is left.
// P2P-LABEL: func.func @main(
// P2P-NOT:     "hir.allgather"
// P2P:         memref.alloc() {hir.symmetric} : memref<2x4x16xf32
// P2P:         "hir.own_block"
// P2P:         "hir.linear"
// P2P:         "hir.for"
// P2P:         "hir.shift"({{.*}}) {backend = "gloo", signal = "none", team = array<i64: 0, 1>}
// P2P:         "hir.linear"
// P2P:         call @segment_0
// P2P:         memref.alloc() {hir.symmetric} : memref<2x2x4x16xf32
// P2P:         "hir.for"
// P2P:         "hir.matmul"
// P2P:         "hir.shift"
// P2P:         "hir.reduction"({{.*}}) {axes = array<i64: 0>, kind = "sum"}
// P2P-NOT:     "hir.reduce_scatter"
// P2P:         return
