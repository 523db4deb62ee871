func.func @first() {
  return
}

// -----

func.func @second(%a: memref<4xf32>, %b: memref<5xf32>) {
  "hir.set"(%a, %b) : (memref<4xf32>, memref<5xf32>) -> ()
  return
}

// -----

func.func @third() {
  return
}
