// RUN: hir-import %S/Inputs/mlp.py | FileCheck %s
// RUN: hir-import %S/Inputs/mlp.py -o %t.mlir && hir-run %t.mlir --print | FileCheck %s --check-prefix=OUT
// Linear + GELU + Linear: the linears become hir.linear on the parameter arguments (state
// dict order, then the input), the GELU a kernel segment holding torch.aten.gelu.

// CHECK-LABEL: func.func @main(
// CHECK-SAME:    %[[W1:.*]]: memref<64x16xf32> {hir.parameter}, %[[B1:.*]]: memref<64xf32> {hir.parameter}, %[[W2:.*]]: memref<16x64xf32> {hir.parameter}, %[[B2:.*]]: memref<16xf32> {hir.parameter}, %[[X:.*]]: memref<8x16xf32>) -> memref<8x16xf32>
// CHECK:         %[[H:.*]] = memref.alloc() : memref<8x64xf32>
// CHECK-NEXT:    "hir.linear"(%[[X]], %[[W1]], %[[H]], %[[B1]])
// CHECK-NEXT:    %[[G:.*]] = memref.alloc() : memref<8x64xf32>
// CHECK-NEXT:    call @segment_0(%[[H]], %[[G]])
// CHECK-NEXT:    %[[Y:.*]] = memref.alloc() : memref<8x16xf32>
// CHECK-NEXT:    "hir.linear"(%[[G]], %[[W2]], %[[Y]], %[[B2]])
// CHECK-NEXT:    return %[[Y]]
// CHECK-LABEL: func.func private @segment_0(
// CHECK-SAME:    attributes {hir.kernel}
// CHECK:         bufferization.to_tensor
// CHECK-NEXT:    builtin.unrealized_conversion_cast {{.*}} to !torch.vtensor<[8,64],f32>
// CHECK:         torch.aten.gelu
// CHECK:         bufferization.materialize_in_destination

// OUT: output 0: shape [8, 16] f32
