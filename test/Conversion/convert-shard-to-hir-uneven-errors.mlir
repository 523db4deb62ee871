// RUN: not hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-convert-shard-to-hir)' 2>&1 | FileCheck %s
// Uneven splits (sharded_dims_offsets) hir does not carry, each reported at the op or the
// function, with no traceback.
// CHECK-NOT: Traceback

shard.grid @g(shape = 2)
func.func @slice_uneven(%x: tensor<?x4xf32> {hir.split_axes = #shard<axisarray[[0]]>, hir.sharded_dims_offsets = array<i64: 0, 3, 8>}) -> tensor<1x4xf32> {
  // CHECK: convert-shard-to-hir-uneven-errors.mlir:[[# @LINE + 1]]:8: error: 'tensor.extract_slice' op reads a value split unevenly (split along dim 0 (dim 0 cut at [0, 3, 8])); hir carries uneven splits through linalg ops only
  %r = tensor.extract_slice %x[0, 0] [1, 4] [1, 1] : tensor<?x4xf32> to tensor<1x4xf32>
  return %r : tensor<1x4xf32>
}

// -----

shard.grid @g(shape = 2)
func.func @cut_differently(%x: tensor<?x4xf32> {hir.split_axes = #shard<axisarray[[0]]>, hir.sharded_dims_offsets = array<i64: 0, 3, 8>},
                           %y: tensor<4x4xf32> {hir.split_axes = #shard<axisarray[[0]]>}) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x4xf32>
  %e = tensor.empty(%n) : tensor<?x4xf32>
  // CHECK: convert-shard-to-hir-uneven-errors.mlir:[[# @LINE + 1]]:8: error: 'linalg.generic' op has operands cut differently along its result dim 0
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<?x4xf32>, tensor<4x4xf32>) outs(%e : tensor<?x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// -----

shard.grid @g(shape = 2)
func.func @bad_offsets(%x: tensor<?x4xf32> {hir.split_axes = #shard<axisarray[[0]]>, hir.sharded_dims_offsets = array<i64: 0, 3>}) -> tensor<?x4xf32> {
  // CHECK: convert-shard-to-hir-uneven-errors.mlir:[[# @LINE - 1]]:1: error: 'func.func' op @bad_offsets argument #0: #shard<axisarray{{\[\[}}0]]> with sharded_dims_offsets [0, 3]: dim 0 is cut into 2 parts, which need 3 rising boundaries from 0
  return %x : tensor<?x4xf32>
}

// -----

shard.grid @g(shape = 2)
func.func @result_cut_elsewhere(%x: tensor<?x4xf32> {hir.split_axes = #shard<axisarray[[0]]>, hir.sharded_dims_offsets = array<i64: 0, 3, 8>}) -> (tensor<?x4xf32> {hir.sharded_dims_offsets = array<i64: 0, 5, 8>}) {
  // CHECK: convert-shard-to-hir-uneven-errors.mlir:[[# @LINE + 1]]:3: error: 'func.func' op @result_cut_elsewhere result #0 is cut at [0, 3, 8], not at its recorded sharded_dims_offsets [0, 5, 8]
  return %x : tensor<?x4xf32>
}
