from torch_mlir._mlir_libs._mlir.ir import *
from collections.abc import Callable
from typing import Any

def register_attribute_builder(
    kind: str, replace: bool = False, allow_existing: bool = False
) -> Callable[[Callable[..., Any]], Callable[..., Any]]: ...
