// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-shard-to-hir{backend=gloo})' | FileCheck %s
// (In test/Conversion, not test/Transforms: the inputs are shard-dialect tensor programs, which
// the interpreter does not run; test/python/test_from_shard.py runs them converted.)
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-shard-to-hir{backend=gloo},hir-lower)' | FileCheck %s --check-prefix=LOWER
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-set-node-layout{ranks-per-node=2},hir-convert-shard-to-hir{backend=cuda})' | FileCheck %s --check-prefix=NODES

// Hand-written partitioned shard programs (local tensor shapes, as shard-partition leaves
// them) on a 4-device grid. Arguments carry their placement in hir.split_axes (what
// hir-record-shard-signature writes) or get it from the collective that reads them.

// CHECK-LABEL: func.func @all_gather
// CHECK-SAME:  (%arg0: memref<8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> memref<8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
// CHECK:       %[[OUT:.*]] = memref.alloc() : memref<8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
// CHECK-NEXT:  %[[W:.*]] = "hir.allgather"(%arg0, %[[OUT]]) {axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1, 2, 3>}
// CHECK-NEXT:  "hir.wait"(%[[W]])
// CHECK-NEXT:  return %[[OUT]]
// CHECK-NOT:   shard.
// LOWER-LABEL: func.func @all_gather
// LOWER:       "hir.allgather"
shard.grid @g(shape = 4)
func.func @all_gather(%x: tensor<2x16xf32>) -> tensor<8x16xf32> {
  %g = shard.all_gather %x on @g grid_axes = [0] gather_axis = 0 : tensor<2x16xf32> -> tensor<8x16xf32>
  return %g : tensor<8x16xf32>
}

// -----

