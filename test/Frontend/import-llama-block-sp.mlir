// RUN: hir-opt %S/Inputs/llama_block_sp.mlir --pass-pipeline='builtin.module(hir-convert-to-communication{backend=gloo},hir-lower)' | FileCheck %s
// RUN: hir-opt %S/Inputs/llama_block_sp.mlir --pass-pipeline='builtin.module(hir-convert-to-communication{backend=gloo},hir-p2p-pipeline{overlap=on},hir-lower)' | FileCheck %s --check-prefix=P2P
// The LLaMA block (RMSNorm, RoPE, causal SDPA with GQA, SwiGLU) sequence-parallel on 2
// devices, [B, S, D] = [2, 8, 32] split on S (issue 39): what the hand-written SP does and
// no more. The normed activation is gathered once for q, k and v and once for gate and up
// (2 all-gathers, not one per linear), attention is one causal SDPA over the whole gathered
// sequence on this device's heads, and o / down are one GEMM per step over all the step's
// rows ([2, T/S * B, K/D] = [2, 8, 16]; not T/S GEMVs with B as M and the weight broadcast
// over the tokens) before each reduce-scatter. Inputs/llama_block_sp.mlir is what
// `hir-import Inputs/llama_block.py --placements sequence_placements` makes
// (test_sp_layer_graph_gpu.py checks it on CPU and runs it on 2 GPUs);
// test_from_torch_multirank.py imports and runs it on Gloo.

// CHECK-LABEL: func.func @main(
// CHECK:         "hir.allgather"(%{{.*}}, %[[QKV:.*]]) {axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1>} : (memref<2x4x2x32xf32
// CHECK-NOT:     "hir.allgather"
// CHECK:         %[[ROWS:.*]] = "hir.alias_select"(%[[QKV]], %{{.*}}) {axis = 0 : i64}
// CHECK-NEXT:    "hir.alias_select"
// CHECK-NEXT:    "hir.linear"(%[[ROWS]], %arg4,
// CHECK:         "hir.linear"(%[[ROWS]], %arg5,
// CHECK:         "hir.linear"(%[[ROWS]], %arg6,
// CHECK-NOT:     "hir.allgather"
// CHECK:         "hir.matmul"(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<2x8x16xf32, {{.*}}>, memref<2x16x32xf32, {{.*}}>, memref<2x8x32xf32, {{.*}}>) -> ()
// CHECK:         "hir.reduce_scatter"({{.*}}) {axis = 1 : i64, backend = "gloo", reduction = "sum", scatter_axis = 0 : i64, team = array<i64: 0, 1>} : (memref<2x2x8x32xf32
// CHECK:         "hir.allgather"(%{{.*}}, %[[MLP:.*]]) {axis = 0 : i64, backend = "gloo", team = array<i64: 0, 1>}
// CHECK-NOT:     "hir.allgather"
// CHECK:         %[[H:.*]] = "hir.alias_select"(%[[MLP]], %{{.*}}) {axis = 0 : i64}
// CHECK-NEXT:    "hir.alias_select"
// CHECK-NEXT:    "hir.linear"(%[[H]], %arg8,
// CHECK:         "hir.linear"(%[[H]], %arg9,
// CHECK:         "hir.matmul"(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<2x8x32xf32, {{.*}}>, memref<2x32x32xf32, {{.*}}>, memref<2x8x32xf32, {{.*}}>) -> ()
// CHECK:         "hir.reduce_scatter"
// CHECK-NOT:     "hir.allgather"
// CHECK-NOT:     "hir.reduce_scatter"
// CHECK-NOT:     "hir.allreduce"
// CHECK:         return
// The attention: causal (is_causal true, no mask), the whole sequence (8), 4 of 8 heads.
// CHECK:         torch.aten.scaled_dot_product_attention %{{.*}}, %{{.*}}, %{{.*}}, %none, %float0.000000e00, %true, %none, %false : !torch.vtensor<[2,4,8,4],f32>, !torch.vtensor<[2,4,8,4],f32>, !torch.vtensor<[2,4,8,4],f32>, !torch.none

// hir-p2p-pipeline: one barrier and one pipeline per gathered activation, each step
// computing q, k and v (gate and up) on the peer's rows it received.
// P2P-LABEL: func.func @main(
// P2P-NOT:     "hir.allgather"
// P2P:         "hir.barrier"
// P2P:         "hir.linear"(%[[OWN:.*]], %arg4,
// P2P-NEXT:    "hir.alias_select"
// P2P-NEXT:    "hir.linear"(%[[OWN]], %arg5,
// P2P-NEXT:    "hir.alias_select"
// P2P-NEXT:    "hir.linear"(%[[OWN]], %arg6,
// P2P:         "hir.shift"
// P2P:         "hir.linear"(%[[PEER:.*]], %arg4,
// P2P:         "hir.linear"(%[[PEER]], %arg5,
// P2P:         "hir.linear"(%[[PEER]], %arg6,
// P2P:         "hir.barrier"
// P2P:         "hir.linear"(%{{.*}}, %arg8,
// P2P:         "hir.linear"(%{{.*}}, %arg9,
// P2P-NOT:     "hir.barrier"
// P2P-NOT:     "hir.allgather"
// P2P-NOT:     "hir.reduce_scatter"
// P2P:         return
