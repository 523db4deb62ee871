"""Axis maps: which axis of an operand an output axis comes from (nvFuser's
PairwiseLogicalDomainMap for the ops hir has). Used to slice operands per stream index and
to decide whether an op reshards (its operands' split axes do not line up with its output's).

``operand_axis(op, i, k)`` is the axis of operand ``i`` that output axis ``k`` reads, or None
when operand ``i`` has no such axis (a broadcast operand of lower rank, matmul's B for an M
axis, ...). Output operands map to themselves.
"""

from typing import Optional

from torch_mlir import ir

from hir.passes._ir import get_i64_array, get_int


def _rank(value: ir.Value) -> int:
    return ir.MemRefType(value.type).rank


def _right_aligned(out_rank: int, rank: int, k: int) -> Optional[int]:
    """NumPy broadcasting aligns trailing axes."""
    axis = k - (out_rank - rank)
    return axis if axis >= 0 else None


def output_index(op: ir.Operation) -> int:
    """The operand index of the buffer ``op`` writes (compute ops and collectives)."""
    return 2 if op.name in ("hir.binary", "hir.matmul", "hir.linear") else 1


def operand_axis(op: ir.Operation, index: int, k: int) -> Optional[int]:
    name = op.name
    if index == output_index(op):
        return k
    operand = op.operands[index]
    out_rank = _rank(op.operands[output_index(op)])
    if name == "hir.set":
        return k
    if name == "hir.binary":
        return _right_aligned(out_rank, _rank(operand), k)
    if name == "hir.reduction":
        reduced = set(get_i64_array(op, "axes"))
        kept = [i for i in range(_rank(operand)) if i not in reduced]
        return kept[k]
    if name == "hir.matmul":
        batch = out_rank - 2
        rank = _rank(operand)
        if k < batch:
            return _right_aligned(batch, rank - 2, k)
        if k == batch:  # M comes from A
            return rank - 2 if index == 0 else None
        return rank - 1 if index == 1 else None  # N comes from B
    if name == "hir.linear":
        last = out_rank - 1
        if index == 0:
            return k if k < last else None
        return 0 if k == last else None  # weight [N, K] and bias [N]
    if name in ("hir.allreduce", "hir.reduce", "hir.reduce_scatter"):
        reduced_axis = get_int(op, "axis")
        return k + (1 if k >= reduced_axis else 0)
    if name.startswith("hir."):  # the other collectives keep the input's axes
        return k
    return None


def is_broadcast_axis(op: ir.Operation, index: int, axis: int, k: int) -> bool:
    """True when operand ``index`` has a static extent 1 at ``axis`` while the output's
    axis ``k`` is not 1: the operand is broadcast there (every output index reads index 0)."""
    if op.name not in ("hir.binary", "hir.matmul"):
        return False
    size = ir.MemRefType(op.operands[index].type).shape[axis]
    out_size = ir.MemRefType(op.operands[output_index(op)].type).shape[k]
    return size == 1 and out_size != 1
