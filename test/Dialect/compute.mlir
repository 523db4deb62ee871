// Round trip of every compute (and kernel segment) op (compute group): parse, verify, print, and parse the printed
// form again.
// RUN: hir-opt %s | hir-opt | FileCheck %s

// CHECK-LABEL: func.func @compute
func.func @compute(%a: memref<8x16xf32>, %b: memref<16x4xf32>, %c: memref<8x4xf32>, %w: memref<4x16xf32>, %bias: memref<4xf32>, %r: memref<8xf32>, %row: memref<4xf32>) {
  // CHECK: "hir.set"(%{{.*}}, %{{.*}}) {stream_axis = 0 : i64} : (memref<8x4xf32>, memref<8x4xf32>) -> ()
  "hir.set"(%c, %c) {stream_axis = 0 : i64} : (memref<8x4xf32>, memref<8x4xf32>) -> ()
  // CHECK: "hir.binary"(%{{.*}}, %{{.*}}, %{{.*}}) {kind = "add"}
  "hir.binary"(%c, %c, %c) {kind = "add"} : (memref<8x4xf32>, memref<8x4xf32>, memref<8x4xf32>) -> ()
  // Broadcasting: [4] against [8, 4].
  // CHECK: "hir.binary"(%{{.*}}, %{{.*}}, %{{.*}}) {kind = "div"}
  "hir.binary"(%c, %row, %c) {kind = "div"} : (memref<8x4xf32>, memref<4xf32>, memref<8x4xf32>) -> ()
  // CHECK: "hir.reduction"(%{{.*}}, %{{.*}}) {axes = array<i64: 1>, kind = "sum"}
  "hir.reduction"(%c, %r) {axes = array<i64: 1>, kind = "sum"} : (memref<8x4xf32>, memref<8xf32>) -> ()
  // CHECK: "hir.matmul"(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<8x16xf32>, memref<16x4xf32>, memref<8x4xf32>) -> ()
  "hir.matmul"(%a, %b, %c) : (memref<8x16xf32>, memref<16x4xf32>, memref<8x4xf32>) -> ()
  // Accumulating: c += a @ b (the GEMM epilogue adds).
  // CHECK: "hir.matmul"(%{{.*}}, %{{.*}}, %{{.*}}) {accumulate} : (memref<8x16xf32>, memref<16x4xf32>, memref<8x4xf32>) -> ()
  "hir.matmul"(%a, %b, %c) {accumulate} : (memref<8x16xf32>, memref<16x4xf32>, memref<8x4xf32>) -> ()
  // CHECK: "hir.linear"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {operandSegmentSizes = array<i32: 1, 1, 1, 1>}
  "hir.linear"(%a, %w, %c, %bias) {operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (memref<8x16xf32>, memref<4x16xf32>, memref<8x4xf32>, memref<4xf32>) -> ()
  // CHECK: "hir.linear"(%{{.*}}, %{{.*}}, %{{.*}}) {operandSegmentSizes = array<i32: 1, 1, 1, 0>}
  "hir.linear"(%a, %w, %c) {operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (memref<8x16xf32>, memref<4x16xf32>, memref<8x4xf32>) -> ()
  // CHECK: memref.alloc() : memref<8x4xf32>
  %t = memref.alloc() : memref<8x4xf32>
  // CHECK: memref.dealloc
  memref.dealloc %t : memref<8x4xf32>
  // Kernel segment: a call of a func marked hir.kernel.
  // CHECK: call @segment(%{{.*}}, %{{.*}}) : (memref<8x4xf32>, memref<8x4xf32>) -> ()
  func.call @segment(%c, %c) : (memref<8x4xf32>, memref<8x4xf32>) -> ()
  return
}

// CHECK-LABEL: func.func private @segment
// CHECK-SAME: attributes {hir.kernel}
func.func private @segment(%x: memref<8x4xf32>, %y: memref<8x4xf32>) attributes {hir.kernel} {
  "hir.binary"(%x, %x, %y) {kind = "mul"} : (memref<8x4xf32>, memref<8x4xf32>, memref<8x4xf32>) -> ()
  return
}

// Vector operands (stream slices of matmul M/N and linear N), as torch.matmul / linear.
// CHECK-LABEL: func.func @vectors
func.func @vectors(%k: memref<16xf32>, %b: memref<16x4xf32>, %n: memref<4xf32>, %a: memref<8x16xf32>, %m: memref<8xf32>, %bias: memref<f32>) {
  // CHECK: "hir.matmul"(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<16xf32>, memref<16x4xf32>, memref<4xf32>) -> ()
  "hir.matmul"(%k, %b, %n) : (memref<16xf32>, memref<16x4xf32>, memref<4xf32>) -> ()
  // CHECK: "hir.matmul"(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<8x16xf32>, memref<16xf32>, memref<8xf32>) -> ()
  "hir.matmul"(%a, %k, %m) : (memref<8x16xf32>, memref<16xf32>, memref<8xf32>) -> ()
  // CHECK: "hir.linear"{{.*}} : (memref<8x16xf32>, memref<16xf32>, memref<8xf32>, memref<f32>) -> ()
  "hir.linear"(%a, %k, %m, %bias) {operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (memref<8x16xf32>, memref<16xf32>, memref<8xf32>, memref<f32>) -> ()
  return
}
