// RUN: hir-import %S/Inputs/dynamic_mlp.py | FileCheck %s
// RUN: hir-import %S/Inputs/dynamic_mlp.py -o %t.mlir
// The weights come from %t.safetensors (hir-import wrote it beside %t.mlir); the specs are the input's.
// RUN: hir-run %t.mlir random:3x16 --print | FileCheck %s --check-prefix=OUT3
// RUN: hir-run %t.mlir random:11x16 --print | FileCheck %s --check-prefix=OUT11
// A dynamic token count (`dynamic = {"input0": {0: "tokens"}}` in the file): dim 0 is `?` in
// every type, each buffer is allocated with the input's extent (one memref.dim, reused),
// and the one program runs any number of tokens.

// CHECK-LABEL: func.func @main(
// CHECK-SAME:    %[[X:[a-z0-9]*]]: memref<?x16xf32>) -> memref<?x16xf32>
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[T:.*]] = memref.dim %[[X]], %[[C0]] : memref<?x16xf32>
// CHECK-NEXT:    %[[H:.*]] = memref.alloc(%[[T]]) : memref<?x64xf32>
// CHECK-NEXT:    "hir.linear"(%[[X]], {{.*}}, %[[H]], {{.*}})
// CHECK-NEXT:    %[[G:.*]] = memref.alloc(%[[T]]) : memref<?x64xf32>
// CHECK-NEXT:    call @segment_0(%[[H]], %[[G]])
// CHECK-NEXT:    %[[Y:.*]] = memref.alloc(%[[T]]) : memref<?x16xf32>
// CHECK-LABEL: func.func private @segment_0(
// CHECK:         torch.aten.gelu {{.*}} -> !torch.vtensor<[?,64],f32>

// OUT3: output 0: shape [3, 16] f32
// OUT11: output 0: shape [11, 16] f32
