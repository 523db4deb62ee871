// RUN: hir-run %s arange:8x4 3 arange:4 --print | FileCheck %s
// Zero-copy views: a dynamic-offset subview, a rank-reducing subview, a strided subview,
// collapse_shape, expand_shape and a broadcast; a write through a view lands in its buffer.

!rows = memref<2x4xf32, strided<[4, 1], offset: ?>>
!row = memref<4xf32, strided<[1], offset: 4>>
!odd = memref<2x2xf32, strided<[8, 2], offset: 5>>
!wide = memref<2x4xf32, strided<[0, 1], offset: ?>>
func.func @main(%a: memref<8x4xf32>, %o: index, %bias: memref<4xf32>) -> (!rows, !row, !odd, memref<32xf32>, memref<2x4x4xf32>, memref<8x4xf32>) {
  %rows = memref.subview %a[%o, 0] [2, 4] [1, 1] : memref<8x4xf32> to !rows
  %row = memref.subview %a[1, 0] [1, 4] [1, 1] : memref<8x4xf32> to !row
  %odd = memref.subview %a[1, 1] [2, 2] [2, 2] : memref<8x4xf32> to !odd
  %flat = memref.collapse_shape %a [[0, 1]] : memref<8x4xf32> into memref<32xf32>
  %grid = memref.expand_shape %a [[0, 1], [2]] output_shape [2, 4, 4] : memref<8x4xf32> into memref<2x4x4xf32>
  %wide = "hir.alias_broadcast"(%bias) : (memref<4xf32>) -> !wide
  %copy = memref.alloc() : memref<8x4xf32>
  "hir.set"(%a, %copy) : (memref<8x4xf32>, memref<8x4xf32>) -> ()
  // rows 3 and 4 of %a += bias (through the subview and the broadcast view)
  "hir.binary"(%rows, %wide, %rows) {kind = "add"} : (!rows, !wide, !rows) -> ()
  return %rows, %row, %odd, %flat, %grid, %copy : !rows, !row, !odd, memref<32xf32>, memref<2x4x4xf32>, memref<8x4xf32>
}

// CHECK:      output 0: shape [2, 4] f32
// CHECK-NEXT: {{\[}}[12, 14, 16, 18],
// CHECK-NEXT:  [16, 18, 20, 22]]
// CHECK-NEXT: output 1: shape [4] f32
// CHECK-NEXT: [4, 5, 6, 7]
// CHECK-NEXT: output 2: shape [2, 2] f32
// CHECK-NEXT: {{\[}}[5, 7],
// CHECK-NEXT:  [14, 18]]
// CHECK-NEXT: output 3: shape [32] f32
// CHECK-NEXT: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 16, 18, 16, 18, 20, 22, 20, 21,
// CHECK:      output 4: shape [2, 4, 4] f32
// CHECK:      output 5: shape [8, 4] f32
// CHECK-NEXT: {{\[}}[0, 1, 2, 3],
// CHECK-NEXT:  [4, 5, 6, 7],
// CHECK-NEXT:  [8, 9, 10, 11],
// CHECK-NEXT:  [12, 13, 14, 15],
