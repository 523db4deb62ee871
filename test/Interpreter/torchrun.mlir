// hir-run under torchrun: the ranks come from torchrun's environment (Gloo on CPU).
// stderr goes to FileCheck too, so a failed launch shows its error in FileCheck's input dump
// (CI once saw exit 1 and nothing else); the CHECK-DAG lines ignore torchrun's banner. The
// collective timeout is long because CI's 2 cores also run pytest's multi-rank tests.
// RUN: env HIR_DEVICE=cpu HIR_DIST_TIMEOUT=300 torchrun --standalone --nproc_per_node=2 --no-python hir-run %s arange zeros --print 2>&1 | FileCheck %s

!shard = memref<4x2xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
func.func @main(%a: !shard, %b: memref<4x2xf32>) -> memref<4x2xf32> {
  %w = "hir.allgather"(%a, %b) {axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1>} : (!shard, memref<4x2xf32>) -> !hir.work
  "hir.wait"(%w) : (!hir.work) -> ()
  return %b : memref<4x2xf32>
}

// Ranks print concurrently, so only each rank's own lines are matched.
// CHECK-DAG: rank 0: output 0: shape [4, 2] f32
// CHECK-DAG: rank 1: output 0: shape [4, 2] f32
// CHECK-DAG: rank 0:  [6, 7]]
// CHECK-DAG: rank 1:  [6, 7]]
