"""Embedding and indexing inside kernel segments: lookups in a table whose split the
lookup keeps (DTensor's ``_embedding_ops.py`` without its partial, masked form for a
vocabulary-split table: such a segment reads the table replicated)."""

from torch_mlir.dialects import torch as T

from hir.frontend.strategies.registry import NoRule, OpCall, OpPlacement, register_op_strategy


@register_op_strategy(T.AtenEmbeddingOp, doc="replicated table with split indices; a table split on the embedding dim with replicated indices (split on the last dim)")
def embedding_strategy(call: OpCall) -> OpPlacement:
    (_, weight), (indices, split) = call.operands[:2]
    if weight is None:
        return call.local(split)
    if weight == 1 and split is None:
        return call.local(call.rank(indices))
    raise NoRule(f"{call.op.name}: a vocabulary-split table (or split table and indices)")


@register_op_strategy(T.AtenIndexSelectOp, doc="a table split off the selected dim with replicated indices (the split stays); a replicated table with split indices (split on the selected dim)")
def index_select_strategy(call: OpCall) -> OpPlacement:
    """``index_select(table, dim, index)``: the result is ``table`` with dim ``dim`` replaced
    by the picked entries, so a split off ``dim`` stays where it is, and split indices split
    the picked entries."""
    (table, split), (_, index_split) = call.operands
    dim = call.dim(1, call.rank(table))
    if index_split is None and split != dim:
        return call.local(split)
    if split is None:
        return call.local(dim)
    raise NoRule(f"{call.op.name}: selects along the split dim {split} (a vocabulary-split table)")
