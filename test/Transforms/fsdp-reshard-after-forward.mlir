// RUN: hir-opt %s --pass-pipeline='builtin.module(hir-convert-to-communication{backend=gloo},hir-insert-deallocations)' | FileCheck %s
// A fully sharded training step as hir.train_step(..., mesh=[0, 1], data_parallel="fully_shard")
// imports it (reshard_after_forward=True, the default; the body is the import's, unedited) of
// Sequential(Linear(4, 8, bias=False), ReLU(), Linear(8, 4, bias=False)) with SGD:
// fc2's weight is gathered before the forward, it and its transpose are freed after the
// forward's last reader, and the backward gathers the shard again before it reads the
// weight (fc1's weight: only the forward reads it, the first layer's input needs no gradient).

// CHECK-LABEL: func.func @main(
// CHECK:       %[[W1:.*]] = "hir.allgather"(%arg1, %[[FWD:.*]]) {{.*}} -> !hir.work
// CHECK:       call @segment_1(%{{.*}}, %[[FWD]], %{{.*}}, %[[T:.*]]) :
// CHECK:       memref.dealloc %[[FWD]]
// CHECK:       "hir.matmul"(%{{.*}}, %[[T]], %{{.*}})
// CHECK-NEXT:  memref.dealloc %[[T]]
// the loss, then the backward
// CHECK:       %[[W2:.*]] = "hir.allgather"(%arg1, %[[BWD:.*]]) {{.*}} -> !hir.work
// CHECK-NEXT:  "hir.wait"(%[[W2]])
// CHECK:       call @segment_6(%[[BWD]],
// CHECK:       "hir.reduce_scatter"
// CHECK-NOT:   "hir.allgather"
// CHECK:       return
module {
  func.func @main(%arg0: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %arg1: memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %arg2: memref<f64, #hir.shard<array<i64: 0, 1>, -1 : i64>> {hir.parameter}, %arg3: memref<f64, #hir.shard<array<i64: 0, 1>, -1 : i64>> {hir.parameter}, %arg4: memref<f64, #hir.shard<array<i64: 0, 1>, -1 : i64>> {hir.parameter}, %arg5: memref<f64, #hir.shard<array<i64: 0, 1>, -1 : i64>> {hir.parameter}, %arg6: memref<f64, #hir.shard<array<i64: 0, 1>, -1 : i64>> {hir.parameter}, %arg7: memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<f32, #hir.shard<array<i64: 0, 1>, -1 : i64>> {
    %alloc = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
    "hir.set"(%arg0, %alloc) : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
    %alloc_0 = memref.alloc() : memref<4x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
    "hir.set"(%arg1, %alloc_0) : (memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<4x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
    %alloc_1 = memref.alloc() : memref<4x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
    call @segment_0(%alloc, %alloc_1) : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<4x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
    %alloc_2 = memref.alloc() : memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    "hir.matmul"(%arg7, %alloc_1, %alloc_2) : (memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<4x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    %alloc_3 = memref.alloc() : memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    %alloc_4 = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
    call @segment_1(%alloc_2, %alloc_0, %alloc_3, %alloc_4) : (memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<4x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
    %alloc_5 = memref.alloc() : memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    "hir.matmul"(%alloc_3, %alloc_4, %alloc_5) : (memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    %alloc_6 = memref.alloc() : memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    call @segment_2(%alloc_5, %alloc_6) : (memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    %alloc_7 = memref.alloc() : memref<2xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    call @segment_3(%alloc_6, %alloc_7) : (memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<2xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    %alloc_8 = memref.alloc() : memref<f32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
    "hir.reduction"(%alloc_7, %alloc_8) {axes = array<i64: 0>, kind = "sum"} : (memref<2xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<f32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
    %alloc_9 = memref.alloc() : memref<4x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
    %alloc_10 = memref.alloc() : memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    call @segment_4(%alloc_8, %alloc_5, %alloc_9, %alloc_10) : (memref<f32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<4x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    %alloc_11 = memref.alloc() : memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    call @segment_5(%alloc_9, %alloc_11) : (memref<4x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    %alloc_12 = memref.alloc() : memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    "hir.binary"(%alloc_11, %alloc_10, %alloc_12) {kind = "mul"} : (memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    %alloc_13 = memref.alloc() : memref<4x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
    "hir.set"(%arg1, %alloc_13) : (memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<4x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
    %alloc_14 = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
    %alloc_15 = memref.alloc() : memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    %alloc_16 = memref.alloc() : memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    call @segment_6(%alloc_13, %alloc_3, %alloc_12, %alloc_14, %alloc_15, %alloc_16) : (memref<4x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %0 = "hir.alias_reshape"(%alloc_16) {reassociation = [[0, 1], [2]]} : (memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> memref<2x2x4xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>
    %1 = "hir.alias_stack_shards"(%0) {at = 1 : i64, axis = 2 : i64} : (memref<2x2x4xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) -> memref<2x2x2x2xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    %2 = "hir.alias_stack_shards"(%alloc_15) {at = 0 : i64, axis = 0 : i64} : (memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<2x2x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    %3 = "hir.alias_reshape"(%2) {reassociation = [[0, 1], [2], [3]]} : (memref<2x2x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<1x2x2x8xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    %alloc_17 = memref.alloc() : memref<2x2x2x8xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    "hir.matmul"(%1, %3, %alloc_17) {stream_axis = 0 : i64} : (memref<2x2x2x2xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<1x2x2x8xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<2x2x2x8xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %alloc_18 = memref.alloc() : memref<2x2x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    "hir.reduction"(%alloc_17, %alloc_18) {axes = array<i64: 1>, kind = "sum", stream_axis = 0 : i64} : (memref<2x2x2x8xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<2x2x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    %4 = "hir.alias_reshape"(%alloc_18) {reassociation = [[0, 1], [2]]} : (memref<2x2x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    %alloc_19 = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    %alloc_20 = memref.alloc() : memref<4x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
    call @segment_7(%4, %alloc_14, %alloc_19, %alloc_20) : (memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<4x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
    %alloc_21 = memref.alloc() : memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    "hir.matmul"(%alloc_12, %alloc_20, %alloc_21) : (memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<4x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    %alloc_22 = memref.alloc() : memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    %alloc_23 = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    call @segment_8(%alloc_19, %alloc_3, %alloc_21, %alloc_22, %alloc_23) : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %5 = "hir.alias_reshape"(%alloc_23) {reassociation = [[0, 1], [2]]} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> memref<2x4x4xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>
    %6 = "hir.alias_stack_shards"(%5) {at = 1 : i64, axis = 2 : i64} : (memref<2x4x4xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) -> memref<2x2x4x2xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    %7 = "hir.alias_stack_shards"(%arg7) {at = 0 : i64, axis = 0 : i64} : (memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<2x2x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    %8 = "hir.alias_reshape"(%7) {reassociation = [[0, 1], [2], [3]]} : (memref<2x2x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<1x2x2x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    %alloc_24 = memref.alloc() : memref<2x2x4x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    "hir.matmul"(%6, %8, %alloc_24) {stream_axis = 0 : i64} : (memref<2x2x4x2xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<1x2x2x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<2x2x4x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %alloc_25 = memref.alloc() : memref<2x4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    "hir.reduction"(%alloc_24, %alloc_25) {axes = array<i64: 1>, kind = "sum", stream_axis = 0 : i64} : (memref<2x2x4x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<2x4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    %9 = "hir.alias_reshape"(%alloc_25) {reassociation = [[0, 1], [2]]} : (memref<2x4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    %alloc_26 = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    %alloc_27 = memref.alloc() : memref<f32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
    call @segment_9(%9, %alloc_8, %alloc_26, %alloc_27) : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<f32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<f32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
    %alloc_28 = memref.alloc() : memref<f32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
    call @segment_10(%arg2, %alloc_28) : (memref<f64, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<f32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
    %alloc_29 = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    "hir.binary"(%alloc_26, %alloc_28, %alloc_29) {kind = "mul"} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<f32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    %alloc_30 = memref.alloc() : memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    "hir.binary"(%arg0, %alloc_29, %alloc_30) {kind = "add"} : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    %alloc_31 = memref.alloc() : memref<f32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
    call @segment_11(%arg2, %alloc_31) : (memref<f64, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<f32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
    %alloc_32 = memref.alloc() : memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    "hir.binary"(%alloc_22, %alloc_31, %alloc_32) {kind = "mul"} : (memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<f32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    %alloc_33 = memref.alloc() : memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    "hir.binary"(%arg1, %alloc_32, %alloc_33) {kind = "add"} : (memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    "hir.set"(%alloc_30, %arg0) : (memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    "hir.set"(%alloc_33, %arg1) : (memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    return %alloc_27 : memref<f32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
  }
  func.func private @segment_0(%arg0: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, %arg1: memref<4x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>> to tensor<8x4xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<8x4xf32> to !torch.vtensor<[8,4],f32>
    %2 = torch.aten.t %1 : !torch.vtensor<[8,4],f32> -> !torch.vtensor<[4,8],f32>
    %3 = builtin.unrealized_conversion_cast %2 : !torch.vtensor<[4,8],f32> to tensor<4x8xf32>
    bufferization.materialize_in_destination %3 in restrict writable %arg1 : (tensor<4x8xf32>, memref<4x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
    return
  }
  func.func private @segment_1(%arg0: memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %arg1: memref<4x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, %arg2: memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %arg3: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>> to tensor<4x8xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<4x8xf32> to !torch.vtensor<[2,8],f32>
    %2 = bufferization.to_tensor %arg1 restrict : memref<4x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>> to tensor<4x8xf32>
    %3 = builtin.unrealized_conversion_cast %2 : tensor<4x8xf32> to !torch.vtensor<[4,8],f32>
    %4 = torch.aten.relu %1 : !torch.vtensor<[2,8],f32> -> !torch.vtensor<[2,8],f32>
    %5 = torch.aten.t %3 : !torch.vtensor<[4,8],f32> -> !torch.vtensor<[8,4],f32>
    %6 = builtin.unrealized_conversion_cast %4 : !torch.vtensor<[2,8],f32> to tensor<4x8xf32>
    bufferization.materialize_in_destination %6 in restrict writable %arg2 : (tensor<4x8xf32>, memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    %7 = builtin.unrealized_conversion_cast %5 : !torch.vtensor<[8,4],f32> to tensor<8x4xf32>
    bufferization.materialize_in_destination %7 in restrict writable %arg3 : (tensor<8x4xf32>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
    return
  }
  func.func private @segment_2(%arg0: memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %arg1: memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>> to tensor<4x4xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<4x4xf32> to !torch.vtensor<[2,4],f32>
    %int2 = torch.constant.int 2
    %2 = torch.aten.pow.Tensor_Scalar %1, %int2 : !torch.vtensor<[2,4],f32>, !torch.int -> !torch.vtensor<[2,4],f32>
    %3 = builtin.unrealized_conversion_cast %2 : !torch.vtensor<[2,4],f32> to tensor<4x4xf32>
    bufferization.materialize_in_destination %3 in restrict writable %arg1 : (tensor<4x4xf32>, memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    return
  }
  func.func private @segment_3(%arg0: memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %arg1: memref<2xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>> to tensor<4x4xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<4x4xf32> to !torch.vtensor<[2,4],f32>
    %none = torch.constant.none
    %2 = "hir.device_index"() {mesh = array<i64: 0, 1>} : () -> index
    %c2 = arith.constant 2 : index
    %3 = arith.muli %2, %c2 : index
    %4 = builtin.unrealized_conversion_cast %3 : index to !torch.int
    %5 = torch.aten.sum %1, %none : !torch.vtensor<[2,4],f32>, !torch.none -> !torch.vtensor<[],f32>
    %int0 = torch.constant.int 0
    %6 = torch.aten.unsqueeze %5, %int0 : !torch.vtensor<[],f32>, !torch.int -> !torch.vtensor<[1],f32>
    %7 = builtin.unrealized_conversion_cast %6 : !torch.vtensor<[1],f32> to tensor<2xf32>
    bufferization.materialize_in_destination %7 in restrict writable %arg1 : (tensor<2xf32>, memref<2xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    return
  }
  func.func private @segment_4(%arg0: memref<f32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, %arg1: memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %arg2: memref<4x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, %arg3: memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<f32, #hir.shard<array<i64: 0, 1>, -1 : i64>> to tensor<f32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<f32> to !torch.vtensor<[],f32>
    %2 = bufferization.to_tensor %arg1 restrict : memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>> to tensor<4x4xf32>
    %3 = builtin.unrealized_conversion_cast %2 : tensor<4x4xf32> to !torch.vtensor<[2,4],f32>
    %none = torch.constant.none
    %none_0 = torch.constant.none
    %none_1 = torch.constant.none
    %false = torch.constant.bool false
    %int1 = torch.constant.int 1
    %4 = torch.aten.ones_like %1, %none, %none_0, %none_1, %false, %int1 : !torch.vtensor<[],f32>, !torch.none, !torch.none, !torch.none, !torch.bool, !torch.int -> !torch.vtensor<[],f32>
    %int4 = torch.constant.int 4
    %int4_2 = torch.constant.int 4
    %5 = torch.prim.ListConstruct %int4, %int4_2 : (!torch.int, !torch.int) -> !torch.list<int>
    %false_3 = torch.constant.bool false
    %6 = torch.aten.expand %4, %5, %false_3 : !torch.vtensor<[],f32>, !torch.list<int>, !torch.bool -> !torch.vtensor<[4,4],f32>
    %7 = torch.aten.detach %3 : !torch.vtensor<[2,4],f32> -> !torch.vtensor<[2,4],f32>
    %float1.000000e00 = torch.constant.float 1.000000e+00
    %8 = torch.aten.pow.Tensor_Scalar %7, %float1.000000e00 : !torch.vtensor<[2,4],f32>, !torch.float -> !torch.vtensor<[2,4],f32>
    %float2.000000e00 = torch.constant.float 2.000000e+00
    %9 = torch.aten.mul.Scalar %8, %float2.000000e00 : !torch.vtensor<[2,4],f32>, !torch.float -> !torch.vtensor<[2,4],f32>
    %10 = builtin.unrealized_conversion_cast %6 : !torch.vtensor<[4,4],f32> to tensor<4x4xf32>
    bufferization.materialize_in_destination %10 in restrict writable %arg2 : (tensor<4x4xf32>, memref<4x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
    %11 = builtin.unrealized_conversion_cast %9 : !torch.vtensor<[2,4],f32> to tensor<4x4xf32>
    bufferization.materialize_in_destination %11 in restrict writable %arg3 : (tensor<4x4xf32>, memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    return
  }
  func.func private @segment_5(%arg0: memref<4x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, %arg1: memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<4x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>> to tensor<4x4xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<4x4xf32> to !torch.vtensor<[4,4],f32>
    %int2 = torch.constant.int 2
    %2 = "hir.device_index"() {mesh = array<i64: 0, 1>} : () -> index
    %3 = builtin.unrealized_conversion_cast %2 : index to !torch.int
    %4 = torch.aten.mul.int %3, %int2 : !torch.int, !torch.int -> !torch.int
    %int0 = torch.constant.int 0
    %5 = torch.aten.narrow %1, %int0, %4, %int2 : !torch.vtensor<[4,4],f32>, !torch.int, !torch.int, !torch.int -> !torch.vtensor<[2,4],f32>
    %6 = builtin.unrealized_conversion_cast %5 : !torch.vtensor<[2,4],f32> to tensor<4x4xf32>
    bufferization.materialize_in_destination %6 in restrict writable %arg1 : (tensor<4x4xf32>, memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    return
  }
  func.func private @segment_6(%arg0: memref<4x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, %arg1: memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %arg2: memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %arg3: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, %arg4: memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %arg5: memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<4x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>> to tensor<4x8xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<4x8xf32> to !torch.vtensor<[4,8],f32>
    %2 = bufferization.to_tensor %arg1 restrict : memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>> to tensor<4x8xf32>
    %3 = builtin.unrealized_conversion_cast %2 : tensor<4x8xf32> to !torch.vtensor<[2,8],f32>
    %4 = bufferization.to_tensor %arg2 restrict : memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>> to tensor<4x4xf32>
    %5 = builtin.unrealized_conversion_cast %4 : tensor<4x4xf32> to !torch.vtensor<[2,4],f32>
    %6 = torch.aten.t %1 : !torch.vtensor<[4,8],f32> -> !torch.vtensor<[8,4],f32>
    %7 = torch.aten.detach %6 : !torch.vtensor<[8,4],f32> -> !torch.vtensor<[8,4],f32>
    %8 = torch.aten.detach %3 : !torch.vtensor<[2,8],f32> -> !torch.vtensor<[2,8],f32>
    %9 = torch.aten.t %5 : !torch.vtensor<[2,4],f32> -> !torch.vtensor<[4,2],f32>
    %10 = builtin.unrealized_conversion_cast %7 : !torch.vtensor<[8,4],f32> to tensor<8x4xf32>
    bufferization.materialize_in_destination %10 in restrict writable %arg3 : (tensor<8x4xf32>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
    %11 = builtin.unrealized_conversion_cast %8 : !torch.vtensor<[2,8],f32> to tensor<4x8xf32>
    bufferization.materialize_in_destination %11 in restrict writable %arg4 : (tensor<4x8xf32>, memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    %12 = builtin.unrealized_conversion_cast %9 : !torch.vtensor<[4,2],f32> to tensor<4x4xf32>
    bufferization.materialize_in_destination %12 in restrict writable %arg5 : (tensor<4x4xf32>, memref<4x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    return
  }
  func.func private @segment_7(%arg0: memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %arg1: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, %arg2: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, %arg3: memref<4x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>> to tensor<4x8xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<4x8xf32> to !torch.vtensor<[2,8],f32>
    %2 = bufferization.to_tensor %arg1 restrict : memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>> to tensor<8x4xf32>
    %3 = builtin.unrealized_conversion_cast %2 : tensor<8x4xf32> to !torch.vtensor<[8,4],f32>
    %4 = torch.aten.t %1 : !torch.vtensor<[2,8],f32> -> !torch.vtensor<[8,2],f32>
    %5 = torch.aten.t %3 : !torch.vtensor<[8,4],f32> -> !torch.vtensor<[4,8],f32>
    %6 = builtin.unrealized_conversion_cast %4 : !torch.vtensor<[8,2],f32> to tensor<8x4xf32>
    bufferization.materialize_in_destination %6 in restrict writable %arg2 : (tensor<8x4xf32>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %7 = builtin.unrealized_conversion_cast %5 : !torch.vtensor<[4,8],f32> to tensor<4x8xf32>
    bufferization.materialize_in_destination %7 in restrict writable %arg3 : (tensor<4x8xf32>, memref<4x8xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
    return
  }
  func.func private @segment_8(%arg0: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, %arg1: memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %arg2: memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %arg3: memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %arg4: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>> to tensor<8x4xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<8x4xf32> to !torch.vtensor<[8,2],f32>
    %2 = bufferization.to_tensor %arg1 restrict : memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>> to tensor<4x8xf32>
    %3 = builtin.unrealized_conversion_cast %2 : tensor<4x8xf32> to !torch.vtensor<[2,8],f32>
    %4 = bufferization.to_tensor %arg2 restrict : memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>> to tensor<4x8xf32>
    %5 = builtin.unrealized_conversion_cast %4 : tensor<4x8xf32> to !torch.vtensor<[2,8],f32>
    %6 = torch.aten.t %1 : !torch.vtensor<[8,2],f32> -> !torch.vtensor<[2,8],f32>
    %7 = torch.aten.detach %3 : !torch.vtensor<[2,8],f32> -> !torch.vtensor<[2,8],f32>
    %int0 = torch.constant.int 0
    %8 = torch.aten.threshold_backward %5, %7, %int0 : !torch.vtensor<[2,8],f32>, !torch.vtensor<[2,8],f32>, !torch.int -> !torch.vtensor<[2,8],f32>
    %9 = torch.aten.t %8 : !torch.vtensor<[2,8],f32> -> !torch.vtensor<[8,2],f32>
    %10 = builtin.unrealized_conversion_cast %6 : !torch.vtensor<[2,8],f32> to tensor<4x8xf32>
    bufferization.materialize_in_destination %10 in restrict writable %arg3 : (tensor<4x8xf32>, memref<4x8xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    %11 = builtin.unrealized_conversion_cast %9 : !torch.vtensor<[8,2],f32> to tensor<8x4xf32>
    bufferization.materialize_in_destination %11 in restrict writable %arg4 : (tensor<8x4xf32>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    return
  }
  func.func private @segment_9(%arg0: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %arg1: memref<f32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, %arg2: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %arg3: memref<f32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>> to tensor<8x4xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<8x4xf32> to !torch.vtensor<[4,4],f32>
    %2 = bufferization.to_tensor %arg1 restrict : memref<f32, #hir.shard<array<i64: 0, 1>, -1 : i64>> to tensor<f32>
    %3 = builtin.unrealized_conversion_cast %2 : tensor<f32> to !torch.vtensor<[],f32>
    %4 = torch.aten.t %1 : !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
    %5 = torch.aten.t %4 : !torch.vtensor<[4,4],f32> -> !torch.vtensor<[4,4],f32>
    %6 = torch.aten.detach %3 : !torch.vtensor<[],f32> -> !torch.vtensor<[],f32>
    %7 = builtin.unrealized_conversion_cast %5 : !torch.vtensor<[4,4],f32> to tensor<8x4xf32>
    bufferization.materialize_in_destination %7 in restrict writable %arg2 : (tensor<8x4xf32>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    %8 = builtin.unrealized_conversion_cast %6 : !torch.vtensor<[],f32> to tensor<f32>
    bufferization.materialize_in_destination %8 in restrict writable %arg3 : (tensor<f32>, memref<f32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
    return
  }
  func.func private @segment_10(%arg0: memref<f64, #hir.shard<array<i64: 0, 1>, -1 : i64>>, %arg1: memref<f32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<f64, #hir.shard<array<i64: 0, 1>, -1 : i64>> to tensor<f64>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<f64> to !torch.vtensor<[],f64>
    %2 = torch.aten.neg %1 : !torch.vtensor<[],f64> -> !torch.vtensor<[],f64>
    %int6 = torch.constant.int 6
    %none = torch.constant.none
    %none_0 = torch.constant.none
    %none_1 = torch.constant.none
    %false = torch.constant.bool false
    %none_2 = torch.constant.none
    %3 = torch.aten._to_copy %2, %int6, %none, %none_0, %none_1, %false, %none_2 : !torch.vtensor<[],f64>, !torch.int, !torch.none, !torch.none, !torch.none, !torch.bool, !torch.none -> !torch.vtensor<[],f32>
    %4 = builtin.unrealized_conversion_cast %3 : !torch.vtensor<[],f32> to tensor<f32>
    bufferization.materialize_in_destination %4 in restrict writable %arg1 : (tensor<f32>, memref<f32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
    return
  }
  func.func private @segment_11(%arg0: memref<f64, #hir.shard<array<i64: 0, 1>, -1 : i64>>, %arg1: memref<f32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<f64, #hir.shard<array<i64: 0, 1>, -1 : i64>> to tensor<f64>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<f64> to !torch.vtensor<[],f64>
    %2 = torch.aten.neg %1 : !torch.vtensor<[],f64> -> !torch.vtensor<[],f64>
    %int6 = torch.constant.int 6
    %none = torch.constant.none
    %none_0 = torch.constant.none
    %none_1 = torch.constant.none
    %false = torch.constant.bool false
    %none_2 = torch.constant.none
    %3 = torch.aten._to_copy %2, %int6, %none, %none_0, %none_1, %false, %none_2 : !torch.vtensor<[],f64>, !torch.int, !torch.none, !torch.none, !torch.none, !torch.bool, !torch.none -> !torch.vtensor<[],f32>
    %4 = builtin.unrealized_conversion_cast %3 : !torch.vtensor<[],f32> to tensor<f32>
    bufferization.materialize_in_destination %4 in restrict writable %arg1 : (tensor<f32>, memref<f32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
    return
  }
}
