// RUN: hir-import %S/Inputs/llama_block.py | hir-opt --pass-pipeline='builtin.module(hir-convert-to-communication{backend=gloo},hir-lower)' | FileCheck %s
// A LLaMA-style block (RMSNorm, rotary embeddings by slice/cat, GQA k/v heads repeated by
// expand + reshape, SDPA, SwiGLU) tensor-parallel on 2 devices: every segment has a
// placement strategy (hir.frontend.strategies), so attention and the MLP run on local heads
// and columns; the two row-parallel contractions (o, down) are the only collectives.
// test_from_torch_block.py runs it on 2 and 4 Gloo ranks and a 2x2 mesh.

// CHECK-LABEL: func.func @main(
// CHECK-NOT:     "hir.allgather"
// CHECK:         "hir.allreduce"
// CHECK-NOT:     "hir.allgather"
// CHECK:         "hir.allreduce"
// CHECK-NOT:     "hir.allgather"
// CHECK-NOT:     "hir.allreduce"
// CHECK-NOT:     "hir.reduce_scatter"
// CHECK-LABEL: func.func private @segment_
// The rotary halves, GQA's expand and SDPA run on this device's heads (4 of 8, 2 of 4 k/v).
// CHECK:         torch.aten.slice.Tensor {{.*}} -> !torch.vtensor<[2,4,8,2],f32>
// CHECK:         torch.aten.expand {{.*}} -> !torch.vtensor<[2,2,2,8,4],f32>
// CHECK:         torch.aten.scaled_dot_product_attention {{.*}} -> !torch.vtensor<[2,4,8,4],f32>
