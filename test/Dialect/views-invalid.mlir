// One case per verifier rule of the view ops (views group); each must fail with its
// message at the op's location.
// RUN: hir-opt %s --split-input-file --verify-diagnostics

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

// -----

// hir.alias_broadcast
func.func @lower_rank(%a: memref<2x4xf32>) {
  // expected-error @+1 {{cannot broadcast rank 2 to the lower rank 1}}
  %b = "hir.alias_broadcast"(%a) : (memref<2x4xf32>) -> memref<4xf32, strided<[1], offset: ?>>
  return
}

// -----

func.func @not_unit(%a: memref<2x4xf32>) {
  // expected-error @+1 {{axis 0 of extent 2 cannot broadcast to 3 (only extent-1 axes broadcast)}}
  %b = "hir.alias_broadcast"(%a) : (memref<2x4xf32>) -> memref<3x4xf32, strided<[0, 1], offset: ?>>
  return
}

// -----

func.func @dynamic_broadcast(%a: memref<1x4xf32>) {
  // expected-error @+1 {{broadcast axis 0 must have a static extent}}
  %b = "hir.alias_broadcast"(%a) : (memref<1x4xf32>) -> memref<?x4xf32, strided<[0, 1], offset: ?>>
  return
}

// -----

func.func @wrong_strides(%a: memref<1x4xf32>) {
  // expected-error @+1 {{does not match the broadcast view type memref<3x4xf32, strided<[0, 1], offset: ?>>}}
  %b = "hir.alias_broadcast"(%a) : (memref<1x4xf32>) -> memref<3x4xf32, strided<[4, 1], offset: ?>>
  return
}

// -----

func.func @wrong_shard(%a: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) {
  // expected-error @+1 {{does not match the broadcast view type}}
  %b = "hir.alias_broadcast"(%a) : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<2x8x4xf32, strided<[0, 4, 1], offset: ?>, #hir.shard<array<i64: 0, 1>, 0 : i64>>
  return
}

// -----

// hir.alias_reshape
func.func @reshape_strided(%a: memref<4x4xf32, strided<[8, 1]>>) {
  // expected-error @+1 {{input must be contiguous (identity layout)}}
  %b = "hir.alias_reshape"(%a) {reassociation = [[0, 1]]} : (memref<4x4xf32, strided<[8, 1]>>) -> memref<16xf32>
  return
}

// -----

func.func @reshape_dynamic(%a: memref<?x4xf32>) {
  // expected-error @+1 {{input and result shapes must be static}}
  %b = "hir.alias_reshape"(%a) {reassociation = [[0, 1]]} : (memref<?x4xf32>) -> memref<?xf32>
  return
}

// -----

func.func @reshape_same_rank(%a: memref<4x4xf32>) {
  // expected-error @+1 {{input and result have one rank (2); a reshape expands or collapses axes}}
  %b = "hir.alias_reshape"(%a) {reassociation = [[0], [1]]} : (memref<4x4xf32>) -> memref<2x8xf32>
  return
}

// -----

func.func @reshape_groups(%a: memref<2x3x4xf32>) {
  // expected-error @+1 {{reassociation [[0], [2, 1]] must split axes 0..2 of the rank-3 side in order into 2 non-empty groups}}
  %b = "hir.alias_reshape"(%a) {reassociation = [[0], [2, 1]]} : (memref<2x3x4xf32>) -> memref<2x12xf32>
  return
}

// -----

func.func @reshape_extent(%a: memref<2x3x4xf32>) {
  // expected-error @+1 {{group [1, 2] has 12 elements, but axis 1 of the rank-2 side has extent 10}}
  %b = "hir.alias_reshape"(%a) {reassociation = [[0], [1, 2]]} : (memref<2x3x4xf32>) -> memref<2x10xf32>
  return
}

// -----

