"""Placements through the torch ops of a kernel segment, so that a segment runs on
device-local shards instead of replicated copies: one table of sharding rules, like
DTensor's op-strategy registry, on one mesh axis of ``devices`` (a multi-D mesh applies
it axis by axis).

:data:`RULES` maps a torch-mlir op name to a :class:`Rule`: a function from the op and the
splits of its tensor operands (``(value, split)`` pairs, the tensors of a list operand in
order; ``None``: replicated) to the split of its results, and what it says in the docs
(``docs/from-pytorch.md`` lists the table: ``python -m hir.tools.gen_rule_docs``). Beyond
the table:

* an op whose tensor operands are all replicated (or that has none: ``arange``, ``full``)
  computes a replicated result whatever it is: it never needs a rule;
* an op tagged ``torch.Tag.pointwise`` follows :func:`_pointwise`.

A rule that cannot keep the op local raises :class:`NoRule` (so does an op with split
operands and no rule); the caller then falls back to replicated inputs (correct, with an
allgather), as DTensor redistributes to ``Replicate()``. Ops whose size list names local
extents (``view``, ``expand``, ...) get it rewritten to the local sizes (:func:`localize`).
"""

from dataclasses import dataclass
from math import prod
from typing import Callable, Optional

import torch
from torch_mlir import ir
from torch_mlir.dialects import torch as T

from hir.dialect.torch_ops import torch_overload
from hir.frontend import placement_rules
from hir.frontend.partition import LIST_CONSTRUCT, constant_value, is_tensor, tensor_info, torch_int

Split = Optional[int]
Operands = list  # [(value, split)]


class NoRule(Exception):
    """The op has no local rule for its operands' placements."""


@dataclass(frozen=True)
class Rule:
    """One row of the table: ``split(op, operands, devices)`` gives the results' split;
    ``sizes(op, split)``, for ops with a size list, the (operand index, entry) that holds
    the split extent (rewritten to the local extent); ``doc``: its line in the docs."""

    split: Callable[[ir.Operation, Operands, int], Split]
    doc: str
    sizes: Optional[Callable[[ir.Operation, int], Optional[tuple[int, int]]]] = None


def _shape(value: ir.Value) -> list[int]:
    return tensor_info(value.type)[0]


def _rank(value: ir.Value) -> int:
    return len(_shape(value))


def _dim(value: ir.Value, rank: int) -> int:
    d = constant_value(value)
    return d + rank if d < 0 else d


def _first(op: ir.Operation, operands: Operands, devices: int) -> Split:
    return operands[0][1]


def _pointwise(op: ir.Operation, operands: Operands, devices: int) -> Split:
    rank = _rank(op.results[0])
    aligned = {s + rank - _rank(v) for v, s in operands if s is not None}
    if not aligned:
        return None
    if len(aligned) > 1:
        raise NoRule(f"{op.name}: operands split along different axes")
    (axis,) = aligned
    for v, s in operands:
        own = axis - (rank - _rank(v))
        if s is None and own >= 0 and _shape(v)[own] != 1:
            raise NoRule(f"{op.name}: a replicated operand does not broadcast along the split axis")
    return axis


def _view(op: ir.Operation, operands: Operands, devices: int) -> Split:
    (source, split), *_ = operands
    if split is None:
        return None
    shape_in, shape_out = _shape(source), _shape(op.results[0])
    before = prod(shape_in[:split])
    for t, extent in enumerate(shape_out):
        if prod(shape_out[:t]) == before and extent != 1 and extent % devices == 0:
            return t
    raise NoRule(f"{op.name}: split dim {split} of {shape_in} has no whole counterpart in {shape_out}")


def _sizes_at_split(op: ir.Operation, split: int) -> tuple[int, int]:
    return 1, split


def _unflatten_sizes(op: ir.Operation, split: int) -> Optional[tuple[int, int]]:
    dim = _dim(op.operands[1], _rank(op.operands[0]))
    return (2, split - dim) if dim <= split < dim + len(op.operands[2].owner.operands) else None


def _transpose(op: ir.Operation, operands: Operands, devices: int) -> Split:
    (source, split), *_ = operands
    rank = _rank(source)
    if rank < 2:
        return split
    a, b = (_dim(op.operands[1], rank), _dim(op.operands[2], rank)) if len(op.operands) == 3 else (0, 1)
    return b if split == a else a if split == b else split


def _permute(op: ir.Operation, operands: Operands, devices: int) -> Split:
    (source, split), *_ = operands
    dims = [_dim(v, _rank(source)) for v in op.operands[1].owner.operands]
    return None if split is None else dims.index(split)


