// RUN: hir-import %S/Inputs/cache_update.py | FileCheck %s
// RUN: hir-import %S/Inputs/cache_update.py | hir-opt --pass-pipeline='builtin.module(hir-lower)' | FileCheck %s --check-prefix=LOWERED
// RUN: hir-import %S/Inputs/cache_update.py -o %t.mlir && hir-run %t.mlir --print | FileCheck %s --check-prefix=OUT
// State written in place (index_copy_ into two buffers, hir.frontend.inplace): the kernel
// segment computing each buffer's new value writes the argument itself, read and written
// through one block argument (to_tensor restrict writable, written back last): no alloc and
// no hir.set for either. `seen`'s new value is also read by a reduction after the segment,
// which then reads the argument.

// CHECK-LABEL: func.func @main(
// CHECK-SAME:    %[[CACHE:[^:]*]]: memref<2x8x4xf32>, %[[SEEN:[^:]*]]: memref<2x8x4xf32>, %[[W:[^:]*]]: memref<4x4xf32> {hir.parameter}, %[[B:[^:]*]]: memref<4xf32> {hir.parameter}, %[[X:[^:]*]]: memref<2x1x4xf32>, %[[POS:[^:]*]]: memref<1xi64>)
// CHECK:         "hir.linear"(%[[X]], %[[W]], %[[K:[^,]*]], %[[B]])
// CHECK-NEXT:    %[[SCALED:.*]] = memref.alloc() : memref<2x8x4xf32>
// CHECK-NEXT:    call @segment_0(%[[K]], %[[CACHE]], %[[POS]], %[[SEEN]], %[[SCALED]])
// CHECK-NOT:     "hir.set"
// CHECK:         "hir.reduction"(%[[SEEN]],
// CHECK-NOT:     "hir.set"
// CHECK:         return
// CHECK-LABEL: func.func private @segment_0(
// CHECK-SAME:    %{{[^:]*}}: memref<2x1x4xf32>, %[[C:[^:]*]]: memref<2x8x4xf32>, %{{[^:]*}}: memref<1xi64>, %[[S:[^:]*]]: memref<2x8x4xf32>, %[[DST:[^:]*]]: memref<2x8x4xf32>)
// CHECK:         %[[CT:.*]] = bufferization.to_tensor %[[C]] restrict writable
// CHECK-NEXT:    %[[CV:.*]] = builtin.unrealized_conversion_cast %[[CT]]
// CHECK:         %[[ST:.*]] = bufferization.to_tensor %[[S]] restrict writable
// CHECK-NEXT:    %[[SV:.*]] = builtin.unrealized_conversion_cast %[[ST]]
// CHECK:         %[[NEW:.*]] = torch.operator "torch.aten.index_copy"(%[[CV]],
// CHECK:         %[[NEWS:.*]] = torch.operator "torch.aten.index_copy"(%[[SV]],
// CHECK:         bufferization.materialize_in_destination %{{.*}} in restrict writable %[[DST]]
// CHECK:         %[[R:.*]] = builtin.unrealized_conversion_cast %[[NEW]]
// CHECK-NEXT:    bufferization.materialize_in_destination %[[R]] in writable %[[C]]
// CHECK:         %[[RS:.*]] = builtin.unrealized_conversion_cast %[[NEWS]]
// CHECK-NEXT:    bufferization.materialize_in_destination %[[RS]] in writable %[[S]]
// CHECK-NEXT:    return

// Lowering keeps the segment writing both arguments.
// LOWERED-LABEL: func.func @main(
// LOWERED-SAME:    %[[CACHE:[^:]*]]: memref<2x8x4xf32>, %[[SEEN:[^:]*]]: memref<2x8x4xf32>
// LOWERED:         call @segment_0(%{{[^,]*}}, %[[CACHE]], %{{[^,]*}}, %[[SEEN]],
// LOWERED-NOT:     "hir.set"

// OUT: output 0: shape [2, 4] f32
