from torch_mlir._mlir_libs._mlir.rewrite import *