def _unsqueeze(op: ir.Operation, operands: Operands, devices: int) -> Split:
    (source, split), *_ = operands
    at = _dim(op.operands[1], _rank(source) + 1)
    return None if split is None else split + (1 if at <= split else 0)


def _dropped_dim(op: ir.Operation, operands: Operands, devices: int) -> Split:
    """select / squeeze.dim / unbind: the dim ``op.operands[1]`` goes away."""
    (source, split), *_ = operands
    dim = _dim(op.operands[1], _rank(source))
    if split is None:
        return None
    if dim == split:
        raise NoRule(f"{op.name}: takes apart the split dim")
    return split - (1 if dim < split else 0)


def _off_split_dim(op: ir.Operation, operands: Operands, devices: int) -> Split:
    """slice / softmax along ``op.operands[1]``: local unless that is the
    split dim (a whole slice of it stays split)."""
    (source, split), *_ = operands
    if split is not None and _dim(op.operands[1], _rank(source)) == split:
        if op.name == T.AtenSliceTensorOp.OPERATION_NAME and _shape(op.results[0]) == _shape(source):
            return split
        raise NoRule(f"{op.name}: works along the split dim")
    return split


def _pieces(op: ir.Operation, operands: Operands, devices: int) -> Split:
    """split / split_with_sizes / chunk along ``op.operands[2]``: every piece keeps a split
    off that dim."""
    (source, split), *_ = operands
    if split is not None and _dim(op.operands[2], _rank(source)) == split:
        raise NoRule(f"{op.name}: cuts the split dim")
    return split


def _cat(op: ir.Operation, operands: Operands, devices: int) -> Split:
    # torch.cat skips a 1-D empty operand (a transformers DynamicCache's initial ``torch.tensor([])``)
    splits = {s for v, s in operands if op.name == T.AtenStackOp.OPERATION_NAME or _shape(v) != [0]}
    if len(splits) != 1:
        raise NoRule(f"{op.name}: operands placed differently")
    (split,) = splits
    rank = _rank(op.results[0])
    dim = _dim(op.operands[1], rank)
    if op.name == T.AtenStackOp.OPERATION_NAME:
        return None if split is None else split + (1 if dim <= split else 0)
    if split == dim:
        raise NoRule(f"{op.name}: concatenates along the split dim")
    return split


def _expand(op: ir.Operation, operands: Operands, devices: int) -> Split:
    (source, split), *rest = operands
    if split is None:
        return None
    out = split + _rank(op.results[0]) - _rank(source)
    if rest and rest[0][1] != out:  # expand_as: the shape operand must be split alike
        raise NoRule(f"{op.name}: the shape operand is placed differently")
    return out


def _repeat(op: ir.Operation, operands: Operands, devices: int) -> Split:
    (source, split), *_ = operands
    if split is None:
        return None
    counts = constant_value(op.operands[1])
    out = split + len(counts) - _rank(source)
    if counts[out] != 1:
        raise NoRule(f"{op.name}: tiles the split dim")
    return out


def _repeat_interleave(op: ir.Operation, operands: Operands, devices: int) -> Split:
    (source, split), *_ = operands
    if split is None:
        return None
    dim = constant_value(op.operands[2])
    if dim is None or constant_value(op.operands[3]) is not None:
        raise NoRule(f"{op.name}: flattens, or names its output size")
    return split  # each element's copies stay next to it: a block split stays a block split


def _norm(op: ir.Operation, operands: Operands, devices: int) -> Split:
    """layer_norm / rms_norm / native_layer_norm over the trailing ``normalized_shape``."""
    (source, split), *params = operands
    if any(s is not None for _, s in params):
        raise NoRule(f"{op.name}: split weight or bias")
    if split is not None and split >= _rank(source) - len(op.operands[1].owner.operands):
        raise NoRule(f"{op.name}: normalizes over the split dim")
    return split


def _reduce(op: ir.Operation, operands: Operands, devices: int) -> Split:
    """sum / mean / amax / amin / max over constant dims off the split dim."""
    (source, split), *_ = operands
    if split is None:
        return None
    rank = _rank(source)
    dims = constant_value(op.operands[1])
    dims = [dims] if isinstance(dims, int) else dims
    if not dims or split in {d % rank for d in dims}:
        raise NoRule(f"{op.name}: reduces the split dim")
    return split if constant_value(op.operands[2]) else split - sum(1 for d in dims if d % rank < split)


def _broadcasts(op: ir.Operation, operands: Operands, axis: Optional[int]) -> None:
    """Extra operands (masks, biases) must be split alike along ``axis`` or broadcast it."""
    rank = _rank(op.results[0])
    for v, s in operands:
        own = None if axis is None else axis - (rank - _rank(v))
        if s != own and not (s is None and (own is None or own < 0 or _shape(v)[own] == 1)):
            raise NoRule(f"{op.name}: an extra operand is placed apart from the split axis")


