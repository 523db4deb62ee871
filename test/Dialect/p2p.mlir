// Round trip of every point-to-point op (p2p group): parse, verify, print, and parse the printed
// form again.
// RUN: hir-opt %s | hir-opt | FileCheck %s

// CHECK-LABEL: func.func @p2p
func.func @p2p(%a: memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %t: memref<2x8xf32>, %j: index,
               %b: memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>,
               %b2: memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>) {
  // CHECK: "hir.device_index"() {mesh = array<i64: 0, 1, 2, 3>} : () -> index
  %me = "hir.device_index"() {mesh = array<i64: 0, 1, 2, 3>} : () -> index
  // CHECK: "hir.shift"(%{{.*}}, %{{.*}}, %{{.*}}) {backend = "cuda", team = array<i64: 0, 1, 2, 3>} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<2x8xf32>, index) -> !hir.work
  %w = "hir.shift"(%a, %t, %j) {backend = "cuda", team = array<i64: 0, 1, 2, 3>} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<2x8xf32>, index) -> !hir.work
  // CHECK: "hir.shift"(%{{.*}}, %{{.*}}, %{{.*}}) {backend = "cuda", copies = 2 : i64, team = array<i64: 0, 1, 2, 3>}
  %w2 = "hir.shift"(%a, %t, %me) {backend = "cuda", copies = 2 : i64, team = array<i64: 0, 1, 2, 3>} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<2x8xf32>, index) -> !hir.work
  // CHECK: "hir.shift"(%{{.*}}, %{{.*}}, %{{.*}}) {backend = "cuda", team = array<i64: 0, 1, 2, 3>, transfer = "push"}
  %w3 = "hir.shift"(%a, %t, %j) {backend = "cuda", team = array<i64: 0, 1, 2, 3>, transfer = "push"} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<2x8xf32>, index) -> !hir.work
  "hir.wait"(%w) : (!hir.work) -> ()
  "hir.wait"(%w2) : (!hir.work) -> ()
  "hir.wait"(%w3) : (!hir.work) -> ()
  // One team per row: the lines of a 2x2 mesh along mesh axis 0, each rank shifting in its own.
  // CHECK: "hir.shift"(%{{.*}}, %{{.*}}, %{{.*}}) {backend = "gloo", team = dense<{{\[\[}}0, 2], [1, 3]]> : tensor<2x2xi64>} : (memref<4x8xf32, #hir.shard<dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, memref<4x8xf32, #hir.shard<dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, index) -> !hir.work
  %w4 = "hir.shift"(%b, %b2, %j) {backend = "gloo", team = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>} : (memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, index) -> !hir.work
  "hir.wait"(%w4) : (!hir.work) -> ()
  // CHECK: "hir.own_block"(%{{.*}}) {axis = 0 : i64} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> memref<2x8xf32, strided<[8, 1], offset: ?>, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  %mine = "hir.own_block"(%a) {axis = 0 : i64} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> memref<2x8xf32, strided<[8, 1], offset: ?>, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
  return
}

// CHECK-LABEL: func.func @barrier
func.func @barrier() {
  // CHECK: %[[B:.*]] = "hir.barrier"() {backend = "cuda", team = array<i64: 0, 1>} : () -> !hir.work
  %b = "hir.barrier"() {backend = "cuda", team = array<i64: 0, 1>} : () -> !hir.work
  // CHECK: "hir.wait"(%[[B]])
  "hir.wait"(%b) : (!hir.work) -> ()
  return
}
