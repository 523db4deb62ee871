"""What op verifiers (``check`` methods) call: :func:`fail` (a :class:`VerifyError`, reported
at the op's location), the checked readers of attributes and operand types, and the checks
of axes and element types."""

from collections.abc import Sequence
from typing import Any, Literal, NoReturn, overload

from torch_mlir import ir


class VerifyError(ValueError):
    """Raised inside ``check`` methods; turned into an error at the op's location."""


def fail(msg: str) -> NoReturn:
    raise VerifyError(msg)


def memref_type(value_or_type: Any, what: str) -> ir.MemRefType:
    t = value_or_type.type if isinstance(value_or_type, ir.Value) else value_or_type
    if not isinstance(t, ir.MemRefType):
        try:
            t = ir.MemRefType(t)
        except (ValueError, TypeError):
            fail(f"{what} must be a ranked memref, got {t}")
    return t


def i64_value(attr: ir.Attribute, name: str) -> int:
    """The value of ``attr`` (attribute ``name``), which must be a signless 64-bit integer
    (``N : i64``, as every hir integer attribute is documented); else :func:`fail`. Another
    width would be read as a number of another range (``true`` as i1 is -1) and is not what
    the passes write back."""
    integer = attr
    if not isinstance(integer, ir.IntegerAttr):
        try:
            integer = ir.IntegerAttr(attr)
        except (ValueError, TypeError):
            fail(f"attribute '{name}' must be an integer (N : i64), got {attr}")
    t = integer.type
    if not (isinstance(t, ir.IntegerType) and t.width == 64 and t.is_signless):
        fail(f"attribute '{name}' must be a 64-bit signless integer (N : i64), got {integer.value} : {t}")
    return integer.value


# Checked readers for verifiers: a missing or mistyped attribute is a verifier error.
@overload
def int_attr(op: ir.OpView, name: str, required: Literal[True] = True) -> int: ...
@overload
def int_attr(op: ir.OpView, name: str, required: bool) -> int | None: ...
def int_attr(op: ir.OpView, name: str, required: bool = True) -> int | None:
    attrs = op.operation.attributes
    if name not in attrs:
        if required:
            fail(f"requires integer attribute '{name}'")
        return None
    return i64_value(attrs[name], name)


def str_attr(op: ir.OpView, name: str, choices: Sequence[str]) -> str:
    attrs = op.operation.attributes
    if name not in attrs:
        fail(f"requires string attribute '{name}' (one of {', '.join(choices)})")
    try:
        value = ir.StringAttr(attrs[name]).value
    except (ValueError, TypeError):
        fail(f"attribute '{name}' must be a string, got {attrs[name]}")
    if value not in choices:
        fail(f"attribute '{name}' is \"{value}\"; expected one of {', '.join(choices)}")
    return value


def float_attr(op: ir.OpView, name: str) -> float:
    attrs = op.operation.attributes
    if name not in attrs:
        fail(f"requires float attribute '{name}' (N : f64)")
    try:
        value = ir.FloatAttr(attrs[name])
    except (ValueError, TypeError):
        fail(f"attribute '{name}' must be a float (N : f64), got {attrs[name]}")
    if not isinstance(value.type, ir.F64Type):
        fail(f"attribute '{name}' must be an f64 float (N : f64), got {value}")
    return value.value


def i64_array_attr(op: ir.OpView, name: str) -> list[int]:
    attrs = op.operation.attributes
    if name not in attrs:
        fail(f"requires attribute '{name}' = array<i64: ...>")
    try:
        return list(ir.DenseI64ArrayAttr(attrs[name]))
    except (ValueError, TypeError):
        fail(f"attribute '{name}' must be array<i64: ...>, got {attrs[name]}")


def check_axis(axis: int, rank: int, what: str) -> None:
    if not 0 <= axis < rank:
        fail(f"{what} {axis} is out of range for rank {rank}")


def check_same_element_type(a: ir.MemRefType, b: ir.MemRefType, what_a: str, what_b: str) -> None:
    if a.element_type != b.element_type:
        fail(f"element type mismatch: {what_a} is {a.element_type}, {what_b} is {b.element_type}")
