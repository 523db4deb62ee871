"""What the placer (:mod:`hir.frontend.placer`) asks of one op of a kernel segment: its
tensor operands with their splits, whether it is a partial sum (a step of its own), and
whether it may read replicated operands as slices."""

from collections.abc import Callable

from torch_mlir import ir

from hir.frontend.strategies import PARTIAL, NoRule, OpCall, OpPlacement, op_key, strategy_for
from hir.frontend.torch_ir import LIST_CONSTRUCT, is_tensor, shape_of


class Cut(Exception):
    """An op of a segment reads a replicated value computed inside it as split: the segment
    ends before ``op``, so the next one reads that value as a sliced input."""

    def __init__(self, op: ir.Operation) -> None:
        super().__init__(op.name)
        self.op = op


class PartialOp(Exception):
    """A segment op placed as a partial sum on mesh axis ``axis``: it becomes a step of its own."""

    def __init__(self, op: ir.Operation, axis: int, form: Callable) -> None:
        super().__init__(op.name)
        self.op, self.axis, self.form = op, axis, form


def segment_partial(op: ir.Operation, splits: dict, k: int, devices: int) -> PartialOp | None:
    """``op`` (operands split as ``splits`` on mesh axis ``k`` of ``devices``) as a segment
    op placed as a partial sum (its operands read as placed), where its segment strategy
    has that form; else None."""
    strategy = strategy_for(op_key(op))
    if strategy is None or strategy.partial_form is None or len(op.results) != 1:
        return None
    operands = operands_of(op, splits)
    try:
        placement = strategy.place(OpCall(op, operands, devices))
    except NoRule:
        return None
    local = placement.inputs == tuple(s for _, s in operands)
    return PartialOp(op, k, strategy.partial_form) if placement.output is PARTIAL and local else None


def split_before(op: ir.Operation, value: ir.Value, wanted: int | None, devices: int) -> int | None:
    """The split of ``value``, ``op``'s one tensor operand, that ``op``'s strategy keeps
    local and maps to ``wanted`` (a transpose's other dim, a view's dim); None if none does."""
    strategy = strategy_for(op_key(op))
    if wanted is None or strategy is None or len(operands_of(op, {})) != 1:
        return None
    shape = shape_of(value)
    for split in (d for d, n in enumerate(shape) if n > 0 and n % devices == 0):
        try:
            placement = strategy.place(OpCall(op, [(value, split)], devices))
        except (NoRule, ValueError, TypeError, AttributeError, IndexError):
            continue
        if placement.inputs == (split,) and placement.output == wanted:
            return split
    return None


def read_slices(op: ir.Operation, operands: list, placement: OpPlacement, inputs: list, read: set, out: dict) -> bool:
    """Whether ``op`` can read its replicated operands that ``placement`` wants split as
    slices (each device holds all of them): a segment input no op before read is read
    split (``out`` updated); a value made inside the segment ends it before ``op`` (:class:`Cut`)."""
    wanted = [(v, w) for (v, s), w in zip(operands, placement.inputs) if s != w]
    if placement.output is PARTIAL or any(s is not None and s != w for (_, s), w in zip(operands, placement.inputs)):
        return False
    if any(v not in inputs or v in read for v, _ in wanted):
        raise Cut(op)
    out.update(wanted)
    return True


def operands_of(op: ir.Operation, splits: dict) -> list:
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
