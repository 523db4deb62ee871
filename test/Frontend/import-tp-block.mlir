// RUN: hir-import %S/Inputs/tp_block.py | tee %t.mlir | FileCheck %s
// RUN: hir-opt %t.mlir --pass-pipeline='builtin.module(hir-convert-to-communication{backend=gloo},hir-lower)' | FileCheck %s --check-prefix=LOWER
// A pre-norm transformer block with tensor-parallel heads on 2 devices: q/k/v are local
// column-parallel linears, their head views are split along the heads axis (the segment's
// view sizes become local), the attention matmuls and the softmax run on local heads, and
// the two row-parallel contractions (proj, fc2) are the only partial sums.

// CHECK-LABEL: func.func @main(
// CHECK:         "hir.linear"({{.*}}) {{.*}}: (memref<2x8x16xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<16x16xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<2x8x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>
// CHECK:         call @segment_1({{.*}}) : (memref<2x8x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
// CHECK:         "hir.matmul"({{.*}}) : (memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<2x4x4x8xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<2x4x8x8xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
// CHECK:         "hir.reduction"({{.*}}) {axes = array<i64: 0>, kind = "sum"} : (memref<2x2x8x16xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<2x8x16xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
// CHECK:         "hir.reduction"({{.*}}) {axes = array<i64: 0>, kind = "sum"}
// CHECK-NOT:     "hir.set"
// CHECK-LABEL: func.func private @segment_1(
// CHECK:         %[[SIZES:.*]] = torch.prim.ListConstruct %int2, %int8, %int2_1, %int4
// CHECK:         torch.aten.reshape %{{.*}}, %[[SIZES]] : !torch.vtensor<[2,8,8],f32>, !torch.list<int> -> !torch.vtensor<[2,8,2,4],f32>
// CHECK:         torch.aten.transpose.int {{.*}} -> !torch.vtensor<[2,2,8,4],f32>
// The softmax runs on this device's two heads.
// CHECK:         torch.aten.softmax.int {{.*}} : !torch.vtensor<[2,2,8,8],f32>

// LOWER-LABEL: func.func @main(
// LOWER-NOT:     "hir.allgather"
// LOWER:         "hir.allreduce"({{.*}}) {axis = 0 : i64, backend = "gloo", reduction = "sum", team = array<i64: 0, 1>}
// LOWER-NOT:     "hir.allgather"
// LOWER:         "hir.allreduce"({{.*}}) {axis = 0 : i64, backend = "gloo", reduction = "sum", team = array<i64: 0, 1>}
// LOWER-NOT:     "hir.allgather"
// LOWER-NOT:     "hir.allreduce"

// RUN: hir-import %S/Inputs/dp_tp_block.py | hir-opt --pass-pipeline='builtin.module(hir-convert-to-communication{backend=gloo},hir-lower)' | FileCheck %s --check-prefix=DPTP
// On the 2x2 mesh the input's batch is split over mesh axis 0 and the two partial sums are
// allreduced along mesh axis 1 only (one team per row of the mesh).
// DPTP-LABEL: func.func @main(
// DPTP-SAME:    memref<2x8x16xf32, #hir.shard<dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>) -> memref<2x8x16xf32, #hir.shard<dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>
// DPTP-NOT:     "hir.allgather"
// DPTP:         "hir.allreduce"({{.*}}) {axis = 0 : i64, backend = "gloo", reduction = "sum", team = dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>}
// DPTP-NOT:     "hir.allgather"
// DPTP:         "hir.allreduce"({{.*}}) {axis = 0 : i64, backend = "gloo", reduction = "sum", team = dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>}
// DPTP-NOT:     "hir.allgather"