// A partial sum gets a device axis: local [1, 8, 16] of the global [4, 8, 16].
// CHECK-LABEL: func.func @all_reduce
// CHECK-SAME:  (%arg0: memref<4x8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>)
// CHECK:       "hir.allreduce"(%arg0, %{{.*}}) {axis = 0 : i64, backend = "gloo", reduction = "max", team = array<i64: 0, 1, 2, 3>}
// CHECK-NEXT:  "hir.wait"
shard.grid @g(shape = 4)
func.func @all_reduce(%p: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %r = shard.all_reduce %p on @g grid_axes = [0] reduction = max : tensor<8x16xf32> -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

// CHECK-LABEL: func.func @reduce_scatter
// CHECK-SAME:  -> memref<8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
// CHECK:       "hir.reduce_scatter"(%arg0, %{{.*}}) {axis = 0 : i64, backend = "gloo", reduction = "sum", scatter_axis = 1 : i64, team = array<i64: 0, 1, 2, 3>}
shard.grid @g(shape = 4)
func.func @reduce_scatter(%p: tensor<8x16xf32>) -> tensor<2x16xf32> {
  %r = shard.reduce_scatter %p on @g grid_axes = [0] scatter_dim = 0 : tensor<8x16xf32> -> tensor<2x16xf32>
  return %r : tensor<2x16xf32>
}

// -----

// all_slice moves no data: each device slices the replicated input at its own offset.
// CHECK-LABEL: func.func private @all_slice_kernel_0
// CHECK:       tensor.extract_slice %{{.*}}[0, %arg1] [8, 4] [1, 1] : tensor<8x16xf32> to tensor<8x4xf32>
// CHECK-LABEL: func.func @all_slice
// CHECK-SAME:  -> memref<8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
// CHECK:       %[[I:.*]] = "hir.device_index"() {mesh = array<i64: 0, 1, 2, 3>}
// CHECK-NEXT:  %[[C:.*]] = arith.constant 4 : index
// CHECK-NEXT:  %[[O:.*]] = arith.muli %[[I]], %[[C]]
// CHECK-NEXT:  %[[OUT:.*]] = memref.alloc()
// CHECK-NEXT:  call @all_slice_kernel_0(%arg0, %[[O]], %[[OUT]])
shard.grid @g(shape = 4)
func.func @all_slice(%x: tensor<8x16xf32>) -> tensor<8x4xf32> {
  %s = shard.all_slice %x on @g grid_axes = [0] slice_axis = 1 : tensor<8x16xf32> -> tensor<8x4xf32>
  return %s : tensor<8x4xf32>
}

// -----

// shard.shift sends device i's shard to device i + 1; hir.shift receives from me + 3 (mod 4).
// CHECK-LABEL: func.func @shift
// CHECK:       %[[OFF:.*]] = arith.constant 3 : index
// CHECK:       "hir.shift"(%arg0, %{{.*}}, %[[OFF]]) {backend = "gloo", team = array<i64: 0, 1, 2, 3>}
// CHECK-NEXT:  "hir.wait"
shard.grid @g(shape = 4)
func.func @shift(%x: tensor<2x16xf32> {hir.split_axes = #shard<axisarray[[0]]>}) -> tensor<2x16xf32> {
  %s = shard.shift %x on @g grid_axes = [0] shift_axis = 0 offset = 1 rotate : tensor<2x16xf32> -> tensor<2x16xf32>
  return %s : tensor<2x16xf32>
}

// -----

// On a 2x4 grid a shift along grid axis 1 runs with one team per line along it (rows of the
// device layout), the offset taken in each line; along axis 0 with the columns as teams. A
// broadcast along axis 0 has one root per team: the device at coordinate 1 of each column.
// CHECK-LABEL: func.func @shift_2d
// CHECK:       %[[OFF:.*]] = arith.constant 2 : index
// CHECK:       "hir.shift"(%arg0, %{{.*}}, %[[OFF]]) {backend = "gloo", team = dense<{{\[\[}}0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>}
// CHECK-NEXT:  "hir.wait"
// CHECK:       %[[ONE:.*]] = arith.constant 1 : index
// CHECK:       "hir.shift"(%{{.*}}, %{{.*}}, %[[ONE]]) {backend = "gloo", team = dense<{{\[\[}}0, 4], [1, 5], [2, 6], [3, 7]]> : tensor<4x2xi64>}
// CHECK:       "hir.broadcast"(%{{.*}}, %{{.*}}) {backend = "gloo", root = array<i64: 4, 5, 6, 7>, team = dense<{{\[\[}}0, 4], [1, 5], [2, 6], [3, 7]]> : tensor<4x2xi64>}
// LOWER-LABEL: func.func @shift_2d
// LOWER-COUNT-2: "hir.shift"
shard.grid @g(shape = 2x4)
func.func @shift_2d(%x: tensor<2x4xf32> {hir.split_axes = #shard<axisarray[[0], [1]]>}, %y: tensor<2x4xf32> {hir.split_axes = #shard<axisarray[[], [1]]>}) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %s = shard.shift %x on @g grid_axes = [1] shift_axis = 1 offset = 2 rotate : tensor<2x4xf32> -> tensor<2x4xf32>
  %t = shard.shift %s on @g grid_axes = [0] shift_axis = 0 offset = 1 rotate : tensor<2x4xf32> -> tensor<2x4xf32>
  %b = shard.broadcast %y on @g grid_axes = [0] root = [1] : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %t, %b : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// Host arithmetic on the device index stays in the host program, cloned where it is used.
// CHECK-LABEL: func.func @device
// CHECK:       %[[I:.*]] = "hir.device_index"() {mesh = array<i64: 0, 1, 2, 3>} : () -> index
// CHECK-NEXT:  %[[C:.*]] = arith.constant 2 : index
// CHECK-NEXT:  %[[J:.*]] = arith.muli %[[I]], %[[C]] : index
// CHECK-NEXT:  return %arg0, %[[J]]
shard.grid @g(shape = 4)
func.func @device(%x: tensor<4xf32> {hir.split_axes = #shard<axisarray[[]]>}) -> (tensor<4xf32>, index) {
  %i = shard.process_linear_index on @g : index
  %c2 = arith.constant 2 : index
  %j = arith.muli %i, %c2 : index
  return %x, %j : tensor<4xf32>, index
}

// -----

// The tensor-parallel MLP as shard-partition leaves it: the zero-init column-parallel matmul
// is an hir.matmul, gelu a kernel segment, the row-parallel matmul (a partial product) a
// kernel segment writing the device axis, the init guarded by scf.if folds away (and its device-index guard with it).
// CHECK-LABEL: func.func private @mlp_kernel_0
// CHECK-SAME:  attributes {hir.kernel}
// CHECK:       builtin.unrealized_conversion_cast %arg0 : memref<8x64xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>> to memref<8x16xf32>
// CHECK:       bufferization.to_tensor
// CHECK:       linalg.generic
// CHECK:       math.erf
// CHECK:       bufferization.materialize_in_destination
// CHECK-LABEL: func.func private @mlp_kernel_1
// CHECK:       linalg.fill
// CHECK:       linalg.matmul
// CHECK:       tensor.expand_shape {{.*}} into tensor<1x8x16xf32>
// CHECK:       to memref<1x8x16xf32>
// CHECK-LABEL: func.func @mlp
// CHECK-SAME:  (%arg0: memref<8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>, %arg1: memref<16x64xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>, %arg2: memref<64x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>)
// CHECK:       %[[H:.*]] = memref.alloc() : memref<8x64xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
// CHECK-NEXT:  "hir.matmul"(%arg0, %arg1, %[[H]])
// CHECK:       %[[G:.*]] = memref.alloc() : memref<8x64xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>
// CHECK-NEXT:  call @mlp_kernel_0(%[[H]], %[[G]])
// CHECK:       %[[P:.*]] = memref.alloc() : memref<4x8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
// CHECK-NEXT:  call @mlp_kernel_1(%[[G]], %arg2, %[[P]])
// CHECK:       "hir.allreduce"(%[[P]], %{{.*}}) {axis = 0 : i64, backend = "gloo", reduction = "sum", team = array<i64: 0, 1, 2, 3>}
// CHECK-NOT:   scf.if
// CHECK-NOT:   hir.device_index
// LOWER-LABEL: func.func @mlp
// LOWER:       memref.dealloc
#map = affine_map<(d0, d1) -> (d0, d1)>
shard.grid @tp(shape = 4)
func.func @mlp(%arg0: tensor<8x16xf32> {hir.split_axes = #shard<axisarray[[]]>}, %arg1: tensor<16x16xf32> {hir.split_axes = #shard<axisarray[[], [0]]>}, %arg2: tensor<16x16xf32> {hir.split_axes = #shard<axisarray[[0]]>}) -> tensor<8x16xf32> {
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0.000000e+00 : f32
  %cst_0 = arith.constant 1.000000e+00 : f32
  %cst_1 = arith.constant 5.000000e-01 : f32
  %cst_2 = arith.constant 1.41421354 : f32
  %0 = tensor.empty() : tensor<8x16xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %2 = linalg.matmul ins(%arg0, %arg1 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%1 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%2 : tensor<8x16xf32>) outs(%0 : tensor<8x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %7 = arith.divf %in, %cst_2 : f32
    %8 = math.erf %7 : f32
    %9 = arith.addf %8, %cst_0 : f32
    %10 = arith.mulf %9, %cst_1 : f32
    %11 = arith.mulf %in, %10 : f32
    linalg.yield %11 : f32
  } -> tensor<8x16xf32>
  %proc_linear_idx = shard.process_multi_index on @tp axes = [0] : index
  %4 = arith.cmpi eq, %proc_linear_idx, %c0 : index
  %5 = scf.if %4 -> (tensor<8x16xf32>) {
    scf.yield %1 : tensor<8x16xf32>
  } else {
    scf.yield %1 : tensor<8x16xf32>
  }
  %6 = linalg.matmul ins(%3, %arg2 : tensor<8x16xf32>, tensor<16x16xf32>) outs(%5 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %all_reduce = shard.all_reduce %6 on @tp grid_axes = [0] : tensor<8x16xf32> -> tensor<8x16xf32>
  return %all_reduce : tensor<8x16xf32>
}

// -----

// A 2x2 grid: grid axis 0 splits the batch rows, grid axis 1 the hidden dim (dp x tp). Each
// collective runs over one grid axis: one team per line of the mesh along it.
// CHECK-LABEL: func.func @grid_2x2
// CHECK-SAME:  (%arg0: memref<8x16xf32, #hir.shard<dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>
// CHECK-SAME:  %arg1: memref<16x16xf32, #hir.shard<dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 1>>>
// CHECK:       "hir.matmul"(%arg0, %arg1, %{{.*}}) : {{.*}} memref<8x16xf32, #hir.shard<dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>) -> ()
// CHECK:       "hir.allgather"(%{{.*}}, %{{.*}}) {axis = 1 : i64, backend = "gloo", team = dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>}
// CHECK:       "hir.allreduce"(%{{.*}}, %{{.*}}) {axis = 0 : i64, backend = "gloo", reduction = "sum", team = dense<{{\[\[}}0, 2], [1, 3]]> : tensor<2x2xi64>}
// CHECK-SAME:  (memref<2x8x16xf32, #hir.shard<dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>, memref<8x16xf32, #hir.shard<dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>)
// With two ranks per node (hir-set-node-layout) the allgather along grid axis 1 (inside the
// nodes) keeps the copy engines asked for, the allreduce along axis 0 (across them) gets NCCL.
// NODES-LABEL: func.func @grid_2x2
// NODES:       "hir.allgather"{{.*}}backend = "cuda"{{.*}}team = dense<{{\[\[}}0, 1], [2, 3]]>
// NODES:       "hir.allreduce"{{.*}}backend = "nccl"{{.*}}team = dense<{{\[\[}}0, 2], [1, 3]]>
// LOWER-LABEL: func.func @grid_2x2
// LOWER:       "hir.matmul"
// LOWER:       "hir.allgather"{{.*}}team = dense<{{\[\[}}0, 1], [2, 3]]>
// LOWER:       "hir.allreduce"{{.*}}team = dense<{{\[\[}}0, 2], [1, 3]]>
shard.grid @g(shape = 2x2)
func.func @grid_2x2(%x: tensor<4x16xf32> {hir.split_axes = #shard<axisarray[[0]]>}, %w: tensor<16x8xf32> {hir.split_axes = #shard<axisarray[[], [1]]>}, %p: tensor<8x16xf32>) -> (tensor<4x16xf32>, tensor<8x16xf32>) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %h = linalg.matmul ins(%x, %w : tensor<4x16xf32>, tensor<16x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %g = shard.all_gather %h on @g grid_axes = [1] gather_axis = 1 : tensor<4x8xf32> -> tensor<4x16xf32>
  %r = shard.all_reduce %p on @g grid_axes = [0] : tensor<8x16xf32> -> tensor<8x16xf32>
  return %g, %r : tensor<4x16xf32>, tensor<8x16xf32>
}

// -----

// A dim split over both axes of a 2x2 grid (split_axes = [[], [0, 1]]: device (i, j) holds
// part 2i + j) is one buffer axis split by both mesh axes; a collective over grid_axes = [0, 1]
// runs with one team of the four devices, row-major. The partial product of a contraction over
// that dim is pending on both grid axes: one device axis of 4, split by both.
// CHECK-LABEL: func.func @two_axes(
// CHECK-SAME:  %arg0: memref<2x8xf32, #hir.shard<dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 1>>>
// CHECK-SAME:  %arg1: memref<8x4xf32, #hir.shard<dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 0>>>
// CHECK:       "hir.allgather"(%arg0, %{{.*}}) {axis = 1 : i64, backend = "gloo", team = dense<{{\[\[}}0, 1, 2, 3]]> : tensor<1x4xi64>}
// CHECK:       memref.alloc() : memref<4x2x4xf32, #hir.shard<dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 0>>>
// CHECK:       "hir.reduce_scatter"(%{{.*}}, %{{.*}}) {axis = 0 : i64, backend = "gloo", reduction = "sum", scatter_axis = 2 : i64, team = dense<{{\[\[}}0, 1, 2, 3]]> : tensor<1x4xi64>}
// CHECK-SAME:  -> !hir.work
// LOWER-LABEL: func.func @two_axes(
// LOWER:       "hir.allgather"{{.*}}team = dense<{{\[\[}}0, 1, 2, 3]]>
// LOWER:       "hir.reduce_scatter"{{.*}}team = dense<{{\[\[}}0, 1, 2, 3]]>
shard.grid @g(shape = 2x2)
func.func @two_axes(%x: tensor<2x2xf32> {hir.split_axes = #shard<axisarray[[], [0, 1]]>}, %w: tensor<2x4xf32> {hir.split_axes = #shard<axisarray[[0, 1]]>}) -> (tensor<2x8xf32>, tensor<2x1xf32>) {
  %z = arith.constant 0.0 : f32
  %g = shard.all_gather %x on @g grid_axes = [0, 1] gather_axis = 1 : tensor<2x2xf32> -> tensor<2x8xf32>
  %e = tensor.empty() : tensor<2x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x4xf32>) -> tensor<2x4xf32>
  %p = linalg.matmul ins(%x, %w : tensor<2x2xf32>, tensor<2x4xf32>) outs(%f : tensor<2x4xf32>) -> tensor<2x4xf32>
  %r = shard.reduce_scatter %p on @g grid_axes = [0, 1] scatter_dim = 1 : tensor<2x4xf32> -> tensor<2x1xf32>
  return %g, %r : tensor<2x8xf32>, tensor<2x1xf32>
}

// -----

// update_halo: each halo is a hir.shift of the neighbour's boundary rows (rotating), written
// into the block by a kernel, kept where the device is at that end of the grid axis (host
// compare of hir.device_index). Halos [1, 2]: the lower from the device before (offset n-1),
// the upper from the device after (offset 1).
// CHECK-LABEL: func.func @halo(
// CHECK:       %[[LOW:.*]] = arith.constant 1 : index
// CHECK:       "hir.shift"(%{{.*}}, %{{.*}}, %[[LOW]]) {backend = "gloo", team = array<i64: 0, 1>} : (memref<2x3xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
// CHECK:       %[[D0:.*]] = "hir.device_index"() {mesh = array<i64: 0, 1>}
// CHECK:       %[[FIRST:.*]] = arith.cmpi eq, %[[D0]], %c0
// CHECK:       call @halo_kernel_{{[0-9]+}}(%[[FIRST]],
// CHECK:       "hir.shift"(%{{.*}}, %{{.*}}, %{{.*}}) {backend = "gloo", team = array<i64: 0, 1>} : (memref<4x3xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
// CHECK:       %[[D1:.*]] = "hir.device_index"() {mesh = array<i64: 0, 1>}
// CHECK:       %[[LAST:.*]] = arith.cmpi eq, %[[D1]], %c1
// CHECK:       call @halo_kernel_{{[0-9]+}}(%[[LAST]],
// CHECK:       return %{{.*}} : memref<14x3xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
// LOWER-LABEL: func.func @halo(
// LOWER-COUNT-2: "hir.shift"
shard.grid @g(shape = 2)
func.func @halo(%x: tensor<7x3xf32> {hir.split_axes = #shard<axisarray[[0]]>}) -> tensor<7x3xf32> {
  %h = shard.update_halo %x on @g split_axes = [[0]] halo_sizes = [1, 2] : tensor<7x3xf32>
  return %h : tensor<7x3xf32>
}

// -----

// Dynamic dims: the global type keeps '?' (the interpreter splits the input it is given);
// a buffer is sized at run time with the global extent of an operand read along the same
// loop (memref.dim); tensor.dim (a local extent) is the global one over the parts.
// CHECK-LABEL: func.func @dynamic(
// CHECK-SAME:  %arg0: memref<?x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
// CHECK:       %[[G:.*]] = memref.dim %arg0, %c0
// CHECK:       %[[L:.*]] = arith.divui %[[G]], %c2
// CHECK:       %[[D:.*]] = memref.dim %arg0
// CHECK:       %[[K:.*]] = memref.alloc(%[[D]]) : memref<?x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
// CHECK:       call @dynamic_kernel_0(%arg0, %[[L]], %[[K]])
// CHECK:       %[[D2:.*]] = memref.dim %[[K]]
// CHECK:       memref.alloc(%[[D2]]) : memref<?x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
// CHECK:       "hir.allgather"
// LOWER-LABEL: func.func @dynamic(
// LOWER:       "hir.allgather"
shard.grid @g(shape = 2)
func.func @dynamic(%x: tensor<?x4xf32> {hir.split_axes = #shard<axisarray[[0]]>}) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %d = tensor.dim %x, %c0 : tensor<?x4xf32>
  %e = tensor.empty(%d) : tensor<?x4xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x4xf32>) outs(%e : tensor<?x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<?x4xf32>
  %g = shard.all_gather %s on @g grid_axes = [0] gather_axis = 0 : tensor<?x4xf32> -> tensor<?x4xf32>
  return %g : tensor<?x4xf32>
}

// -----

// Device coordinates on a multi-D grid: the mesh position divided by the stride of the grid
// axis, modulo its extent (row-major). all_slice on grid axis 1 slices at coordinate 1's offset.
// CHECK-LABEL: func.func private @multi_index_kernel_0
// CHECK:       tensor.extract_slice {{.*}}[0, %{{.*}}] [4, 2] [1, 1]
// CHECK-LABEL: func.func @multi_index
// CHECK:       %[[LIN:.*]] = "hir.device_index"() {mesh = array<i64: 0, 1, 2, 3, 4, 5>}
// CHECK:       arith.remui %[[LIN]], %c3
// CHECK:       call @multi_index_kernel_0
// CHECK:       %[[D:.*]] = "hir.device_index"() {mesh = array<i64: 0, 1, 2, 3, 4, 5>}
// CHECK:       %[[ROW:.*]] = arith.divui %[[D]], %c3
// CHECK:       %[[L:.*]] = "hir.device_index"() {mesh = array<i64: 0, 1, 2, 3, 4, 5>}
// CHECK:       return %{{.*}}, %[[ROW]], %[[L]]
// LOWER-LABEL: func.func @multi_index
// LOWER:       arith.remui
shard.grid @g(shape = 2x3)
func.func @multi_index(%x: tensor<4x6xf32>) -> (tensor<4x2xf32>, index, index) {
  %s = shard.all_slice %x on @g grid_axes = [1] slice_axis = 1 : tensor<4x6xf32> -> tensor<4x2xf32>
  %i = shard.process_multi_index on @g axes = [0] : index
  %l = shard.process_linear_index on @g : index
  return %s, %i, %l : tensor<4x2xf32>, index, index
}

// -----

// all_reduce into another element type communicates in the result's type: a kernel converts
// the partial sums (arith.extf) first, as upstream's MPI lowering copies into the wider buffer.
// CHECK-LABEL: func.func private @new_type_kernel_0
// CHECK:       arith.extf %{{.*}} : tensor<8xf32> to tensor<8xf64>
// CHECK-LABEL: func.func @new_type
// CHECK:       call @new_type_kernel_0(%arg0, %[[W:.*]]) : (memref<2x8xf32, {{.*}}>, memref<2x8xf64, {{.*}}>) -> ()
// CHECK:       "hir.allreduce"(%[[W]], %{{.*}}) {{.*}} : (memref<2x8xf64, {{.*}}>, memref<8xf64, {{.*}}>) -> !hir.work
// LOWER-LABEL: func.func @new_type
// LOWER:       "hir.allreduce"
shard.grid @g(shape = 2)
func.func @new_type(%p: tensor<8xf32>) -> tensor<8xf64> {
  %r = shard.all_reduce %p on @g grid_axes = [0] : tensor<8xf32> -> tensor<8xf64>
  return %r : tensor<8xf64>
}

// -----

// neighbors_linear_indices: host index arithmetic, -1 past the edge (upstream's MPI lowering
// gives 29 and -1 here); an argument nothing reads is replicated.
// CHECK-LABEL: func.func @neighbors
// CHECK-SAME:  (%arg0: memref<8xi8, #hir.shard<dense<{{.*}}> : tensor<3x4x5xi64>, array<i64: -1, -1, -1>>>)
// CHECK:       arith.select
// LOWER-LABEL: func.func @neighbors
// LOWER-DAG:   %[[DOWN:.*]] = arith.constant -1 : index
// LOWER-DAG:   %[[UP:.*]] = arith.constant 29 : index
// LOWER:       return %[[DOWN]], %[[UP]] : index, index
shard.grid @grid0(shape = 3x4x5)
func.func @neighbors(%unused: tensor<8xi8>) -> (index, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %idx:2 = shard.neighbors_linear_indices on @grid0[%c1, %c0, %c4] split_axes = [1] : index, index
  return %idx#0, %idx#1 : index, index
}

// -----

// A hand-partitioned all_gather along a dim its operand is not split by: each device's local
// data is copied into a buffer split along the gathered dim (per device, the gather
// concatenates the local tensors), then gathered.
// CHECK-LABEL: func.func private @other_dim_kernel_0
// CHECK:       tensor.extract_slice %{{.*}}[0, 0] [4, 2] [1, 1]
// CHECK-LABEL: func.func @other_dim
// CHECK-SAME:  (%arg0: memref<8x2xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>)
// CHECK:       call @other_dim_kernel_0(%arg0, %[[C:.*]]) : (memref<8x2xf32, {{.*}}, 0 : i64>>, memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
// CHECK:       "hir.allgather"(%[[C]], %{{.*}}) {axis = 1 : i64
// LOWER-LABEL: func.func @other_dim
// LOWER:       "hir.allgather"
shard.grid @g(shape = 2)
func.func @other_dim(%x: tensor<4x2xf32> {hir.split_axes = #shard<axisarray[[0]]>}) -> tensor<4x4xf32> {
  %r = shard.all_gather %x on @g grid_axes = [0] gather_axis = 1 : tensor<4x2xf32> -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
