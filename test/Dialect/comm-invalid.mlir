// One case per verifier rule of the communication ops (comm group) (the
// #hir.shard rules are checked where the ops read their buffers); each must fail with its
// message at the op's location.
// RUN: hir-opt %s --split-input-file --verify-diagnostics

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

// multi-D mesh: the teams must be the lines of the mesh along some mesh axes
func.func @teams_not_lines(%x: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, %y: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>) {
  // expected-error @+1 {{teams [[0, 3], [1, 2]] must be the lines of the mesh [0, 1, 2, 3] with splits [0, 1] along some mesh axes, each in mesh order}}
  %w = "hir.allgather"(%x, %y) {axis = 1 : i64, backend = "gloo", team = dense<[[0, 3], [1, 2]]> : tensor<2x2xi64>} : (memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>) -> !hir.work
  return
}

// -----

// multi-D mesh: a collective along one mesh axis keeps the other mesh axes' splits
func.func @other_axis_changes(%x: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, %y: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) {
  // expected-error @+1 {{mesh axis 0 splits input axis 0 and output axis -1; a collective along mesh axis 1 keeps the other mesh axes' splits}}
  %w = "hir.allgather"(%x, %y) {axis = 1 : i64, backend = "gloo", team = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) -> !hir.work
  return
}

// -----

// multi-D mesh: a team along several mesh axes needs them all to split one buffer axis
func.func @plane_mixed_splits(%x: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, %y: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) {
  // expected-error @+1 {{a collective along mesh axes [0, 1] sees each line's block as a 1-D placement: mesh axes [0, 1] split buffer axes [0, 1]; a team along several mesh axes needs them all to split one buffer axis or none}}
  %w = "hir.allgather"(%x, %y) {axis = 1 : i64, backend = "gloo", team = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>} : (memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) -> !hir.work
  return
}

// -----

// multi-D mesh: buffer axis 0 split by mesh axes 0 and 1 (row-major): the lines along mesh
// axis 0 hold no contiguous block of it
func.func @lines_not_contiguous(%x: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 0>>>, %y: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 0>>>) {
  // expected-error @+1 {{a collective along mesh axis 0 sees each line's block as a 1-D placement: buffer axis 0 is also split by mesh axis 1, minor to mesh axes [0]: a line along them holds no contiguous block}}
  %w = "hir.allgather"(%x, %y) {axis = 0 : i64, backend = "gloo", team = dense<[[0, 2], [1, 3]]> : tensor<2x2xi64>} : (memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 0>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, 0>>>) -> !hir.work
  return
}

// -----

// multi-D mesh: the rules of the kind hold on each line (allgather: the input split along axis)
func.func @line_rule(%x: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>, %y: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>) {
  // expected-error @+1 {{input must be split along axis 1 over the team}}
  %w = "hir.allgather"(%x, %y) {axis = 1 : i64, backend = "gloo", team = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, -1>>>) -> !hir.work
  return
}

// -----

// a rooted collective other than broadcast takes one team
func.func @rooted_multi_team(%x: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>, %y: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) {
  // expected-error @+1 {{a rooted collective other than hir.broadcast takes one team (array<i64: ...>), not a team per row}}
  %w = "hir.scatter"(%x, %y) {axis = 0 : i64, backend = "gloo", root = 0 : i64, team = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) -> !hir.work
  return
}

// -----

// broadcast with one team per row: one root per team, given as an array
func.func @broadcast_layout_root_kind(%x: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>, %y: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) {
  // expected-error @+1 {{with one team per row, root must be array<i64: ...> (one root device per team), got 0 : i64}}
  %w = "hir.broadcast"(%x, %y) {backend = "gloo", root = 0 : i64, team = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) -> !hir.work
  return
}

// -----

// broadcast with one team per row: as many roots as teams
func.func @broadcast_layout_root_count(%x: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>, %y: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) {
  // expected-error @+1 {{root [0] names 1 devices for 2 teams (one root per team)}}
  %w = "hir.broadcast"(%x, %y) {backend = "gloo", root = array<i64: 0>, team = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) -> !hir.work
  return
}

// -----

// broadcast with one team per row: each root is a device of its team
func.func @broadcast_layout_root_team(%x: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>, %y: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) {
  // expected-error @+1 {{root 1 is not in team [2, 3]}}
  %w = "hir.broadcast"(%x, %y) {backend = "gloo", root = array<i64: 0, 1>, team = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>} : (memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>, memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: -1, -1>>>) -> !hir.work
  return
}
