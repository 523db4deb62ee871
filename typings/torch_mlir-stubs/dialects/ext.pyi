# torch_mlir.dialects.ext (Python-defined dialects on IRDL), the part hir uses, written by hand
# (scripts/mlir_stubs.py says why). A subclass's annotated fields become its operands, results,
# regions and attributes; ``Operand[T]`` / ``Result[T]`` read as ``ir.Value[T]`` / ``ir.OpResult[T]``.
from collections.abc import Callable
from typing import Any, ClassVar

from typing_extensions import Self

from torch_mlir import ir

Operand = ir.Value
Result = ir.OpResult
Region = ir.Region

class DialectAlreadyLoadedError(RuntimeError): ...

# Field specifiers: the default of an annotated field (``res: Result[T] = infer_result()``).
def result(*, default_factory: Callable[[], Any] | None = None, kw_only: bool = False) -> Any: ...
def infer_result() -> Any: ...
def operand(*, kw_only: bool = False) -> Any: ...
def attribute(*, default_factory: Callable[[], Any] | None = None, kw_only: bool = False) -> Any: ...

class Operation(ir.OpView):
    OPERATION_NAME: ClassVar[str]
    # Generated per subclass: the builder takes its operand, result and attribute fields.
    def __init__(self, *args: Any, **kwargs: Any) -> None: ...
    def __init_subclass__(
        cls, *, name: str | None = None, traits: list[type] | None = None, dialect: type | None = None, **kwargs: Any
    ) -> None: ...

class Type(ir.DynamicType):
    type_name: ClassVar[str]
    def __init_subclass__(cls, *, name: str | None = None, dialect: type | None = None, **kwargs: Any) -> None: ...
    @classmethod
    def get(cls, *args: Any, context: ir.Context | None = None) -> Self: ...

class Attribute(ir.DynamicAttr):
    attr_name: ClassVar[str]
    def __init_subclass__(cls, *, name: str | None = None, dialect: type | None = None, **kwargs: Any) -> None: ...
    @classmethod
    def get(cls, *args: Any, context: ir.Context | None = None) -> Self: ...

_Operation = Operation
_Type = Type
_Attribute = Attribute

class Dialect(ir.Dialect):
    name: ClassVar[str]
    DIALECT_NAMESPACE: ClassVar[str]
    operations: ClassVar[list[type[_Operation]]]
    types: ClassVar[list[type[_Type]]]
    attributes: ClassVar[list[type[_Attribute]]]
    _mlir_module: ClassVar[ir.Module]  # its IRDL definition, set by load()
    # Made per dialect by __init_subclass__: the bases of its operations, types and attributes.
    class Operation(_Operation): ...
    class Type(_Type): ...
    class Attribute(_Attribute): ...

    def __init_subclass__(cls, name: str, **kwargs: Any) -> None: ...
    @classmethod
    def load(cls) -> None: ...

class Pure:
    """Always speculatable operation that does not touch memory."""
