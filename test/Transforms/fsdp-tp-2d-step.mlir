// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-insert-reshardings,hir-convert-to-communication{backend=gloo})' | FileCheck %s
// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-insert-reshardings,hir-convert-to-communication{backend=gloo})' | FileCheck %s --check-prefix=TEAMS
// A training step on a 2-D mesh as hir.train_step(..., mesh=[[0, 1], [2, 3]], data_parallel="fully_shard",
// placements={"0.weight": Shard(0), "2.weight": Shard(1)}) imports it (the body is the import's, unedited) of
// Sequential(Linear(4, 8, bias=False), ReLU(), Linear(8, 4, bias=False)) with SGD and loss m(x).square().sum():
// FSDP along mesh axis 0 (the teams [0, 2], [1, 3]), TP along axis 1 (the teams [0, 1], [2, 3]). The
// column-split fc1 weight (8x4, TP on dim 0) is held split on dim 1 along axis 0, the row-split fc2
// weight (4x8, TP on dim 1) on dim 0; each is all-gathered along axis 0 only, the batch's partial
// sums (the loss, the weight gradients) are summed along axis 0 only, and the row-split layer's
// output along axis 1 only. The weight gradients are reduce-scattered onto the held 2-D shards.

// CHECK-LABEL: func.func @main(
// the forward: each weight gathered along axis 0 on its FSDP dim, still split on its TP dim
// CHECK:       "hir.allgather"(%arg0, %{{.*}}) {axis = 1 : i64, backend = "gloo", team = dense<{{\[\[0, 2\], \[1, 3\]\]}}> {{.*}}array<i64: 1, 0>>>, memref<8x4xf32, {{.*}}array<i64: -1, 0>>>)
// CHECK:       "hir.allgather"(%arg1, %{{.*}}) {axis = 0 : i64, backend = "gloo", team = dense<{{\[\[0, 2\], \[1, 3\]\]}}> {{.*}}array<i64: 0, 1>>>, memref<4x8xf32, {{.*}}array<i64: -1, 1>>>)
// fc2's contraction over its split input: a sum along axis 1 (TP)
// CHECK:       "hir.allreduce"({{.*}}) {axis = 0 : i64, backend = "gloo", reduction = "sum", team = dense<{{\[\[0, 1\], \[2, 3\]\]}}>
// the loss: a sum of the batch rows along axis 0 (data parallel)
// CHECK:       "hir.allreduce"({{.*}}) {axis = 0 : i64, backend = "gloo", reduction = "sum", team = dense<{{\[\[0, 2\], \[1, 3\]\]}}>
// the backward: fc2's weight gathered again (reshard_after_forward), the gradients reduce-scattered along axis 0 onto the held shards
// CHECK:       "hir.allgather"(%arg1, %{{.*}}) {axis = 0 : i64, backend = "gloo", team = dense<{{\[\[0, 2\], \[1, 3\]\]}}>
// CHECK:       "hir.reduce_scatter"({{.*}}) {axis = 0 : i64, backend = "gloo", reduction = "sum", scatter_axis = 1 : i64, team = dense<{{\[\[0, 2\], \[1, 3\]\]}}> {{.*}}, memref<4x8xf32, {{.*}}array<i64: 0, 1>>>) -> !hir.work
// CHECK:       "hir.reduce_scatter"({{.*}}) {axis = 0 : i64, backend = "gloo", reduction = "sum", scatter_axis = 2 : i64, team = dense<{{\[\[0, 2\], \[1, 3\]\]}}> {{.*}}, memref<8x4xf32, {{.*}}array<i64: 1, 0>>>) -> !hir.work
// the update on the held shards
// CHECK:       "hir.binary"(%arg0, {{.*}}) {kind = "add"}
// CHECK:       "hir.binary"(%arg1, {{.*}}) {kind = "add"}
// CHECK:       return

// no collective spans the whole mesh (a 1-D team of the four devices)
// TEAMS-LABEL: func.func @main(
// TEAMS-NOT:   team = array<i64
// TEAMS:       return

