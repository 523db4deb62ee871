// Each chunk is parsed and printed on its own; line numbers in errors stay file-relative.
// RUN: hir-opt %s --split-input-file | FileCheck %s
// RUN: not hir-opt %s 2>&1 | FileCheck --check-prefix=WHOLE %s

// CHECK: func.func @a
// CHECK: // -----
// CHECK: func.func @a
func.func @a() {
  return
}

// -----

// Redefining @a is fine in a separate chunk, an error in the whole file.
// WHOLE: split-input-file.mlir:16:1: error: redefinition of symbol named 'a'
func.func @a() {
  return
}
