"""Pointwise ops: elementwise ``add`` / ``sub`` (alpha 1), ``mul`` / ``div`` / ``maximum`` /
``minimum`` of two tensors as ``hir.binary``, and inside kernel segments every op tagged
``torch.Tag.pointwise``, ``masked_fill`` and the ops that keep their operand's placement
(``contiguous``, ``clone``, casts). DTensor's pointwise rule (``_pointwise_ops.py``):
operands split along one (right-aligned) axis, replicated ones broadcast along it."""

import torch
from torch_mlir.dialects import torch as T

from hir.dialect import BinaryOp
from hir.frontend.strategies.registry import (
    ComputeSpec,
    NoRule,
    OpCall,
    OpPlacement,
    Split,
    register_compute_form,
    register_op_strategy,
    register_tag_strategy,
    same_dtype,
)
from hir.frontend.torch_ir import constant_value

_BINARY = {
    T.AtenAddTensorOp.OPERATION_NAME: "add",
    T.AtenSubTensorOp.OPERATION_NAME: "sub",
    T.AtenMulTensorOp.OPERATION_NAME: "mul",
    T.AtenDivTensorOp.OPERATION_NAME: "div",
    T.AtenMaximumOp.OPERATION_NAME: "max",
    T.AtenMinimumOp.OPERATION_NAME: "min",
}


@register_compute_form(*_BINARY)
def binary_form(op) -> ComputeSpec | None:
    operands = list(op.operands)
    a, b = operands[:2]
    if len(operands) == 3 and constant_value(operands[2]) != 1:
        return None
    if same_dtype(op, [a, b]):
        return ComputeSpec(BinaryOp, [a, b], {"kind": _BINARY[op.name]}, [])
    return None


@register_op_strategy(
    BinaryOp,
    doc="equal placements stay; a split operand with a replicated one that broadcasts "
    "along the split axis stays split; else the replicated side is split alike",
)
def binary_strategy(call: OpCall) -> OpPlacement:
    out_rank = call.result_rank
    shapes = [call.shape(v) for v, _ in call.operands]
    to_out = [None if s is None else s + out_rank - len(shape) for s, shape in zip(call.splits, shapes)]
    if to_out[0] == to_out[1]:
        return OpPlacement(call.splits, to_out[0])
    if None in to_out:
        k = to_out[0] if to_out[0] is not None else to_out[1]
        assert k is not None, "the two splits differ: one of them is not None"
        inputs = []
        for shape in shapes:
            own = k - (out_rank - len(shape))
            inputs.append(None if own < 0 or shape[own] == 1 else own)
        return OpPlacement(tuple(inputs), k)
    raise NoRule(f"operands split along different axes ({to_out[0]}, {to_out[1]})")


@register_tag_strategy(
    torch.Tag.pointwise,
    doc="operands split along the same (right-aligned) axis; a replicated one that does not "
    "broadcast along it is read as its slice (as hir.binary's replicated side)",
)
def pointwise_strategy(call: OpCall) -> OpPlacement:
    rank = call.result_rank
    aligned = {s + rank - call.rank(v) for v, s in call.operands if s is not None}
    if not aligned:
        return call.local(None)
    if len(aligned) > 1:
        raise NoRule(f"{call.op.name}: operands split along different axes")
    (axis,) = aligned
    # (an add of mixed dtypes, a bf16 autocast product onto a float32 residual stream, is this op, not hir.binary)
    owns = [axis - (rank - call.rank(v)) for v, _ in call.operands]
    return OpPlacement(
        tuple(o if o >= 0 and call.shape(v)[o] != 1 else None for (v, _), o in zip(call.operands, owns)), axis
    )


register_op_strategy(T.AtenMaskedFillTensorOp, doc="as a pointwise op (a boolean mask split alike or broadcast)")(
    pointwise_strategy
)


@register_op_strategy(
    T.AtenContiguousOp,
    T.AtenCloneOp,
    T.AtenDetachOp,
    T.AtenAliasOp,
    T.Aten_ToCopyOp,
    T.AtenToDtypeOp,
    T.AtenTypeAsOp,
    T.AtenDropoutOp,
    T.AtenLiftFreshCopyOp,
    doc="keeps its (first) operand's split",
)
def first_operand_strategy(call: OpCall) -> OpPlacement:
    return call.local(call.operands[0][1])


def check_broadcasts(call: OpCall, operands: list, axis: Split) -> None:
    """Extra operands (masks, biases) must be split alike along ``axis`` or broadcast it."""
    rank = call.result_rank
    for v, s in operands:
        own = None if axis is None else axis - (rank - call.rank(v))
        if s != own and not (s is None and (own is None or own < 0 or call.shape(v)[own] == 1)):
            raise NoRule(f"{call.op.name}: an extra operand is placed apart from the split axis")
