"""Reading and writing the ``torch``-dialect IR the FX importer makes: tensor types, constant
operands, the ops cloned into every kernel segment that uses them (constants, sizes), and
the buffer type of a tensor. Shared by the placement strategies (which read ops), the placer
(which decides) and the partitioner (which builds)."""

import re
from collections.abc import Sequence
from typing import Any

from torch_mlir import ir
from torch_mlir.dialects import torch as torch_dialect

from hir.dialect.base import DYNAMIC
from hir.frontend.dynamic import is_size

_VTENSOR = re.compile(r"^!torch\.vtensor<\[(?P<shape>[^\]]*)\],(?P<dtype>[a-z0-9]+)>$")
_ELEMENT = {"si64": "i64", "si32": "i32", "si16": "i16", "si8": "i8", "ui8": "ui8"}
CONSTANT_PREFIX = "torch.constant."  # torch_dialect.Constant*Op, folded at plan time
LIST_CONSTRUCT = torch_dialect.PrimListConstructOp.OPERATION_NAME
_NONE = torch_dialect.ConstantNoneOp.OPERATION_NAME


def tensor_info(t: ir.Type) -> tuple[list[int], str] | None:
    """(shape, element type name) of a ranked ``!torch.vtensor`` (``DYNAMIC`` for ``?``), else None."""
    m = _VTENSOR.match(str(t))
    if not m:
        return None
    shape = [DYNAMIC if d == "?" else int(d) for d in m["shape"].split(",")] if m["shape"] else []
    return shape, m["dtype"]


def ranked_info(value: ir.Value) -> tuple[list[int], str]:
    """:func:`tensor_info` of ``value``, which must be a ranked ``!torch.vtensor`` (raises
    ValueError otherwise)."""
    info = tensor_info(value.type)
    if info is None:
        raise ValueError(f"{value.get_name()} is not a ranked tensor: {value.type}")
    return info


def shape_of(value: ir.Value) -> list[int]:
    """The shape of a ranked ``!torch.vtensor`` value (``DYNAMIC`` for ``?``)."""
    return ranked_info(value)[0]


def is_tensor(value: ir.Value) -> bool:
    """Whether ``value`` is a ``!torch.vtensor`` (decided once per type id: one C++ type
    class prints one way, so the type is printed once, not per value)."""
    t = value.type
    known = _TENSOR_TYPEIDS.get(t.typeid)
    if known is None:
        known = _TENSOR_TYPEIDS[t.typeid] = str(t).startswith("!torch.vtensor")
    return known


_TENSOR_TYPEIDS: dict = {}  # type id -> whether its types are !torch.vtensor


def rank_of(value: ir.Value) -> int:
    return len(shape_of(value))


def vtensor(shape: Sequence[int], dtype: str) -> ir.Type:
    return ir.Type.parse(f"!torch.vtensor<[{','.join('?' if d == DYNAMIC else str(d) for d in shape)}],{dtype}>")


def buffer_type(t: ir.Type, memory_space: ir.Attribute | None) -> ir.MemRefType:
    """The memref holding a tensor of type ``t`` (placed by ``memory_space``)."""
    info = tensor_info(t)
    if info is None:
        raise ValueError(f"{t} is not a statically shaped tensor")
    shape, dtype = info
    element = ir.Type.parse(_ELEMENT.get(dtype, dtype))
    return ir.MemRefType.get(shape, element, memory_space=memory_space)


def owner(value: ir.Value) -> ir.Operation:
    op = value.owner
    if isinstance(op, ir.Block):
        raise ValueError(f"{value.get_name()} is a block argument, not an op's result")
    return op if isinstance(op, ir.Operation) else op.operation


def user(use: ir.OpOperand) -> ir.Operation:
    op = use.owner
    return op if isinstance(op, ir.Operation) else op.operation


def constant_value(value: ir.Value) -> Any:
    """The Python value of a ``torch.constant.*`` / list-of-constants operand (an int, float,
    bool, str, None or a list of them); raises ValueError when it is not one."""
    if isinstance(value.owner, ir.Block):
        raise ValueError(f"{value.get_name()} is a function argument")
    op = owner(value)
    name = op.name
    if name == _NONE:
        return None
    if name.startswith(CONSTANT_PREFIX):
        return op.attributes["value"].value
    if name == LIST_CONSTRUCT:
        return [constant_value(v) for v in op.operands]
    raise ValueError(f"{value.get_name()} is not a constant")


def constant_value_or(value: ir.Value, default: Any) -> Any:
    try:
        return constant_value(value)
    except ValueError:
        return default


def torch_int(value: int) -> ir.Value:
    """A ``torch.constant.int`` at the current insertion point and location."""
    i64 = ir.IntegerType.get_signless(64)
    return ir.Operation.create(
        torch_dialect.ConstantIntOp.OPERATION_NAME,
        results=[ir.Type.parse("!torch.int")],
        attributes={"value": ir.IntegerAttr.get(i64, value)},
    ).result


def torch_float(value: float) -> ir.Value:
    """A ``torch.constant.float`` at the current insertion point and location."""
    f64 = ir.F64Type.get()
    return ir.Operation.create(
        torch_dialect.ConstantFloatOp.OPERATION_NAME,
        results=[ir.Type.parse("!torch.float")],
        attributes={"value": ir.FloatAttr.get(f64, value)},
    ).result


def torch_op(name: str, operands: list, result: ir.Type) -> ir.Value:
    """A torch op ``name`` with one result at the current insertion point and location."""
    return ir.Operation.create(name, results=[result], operands=operands).result


def is_constant(op: ir.Operation) -> bool:
    """A ``torch.constant.*`` or a list of constants (what :func:`constant_value` reads),
    checked without its error, whose value names number the whole function: quadratic over
    a model's lists (a second of a 1B Llama's import)."""
    if op.name.startswith(CONSTANT_PREFIX):
        return True
    return op.name == LIST_CONSTRUCT and all(
        not isinstance(v.owner, ir.Block) and is_constant(owner(v)) for v in op.operands
    )


def is_cloned(op: ir.Operation) -> bool:
    """Whether ``op`` is cloned into each segment that uses it (a constant or a size)."""
    return is_constant(op) or is_size(op)


def is_cloned_value(value: ir.Value) -> bool:
    return not isinstance(value.owner, ir.Block) and is_cloned(owner(value))


def hoistable_with_parameters(op: ir.Operation, parameters: set) -> bool:
    """Whether ``op``, which reads only ``parameters``, may be hoisted with them: its results
    are tensors, or (lists) their users read only parameters (a list crosses no segment
    boundary)."""
    if all(is_tensor(r) for r in op.results):
        return True
    own = set(op.results)
    return all(
        is_cloned_value(v) or v in parameters or v in own
        for r in op.results
        for use in r.uses
        for v in user(use).operands
    )


_DIM_FORMS = (torch_dialect.AtenMeanDimOp.OPERATION_NAME, torch_dialect.AtenSumDimIntListOp.OPERATION_NAME)


def reduced_dims(op: ir.Operation, rank: int) -> list[int]:
    """The dims a ``sum`` / ``mean`` reduces: its dim list's (the ``.dim`` forms), every dim
    for the default forms (whose operand 1 is a dtype) or an empty list."""
    dims = constant_value(op.operands[1]) if op.name in _DIM_FORMS else None
    return list(range(rank)) if not dims else sorted({d % rank for d in ([dims] if isinstance(dims, int) else dims)})
