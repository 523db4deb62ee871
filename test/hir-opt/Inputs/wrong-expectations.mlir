func.func @f(%a: memref<4xf32>, %b: memref<5xf32>) {
  // expected-error @+1 {{this message is not produced}}
  "hir.set"(%a, %b) : (memref<4xf32>, memref<5xf32>) -> ()
  return
}

// -----

func.func @g() {
  // expected-error @+1 {{never}}
  return
}
