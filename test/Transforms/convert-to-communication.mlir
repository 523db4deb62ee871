// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication)' | FileCheck %s
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-to-communication{backend=gloo})' | FileCheck %s --check-prefix=GLOO

// nvFuser's lower_to_communication decision table (seed 002), one case per function.
// GLOO-COUNT-17: backend = "gloo"
// GLOO-NOT: "nccl"

// CHECK-LABEL: func.func @allgather
// CHECK:       %[[W:.*]] = "hir.allgather"(%arg0, %[[OUT:.*]]) {axis = 0 : i64, backend = "nccl", team = array<i64: 0, 1>}
// CHECK-NEXT:  "hir.wait"(%[[W]])
// CHECK-NOT:   "hir.set"
func.func @allgather(%arg0: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>> {
  %0 = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
  "hir.set"(%arg0, %0) : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
  return %0 : memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
}

// Inner axes: gathered into (and reduce-scattered onto) strided chunks of the buffer, as
// [B, S, D] sequence parallelism needs.
// CHECK-LABEL: func.func @allgather_inner
// CHECK:       "hir.allgather"(%arg0, %{{.*}}) {axis = 1 : i64, backend = "nccl", team = array<i64: 0, 1>}
func.func @allgather_inner(%arg0: memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>> {
  %0 = memref.alloc() : memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
  "hir.set"(%arg0, %0) : (memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
  return %0 : memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
}
// CHECK-LABEL: func.func @reduce_scatter_inner
// CHECK:       "hir.reduce_scatter"(%arg0, %{{.*}}) {axis = 0 : i64, backend = "nccl", reduction = "sum", scatter_axis = 2 : i64, team = array<i64: 0, 1>}
func.func @reduce_scatter_inner(%arg0: memref<2x2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>> {
  %0 = memref.alloc() : memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
  "hir.reduction"(%arg0, %0) {kind = "sum", axes = array<i64: 0>} : (memref<2x2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
  return %0 : memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
}

// Scatter: the root is the first sender; the team is the receiver mesh plus the root.
// CHECK-LABEL: func.func @scatter
// CHECK:       "hir.scatter"(%arg0, %{{.*}}) {axis = 0 : i64, backend = "nccl", root = 0 : i64, team = array<i64: 0, 1, 2, 3>}
func.func @scatter(%arg0: memref<8x4xf32, #hir.shard<array<i64: 0>, -1 : i64>>) -> memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>> {
  %0 = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
  "hir.set"(%arg0, %0) : (memref<8x4xf32, #hir.shard<array<i64: 0>, -1 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> ()
  return %0 : memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
}

// Gather: one per receiver, each receiver the root of a team of the senders plus itself.
// CHECK-LABEL: func.func @gather
// CHECK:       %[[W0:.*]] = "hir.gather"(%arg0, %[[OUT:.*]]) {axis = 0 : i64, backend = "nccl", root = 2 : i64, team = array<i64: 0, 1, 2>}
// CHECK-NEXT:  "hir.wait"(%[[W0]])
// CHECK-NOT:   "hir.gather"
func.func @gather(%arg0: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<8x4xf32, #hir.shard<array<i64: 2>, -1 : i64>> {
  %0 = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 2>, -1 : i64>>
  "hir.set"(%arg0, %0) : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 2>, -1 : i64>>) -> ()
  return %0 : memref<8x4xf32, #hir.shard<array<i64: 2>, -1 : i64>>
}
// CHECK-LABEL: func.func @gather_two_receivers
// CHECK:       "hir.gather"(%arg0, %{{.*}}) {axis = 0 : i64, backend = "nccl", root = 1 : i64, team = array<i64: 0, 1>}
// CHECK-NEXT:  "hir.wait"
// CHECK-NEXT:  "hir.gather"(%arg0, %{{.*}}) {axis = 0 : i64, backend = "nccl", root = 0 : i64, team = array<i64: 0, 1>}
// CHECK-NEXT:  "hir.wait"
func.func @gather_two_receivers(%arg0: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<8x4xf32, #hir.shard<array<i64: 1, 0>, -1 : i64>> {
  %0 = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 1, 0>, -1 : i64>>
  "hir.set"(%arg0, %0) : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 1, 0>, -1 : i64>>) -> ()
  return %0 : memref<8x4xf32, #hir.shard<array<i64: 1, 0>, -1 : i64>>
}

// Broadcast: replicated on one mesh to replicated on another, from the first sender.
// CHECK-LABEL: func.func @broadcast
// CHECK:       "hir.broadcast"(%arg0, %{{.*}}) {backend = "nccl", root = 0 : i64, team = array<i64: 0, 1, 2, 3>}
func.func @broadcast(%arg0: memref<8x4xf32, #hir.shard<array<i64: 0>, -1 : i64>>) -> memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>> {
  %0 = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  "hir.set"(%arg0, %0) : (memref<8x4xf32, #hir.shard<array<i64: 0>, -1 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>) -> ()
  return %0 : memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
}

// SendRecv: split the same way on two meshes, shard i goes from sender i to receiver i.
// CHECK-LABEL: func.func @send_recv
// CHECK:       "hir.send_recv"(%arg0, %[[OUT:.*]]) {backend = "nccl", root = 0 : i64, team = array<i64: 0, 2>}
// CHECK-NEXT:  "hir.wait"
// CHECK-NEXT:  "hir.send_recv"(%arg0, %[[OUT]]) {backend = "nccl", root = 1 : i64, team = array<i64: 1, 3>}
// CHECK-NEXT:  "hir.wait"
func.func @send_recv(%arg0: memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<4x8xf32, #hir.shard<array<i64: 2, 3>, 0 : i64>> {
  %0 = memref.alloc() : memref<4x8xf32, #hir.shard<array<i64: 2, 3>, 0 : i64>>
  "hir.set"(%arg0, %0) : (memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<4x8xf32, #hir.shard<array<i64: 2, 3>, 0 : i64>>) -> ()
  return %0 : memref<4x8xf32, #hir.shard<array<i64: 2, 3>, 0 : i64>>
}

// Cross-mesh Gather: each receiver's team leaves the other receiver out (nvFuser's teams).
// CHECK-LABEL: func.func @gather_other_mesh
// CHECK:       "hir.gather"(%arg0, %{{.*}}) {axis = 0 : i64, backend = "nccl", root = 2 : i64, team = array<i64: 0, 1, 2>}
// CHECK:       "hir.gather"(%arg0, %{{.*}}) {axis = 0 : i64, backend = "nccl", root = 3 : i64, team = array<i64: 0, 1, 3>}
func.func @gather_other_mesh(%arg0: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<8x4xf32, #hir.shard<array<i64: 2, 3>, -1 : i64>> {
  %0 = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 2, 3>, -1 : i64>>
  "hir.set"(%arg0, %0) : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 2, 3>, -1 : i64>>) -> ()
  return %0 : memref<8x4xf32, #hir.shard<array<i64: 2, 3>, -1 : i64>>
}

// CHECK-LABEL: func.func @allreduce
// CHECK:       "hir.allreduce"(%arg0, %{{.*}}) {axis = 0 : i64, backend = "nccl", reduction = "max", team = array<i64: 0, 1>}
func.func @allreduce(%arg0: memref<2x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>> {
  %0 = memref.alloc() : memref<4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
  "hir.reduction"(%arg0, %0) {kind = "max", axes = array<i64: 0>} : (memref<2x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
  return %0 : memref<4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
}

// Reduce: one per receiver; the team is the sender mesh plus the root.
// CHECK-LABEL: func.func @reduce
// CHECK:       "hir.reduce"(%arg0, %{{.*}}) {axis = 0 : i64, backend = "nccl", reduction = "prod", root = 2 : i64, team = array<i64: 0, 1, 2>}
// CHECK-NOT:   "hir.reduce"(
func.func @reduce(%arg0: memref<2x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<4xf32, #hir.shard<array<i64: 2>, -1 : i64>> {
  %0 = memref.alloc() : memref<4xf32, #hir.shard<array<i64: 2>, -1 : i64>>
  "hir.reduction"(%arg0, %0) {kind = "prod", axes = array<i64: 0>} : (memref<2x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<4xf32, #hir.shard<array<i64: 2>, -1 : i64>>) -> ()
  return %0 : memref<4xf32, #hir.shard<array<i64: 2>, -1 : i64>>
}

// ReduceScatter: [DIDx(i0), i1] -> [r0, DIDx(i1)]: output axis 0 is input axis 1.
// CHECK-LABEL: func.func @reduce_scatter
// CHECK:       "hir.reduce_scatter"(%arg0, %{{.*}}) {axis = 0 : i64, backend = "nccl", reduction = "min", scatter_axis = 1 : i64, team = array<i64: 0, 1>}
func.func @reduce_scatter(%arg0: memref<2x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>> {
  %0 = memref.alloc() : memref<4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
  "hir.reduction"(%arg0, %0) {kind = "min", axes = array<i64: 0>} : (memref<2x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
  return %0 : memref<4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
}

// Not resharding: a local reduction of a non-split axis, sets on one placement.
// CHECK-LABEL: func.func @local
// CHECK-NOT:   hir.wait
// CHECK:       "hir.reduction"
// CHECK:       "hir.set"
func.func @local(%arg0: memref<4x6xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>> {
  %0 = memref.alloc() : memref<4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
  "hir.reduction"(%arg0, %0) {kind = "sum", axes = array<i64: 1>} : (memref<4x6xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
  %1 = memref.alloc() : memref<4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
  "hir.set"(%0, %1) : (memref<4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
  return %1 : memref<4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
}

// -----

// Inside a loop body; a stream_axis is carried over to the collective for hir-stream-lowering.
// CHECK-LABEL: func.func @in_loop
// CHECK:       "hir.for"
// CHECK:         %[[W:.*]] = "hir.allgather"(%{{.*}}, %{{.*}}) {axis = 0 : i64, backend = "nccl", team = array<i64: 0, 1>}
// CHECK-NEXT:    "hir.wait"(%[[W]])
// CHECK-NEXT:    "hir.yield"
// CHECK:       "hir.allreduce"(%arg0, %{{.*}}) {axis = 1 : i64, backend = "nccl", reduction = "sum", stream_axis = 0 : i64, team = array<i64: 0, 1>}
func.func @in_loop(%arg0: memref<3x2x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> memref<3x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %0 = memref.alloc() : memref<3x2x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
  "hir.for"(%c0, %c3, %c1) ({
  ^bb0(%i: index):
    %a = "hir.alias_select"(%arg0, %i) {axis = 0 : i64} : (memref<3x2x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, index) -> memref<2x4xf32, strided<[4, 1], offset: ?>, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    %b = "hir.alias_select"(%0, %i) {axis = 0 : i64} : (memref<3x2x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, index) -> memref<2x4xf32, strided<[4, 1], offset: ?>, #hir.shard<array<i64: 0, 1>, -1 : i64>>
    "hir.set"(%a, %b) : (memref<2x4xf32, strided<[4, 1], offset: ?>, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<2x4xf32, strided<[4, 1], offset: ?>, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
    "hir.yield"() : () -> ()
  }) : (index, index, index) -> ()
  %1 = memref.alloc() : memref<3x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
  "hir.reduction"(%arg0, %1) {kind = "sum", axes = array<i64: 1>, stream_axis = 0 : i64} : (memref<3x2x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<3x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
  return %1 : memref<3x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
}

// -----

// A 2x2 mesh (mesh axis 0 splits rows, mesh axis 1 holds a pending sum on leading axis 0):
// the resharding differs along mesh axis 1 only, so it is the 1-D decision on the mesh's
// lines along that axis, one team per line; mesh axis 0's split (axis 1 -> 0) is kept.
// CHECK-LABEL: func.func @mesh_2x2
// CHECK:       %[[W:.*]] = "hir.allreduce"(%arg0, %{{.*}}) {axis = 0 : i64, backend = "nccl", reduction = "sum", team = dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>}
// CHECK-NEXT:  "hir.wait"(%[[W]])
// CHECK:       "hir.allgather"(%{{.*}}, %{{.*}}) {axis = 0 : i64, backend = "nccl", team = dense<{{\[\[}}0, 2], [1, 3]]> : tensor<2x2xi64>}
func.func @mesh_2x2(%arg0: memref<2x4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>) -> memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>> {
  %0 = memref.alloc() : memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>
  "hir.reduction"(%arg0, %0) {kind = "sum", axes = array<i64: 0>} : (memref<2x4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>) -> ()
  %1 = memref.alloc() : memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>
  "hir.set"(%0, %1) : (memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) -> ()
  return %1 : memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>
}

// -----

// A buffer axis split by both mesh axes of a 2x2 mesh (part 2i + j on device (i, j)):
// replicating it differs along both mesh axes, whose lines (one plane of the four devices,
// row-major) see a 1-D split: one allgather by that team. A reduction summing a device axis
// split by both mesh axes is one allreduce by it.
// CHECK-LABEL: func.func @mesh_2x2_plane
// CHECK:       "hir.allgather"(%arg0, %{{.*}}) {axis = 1 : i64, backend = "nccl", team = dense<{{\[\[}}0, 1, 2, 3]]> : tensor<1x4xi64>}
// CHECK:       "hir.allreduce"(%arg1, %{{.*}}) {axis = 0 : i64, backend = "nccl", reduction = "sum", team = dense<{{\[\[}}0, 1, 2, 3]]> : tensor<1x4xi64>}
func.func @mesh_2x2_plane(%arg0: memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 1>>>, %arg1: memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 0>>>) -> (memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>, memref<8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) {
  %0 = memref.alloc() : memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>
  "hir.set"(%arg0, %0) : (memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 1>>>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) -> ()
  %1 = memref.alloc() : memref<8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>
  "hir.reduction"(%arg1, %1) {kind = "sum", axes = array<i64: 0>} : (memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 0>>>, memref<8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) -> ()
  return %0, %1 : memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>, memref<8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>
}
