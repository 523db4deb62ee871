// Each chunk is parsed and printed on its own; line numbers in errors stay file-relative.
// RUN: hir-opt %s --split-input-file | FileCheck %s
// RUN: not hir-opt %s 2>&1 | FileCheck --check-prefix=WHOLE %s
// A chunk that fails is reported with its source line and a caret (on stderr, exit 1); the
// others are still printed, as mlir-opt does.
// RUN: not hir-opt %S/Inputs/one-bad-chunk.mlir --split-input-file 2>%t.err | FileCheck --check-prefix=GOOD %s
// RUN: FileCheck --check-prefix=BAD %s < %t.err
// GOOD:      func.func @first
// GOOD-NEXT: return
// GOOD:      // -----
// GOOD-NEXT: module {
// GOOD-NEXT: func.func @third
// GOOD-NOT:  @second
// BAD:      one-bad-chunk.mlir:8:3: error: 'hir.set' op output has shape [5], expected [4]
// BAD-NEXT: {{^}}  "hir.set"(%a, %b) : (memref<4xf32>, memref<5xf32>) -> ()
// BAD-NEXT: {{^  \^$}}

// CHECK: func.func @a
// CHECK: // -----
// CHECK: func.func @a
func.func @a() {
  return
}

// -----

// Redefining @a is fine in a separate chunk, an error in the whole file.
// WHOLE: split-input-file.mlir:29:1: error: redefinition of symbol named 'a'
func.func @a() {
  return
}
