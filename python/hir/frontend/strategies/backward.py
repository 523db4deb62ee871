"""The ops autograd adds to a training step, inside kernel segments, as DTensor places them
(``_math_ops.py``, ``_embedding_ops.py``, ``_tensor_ops.py``, ``_attention.py``): the
backward of an op keeps the split its forward kept (softmax's along another dim, SDPA's
along batch or heads, slicing's off the sliced dim), and the gradient of a weight that
every row of a split batch reads is a **partial sum**: each device sums its rows
(``sum`` over the split dim, ``embedding_dense_backward`` of its ids), the placer sums over
the devices (an allreduce, or a reduce-scatter where the consumer wants the gradient split).
A loss over a split batch is sums too: ``nll_loss`` arrives as torch's own decomposition
(``gather``, ``where``, ``sum``, ``div``; see :func:`hir.frontend.export.functional_export`),
so the mean over the global batch is the sum of the devices' losses over the sum of their
counts."""

from torch_mlir import ir
from torch_mlir.dialects import torch as T

from hir.frontend.strategies.pointwise import pointwise_strategy
from hir.frontend.strategies.registry import (
    PARTIAL,
    NoRule,
    OpCall,
    OpPlacement,
    constant_ints,
    register_op_strategy,
)
from hir.frontend.strategies.views import _sizes_at_split  # the size list's entry at the split: operand 1, as view's
from hir.frontend.torch_ir import constant_value, reduced_dims


def local_sum(op: ir.Operation, operands: list, offset: ir.Value, results: list) -> list:
    """The op itself (its attributes: a ``torch.operator``'s name) on this device's parts:
    for an op that sums over a split dim, one device's part of the sum over the devices.
    Built at the current insertion point."""
    return list(
        ir.Operation.create(op.name, results=results, operands=operands, attributes=dict(op.attributes)).results
    )


@register_op_strategy(
    T.AtenSumDimIntListOp,
    T.AtenSumOp,
    partial_form=local_sum,
    doc="off the split dim: the split stays (shifted past the reduced dims); over it (a "
    "weight's or a loss's sum over a split batch): each device sums its rows, a partial sum",
)
def sum_strategy(call: OpCall) -> OpPlacement:
    (source, split), *_ = call.operands
    if split is None:
        return call.local(None)
    rank = call.rank(source)
    dims = reduced_dims(call.op, rank)
    if split in dims:
        return call.local(PARTIAL)
    keepdim = len(call.op.operands) > 2 and constant_value(call.op.operands[2])
    return call.local(split if keepdim else split - sum(1 for d in dims if d < split))


@register_op_strategy(
    T.AtenEmbeddingDenseBackwardOp,
    partial_form=local_sum,
    doc="gradient and ids split alike along a batch dim: each device "
    "scatters its rows' gradients into the whole table, a partial sum",
)
def embedding_backward_strategy(call: OpCall) -> OpPlacement:
    (grad, split), (ids, id_split) = call.operands[:2]
    if split is None and id_split is None:
        return call.local(None)
    if split is None or split != id_split or split >= call.rank(ids) or constant_value(call.op.operands[4]):
        raise NoRule(f"{call.op.name}: gradient and ids not split alike along a batch dim (or scale_grad_by_freq)")
    return call.local(PARTIAL)


@register_op_strategy(
    T.Aten_LogSoftmaxBackwardDataOp,
    T.Aten_SoftmaxBackwardDataOp,
    doc="gradient and output split alike, off the softmax dim",
)
def softmax_backward_strategy(call: OpCall) -> OpPlacement:
    (grad, split), (_, out_split) = call.operands[:2]
    if split != out_split or (split is not None and call.dim(2, call.rank(grad)) == split):
        raise NoRule(f"{call.op.name}: gradient and output placed apart, or split along the softmax dim")
    return call.local(split)


_SDPA = (
    "torch.aten._scaled_dot_product_flash_attention_for_cpu",
    "torch.aten._scaled_dot_product_flash_attention_for_cpu_backward",
)


@register_op_strategy(
    *_SDPA,
    doc="every tensor operand (q, k, v; out, logsumexp, the gradient) split alike along batch or "
    "heads, a replicated mask read as its slice there (or broadcast): each result keeps that split",
)
def attention_strategy(call: OpCall) -> OpPlacement:
    name = call.op.attributes["name"].value
    q = call.operands[1 if name.endswith("backward") else 0][0]
    splits = {s for s in call.splits if s is not None}
    if not splits:
        return call.local(None)
    (split,) = splits if len(splits) == 1 else (None,)
    if split is None or split >= call.rank(q) - 2:
        raise NoRule(f"{name}: operands not split alike along batch or heads")
    return OpPlacement(
        tuple(s if s is not None or call.shape(v)[split] == 1 else split for v, s in call.operands), split
    )


@register_op_strategy(
    "torch.aten.slice_backward", local_sizes=_sizes_at_split, doc="off the sliced dim (the input sizes get local)"
)
def slice_backward_strategy(call: OpCall) -> OpPlacement:
    (grad, split), *_ = call.operands
    if split is not None and call.dim(2, call.rank(grad)) == split:
        raise NoRule(f"{call.op.name}: slices along the split dim")
    return call.local(split)


@register_op_strategy(T.AtenConstantPadNdOp, doc="pads dims off the split")
def pad_strategy(call: OpCall) -> OpPlacement:
    (source, split), *_ = call.operands
    rank = call.rank(source)
    pad = constant_ints(call.op.operands[1])
    padded = {rank - 1 - i // 2 for i, p in enumerate(pad) if p}
    if split in padded:
        raise NoRule(f"{call.op.name}: pads the split dim")
    return call.local(split)


@register_op_strategy(
    T.AtenGatherOp,
    T.AtenScatterValueOp,
    T.AtenScatterSrcOp,
    doc="self and index (and src) split alike off the gathered / scattered dim, a replicated "
    "one read as its slice (a loss over split tokens reads its replicated labels so)",
)
def gather_strategy(call: OpCall) -> OpPlacement:
    (source, _), *_ = call.operands
    splits = {s for s in call.splits if s is not None}
    (split,) = splits or {None}
    if len(splits) > 1 or (split is not None and call.dim(1, call.rank(source)) == split):
        raise NoRule(f"{call.op.name}: operands split apart, or indexes along the split dim")
    return OpPlacement((split,) * len(call.operands), split)


@register_op_strategy(
    T.AtenZerosLikeOp, T.AtenOnesLikeOp, T.AtenFullLikeOp, T.AtenEmptyLikeOp, doc="its operand's split"
)
def like_strategy(call: OpCall) -> OpPlacement:
    return call.local(call.operands[0][1])


register_op_strategy(
    T.AtenWhereScalarOtherOp,
    T.AtenWhereScalarSelfOp,
    T.AtenWhereScalarOp,
    T.AtenWhereSelfOp,
    doc="as a pointwise op, a replicated operand read as its slice along "
    "the split axis (a loss's mask of replicated labels over split tokens)",
)(pointwise_strategy)


@register_op_strategy(T.AtenCopyOp, doc="`self` and `src` split alike (an update written back into a parameter's rows)")
def copy_strategy(call: OpCall) -> OpPlacement:
    (target, split), (source, source_split) = call.operands
    if split != source_split or call.shape(target) != call.shape(source):
        raise NoRule(f"{call.op.name}: target and source placed apart, or broadcast")
    return call.local(split)
