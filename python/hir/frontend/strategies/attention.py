"""Attention: ``scaled_dot_product_attention`` inside kernel segments, local where q, k and v
are split alike along a batch or heads dim (tensor parallelism's head split; GQA's fewer k/v
heads too), as DTensor's SDPA strategies shard heads."""

from torch_mlir.dialects import torch as T

from hir.frontend.strategies.pointwise import check_broadcasts
from hir.frontend.strategies.registry import NoRule, OpCall, OpPlacement, register_op_strategy


@register_op_strategy(
    T.AtenScaledDotProductAttentionOp,
    doc="q, k, v split alike along batch or heads (GQA too); a mask split alike or broadcast there",
)
def sdpa_strategy(call: OpCall) -> OpPlacement:
    (q, sq), (_, sk), (_, sv), *mask = call.operands
    if not sq == sk == sv or (sq is not None and sq >= call.rank(q) - 2):
        raise NoRule(f"{call.op.name}: q, k, v are not split alike along a batch or heads dim")
    check_broadcasts(call, mask, sq)
    return call.local(sq)