module {
  func.func @main(%arg0: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>, %arg1: memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, %arg2: memref<f64, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>> {hir.parameter}, %arg3: memref<f64, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>> {hir.parameter}, %arg4: memref<f64, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>> {hir.parameter}, %arg5: memref<f64, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>> {hir.parameter}, %arg6: memref<f64, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>> {hir.parameter}, %arg7: memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>) -> memref<f32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>> {
    %alloc = memref.alloc() : memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 0>>>
    "hir.set"(%arg0, %alloc) : (memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 0>>>) -> ()
    %alloc_0 = memref.alloc() : memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 1>>>
    "hir.set"(%arg1, %alloc_0) : (memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 1>>>) -> ()
    %alloc_1 = memref.alloc() : memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 1>>>
    call @segment_0(%alloc, %alloc_1) : (memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 0>>>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 1>>>) -> ()
    %alloc_2 = memref.alloc() : memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>
    "hir.matmul"(%arg7, %alloc_1, %alloc_2) : (memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 1>>>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>) -> ()
    %alloc_3 = memref.alloc() : memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>
    %alloc_4 = memref.alloc() : memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 0>>>
    call @segment_1(%alloc_2, %alloc_0, %alloc_3, %alloc_4) : (memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 1>>>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 0>>>) -> ()
    %0 = "hir.alias_stack_shards"(%alloc_3) {at = 0 : i64, axis = 1 : i64} : (memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>) -> memref<2x4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>
    %1 = "hir.alias_stack_shards"(%alloc_4) {at = 0 : i64, axis = 0 : i64} : (memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 0>>>) -> memref<2x4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 0>>>
    %alloc_5 = memref.alloc() : memref<2x4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>
    "hir.matmul"(%0, %1, %alloc_5) : (memref<2x4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>, memref<2x4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 0>>>, memref<2x4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>) -> ()
    %alloc_6 = memref.alloc() : memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>
    "hir.reduction"(%alloc_5, %alloc_6) {axes = array<i64: 0>, kind = "sum"} : (memref<2x4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>, memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>) -> ()
    %alloc_7 = memref.alloc() : memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>
    call @segment_2(%alloc_6, %alloc_7) : (memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>, memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>) -> ()
    %alloc_8 = memref.alloc() : memref<2xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>
    call @segment_3(%alloc_7, %alloc_8) : (memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>, memref<2xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>) -> ()
    %alloc_9 = memref.alloc() : memref<f32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>
    "hir.reduction"(%alloc_8, %alloc_9) {axes = array<i64: 0>, kind = "sum"} : (memref<2xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>, memref<f32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) -> ()
    %alloc_10 = memref.alloc() : memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>
    %alloc_11 = memref.alloc() : memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>
    call @segment_4(%alloc_9, %alloc_6, %alloc_10, %alloc_11) : (memref<f32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>, memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>, memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>, memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>) -> ()
    %alloc_12 = memref.alloc() : memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>
    call @segment_5(%alloc_10, %alloc_12) : (memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>, memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>) -> ()
    %alloc_13 = memref.alloc() : memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>
    "hir.binary"(%alloc_12, %alloc_11, %alloc_13) {kind = "mul"} : (memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>, memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>, memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>) -> ()
    %alloc_14 = memref.alloc() : memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 1>>>
    "hir.set"(%arg1, %alloc_14) : (memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 1>>>) -> ()
    %alloc_15 = memref.alloc() : memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 0>>>
    %alloc_16 = memref.alloc() : memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>
    %alloc_17 = memref.alloc() : memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, -1>>>
    call @segment_6(%alloc_14, %alloc_3, %alloc_13, %alloc_15, %alloc_16, %alloc_17) : (memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 1>>>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 0>>>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, -1>>>) -> ()
    %2 = "hir.alias_stack_shards"(%alloc_17) {at = 0 : i64, axis = 1 : i64} : (memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, -1>>>) -> memref<2x4x2xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>
    %3 = "hir.alias_stack_shards"(%alloc_16) {at = 0 : i64, axis = 0 : i64} : (memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>) -> memref<2x2x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 2>>>
    %alloc_18 = memref.alloc() : memref<2x4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 2>>>
    "hir.matmul"(%2, %3, %alloc_18) : (memref<2x4x2xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>, memref<2x2x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 2>>>, memref<2x4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 2>>>) -> ()
    %alloc_19 = memref.alloc() : memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>
    "hir.reduction"(%alloc_18, %alloc_19) {axes = array<i64: 0>, kind = "sum"} : (memref<2x4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 2>>>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>) -> ()
    %alloc_20 = memref.alloc() : memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>
    %alloc_21 = memref.alloc() : memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 1>>>
    call @segment_7(%alloc_19, %alloc_15, %alloc_20, %alloc_21) : (memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 0>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 1>>>) -> ()
    %alloc_22 = memref.alloc() : memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>
    "hir.matmul"(%alloc_13, %alloc_21, %alloc_22) : (memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 1>>>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>) -> ()
    %alloc_23 = memref.alloc() : memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>
    %alloc_24 = memref.alloc() : memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>
    call @segment_8(%alloc_20, %alloc_3, %alloc_22, %alloc_23, %alloc_24) : (memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>) -> ()
    %4 = "hir.alias_stack_shards"(%alloc_24) {at = 0 : i64, axis = 1 : i64} : (memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>) -> memref<2x8x2xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>
    %5 = "hir.alias_stack_shards"(%arg7) {at = 0 : i64, axis = 0 : i64} : (memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>) -> memref<2x2x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>
    %alloc_25 = memref.alloc() : memref<2x8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>
    "hir.matmul"(%4, %5, %alloc_25) : (memref<2x8x2xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, memref<2x2x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>, memref<2x8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>) -> ()
    %alloc_26 = memref.alloc() : memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>
    "hir.reduction"(%alloc_25, %alloc_26) {axes = array<i64: 0>, kind = "sum"} : (memref<2x8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>) -> ()
    %alloc_27 = memref.alloc() : memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>
    %alloc_28 = memref.alloc() : memref<f32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>
    call @segment_9(%alloc_26, %alloc_9, %alloc_27, %alloc_28) : (memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>, memref<f32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>, memref<f32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) -> ()
    %alloc_29 = memref.alloc() : memref<f32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>
    call @segment_10(%arg2, %alloc_29) : (memref<f64, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>, memref<f32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) -> ()
    %alloc_30 = memref.alloc() : memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>
    "hir.binary"(%alloc_27, %alloc_29, %alloc_30) {kind = "mul"} : (memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>, memref<f32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>) -> ()
    %alloc_31 = memref.alloc() : memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>
    "hir.binary"(%arg0, %alloc_30, %alloc_31) {kind = "add"} : (memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>) -> ()
    %alloc_32 = memref.alloc() : memref<f32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>
    call @segment_11(%arg2, %alloc_32) : (memref<f64, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>, memref<f32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) -> ()
    %alloc_33 = memref.alloc() : memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>
    "hir.binary"(%alloc_23, %alloc_32, %alloc_33) {kind = "mul"} : (memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, memref<f32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>) -> ()
    %alloc_34 = memref.alloc() : memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>
    "hir.binary"(%arg1, %alloc_33, %alloc_34) {kind = "add"} : (memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>) -> ()
    "hir.set"(%alloc_31, %arg0) : (memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>) -> ()
    "hir.set"(%alloc_34, %arg1) : (memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>) -> ()
    return %alloc_28 : memref<f32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>
  }
  func.func private @segment_0(%arg0: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 0>>>, %arg1: memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 1>>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 0>>> to tensor<8x4xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<8x4xf32> to !torch.vtensor<[4,4],f32>
    %2 = torch.aten.t %1 : !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
    %3 = builtin.unrealized_conversion_cast %2 : !torch.vtensor<[4,4],f32> to tensor<4x8xf32>
    bufferization.materialize_in_destination %3 in restrict writable %arg1 : (tensor<4x8xf32>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 1>>>) -> ()
    return
  }
  func.func private @segment_1(%arg0: memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, %arg1: memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 1>>>, %arg2: memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, %arg3: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 0>>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>> to tensor<4x8xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<4x8xf32> to !torch.vtensor<[2,4],f32>
    %2 = bufferization.to_tensor %arg1 restrict : memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 1>>> to tensor<4x8xf32>
    %3 = builtin.unrealized_conversion_cast %2 : tensor<4x8xf32> to !torch.vtensor<[4,4],f32>
    %4 = torch.aten.relu %1 : !torch.vtensor<[2,4],f32> -> !torch.vtensor<[2,4],f32>
    %5 = torch.aten.t %3 : !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
    %6 = builtin.unrealized_conversion_cast %4 : !torch.vtensor<[2,4],f32> to tensor<4x8xf32>
    bufferization.materialize_in_destination %6 in restrict writable %arg2 : (tensor<4x8xf32>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>) -> ()
    %7 = builtin.unrealized_conversion_cast %5 : !torch.vtensor<[4,4],f32> to tensor<8x4xf32>
    bufferization.materialize_in_destination %7 in restrict writable %arg3 : (tensor<8x4xf32>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 0>>>) -> ()
    return
  }
  func.func private @segment_2(%arg0: memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>, %arg1: memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>> to tensor<4x4xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<4x4xf32> to !torch.vtensor<[2,4],f32>
    %int2 = torch.constant.int 2
    %2 = torch.aten.pow.Tensor_Scalar %1, %int2 : !torch.vtensor<[2,4],f32>, !torch.int -> !torch.vtensor<[2,4],f32>
    %3 = builtin.unrealized_conversion_cast %2 : !torch.vtensor<[2,4],f32> to tensor<4x4xf32>
    bufferization.materialize_in_destination %3 in restrict writable %arg1 : (tensor<4x4xf32>, memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>) -> ()
    return
  }
  func.func private @segment_3(%arg0: memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>, %arg1: memref<2xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>> to tensor<4x4xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<4x4xf32> to !torch.vtensor<[2,4],f32>
    %none = torch.constant.none
    %2 = "hir.device_index"() {mesh = array<i64: 0, 1, 2, 3>} : () -> index
    %c2 = arith.constant 2 : index
    %3 = arith.divui %2, %c2 : index
    %c2_0 = arith.constant 2 : index
    %4 = arith.muli %3, %c2_0 : index
    %5 = builtin.unrealized_conversion_cast %4 : index to !torch.int
    %6 = torch.aten.sum %1, %none : !torch.vtensor<[2,4],f32>, !torch.none -> !torch.vtensor<[],f32>
    %int0 = torch.constant.int 0
    %7 = torch.aten.unsqueeze %6, %int0 : !torch.vtensor<[],f32>, !torch.int -> !torch.vtensor<[1],f32>
    %8 = builtin.unrealized_conversion_cast %7 : !torch.vtensor<[1],f32> to tensor<2xf32>
    bufferization.materialize_in_destination %8 in restrict writable %arg1 : (tensor<2xf32>, memref<2xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>) -> ()
    return
  }
  func.func private @segment_4(%arg0: memref<f32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>, %arg1: memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>, %arg2: memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>, %arg3: memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<f32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>> to tensor<f32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<f32> to !torch.vtensor<[],f32>
    %2 = bufferization.to_tensor %arg1 restrict : memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>> to tensor<4x4xf32>
    %3 = builtin.unrealized_conversion_cast %2 : tensor<4x4xf32> to !torch.vtensor<[2,4],f32>
    %none = torch.constant.none
    %none_0 = torch.constant.none
    %none_1 = torch.constant.none
    %false = torch.constant.bool false
    %int1 = torch.constant.int 1
    %4 = torch.aten.ones_like %1, %none, %none_0, %none_1, %false, %int1 : !torch.vtensor<[],f32>, !torch.none, !torch.none, !torch.none, !torch.bool, !torch.int -> !torch.vtensor<[],f32>
    %int4 = torch.constant.int 4
    %int4_2 = torch.constant.int 4
    %5 = torch.prim.ListConstruct %int4, %int4_2 : (!torch.int, !torch.int) -> !torch.list<int>
    %false_3 = torch.constant.bool false
    %6 = torch.aten.expand %4, %5, %false_3 : !torch.vtensor<[],f32>, !torch.list<int>, !torch.bool -> !torch.vtensor<[4,4],f32>
    %7 = torch.aten.detach %3 : !torch.vtensor<[2,4],f32> -> !torch.vtensor<[2,4],f32>
    %float1.000000e00 = torch.constant.float 1.000000e+00
    %8 = torch.aten.pow.Tensor_Scalar %7, %float1.000000e00 : !torch.vtensor<[2,4],f32>, !torch.float -> !torch.vtensor<[2,4],f32>
    %float2.000000e00 = torch.constant.float 2.000000e+00
    %9 = torch.aten.mul.Scalar %8, %float2.000000e00 : !torch.vtensor<[2,4],f32>, !torch.float -> !torch.vtensor<[2,4],f32>
    %10 = builtin.unrealized_conversion_cast %6 : !torch.vtensor<[4,4],f32> to tensor<4x4xf32>
    bufferization.materialize_in_destination %10 in restrict writable %arg2 : (tensor<4x4xf32>, memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) -> ()
    %11 = builtin.unrealized_conversion_cast %9 : !torch.vtensor<[2,4],f32> to tensor<4x4xf32>
    bufferization.materialize_in_destination %11 in restrict writable %arg3 : (tensor<4x4xf32>, memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>) -> ()
    return
  }
  func.func private @segment_5(%arg0: memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>, %arg1: memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>> to tensor<4x4xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<4x4xf32> to !torch.vtensor<[4,4],f32>
    %int2 = torch.constant.int 2
    %2 = "hir.device_index"() {mesh = array<i64: 0, 1, 2, 3>} : () -> index
    %c2 = arith.constant 2 : index
    %3 = arith.divui %2, %c2 : index
    %4 = builtin.unrealized_conversion_cast %3 : index to !torch.int
    %5 = torch.aten.mul.int %4, %int2 : !torch.int, !torch.int -> !torch.int
    %int0 = torch.constant.int 0
    %6 = torch.aten.narrow %1, %int0, %5, %int2 : !torch.vtensor<[4,4],f32>, !torch.int, !torch.int, !torch.int -> !torch.vtensor<[2,4],f32>
    %7 = builtin.unrealized_conversion_cast %6 : !torch.vtensor<[2,4],f32> to tensor<4x4xf32>
    bufferization.materialize_in_destination %7 in restrict writable %arg1 : (tensor<4x4xf32>, memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>) -> ()
    return
  }
  func.func private @segment_6(%arg0: memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 1>>>, %arg1: memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, %arg2: memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>, %arg3: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 0>>>, %arg4: memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, %arg5: memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, -1>>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 1>>> to tensor<4x8xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<4x8xf32> to !torch.vtensor<[4,4],f32>
    %2 = bufferization.to_tensor %arg1 restrict : memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>> to tensor<4x8xf32>
    %3 = builtin.unrealized_conversion_cast %2 : tensor<4x8xf32> to !torch.vtensor<[2,4],f32>
    %4 = bufferization.to_tensor %arg2 restrict : memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>> to tensor<4x4xf32>
    %5 = builtin.unrealized_conversion_cast %4 : tensor<4x4xf32> to !torch.vtensor<[2,4],f32>
    %6 = torch.aten.t %1 : !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
    %7 = torch.aten.detach %6 : !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
    %8 = torch.aten.detach %3 : !torch.vtensor<[2,4],f32> -> !torch.vtensor<[2,4],f32>
    %9 = torch.aten.t %5 : !torch.vtensor<[2,4],f32> -> !torch.vtensor<[4,2],f32>
    %10 = builtin.unrealized_conversion_cast %7 : !torch.vtensor<[4,4],f32> to tensor<8x4xf32>
    bufferization.materialize_in_destination %10 in restrict writable %arg3 : (tensor<8x4xf32>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 0>>>) -> ()
    %11 = builtin.unrealized_conversion_cast %8 : !torch.vtensor<[2,4],f32> to tensor<4x8xf32>
    bufferization.materialize_in_destination %11 in restrict writable %arg4 : (tensor<4x8xf32>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>) -> ()
    %12 = builtin.unrealized_conversion_cast %9 : !torch.vtensor<[4,2],f32> to tensor<4x4xf32>
    bufferization.materialize_in_destination %12 in restrict writable %arg5 : (tensor<4x4xf32>, memref<4x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, -1>>>) -> ()
    return
  }
  func.func private @segment_7(%arg0: memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, %arg1: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 0>>>, %arg2: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>, %arg3: memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 1>>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>> to tensor<4x8xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<4x8xf32> to !torch.vtensor<[2,4],f32>
    %2 = bufferization.to_tensor %arg1 restrict : memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 0>>> to tensor<8x4xf32>
    %3 = builtin.unrealized_conversion_cast %2 : tensor<8x4xf32> to !torch.vtensor<[4,4],f32>
    %4 = torch.aten.t %1 : !torch.vtensor<[2,4],f32> -> !torch.vtensor<[4,2],f32>
    %5 = torch.aten.t %3 : !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
    %6 = builtin.unrealized_conversion_cast %4 : !torch.vtensor<[4,2],f32> to tensor<8x4xf32>
    bufferization.materialize_in_destination %6 in restrict writable %arg2 : (tensor<8x4xf32>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>) -> ()
    %7 = builtin.unrealized_conversion_cast %5 : !torch.vtensor<[4,4],f32> to tensor<4x8xf32>
    bufferization.materialize_in_destination %7 in restrict writable %arg3 : (tensor<4x8xf32>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 1>>>) -> ()
    return
  }
  func.func private @segment_8(%arg0: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>, %arg1: memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, %arg2: memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, %arg3: memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, %arg4: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>> to tensor<8x4xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<8x4xf32> to !torch.vtensor<[4,2],f32>
    %2 = bufferization.to_tensor %arg1 restrict : memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>> to tensor<4x8xf32>
    %3 = builtin.unrealized_conversion_cast %2 : tensor<4x8xf32> to !torch.vtensor<[2,4],f32>
    %4 = bufferization.to_tensor %arg2 restrict : memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>> to tensor<4x8xf32>
    %5 = builtin.unrealized_conversion_cast %4 : tensor<4x8xf32> to !torch.vtensor<[2,4],f32>
    %6 = torch.aten.t %1 : !torch.vtensor<[4,2],f32> -> !torch.vtensor<[2,4],f32>
    %7 = torch.aten.detach %3 : !torch.vtensor<[2,4],f32> -> !torch.vtensor<[2,4],f32>
    %int0 = torch.constant.int 0
    %8 = torch.aten.threshold_backward %5, %7, %int0 : !torch.vtensor<[2,4],f32>, !torch.vtensor<[2,4],f32>, !torch.int -> !torch.vtensor<[2,4],f32>
    %9 = torch.aten.t %8 : !torch.vtensor<[2,4],f32> -> !torch.vtensor<[4,2],f32>
    %10 = builtin.unrealized_conversion_cast %6 : !torch.vtensor<[2,4],f32> to tensor<4x8xf32>
    bufferization.materialize_in_destination %10 in restrict writable %arg3 : (tensor<4x8xf32>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>) -> ()
    %11 = builtin.unrealized_conversion_cast %9 : !torch.vtensor<[4,2],f32> to tensor<8x4xf32>
    bufferization.materialize_in_destination %11 in restrict writable %arg4 : (tensor<8x4xf32>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>) -> ()
    return
  }
  func.func private @segment_9(%arg0: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>, %arg1: memref<f32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>, %arg2: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>, %arg3: memref<f32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>> to tensor<8x4xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<8x4xf32> to !torch.vtensor<[4,2],f32>
    %2 = bufferization.to_tensor %arg1 restrict : memref<f32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>> to tensor<f32>
    %3 = builtin.unrealized_conversion_cast %2 : tensor<f32> to !torch.vtensor<[],f32>
    %4 = torch.aten.t %1 : !torch.vtensor<[4,2],f32> -> !torch.vtensor<[2,4],f32>
    %5 = torch.aten.t %4 : !torch.vtensor<[2,4],f32> -> !torch.vtensor<[4,2],f32>
    %6 = torch.aten.detach %3 : !torch.vtensor<[],f32> -> !torch.vtensor<[],f32>
    %7 = builtin.unrealized_conversion_cast %5 : !torch.vtensor<[4,2],f32> to tensor<8x4xf32>
    bufferization.materialize_in_destination %7 in restrict writable %arg2 : (tensor<8x4xf32>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>) -> ()
    %8 = builtin.unrealized_conversion_cast %6 : !torch.vtensor<[],f32> to tensor<f32>
    bufferization.materialize_in_destination %8 in restrict writable %arg3 : (tensor<f32>, memref<f32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) -> ()
    return
  }
  func.func private @segment_10(%arg0: memref<f64, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>, %arg1: memref<f32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<f64, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>> to tensor<f64>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<f64> to !torch.vtensor<[],f64>
    %2 = torch.aten.neg %1 : !torch.vtensor<[],f64> -> !torch.vtensor<[],f64>
    %int6 = torch.constant.int 6
    %none = torch.constant.none
    %none_0 = torch.constant.none
    %none_1 = torch.constant.none
    %false = torch.constant.bool false
    %none_2 = torch.constant.none
    %3 = torch.aten._to_copy %2, %int6, %none, %none_0, %none_1, %false, %none_2 : !torch.vtensor<[],f64>, !torch.int, !torch.none, !torch.none, !torch.none, !torch.bool, !torch.none -> !torch.vtensor<[],f32>
    %4 = builtin.unrealized_conversion_cast %3 : !torch.vtensor<[],f32> to tensor<f32>
    bufferization.materialize_in_destination %4 in restrict writable %arg1 : (tensor<f32>, memref<f32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) -> ()
    return
  }
  func.func private @segment_11(%arg0: memref<f64, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>, %arg1: memref<f32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<f64, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>> to tensor<f64>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<f64> to !torch.vtensor<[],f64>
    %2 = torch.aten.neg %1 : !torch.vtensor<[],f64> -> !torch.vtensor<[],f64>
    %int6 = torch.constant.int 6
    %none = torch.constant.none
    %none_0 = torch.constant.none
    %none_1 = torch.constant.none
    %false = torch.constant.bool false
    %none_2 = torch.constant.none
    %3 = torch.aten._to_copy %2, %int6, %none, %none_0, %none_1, %false, %none_2 : !torch.vtensor<[],f64>, !torch.int, !torch.none, !torch.none, !torch.none, !torch.bool, !torch.none -> !torch.vtensor<[],f32>
    %4 = builtin.unrealized_conversion_cast %3 : !torch.vtensor<[],f32> to tensor<f32>
    bufferization.materialize_in_destination %4 in restrict writable %arg1 : (tensor<f32>, memref<f32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) -> ()
    return
  }
}

