module {
  func.func @main(%arg0: memref<64x16xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>> {hir.parameter}, %arg1: memref<64xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>> {hir.parameter}, %arg2: memref<16x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>> {hir.parameter}, %arg3: memref<16xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>> {hir.parameter}, %arg4: memref<8x16xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<8x16xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>> {
    %0 = "hir.alias_reshape"(%arg4) {reassociation = [[0, 1], [2]]} : (memref<8x16xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<2x4x16xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    %alloc = memref.alloc() : memref<2x4x16xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
    "hir.set"(%0, %alloc) {stream_axis = 0 : i64} : (memref<2x4x16xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<2x4x16xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
    %alloc_0 = memref.alloc() : memref<2x4x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>
    "hir.linear"(%alloc, %arg0, %alloc_0, %arg1) {operandSegmentSizes = array<i32: 1, 1, 1, 1>, stream_axis = 0 : i64} : (memref<2x4x16xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<64x16xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<2x4x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, memref<64xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    %1 = "hir.alias_reshape"(%alloc_0) {reassociation = [[0, 1], [2]]} : (memref<2x4x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) -> memref<8x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    %alloc_1 = memref.alloc() : memref<8x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    call @segment_0(%1, %alloc_1) : (memref<8x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<8x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %2 = "hir.alias_reshape"(%alloc_1) {reassociation = [[0, 1], [2]]} : (memref<8x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> memref<2x4x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>
    %3 = "hir.alias_stack_shards"(%2) {at = 1 : i64, axis = 2 : i64} : (memref<2x4x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) -> memref<2x2x4x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    %alloc_2 = memref.alloc() : memref<1x2x32x16xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    call @segment_1(%arg2, %alloc_2) : (memref<16x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<1x2x32x16xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %alloc_3 = memref.alloc() : memref<2x2x4x16xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    "hir.matmul"(%3, %alloc_2, %alloc_3) {stream_axis = 0 : i64} : (memref<2x2x4x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<1x2x32x16xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<2x2x4x16xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %alloc_4 = memref.alloc() : memref<2x4x16xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    "hir.reduction"(%alloc_3, %alloc_4) {axes = array<i64: 1>, kind = "sum", stream_axis = 0 : i64} : (memref<2x2x4x16xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<2x4x16xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    %4 = "hir.alias_reshape"(%alloc_4) {reassociation = [[0, 1], [2]]} : (memref<2x4x16xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<8x16xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    %alloc_5 = memref.alloc() : memref<8x16xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    "hir.binary"(%4, %arg3, %alloc_5) {kind = "add"} : (memref<8x16xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<16xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<8x16xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    return %alloc_5 : memref<8x16xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
  }
  func.func private @segment_0(%arg0: memref<8x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, %arg1: memref<8x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<8x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>> to tensor<8x64xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<8x64xf32> to !torch.vtensor<[8,32],f32>
    %str = torch.constant.str "tanh"
    %2 = torch.aten.gelu %1, %str : !torch.vtensor<[8,32],f32>, !torch.str -> !torch.vtensor<[8,32],f32>
    %3 = builtin.unrealized_conversion_cast %2 : !torch.vtensor<[8,32],f32> to tensor<8x64xf32>
    bufferization.materialize_in_destination %3 in restrict writable %arg1 : (tensor<8x64xf32>, memref<8x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    return
  }
  func.func private @segment_1(%arg0: memref<16x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, %arg1: memref<1x2x32x16xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<16x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>> to tensor<16x64xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<16x64xf32> to !torch.vtensor<[16,32],f32>
    %int0 = torch.constant.int 0
    %int1 = torch.constant.int 1
    %2 = torch.aten.transpose.int %1, %int0, %int1 : !torch.vtensor<[16,32],f32>, !torch.int, !torch.int -> !torch.vtensor<[32,16],f32>
    %int0_0 = torch.constant.int 0
    %3 = torch.aten.unsqueeze %2, %int0_0 : !torch.vtensor<[32,16],f32>, !torch.int -> !torch.vtensor<[1,32,16],f32>
    %int0_1 = torch.constant.int 0
    %4 = torch.aten.unsqueeze %3, %int0_1 : !torch.vtensor<[1,32,16],f32>, !torch.int -> !torch.vtensor<[1,1,32,16],f32>
    %5 = builtin.unrealized_conversion_cast %4 : !torch.vtensor<[1,1,32,16],f32> to tensor<1x2x32x16xf32>
    bufferization.materialize_in_destination %5 in restrict writable %arg1 : (tensor<1x2x32x16xf32>, memref<1x2x32x16xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    return
  }
}
