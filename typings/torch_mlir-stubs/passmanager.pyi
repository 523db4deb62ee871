from torch_mlir._mlir_libs._mlir.passmanager import *
