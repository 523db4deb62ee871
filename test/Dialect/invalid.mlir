// One case per verifier rule; each must fail with its message at the op's location.
// RUN: hir-opt %s --split-input-file --verify-diagnostics

// shard mesh must be an i64 array
func.func @f0(%a: memref<4xf32, #hir.shard<[0, 1], 0 : i64>>) {
  // expected-error @+1 {{#hir.shard mesh must be array<i64: ...>}}
  "hir.set"(%a, %a) : (memref<4xf32, #hir.shard<[0, 1], 0 : i64>>, memref<4xf32, #hir.shard<[0, 1], 0 : i64>>) -> ()
  return
}

// -----

// empty mesh
func.func @f1(%a: memref<4xf32, #hir.shard<array<i64>, 0 : i64>>) {
  // expected-error @+1 {{the device mesh is empty}}
  "hir.set"(%a, %a) : (memref<4xf32, #hir.shard<array<i64>, 0 : i64>>, memref<4xf32, #hir.shard<array<i64>, 0 : i64>>) -> ()
  return
}

// -----

// duplicate devices in mesh
func.func @f2(%a: memref<4xf32, #hir.shard<array<i64: 1, 1>, 0 : i64>>) {
  // expected-error @+1 {{must hold distinct non-negative device ids}}
  "hir.set"(%a, %a) : (memref<4xf32, #hir.shard<array<i64: 1, 1>, 0 : i64>>, memref<4xf32, #hir.shard<array<i64: 1, 1>, 0 : i64>>) -> ()
  return
}

// -----

// shard axis out of range
func.func @f3(%a: memref<4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) {
  // expected-error @+1 {{shard axis 1 is out of range for rank 1}}
  "hir.set"(%a, %a) : (memref<4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
  return
}

// -----

// uneven split
func.func @f4(%a: memref<5xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) {
  // expected-error @+1 {{axis 0 of extent 5 does not split evenly over 2 devices}}
  "hir.set"(%a, %a) : (memref<5xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<5xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
  return
}

// -----

// foreign memory space
func.func @f5(%a: memref<4xf32, 1>) {
  // expected-error @+1 {{hir buffers use #hir.shard<...> or none}}
  "hir.set"(%a, %a) : (memref<4xf32, 1>, memref<4xf32, 1>) -> ()
  return
}

// -----

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

// -----

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

// -----

// alias_select axis out of range
func.func @f15(%a: memref<4x8xf32>, %i: index) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %v = "hir.alias_select"(%a, %i) {axis = 2 : i64} : (memref<4x8xf32>, index) -> memref<4xf32>
  return
}

// -----

// alias_select result type
func.func @f16(%a: memref<4x8xf32>, %i: index) {
  // expected-error @+1 {{does not match the selected view type memref<8xf32, strided<[1], offset: ?>>}}
  %v = "hir.alias_select"(%a, %i) {axis = 0 : i64} : (memref<4x8xf32>, index) -> memref<4xf32, strided<[1], offset: ?>>
  return
}

// -----

// alias_select of a sharded axis
func.func @f17(%a: memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %i: index) {
  // expected-error @+1 {{axis 0 is split over the device mesh}}
  %v = "hir.alias_select"(%a, %i) {axis = 0 : i64} : (memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, index) -> memref<8xf32, strided<[1], offset: ?>>
  return
}

// -----

// alias_select of a scalar
func.func @f18(%a: memref<f32>, %i: index) {
  // expected-error @+1 {{input must have rank >= 1}}
  %v = "hir.alias_select"(%a, %i) {axis = 0 : i64} : (memref<f32>, index) -> memref<f32>
  return
}

// -----

// alias_select needs an axis
func.func @f19(%a: memref<4x8xf32>, %i: index) {
  // expected-error @+1 {{'hir.alias_select' op requires integer attribute 'axis'}}
  %v = "hir.alias_select"(%a, %i) : (memref<4x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
  return
}

// -----

// empty team
func.func @f20(%x: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %y: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) {
  // expected-error @+1 {{team must not be empty}}
  %w = "hir.allgather"(%x, %y) {axis = 0 : i64, backend = "nccl", team = array<i64>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  return
}

// -----

// duplicate team
func.func @f21(%x: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %y: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) {
  // expected-error @+1 {{team [0, 0] must hold distinct non-negative device ids}}
  %w = "hir.allgather"(%x, %y) {axis = 0 : i64, backend = "nccl", team = array<i64: 0, 0>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  return
}

// -----

// unknown backend
func.func @f22(%x: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %y: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) {
  // expected-error @+1 {{attribute 'backend' is "mpi"; expected one of nccl, gloo, cuda}}
  %w = "hir.allgather"(%x, %y) {axis = 0 : i64, backend = "mpi", team = array<i64: 0, 1>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  return
}

// -----

// element type mismatch
func.func @f23(%x: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %y: memref<8x4xf16>) {
  // expected-error @+1 {{element type mismatch: input is f32, output is f16}}
  %w = "hir.allgather"(%x, %y) {axis = 0 : i64, backend = "nccl", team = array<i64: 0, 1>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf16>) -> !hir.work
  return
}

// -----

// mesh outside team
func.func @f24(%x: memref<8x4xf32>, %y: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) {
  // expected-error @+1 {{output mesh [0, 1] has devices outside team [0]}}
  %w = "hir.broadcast"(%x, %y) {backend = "nccl", root = 0 : i64, team = array<i64: 0>} : (memref<8x4xf32>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  return
}

// -----

// allgather input not split
func.func @f25(%x: memref<8x4xf32>, %y: memref<8x4xf32>) {
  // expected-error @+1 {{input must be split along axis 0}}
  %w = "hir.allgather"(%x, %y) {axis = 0 : i64, backend = "nccl", team = array<i64: 0, 1>} : (memref<8x4xf32>, memref<8x4xf32>) -> !hir.work
  return
}

// -----

// allgather axis out of range
func.func @f26(%x: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %y: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) {
  // expected-error @+1 {{axis 3 is out of range for rank 2}}
  %w = "hir.allgather"(%x, %y) {axis = 3 : i64, backend = "nccl", team = array<i64: 0, 1>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  return
}

// -----

// allgather team is the mesh
func.func @f27(%x: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %y: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) {
  // expected-error @+1 {{team [1, 0] must equal the input mesh [0, 1]}}
  %w = "hir.allgather"(%x, %y) {axis = 0 : i64, backend = "nccl", team = array<i64: 1, 0>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  return
}

// -----

// allgather output shape
func.func @f28(%x: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %y: memref<4x4xf32>) {
  // expected-error @+1 {{output has shape [4, 4], expected [8, 4]}}
  %w = "hir.allgather"(%x, %y) {axis = 0 : i64, backend = "nccl", team = array<i64: 0, 1>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<4x4xf32>) -> !hir.work
  return
}

// -----

// allgather output still split
func.func @f29(%x: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %y: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) {
  // expected-error @+1 {{output must not be split along axis 0}}
  %w = "hir.allgather"(%x, %y) {axis = 0 : i64, backend = "nccl", team = array<i64: 0, 1>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> !hir.work
  return
}

// -----

// allgather needs axis
func.func @f30(%x: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %y: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) {
  // expected-error @+1 {{'hir.allgather' op requires integer attribute 'axis'}}
  %w = "hir.allgather"(%x, %y) {backend = "nccl", team = array<i64: 0, 1>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  return
}

// -----

// allreduce reduction kind
func.func @f31(%x: memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %y: memref<8x4xf32>) {
  // expected-error @+1 {{attribute 'reduction' is "avg"; expected one of sum, prod, max, min}}
  %w = "hir.allreduce"(%x, %y) {axis = 0 : i64, backend = "nccl", reduction = "avg", team = array<i64: 0, 1>} : (memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32>) -> !hir.work
  return
}

// -----

// allreduce drops the reduced axis
func.func @f32(%x: memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %y: memref<2x8x4xf32>) {
  // expected-error @+1 {{output has shape [2, 8, 4], expected [8, 4]}}
  %w = "hir.allreduce"(%x, %y) {axis = 0 : i64, backend = "nccl", reduction = "sum", team = array<i64: 0, 1>} : (memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<2x8x4xf32>) -> !hir.work
  return
}

// -----

// allreduce output replicated
func.func @f33(%x: memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %y: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) {
  // expected-error @+1 {{output must not be split along axis 0}}
  %w = "hir.allreduce"(%x, %y) {axis = 0 : i64, backend = "nccl", reduction = "sum", team = array<i64: 0, 1>} : (memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> !hir.work
  return
}

// -----

// reduce_scatter axes differ
func.func @f34(%x: memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %y: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) {
  // expected-error @+1 {{scatter_axis must differ from the reduced axis 0}}
  %w = "hir.reduce_scatter"(%x, %y) {axis = 0 : i64, backend = "nccl", reduction = "sum", scatter_axis = 0 : i64, team = array<i64: 0, 1>} : (memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> !hir.work
  return
}

// -----

// reduce_scatter output split
func.func @f35(%x: memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %y: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) {
  // expected-error @+1 {{output must be split along axis 1 (input axis 2 once axis 0 is reduced)}}
  %w = "hir.reduce_scatter"(%x, %y) {axis = 0 : i64, backend = "nccl", reduction = "sum", scatter_axis = 2 : i64, team = array<i64: 0, 1>} : (memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> !hir.work
  return
}

// -----

// broadcast root in team
func.func @f36(%x: memref<8x4xf32>, %y: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) {
  // expected-error @+1 {{root 2 is not in team [0, 1]}}
  %w = "hir.broadcast"(%x, %y) {backend = "nccl", root = 2 : i64, team = array<i64: 0, 1>} : (memref<8x4xf32>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  return
}

// -----

// broadcast input whole
func.func @f37(%x: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %y: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) {
  // expected-error @+1 {{input must not be split along axis 0}}
  %w = "hir.broadcast"(%x, %y) {backend = "nccl", root = 0 : i64, team = array<i64: 0, 1>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> !hir.work
  return
}

// -----

// scatter output split
func.func @f38(%x: memref<8x4xf32>, %y: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) {
  // expected-error @+1 {{output must be split along axis 1}}
  %w = "hir.scatter"(%x, %y) {axis = 1 : i64, backend = "nccl", root = 0 : i64, team = array<i64: 0, 1>} : (memref<8x4xf32>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> !hir.work
  return
}

// -----

// gather input split
func.func @f39(%x: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, %y: memref<8x4xf32>) {
  // expected-error @+1 {{input must be split along axis 0}}
  %w = "hir.gather"(%x, %y) {axis = 0 : i64, backend = "nccl", root = 0 : i64, team = array<i64: 0, 1>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<8x4xf32>) -> !hir.work
  return
}

// -----

// reduce output shape
func.func @f40(%x: memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %y: memref<8x2xf32>) {
  // expected-error @+1 {{output has shape [8, 2], expected [8, 4]}}
  %w = "hir.reduce"(%x, %y) {axis = 0 : i64, backend = "nccl", reduction = "sum", root = 0 : i64, team = array<i64: 0, 1>} : (memref<2x8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x2xf32>) -> !hir.work
  return
}

// -----

// send_recv pair
func.func @f41(%x: memref<8x4xf32>, %y: memref<8x4xf32>) {
  // expected-error @+1 {{team must be [sender, receiver], got [0, 1, 2]}}
  %w = "hir.send_recv"(%x, %y) {backend = "nccl", root = 0 : i64, team = array<i64: 0, 1, 2>} : (memref<8x4xf32>, memref<8x4xf32>) -> !hir.work
  return
}

// -----

// send_recv root sends
func.func @f42(%x: memref<8x4xf32>, %y: memref<8x4xf32>) {
  // expected-error @+1 {{root must be the sender (first team member 0)}}
  %w = "hir.send_recv"(%x, %y) {backend = "nccl", root = 1 : i64, team = array<i64: 0, 1>} : (memref<8x4xf32>, memref<8x4xf32>) -> !hir.work
  return
}

// -----

// send peer
func.func @f43(%x: memref<8x4xf32>) {
  // expected-error @+1 {{peer must be a non-negative device id}}
  %w = "hir.send"(%x) {backend = "nccl", peer = -1 : i64} : (memref<8x4xf32>) -> !hir.work
  return
}

// -----

// recv backend
func.func @f44(%x: memref<8x4xf32>) {
  // expected-error @+1 {{attribute 'backend' is "tcp"}}
  %w = "hir.recv"(%x) {backend = "tcp", peer = 0 : i64} : (memref<8x4xf32>) -> !hir.work
  return
}

// -----

// wait on a work token
func.func @f45(%s: !hir.stream) {
  // expected-error @+1 {{expected base type 'hir.work' but got 'hir.stream'}}
  "hir.wait"(%s) : (!hir.stream) -> ()
  return
}

// -----

// set shape
func.func @f46(%a: memref<4x8xf32>, %b: memref<8x4xf32>) {
  // expected-error @+1 {{output has shape [8, 4], expected [4, 8]}}
  "hir.set"(%a, %b) : (memref<4x8xf32>, memref<8x4xf32>) -> ()
  return
}

// -----

// set element type
func.func @f47(%a: memref<4xf32>, %b: memref<4xbf16>) {
  // expected-error @+1 {{element type mismatch: input is f32, output is bf16}}
  "hir.set"(%a, %b) : (memref<4xf32>, memref<4xbf16>) -> ()
  return
}

// -----

// set operands are memrefs
func.func @f48(%a: tensor<4xf32>, %b: memref<4xf32>) {
  // expected-error @+1 {{'hir.set' op input must be a ranked memref, got tensor<4xf32>}}
  "hir.set"(%a, %b) : (tensor<4xf32>, memref<4xf32>) -> ()
  return
}

// -----

// stream axis range
func.func @f49(%a: memref<4xf32>) {
  // expected-error @+1 {{stream_axis 1 is out of range for rank 1}}
  "hir.set"(%a, %a) {stream_axis = 1 : i64} : (memref<4xf32>, memref<4xf32>) -> ()
  return
}

// -----

// binary kind
func.func @f50(%a: memref<4xf32>) {
  // expected-error @+1 {{attribute 'kind' is "pow"; expected one of add, sub, mul, div, max, min}}
  "hir.binary"(%a, %a, %a) {kind = "pow"} : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  return
}

// -----

// binary broadcast
func.func @f51(%a: memref<4xf32>, %b: memref<3xf32>) {
  // expected-error @+1 {{operands: shapes [4] and [3] do not broadcast}}
  "hir.binary"(%a, %b, %a) {kind = "add"} : (memref<4xf32>, memref<3xf32>, memref<4xf32>) -> ()
  return
}

// -----

// binary output shape
func.func @f52(%a: memref<4xf32>, %b: memref<2x4xf32>) {
  // expected-error @+1 {{output has shape [4], expected [2, 4]}}
  "hir.binary"(%a, %b, %a) {kind = "add"} : (memref<4xf32>, memref<2x4xf32>, memref<4xf32>) -> ()
  return
}

// -----

// binary needs a kind
func.func @f53(%a: memref<4xf32>) {
  // expected-error @+1 {{'hir.binary' op requires string attribute 'kind' (one of add, sub, mul, div, max, min)}}
  "hir.binary"(%a, %a, %a) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  return
}

// -----

// reduction axes non-empty
func.func @f54(%a: memref<4x8xf32>) {
  // expected-error @+1 {{axes must not be empty}}
  "hir.reduction"(%a, %a) {axes = array<i64>, kind = "sum"} : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  return
}

// -----

// reduction axes unique
func.func @f55(%a: memref<4x8xf32>, %b: memref<4xf32>) {
  // expected-error @+1 {{axes [1, 1] has duplicates}}
  "hir.reduction"(%a, %b) {axes = array<i64: 1, 1>, kind = "sum"} : (memref<4x8xf32>, memref<4xf32>) -> ()
  return
}

// -----

// reduction axis range
func.func @f56(%a: memref<4x8xf32>, %b: memref<4xf32>) {
  // expected-error @+1 {{reduction axis 2 is out of range for rank 2}}
  "hir.reduction"(%a, %b) {axes = array<i64: 2>, kind = "sum"} : (memref<4x8xf32>, memref<4xf32>) -> ()
  return
}

// -----

// reduction output shape
func.func @f57(%a: memref<4x8xf32>, %b: memref<8xf32>) {
  // expected-error @+1 {{output has shape [8], expected [4]}}
  "hir.reduction"(%a, %b) {axes = array<i64: 1>, kind = "max"} : (memref<4x8xf32>, memref<8xf32>) -> ()
  return
}

// -----

// reduction kind
func.func @f58(%a: memref<4x8xf32>, %b: memref<4xf32>) {
  // expected-error @+1 {{attribute 'kind' is "mean"}}
  "hir.reduction"(%a, %b) {axes = array<i64: 1>, kind = "mean"} : (memref<4x8xf32>, memref<4xf32>) -> ()
  return
}

// -----

// matmul ranks
func.func @matmul_rank0(%a: memref<f32>, %b: memref<4x2xf32>, %c: memref<2xf32>) {
  // expected-error @+1 {{operands must have rank >= 1, got [] and [4, 2]}}
  "hir.matmul"(%a, %b, %c) : (memref<f32>, memref<4x2xf32>, memref<2xf32>) -> ()
  return
}

// -----

// matmul contraction
func.func @f60(%a: memref<3x4xf32>, %b: memref<5x2xf32>, %c: memref<3x2xf32>) {
  // expected-error @+1 {{contraction mismatch: a is [3, 4], b is [5, 2] (K 4 vs 5)}}
  "hir.matmul"(%a, %b, %c) : (memref<3x4xf32>, memref<5x2xf32>, memref<3x2xf32>) -> ()
  return
}

// -----

// matmul output
func.func @f61(%a: memref<3x4xf32>, %b: memref<4x2xf32>, %c: memref<3x4xf32>) {
  // expected-error @+1 {{output has shape [3, 4], expected [3, 2]}}
  "hir.matmul"(%a, %b, %c) : (memref<3x4xf32>, memref<4x2xf32>, memref<3x4xf32>) -> ()
  return
}

// -----

// matmul batch
func.func @f62(%a: memref<2x3x4xf32>, %b: memref<5x4x2xf32>, %c: memref<2x3x2xf32>) {
  // expected-error @+1 {{batch dimensions: shapes [2] and [5] do not broadcast}}
  "hir.matmul"(%a, %b, %c) : (memref<2x3x4xf32>, memref<5x4x2xf32>, memref<2x3x2xf32>) -> ()
  return
}

// -----

// linear weight rank
func.func @f63(%x: memref<3x4xf32>, %w: memref<2x2x4xf32>, %y: memref<3x2xf32>) {
  // expected-error @+1 {{input must have rank >= 1 and weight rank 1 or 2}}
  "hir.linear"(%x, %w, %y) {operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (memref<3x4xf32>, memref<2x2x4xf32>, memref<3x2xf32>) -> ()
  return
}

// -----

// linear features
func.func @f64(%x: memref<3x4xf32>, %w: memref<2x5xf32>, %y: memref<3x2xf32>) {
  // expected-error @+1 {{input features 4 do not match weight [2, 5] (expected [N, 4])}}
  "hir.linear"(%x, %w, %y) {operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (memref<3x4xf32>, memref<2x5xf32>, memref<3x2xf32>) -> ()
  return
}

// -----

// linear output
func.func @f65(%x: memref<3x4xf32>, %w: memref<2x4xf32>, %y: memref<3x4xf32>) {
  // expected-error @+1 {{output has shape [3, 4], expected [3, 2]}}
  "hir.linear"(%x, %w, %y) {operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (memref<3x4xf32>, memref<2x4xf32>, memref<3x4xf32>) -> ()
  return
}

// -----

// linear bias
func.func @f66(%x: memref<3x4xf32>, %w: memref<2x4xf32>, %y: memref<3x2xf32>, %b: memref<3xf32>) {
  // expected-error @+1 {{bias has shape [3], expected [2]}}
  "hir.linear"(%x, %w, %y, %b) {operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (memref<3x4xf32>, memref<2x4xf32>, memref<3x2xf32>, memref<3xf32>) -> ()
  return
}

// -----

// broadcast: the root must hold the input
func.func @root_sends(%x: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, %y: memref<8x4xf32, #hir.shard<array<i64: 2, 3>, -1 : i64>>) {
  // expected-error @+1 {{root 2 is not on the input mesh [0, 1]}}
  %w = "hir.broadcast"(%x, %y) {backend = "nccl", root = 2 : i64, team = array<i64: 2, 3>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 2, 3>, -1 : i64>>) -> !hir.work
  return
}

// -----

// gather: every input holder takes part
func.func @senders_in_team(%x: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %y: memref<8x4xf32, #hir.shard<array<i64: 2, 3>, -1 : i64>>) {
  // expected-error @+1 {{input mesh [0, 1] has devices outside team [0, 2]}}
  %w = "hir.gather"(%x, %y) {axis = 0 : i64, backend = "nccl", root = 2 : i64, team = array<i64: 0, 2>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 2, 3>, -1 : i64>>) -> !hir.work
  return
}

// -----

// gather: the root must hold the output
func.func @root_receives(%x: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %y: memref<8x4xf32, #hir.shard<array<i64: 2, 3>, -1 : i64>>) {
  // expected-error @+1 {{root 1 is not on the output mesh [2, 3]}}
  %w = "hir.gather"(%x, %y) {axis = 0 : i64, backend = "nccl", root = 1 : i64, team = array<i64: 0, 1>} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 2, 3>, -1 : i64>>) -> !hir.work
  return
}

// -----

// send_recv: the receiver must hold the output
func.func @receiver_on_mesh(%x: memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %y: memref<4x8xf32, #hir.shard<array<i64: 2, 3>, 0 : i64>>) {
  // expected-error @+1 {{receiver 1 is not on the output mesh [2, 3]}}
  %w = "hir.send_recv"(%x, %y) {backend = "nccl", root = 0 : i64, team = array<i64: 0, 1>} : (memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<4x8xf32, #hir.shard<array<i64: 2, 3>, 0 : i64>>) -> !hir.work
  return
}

// -----

// linear: the optional bias needs its segment sizes
func.func @linear_segments(%x: memref<3x4xf32>, %w: memref<2x4xf32>, %y: memref<3x2xf32>) {
  // expected-error @+1 {{requires operandSegmentSizes}}
  "hir.linear"(%x, %w, %y) : (memref<3x4xf32>, memref<2x4xf32>, memref<3x2xf32>) -> ()
  return
}

// -----

// device_index: the mesh holds distinct device ids
func.func @device_index_mesh() {
  // expected-error @+1 {{mesh [0, 0] must hold distinct non-negative device ids}}
  %me = "hir.device_index"() {mesh = array<i64: 0, 0>} : () -> index
  return
}

// -----

// shift: the team holds distinct device ids
func.func @shift_team(%a: memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %t: memref<2x8xf32>, %j: index) {
  // expected-error @+1 {{team [0, 1, 1] must hold distinct non-negative device ids}}
  %w = "hir.shift"(%a, %t, %j) {backend = "cuda", team = array<i64: 0, 1, 1>} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<2x8xf32>, index) -> !hir.work
  return
}

// -----

// shift: a known backend
func.func @shift_backend(%a: memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %t: memref<2x8xf32>, %j: index) {
  // expected-error @+1 {{backend}}
  %w = "hir.shift"(%a, %t, %j) {backend = "mpi", team = array<i64: 0, 1, 2, 3>} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<2x8xf32>, index) -> !hir.work
  return
}

// -----

// shift: input and output element types agree
func.func @shift_types(%a: memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %t: memref<2x8xf16>, %j: index) {
  // expected-error @+1 {{element type}}
  %w = "hir.shift"(%a, %t, %j) {backend = "cuda", team = array<i64: 0, 1, 2, 3>} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<2x8xf16>, index) -> !hir.work
  return
}

// -----

// shift: at least one copy
func.func @shift_copies(%a: memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %t: memref<2x8xf32>, %j: index) {
  // expected-error @+1 {{copies must be at least 1, got 0}}
  %w = "hir.shift"(%a, %t, %j) {backend = "cuda", copies = 0 : i64, team = array<i64: 0, 1, 2, 3>} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<2x8xf32>, index) -> !hir.work
  return
}

// -----

// shift: signal is pairwise or none
func.func @shift_signal(%a: memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, %t: memref<2x8xf32>, %j: index) {
  // expected-error @+1 {{signal}}
  %w = "hir.shift"(%a, %t, %j) {backend = "cuda", signal = "maybe", team = array<i64: 0, 1, 2, 3>} : (memref<4x2x8xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>, memref<2x8xf32>, index) -> !hir.work
  return
}

// -----

// barrier: the team holds distinct device ids
func.func @barrier_team() {
  // expected-error @+1 {{team [1, 1] must hold distinct non-negative device ids}}
  %b = "hir.barrier"() {backend = "cuda", team = array<i64: 1, 1>} : () -> !hir.work
  return
}

// -----

// barrier: a known backend
func.func @barrier_backend() {
  // expected-error @+1 {{backend}}
  %b = "hir.barrier"() {backend = "tcp", team = array<i64: 0, 1>} : () -> !hir.work
  return
}

// -----

// alias_chunk: the extent must divide into the chunks
func.func @alias_chunk_divides(%a: memref<6x8xf32>, %i: index) {
  // expected-error @+1 {{axis 0 of extent 6 does not divide into 4 chunks}}
  %v = "hir.alias_chunk"(%a, %i) {axis = 0 : i64, chunks = 4 : i64} : (memref<6x8xf32>, index) -> memref<1x8xf32, strided<[8, 1], offset: ?>>
  return
}

// -----

// alias_chunk: at least one chunk
func.func @alias_chunk_count(%a: memref<6x8xf32>, %i: index) {
  // expected-error @+1 {{chunks must be at least 1, got 0}}
  %v = "hir.alias_chunk"(%a, %i) {axis = 0 : i64, chunks = 0 : i64} : (memref<6x8xf32>, index) -> memref<6x8xf32, strided<[8, 1], offset: ?>>
  return
}

// -----

// alias_chunk: the result keeps the axis
func.func @alias_chunk_result(%a: memref<4x8xf32>, %i: index) {
  // expected-error @+1 {{does not match the chunk view type memref<2x8xf32, strided<[8, 1], offset: ?>>}}
  %v = "hir.alias_chunk"(%a, %i) {axis = 0 : i64, chunks = 2 : i64} : (memref<4x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
  return
}

// -----

// alias_chunk: not along a split axis
func.func @alias_chunk_sharded(%a: memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %i: index) {
  // expected-error @+1 {{axis 0 is split over the device mesh; chunk a non-sharded axis}}
  %v = "hir.alias_chunk"(%a, %i) {axis = 0 : i64, chunks = 2 : i64} : (memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, index) -> memref<2x8xf32, strided<[8, 1], offset: ?>, #hir.shard<array<i64: 0, 1>, 0 : i64>>
  return
}

// -----

// alias_chunk: axis in range
func.func @alias_chunk_axis(%a: memref<4x8xf32>, %i: index) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %v = "hir.alias_chunk"(%a, %i) {axis = 2 : i64, chunks = 2 : i64} : (memref<4x8xf32>, index) -> memref<4x8xf32>
  return
}
