from collections.abc import Callable
import enum
from typing import TypeVar

import torch_mlir._mlir_libs._mlir.ir

from torch_mlir._mlir_libs._mlir import ir as ir, passmanager as passmanager, rewrite as rewrite

T = TypeVar("T")

U = TypeVar("U")

class OnExplicitAction(enum.Enum):
    USE_EXPLICIT = 0

    USE_TRACEBACK = 1

class CurrentLocAction(enum.Enum):
    FALLBACK = 0

    NAMELOC_WRAP = 1

globals: _Globals = ...

def register_dialect(dialect_class: type) -> type: ...
def register_operation(dialect_class: type, *, replace: bool = False) -> Callable[[type[T]], type[T]]: ...
def register_op_adaptor(op_class: type, *, replace: bool = False) -> Callable[[type[T]], type[T]]: ...
def register_type_caster(
    typeid: torch_mlir._mlir_libs._mlir.ir.TypeID, *, replace: bool = False
) -> Callable[[Callable[[T], U]], Callable[[T], U]]: ...
def register_value_caster(
    typeid: torch_mlir._mlir_libs._mlir.ir.TypeID, *, replace: bool = False
) -> Callable[[Callable[[T], U]], Callable[[T], U]]: ...
