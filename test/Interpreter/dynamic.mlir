// RUN: hir-run %s --input arange:3x2 --print | FileCheck %s
// RUN: not hir-run %s 2>&1 | FileCheck %s --check-prefix=NOSHAPE
// Dynamic dims: the global shape comes from the input spec; memref.dim and alloc follow it.

func.func @main(%x: memref<?x2xi64>) -> (memref<?x2xi64>, index) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x2xi64>
  %y = memref.alloc(%n) : memref<?x2xi64>
  "hir.binary"(%x, %x, %y) {kind = "mul"} : (memref<?x2xi64>, memref<?x2xi64>, memref<?x2xi64>) -> ()
  return %y, %n : memref<?x2xi64>, index
}

// CHECK:      output 0: shape [3, 2] i64
// CHECK-NEXT: {{\[}}[0, 1],
// CHECK-NEXT:  [4, 9],
// CHECK-NEXT:  [16, 25]]
// CHECK-NEXT: output 1: 3

// NOSHAPE: dynamic.mlir:5:1: error: @main argument #0 (memref<?x2xi64>) has dynamic dims: give the global shape, e.g. --input random:8x2
