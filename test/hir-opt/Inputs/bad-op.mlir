func.func @bad(%a: memref<4xf32>, %b: memref<5xf32>) {
  "hir.set"(%a, %b) : (memref<4xf32>, memref<5xf32>) -> ()
  return
}
