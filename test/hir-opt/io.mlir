// Input from stdin or a file, output to stdout or -o; a failing run leaves -o untouched.
// RUN: hir-opt < %s | FileCheck %s
// RUN: hir-opt %s -o %t.out && FileCheck %s < %t.out
// RUN: echo keep > %t.keep
// RUN: not hir-opt %S/Inputs/bad-op.mlir -o %t.keep
// RUN: FileCheck --check-prefix=KEEP %s < %t.keep
// KEEP: keep

// CHECK: func.func @f
// CHECK: "hir.get_current_stream"
func.func @f() {
  %s = "hir.get_current_stream"() : () -> !hir.stream
  return
}
