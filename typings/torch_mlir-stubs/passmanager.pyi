from torch_mlir._mlir_libs._mlir.passmanager import *  # noqa: F403 - the native module's names
