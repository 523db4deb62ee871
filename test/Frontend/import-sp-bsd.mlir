// RUN: hir-import %S/Inputs/sp_mlp.py | hir-opt --pass-pipeline='builtin.module(hir-convert-to-communication{backend=gloo},hir-lower)' | FileCheck %s
// RUN: env HIR_NORM=rms hir-import %S/Inputs/sp_mlp.py > %t.rms.mlir
// RUN: hir-opt %t.rms.mlir --pass-pipeline='builtin.module(hir-convert-to-communication{backend=gloo},hir-lower)' | FileCheck %s
// RUN: hir-opt %t.rms.mlir --pass-pipeline='builtin.module(hir-convert-to-communication{backend=gloo},hir-p2p-pipeline,hir-lower)' | FileCheck %s --check-prefix=P2P
// [B, S, D] sequence parallelism on 2 devices (tokens split along S, an inner axis): the
// norm runs on each device's sequence shard; fc1's input is transposed locally to lead
// with S, gathered (stream axis 0) and transposed back; fc2's partial sums are
// reduce-scattered onto S the same way. test_from_torch_multirank.py runs it on Gloo.

// CHECK-LABEL: func.func @main(
// CHECK:         "hir.allgather"({{.*}}) {axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1>}
// CHECK:         "hir.reduce_scatter"({{.*}}) {axis = 1 : i64, backend = "gloo", reduction = "sum", scatter_axis = 0 : i64, team = array<i64: 0, 1>}
// CHECK-NOT:     "hir.allgather"
// CHECK-NOT:     "hir.allreduce"
// CHECK-NOT:     "hir.reduce_scatter"
// CHECK:         torch.aten.{{layer|rms}}_norm {{.*}} : !torch.vtensor<[2,4,16],f32>

// hir-p2p-pipeline pipelines both: shifts only, no collective.
// P2P-LABEL: func.func @main(
// P2P-NOT:     "hir.allgather"
// P2P-NOT:     "hir.reduce_scatter"
// P2P-NOT:     "hir.allreduce"
// P2P:         "hir.shift"
// P2P-NOT:     "hir.allgather"
// P2P-NOT:     "hir.reduce_scatter"
// P2P-NOT:     "hir.allreduce"
