// Round trip of the optimizer ops (optim group): parse, verify, print, and parse the printed
// form again.
// RUN: hir-opt %s | hir-opt | FileCheck %s

// CHECK-LABEL: func.func @adamw
func.func @adamw(%w: memref<16x8xf32>, %b: memref<16xf32>, %gw: memref<16x8xf32>, %gb: memref<16xf32>,
                 %mw: memref<16x8xf32>, %mb: memref<16xf32>, %vw: memref<16x8xf32>, %vb: memref<16xf32>,
                 %sw: memref<f32>, %sb: memref<f32>, %lr: memref<f64>, %beta1: memref<f64>, %beta2: memref<f64>,
                 %eps: memref<f64>, %decay: memref<f64>) {
  // CHECK-COUNT-8: memref.cast %{{.*}} : memref<{{.*}}xf32> to memref<*xf32>
  %pw = memref.cast %w : memref<16x8xf32> to memref<*xf32>
  %pb = memref.cast %b : memref<16xf32> to memref<*xf32>
  %gw_ = memref.cast %gw : memref<16x8xf32> to memref<*xf32>
  %gb_ = memref.cast %gb : memref<16xf32> to memref<*xf32>
  %mw_ = memref.cast %mw : memref<16x8xf32> to memref<*xf32>
  %mb_ = memref.cast %mb : memref<16xf32> to memref<*xf32>
  %vw_ = memref.cast %vw : memref<16x8xf32> to memref<*xf32>
  %vb_ = memref.cast %vb : memref<16xf32> to memref<*xf32>
  // A param group of two parameters, AdamW with torch's fused kernel.
  // CHECK: "hir.adam_update"(%{{.*}}) {kernel = "fused", kind = "adamw", operandSegmentSizes = array<i32: 2, 2, 2, 2, 2, 1, 1, 1, 1, 1>}
  "hir.adam_update"(%pw, %pb, %gw_, %gb_, %mw_, %mb_, %vw_, %vb_, %sw, %sb, %lr, %beta1, %beta2, %eps, %decay) {operandSegmentSizes = array<i32: 2, 2, 2, 2, 2, 1, 1, 1, 1, 1>, kind = "adamw", kernel = "fused"} : (memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<f32>, memref<f32>, memref<f64>, memref<f64>, memref<f64>, memref<f64>, memref<f64>) -> ()
  // Adam (L2 weight decay), one parameter, the foreach kernels.
  // CHECK: "hir.adam_update"(%{{.*}}) {kernel = "foreach", kind = "adam", operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1, 1, 1>}
  "hir.adam_update"(%pb, %gb_, %mb_, %vb_, %sb, %lr, %beta1, %beta2, %eps, %decay) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1, 1, 1>, kind = "adam", kernel = "foreach"} : (memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<f32>, memref<f64>, memref<f64>, memref<f64>, memref<f64>, memref<f64>) -> ()
  return
}
