// RUN: hir-run %s true 4 --print | FileCheck %s --check-prefix=TRUE
// RUN: hir-run %s false 4 --print | FileCheck %s --check-prefix=FALSE
// scf.if on an i1 argument (nvFuser's IfThenElse), scf.for with an iter_arg, and linalg.fill
// turning the loop index into a buffer: row i of the output is filled with i (+ 10 when
// the flag is false).

func.func @main(%flag: i1, %n: index) -> (memref<4x3xf32>, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %out = memref.alloc() : memref<4x3xf32>
  %base = scf.if %flag -> (index) {
    scf.yield %c0 : index
  } else {
    scf.yield %c10 : index
  }
  %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> (index) {
    %row = "hir.alias_select"(%out, %i) {axis = 0 : i64} : (memref<4x3xf32>, index) -> memref<3xf32, strided<[1], offset: ?>>
    %v = arith.addi %i, %base : index
    %vi = arith.index_cast %v : index to i64
    %vf = arith.sitofp %vi : i64 to f32
    linalg.fill ins(%vf : f32) outs(%row : memref<3xf32, strided<[1], offset: ?>>)
    %next = arith.addi %acc, %i : index
    scf.yield %next : index
  }
  return %out, %sum : memref<4x3xf32>, index
}

// TRUE:      output 0: shape [4, 3] f32
// TRUE-NEXT: {{\[}}[0, 0, 0],
// TRUE-NEXT:  [1, 1, 1],
// TRUE-NEXT:  [2, 2, 2],
// TRUE-NEXT:  [3, 3, 3]]
// TRUE-NEXT: output 1: 6
// FALSE:      {{\[}}[10, 10, 10],
// FALSE:       [13, 13, 13]]
// FALSE-NEXT: output 1: 6
