// The pre-norm block of benchmarks/block.py (seed 0: batch 2, seq 64, d_model 128, 4 heads),
// imported and lowered: `python benchmarks/block.py --emit DIR`, then DIR/block.mlir. The
// GPU machines have no FX importer; test_compile_kernels.py runs it there.
module {
  func.func @main(%arg0: memref<64x64xf32>, %arg1: memref<128xf32>, %arg2: memref<128xf32>, %arg3: memref<384x128xf32>, %arg4: memref<384xf32>, %arg5: memref<128x128xf32>, %arg6: memref<128xf32>, %arg7: memref<128xf32>, %arg8: memref<128xf32>, %arg9: memref<512x128xf32>, %arg10: memref<512xf32>, %arg11: memref<128x512xf32>, %arg12: memref<128xf32>, %arg13: memref<2x64x128xf32>) -> memref<2x64x128xf32> {
    %alloc = memref.alloc() : memref<2x64x128xf32>
    call @segment_0(%arg13, %arg1, %arg2, %alloc) : (memref<2x64x128xf32>, memref<128xf32>, memref<128xf32>, memref<2x64x128xf32>) -> ()
    %alloc_0 = memref.alloc() : memref<2x64x384xf32>
    "hir.linear"(%alloc, %arg3, %alloc_0, %arg4) {operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (memref<2x64x128xf32>, memref<384x128xf32>, memref<2x64x384xf32>, memref<384xf32>) -> ()
    memref.dealloc %alloc : memref<2x64x128xf32>
    %alloc_1 = memref.alloc() : memref<2x4x64x32xf32>
    %alloc_2 = memref.alloc() : memref<2x4x64x32xf32>
    %alloc_3 = memref.alloc() : memref<2x4x32x64xf32>
    call @segment_1(%alloc_0, %alloc_1, %alloc_2, %alloc_3) : (memref<2x64x384xf32>, memref<2x4x64x32xf32>, memref<2x4x64x32xf32>, memref<2x4x32x64xf32>) -> ()
    memref.dealloc %alloc_0 : memref<2x64x384xf32>
    %alloc_4 = memref.alloc() : memref<2x4x64x64xf32>
    "hir.matmul"(%alloc_1, %alloc_3, %alloc_4) : (memref<2x4x64x32xf32>, memref<2x4x32x64xf32>, memref<2x4x64x64xf32>) -> ()
    memref.dealloc %alloc_3 : memref<2x4x32x64xf32>
    memref.dealloc %alloc_1 : memref<2x4x64x32xf32>
    %alloc_5 = memref.alloc() : memref<2x4x64x64xf32>
    call @segment_2(%alloc_4, %alloc_5) : (memref<2x4x64x64xf32>, memref<2x4x64x64xf32>) -> ()
    memref.dealloc %alloc_4 : memref<2x4x64x64xf32>
    %alloc_6 = memref.alloc() : memref<2x4x64x64xf32>
    "hir.binary"(%alloc_5, %arg0, %alloc_6) {kind = "add"} : (memref<2x4x64x64xf32>, memref<64x64xf32>, memref<2x4x64x64xf32>) -> ()
    memref.dealloc %alloc_5 : memref<2x4x64x64xf32>
    %alloc_7 = memref.alloc() : memref<2x4x64x64xf32>
    call @segment_3(%alloc_6, %alloc_7) : (memref<2x4x64x64xf32>, memref<2x4x64x64xf32>) -> ()
    memref.dealloc %alloc_6 : memref<2x4x64x64xf32>
    %alloc_8 = memref.alloc() : memref<2x4x64x32xf32>
    "hir.matmul"(%alloc_7, %alloc_2, %alloc_8) : (memref<2x4x64x64xf32>, memref<2x4x64x32xf32>, memref<2x4x64x32xf32>) -> ()
    memref.dealloc %alloc_7 : memref<2x4x64x64xf32>
    memref.dealloc %alloc_2 : memref<2x4x64x32xf32>
    %alloc_9 = memref.alloc() : memref<2x64x128xf32>
    call @segment_4(%alloc_8, %alloc_9) : (memref<2x4x64x32xf32>, memref<2x64x128xf32>) -> ()
    memref.dealloc %alloc_8 : memref<2x4x64x32xf32>
    %alloc_10 = memref.alloc() : memref<2x64x128xf32>
    "hir.linear"(%alloc_9, %arg5, %alloc_10, %arg6) {operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (memref<2x64x128xf32>, memref<128x128xf32>, memref<2x64x128xf32>, memref<128xf32>) -> ()
    memref.dealloc %alloc_9 : memref<2x64x128xf32>
    %alloc_11 = memref.alloc() : memref<2x64x128xf32>
    "hir.binary"(%arg13, %alloc_10, %alloc_11) {kind = "add"} : (memref<2x64x128xf32>, memref<2x64x128xf32>, memref<2x64x128xf32>) -> ()
    memref.dealloc %alloc_10 : memref<2x64x128xf32>
    %alloc_12 = memref.alloc() : memref<2x64x128xf32>
    call @segment_5(%alloc_11, %arg7, %arg8, %alloc_12) : (memref<2x64x128xf32>, memref<128xf32>, memref<128xf32>, memref<2x64x128xf32>) -> ()
    %alloc_13 = memref.alloc() : memref<2x64x512xf32>
    "hir.linear"(%alloc_12, %arg9, %alloc_13, %arg10) {operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (memref<2x64x128xf32>, memref<512x128xf32>, memref<2x64x512xf32>, memref<512xf32>) -> ()
    memref.dealloc %alloc_12 : memref<2x64x128xf32>
    %alloc_14 = memref.alloc() : memref<2x64x512xf32>
    call @segment_6(%alloc_13, %alloc_14) : (memref<2x64x512xf32>, memref<2x64x512xf32>) -> ()
    memref.dealloc %alloc_13 : memref<2x64x512xf32>
    %alloc_15 = memref.alloc() : memref<2x64x128xf32>
    "hir.linear"(%alloc_14, %arg11, %alloc_15, %arg12) {operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (memref<2x64x512xf32>, memref<128x512xf32>, memref<2x64x128xf32>, memref<128xf32>) -> ()
    memref.dealloc %alloc_14 : memref<2x64x512xf32>
    %alloc_16 = memref.alloc() : memref<2x64x128xf32>
    "hir.binary"(%alloc_11, %alloc_15, %alloc_16) {kind = "add"} : (memref<2x64x128xf32>, memref<2x64x128xf32>, memref<2x64x128xf32>) -> ()
    memref.dealloc %alloc_15 : memref<2x64x128xf32>
    memref.dealloc %alloc_11 : memref<2x64x128xf32>
    return %alloc_16 : memref<2x64x128xf32>
  }
  func.func private @segment_0(%arg0: memref<2x64x128xf32>, %arg1: memref<128xf32>, %arg2: memref<128xf32>, %arg3: memref<2x64x128xf32>) attributes {hir.kernel} {
    %false = torch.constant.bool false
    %float1.000000e-05 = torch.constant.float 1.000000e-05
    %int128 = torch.constant.int 128
    %0 = bufferization.to_tensor %arg0 restrict : memref<2x64x128xf32> to tensor<2x64x128xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<2x64x128xf32> to !torch.vtensor<[2,64,128],f32>
    %2 = bufferization.to_tensor %arg1 restrict : memref<128xf32> to tensor<128xf32>
    %3 = builtin.unrealized_conversion_cast %2 : tensor<128xf32> to !torch.vtensor<[128],f32>
    %4 = bufferization.to_tensor %arg2 restrict : memref<128xf32> to tensor<128xf32>
    %5 = builtin.unrealized_conversion_cast %4 : tensor<128xf32> to !torch.vtensor<[128],f32>
    %6 = torch.prim.ListConstruct %int128 : (!torch.int) -> !torch.list<int>
    %7 = torch.aten.layer_norm %1, %6, %3, %5, %float1.000000e-05, %false : !torch.vtensor<[2,64,128],f32>, !torch.list<int>, !torch.vtensor<[128],f32>, !torch.vtensor<[128],f32>, !torch.float, !torch.bool -> !torch.vtensor<[2,64,128],f32>
    %8 = builtin.unrealized_conversion_cast %7 : !torch.vtensor<[2,64,128],f32> to tensor<2x64x128xf32>
    bufferization.materialize_in_destination %8 in restrict writable %arg3 : (tensor<2x64x128xf32>, memref<2x64x128xf32>) -> ()
    return
  }
  func.func private @segment_1(%arg0: memref<2x64x384xf32>, %arg1: memref<2x4x64x32xf32>, %arg2: memref<2x4x64x32xf32>, %arg3: memref<2x4x32x64xf32>) attributes {hir.kernel} {
    %int-2 = torch.constant.int -2
    %int1 = torch.constant.int 1
    %int32 = torch.constant.int 32
    %int4 = torch.constant.int 4
    %int64 = torch.constant.int 64
    %int2 = torch.constant.int 2
    %int-1 = torch.constant.int -1
    %int128 = torch.constant.int 128
    %0 = bufferization.to_tensor %arg0 restrict : memref<2x64x384xf32> to tensor<2x64x384xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<2x64x384xf32> to !torch.vtensor<[2,64,384],f32>
    %2 = torch.aten.split.Tensor %1, %int128, %int-1 : !torch.vtensor<[2,64,384],f32>, !torch.int, !torch.int -> !torch.list<vtensor>
    %3:3 = torch.prim.ListUnpack %2 : !torch.list<vtensor> -> !torch.vtensor<[2,64,128],f32>, !torch.vtensor<[2,64,128],f32>, !torch.vtensor<[2,64,128],f32>
    %4 = torch.prim.ListConstruct %int2, %int64, %int4, %int32 : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %5 = torch.aten.reshape %3#0, %4 : !torch.vtensor<[2,64,128],f32>, !torch.list<int> -> !torch.vtensor<[2,64,4,32],f32>
    %6 = torch.aten.transpose.int %5, %int1, %int2 : !torch.vtensor<[2,64,4,32],f32>, !torch.int, !torch.int -> !torch.vtensor<[2,4,64,32],f32>
    %7 = torch.aten.reshape %3#1, %4 : !torch.vtensor<[2,64,128],f32>, !torch.list<int> -> !torch.vtensor<[2,64,4,32],f32>
    %8 = torch.aten.transpose.int %7, %int1, %int2 : !torch.vtensor<[2,64,4,32],f32>, !torch.int, !torch.int -> !torch.vtensor<[2,4,64,32],f32>
    %9 = torch.aten.reshape %3#2, %4 : !torch.vtensor<[2,64,128],f32>, !torch.list<int> -> !torch.vtensor<[2,64,4,32],f32>
    %10 = torch.aten.transpose.int %9, %int1, %int2 : !torch.vtensor<[2,64,4,32],f32>, !torch.int, !torch.int -> !torch.vtensor<[2,4,64,32],f32>
    %11 = torch.aten.transpose.int %8, %int-2, %int-1 : !torch.vtensor<[2,4,64,32],f32>, !torch.int, !torch.int -> !torch.vtensor<[2,4,32,64],f32>
    %12 = builtin.unrealized_conversion_cast %6 : !torch.vtensor<[2,4,64,32],f32> to tensor<2x4x64x32xf32>
    bufferization.materialize_in_destination %12 in restrict writable %arg1 : (tensor<2x4x64x32xf32>, memref<2x4x64x32xf32>) -> ()
    %13 = builtin.unrealized_conversion_cast %10 : !torch.vtensor<[2,4,64,32],f32> to tensor<2x4x64x32xf32>
    bufferization.materialize_in_destination %13 in restrict writable %arg2 : (tensor<2x4x64x32xf32>, memref<2x4x64x32xf32>) -> ()
    %14 = builtin.unrealized_conversion_cast %11 : !torch.vtensor<[2,4,32,64],f32> to tensor<2x4x32x64xf32>
    bufferization.materialize_in_destination %14 in restrict writable %arg3 : (tensor<2x4x32x64xf32>, memref<2x4x32x64xf32>) -> ()
    return
  }
  func.func private @segment_2(%arg0: memref<2x4x64x64xf32>, %arg1: memref<2x4x64x64xf32>) attributes {hir.kernel} {
    %float5.656850e00 = torch.constant.float 5.6568542494923806
    %0 = bufferization.to_tensor %arg0 restrict : memref<2x4x64x64xf32> to tensor<2x4x64x64xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<2x4x64x64xf32> to !torch.vtensor<[2,4,64,64],f32>
    %2 = torch.aten.div.Scalar %1, %float5.656850e00 : !torch.vtensor<[2,4,64,64],f32>, !torch.float -> !torch.vtensor<[2,4,64,64],f32>
    %3 = builtin.unrealized_conversion_cast %2 : !torch.vtensor<[2,4,64,64],f32> to tensor<2x4x64x64xf32>
    bufferization.materialize_in_destination %3 in restrict writable %arg1 : (tensor<2x4x64x64xf32>, memref<2x4x64x64xf32>) -> ()
    return
  }
  func.func private @segment_3(%arg0: memref<2x4x64x64xf32>, %arg1: memref<2x4x64x64xf32>) attributes {hir.kernel} {
    %none = torch.constant.none
    %int-1 = torch.constant.int -1
    %0 = bufferization.to_tensor %arg0 restrict : memref<2x4x64x64xf32> to tensor<2x4x64x64xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<2x4x64x64xf32> to !torch.vtensor<[2,4,64,64],f32>
    %2 = torch.aten.softmax.int %1, %int-1, %none : !torch.vtensor<[2,4,64,64],f32>, !torch.int, !torch.none -> !torch.vtensor<[2,4,64,64],f32>
    %3 = builtin.unrealized_conversion_cast %2 : !torch.vtensor<[2,4,64,64],f32> to tensor<2x4x64x64xf32>
    bufferization.materialize_in_destination %3 in restrict writable %arg1 : (tensor<2x4x64x64xf32>, memref<2x4x64x64xf32>) -> ()
    return
  }
  func.func private @segment_4(%arg0: memref<2x4x64x32xf32>, %arg1: memref<2x64x128xf32>) attributes {hir.kernel} {
    %int128 = torch.constant.int 128
    %int64 = torch.constant.int 64
    %int2 = torch.constant.int 2
    %int1 = torch.constant.int 1
    %0 = bufferization.to_tensor %arg0 restrict : memref<2x4x64x32xf32> to tensor<2x4x64x32xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<2x4x64x32xf32> to !torch.vtensor<[2,4,64,32],f32>
    %2 = torch.aten.transpose.int %1, %int1, %int2 : !torch.vtensor<[2,4,64,32],f32>, !torch.int, !torch.int -> !torch.vtensor<[2,64,4,32],f32>
    %3 = torch.prim.ListConstruct %int2, %int64, %int128 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %4 = torch.aten.reshape %2, %3 : !torch.vtensor<[2,64,4,32],f32>, !torch.list<int> -> !torch.vtensor<[2,64,128],f32>
    %5 = builtin.unrealized_conversion_cast %4 : !torch.vtensor<[2,64,128],f32> to tensor<2x64x128xf32>
    bufferization.materialize_in_destination %5 in restrict writable %arg1 : (tensor<2x64x128xf32>, memref<2x64x128xf32>) -> ()
    return
  }
  func.func private @segment_5(%arg0: memref<2x64x128xf32>, %arg1: memref<128xf32>, %arg2: memref<128xf32>, %arg3: memref<2x64x128xf32>) attributes {hir.kernel} {
    %false = torch.constant.bool false
    %float1.000000e-05 = torch.constant.float 1.000000e-05
    %int128 = torch.constant.int 128
    %0 = bufferization.to_tensor %arg0 restrict : memref<2x64x128xf32> to tensor<2x64x128xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<2x64x128xf32> to !torch.vtensor<[2,64,128],f32>
    %2 = bufferization.to_tensor %arg1 restrict : memref<128xf32> to tensor<128xf32>
    %3 = builtin.unrealized_conversion_cast %2 : tensor<128xf32> to !torch.vtensor<[128],f32>
    %4 = bufferization.to_tensor %arg2 restrict : memref<128xf32> to tensor<128xf32>
    %5 = builtin.unrealized_conversion_cast %4 : tensor<128xf32> to !torch.vtensor<[128],f32>
    %6 = torch.prim.ListConstruct %int128 : (!torch.int) -> !torch.list<int>
    %7 = torch.aten.layer_norm %1, %6, %3, %5, %float1.000000e-05, %false : !torch.vtensor<[2,64,128],f32>, !torch.list<int>, !torch.vtensor<[128],f32>, !torch.vtensor<[128],f32>, !torch.float, !torch.bool -> !torch.vtensor<[2,64,128],f32>
    %8 = builtin.unrealized_conversion_cast %7 : !torch.vtensor<[2,64,128],f32> to tensor<2x64x128xf32>
    bufferization.materialize_in_destination %8 in restrict writable %arg3 : (tensor<2x64x128xf32>, memref<2x64x128xf32>) -> ()
    return
  }
  func.func private @segment_6(%arg0: memref<2x64x512xf32>, %arg1: memref<2x64x512xf32>) attributes {hir.kernel} {
    %str = torch.constant.str "none"
    %0 = bufferization.to_tensor %arg0 restrict : memref<2x64x512xf32> to tensor<2x64x512xf32>
    %1 = builtin.unrealized_conversion_cast %0 : tensor<2x64x512xf32> to !torch.vtensor<[2,64,512],f32>
    %2 = torch.aten.gelu %1, %str : !torch.vtensor<[2,64,512],f32>, !torch.str -> !torch.vtensor<[2,64,512],f32>
    %3 = builtin.unrealized_conversion_cast %2 : !torch.vtensor<[2,64,512],f32> to tensor<2x64x512xf32>
    bufferization.materialize_in_destination %3 in restrict writable %arg1 : (tensor<2x64x512xf32>, memref<2x64x512xf32>) -> ()
    return
  }
}
