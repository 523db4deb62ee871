// hir-lower on a 2x2 device mesh (dp x tp): the stream axis is an axis no mesh axis splits,
// slices keep both mesh axes' splits, and collectives with one team per mesh line stay as
// they are. test_transforms_run_equal.py runs it before and after on 4 Gloo ranks.
// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-lower)' | FileCheck %s

// CHECK-LABEL: func.func @matmul_then_allgather
// CHECK:       "hir.for"
// CHECK:       "hir.alias_select"(%arg0, %{{.*}}) {axis = 0 : i64} : (memref<2x8x4xf32, #hir.shard<dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, -1>>>, index) -> memref<8x4xf32, strided<[4, 1], offset: ?>, #hir.shard<dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>
// CHECK:       "hir.matmul"
// CHECK:       "hir.allgather"{{.*}}team = dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>
// CHECK:       memref.dealloc
!a = memref<2x8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, -1>>>
!w = memref<4x6xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 1>>>
!o = memref<2x8x6xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 2>>>
!g = memref<2x8x6xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, -1>>>
func.func @matmul_then_allgather(%a: !a, %w: !w) -> !g {
  %o = memref.alloc() : !o
  "hir.matmul"(%a, %w, %o) {stream_axis = 0 : i64} : (!a, !w, !o) -> ()
  %g = memref.alloc() : !g
  %t = "hir.allgather"(%o, %g) {axis = 2 : i64, backend = "gloo", team = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (!o, !g) -> !hir.work
  "hir.wait"(%t) : (!hir.work) -> ()
  return %g : !g
}
