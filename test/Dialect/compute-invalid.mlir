// One case per verifier rule of the compute ops (compute group) (the
// #hir.shard rules are checked where the ops read their buffers); each must fail with its
// message at the op's location.
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

// matmul accumulate is a unit attribute
func.func @matmul_accumulate_bool(%a: memref<3x4xf32>, %b: memref<4x2xf32>, %c: memref<3x2xf32>) {
  // expected-error @+1 {{accumulate must be a unit attribute, got true}}
  "hir.matmul"(%a, %b, %c) {accumulate = true} : (memref<3x4xf32>, memref<4x2xf32>, memref<3x2xf32>) -> ()
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

// linear: the optional bias needs its segment sizes
func.func @linear_segments(%x: memref<3x4xf32>, %w: memref<2x4xf32>, %y: memref<3x2xf32>) {
  // expected-error @+1 {{requires operandSegmentSizes}}
  "hir.linear"(%x, %w, %y) : (memref<3x4xf32>, memref<2x4xf32>, memref<3x2xf32>) -> ()
  return
}

// -----

// multi-D shard: two mesh axes splitting one buffer axis cut it into the product of their extents
func.func @nested_split(%a: memref<6x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 0>>>, %o: memref<6x4xf32>) {
  // expected-error @+1 {{axis 0 of extent 6 does not split evenly over 4 devices}}
  "hir.set"(%a, %o) : (memref<6x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 0>>>, memref<6x4xf32>) -> ()
  return
}

// -----

// multi-D shard: one split per mesh axis
func.func @splits_per_axis(%a: memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0>>>, %o: memref<8x4xf32>) {
  // expected-error @+1 {{the 2x2 mesh needs 2 splits (one per mesh axis), got [0]}}
  "hir.set"(%a, %o) : (memref<8x4xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0>>>, memref<8x4xf32>) -> ()
  return
}

// -----

// multi-D shard: each split axis divides by its mesh axis extent
func.func @uneven(%a: memref<8x3xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, %o: memref<8x3xf32>) {
  // expected-error @+1 {{axis 1 of extent 3 does not split evenly over 2 devices}}
  "hir.set"(%a, %o) : (memref<8x3xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 0, 1>>>, memref<8x3xf32>) -> ()
  return
}

// -----

// a 1-D mesh is spelled as an array
func.func @one_d_dense(%a: memref<8x4xf32, #hir.shard<dense<[0, 1]> : tensor<2xi64>, array<i64: 0>>>, %o: memref<8x4xf32>) {
  // expected-error @+1 {{write a 1-D mesh as #hir.shard<array<i64: ...>, axis : i64>}}
  "hir.set"(%a, %o) : (memref<8x4xf32, #hir.shard<dense<[0, 1]> : tensor<2xi64>, array<i64: 0>>>, memref<8x4xf32>) -> ()
  return
}
