// Round trip of the optimizer ops (optim group): parse, verify, print, and parse the printed
// form again.
// RUN: hir-opt %s | hir-opt | FileCheck %s

// CHECK-LABEL: func.func @adamw
func.func @adamw(%w: memref<16x8xf32>, %b: memref<16xf32>, %gw: memref<16x8xf32>, %gb: memref<16xf32>,
                 %mw: memref<16x8xf32>, %mb: memref<16xf32>, %vw: memref<16x8xf32>, %vb: memref<16xf32>,
                 %sw: memref<f32>, %sb: memref<f32>, %lr: memref<f64>, %lr32: memref<f32>) {
  // CHECK-COUNT-8: memref.cast %{{.*}} : memref<{{.*}}xf32> to memref<*xf32>
  %pw = memref.cast %w : memref<16x8xf32> to memref<*xf32>
  %pb = memref.cast %b : memref<16xf32> to memref<*xf32>
  %gw_ = memref.cast %gw : memref<16x8xf32> to memref<*xf32>
  %gb_ = memref.cast %gb : memref<16xf32> to memref<*xf32>
  %mw_ = memref.cast %mw : memref<16x8xf32> to memref<*xf32>
  %mb_ = memref.cast %mb : memref<16xf32> to memref<*xf32>
  %vw_ = memref.cast %vw : memref<16x8xf32> to memref<*xf32>
  %vb_ = memref.cast %vb : memref<16xf32> to memref<*xf32>
  // A param group of two parameters, AdamW with torch's fused kernel: lr an operand (read on
  // the device), the other hyper-parameters f64 attributes.
  // CHECK: "hir.adam_update"(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %arg8, %arg9, %arg10)
  // CHECK-SAME: {beta1 = 9.000000e-01 : f64, beta2 = 0.99899999999999999 : f64, eps = 1.000000e-08 : f64, kernel = "fused", kind = "adamw", operandSegmentSizes = array<i32: 2, 2, 2, 2, 2, 1>, weight_decay = 1.000000e-02 : f64}
  // CHECK-SAME: memref<f32>, memref<f32>, memref<f64>) -> ()
  "hir.adam_update"(%pw, %pb, %gw_, %gb_, %mw_, %mb_, %vw_, %vb_, %sw, %sb, %lr) {operandSegmentSizes = array<i32: 2, 2, 2, 2, 2, 1>, kind = "adamw", kernel = "fused", beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 0.01 : f64} : (memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<f32>, memref<f32>, memref<f64>) -> ()
  // Adam (L2 weight decay), one parameter, the foreach kernels, a float32 lr, no weight decay.
  // CHECK: "hir.adam_update"(%{{.*}}, %arg9, %arg11) {beta1 = 8.000000e-01 : f64, beta2 = 0.94999999999999996 : f64, eps = 9.9999999999999995E-7 : f64, kernel = "foreach", kind = "adam", operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>, weight_decay = 0.000000e+00 : f64}
  // CHECK-SAME: (memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<f32>, memref<f32>) -> ()
  "hir.adam_update"(%pb, %gb_, %mb_, %vb_, %sb, %lr32) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>, kind = "adam", kernel = "foreach", beta1 = 0.8 : f64, beta2 = 0.95 : f64, eps = 1.0e-06 : f64, weight_decay = 0.0 : f64} : (memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<f32>, memref<f32>) -> ()
  return
}
