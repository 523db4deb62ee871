// RUN: not hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-shard-to-hir)' 2>&1 | FileCheck %s
// What hir cannot run is reported at the op, with no traceback.
// CHECK-NOT: Traceback

shard.grid @g(shape = 2x2)
func.func @two_grid_axes(%x: tensor<2x16xf32> {hir.split_axes = #shard<axisarray[[0, 1]]>}) -> tensor<4x16xf32> {
  // CHECK: convert-shard-to-hir-errors.mlir:8:8: error: 'shard.all_gather' op runs over grid axes [0] of a value split along dim 0 by grid axis 1 too, minor to them: a team along [0] holds no contiguous block of it
  %r = shard.all_gather %x on @g grid_axes = [0] gather_axis = 0 : tensor<2x16xf32> -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// -----

shard.grid @g(shape = 4)
func.func @unpartitioned(%x: tensor<8x16xf32> {hir.split_axes = #shard<axisarray[[]]>}) -> tensor<8x16xf32> {
  // CHECK: error: 'shard.sharding' op is a sharding annotation: partition the program first
  %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
  %y = shard.shard %x to %s : tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

shard.grid @g(shape = 4)
func.func @shift_no_rotate(%x: tensor<2x16xf32> {hir.split_axes = #shard<axisarray[[0]]>}) -> tensor<2x16xf32> {
  // CHECK: error: 'shard.shift' op without 'rotate' leaves the edge devices' results undefined
  %s = shard.shift %x on @g grid_axes = [0] shift_axis = 0 offset = 1 : tensor<2x16xf32> -> tensor<2x16xf32>
  return %s : tensor<2x16xf32>
}

// -----

// A partial sum read by anything but a reducing collective or a sum with other partial sums.
shard.grid @g(shape = 4)
func.func @partial_read(%a: tensor<8x4xf32> {hir.split_axes = #shard<axisarray[[], [0]]>}, %b: tensor<4x8xf32> {hir.split_axes = #shard<axisarray[[0]]>}) -> tensor<8x8xf32> {
  %c0 = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %p = linalg.matmul ins(%a, %b : tensor<8x4xf32>, tensor<4x8xf32>) outs(%z : tensor<8x8xf32>) -> tensor<8x8xf32>
  // CHECK: error: 'linalg.mul' op reads a partial sum (a value still to be all-reduced)
  %s = linalg.mul ins(%p, %p : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %s : tensor<8x8xf32>
}

// -----

shard.grid @g(shape = 4)
func.func @gather_partial(%a: tensor<8x2xf32> {hir.split_axes = #shard<axisarray[[], [0]]>}, %b: tensor<2x4xf32> {hir.split_axes = #shard<axisarray[[0]]>}) -> tensor<32x4xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %p = linalg.matmul ins(%a, %b : tensor<8x2xf32>, tensor<2x4xf32>) outs(%f : tensor<8x4xf32>) -> tensor<8x4xf32>
  // CHECK: error: 'shard.all_gather' op reads %{{.*}}, which is partial; shard.all_gather needs it split along dim 0
  %g = shard.all_gather %p on @g grid_axes = [0] gather_axis = 0 : tensor<8x4xf32> -> tensor<32x4xf32>
  return %g : tensor<32x4xf32>
}

// -----

shard.grid @g(shape = 4)
func.func @branches_differ(%x: tensor<8xf32> {hir.split_axes = #shard<axisarray[[]]>}, %y: tensor<8xf32> {hir.split_axes = #shard<axisarray[[]]>}) -> tensor<8xf32> {
  %i = shard.process_linear_index on @g : index
  %c0 = arith.constant 0 : index
  %cond = arith.cmpi eq, %i, %c0 : index
  // CHECK: error: 'scf.if' op has branches that differ
  %r = scf.if %cond -> (tensor<8xf32>) {
    scf.yield %x : tensor<8xf32>
  } else {
    scf.yield %y : tensor<8xf32>
  }
  return %r : tensor<8xf32>
}

// -----

shard.grid @g(shape = 2x2)
func.func @minor_first(%x: tensor<2x16xf32> {hir.split_axes = #shard<axisarray[[1, 0]]>}) -> tensor<2x16xf32> {
  // CHECK: error: 'func.func' op @minor_first argument #0: #shard<axisarray[[1, 0]]> splits dim 0 over grid axes [1, 0] minor-first
  return %x : tensor<2x16xf32>
}

// -----

// A hand-partitioned argument that no collective reads: where it lives must be stated.
shard.grid @g(shape = 2)
func.func @hand_partitioned(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // CHECK: error: 'func.func' op @hand_partitioned argument #0 (tensor<4x16xf32>) does not say where it lives: give it {hir.split_axes = #shard<axisarray[...]>}
  %e = tensor.empty() : tensor<4x16xf32>
  %y = linalg.exp ins(%x : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// The global-shape check at the program boundary: 4 rows split over 2 devices are 8, not 7.
shard.grid @g(shape = 2)
func.func @global_mismatch(%x: tensor<4x16xf32> {hir.global_type = tensor<7x16xf32>, hir.split_axes = #shard<axisarray[[0]]>}) -> tensor<4x16xf32> {
  // CHECK: error: 'func.func' op @global_mismatch argument #0: its partitioned type maps back to [8, 16]xf32, not to its global type tensor<7x16xf32>
  return %x : tensor<4x16xf32>
}

// -----

shard.grid @g(shape = 2)
func.func @dynamic(%x: tensor<?x16xf32> {hir.split_axes = #shard<axisarray[[0]]>}) -> tensor<?xf32> {
  // CHECK: error: 'tensor.collapse_shape' op result #0 has the dynamic type tensor<?xf32>: hir cannot size dim 0 of its buffer at run time (no operand of the same global extent)
  %c = tensor.collapse_shape %x [[0, 1]] : tensor<?x16xf32> into tensor<?xf32>
  return %c : tensor<?xf32>
}

// -----

// A team over several grid axes takes them major to minor (the devices' row-major order).
shard.grid @g(shape = 2x2)
func.func @minor_first_team(%p: tensor<2x16xf32>) -> tensor<2x16xf32> {
  // CHECK: error: 'shard.all_reduce' op runs over grid axes [1, 0] minor-first; hir runs a team over grid axes in grid order (row-major)
  %r = shard.all_reduce %p on @g grid_axes = [1, 0] : tensor<2x16xf32> -> tensor<2x16xf32>
  return %r : tensor<2x16xf32>
}

// -----

// Several grids per module convert (each function on the one it uses); one function on two of different shapes does not.
shard.grid @a(shape = 2)
shard.grid @b(shape = 4)
// CHECK: convert-shard-to-hir-errors.mlir:[[# @LINE + 1]]:1: error: 'func.func' op @two_grids uses the grids @a (2), @b (4); hir converts a function on grids of one shape
func.func @two_grids(%x: tensor<2x16xf32>, %p: tensor<8xf32>) -> (tensor<4x16xf32>, tensor<8xf32>) {
  %g = shard.all_gather %x on @a grid_axes = [0] gather_axis = 0 : tensor<2x16xf32> -> tensor<4x16xf32>
  %r = shard.all_reduce %p on @b grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  return %g, %r : tensor<4x16xf32>, tensor<8xf32>
}

// -----

shard.grid @dyn(shape = ?)
// CHECK: convert-shard-to-hir-errors.mlir:[[# @LINE - 1]]:1: error: 'shard.grid' op has shape ?; every extent must be static and positive
func.func @dynamic_grid(%p: tensor<8xf32>) -> tensor<8xf32> {
  %r = shard.all_reduce %p on @dyn grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

shard.grid @g(shape = 2)
func.func @extract_split(%x: tensor<4xi64> {hir.split_axes = #shard<axisarray[[0]]>}) -> i64 {
  %c0 = arith.constant 0 : index
  // CHECK: error: 'tensor.extract' op reads an element of %arg0, which is split along dim 0; hir reads elements of replicated tensors only
  %e = tensor.extract %x[%c0] : tensor<4xi64>
  return %e : i64
}

// -----

// A partial sum pending on two grid axes is reduced over both at once.
shard.grid @g(shape = 2x2)
func.func @pending_on_two(%x: tensor<2x2xf32> {hir.split_axes = #shard<axisarray[[], [0, 1]]>}, %w: tensor<2x2xf32> {hir.split_axes = #shard<axisarray[[0, 1]]>}) -> tensor<2x2xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x2xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x2xf32>) -> tensor<2x2xf32>
  %p = linalg.matmul ins(%x, %w : tensor<2x2xf32>, tensor<2x2xf32>) outs(%f : tensor<2x2xf32>) -> tensor<2x2xf32>
  // CHECK: error: 'shard.all_reduce' op sums over grid axes [1] a value whose sum is pending on grid axes [0, 1]; hir reduces a partial sum over all its grid axes at once
  %r = shard.all_reduce %p on @g grid_axes = [1] : tensor<2x2xf32> -> tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}

// -----

// Halos are exchanged along one grid axis per dim (shift teams are lines of the grid).
shard.grid @g(shape = 2x2)
func.func @halo_two_axes(%x: tensor<6x3xf32> {hir.split_axes = #shard<axisarray[[0, 1]]>}) -> tensor<6x3xf32> {
  // CHECK: error: 'shard.update_halo' op splits dim 0 over grid axes [0, 1]; hir exchanges halos along one grid axis per dim
  %h = shard.update_halo %x on @g split_axes = [[0, 1]] halo_sizes = [1, 1] : tensor<6x3xf32>
  return %h : tensor<6x3xf32>
}

// -----

// A partial sum is reduced before it moves.
shard.grid @g(shape = 2x2)
func.func @shift_partial(%p: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %r = shard.all_reduce %p on @g grid_axes = [0] : tensor<4x4xf32> -> tensor<4x4xf32>
  // CHECK: error: 'shard.shift' op shifts %arg0, which is a partial sum (partial on grid axis 0, replicated on grid axis 1); hir shifts blocks of placed data
  %s = shard.shift %p on @g grid_axes = [1] shift_axis = 1 offset = 1 rotate : tensor<4x4xf32> -> tensor<4x4xf32>
  return %s : tensor<4x4xf32>
}

// -----

shard.grid @g(shape = 2)
func.func @halo_too_big(%x: tensor<4x3xf32> {hir.split_axes = #shard<axisarray[[0]]>}) -> tensor<4x3xf32> {
  // CHECK: error: 'shard.update_halo' op has halos [2, 1] on dim 0 of local extent 4; each must fit in the core (1 rows)
  %h = shard.update_halo %x on @g split_axes = [[0]] halo_sizes = [2, 1] : tensor<4x3xf32>
  return %h : tensor<4x3xf32>
}

// -----

shard.grid @g(shape = 2)
func.func @return_sharding(%x: tensor<4x3xf32> {hir.split_axes = #shard<axisarray[[0]]>}) -> (tensor<4x3xf32>, !shard.sharding) {
  // CHECK: error: 'shard.sharding' op is returned (a !shard.sharding result); hir functions return buffers and host scalars, whose placements live in their types
  %s = shard.sharding @g split_axes = [[0]] : !shard.sharding
  return %x, %s : tensor<4x3xf32>, !shard.sharding
}
