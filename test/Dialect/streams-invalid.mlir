// One case per verifier rule of the stream ops (streams group); each must fail with its
// message at the op's location.
// RUN: hir-opt %s --split-input-file --verify-diagnostics

// get_stream takes an index
func.func @f11(%c: i64) {
  // expected-error @+1 {{expected base type 'builtin.index' but got 'builtin.integer'}}
  %s = "hir.get_stream"(%c) : (i64) -> !hir.stream
  return
}

// -----

// set_current_stream takes a stream
func.func @f12(%c: index) {
  // expected-error @+1 {{expected base type 'hir.stream' but got 'builtin.index'}}
  "hir.set_current_stream"(%c) : (index) -> ()
  return
}

// -----

// synchronize takes a stream
func.func @f13(%c: !hir.work) {
  // expected-error @+1 {{expected base type 'hir.stream' but got 'hir.work'}}
  "hir.synchronize"(%c) : (!hir.work) -> ()
  return
}

// -----

// get_current_stream returns a stream
func.func @f14() {
  // expected-error @+1 {{expected base type 'hir.stream' but got 'index'}}
  %s = "hir.get_current_stream"() : () -> index
  return
}