def _attention(op: ir.Operation, operands: Operands, devices: int) -> Split:
    """SDPA: q, k, v split alike along a batch or heads dim (GQA's fewer k/v heads too)."""
    (q, sq), (k, sk), (v, sv), *mask = operands
    if not sq == sk == sv or (sq is not None and sq >= _rank(q) - 2):
        raise NoRule(f"{op.name}: q, k, v are not split alike along a batch or heads dim")
    _broadcasts(op, mask, sq)
    return sq


def _contraction(a: tuple, b: tuple, out_rank: int) -> Split:
    rule = placement_rules.matmul(a[1], b[1], _rank(a[0]), _rank(b[0]), out_rank)
    if rule == placement_rules.PARTIAL or rule[0] != [a[1], b[1]]:
        raise NoRule("contracts a split dim, or needs its operands resharded")
    return rule[1]


def _matmul(op: ir.Operation, operands: Operands, devices: int) -> Split:
    return _contraction(operands[0], operands[1], _rank(op.results[0]))


def _addmm(op: ir.Operation, operands: Operands, devices: int) -> Split:
    """addmm / baddbmm (``bias + a @ b``, GPT-2's Conv1D): a local product, and a bias split
    alike or broadcast along the output's split."""
    bias, a, b = operands[:3]
    split = _contraction(a, b, _rank(op.results[0]))
    _broadcasts(op, [bias], split)
    return split


def _embedding(op: ir.Operation, operands: Operands, devices: int) -> Split:
    (_, weight), (indices, split) = operands[:2]
    if weight is None:
        return split
    if weight == 1 and split is None:
        return _rank(indices)
    raise NoRule(f"{op.name}: a vocabulary-split table (or split table and indices)")


def _unpack(op: ir.Operation, operands: Operands, devices: int) -> Split:
    return operands[0][1]


def _table(*rows: tuple) -> dict[str, Rule]:
    table = {}
    for classes, rule in rows:
        for cls in classes:
            table[cls.OPERATION_NAME] = rule
    return table


RULES: dict[str, Rule] = _table(
    ((T.AtenViewOp, T.AtenReshapeOp, T.Aten_UnsafeViewOp), Rule(_view, "split dim `s` becomes the output dim `t` where the dims before agree (`prod(out[:t]) == prod(in[:s])`) and `out[t]` divides; the size list gets local", _sizes_at_split)),
    ((T.AtenFlattenUsingIntsOp,), Rule(_view, "as `view`")),
    ((T.AtenUnflattenIntOp,), Rule(_view, "as `view`; the size list gets local", _unflatten_sizes)),
    ((T.AtenTransposeIntOp, T.AtenTOp), Rule(_transpose, "the split moves with its dim")),
    ((T.AtenPermuteOp,), Rule(_permute, "the split moves with its dim")),
    ((T.AtenUnsqueezeOp,), Rule(_unsqueeze, "the split shifts past the new dim")),
    ((T.AtenSelectIntOp, T.AtenSqueezeDimOp, T.AtenUnbindIntOp), Rule(_dropped_dim, "off the split dim: the split shifts")),
    ((T.AtenSliceTensorOp,), Rule(_off_split_dim, "off the split dim (rotary halves), or a whole slice of it")),
    ((T.AtenSplitTensorOp, T.AtenSplitWithSizesOp, T.AtenChunkOp), Rule(_pieces, "off the split dim: every piece keeps the split")),
    ((T.PrimListUnpackOp,), Rule(_unpack, "the list's split")),
    ((T.AtenCatOp,), Rule(_cat, "operands split alike, concatenated off the split dim (rotary)")),
    ((T.AtenStackOp,), Rule(_cat, "operands split alike; the split shifts past the new dim")),
    ((T.AtenExpandOp, T.AtenExpandAsOp), Rule(_expand, "the split follows its dim (GQA's `expand` of k/v heads); the size list gets local", _sizes_at_split)),
    ((T.AtenRepeatOp,), Rule(_repeat, "a repeat count of 1 on the split dim")),
    ((T.AtenRepeatInterleaveSelfIntOp,), Rule(_repeat_interleave, "along any given dim (GQA's `repeat_interleave` on the heads dim: a block split stays one)")),
    ((T.AtenScaledDotProductAttentionOp,), Rule(_attention, "q, k, v split alike along batch or heads (GQA too); a mask split alike or broadcast there")),
    ((T.AtenSoftmaxIntOp, T.Aten_SoftmaxOp, T.AtenLogSoftmaxIntOp, T.Aten_LogSoftmaxOp), Rule(_off_split_dim, "over another dim")),
    ((T.AtenLayerNormOp, T.AtenNativeLayerNormOp, T.AtenRmsNormOp), Rule(_norm, "over trailing dims that exclude the split, weight and bias replicated")),
    ((T.AtenMeanDimOp, T.AtenSumDimIntListOp, T.AtenAmaxOp, T.AtenAminOp, T.AtenMaxDimOp), Rule(_reduce, "over dims that exclude the split (hand-written RMSNorm's `mean`)")),
    ((T.AtenMmOp, T.AtenBmmOp, T.AtenMatmulOp), Rule(_matmul, "DTensor's matmul rule without a contraction over the split (`hir.matmul` outside segments)")),
    ((T.AtenAddmmOp, T.AtenBaddbmmOp), Rule(_addmm, "as `matmul`, the bias split alike or broadcast (GPT-2's Conv1D)")),
    ((T.AtenEmbeddingOp,), Rule(_embedding, "replicated table with split indices; a table split on the embedding dim with replicated indices (split on the last dim)")),
    ((T.AtenMaskedFillTensorOp,), Rule(_pointwise, "as a pointwise op (a boolean mask split alike or broadcast)")),
    ((T.AtenContiguousOp, T.AtenCloneOp, T.AtenDetachOp, T.AtenAliasOp, T.Aten_ToCopyOp, T.AtenToDtypeOp, T.AtenTypeAsOp, T.AtenDropoutOp, T.AtenLiftFreshCopyOp), Rule(_first, "keeps its (first) operand's split")),
)

