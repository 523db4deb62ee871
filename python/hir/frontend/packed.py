"""Packed splits through the placer (HF's ``packed_colwise`` / ``packed_rowwise``: DTensor's
``_StridedShard(dim, split_factor)``). A fused ``[gate; up]`` weight split so that each
device holds its part of each half gives a projection whose output dim is packed the same
way: each device's block of it is ``[its gate part, its up part]``. An op computes on such a
value locally when it

* keeps the packed dim whole (a view moving it, an elementwise op with operands packed
  alike, the contraction of a packed dim against one packed alike, a lookup off it): the
  result is packed the same way (:func:`pieces_after`);
* cuts it into its pieces (``chunk(2)``, ``split``, one piece's ``slice``): each piece is
  an ordinary split (:func:`cut`), which is how the gate and up halves come apart; and
  the ``cat`` of such pieces in the backward (the halves' gradients) packs them again
  (:func:`join`).

Anything else would read the pieces in the wrong order: the placer refuses it by name
(a packed value is never resharded; hir-convert-to-communication refuses that too).
"""

from torch_mlir import ir
from torch_mlir.dialects import torch as T

from hir.frontend.strategies import PARTIAL, OpPlacement, op_key
from hir.frontend.torch_ir import constant_value_or, shape_of, tensor_info

_CHUNK, _SPLIT, _SPLIT_SIZES, _SLICE, _CAT = (
    c.OPERATION_NAME
    for c in (T.AtenChunkOp, T.AtenSplitTensorOp, T.AtenSplitWithSizesOp, T.AtenSliceTensorOp, T.AtenCatOp)
)


class PackedError(ValueError):
    """An op that cannot compute on a packed split locally (the message says why)."""


def _dim(op: ir.Operation, index: int, rank: int) -> int | None:
    d = constant_value_or(op.operands[index], None)
    return None if not isinstance(d, int) else d % rank


def cut(op: ir.Operation, operands: list, pieces: list[int]) -> int | None:
    """The split of the pieces when ``op`` cuts its packed operand 0 into its pieces along
    the packed dim (each piece an ordinary split there), else None."""
    if not operands or pieces[0] < 2 or operands[0][1] is None:
        return None
    (source, split), n = operands[0], pieces[0]
    shape = shape_of(source)
    extent, rank = shape[split], len(shape)
    name = op_key(op)
    if name == _CHUNK and _dim(op, 2, rank) == split and constant_value_or(op.operands[1], None) == n:
        return split
    if name == _SPLIT and _dim(op, 2, rank) == split and constant_value_or(op.operands[1], None) == extent // n:
        return split
    if (
        name == _SPLIT_SIZES
        and _dim(op, 2, rank) == split
        and constant_value_or(op.operands[1], None) == [extent // n] * n
    ):
        return split
    if name == _SLICE and _dim(op, 1, rank) == split:
        start, end, step = (constant_value_or(v, None) for v in op.operands[2:5])
        piece = extent // n
        if (
            step == 1
            and isinstance(start, int)
            and isinstance(end, int)
            and start % piece == 0
            and min(end, extent) - start == piece
        ):
            return split
    return None


def regroup(op: ir.Operation, operands: list, pieces: list[int]) -> tuple[int, int] | None:
    """(the result's split, its pieces) when ``op`` cuts a packed value into its pieces
    (:func:`cut`: each a plain split) or packs pieces again (:func:`join`), else None."""
    split = cut(op, operands, pieces)
    if split is not None:
        return split, 1
    split = join(op, operands, pieces)
    return None if split is None else (split, len(operands))


def join(op: ir.Operation, operands: list, pieces: list[int]) -> int | None:
    """The split of the result when ``op`` concatenates its operands, each split in plain
    blocks along the concatenated dim and of one extent there, into a value packed of them
    (the gradient of a packed value cut into its pieces: each device's block is its part of
    each piece), else None."""
    if op_key(op) != _CAT or len(operands) < 2 or any(n != 1 for n in pieces):
        return None
    split = operands[0][1]
    if split is None or _dim(op, 1, len(shape_of(op.results[0]))) != split:
        return None
    if any(s != split or shape_of(v)[split] != shape_of(operands[0][0])[split] for v, s in operands):
        return None
    return split


def pieces_after(
    op: ir.Operation, operands: list, pieces: list[int], placement: OpPlacement, read: list, index: int = 0
) -> int:
    """The pieces of ``op``'s result ``index`` on one mesh axis, placed as ``placement`` from
    ``operands`` ((value, split) pairs, ``pieces`` each; ``read``: the split each is read
    as), or PackedError when the op would mix up the pieces."""
    packed = [(v, s, n) for (v, s), n in zip(operands, pieces) if n > 1]
    if not packed:
        return 1
    if any(n > 1 and r != s for (_, s), n, r in zip(operands, pieces, read)):
        raise PackedError("would move it (gather it, or split it otherwise)")
    if len({n for n, r in zip(pieces, read) if r is not None}) != 1:
        raise PackedError("combines it with a value split in plain blocks (or one it would slice in blocks)")
    output, result = placement.outputs(len(op.results))[index], op.results[index]
    if output is PARTIAL:
        return 1  # the packed dim contracted against one packed alike: each device's sum is whole
    value, split, n = packed[0]
    info = tensor_info(result.type)
    if not isinstance(output, int) or info is None:  # (a split: PARTIAL returned above)
        raise PackedError("has no result split like it")
    if info[0][output] != shape_of(value)[split]:
        raise PackedError("changes the extent of the packed dim")
    return n


def local_cut(op: ir.Operation, source: ir.Value, parts: int) -> dict[int, int | list[int]]:
    """The constant operands of a cut (:func:`cut`) on one device's part, whose packed dim
    holds ``1 / parts`` of each piece: {operand index: value} (a split size, a slice's bounds)."""
    name, shape = op_key(op), shape_of(source)
    dim = _dim(op, 2 if name != _SLICE else 1, len(shape))
    assert dim is not None, "a cut's dim is a constant (cut() matched it)"
    extent = shape[dim]
    if name == _SPLIT:
        return {1: constant_value_or(op.operands[1], None) // parts}
    if name == _SPLIT_SIZES:
        return {1: [n // parts for n in constant_value_or(op.operands[1], None)]}
    if name == _SLICE:
        start, end = (constant_value_or(v, None) for v in op.operands[2:4])
        return {2: start // parts, 3: min(end, extent) // parts}
    return {}
