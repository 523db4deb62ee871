module {
  func.func @main(%arg0: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>> {hir.parameter}, %arg1: memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>> {hir.parameter}, %arg2: memref<32xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>> {hir.parameter}, %arg3: memref<32xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>> {hir.parameter}, %arg4: memref<32x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>> {hir.parameter}, %arg5: memref<16x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>> {hir.parameter}, %arg6: memref<16x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>> {hir.parameter}, %arg7: memref<32x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>> {hir.parameter}, %arg8: memref<64x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>> {hir.parameter}, %arg9: memref<64x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>> {hir.parameter}, %arg10: memref<32x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>> {hir.parameter}, %arg11: memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>> {
    %alloc = memref.alloc() : memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    call @segment_0(%arg11, %arg2, %alloc) : (memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<32xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %alloc_0 = memref.alloc() : memref<8x2x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    call @segment_1(%alloc, %alloc_0) : (memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<8x2x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    %0 = "hir.alias_reshape"(%alloc_0) {reassociation = [[0, 1], [2], [3]]} : (memref<8x2x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<2x4x2x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    %alloc_1 = memref.alloc() : memref<2x4x2x32xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
    "hir.set"(%0, %alloc_1) {stream_axis = 0 : i64} : (memref<2x4x2x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<2x4x2x32xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
    %alloc_2 = memref.alloc() : memref<2x4x2x32xf32, #hir.shard<array<i64: 0, 1>, 3 : i64>>
    "hir.linear"(%alloc_1, %arg4, %alloc_2) {operandSegmentSizes = array<i32: 1, 1, 1, 0>, stream_axis = 0 : i64} : (memref<2x4x2x32xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<32x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<2x4x2x32xf32, #hir.shard<array<i64: 0, 1>, 3 : i64>>) -> ()
    %alloc_3 = memref.alloc() : memref<2x4x2x16xf32, #hir.shard<array<i64: 0, 1>, 3 : i64>>
    "hir.linear"(%alloc_1, %arg5, %alloc_3) {operandSegmentSizes = array<i32: 1, 1, 1, 0>, stream_axis = 0 : i64} : (memref<2x4x2x32xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<16x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<2x4x2x16xf32, #hir.shard<array<i64: 0, 1>, 3 : i64>>) -> ()
    %alloc_4 = memref.alloc() : memref<2x4x2x16xf32, #hir.shard<array<i64: 0, 1>, 3 : i64>>
    "hir.linear"(%alloc_1, %arg6, %alloc_4) {operandSegmentSizes = array<i32: 1, 1, 1, 0>, stream_axis = 0 : i64} : (memref<2x4x2x32xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<16x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<2x4x2x16xf32, #hir.shard<array<i64: 0, 1>, 3 : i64>>) -> ()
    %1 = "hir.alias_reshape"(%alloc_2) {reassociation = [[0, 1], [2], [3]]} : (memref<2x4x2x32xf32, #hir.shard<array<i64: 0, 1>, 3 : i64>>) -> memref<8x2x32xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>
    %alloc_5 = memref.alloc() : memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>
    call @segment_2(%1, %alloc_5) : (memref<8x2x32xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) -> ()
    %2 = "hir.alias_reshape"(%alloc_3) {reassociation = [[0, 1], [2], [3]]} : (memref<2x4x2x16xf32, #hir.shard<array<i64: 0, 1>, 3 : i64>>) -> memref<8x2x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>
    %alloc_6 = memref.alloc() : memref<2x8x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>
    call @segment_3(%2, %alloc_6) : (memref<8x2x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, memref<2x8x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) -> ()
    %3 = "hir.alias_reshape"(%alloc_4) {reassociation = [[0, 1], [2], [3]]} : (memref<2x4x2x16xf32, #hir.shard<array<i64: 0, 1>, 3 : i64>>) -> memref<8x2x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>
    %alloc_7 = memref.alloc() : memref<2x8x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>
    call @segment_4(%3, %alloc_7) : (memref<8x2x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, memref<2x8x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) -> ()
    %alloc_8 = memref.alloc() : memref<2x8x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    call @segment_5(%alloc_5, %alloc_8) : (memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, memref<2x8x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %alloc_9 = memref.alloc() : memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    call @segment_6(%alloc_6, %alloc_9) : (memref<2x8x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %alloc_10 = memref.alloc() : memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    call @segment_7(%alloc_7, %alloc_10) : (memref<2x8x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %alloc_11 = memref.alloc() : memref<2x8x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    "hir.binary"(%alloc_8, %arg0, %alloc_11) {kind = "mul"} : (memref<2x8x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<2x8x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %alloc_12 = memref.alloc() : memref<2x8x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    call @segment_8(%alloc_8, %alloc_12) : (memref<2x8x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<2x8x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %alloc_13 = memref.alloc() : memref<2x8x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    "hir.binary"(%alloc_12, %arg1, %alloc_13) {kind = "mul"} : (memref<2x8x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<2x8x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %alloc_14 = memref.alloc() : memref<2x8x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    "hir.binary"(%alloc_11, %alloc_13, %alloc_14) {kind = "add"} : (memref<2x8x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<2x8x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<2x8x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %alloc_15 = memref.alloc() : memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    "hir.binary"(%alloc_9, %arg0, %alloc_15) {kind = "mul"} : (memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %alloc_16 = memref.alloc() : memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    call @segment_9(%alloc_9, %alloc_16) : (memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %alloc_17 = memref.alloc() : memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    "hir.binary"(%alloc_16, %arg1, %alloc_17) {kind = "mul"} : (memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<8x4xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %alloc_18 = memref.alloc() : memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    "hir.binary"(%alloc_15, %alloc_17, %alloc_18) {kind = "add"} : (memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %alloc_19 = memref.alloc() : memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>
    call @segment_10(%alloc_18, %alloc_10, %alloc_14, %alloc_19) : (memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<2x8x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) -> ()
    %alloc_20 = memref.alloc() : memref<2x2x8x16xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    call @segment_11(%alloc_19, %alloc_20) : (memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, memref<2x2x8x16xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %alloc_21 = memref.alloc() : memref<1x2x16x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    call @segment_12(%arg7, %alloc_21) : (memref<32x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<1x2x16x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %alloc_22 = memref.alloc() : memref<2x2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    "hir.matmul"(%alloc_20, %alloc_21, %alloc_22) {stream_axis = 0 : i64} : (memref<2x2x8x16xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<1x2x16x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<2x2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %alloc_23 = memref.alloc() : memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    "hir.reduction"(%alloc_22, %alloc_23) {axes = array<i64: 1>, kind = "sum", stream_axis = 0 : i64} : (memref<2x2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    %4 = "hir.alias_reshape"(%alloc_23) {reassociation = [[0], [1, 2], [3]]} : (memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<2x4x2x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    %5 = "hir.alias_reshape"(%4) {reassociation = [[0, 1], [2], [3]]} : (memref<2x4x2x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<8x2x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    %alloc_24 = memref.alloc() : memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    call @segment_13(%5, %alloc_24) : (memref<8x2x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %alloc_25 = memref.alloc() : memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    "hir.binary"(%arg11, %alloc_24, %alloc_25) {kind = "add"} : (memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %alloc_26 = memref.alloc() : memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    call @segment_14(%alloc_25, %arg3, %alloc_26) : (memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<32xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %alloc_27 = memref.alloc() : memref<8x2x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    call @segment_15(%alloc_26, %alloc_27) : (memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<8x2x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    %6 = "hir.alias_reshape"(%alloc_27) {reassociation = [[0, 1], [2], [3]]} : (memref<8x2x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<2x4x2x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    %alloc_28 = memref.alloc() : memref<2x4x2x32xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>
    "hir.set"(%6, %alloc_28) {stream_axis = 0 : i64} : (memref<2x4x2x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<2x4x2x32xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>) -> ()
    %alloc_29 = memref.alloc() : memref<2x4x2x64xf32, #hir.shard<array<i64: 0, 1>, 3 : i64>>
    "hir.linear"(%alloc_28, %arg8, %alloc_29) {operandSegmentSizes = array<i32: 1, 1, 1, 0>, stream_axis = 0 : i64} : (memref<2x4x2x32xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<64x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<2x4x2x64xf32, #hir.shard<array<i64: 0, 1>, 3 : i64>>) -> ()
    %alloc_30 = memref.alloc() : memref<2x4x2x64xf32, #hir.shard<array<i64: 0, 1>, 3 : i64>>
    "hir.linear"(%alloc_28, %arg9, %alloc_30) {operandSegmentSizes = array<i32: 1, 1, 1, 0>, stream_axis = 0 : i64} : (memref<2x4x2x32xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, memref<64x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<2x4x2x64xf32, #hir.shard<array<i64: 0, 1>, 3 : i64>>) -> ()
    %7 = "hir.alias_reshape"(%alloc_29) {reassociation = [[0, 1], [2], [3]]} : (memref<2x4x2x64xf32, #hir.shard<array<i64: 0, 1>, 3 : i64>>) -> memref<8x2x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>
    %alloc_31 = memref.alloc() : memref<2x8x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>
    call @segment_16(%7, %alloc_31) : (memref<8x2x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, memref<2x8x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) -> ()
    %8 = "hir.alias_reshape"(%alloc_30) {reassociation = [[0, 1], [2], [3]]} : (memref<2x4x2x64xf32, #hir.shard<array<i64: 0, 1>, 3 : i64>>) -> memref<8x2x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>
    %alloc_32 = memref.alloc() : memref<2x8x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>
    call @segment_17(%8, %alloc_32) : (memref<8x2x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, memref<2x8x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) -> ()
    %alloc_33 = memref.alloc() : memref<2x8x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>
    call @segment_18(%alloc_31, %alloc_33) : (memref<2x8x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, memref<2x8x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) -> ()
    %alloc_34 = memref.alloc() : memref<2x8x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>
    "hir.binary"(%alloc_33, %alloc_32, %alloc_34) {kind = "mul"} : (memref<2x8x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, memref<2x8x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, memref<2x8x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) -> ()
    %alloc_35 = memref.alloc() : memref<2x2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    call @segment_19(%alloc_34, %alloc_35) : (memref<2x8x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, memref<2x2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %alloc_36 = memref.alloc() : memref<1x2x32x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    call @segment_20(%arg10, %alloc_36) : (memref<32x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<1x2x32x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %alloc_37 = memref.alloc() : memref<2x2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    "hir.matmul"(%alloc_35, %alloc_36, %alloc_37) {stream_axis = 0 : i64} : (memref<2x2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<1x2x32x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<2x2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %alloc_38 = memref.alloc() : memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    "hir.reduction"(%alloc_37, %alloc_38) {axes = array<i64: 1>, kind = "sum", stream_axis = 0 : i64} : (memref<2x2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    %9 = "hir.alias_reshape"(%alloc_38) {reassociation = [[0], [1, 2], [3]]} : (memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<2x4x2x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    %10 = "hir.alias_reshape"(%9) {reassociation = [[0, 1], [2], [3]]} : (memref<2x4x2x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> memref<8x2x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>
    %alloc_39 = memref.alloc() : memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    call @segment_21(%10, %alloc_39) : (memref<8x2x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    %alloc_40 = memref.alloc() : memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
    "hir.binary"(%alloc_25, %alloc_39, %alloc_40) {kind = "add"} : (memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    return %alloc_40 : memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>
  }
  func.func private @segment_0(%arg0: memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, %arg1: memref<32xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, %arg2: memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>> to tensor<2x8x32xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<2x8x32xf32> to !torch.vtensor<[2,4,32],f32>
    %2 = bufferization.to_tensor %arg1 restrict : memref<32xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>> to tensor<32xf32>
    %3 = builtin.unrealized_conversion_cast %2 : tensor<32xf32> to !torch.vtensor<[32],f32>
    %int32 = torch.constant.int 32
    %4 = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
    %float9.999990e-07 = torch.constant.float 9.9999999999999995E-7
    %5 = torch.aten.rms_norm %1, %4, %3, %float9.999990e-07 : !torch.vtensor<[2,4,32],f32>, !torch.list<int>, !torch.vtensor<[32],f32>, !torch.float -> !torch.vtensor<[2,4,32],f32>
    %6 = builtin.unrealized_conversion_cast %5 : !torch.vtensor<[2,4,32],f32> to tensor<2x8x32xf32>
    bufferization.materialize_in_destination %6 in restrict writable %arg2 : (tensor<2x8x32xf32>, memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    return
  }
  func.func private @segment_1(%arg0: memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, %arg1: memref<8x2x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>> to tensor<2x8x32xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<2x8x32xf32> to !torch.vtensor<[2,4,32],f32>
    %int0 = torch.constant.int 0
    %int1 = torch.constant.int 1
    %2 = torch.aten.transpose.int %1, %int0, %int1 : !torch.vtensor<[2,4,32],f32>, !torch.int, !torch.int -> !torch.vtensor<[4,2,32],f32>
    %3 = builtin.unrealized_conversion_cast %2 : !torch.vtensor<[4,2,32],f32> to tensor<8x2x32xf32>
    bufferization.materialize_in_destination %3 in restrict writable %arg1 : (tensor<8x2x32xf32>, memref<8x2x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    return
  }
  func.func private @segment_2(%arg0: memref<8x2x32xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, %arg1: memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<8x2x32xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>> to tensor<8x2x32xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<8x2x32xf32> to !torch.vtensor<[8,2,16],f32>
    %int0 = torch.constant.int 0
    %int1 = torch.constant.int 1
    %2 = torch.aten.transpose.int %1, %int0, %int1 : !torch.vtensor<[8,2,16],f32>, !torch.int, !torch.int -> !torch.vtensor<[2,8,16],f32>
    %3 = builtin.unrealized_conversion_cast %2 : !torch.vtensor<[2,8,16],f32> to tensor<2x8x32xf32>
    bufferization.materialize_in_destination %3 in restrict writable %arg1 : (tensor<2x8x32xf32>, memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) -> ()
    return
  }
  func.func private @segment_3(%arg0: memref<8x2x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, %arg1: memref<2x8x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<8x2x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>> to tensor<8x2x16xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<8x2x16xf32> to !torch.vtensor<[8,2,8],f32>
    %int0 = torch.constant.int 0
    %int1 = torch.constant.int 1
    %2 = torch.aten.transpose.int %1, %int0, %int1 : !torch.vtensor<[8,2,8],f32>, !torch.int, !torch.int -> !torch.vtensor<[2,8,8],f32>
    %3 = builtin.unrealized_conversion_cast %2 : !torch.vtensor<[2,8,8],f32> to tensor<2x8x16xf32>
    bufferization.materialize_in_destination %3 in restrict writable %arg1 : (tensor<2x8x16xf32>, memref<2x8x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) -> ()
    return
  }
  func.func private @segment_4(%arg0: memref<8x2x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, %arg1: memref<2x8x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<8x2x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>> to tensor<8x2x16xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<8x2x16xf32> to !torch.vtensor<[8,2,8],f32>
    %int0 = torch.constant.int 0
    %int1 = torch.constant.int 1
    %2 = torch.aten.transpose.int %1, %int0, %int1 : !torch.vtensor<[8,2,8],f32>, !torch.int, !torch.int -> !torch.vtensor<[2,8,8],f32>
    %3 = builtin.unrealized_conversion_cast %2 : !torch.vtensor<[2,8,8],f32> to tensor<2x8x16xf32>
    bufferization.materialize_in_destination %3 in restrict writable %arg1 : (tensor<2x8x16xf32>, memref<2x8x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) -> ()
    return
  }
  func.func private @segment_5(%arg0: memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, %arg1: memref<2x8x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>> to tensor<2x8x32xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<2x8x32xf32> to !torch.vtensor<[2,8,16],f32>
    %int2 = torch.constant.int 2
    %int8 = torch.constant.int 8
    %int8_0 = torch.constant.int 8
    %int4 = torch.constant.int 4
    %2 = torch.prim.ListConstruct %int2, %int8, %int8_0, %int4 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %int4_1 = torch.constant.int 4
    %3 = torch.prim.ListConstruct %int2, %int8, %int4_1, %int4 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %4 = torch.aten.reshape %1, %3 : !torch.vtensor<[2,8,16],f32>, !torch.list<int> -> !torch.vtensor<[2,8,4,4],f32>
    %int1 = torch.constant.int 1
    %int2_2 = torch.constant.int 2
    %5 = torch.aten.transpose.int %4, %int1, %int2_2 : !torch.vtensor<[2,8,4,4],f32>, !torch.int, !torch.int -> !torch.vtensor<[2,4,8,4],f32>
    %6 = builtin.unrealized_conversion_cast %5 : !torch.vtensor<[2,4,8,4],f32> to tensor<2x8x8x4xf32>
    bufferization.materialize_in_destination %6 in restrict writable %arg1 : (tensor<2x8x8x4xf32>, memref<2x8x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    return
  }
  func.func private @segment_6(%arg0: memref<2x8x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, %arg1: memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<2x8x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>> to tensor<2x8x16xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<2x8x16xf32> to !torch.vtensor<[2,8,8],f32>
    %int2 = torch.constant.int 2
    %int8 = torch.constant.int 8
    %int4 = torch.constant.int 4
    %int4_0 = torch.constant.int 4
    %2 = torch.prim.ListConstruct %int2, %int8, %int4, %int4_0 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %int2_1 = torch.constant.int 2
    %3 = torch.prim.ListConstruct %int2, %int8, %int2_1, %int4_0 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %4 = torch.aten.reshape %1, %3 : !torch.vtensor<[2,8,8],f32>, !torch.list<int> -> !torch.vtensor<[2,8,2,4],f32>
    %int1 = torch.constant.int 1
    %int2_2 = torch.constant.int 2
    %5 = torch.aten.transpose.int %4, %int1, %int2_2 : !torch.vtensor<[2,8,2,4],f32>, !torch.int, !torch.int -> !torch.vtensor<[2,2,8,4],f32>
    %6 = builtin.unrealized_conversion_cast %5 : !torch.vtensor<[2,2,8,4],f32> to tensor<2x4x8x4xf32>
    bufferization.materialize_in_destination %6 in restrict writable %arg1 : (tensor<2x4x8x4xf32>, memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    return
  }
  func.func private @segment_7(%arg0: memref<2x8x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, %arg1: memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<2x8x16xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>> to tensor<2x8x16xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<2x8x16xf32> to !torch.vtensor<[2,8,8],f32>
    %int2 = torch.constant.int 2
    %int8 = torch.constant.int 8
    %int4 = torch.constant.int 4
    %int4_0 = torch.constant.int 4
    %2 = torch.prim.ListConstruct %int2, %int8, %int4, %int4_0 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %int2_1 = torch.constant.int 2
    %3 = torch.prim.ListConstruct %int2, %int8, %int2_1, %int4_0 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %4 = torch.aten.reshape %1, %3 : !torch.vtensor<[2,8,8],f32>, !torch.list<int> -> !torch.vtensor<[2,8,2,4],f32>
    %int1 = torch.constant.int 1
    %int2_2 = torch.constant.int 2
    %5 = torch.aten.transpose.int %4, %int1, %int2_2 : !torch.vtensor<[2,8,2,4],f32>, !torch.int, !torch.int -> !torch.vtensor<[2,2,8,4],f32>
    %6 = builtin.unrealized_conversion_cast %5 : !torch.vtensor<[2,2,8,4],f32> to tensor<2x4x8x4xf32>
    bufferization.materialize_in_destination %6 in restrict writable %arg1 : (tensor<2x4x8x4xf32>, memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    return
  }
  func.func private @segment_8(%arg0: memref<2x8x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, %arg1: memref<2x8x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<2x8x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>> to tensor<2x8x8x4xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<2x8x8x4xf32> to !torch.vtensor<[2,4,8,4],f32>
    %int3 = torch.constant.int 3
    %int2 = torch.constant.int 2
    %int9223372036854775807 = torch.constant.int 9223372036854775807
    %int1 = torch.constant.int 1
    %2 = torch.aten.slice.Tensor %1, %int3, %int2, %int9223372036854775807, %int1 : !torch.vtensor<[2,4,8,4],f32>, !torch.int, !torch.int, !torch.int, !torch.int -> !torch.vtensor<[2,4,8,2],f32>
    %3 = torch.aten.neg %2 : !torch.vtensor<[2,4,8,2],f32> -> !torch.vtensor<[2,4,8,2],f32>
    %int3_0 = torch.constant.int 3
    %int0 = torch.constant.int 0
    %int2_1 = torch.constant.int 2
    %int1_2 = torch.constant.int 1
    %4 = torch.aten.slice.Tensor %1, %int3_0, %int0, %int2_1, %int1_2 : !torch.vtensor<[2,4,8,4],f32>, !torch.int, !torch.int, !torch.int, !torch.int -> !torch.vtensor<[2,4,8,2],f32>
    %5 = torch.prim.ListConstruct %3, %4 : (!torch.vtensor<[2,4,8,2],f32>, !torch.vtensor<[2,4,8,2],f32>) -> !torch.list<vtensor>
    %int-1 = torch.constant.int -1
    %6 = torch.aten.cat %5, %int-1 : !torch.list<vtensor>, !torch.int -> !torch.vtensor<[2,4,8,4],f32>
    %7 = builtin.unrealized_conversion_cast %6 : !torch.vtensor<[2,4,8,4],f32> to tensor<2x8x8x4xf32>
    bufferization.materialize_in_destination %7 in restrict writable %arg1 : (tensor<2x8x8x4xf32>, memref<2x8x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    return
  }
  func.func private @segment_9(%arg0: memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, %arg1: memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>> to tensor<2x4x8x4xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<2x4x8x4xf32> to !torch.vtensor<[2,2,8,4],f32>
    %int3 = torch.constant.int 3
    %int2 = torch.constant.int 2
    %int9223372036854775807 = torch.constant.int 9223372036854775807
    %int1 = torch.constant.int 1
    %2 = torch.aten.slice.Tensor %1, %int3, %int2, %int9223372036854775807, %int1 : !torch.vtensor<[2,2,8,4],f32>, !torch.int, !torch.int, !torch.int, !torch.int -> !torch.vtensor<[2,2,8,2],f32>
    %3 = torch.aten.neg %2 : !torch.vtensor<[2,2,8,2],f32> -> !torch.vtensor<[2,2,8,2],f32>
    %int3_0 = torch.constant.int 3
    %int0 = torch.constant.int 0
    %int2_1 = torch.constant.int 2
    %int1_2 = torch.constant.int 1
    %4 = torch.aten.slice.Tensor %1, %int3_0, %int0, %int2_1, %int1_2 : !torch.vtensor<[2,2,8,4],f32>, !torch.int, !torch.int, !torch.int, !torch.int -> !torch.vtensor<[2,2,8,2],f32>
    %5 = torch.prim.ListConstruct %3, %4 : (!torch.vtensor<[2,2,8,2],f32>, !torch.vtensor<[2,2,8,2],f32>) -> !torch.list<vtensor>
    %int-1 = torch.constant.int -1
    %6 = torch.aten.cat %5, %int-1 : !torch.list<vtensor>, !torch.int -> !torch.vtensor<[2,2,8,4],f32>
    %7 = builtin.unrealized_conversion_cast %6 : !torch.vtensor<[2,2,8,4],f32> to tensor<2x4x8x4xf32>
    bufferization.materialize_in_destination %7 in restrict writable %arg1 : (tensor<2x4x8x4xf32>, memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    return
  }
  func.func private @segment_10(%arg0: memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, %arg1: memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, %arg2: memref<2x8x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, %arg3: memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>> to tensor<2x4x8x4xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<2x4x8x4xf32> to !torch.vtensor<[2,2,8,4],f32>
    %2 = bufferization.to_tensor %arg1 restrict : memref<2x4x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>> to tensor<2x4x8x4xf32>
    %3 = builtin.unrealized_conversion_cast %2 : tensor<2x4x8x4xf32> to !torch.vtensor<[2,2,8,4],f32>
    %4 = bufferization.to_tensor %arg2 restrict : memref<2x8x8x4xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>> to tensor<2x8x8x4xf32>
    %5 = builtin.unrealized_conversion_cast %4 : tensor<2x8x8x4xf32> to !torch.vtensor<[2,4,8,4],f32>
    %int2 = torch.constant.int 2
    %6 = torch.aten.unsqueeze %1, %int2 : !torch.vtensor<[2,2,8,4],f32>, !torch.int -> !torch.vtensor<[2,2,1,8,4],f32>
    %int2_0 = torch.constant.int 2
    %int4 = torch.constant.int 4
    %int2_1 = torch.constant.int 2
    %int8 = torch.constant.int 8
    %int4_2 = torch.constant.int 4
    %7 = torch.prim.ListConstruct %int2_0, %int4, %int2_1, %int8, %int4_2 : (!torch.int, !torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %false = torch.constant.bool false
    %int2_3 = torch.constant.int 2
    %8 = torch.prim.ListConstruct %int2_0, %int2_3, %int2_1, %int8, %int4_2 : (!torch.int, !torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %9 = torch.aten.expand %6, %8, %false : !torch.vtensor<[2,2,1,8,4],f32>, !torch.list<int>, !torch.bool -> !torch.vtensor<[2,2,2,8,4],f32>
    %int0 = torch.constant.int 0
    %10 = torch.aten.clone %9, %int0 : !torch.vtensor<[2,2,2,8,4],f32>, !torch.int -> !torch.vtensor<[2,2,2,8,4],f32>
    %int2_4 = torch.constant.int 2
    %int8_5 = torch.constant.int 8
    %int8_6 = torch.constant.int 8
    %int4_7 = torch.constant.int 4
    %11 = torch.prim.ListConstruct %int2_4, %int8_5, %int8_6, %int4_7 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %int4_8 = torch.constant.int 4
    %12 = torch.prim.ListConstruct %int2_4, %int4_8, %int8_6, %int4_7 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %13 = torch.aten.reshape %10, %12 : !torch.vtensor<[2,2,2,8,4],f32>, !torch.list<int> -> !torch.vtensor<[2,4,8,4],f32>
    %int2_9 = torch.constant.int 2
    %14 = torch.aten.unsqueeze %3, %int2_9 : !torch.vtensor<[2,2,8,4],f32>, !torch.int -> !torch.vtensor<[2,2,1,8,4],f32>
    %int2_10 = torch.constant.int 2
    %int4_11 = torch.constant.int 4
    %int2_12 = torch.constant.int 2
    %int8_13 = torch.constant.int 8
    %int4_14 = torch.constant.int 4
    %15 = torch.prim.ListConstruct %int2_10, %int4_11, %int2_12, %int8_13, %int4_14 : (!torch.int, !torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %false_15 = torch.constant.bool false
    %int2_16 = torch.constant.int 2
    %16 = torch.prim.ListConstruct %int2_10, %int2_16, %int2_12, %int8_13, %int4_14 : (!torch.int, !torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %17 = torch.aten.expand %14, %16, %false_15 : !torch.vtensor<[2,2,1,8,4],f32>, !torch.list<int>, !torch.bool -> !torch.vtensor<[2,2,2,8,4],f32>
    %int0_17 = torch.constant.int 0
    %18 = torch.aten.clone %17, %int0_17 : !torch.vtensor<[2,2,2,8,4],f32>, !torch.int -> !torch.vtensor<[2,2,2,8,4],f32>
    %int2_18 = torch.constant.int 2
    %int8_19 = torch.constant.int 8
    %int8_20 = torch.constant.int 8
    %int4_21 = torch.constant.int 4
    %19 = torch.prim.ListConstruct %int2_18, %int8_19, %int8_20, %int4_21 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %int4_22 = torch.constant.int 4
    %20 = torch.prim.ListConstruct %int2_18, %int4_22, %int8_20, %int4_21 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %21 = torch.aten.reshape %18, %20 : !torch.vtensor<[2,2,2,8,4],f32>, !torch.list<int> -> !torch.vtensor<[2,4,8,4],f32>
    %none = torch.constant.none
    %float0.000000e00 = torch.constant.float 0.000000e+00
    %true = torch.constant.bool true
    %none_23 = torch.constant.none
    %false_24 = torch.constant.bool false
    %22 = torch.aten.scaled_dot_product_attention %5, %13, %21, %none, %float0.000000e00, %true, %none_23, %false_24 : !torch.vtensor<[2,4,8,4],f32>, !torch.vtensor<[2,4,8,4],f32>, !torch.vtensor<[2,4,8,4],f32>, !torch.none, !torch.float, !torch.bool, !torch.none, !torch.bool -> !torch.vtensor<[2,4,8,4],f32>
    %int1 = torch.constant.int 1
    %int2_25 = torch.constant.int 2
    %23 = torch.aten.transpose.int %22, %int1, %int2_25 : !torch.vtensor<[2,4,8,4],f32>, !torch.int, !torch.int -> !torch.vtensor<[2,8,4,4],f32>
    %int2_26 = torch.constant.int 2
    %int8_27 = torch.constant.int 8
    %int-1 = torch.constant.int -1
    %24 = torch.prim.ListConstruct %int2_26, %int8_27, %int-1 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %25 = torch.aten.reshape %23, %24 : !torch.vtensor<[2,8,4,4],f32>, !torch.list<int> -> !torch.vtensor<[2,8,16],f32>
    %26 = builtin.unrealized_conversion_cast %25 : !torch.vtensor<[2,8,16],f32> to tensor<2x8x32xf32>
    bufferization.materialize_in_destination %26 in restrict writable %arg3 : (tensor<2x8x32xf32>, memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) -> ()
    return
  }
  func.func private @segment_11(%arg0: memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, %arg1: memref<2x2x8x16xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>> to tensor<2x8x32xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<2x8x32xf32> to !torch.vtensor<[2,8,16],f32>
    %int0 = torch.constant.int 0
    %int1 = torch.constant.int 1
    %2 = torch.aten.transpose.int %1, %int0, %int1 : !torch.vtensor<[2,8,16],f32>, !torch.int, !torch.int -> !torch.vtensor<[8,2,16],f32>
    %int2 = torch.constant.int 2
    %int8 = torch.constant.int 8
    %int16 = torch.constant.int 16
    %3 = torch.prim.ListConstruct %int2, %int8, %int16 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %4 = torch.aten.reshape %2, %3 : !torch.vtensor<[8,2,16],f32>, !torch.list<int> -> !torch.vtensor<[2,8,16],f32>
    %int1_0 = torch.constant.int 1
    %5 = torch.aten.unsqueeze %4, %int1_0 : !torch.vtensor<[2,8,16],f32>, !torch.int -> !torch.vtensor<[2,1,8,16],f32>
    %6 = builtin.unrealized_conversion_cast %5 : !torch.vtensor<[2,1,8,16],f32> to tensor<2x2x8x16xf32>
    bufferization.materialize_in_destination %6 in restrict writable %arg1 : (tensor<2x2x8x16xf32>, memref<2x2x8x16xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    return
  }
  func.func private @segment_12(%arg0: memref<32x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, %arg1: memref<1x2x16x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<32x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>> to tensor<32x32xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<32x32xf32> to !torch.vtensor<[32,16],f32>
    %int0 = torch.constant.int 0
    %int1 = torch.constant.int 1
    %2 = torch.aten.transpose.int %1, %int0, %int1 : !torch.vtensor<[32,16],f32>, !torch.int, !torch.int -> !torch.vtensor<[16,32],f32>
    %int0_0 = torch.constant.int 0
    %3 = torch.aten.unsqueeze %2, %int0_0 : !torch.vtensor<[16,32],f32>, !torch.int -> !torch.vtensor<[1,16,32],f32>
    %int0_1 = torch.constant.int 0
    %4 = torch.aten.unsqueeze %3, %int0_1 : !torch.vtensor<[1,16,32],f32>, !torch.int -> !torch.vtensor<[1,1,16,32],f32>
    %5 = builtin.unrealized_conversion_cast %4 : !torch.vtensor<[1,1,16,32],f32> to tensor<1x2x16x32xf32>
    bufferization.materialize_in_destination %5 in restrict writable %arg1 : (tensor<1x2x16x32xf32>, memref<1x2x16x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    return
  }
  func.func private @segment_13(%arg0: memref<8x2x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %arg1: memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<8x2x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>> to tensor<8x2x32xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<8x2x32xf32> to !torch.vtensor<[4,2,32],f32>
    %int0 = torch.constant.int 0
    %int1 = torch.constant.int 1
    %2 = torch.aten.transpose.int %1, %int0, %int1 : !torch.vtensor<[4,2,32],f32>, !torch.int, !torch.int -> !torch.vtensor<[2,4,32],f32>
    %3 = builtin.unrealized_conversion_cast %2 : !torch.vtensor<[2,4,32],f32> to tensor<2x8x32xf32>
    bufferization.materialize_in_destination %3 in restrict writable %arg1 : (tensor<2x8x32xf32>, memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    return
  }
  func.func private @segment_14(%arg0: memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, %arg1: memref<32xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>>, %arg2: memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>> to tensor<2x8x32xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<2x8x32xf32> to !torch.vtensor<[2,4,32],f32>
    %2 = bufferization.to_tensor %arg1 restrict : memref<32xf32, #hir.shard<array<i64: 0, 1>, -1 : i64>> to tensor<32xf32>
    %3 = builtin.unrealized_conversion_cast %2 : tensor<32xf32> to !torch.vtensor<[32],f32>
    %int32 = torch.constant.int 32
    %4 = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
    %float9.999990e-07 = torch.constant.float 9.9999999999999995E-7
    %5 = torch.aten.rms_norm %1, %4, %3, %float9.999990e-07 : !torch.vtensor<[2,4,32],f32>, !torch.list<int>, !torch.vtensor<[32],f32>, !torch.float -> !torch.vtensor<[2,4,32],f32>
    %6 = builtin.unrealized_conversion_cast %5 : !torch.vtensor<[2,4,32],f32> to tensor<2x8x32xf32>
    bufferization.materialize_in_destination %6 in restrict writable %arg2 : (tensor<2x8x32xf32>, memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    return
  }
  func.func private @segment_15(%arg0: memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, %arg1: memref<8x2x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>> to tensor<2x8x32xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<2x8x32xf32> to !torch.vtensor<[2,4,32],f32>
    %int0 = torch.constant.int 0
    %int1 = torch.constant.int 1
    %2 = torch.aten.transpose.int %1, %int0, %int1 : !torch.vtensor<[2,4,32],f32>, !torch.int, !torch.int -> !torch.vtensor<[4,2,32],f32>
    %3 = builtin.unrealized_conversion_cast %2 : !torch.vtensor<[4,2,32],f32> to tensor<8x2x32xf32>
    bufferization.materialize_in_destination %3 in restrict writable %arg1 : (tensor<8x2x32xf32>, memref<8x2x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>) -> ()
    return
  }
  func.func private @segment_16(%arg0: memref<8x2x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, %arg1: memref<2x8x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<8x2x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>> to tensor<8x2x64xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<8x2x64xf32> to !torch.vtensor<[8,2,32],f32>
    %int0 = torch.constant.int 0
    %int1 = torch.constant.int 1
    %2 = torch.aten.transpose.int %1, %int0, %int1 : !torch.vtensor<[8,2,32],f32>, !torch.int, !torch.int -> !torch.vtensor<[2,8,32],f32>
    %3 = builtin.unrealized_conversion_cast %2 : !torch.vtensor<[2,8,32],f32> to tensor<2x8x64xf32>
    bufferization.materialize_in_destination %3 in restrict writable %arg1 : (tensor<2x8x64xf32>, memref<2x8x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) -> ()
    return
  }
  func.func private @segment_17(%arg0: memref<8x2x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, %arg1: memref<2x8x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<8x2x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>> to tensor<8x2x64xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<8x2x64xf32> to !torch.vtensor<[8,2,32],f32>
    %int0 = torch.constant.int 0
    %int1 = torch.constant.int 1
    %2 = torch.aten.transpose.int %1, %int0, %int1 : !torch.vtensor<[8,2,32],f32>, !torch.int, !torch.int -> !torch.vtensor<[2,8,32],f32>
    %3 = builtin.unrealized_conversion_cast %2 : !torch.vtensor<[2,8,32],f32> to tensor<2x8x64xf32>
    bufferization.materialize_in_destination %3 in restrict writable %arg1 : (tensor<2x8x64xf32>, memref<2x8x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) -> ()
    return
  }
  func.func private @segment_18(%arg0: memref<2x8x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, %arg1: memref<2x8x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<2x8x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>> to tensor<2x8x64xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<2x8x64xf32> to !torch.vtensor<[2,8,32],f32>
    %2 = torch.aten.silu %1 : !torch.vtensor<[2,8,32],f32> -> !torch.vtensor<[2,8,32],f32>
    %3 = builtin.unrealized_conversion_cast %2 : !torch.vtensor<[2,8,32],f32> to tensor<2x8x64xf32>
    bufferization.materialize_in_destination %3 in restrict writable %arg1 : (tensor<2x8x64xf32>, memref<2x8x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>) -> ()
    return
  }
  func.func private @segment_19(%arg0: memref<2x8x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>>, %arg1: memref<2x2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<2x8x64xf32, #hir.shard<array<i64: 0, 1>, 2 : i64>> to tensor<2x8x64xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<2x8x64xf32> to !torch.vtensor<[2,8,32],f32>
    %int0 = torch.constant.int 0
    %int1 = torch.constant.int 1
    %2 = torch.aten.transpose.int %1, %int0, %int1 : !torch.vtensor<[2,8,32],f32>, !torch.int, !torch.int -> !torch.vtensor<[8,2,32],f32>
    %int2 = torch.constant.int 2
    %int8 = torch.constant.int 8
    %int32 = torch.constant.int 32
    %3 = torch.prim.ListConstruct %int2, %int8, %int32 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %4 = torch.aten.reshape %2, %3 : !torch.vtensor<[8,2,32],f32>, !torch.list<int> -> !torch.vtensor<[2,8,32],f32>
    %int1_0 = torch.constant.int 1
    %5 = torch.aten.unsqueeze %4, %int1_0 : !torch.vtensor<[2,8,32],f32>, !torch.int -> !torch.vtensor<[2,1,8,32],f32>
    %6 = builtin.unrealized_conversion_cast %5 : !torch.vtensor<[2,1,8,32],f32> to tensor<2x2x8x32xf32>
    bufferization.materialize_in_destination %6 in restrict writable %arg1 : (tensor<2x2x8x32xf32>, memref<2x2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    return
  }
  func.func private @segment_20(%arg0: memref<32x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>, %arg1: memref<1x2x32x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<32x64xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>> to tensor<32x64xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<32x64xf32> to !torch.vtensor<[32,32],f32>
    %int0 = torch.constant.int 0
    %int1 = torch.constant.int 1
    %2 = torch.aten.transpose.int %1, %int0, %int1 : !torch.vtensor<[32,32],f32>, !torch.int, !torch.int -> !torch.vtensor<[32,32],f32>
    %int0_0 = torch.constant.int 0
    %3 = torch.aten.unsqueeze %2, %int0_0 : !torch.vtensor<[32,32],f32>, !torch.int -> !torch.vtensor<[1,32,32],f32>
    %int0_1 = torch.constant.int 0
    %4 = torch.aten.unsqueeze %3, %int0_1 : !torch.vtensor<[1,32,32],f32>, !torch.int -> !torch.vtensor<[1,1,32,32],f32>
    %5 = builtin.unrealized_conversion_cast %4 : !torch.vtensor<[1,1,32,32],f32> to tensor<1x2x32x32xf32>
    bufferization.materialize_in_destination %5 in restrict writable %arg1 : (tensor<1x2x32x32xf32>, memref<1x2x32x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    return
  }
  func.func private @segment_21(%arg0: memref<8x2x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>>, %arg1: memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) attributes {hir.kernel} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<8x2x32xf32, #hir.shard<array<i64: 0, 1>, 0 : i64>> to tensor<8x2x32xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<8x2x32xf32> to !torch.vtensor<[4,2,32],f32>
    %int0 = torch.constant.int 0
    %int1 = torch.constant.int 1
    %2 = torch.aten.transpose.int %1, %int0, %int1 : !torch.vtensor<[4,2,32],f32>, !torch.int, !torch.int -> !torch.vtensor<[2,4,32],f32>
    %3 = builtin.unrealized_conversion_cast %2 : !torch.vtensor<[2,4,32],f32> to tensor<2x8x32xf32>
    bufferization.materialize_in_destination %3 in restrict writable %arg1 : (tensor<2x8x32xf32>, memref<2x8x32xf32, #hir.shard<array<i64: 0, 1>, 1 : i64>>) -> ()
    return
  }
}
