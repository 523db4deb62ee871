// Errors are file:line:col: error: ..., exit status 1, and never a Python traceback.
// RUN: not hir-opt %S/Inputs/bad-op.mlir 2>&1 | FileCheck %s
// CHECK: bad-op.mlir:2:3: error: 'hir.set' op output has shape [5], expected [4]
// CHECK-NOT: Traceback

// RUN: not hir-opt %s --pass-pipeline='builtin.module(no-such-pass)' 2>&1 | FileCheck --check-prefix=PIPE %s
// PIPE: hir-opt: error: invalid pipeline element 'no-such-pass': 'no-such-pass' does not refer to a registered pass or pass pipeline

// RUN: not hir-opt %s --pass-pipeline='builtin.module(cse' 2>&1 | FileCheck --check-prefix=UNBAL %s
// UNBAL: hir-opt: error: unbalanced brackets in pipeline

// RUN: not hir-opt %t.does-not-exist 2>&1 | FileCheck --check-prefix=MISSING %s
// MISSING: does-not-exist: error: cannot read: No such file or directory

func.func @ok() {
  return
}
