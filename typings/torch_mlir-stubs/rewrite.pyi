from torch_mlir._mlir_libs._mlir.rewrite import *  # noqa: F403 - the native module's names
