// Round trip of the views hir programs use: upstream memref.subview / collapse_shape /
// expand_shape and hir.alias_broadcast (verified, printed, parsed again).
// RUN: hir-opt %s | hir-opt | FileCheck %s

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
