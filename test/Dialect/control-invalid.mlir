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
  // expected-error @+1 {{expects parent op 'hir.for' or 'hir.stream_for', got 'func.func'}}
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

// -----

// stream_for body needs one block
func.func @stream_no_block(%c: index) {
  %u = "hir.get_current_stream"() : () -> !hir.stream
  // expected-error @+1 {{'hir.stream_for' op body must have exactly one block, has 0}}
  "hir.stream_for"(%c, %c, %c, %u) ({
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (index, index, index, !hir.stream) -> ()
  return
}

// -----

// stream_for body block takes the index and the stream slot
func.func @stream_one_argument(%c: index) {
  %u = "hir.get_current_stream"() : () -> !hir.stream
  // expected-error @+1 {{'hir.stream_for' op body block must have exactly two arguments, the index and the stream slot (both of type index)}}
  "hir.stream_for"(%c, %c, %c, %u) ({
  ^bb0(%i: index):
    "hir.yield"() : () -> ()
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (index, index, index, !hir.stream) -> ()
  return
}

// -----

// stream_for body must be terminated
func.func @stream_unterminated(%c: index) {
  %u = "hir.get_current_stream"() : () -> !hir.stream
  // expected-error @+1 {{'hir.stream_for' op body must end with 'hir.yield'}}
  "hir.stream_for"(%c, %c, %c, %u) ({
  ^bb0(%i: index, %s: index):
    %x = arith.addi %i, %s : index
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (index, index, index, !hir.stream) -> ()
  return
}

// -----

// stream loops do not nest
func.func @stream_nested(%c: index) {
  %u = "hir.get_current_stream"() : () -> !hir.stream
  "hir.stream_for"(%c, %c, %c, %u) ({
  ^bb0(%i: index, %s: index):
    // expected-error @+1 {{'hir.stream_for' op is nested in another 'hir.stream_for'; nested stream parallelism is not supported}}
    "hir.stream_for"(%c, %c, %c, %u) ({
    ^bb0(%j: index, %t: index):
      "hir.yield"() : () -> ()
    }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (index, index, index, !hir.stream) -> ()
    "hir.yield"() : () -> ()
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (index, index, index, !hir.stream) -> ()
  return
}

// -----

// the user stream is a stream
func.func @stream_user_not_stream(%c: index) {
  // expected-error @+1 {{expected base type 'hir.stream'}}
  "hir.stream_for"(%c, %c, %c, %c) ({
  ^bb0(%i: index, %s: index):
    "hir.yield"() : () -> ()
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (index, index, index, index) -> ()
  return
}

// -----

// the operand groups are given (slots is optional)
func.func @stream_no_segments(%c: index) {
  %u = "hir.get_current_stream"() : () -> !hir.stream
  // expected-error @+1 {{requires operandSegmentSizes}}
  "hir.stream_for"(%c, %c, %c, %u) ({
  ^bb0(%i: index, %s: index):
    "hir.yield"() : () -> ()
  }) : (index, index, index, !hir.stream) -> ()
  return
}

// -----

// a join of the pool streams does nothing but wait for each
func.func @join_does_more(%c: index, %user: !hir.stream) {
  // expected-error @+1 {{'hir.for' op with 'hir.joins_pool_streams' must have the body %stream = hir.get_stream(index), hir.synchronize(%stream), hir.yield; got hir.get_stream, hir.set_current_stream, hir.synchronize, hir.yield}}
  "hir.for"(%c, %c, %c) ({
  ^bb0(%s: index):
    %stream = "hir.get_stream"(%s) : (index) -> !hir.stream
    "hir.set_current_stream"(%stream) : (!hir.stream) -> ()
    "hir.synchronize"(%user) : (!hir.stream) -> ()
    "hir.yield"() : () -> ()
  }) {hir.joins_pool_streams} : (index, index, index) -> ()
  return
}

// -----

// a join waits for the pool stream of its index
func.func @join_waits_for_another(%c: index, %user: !hir.stream) {
  // expected-error @+1 {{'hir.for' op with 'hir.joins_pool_streams' must have the body}}
  "hir.for"(%c, %c, %c) ({
  ^bb0(%s: index):
    %stream = "hir.get_stream"(%s) : (index) -> !hir.stream
    "hir.synchronize"(%user) : (!hir.stream) -> ()
    "hir.yield"() : () -> ()
  }) {hir.joins_pool_streams} : (index, index, index) -> ()
  return
}
