// RUN: hir-run %s arange:2x8 ones:8 arange:8 --print | FileCheck %s
// RUN: hir-run %s arange:2x8 ones:8 arange:8 --print --compile-kernels | FileCheck %s
// Any torch.aten op runs inside a kernel segment, mapped to torch.ops.aten at plan time:
// layer_norm, _softmax, silu, views (view, transpose), casts (to.dtype), gelu, and the
// torch.constant / prim.ListConstruct / vtensor.literal operands an export produces.

func.func private @segment(%x: memref<2x8xf32>, %w: memref<8xf32>, %b: memref<8xf32>, %out: memref<4x4xf32>) attributes {hir.kernel} {
  %tx = bufferization.to_tensor %x restrict : memref<2x8xf32> to tensor<2x8xf32>
  %vx = builtin.unrealized_conversion_cast %tx : tensor<2x8xf32> to !torch.vtensor<[2,8],f32>
  %tw = bufferization.to_tensor %w restrict : memref<8xf32> to tensor<8xf32>
  %vw = builtin.unrealized_conversion_cast %tw : tensor<8xf32> to !torch.vtensor<[8],f32>
  %tb = bufferization.to_tensor %b restrict : memref<8xf32> to tensor<8xf32>
  %vb = builtin.unrealized_conversion_cast %tb : tensor<8xf32> to !torch.vtensor<[8],f32>
  %int8 = torch.constant.int 8
  %0 = torch.prim.ListConstruct %int8 : (!torch.int) -> !torch.list<int>
  %eps = torch.constant.float 1.000000e-05
  %false = torch.constant.bool false
  %1 = torch.aten.layer_norm %vx, %0, %vw, %vb, %eps, %false : !torch.vtensor<[2,8],f32>, !torch.list<int>, !torch.vtensor<[8],f32>, !torch.vtensor<[8],f32>, !torch.float, !torch.bool -> !torch.vtensor<[2,8],f32>
  %int-1 = torch.constant.int -1
  %2 = torch.aten._softmax %1, %int-1, %false : !torch.vtensor<[2,8],f32>, !torch.int, !torch.bool -> !torch.vtensor<[2,8],f32>
  %3 = torch.aten.silu %2 : !torch.vtensor<[2,8],f32> -> !torch.vtensor<[2,8],f32>
  %int4 = torch.constant.int 4
  %4 = torch.prim.ListConstruct %int4, %int4 : (!torch.int, !torch.int) -> !torch.list<int>
  %5 = torch.aten.view %3, %4 : !torch.vtensor<[2,8],f32>, !torch.list<int> -> !torch.vtensor<[4,4],f32>
  %int0 = torch.constant.int 0
  %int1 = torch.constant.int 1
  %6 = torch.aten.transpose.int %5, %int0, %int1 : !torch.vtensor<[4,4],f32>, !torch.int, !torch.int -> !torch.vtensor<[4,4],f32>
  %int7 = torch.constant.int 7
  %none = torch.constant.none
  %int6 = torch.constant.int 6
  %cpu = torch.constant.device "cpu"
  torch.aten._assert_tensor_metadata %6, %none, %none, %int6, %cpu, %int0 : !torch.vtensor<[4,4],f32>, !torch.none, !torch.none, !torch.int, !torch.Device, !torch.int
  %7 = torch.aten.to.dtype %6, %int7, %false, %false, %none : !torch.vtensor<[4,4],f32>, !torch.int, !torch.bool, !torch.bool, !torch.none -> !torch.vtensor<[4,4],f64>
  %str = torch.constant.str "tanh"
  %8 = torch.aten.gelu %7, %str : !torch.vtensor<[4,4],f64>, !torch.str -> !torch.vtensor<[4,4],f64>
  %9 = torch.aten.to.dtype %8, %int6, %false, %false, %none : !torch.vtensor<[4,4],f64>, !torch.int, !torch.bool, !torch.bool, !torch.none -> !torch.vtensor<[4,4],f32>
  %scale = torch.vtensor.literal(dense<[1.0, 10.0, 100.0, 1000.0]> : tensor<4xf32>) : !torch.vtensor<[4],f32>
  %10 = torch.aten.mul.Tensor %9, %scale : !torch.vtensor<[4,4],f32>, !torch.vtensor<[4],f32> -> !torch.vtensor<[4,4],f32>
  %r = builtin.unrealized_conversion_cast %10 : !torch.vtensor<[4,4],f32> to tensor<4x4xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<4x4xf32>, memref<4x4xf32>) -> ()
  return
}
func.func @main(%x: memref<2x8xf32>, %w: memref<8xf32>, %b: memref<8xf32>) -> memref<4x4xf32> {
  %out = memref.alloc() : memref<4x4xf32>
  func.call @segment(%x, %w, %b, %out) : (memref<2x8xf32>, memref<8xf32>, memref<8xf32>, memref<4x4xf32>) -> ()
  return %out : memref<4x4xf32>
}

// CHECK: output 0: shape [4, 4] f32
// CHECK-NEXT: {{\[}}[8.18822e-06, 0.0258536, 0.000818822, 2.58536],
// CHECK-NEXT:  [3.44403e-05, 0.111989, 0.00344403, 11.1989],
// CHECK-NEXT:  [0.000144902, 0.532932, 0.0144902, 53.2932],
// CHECK-NEXT:  [0.00061043, 3.62938, 0.0610429, 362.938]]
