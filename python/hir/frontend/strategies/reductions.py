"""Reductions and normalizations: ``sum`` / ``amax`` / ``amin`` over constant dims without
keepdim as ``hir.reduction``; inside kernel segments ``mean`` / ``sum`` / ``amax`` / ``amin``
/ ``max.dim``, ``softmax`` / ``log_softmax`` and ``layer_norm`` / ``rms_norm``. DTensor's
rule (``_math_ops.py``): a reduction off the split dim stays local; over the split dim it is
a partial result (an allreduce, for ``hir.reduction`` over the outermost split dim; for a
``mean``, each device's sum divided by the whole count)."""

from math import prod

from torch_mlir import ir
from torch_mlir.dialects import torch as T

from hir.dialect import ReductionOp
from hir.dialect.base import DYNAMIC
from hir.frontend.strategies.registry import (
    PARTIAL,
    ComputeSpec,
    NoRule,
    OpCall,
    OpPlacement,
    constant_dims,
    register_compute_form,
    register_op_strategy,
    same_dtype,
)
from hir.frontend.torch_ir import constant_value, rank_of, reduced_dims, shape_of, torch_int, torch_op

_REDUCTION = {
    T.AtenSumDimIntListOp.OPERATION_NAME: "sum",
    T.AtenAmaxOp.OPERATION_NAME: "max",
    T.AtenAminOp.OPERATION_NAME: "min",
}


@register_compute_form(*_REDUCTION)
def reduction_form(op) -> ComputeSpec | None:
    x, dims, keepdim = list(op.operands)[:3]
    rest = [constant_value(v) for v in list(op.operands)[3:]]  # sum's dtype
    rank = rank_of(x)
    axes = sorted(d % rank for d in (constant_dims(dims) or []))
    if axes and not constant_value(keepdim) and all(r is None for r in rest) and same_dtype(op, [x]):
        return ComputeSpec(ReductionOp, [x], {"kind": _REDUCTION[op.name], "axes": axes}, [])
    return None


@register_op_strategy(
    ReductionOp,
    doc="a kept split dim stays split (renumbered); a reduction over the "
    "outermost split dim alone is an allreduce (the result replicated)",
)
def reduction_strategy(call: OpCall) -> OpPlacement:
    ((_, px),) = call.operands
    assert call.spec is not None, "a compute op is placed with its spec"
    axes = call.spec.options["axes"]
    if px is None:
        return OpPlacement((None,), None)
    if px not in axes:
        return OpPlacement((px,), px - sum(1 for a in axes if a < px))
    if list(axes) == [px] and px == 0:
        return OpPlacement((px,), None)  # an allreduce
    raise NoRule(f"reduces split dim {px} with others ({list(axes)})")


def global_mean_part(op: ir.Operation, operands: list, offset: ir.Value, results: list) -> list:
    """One device's part of a mean over a split dim: the sum of its elements over the
    reduced dims divided by the whole count (the devices' parts sum to the mean). Built at
    the current insertion point."""
    (result,) = results
    shape = shape_of(op.operands[0])  # the whole operand's
    if op.name == T.AtenMeanDimOp.OPERATION_NAME:
        local = torch_op(T.AtenSumDimIntListOp.OPERATION_NAME, operands, result)
    else:
        local = torch_op(T.AtenSumOp.OPERATION_NAME, operands, result)
    return [
        torch_op(
            T.AtenDivScalarOp.OPERATION_NAME,
            [local, torch_int(prod(shape[d] for d in reduced_dims(op, len(shape))))],
            result,
        )
    ]


@register_op_strategy(
    T.AtenMeanOp,
    T.AtenMeanDimOp,
    partial_form=global_mean_part,
    doc="off the split dim: the split stays (hand-written RMSNorm's `mean`); over it (a "
    "loss's `.mean()` of split rows): each device's sum over the whole count, a partial sum",
)
def mean_strategy(call: OpCall) -> OpPlacement:
    (source, split), *_ = call.operands
    if split is None:
        return call.local(None)
    shape = call.shape(source)
    dims = reduced_dims(call.op, len(shape))
    if split in dims:
        if any(shape[d] == DYNAMIC for d in dims):
            raise NoRule(f"{call.op.name}: a mean over a dynamic dim split over devices")
        return call.local(PARTIAL)
    keepdim = constant_value(call.op.operands[2])
    return call.local(split if keepdim else split - sum(1 for d in dims if d < split))


@register_op_strategy(T.AtenAmaxOp, T.AtenAminOp, T.AtenMaxDimOp, doc="over dims that exclude the split")
def segment_reduction_strategy(call: OpCall) -> OpPlacement:
    """amax / amin / max over constant dims off the split dim (``sum``: :mod:`.backward`, ``mean``:
    :func:`mean_strategy`)."""
    (source, split), *_ = call.operands
    if split is None:
        return call.local(None)
    rank = call.rank(source)
    dims = constant_dims(call.op.operands[1])
    if not dims or split in {d % rank for d in dims}:
        raise NoRule(f"{call.op.name}: reduces the split dim")
    return call.local(
        split if constant_value(call.op.operands[2]) else split - sum(1 for d in dims if d % rank < split)
    )


@register_op_strategy(
    T.AtenSoftmaxIntOp, T.Aten_SoftmaxOp, T.AtenLogSoftmaxIntOp, T.Aten_LogSoftmaxOp, doc="over another dim"
)
def softmax_strategy(call: OpCall) -> OpPlacement:
    (source, split), *_ = call.operands
    if split is not None and call.dim(1, call.rank(source)) == split:
        raise NoRule(f"{call.op.name}: works along the split dim")
    return call.local(split)


@register_op_strategy(
    T.AtenLayerNormOp,
    T.AtenNativeLayerNormOp,
    T.AtenRmsNormOp,
    doc="over trailing dims that exclude the split, weight and bias replicated",
)
def norm_strategy(call: OpCall) -> OpPlacement:
    """layer_norm / rms_norm / native_layer_norm over the trailing ``normalized_shape``."""
    (source, split), *params = call.operands
    if any(s is not None for _, s in params):
        raise NoRule(f"{call.op.name}: split weight or bias")
    if split is not None and split >= call.rank(source) - len(call.op.operands[1].owner.operands):
        raise NoRule(f"{call.op.name}: normalizes over the split dim")
    return call.local(split)
