// One case per verifier rule of the optimizer ops (optim group); each must fail with its
// message at the op's location.
// RUN: hir-opt %s --split-input-file --verify-diagnostics

// an unknown kind
func.func @kind(%w: memref<*xf32>, %s: memref<f32>, %h: memref<f64>) {
  // expected-error @+1 {{attribute 'kind' is "lamb"; expected one of adam, adamw}}
  "hir.adam_update"(%w, %w, %w, %w, %s, %h) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>, kind = "lamb", kernel = "fused", beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 0.0 : f64}
      : (memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<f32>, memref<f64>) -> ()
  return
}

// -----

// an unknown kernel
func.func @kernel(%w: memref<*xf32>, %s: memref<f32>, %h: memref<f64>) {
  // expected-error @+1 {{attribute 'kernel' is "triton"; expected one of fused, foreach, single}}
  "hir.adam_update"(%w, %w, %w, %w, %s, %h) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>, kind = "adam", kernel = "triton", beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 0.0 : f64}
      : (memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<f32>, memref<f64>) -> ()
  return
}

// -----

// no parameter
func.func @empty(%h: memref<f64>) {
  // expected-error @+1 {{params must not be empty}}
  "hir.adam_update"(%h) {operandSegmentSizes = array<i32: 0, 0, 0, 0, 0, 1>, kind = "adam", kernel = "fused", beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 0.0 : f64}
      : (memref<f64>) -> ()
  return
}

// -----

// a list shorter than params
func.func @lengths(%w: memref<*xf32>, %s: memref<f32>, %h: memref<f64>) {
  // expected-error @+1 {{steps has 1 element(s), params 2: one per parameter}}
  "hir.adam_update"(%w, %w, %w, %w, %w, %w, %w, %w, %s, %h) {operandSegmentSizes = array<i32: 2, 2, 2, 2, 1, 1>, kind = "adam", kernel = "fused", beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 0.0 : f64}
      : (memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<f32>, memref<f64>) -> ()
  return
}

// -----

// moments of another element type than the parameters
func.func @dtypes(%w: memref<*xf32>, %m: memref<*xbf16>, %s: memref<f32>, %h: memref<f64>) {
  // expected-error @+1 {{exp_avgs hold bf16, params f32: one element type}}
  "hir.adam_update"(%w, %w, %m, %w, %s, %h) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>, kind = "adam", kernel = "fused", beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 0.0 : f64}
      : (memref<*xf32>, memref<*xf32>, memref<*xbf16>, memref<*xf32>, memref<f32>, memref<f64>) -> ()
  return
}

// -----

// a gradient of another shape than its parameter
func.func @shapes(%w: memref<16x8xf32>, %g: memref<8x16xf32>, %s: memref<f32>, %h: memref<f64>) {
  %pw = memref.cast %w : memref<16x8xf32> to memref<*xf32>
  %pg = memref.cast %g : memref<8x16xf32> to memref<*xf32>
  // expected-error @+1 {{parameter 0: shapes differ: params [16, 8], grads [8, 16]}}
  "hir.adam_update"(%pw, %pg, %pw, %pw, %s, %h) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>, kind = "adam", kernel = "fused", beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 0.0 : f64}
      : (memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<f32>, memref<f64>) -> ()
  return
}

// -----

// a step count that is not 0-d
func.func @steps(%w: memref<*xf32>, %s: memref<1xf32>, %h: memref<f64>) {
  // expected-error @+1 {{steps must be 0-d float buffers, got memref<1xf32>}}
  "hir.adam_update"(%w, %w, %w, %w, %s, %h) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>, kind = "adam", kernel = "fused", beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 0.0 : f64}
      : (memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<1xf32>, memref<f64>) -> ()
  return
}

// -----

// an lr that is not a 0-d float
func.func @lr(%w: memref<*xf32>, %s: memref<f32>, %lr: memref<2xf64>) {
  // expected-error @+1 {{lr must be a 0-d float buffer, got memref<2xf64>}}
  "hir.adam_update"(%w, %w, %w, %w, %s, %lr) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>, kind = "adam", kernel = "fused", beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 0.0 : f64}
      : (memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<f32>, memref<2xf64>) -> ()
  return
}

// -----

// a hyper-parameter attribute missing
func.func @missing(%w: memref<*xf32>, %s: memref<f32>, %h: memref<f64>) {
  // expected-error @+1 {{requires float attribute 'eps' (N : f64)}}
  "hir.adam_update"(%w, %w, %w, %w, %s, %h) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>, kind = "adam", kernel = "fused", beta1 = 0.9 : f64, beta2 = 0.999 : f64, weight_decay = 0.0 : f64}
      : (memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<f32>, memref<f64>) -> ()
  return
}

// -----

// a hyper-parameter attribute of another float type
func.func @width(%w: memref<*xf32>, %s: memref<f32>, %h: memref<f64>) {
  // expected-error @+1 {{attribute 'beta2' must be an f64 float (N : f64), got 9.990000e-01 : f32}}
  "hir.adam_update"(%w, %w, %w, %w, %s, %h) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>, kind = "adam", kernel = "fused", beta1 = 0.9 : f64, beta2 = 0.999 : f32, eps = 1.0e-08 : f64, weight_decay = 0.0 : f64}
      : (memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<f32>, memref<f64>) -> ()
  return
}

// -----

// a beta out of [0, 1)
func.func @beta(%w: memref<*xf32>, %s: memref<f32>, %h: memref<f64>) {
  // expected-error @+1 {{beta1 is 1.0; expected 0 <= beta1 < 1}}
  "hir.adam_update"(%w, %w, %w, %w, %s, %h) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>, kind = "adam", kernel = "fused", beta1 = 1.0 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = 0.0 : f64}
      : (memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<f32>, memref<f64>) -> ()
  return
}

// -----

// a negative weight decay
func.func @decay(%w: memref<*xf32>, %s: memref<f32>, %h: memref<f64>) {
  // expected-error @+1 {{weight_decay is -0.1; expected >= 0}}
  "hir.adam_update"(%w, %w, %w, %w, %s, %h) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>, kind = "adam", kernel = "fused", beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-08 : f64, weight_decay = -0.1 : f64}
      : (memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<f32>, memref<f64>) -> ()
  return
}
