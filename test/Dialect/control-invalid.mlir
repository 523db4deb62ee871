// One case per verifier rule of the control ops (control group); each must fail with its
// message at the op's location.
// RUN: hir-opt %s --split-input-file --verify-diagnostics

// for body needs one block
func.func @f6(%c: index) {
  // expected-error @+1 {{'hir.for' op body must have exactly one block, has 0}}
  "hir.for"(%c, %c, %c) ({
  }) : (index, index, index) -> ()
  return
}

// -----

// for body block takes one index
func.func @f7(%c: index) {
  // expected-error @+1 {{body block must have exactly one argument, the index}}
  "hir.for"(%c, %c, %c) ({
  ^bb0(%i: i32):
    "hir.yield"() : () -> ()
  }) : (index, index, index) -> ()
  return
}

// -----

// for body must be terminated
func.func @f8(%c: index) {
  // expected-error @+1 {{body must end with 'hir.yield'}}
  "hir.for"(%c, %c, %c) ({
  ^bb0(%i: index):
    %x = arith.addi %i, %i : index
  }) : (index, index, index) -> ()
  return
}

// -----

// yield outside a loop
func.func @f9() {
  // expected-error @+1 {{expects parent op 'hir.for', got 'func.func'}}
  "hir.yield"() : () -> ()
}

// -----

// loop bounds are indices
func.func @f10(%c: i32) {
  // expected-error @+1 {{expected base type 'builtin.index' but got 'builtin.integer'}}
  "hir.for"(%c, %c, %c) ({
  ^bb0(%i: index):
    "hir.yield"() : () -> ()
  }) : (i32, i32, i32) -> ()
  return
}
