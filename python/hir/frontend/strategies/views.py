"""View and shape ops inside kernel segments: the split follows its dim through the op's dim
map, as DTensor's ``_view_ops.py`` maps placements (``view`` / ``reshape`` by
:func:`hir.dialect.view_splits.reshaped_axis`, the rule hir's own views follow), and is refused
(the segment reads replicated copies) where an op merges, cuts or tiles the split dim. Ops
whose size list names the split extent (``view``, ``expand``, ``unflatten``) get it
rewritten to the local extent in a segment on local shards (``local_sizes``)."""

from torch_mlir import ir
from torch_mlir.dialects import torch as T

from hir.dialect.view_splits import reshaped_axis
from hir.frontend.strategies.registry import (
    NoRule,
    OpCall,
    OpPlacement,
    constant_int,
    constant_ints,
    register_op_strategy,
)
from hir.frontend.torch_ir import constant_value, rank_of


def _sizes_at_split(op: ir.Operation, split: int) -> tuple[int, int]:
    return 1, split


def _unflatten_sizes(op: ir.Operation, split: int) -> tuple[int, int] | None:
    d = constant_int(op.operands[1])
    dim = d + rank_of(op.operands[0]) if d < 0 else d
    return (2, split - dim) if dim <= split < dim + len(op.operands[2].owner.operands) else None


@register_op_strategy(
    T.AtenViewOp,
    T.AtenReshapeOp,
    T.Aten_UnsafeViewOp,
    local_sizes=_sizes_at_split,
    doc="split dim `s` becomes the output dim `t` where the dims before agree "
    "(`prod(out[:t]) == prod(in[:s])`) and `out[t]` divides; the size list gets local",
)
def view_strategy(call: OpCall) -> OpPlacement:
    (source, split), *_ = call.operands
    if split is None:
        return call.local(None)
    shape_in, shape_out = call.shape(source), call.shape(call.op.results[0])
    t = reshaped_axis(shape_in, shape_out, split)
    if t is None or shape_out[t] % call.devices:
        raise NoRule(f"{call.op.name}: split dim {split} of {shape_in} has no whole counterpart in {shape_out}")
    return call.local(t)


register_op_strategy(T.AtenFlattenUsingIntsOp, doc="as `view`")(view_strategy)
register_op_strategy(T.AtenUnflattenIntOp, local_sizes=_unflatten_sizes, doc="as `view`; the size list gets local")(
    view_strategy
)


@register_op_strategy(T.AtenTransposeIntOp, T.AtenTOp, doc="the split moves with its dim")
def transpose_strategy(call: OpCall) -> OpPlacement:
    (source, split), *_ = call.operands
    rank = call.rank(source)
    if rank < 2:
        return call.local(split)
    a, b = (call.dim(1, rank), call.dim(2, rank)) if len(call.op.operands) == 3 else (0, 1)
    return call.local(b if split == a else a if split == b else split)


@register_op_strategy(T.AtenPermuteOp, doc="the split moves with its dim")
def permute_strategy(call: OpCall) -> OpPlacement:
    (source, split), *_ = call.operands
    rank = call.rank(source)
    dims = [d + rank if d < 0 else d for d in (constant_int(v) for v in call.op.operands[1].owner.operands)]
    return call.local(None if split is None else dims.index(split))


@register_op_strategy(T.AtenUnsqueezeOp, doc="the split shifts past the new dim")
def unsqueeze_strategy(call: OpCall) -> OpPlacement:
    (source, split), *_ = call.operands
    at = call.dim(1, call.rank(source) + 1)
    return call.local(None if split is None else split + (1 if at <= split else 0))


@register_op_strategy(
    T.AtenSelectIntOp, T.AtenSqueezeDimOp, T.AtenUnbindIntOp, doc="off the split dim: the split shifts"
)
def dropped_dim_strategy(call: OpCall) -> OpPlacement:
    """select / squeeze.dim / unbind: the dim ``op.operands[1]`` goes away."""
    (source, split), *_ = call.operands
    dim = call.dim(1, call.rank(source))
    if split is None:
        return call.local(None)
    if dim == split:
        raise NoRule(f"{call.op.name}: takes apart the split dim")
    return call.local(split - (1 if dim < split else 0))