func.func @reshape_inner_split(%a: memref<2x4x8xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) {
  // expected-error @+1 {{split axis 1 is not the outermost axis of its group [0, 1]; the device split must lead its group}}
  %b = "hir.alias_reshape"(%a) {reassociation = [[0, 1], [2]]} : (memref<2x4x8xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> memref<8x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
  return
}

// -----

func.func @reshape_uneven(%a: memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) {
  // expected-error @+1 {{result: axis 0 of extent 2 does not split evenly over 4 devices}}
  %b = "hir.alias_reshape"(%a) {reassociation = [[0, 1], [2]]} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> memref<2x4x4xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
  return
}

// -----

func.func @reshape_wrong_split(%a: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) {
  // expected-error @+1 {{does not match the reshaped view type memref<2x4x4xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>}}
  %b = "hir.alias_reshape"(%a) {reassociation = [[0, 1], [2]]} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> memref<2x4x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
  return
}

// -----

// A split axis merged with an outer axis: a device's part of [2, 3, D, 4] split on 2 is no
// block of [2, 3 * D, 4].
func.func @reshape_merges_split(%x: memref<2x3x8x4xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) {
  // expected-error @+1 {{split axis 2 is not the outermost axis of its group [1, 2]; the device split must lead its group: split axis 2 (extent 8) of [2, 3, 8, 4] is merged with an outer axis in [2, 24, 4]}}
  %b = "hir.alias_reshape"(%x) {reassociation = [[0], [1, 2], [3]]} : (memref<2x3x8x4xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) -> memref<2x24x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
  return
}

// -----

// Expanding a split axis into unit axes and the split: the split goes to the non-unit axis.
func.func @reshape_split_on_unit_axis(%w: memref<4x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) {
  // expected-error @+1 {{does not match the reshaped view type memref<1x4x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>}}
  %b = "hir.alias_reshape"(%w) {reassociation = [[0, 1], [2]]} : (memref<4x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>) -> memref<1x4x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 0 : i64>>
  return
}

// -----

// hir.alias_stack_shards
func.func @stack_not_split(%a: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) {
  // expected-error @+1 {{axis 1 is not split over the device mesh; alias_stack_shards stacks the shards of a split axis}}
  %b = "hir.alias_stack_shards"(%a) {axis = 1 : i64, at = 0 : i64} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<2x8x2xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
  return
}

// -----

func.func @stack_unplaced(%a: memref<8x4xf32>) {
  // expected-error @+1 {{axis 0 is not split over the device mesh}}
  %b = "hir.alias_stack_shards"(%a) {axis = 0 : i64, at = 0 : i64} : (memref<8x4xf32>) -> memref<1x8x4xf32>
  return
}

// -----

func.func @stack_axis_range(%a: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %b = "hir.alias_stack_shards"(%a) {axis = 2 : i64, at = 0 : i64} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<2x4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
  return
}

// -----

func.func @stack_at_range(%a: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) {
  // expected-error @+1 {{at 3 is out of range for rank 2 (the new axis goes at 0..2)}}
  %b = "hir.alias_stack_shards"(%a) {axis = 0 : i64, at = 3 : i64} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<4x4x2xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>
  return
}

// -----

func.func @stack_at_negative(%a: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) {
  // expected-error @+1 {{at -1 is out of range for rank 2}}
  %b = "hir.alias_stack_shards"(%a) {axis = 0 : i64, at = -1 : i64} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<2x4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
  return
}

// -----

// Uneven parts: a device's part would not be a shard of one extent.
func.func @stack_uneven(%a: memref<7x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, offsets = array<i64: 0, 3, 7>}>>) {
  // expected-error @+1 {{operand #0 is split unevenly}}
  %b = "hir.alias_stack_shards"(%a) {axis = 0 : i64, at = 0 : i64} : (memref<7x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, offsets = array<i64: 0, 3, 7>}>>) -> memref<2x3x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
  return
}

// -----

func.func @stack_indivisible(%a: memref<7x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) {
  // expected-error @+1 {{input: axis 0 of extent 7 does not split evenly over 2 devices}}
  %b = "hir.alias_stack_shards"(%a) {axis = 0 : i64, at = 0 : i64} : (memref<7x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<2x3x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
  return
}

// -----

// Packed pieces (a fused QKV weight): a device's part is no one block of the axis.
func.func @stack_packed(%a: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, packed = array<i64: 2>}>>) {
  // expected-error @+1 {{axis 0 is split unevenly or packed ([0, 1] with splits [0], axis 0 packed of 2 pieces); alias_stack_shards needs equal shards of one block each}}
  %b = "hir.alias_stack_shards"(%a) {axis = 0 : i64, at = 0 : i64} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, {axis = 0 : i64, packed = array<i64: 2>}>>) -> memref<2x4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
  return
}

// -----

// Two mesh axes split axis 1: which one's shards would stack?
func.func @stack_two_mesh_axes(%a: memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 1>>>) {
  // expected-error @+1 {{axis 1 is split over mesh axes [0, 1]; alias_stack_shards stacks the shards of one mesh axis}}
  %b = "hir.alias_stack_shards"(%a) {axis = 1 : i64, at = 0 : i64} : (memref<4x8xf32, #hir.shard<dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, array<i64: 1, 1>>>) -> memref<2x4x4xf32>
  return
}

// -----

func.func @stack_strided(%a: memref<8x4xf32, strided<[8, 1]>, #hir.shard<array<i64: 0, 1>, 0 : i64>>) {
  // expected-error @+1 {{input must be contiguous (identity layout)}}
  %b = "hir.alias_stack_shards"(%a) {axis = 0 : i64, at = 0 : i64} : (memref<8x4xf32, strided<[8, 1]>, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<2x4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
  return
}

// -----

func.func @stack_dynamic(%a: memref<?x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) {
  // expected-error @+1 {{input shape must be static}}
  %b = "hir.alias_stack_shards"(%a) {axis = 0 : i64, at = 0 : i64} : (memref<?x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<2x?x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
  return
}

// -----

// The new axis is the split one; axis 0 keeps one shard's extent, unsplit.
func.func @stack_wrong_result(%a: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) {
  // expected-error @+1 {{result type memref<2x4x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>> does not match the stacked shards view type memref<2x4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>}}
  %b = "hir.alias_stack_shards"(%a) {axis = 0 : i64, at = 0 : i64} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<2x4x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
  return
}

// -----

func.func @stack_missing_attr(%a: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) {
  // expected-error @+1 {{requires integer attribute 'at'}}
  %b = "hir.alias_stack_shards"(%a) {axis = 0 : i64} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<2x4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
  return
}
