"""Embedding and indexing inside kernel segments: lookups in a table whose split the
lookup keeps, and writes into a buffer split off the written dim (a KV-cache update by
``index_copy`` / ``index_put`` at ``cache_position``, head-local), as DTensor's
``_embedding_ops.py`` / ``_tensor_ops.py`` place them. A vocabulary-split table with
replicated ids is DTensor's masked partial lookup (Megatron's ``VocabParallelEmbedding``):
each device looks up the ids it holds, the others give zeros, and the sum over the devices
(an allreduce) is the lookup (:func:`masked_lookup`, the op's local partial form)."""

from torch_mlir import ir
from torch_mlir.dialects import torch as T

from hir.frontend.strategies.registry import PARTIAL, NoRule, OpCall, OpPlacement, register_op_strategy
from hir.frontend.torch_ir import shape_of, tensor_info, torch_float, torch_int, torch_op, vtensor

_BOOL = "i1"


def masked_lookup(op: ir.Operation, operands: list, offset: ir.Value, results: list) -> list:
    """``embedding(table, ids)`` on this device's rows of a vocabulary-split table: the
    ids outside ``[offset, offset + rows)`` look up row 0 and are zeroed (the partial sum
    of the devices is the lookup). Built at the current insertion point."""
    (result,), (table, ids) = results, operands[:2]
    rows = shape_of(table)[0]
    shape = shape_of(ids)
    mask_type = vtensor(shape, _BOOL)
    local = torch_op(T.AtenSubScalarOp.OPERATION_NAME, [ids, offset, torch_int(1)], ids.type)
    below = torch_op(T.AtenLtScalarOp.OPERATION_NAME, [local, torch_int(0)], mask_type)
    above = torch_op(T.AtenGeScalarOp.OPERATION_NAME, [local, torch_int(rows)], mask_type)
    outside = torch_op(T.AtenLogicalOrOp.OPERATION_NAME, [below, above], mask_type)
    safe = torch_op(T.AtenMaskedFillScalarOp.OPERATION_NAME, [local, outside, torch_int(0)], ids.type)
    found = torch_op(op.name, [table, safe] + list(operands[2:]), result)
    wide = torch_op(T.AtenUnsqueezeOp.OPERATION_NAME, [outside, torch_int(-1)], vtensor(list(shape) + [1], _BOOL))
    return [torch_op(T.AtenMaskedFillScalarOp.OPERATION_NAME, [found, wide, torch_float(0.0)], result)]


@register_op_strategy(
    T.AtenEmbeddingOp,
    partial_form=masked_lookup,
    doc="replicated table with split indices; a table split on the "
    "embedding dim with replicated indices (split on the last dim); "
    "a vocabulary-split table with replicated indices "
    "(`embedding_rowwise`): a masked local lookup, summed over the devices",
)
def embedding_strategy(call: OpCall) -> OpPlacement:
    (_, weight), (indices, split) = call.operands[:2]
    if weight is None:
        return call.local(split)
    if weight == 1 and split is None:
        return call.local(call.rank(indices))
    if weight == 0 and split is None:
        return OpPlacement((0, None), PARTIAL)
    raise NoRule(f"{call.op.name}: a split table with split indices")


@register_op_strategy(
    T.AtenIndexSelectOp,
    doc="a table split off the selected dim with replicated indices (the split "
    "stays); a replicated table with split indices (split on the selected dim)",
)
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


@register_op_strategy(
    "torch.aten.index_copy",
    doc="`self.index_copy(dim, index, source)` with `self` and `source` split alike "
    "off `dim`, the index replicated (a KV-cache update on each device's heads)",
)
def index_copy_strategy(call: OpCall) -> OpPlacement:
    (target, split), (_, index_split), (_, source_split) = call.operands
    if index_split is not None or split == call.dim(1, call.rank(target)) or source_split != split:
        raise NoRule(f"{call.op.name}: writes along the split dim, or the source is placed apart from the target")
    return call.local(split)


def _indexed_dims(op: ir.Operation) -> list[int]:
    """The dims an ``index`` / ``index_put`` indices list indexes (its non-None entries)."""
    entries = op.operands[1].owner.operands
    return [d for d, v in enumerate(entries) if tensor_info(v.type) is not None]


def _through_index(op: ir.Operation, split: int | None, index_rank: int) -> int | None:
    """The dim of ``self[indices]`` that ``self``'s split dim becomes (None: replicated);
    NoRule when the split dim is indexed or the indexed dims are not one block."""
    dims = _indexed_dims(op)
    if split is None:
        return None
    if split in dims or dims != list(range(dims[0], dims[-1] + 1)):
        raise NoRule(f"{op.name}: indexes the split dim {split}, or indexes dims apart")
    return split if split < dims[0] else split - len(dims) + index_rank


@register_op_strategy(
    T.AtenIndexTensorOp,
    T.AtenIndexTensorHackedTwinOp,
    doc="`self[indices]` with replicated indices off the split dim (MoE experts picked by id: the split follows)",
)
def index_strategy(call: OpCall) -> OpPlacement:
    (source, split), *indices = call.operands
    if any(s is not None for _, s in indices):
        raise NoRule(f"{call.op.name}: split indices")
    return call.local(_through_index(call.op, split, call.rank(indices[0][0]) if indices else 0))


@register_op_strategy(
    T.AtenIndexPutOp,
    T.AtenIndexPutHackedTwinOp,
    doc="`self[indices] = values` with replicated indices off the split "
    "dim and values split alike (or broadcast) there (a KV-cache update)",
)
def index_put_strategy(call: OpCall) -> OpPlacement:
    (target, split), *rest = call.operands
    (values, values_split), indices = rest[-1], rest[:-1]
    if any(s is not None for _, s in indices):
        raise NoRule(f"{call.op.name}: split indices")
    at = _through_index(call.op, split, call.rank(indices[0][0]) if indices else 0)
    rank = call.rank(target) - len(_indexed_dims(call.op)) + (call.rank(indices[0][0]) if indices else 0)
    own = None if at is None else at - (rank - call.rank(values))
    if values_split != own and not (values_split is None and (own is None or own < 0 or call.shape(values)[own] == 1)):
        raise NoRule(f"{call.op.name}: the values are placed apart from the target")
    return call.local(split)
