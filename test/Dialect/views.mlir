// Round trip of every view op (views group): parse, verify, print, and parse the printed
// form again.
// RUN: hir-opt %s | hir-opt | FileCheck %s

// CHECK-LABEL: func.func @views_and_loops
func.func @views_and_loops(%buf: memref<4x?xf32>, %sharded: memref<4x8x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  // CHECK: "hir.for"(%{{.*}}, %{{.*}}, %{{.*}}) ({
  // CHECK-NEXT: ^bb0(%[[I:.*]]: index):
  "hir.for"(%c0, %c4, %c1) ({
  ^bb0(%i: index):
    // CHECK: "hir.alias_select"(%{{.*}}, %[[I]]) {axis = 0 : i64} : (memref<4x?xf32>, index) -> memref<?xf32, strided<[1], offset: ?>>
    %row = "hir.alias_select"(%buf, %i) {axis = 0 : i64} : (memref<4x?xf32>, index) -> memref<?xf32, strided<[1], offset: ?>>
    // CHECK: "hir.alias_select"(%{{.*}}, %[[I]]) {axis = 1 : i64} : (memref<4x?xf32>, index) -> memref<4xf32, strided<[?], offset: ?>>
    %col = "hir.alias_select"(%buf, %i) {axis = 1 : i64} : (memref<4x?xf32>, index) -> memref<4xf32, strided<[?], offset: ?>>
    // The shard axis shifts down when an outer axis is selected away.
    // CHECK: -> memref<8x16xf32, strided<[16, 1], offset: ?>, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    %slab = "hir.alias_select"(%sharded, %i) {axis = 0 : i64} : (memref<4x8x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, index) -> memref<8x16xf32, strided<[16, 1], offset: ?>, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    // A chunk keeps its axis: static extents divide, dynamic ones stay dynamic, the
    // sharding is unchanged, and a chunk of a chunk composes the strides.
    // CHECK: "hir.alias_chunk"(%{{.*}}, %[[I]]) {axis = 0 : i64, chunks = 2 : i64} : (memref<4x?xf32>, index) -> memref<2x?xf32, strided<[?, 1], offset: ?>>
    %half = "hir.alias_chunk"(%buf, %i) {axis = 0 : i64, chunks = 2 : i64} : (memref<4x?xf32>, index) -> memref<2x?xf32, strided<[?, 1], offset: ?>>
    // CHECK: "hir.alias_chunk"(%{{.*}}, %[[I]]) {axis = 1 : i64, chunks = 4 : i64} : (memref<4x?xf32>, index) -> memref<4x?xf32, strided<[?, 1], offset: ?>>
    %cols = "hir.alias_chunk"(%buf, %i) {axis = 1 : i64, chunks = 4 : i64} : (memref<4x?xf32>, index) -> memref<4x?xf32, strided<[?, 1], offset: ?>>
    // CHECK: -> memref<4x4x16xf32, strided<[128, 16, 1], offset: ?>, #hir.shard<array<i64: 0, 1>, 2 : i64>>
    %rows = "hir.alias_chunk"(%sharded, %i) {axis = 1 : i64, chunks = 2 : i64} : (memref<4x8x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, index) -> memref<4x4x16xf32, strided<[128, 16, 1], offset: ?>, #hir.shard<array<i64: 0, 1>, 2 : i64>>
    // CHECK: -> memref<4x2x16xf32, strided<[128, 16, 1], offset: ?>, #hir.shard<array<i64: 0, 1>, 2 : i64>>
    %quarter = "hir.alias_chunk"(%rows, %i) {axis = 1 : i64, chunks = 2 : i64} : (memref<4x4x16xf32, strided<[128, 16, 1], offset: ?>, #hir.shard<array<i64: 0, 1>, 2 : i64>>, index) -> memref<4x2x16xf32, strided<[128, 16, 1], offset: ?>, #hir.shard<array<i64: 0, 1>, 2 : i64>>
    // CHECK: "hir.yield"() : () -> ()
    "hir.yield"() : () -> ()
  }) : (index, index, index) -> ()
  return
}

// Upstream views (memref.subview / collapse_shape / expand_shape) and hir.alias_broadcast.
// CHECK-LABEL: func.func @views
func.func @views(%a: memref<8x4xf32>, %i: index, %n: index, %bias: memref<1x4xf32>) {
  // CHECK: memref.subview %{{.*}}[%{{.*}}, 0] [%{{.*}}, 4] [1, 1] : memref<8x4xf32> to memref<?x4xf32, strided<[4, 1], offset: ?>>
  %rows = memref.subview %a[%i, 0] [%n, 4] [1, 1] : memref<8x4xf32> to memref<?x4xf32, strided<[4, 1], offset: ?>>
  // CHECK: memref.subview %{{.*}}[1, 0] [1, 4] [1, 1] : memref<8x4xf32> to memref<4xf32, strided<[1], offset: 4>>
  %row = memref.subview %a[1, 0] [1, 4] [1, 1] : memref<8x4xf32> to memref<4xf32, strided<[1], offset: 4>>
  // CHECK: memref.collapse_shape %{{.*}} {{\[}}[0, 1]] : memref<8x4xf32> into memref<32xf32>
  %flat = memref.collapse_shape %a [[0, 1]] : memref<8x4xf32> into memref<32xf32>
  // CHECK: memref.expand_shape %{{.*}} {{\[}}[0, 1], [2]] output_shape [2, 4, 4] : memref<8x4xf32> into memref<2x4x4xf32>
  %grid = memref.expand_shape %a [[0, 1], [2]] output_shape [2, 4, 4] : memref<8x4xf32> into memref<2x4x4xf32>
  // CHECK: "hir.alias_broadcast"(%{{.*}}) : (memref<1x4xf32>) -> memref<3x8x4xf32, strided<[0, 0, 1], offset: ?>>
  %wide = "hir.alias_broadcast"(%bias) : (memref<1x4xf32>) -> memref<3x8x4xf32, strided<[0, 0, 1], offset: ?>>
  // A strided input keeps its strides; a dynamic kept extent stays dynamic.
  // CHECK: "hir.alias_broadcast"(%{{.*}}) : (memref<?x4xf32, strided<[4, 1], offset: ?>>) -> memref<2x?x4xf32, strided<[0, 4, 1], offset: ?>>
  %rows2 = "hir.alias_broadcast"(%rows) : (memref<?x4xf32, strided<[4, 1], offset: ?>>) -> memref<2x?x4xf32, strided<[0, 4, 1], offset: ?>>
  return
}

// CHECK-LABEL: func.func @sharded_broadcast
func.func @sharded_broadcast(%s: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) {
  // The split axis moves with the new leading axis.
  // CHECK: "hir.alias_broadcast"(%{{.*}}) : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<2x8x4xf32, strided<[0, 4, 1], offset: ?>, #hir.shard<array<i64: 0, 1>, 1 : i64>>
  %b = "hir.alias_broadcast"(%s) : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<2x8x4xf32, strided<[0, 4, 1], offset: ?>, #hir.shard<array<i64: 0, 1>, 1 : i64>>
  return
}

// hir.alias_reshape: the device split follows its group (outermost axis on both sides).
// CHECK-LABEL: func.func @sharded_reshape
func.func @sharded_reshape(%s: memref<8x64xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %p: memref<2x4x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, %g: memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>) {
  // CHECK: "hir.alias_reshape"(%{{.*}}) {reassociation = {{\[\[}}0, 1], [2]]} : (memref<8x64xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<2x4x64xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
  %e = "hir.alias_reshape"(%s) {reassociation = [[0, 1], [2]]} : (memref<8x64xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<2x4x64xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
  // CHECK: "hir.alias_reshape"(%{{.*}}) {reassociation = {{\[\[}}0, 1], [2]]} : (memref<2x4x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) -> memref<8x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
  %c = "hir.alias_reshape"(%p) {reassociation = [[0, 1], [2]]} : (memref<2x4x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) -> memref<8x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
  // CHECK: "hir.alias_reshape"(%{{.*}}) {reassociation = {{\[\[}}0], [1, 2]]} : (memref<4x8xf32, {{.*}}) -> memref<4x2x4xf32, #hir.shard<dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>
  %m = "hir.alias_reshape"(%g) {reassociation = [[0], [1, 2]]} : (memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>) -> memref<4x2x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>
  // CHECK: "hir.alias_reshape"(%{{.*}}) {reassociation = {{\[\[}}0, 1]]} : (memref<2x3xf32>) -> memref<6xf32>
  %a = memref.alloc() : memref<2x3xf32>
  %f = "hir.alias_reshape"(%a) {reassociation = [[0, 1]]} : (memref<2x3xf32>) -> memref<6xf32>
  return
}

// A view of a split buffer keeps its split by the view's dim map: past new unit axes
// (nvFuser's matmul_RS_through_bcast: [DIDx(D), K, N] as [1, DIDx(D), 1, K, N], then
// broadcast), through a flatten of unsplit axes, and back.
// CHECK-LABEL: func.func @split_views
func.func @split_views(%w: memref<4x16x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %x: memref<2x3x8x4xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) {
  // CHECK: "hir.alias_reshape"(%{{.*}}) {reassociation = {{\[\[}}0, 1, 2], [3], [4]]} : (memref<4x16x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> memref<1x4x1x16x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  %u = "hir.alias_reshape"(%w) {reassociation = [[0, 1, 2], [3], [4]]} : (memref<4x16x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> memref<1x4x1x16x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  // CHECK: "hir.alias_broadcast"(%{{.*}}) : (memref<1x4x1x16x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> memref<3x4x8x16x32xf32, strided<[0, 512, 0, 32, 1], offset: ?>, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  %b = "hir.alias_broadcast"(%u) : (memref<1x4x1x16x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> memref<3x4x8x16x32xf32, strided<[0, 512, 0, 32, 1], offset: ?>, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
  // CHECK: "hir.alias_reshape"(%{{.*}}) {reassociation = {{\[\[}}0, 1, 2], [3], [4]]} : (memref<1x4x1x16x32xf32, {{.*}}) -> memref<4x16x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
  %back = "hir.alias_reshape"(%u) {reassociation = [[0, 1, 2], [3], [4]]} : (memref<1x4x1x16x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> memref<4x16x32xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
  // A flatten of the unsplit axes before the split: [2, 3, D, 4] on 2 -> [6, D, 4] on 1.
  // CHECK: "hir.alias_reshape"(%{{.*}}) {reassociation = {{\[\[}}0, 1], [2], [3]]} : (memref<2x3x8x4xf32, {{.*}}) -> memref<6x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
  %flat = "hir.alias_reshape"(%x) {reassociation = [[0, 1], [2], [3]]} : (memref<2x3x8x4xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) -> memref<6x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
  // The split axis leading a merged group: [2, 3, D * 4] on 2.
  // CHECK: "hir.alias_reshape"(%{{.*}}) {reassociation = {{\[\[}}0], [1], [2, 3]]} : (memref<2x3x8x4xf32, {{.*}}) -> memref<2x3x32xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>
  %merged = "hir.alias_reshape"(%x) {reassociation = [[0], [1], [2, 3]]} : (memref<2x3x8x4xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) -> memref<2x3x32xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>
  return
}

// hir.alias_stack_shards: the shards of a split axis stacked on a new axis split over the
// same mesh axis (the row-parallel contraction's [D, T, H/D] from [T, H] split on 1); on a
// 2-D mesh the other mesh axis's split is renumbered past the new axis.
// CHECK-LABEL: func.func @stack_shards
func.func @stack_shards(%h: memref<64x64xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) {
  // CHECK: "hir.alias_stack_shards"(%{{.*}}) {at = 0 : i64, axis = 1 : i64} : (memref<64x64xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> memref<4x64x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
  %x = "hir.alias_stack_shards"(%h) {axis = 1 : i64, at = 0 : i64} : (memref<64x64xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> memref<4x64x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
  return
}

// CHECK-LABEL: func.func @stack_shards_placements
func.func @stack_shards_placements(%h: memref<64x64xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, %r: memref<4x16x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, %g: memref<4x8x6xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 2>>>) {
  // CHECK: "hir.alias_stack_shards"(%{{.*}}) {at = 1 : i64, axis = 2 : i64} : (memref<4x16x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) -> memref<4x2x16x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
  %s = "hir.alias_stack_shards"(%r) {axis = 2 : i64, at = 1 : i64} : (memref<4x16x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) -> memref<4x2x16x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
  // The new axis may go last (at = rank).
  // CHECK: "hir.alias_stack_shards"(%{{.*}}) {at = 2 : i64, axis = 1 : i64} : (memref<64x64xf32, {{.*}}) -> memref<64x16x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 2 : i64>>
  %last = "hir.alias_stack_shards"(%h) {axis = 1 : i64, at = 2 : i64} : (memref<64x64xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>) -> memref<64x16x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 2 : i64>>
  // CHECK: "hir.alias_stack_shards"(%{{.*}}) {at = 1 : i64, axis = 2 : i64} : (memref<4x8x6xf32, {{.*}}) -> memref<4x2x8x3xf32, #hir.shard<dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>
  %m = "hir.alias_stack_shards"(%g) {axis = 2 : i64, at = 1 : i64} : (memref<4x8x6xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 2>>>) -> memref<4x2x8x3xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>
  return
}