POINTWISE = Rule(_pointwise, "operands split along the same (right-aligned) axis, replicated ones broadcast along it")


def rule_of(name: str) -> Optional[Rule]:
    """The table's rule for op ``name``, the pointwise rule for a pointwise-tagged op, else None."""
    if name in RULES:
        return RULES[name]
    overload = torch_overload(name)
    return POINTWISE if overload is not None and torch.Tag.pointwise in overload.tags else None


def _operands(op: ir.Operation, splits: dict) -> Operands:
    """The tensor operands of ``op`` with their splits; a list of tensors contributes its
    elements (a list an op made, e.g. ``split``'s, is one value)."""
    out = []
    for v in op.operands:
        if is_tensor(v):
            out.append((v, splits.get(v)))
        elif v in splits:
            out.append((v, splits[v]))
        elif not isinstance(v.owner, ir.Block) and v.owner.name == LIST_CONSTRUCT:
            out.extend((e, splits.get(e)) for e in v.owner.operands if is_tensor(e))
    return out


def _placed(value: ir.Value) -> bool:
    return is_tensor(value) or str(value.type).startswith("!torch.list<vtensor")


def propagate(run: list, splits: dict, devices: int) -> dict:
    """The split of every tensor (and tensor list) result of ``run`` from the splits of its
    inputs (``splits``: value -> split, None replicated; constants are replicated)."""
    out = dict(splits)
    for op in run:
        results = [r for r in op.results if _placed(r)]
        if not results or op.name == LIST_CONSTRUCT:
            continue
        operands = _operands(op, out)
        if all(s is None for _, s in operands):
            split = None
        else:
            rule = rule_of(op.name)
            if rule is None:
                raise NoRule(op.name)
            try:
                split = rule.split(op, operands, devices)
            except (ValueError, TypeError, AttributeError, IndexError):
                raise NoRule(f"{op.name}: operands that are not constants") from None
        for r in results:
            out[r] = split
    return out


def localize(old: ir.Operation, new: ir.Operation, split: Split, devices: int, ip: ir.InsertionPoint) -> None:
    """In a local segment, give the clone ``new`` of ``old`` its local size list (the entry
    of the split extent divided by the devices; an inferred ``-1`` stays)."""
    rule = RULES.get(old.name)
    at = None if split is None or rule is None or rule.sizes is None else rule.sizes(old, split)
    if at is None:
        return
    index, entry = at
    sizes = new.operands[index].owner
    entries = list(sizes.operands)
    if not entries[entry].owner.name.startswith("torch.constant.") or constant_value(entries[entry]) == -1:
        return  # inferred, or a size the segment computes from its local tensors (dynamic shapes)
    with ip, new.location:
        entries[entry] = torch_int(constant_value(entries[entry]) // devices)
        rebuilt = ir.Operation.create(sizes.name, results=[sizes.results[0].type], operands=entries).result
    new.move_after(rebuilt.owner)
    new.operands[index] = rebuilt
