// Round trip of every communication op (comm group): parse, verify, print, and parse the printed
// form again.
// RUN: hir-opt %s | hir-opt | FileCheck %s

// CHECK-LABEL: func.func @communication
func.func @communication(
    %shard0: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>,
    %rep: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>,
    %partial: memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>,
    %rs_out: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>,
    %local: memref<8x4xf32>) {
  // CHECK: "hir.allgather"(%{{.*}}, %{{.*}}) {axis = 0 : i64, backend = "nccl", team = array<i64: 0, 1>}
  %w0 = "hir.allgather"(%shard0, %rep) {axis = 0 : i64, backend = "nccl", team = array<i64: 0, 1>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  // CHECK: "hir.wait"(%{{.*}}) : (!hir.work) -> ()
  "hir.wait"(%w0) : (!hir.work) -> ()
  // CHECK: "hir.allreduce"{{.*}}reduction = "sum"
  %w1 = "hir.allreduce"(%partial, %local) {axis = 0 : i64, backend = "gloo", reduction = "sum", team = array<i64: 0, 1>} : (memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32>) -> !hir.work
  // CHECK: "hir.reduce_scatter"{{.*}}scatter_axis = 1 : i64
  %w2 = "hir.reduce_scatter"(%partial, %rs_out) {axis = 0 : i64, backend = "nccl", reduction = "max", scatter_axis = 1 : i64, team = array<i64: 0, 1>} : (memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> !hir.work
  // CHECK: "hir.broadcast"{{.*}}root = 1 : i64
  %w3 = "hir.broadcast"(%local, %rep) {backend = "nccl", root = 1 : i64, team = array<i64: 0, 1>} : (memref<8x4xf32>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  // CHECK: "hir.scatter"{{.*}}root = 0 : i64
  %w4 = "hir.scatter"(%local, %shard0) {axis = 0 : i64, backend = "nccl", root = 0 : i64, team = array<i64: 0, 1>} : (memref<8x4xf32>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> !hir.work
  // CHECK: "hir.gather"{{.*}}root = 1 : i64
  %w5 = "hir.gather"(%shard0, %local) {axis = 0 : i64, backend = "nccl", root = 1 : i64, team = array<i64: 0, 1>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32>) -> !hir.work
  // CHECK: "hir.reduce"{{.*}}reduction = "min"{{.*}}root = 0 : i64
  %w6 = "hir.reduce"(%partial, %local) {axis = 0 : i64, backend = "nccl", reduction = "min", root = 0 : i64, team = array<i64: 0, 1>} : (memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32>) -> !hir.work
  // CHECK: "hir.send_recv"{{.*}}root = 1 : i64, team = array<i64: 1, 0>
  %w7 = "hir.send_recv"(%local, %local) {backend = "nccl", root = 1 : i64, team = array<i64: 1, 0>} : (memref<8x4xf32>, memref<8x4xf32>) -> !hir.work
  // CHECK: "hir.send"(%{{.*}}) {backend = "cuda", peer = 1 : i64} : (memref<8x4xf32>) -> !hir.work
  %w8 = "hir.send"(%local) {backend = "cuda", peer = 1 : i64} : (memref<8x4xf32>) -> !hir.work
  // CHECK: "hir.recv"(%{{.*}}) {backend = "cuda", peer = 0 : i64} : (memref<8x4xf32>) -> !hir.work
  %w9 = "hir.recv"(%local) {backend = "cuda", peer = 0 : i64} : (memref<8x4xf32>) -> !hir.work
  return
}

// A multi-dimensional mesh: devices laid out 2x2, one split per mesh axis; a collective runs
// along one mesh axis with one team per line of the mesh (team = a device layout, one row each).
// CHECK-LABEL: func.func @communication_2d
// CHECK-SAME:  memref<8x4xf32, #hir.shard<dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>
func.func @communication_2d(
    %split2: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>,
    %rows: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>,
    %partial: memref<2x8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>,
    %rs_out: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>) {
  // CHECK: "hir.allgather"{{.*}}team = dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>
  %w0 = "hir.allgather"(%split2, %rows) {axis = 1 : i64, backend = "nccl", team = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>) -> !hir.work
  "hir.wait"(%w0) : (!hir.work) -> ()
  // CHECK: "hir.allreduce"{{.*}}team = dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>
  %w1 = "hir.allreduce"(%partial, %rows) {axis = 0 : i64, backend = "nccl", reduction = "sum", team = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (memref<2x8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>) -> !hir.work
  "hir.wait"(%w1) : (!hir.work) -> ()
  // CHECK: "hir.reduce_scatter"{{.*}}scatter_axis = 2 : i64, team = dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>
  %w2 = "hir.reduce_scatter"(%partial, %rs_out) {axis = 0 : i64, backend = "nccl", reduction = "sum", scatter_axis = 2 : i64, team = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (memref<2x8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>) -> !hir.work
  "hir.wait"(%w2) : (!hir.work) -> ()
  // each line along mesh axis 1 broadcasts from its own root: one root per team
  // CHECK: "hir.broadcast"{{.*}}root = array<i64: 1, 3>, team = dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>
  %w3 = "hir.broadcast"(%rows, %rows) {backend = "nccl", root = array<i64: 1, 3>, team = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>) -> !hir.work
  "hir.wait"(%w3) : (!hir.work) -> ()
  return
}

// Buffer axis 1 split by both mesh axes (part 2i + j on device (i, j)); a collective along
// both mesh axes runs with one team of the four devices, row-major.
// CHECK-LABEL: func.func @communication_plane
// CHECK: "hir.allgather"{{.*}}team = dense<{{\[\[}}0, 1, 2, 3]]> : tensor<1x4xi64>
// CHECK: "hir.allgather"{{.*}}team = dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>
func.func @communication_plane(
    %cols4: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 1>>>,
    %full: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>,
    %cols2: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, -1>>>) {
  %w0 = "hir.allgather"(%cols4, %full) {axis = 1 : i64, backend = "nccl", team = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 1>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) -> !hir.work
  "hir.wait"(%w0) : (!hir.work) -> ()
  // along the minor mesh axis only: each line holds a contiguous half of axis 1
  %w1 = "hir.allgather"(%cols4, %cols2) {axis = 1 : i64, backend = "nccl", team = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 1>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, -1>>>) -> !hir.work
  "hir.wait"(%w1) : (!hir.work) -> ()
  return
}