@register_op_strategy(T.AtenSliceTensorOp, doc="off the split dim (rotary halves), or a whole slice of it")
def slice_strategy(call: OpCall) -> OpPlacement:
    (source, split), *_ = call.operands
    if (
        split is not None
        and call.dim(1, call.rank(source)) == split
        and call.shape(call.op.results[0]) != call.shape(source)
    ):
        raise NoRule(f"{call.op.name}: works along the split dim")
    return call.local(split)


@register_op_strategy(
    T.AtenSplitTensorOp, T.AtenSplitWithSizesOp, T.AtenChunkOp, doc="off the split dim: every piece keeps the split"
)
def pieces_strategy(call: OpCall) -> OpPlacement:
    (source, split), *_ = call.operands
    if split is not None and call.dim(2, call.rank(source)) == split:
        raise NoRule(f"{call.op.name}: cuts the split dim")
    return call.local(split)


@register_op_strategy(T.PrimListUnpackOp, doc="the list's split")
def unpack_strategy(call: OpCall) -> OpPlacement:
    return call.local(call.operands[0][1])


def _concatenated(call: OpCall, stack: bool) -> int | None:
    # torch.cat skips a 1-D empty operand (a transformers DynamicCache's initial ``torch.tensor([])``)
    splits = {s for v, s in call.operands if stack or call.shape(v) != [0]}
    if len(splits) != 1:
        raise NoRule(f"{call.op.name}: operands placed differently")
    (split,) = splits
    return split


@register_op_strategy(T.AtenCatOp, doc="operands split alike, concatenated off the split dim (rotary)")
def cat_strategy(call: OpCall) -> OpPlacement:
    split = _concatenated(call, stack=False)
    if split == call.dim(1, call.result_rank):
        raise NoRule(f"{call.op.name}: concatenates along the split dim")
    return call.local(split)


@register_op_strategy(T.AtenStackOp, doc="operands split alike; the split shifts past the new dim")
def stack_strategy(call: OpCall) -> OpPlacement:
    split = _concatenated(call, stack=True)
    dim = call.dim(1, call.result_rank)
    return call.local(None if split is None else split + (1 if dim <= split else 0))


@register_op_strategy(
    T.AtenExpandOp,
    T.AtenExpandAsOp,
    local_sizes=_sizes_at_split,
    doc="the split follows its dim (GQA's `expand` of k/v heads); the size list gets local",
)
def expand_strategy(call: OpCall) -> OpPlacement:
    (source, split), *rest = call.operands
    if split is None:
        return call.local(None)
    out = split + call.result_rank - call.rank(source)
    if rest and rest[0][1] != out:  # expand_as: the shape operand must be split alike
        raise NoRule(f"{call.op.name}: the shape operand is placed differently")
    return call.local(out)


@register_op_strategy(T.AtenRepeatOp, doc="a repeat count of 1 on the split dim")
def repeat_strategy(call: OpCall) -> OpPlacement:
    (source, split), *_ = call.operands
    if split is None:
        return call.local(None)
    counts = constant_ints(call.op.operands[1])
    out = split + len(counts) - call.rank(source)
    if counts[out] != 1:
        raise NoRule(f"{call.op.name}: tiles the split dim")
    return call.local(out)


@register_op_strategy(
    T.AtenRepeatInterleaveSelfIntOp,
    doc="along any given dim (GQA's `repeat_interleave` on the heads dim: a block split stays one)",
)
def repeat_interleave_strategy(call: OpCall) -> OpPlacement:
    (_, split), *_ = call.operands
    if split is None:
        return call.local(None)
    if constant_value(call.op.operands[2]) is None or constant_value(call.op.operands[3]) is not None:
        raise NoRule(f"{call.op.name}: flattens, or names its output size")
    return call.local(split)  # each element's copies stay next to it: a block split stays a block split
