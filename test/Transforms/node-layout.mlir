// Communication placed by node (hir-set-node-layout, hir.dialect.nodes): with 2 ranks per
// node, a team inside a node keeps the copy-engine backend (cuda) it asks for; a team that
// spans nodes gets NCCL from hir-convert-to-communication and hir-p2p-pipeline, and
// overlap=auto keeps its collective whole. test_transforms_run_equal.py runs every chunk
// before and after on 4 Gloo ranks.
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-set-node-layout{ranks-per-node=2},hir-convert-to-communication{backend=cuda})' | FileCheck %s
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-set-node-layout{ranks-per-node=2},hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{overlap=auto compute-tflops=0.000001 copy-gbps=0.001})' | FileCheck %s --check-prefix=AUTO
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-set-node-layout{ranks-per-node=4},hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{overlap=auto compute-tflops=0.000001 copy-gbps=0.001})' | FileCheck %s --check-prefix=ONE-NODE
// RUN: hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-set-node-layout{ranks-per-node=2},hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{overlap=on})' | FileCheck %s --check-prefix=ON
// RUN: env HIR_DEBUG=1 hir-opt %s --split-input-file --pass-pipeline='builtin.module(hir-set-node-layout{ranks-per-node=2},hir-convert-to-communication{backend=cuda},hir-p2p-pipeline{overlap=auto})' 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK

// dp x tp on a 2x2 mesh, tp (mesh axis 1) inside a node, dp (mesh axis 0) across nodes: the
// row-parallel matmul's partial sums are all-reduced along tp on copy engines, its rows
// gathered along dp on NCCL.
// CHECK:       module attributes {hir.ranks_per_node = 2 : i64}
// CHECK-LABEL: func.func @dp_tp
// CHECK:       "hir.allreduce"{{.*}}backend = "cuda"{{.*}}team = dense<{{\[\[}}0, 1], [2, 3]]> : tensor<2x2xi64>
// CHECK:       "hir.allgather"{{.*}}backend = "nccl"{{.*}}team = dense<{{\[\[}}0, 2], [1, 3]]> : tensor<2x2xi64>
// REMARK:      remark: hir-convert-to-communication: team [0, 2] spans nodes 0 and 1 (hir.ranks_per_node = 2): backend "nccl" instead of "cuda" (copy engines reach one node only)
!a = memref<2x4x16xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>
!w = memref<2x16x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 0>>>
!p = memref<2x4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 0>>>
!s = memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>
!o = memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>
func.func @dp_tp(%a: !a, %w: !w) -> !o {
  %p = memref.alloc() : !p
  "hir.matmul"(%a, %w, %p) : (!a, !w, !p) -> ()
  %s = memref.alloc() : !s
  "hir.reduction"(%p, %s) {kind = "sum", axes = array<i64: 0>} : (!p, !s) -> ()
  %o = memref.alloc() : !o
  "hir.set"(%s, %o) : (!s, !o) -> ()
  return %o : !o
}

// -----

// A P2P-form all-gather + matmul on 4 ranks. The rates make the pipeline pay, so on one
// node of 4 overlap=auto pipelines it on copy engines; on 2 nodes of 2 the team spans both:
// the collective stays whole, on NCCL. overlap=on pipelines it anyway, with NCCL shifts.
// CHECK-LABEL: func.func @ag_matmul
// CHECK:       "hir.allgather"{{.*}}backend = "nccl"{{.*}}stream_axis = 0
// AUTO-LABEL:  func.func @ag_matmul
// AUTO-NOT:    "hir.shift"
// AUTO:        "hir.allgather"{{.*}}backend = "nccl"{{.*}}team = array<i64: 0, 1, 2, 3>
// AUTO-NOT:    "hir.shift"
// ONE-NODE:    module attributes {{{.*}}hir.ranks_per_node = 4 : i64}
// ONE-NODE-LABEL: func.func @ag_matmul
// ONE-NODE-NOT: "hir.allgather"
// ONE-NODE:    "hir.barrier"() {backend = "cuda", team = array<i64: 0, 1, 2, 3>}
// ONE-NODE:    "hir.shift"{{.*}}backend = "cuda"
// ON-LABEL:    func.func @ag_matmul
// ON-NOT:      "hir.allgather"
// ON:          "hir.barrier"() {backend = "nccl", team = array<i64: 0, 1, 2, 3>}
// ON:          "hir.shift"{{.*}}backend = "nccl"
// ON-NOT:      backend = "cuda"
// REMARK:      remark: hir-convert-to-communication: team [0, 1, 2, 3] spans nodes 0 and 1 (hir.ranks_per_node = 2): backend "nccl" instead of "cuda"
// REMARK:      remark: hir-p2p-pipeline: team [0, 1, 2, 3] spans nodes 0 and 1 (hir.ranks_per_node = 2): kept whole (overlap=auto pipelines teams inside one node only)
!a = memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
!t = memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
!b = memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
!o = memref<4x2x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
func.func @ag_matmul(%a: !a, %b: !b) -> !o {
  %tmp = memref.alloc() : !t
  %out = memref.alloc() : !o
  "hir.set"(%a, %tmp) {stream_axis = 0 : i64} : (!a, !t) -> ()
  "hir.matmul"(%tmp, %b, %out) {stream_axis = 0 : i64} : (!t, !b, !o) -> ()
  return %out : !o
}

// -----

// Two ranks per node on a 1-D mesh of 2: one node, copy engines as asked.
// CHECK-LABEL: func.func @inside_one_node
// CHECK:       "hir.allgather"{{.*}}backend = "cuda"{{.*}}team = array<i64: 0, 1>
// ON-LABEL:    func.func @inside_one_node
!x = memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
!y = memref<4x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
func.func @inside_one_node(%x: !x) -> !y {
  %y = memref.alloc() : !y
  "hir.set"(%x, %y) : (!x, !y) -> ()
  return %y : !y
}
