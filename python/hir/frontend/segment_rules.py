"""Placements through the torch ops of a kernel segment, so a segment of view, pointwise and
normalization ops runs on device-local shards instead of replicated copies (DTensor's
propagation rules, on a 1-D mesh of ``devices``):

* pointwise ops (``torch.Tag.pointwise``): operands split along the same (right-aligned)
  output axis stay split; a replicated operand must broadcast along it;
* ``view`` / ``reshape`` / ``_unsafe_view``: split input dim ``s`` becomes output dim ``t``
  where the dims before agree in size (``prod(out[:t]) == prod(in[:s])``) and ``out[t]``
  divides over the devices (``[B, S, H*D]`` split on 2 -> ``[B, S, H, D]`` split on 2); the
  segment's size list is rewritten to the local sizes (:func:`localize`);
* ``transpose`` / ``permute`` move the split; ``unsqueeze`` shifts it;
* ``softmax`` / ``log_softmax`` over another dim, ``layer_norm`` over trailing dims that
  exclude the split, ``contiguous`` / ``clone`` / ``detach`` keep it.

Any other op (or a size list that is not constant) raises :class:`NoRule`, and the caller
falls back to replicated inputs (correct, with an allgather).
"""

from math import prod
from typing import Callable, Optional

import torch
from torch_mlir import ir
from torch_mlir.dialects import torch as torch_dialect

from hir.dialect.torch_ops import torch_overload
from hir.frontend.partition import constant_value, is_tensor, tensor_info, torch_int

Split = Optional[int]


class NoRule(Exception):
    """The op has no local rule for its operands' placements."""


_VIEWS = {torch_dialect.AtenViewOp.OPERATION_NAME, torch_dialect.AtenReshapeOp.OPERATION_NAME, torch_dialect.Aten_UnsafeViewOp.OPERATION_NAME}
_SOFTMAX = {torch_dialect.AtenSoftmaxIntOp.OPERATION_NAME, torch_dialect.Aten_SoftmaxOp.OPERATION_NAME, torch_dialect.AtenLogSoftmaxIntOp.OPERATION_NAME, torch_dialect.Aten_LogSoftmaxOp.OPERATION_NAME}
_SAME = {torch_dialect.AtenContiguousOp.OPERATION_NAME, torch_dialect.AtenCloneOp.OPERATION_NAME, torch_dialect.AtenDetachOp.OPERATION_NAME}


def _shape(value: ir.Value) -> list[int]:
    return tensor_info(value.type)[0]


def _dim(value: ir.Value, rank: int) -> int:
    d = constant_value(value)
    return d + rank if d < 0 else d


def propagate(run: list, splits: dict, devices: int) -> dict:
    """The split of every tensor result of ``run`` from the splits of its inputs
    (``splits``: value -> split, None replicated; constants are replicated)."""
    out = dict(splits)
    for op in run:
        results = [r for r in op.results if is_tensor(r)]
        if not results:
            continue
        operands = [(v, out.get(v)) for v in op.operands if is_tensor(v)]
        split = _rule(op)(op, operands, devices)
        for r in results:
            out[r] = split
    return out


def _rule(op: ir.Operation) -> Callable:
    name = op.name
    if name in _VIEWS:
        return _view
    if name == torch_dialect.AtenTransposeIntOp.OPERATION_NAME:
        return _transpose
    if name == torch_dialect.AtenPermuteOp.OPERATION_NAME:
        return _permute
    if name == torch_dialect.AtenUnsqueezeOp.OPERATION_NAME:
        return _unsqueeze
    if name in _SOFTMAX:
        return _softmax
    if name == torch_dialect.AtenLayerNormOp.OPERATION_NAME:
        return _layer_norm
    if name in _SAME:
        return lambda op, operands, devices: operands[0][1]
    overload = torch_overload(name)
    if overload is not None and torch.Tag.pointwise in overload.tags:
        return _pointwise
    raise NoRule(name)


def _pointwise(op: ir.Operation, operands: list, devices: int) -> Split:
    rank = len(_shape(op.results[0]))
    aligned = {s + rank - len(_shape(v)) for v, s in operands if s is not None}
    if not aligned:
        return None
    if len(aligned) > 1:
        raise NoRule(f"{op.name}: operands split along different axes")
    (axis,) = aligned
    for v, s in operands:
        own = axis - (rank - len(_shape(v)))
        if s is None and own >= 0 and _shape(v)[own] != 1:
            raise NoRule(f"{op.name}: a replicated operand does not broadcast along the split axis")
    return axis


def _view(op: ir.Operation, operands: list, devices: int) -> Split:
    (source, split), *_ = operands
    if split is None:
        return None
    try:
        constant_value(op.operands[1])
    except ValueError:
        raise NoRule(f"{op.name}: sizes are not constants") from None
    shape_in, shape_out = _shape(source), _shape(op.results[0])
    before = prod(shape_in[:split])
    for t, extent in enumerate(shape_out):
        if prod(shape_out[:t]) == before and extent != 1 and extent % devices == 0:
            return t
    raise NoRule(f"{op.name}: split dim {split} of {shape_in} has no whole counterpart in {shape_out}")


def _transpose(op: ir.Operation, operands: list, devices: int) -> Split:
    (source, split), *_ = operands
    rank = len(_shape(source))
    a, b = _dim(op.operands[1], rank), _dim(op.operands[2], rank)
    return b if split == a else a if split == b else split


def _permute(op: ir.Operation, operands: list, devices: int) -> Split:
    (source, split), *_ = operands
    rank = len(_shape(source))
    dims = [_dim(v, rank) for v in op.operands[1].owner.operands]
    return None if split is None else dims.index(split)


def _unsqueeze(op: ir.Operation, operands: list, devices: int) -> Split:
    (source, split), *_ = operands
    at = _dim(op.operands[1], len(_shape(source)) + 1)
    return None if split is None else split + (1 if at <= split else 0)


def _softmax(op: ir.Operation, operands: list, devices: int) -> Split:
    (source, split), *_ = operands
    if split is not None and _dim(op.operands[1], len(_shape(source))) == split:
        raise NoRule(f"{op.name}: normalizes over the split dim")
    return split


def _layer_norm(op: ir.Operation, operands: list, devices: int) -> Split:
    (source, split), *rest = operands
    normalized = len(op.operands[1].owner.operands)
    if any(s is not None for _, s in rest):
        raise NoRule(f"{op.name}: split weight or bias")
    if split is not None and split >= len(_shape(source)) - normalized:
        raise NoRule(f"{op.name}: normalizes over the split dim")
    return split


def localize(old: ir.Operation, new: ir.Operation, split: Split, devices: int, ip: ir.InsertionPoint) -> None:
    """In a local segment, give the clone ``new`` of view op ``old`` the local size list (its
    split entry divided by the devices; an inferred ``-1`` stays)."""
    if old.name not in _VIEWS or split is None:
        return
    sizes = new.operands[1].owner
    entries = list(sizes.operands)
    if constant_value(entries[split]) == -1:
        return
    with ip, new.location:
        entries[split] = torch_int(constant_value(entries[split]) // devices)
        rebuilt = ir.Operation.create(sizes.name, results=[sizes.results[0].type], operands=entries).result
    new.move_after(rebuilt.owner)
    new.operands[1] = rebuilt
