// --verify-diagnostics passes when every expected diagnostic is produced and fails when one
// is missing or an error is unexpected.
// RUN: hir-opt %s --split-input-file --verify-diagnostics
// RUN: not hir-opt %S/Inputs/wrong-expectations.mlir --split-input-file --verify-diagnostics 2>&1 | FileCheck %s
// A missing diagnostic is reported at its expected-error comment, as mlir-opt does.
// CHECK: wrong-expectations.mlir:2:6: error: expected error "this message is not produced" was not produced
// CHECK-NEXT: // expected{{-}}error @+1 {{.*}}this message is not produced
// CHECK-NEXT: {{^     \^$}}
// CHECK: wrong-expectations.mlir:3:3: error: 'hir.set' op output has shape [5], expected [4]
// CHECK: error: unexpected error
// CHECK: wrong-expectations.mlir:10:6: error: expected error "never" was not produced

func.func @f(%a: memref<4xf32>, %b: memref<5xf32>) {
  // expected-error @below {{output has shape [5], expected [4]}}
  "hir.set"(%a, %b) : (memref<4xf32>, memref<5xf32>) -> ()
  return
}

// -----

func.func @g(%a: memref<4xf32>, %b: memref<5xf32>) {
  "hir.set"(%a, %b) : (memref<4xf32>, memref<5xf32>) -> () // expected-error {{expected [4]}}
  return
}
