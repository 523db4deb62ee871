// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-shard-to-hir{backend=gloo})' | FileCheck %s
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-shard-to-hir{backend=gloo},hir-lower)' | FileCheck %s --check-prefix=LOWER

// One case per converted op kind that convert-shard-to-hir.mlir does not hold (a test in
// test/python/test_shard_registry.py checks that every op of the bridge's handler registry
// has a case in test/Conversion). Hand-partitioned programs on a grid of 2.

// all_to_all: the all_gather along the concat dim, then the all_slice along the split dim
// (a kernel slicing at the device's offset), each converted by its own handler.
// CHECK-LABEL: func.func private @all_to_all_kernel_0
// CHECK:       tensor.extract_slice %{{.*}}[0, %arg1] [4, 2] [1, 1]
// CHECK-LABEL: func.func @all_to_all
// CHECK-SAME:  (%arg0: memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
// CHECK:       %[[G:.*]] = memref.alloc() : memref<4x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
// CHECK-NEXT:  "hir.allgather"(%arg0, %[[G]]) {axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1>}
// CHECK:       %[[D:.*]] = "hir.device_index"() {mesh = array<i64: 0, 1>}
// CHECK:       %[[O:.*]] = arith.muli %[[D]], %c2
// CHECK:       %[[S:.*]] = memref.alloc() : memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
// CHECK-NEXT:  call @all_to_all_kernel_0(%[[G]], %[[O]], %[[S]])
// CHECK-NEXT:  return %[[S]]
// LOWER-LABEL: func.func @all_to_all
// LOWER:       "hir.allgather"
shard.grid @g(shape = 2)
func.func @all_to_all(%x: tensor<2x4xf32> {hir.split_axes = #shard<axisarray[[0]]>}) -> tensor<4x2xf32> {
  %r = shard.all_to_all %x on @g grid_axes = [0] split_axis = 1 concat_axis = 0 : tensor<2x4xf32> -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}

// -----

// grid_shape: host constants, in the order of its axes.
// CHECK-LABEL: func.func @grid_shape() -> (index, index)
// CHECK-NEXT:  %[[C3:.*]] = arith.constant 3 : index
// CHECK-NEXT:  %[[C2:.*]] = arith.constant 2 : index
// CHECK-NEXT:  return %[[C3]], %[[C2]]
// LOWER-LABEL: func.func @grid_shape

shard.grid @g(shape = 2x3)
func.func @grid_shape() -> (index, index) {
  %n:2 = shard.grid_shape @g axes = [1, 0] : index, index
  return %n#0, %n#1 : index, index
}

// -----

// An elementwise named linalg op on equally placed operands: hir.binary of its kind.
// CHECK-LABEL: func.func @binary
// CHECK:       %[[C:.*]] = memref.alloc() : memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
// CHECK-NEXT:  "hir.binary"(%arg0, %arg1, %[[C]]) {kind = "sub"}
// CHECK-NEXT:  return %[[C]]
// LOWER-LABEL: func.func @binary
// LOWER:       "hir.binary"

shard.grid @g(shape = 2)
func.func @binary(%a: tensor<2x4xf32> {hir.split_axes = #shard<axisarray[[0]]>}, %b: tensor<2x4xf32> {hir.split_axes = #shard<axisarray[[0]]>}) -> tensor<2x4xf32> {
  %e = tensor.empty() : tensor<2x4xf32>
  %c = linalg.sub ins(%a, %b : tensor<2x4xf32>, tensor<2x4xf32>) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  return %c : tensor<2x4xf32>
}

// -----

// Every elementwise named op with an hir.binary kind, chained (the operands replicated).
// CHECK-LABEL: func.func @binary_kinds
// CHECK:       "hir.binary"(%arg0, %arg1, %{{.*}}) {kind = "add"}
// CHECK:       "hir.binary"({{.*}}) {kind = "mul"}
// CHECK:       "hir.binary"({{.*}}) {kind = "div"}
// CHECK:       "hir.binary"({{.*}}) {kind = "max"}
// CHECK:       "hir.binary"({{.*}}) {kind = "min"}
// CHECK-NOT:   call
// LOWER-LABEL: func.func @binary_kinds
// LOWER-COUNT-5: "hir.binary"
shard.grid @g(shape = 2)
func.func @binary_kinds(%a: tensor<4xf32> {hir.split_axes = #shard<axisarray[[]]>}, %b: tensor<4xf32> {hir.split_axes = #shard<axisarray[[]]>}) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %s = linalg.add ins(%a, %b : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %p = linalg.mul ins(%s, %b : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %q = linalg.div ins(%p, %b : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %m = linalg.max ins(%q, %a : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %n = linalg.min ins(%m, %b : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %n : tensor<4xf32>
}

// -----

// A batched matmul into a zero fill, split along the batch: hir.matmul.
// CHECK-LABEL: func.func @batch_matmul
// CHECK:       %[[C:.*]] = memref.alloc() : memref<2x4x5xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
// CHECK-NEXT:  "hir.matmul"(%arg0, %arg1, %[[C]])
// CHECK-NEXT:  return %[[C]]
// LOWER-LABEL: func.func @batch_matmul
// LOWER:       "hir.matmul"

shard.grid @g(shape = 2)
func.func @batch_matmul(%a: tensor<1x4x3xf32> {hir.split_axes = #shard<axisarray[[0]]>}, %b: tensor<1x3x5xf32> {hir.split_axes = #shard<axisarray[[0]]>}) -> tensor<1x4x5xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x5xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x4x5xf32>) -> tensor<1x4x5xf32>
  %c = linalg.batch_matmul ins(%a, %b : tensor<1x4x3xf32>, tensor<1x3x5xf32>) outs(%f : tensor<1x4x5xf32>) -> tensor<1x4x5xf32>
  return %c : tensor<1x4x5xf32>
}

// -----

// shard-partition's init of a partial product (K split over the grid): device 0 keeps the
// destination, the others start from zeros. The scf.if is a kernel writing a partial sum (a
// device axis); the matmul accumulates into it; the all_reduce sums the device axis.
// CHECK-LABEL: func.func private @partial_init_kernel_0
// CHECK-SAME:  (%arg0: i1, %arg1: memref<4x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, %arg2: memref<2x4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>)
// CHECK:       scf.if %arg0
// CHECK:       linalg.fill
// CHECK:       tensor.expand_shape {{.*}} into tensor<1x4x8xf32>
// CHECK-LABEL: func.func private @partial_init_kernel_1
// CHECK:       tensor.collapse_shape
// CHECK:       linalg.matmul
// CHECK-LABEL: func.func @partial_init
// CHECK:       %[[D:.*]] = "hir.device_index"() {mesh = array<i64: 0, 1>}
// CHECK:       %[[FIRST:.*]] = arith.cmpi eq, %[[D]], %c0
// CHECK:       %[[INIT:.*]] = memref.alloc() : memref<2x4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
// CHECK-NEXT:  call @partial_init_kernel_0(%[[FIRST]], %arg2, %[[INIT]])
// CHECK:       %[[P:.*]] = memref.alloc() : memref<2x4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
// CHECK-NEXT:  call @partial_init_kernel_1(%arg0, %arg1, %[[INIT]], %[[P]])
// CHECK:       "hir.allreduce"(%[[P]], %{{.*}}) {axis = 0 : i64, backend = "gloo", reduction = "sum", team = array<i64: 0, 1>}
// LOWER-LABEL: func.func @partial_init
// LOWER:       "hir.allreduce"

shard.grid @g(shape = 2)
func.func @partial_init(%a: tensor<4x3xf32> {hir.split_axes = #shard<axisarray[[], [0]]>}, %b: tensor<3x8xf32> {hir.split_axes = #shard<axisarray[[0]]>}, %out: tensor<4x8xf32> {hir.split_axes = #shard<axisarray[[]]>}) -> tensor<4x8xf32> {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %i = shard.process_multi_index on @g axes = [0] : index
  %first = arith.cmpi eq, %i, %c0 : index
  %init = scf.if %first -> (tensor<4x8xf32>) {
    scf.yield %out : tensor<4x8xf32>
  } else {
    %e = tensor.empty() : tensor<4x8xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
    scf.yield %f : tensor<4x8xf32>
  }
  %p = linalg.matmul ins(%a, %b : tensor<4x3xf32>, tensor<3x8xf32>) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = shard.all_reduce %p on @g grid_axes = [0] : tensor<4x8xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// shard_shape of an even split with halos: the part's extent plus its halos, on the host (its
// sharding, read only by shard_shape, converts to nothing).
// CHECK-LABEL: func.func @shard_shape() -> (index, index)
// CHECK-DAG:   %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:   %[[C3:.*]] = arith.constant 3 : index
// CHECK:       %[[ROWS:.*]] = arith.addi %[[C4]], %[[C3]] : index
// CHECK:       %[[COLS:.*]] = arith.constant 4 : index
// CHECK-NEXT:  return %[[ROWS]], %[[COLS]]
// CHECK-NOT:   shard.
// LOWER-LABEL: func.func @shard_shape

shard.grid @g(shape = 2)
func.func @shard_shape() -> (index, index) {
  %s = shard.sharding @g split_axes = [[0]] halo_sizes = [1, 2] : !shard.sharding
  %i = shard.process_multi_index on @g : index
  %n:2 = shard.shard_shape dims = [8, 4] sharding = %s device = [%i] : index, index
  return %n#0, %n#1 : index, index
}
