"""Rematerialization at the cuts of a compute region: a piece of a cut region
(:mod:`hir.interpreter.repeats`) runs again, at its start, the cheap elementwise writes of
values an earlier piece made, instead of taking those values as inputs.

Compiled whole, a training step's region lets inductor inline pointwise producers into
every consumer: the RMSNorm's ``x * rsqrt(var)``, the weight it scales by, its bf16 cast,
``silu(gate)`` are recomputed by the backward's kernels from the residual and the
statistics the backward keeps anyway, never stored. Cut into layers, each value a forward
piece writes and a backward piece reads is returned by the one and passed to the other: a
buffer that lives from the forward to the backward. Recomputing such a value in the reading
piece gives inductor the same choice again (what AOTAutograd's min-cut partitioner does for
``torch.compile``)::

    piece 1 (forward layer)                 piece 7 (its backward)
      %n = alloc; binary mul(%x, %r, %n)      binary mul(%x, %r, %n)   <- run again here
      %c = alloc; call @cast(%n, %w, %c)      call @cast(%n, %w, %c)   <- and here
      matmul(%c, ...)                         ... reads %c, %x, %r
      (returns %x, %r; no longer %n, %c)

A value ``%v`` read by piece Q is recomputed there when its writer W (the op it is a bound
destination of, :meth:`~hir.interpreter.plan.Compiler.bound_operands`) lies in a piece P of
the same region that ran at least one piece before Q (from the piece just before, a value is
freed as soon as it is read: nothing to save) and

- W is elementwise: an hir compute op whose class says ``ELEMENTWISE``, or a call of a
  kernel segment made of pointwise torch ops, dtype casts and views only;
- every operand W writes is bound to W (it allocates nothing else and writes nothing in place);
- every operand W reads is live at Q's start anyway: a function argument, a value Q reads
  itself, or a value written in P that Q recomputes the same way (not further back: a chain
  through earlier pieces would run a model's elementwise layers again); so no buffer lives
  longer than before;
- nothing writes those operands between W and Q.

Every destination of W is then defined in Q. A piece returns a value only when a later op
that is in no piece recomputing it uses it (:meth:`Rematerialized.returned`). Layers of one
model make the same decisions, so their pieces keep equal keys and still share one compile.
"""

from dataclasses import dataclass, field

import torch
from torch_mlir import ir
from torch_mlir.dialects import func, memref

from hir.dialect import OP_CLASSES, ComputeOp
from hir.dialect.compute import KERNEL_ATTR
from hir.dialect.irutils import ancestor_in, uses_through_views, written_operands
from hir.interpreter.destinations import view_root, writes_use
from hir.interpreter.plan import Compiler
from hir.interpreter.updates import overload_of

_CALL = func.CallOp.OPERATION_NAME
_DEALLOC = memref.DeallocOp.OPERATION_NAME
# Ops of a kernel segment that compute nothing: constants, lists of them, the bridges
# between memrefs and torch tensors, the writes into destinations.
_PLUMBING = (
    "torch.constant.",
    "torch.prim.ListConstruct",
    "bufferization.",
    "builtin.unrealized_conversion_cast",
    "func.return",
)
_CASTS = ("aten::_to_copy", "aten::_unsafe_view")


@dataclass
class Rematerialized:
    """The region's pieces with what each runs again: ``recomputed[k]``, the writers piece
    ``k`` runs at its start (in order); ``local[k]``, the values they define there."""

    pieces: list[list]
    block: ir.Block  # the function body the region's ops are in
    recomputed: list[list] = field(default_factory=list)
    local: list[set] = field(default_factory=list)
    piece_of: dict = field(default_factory=dict)  # top-level op -> index of its own piece
    position: dict = field(default_factory=dict)  # top-level op -> its index in the region
    members: list[set] = field(default_factory=list)  # per piece: the ops it runs

    def ops(self, k: int) -> list:
        """What piece ``k`` runs: its recomputed writers, then its own ops."""
        return self.recomputed[k] + self.pieces[k]

    def returned(self, k: int, value: ir.Value) -> bool:
        """Whether piece ``k`` returns ``value`` (one it defines, not one it recomputes): an
        op outside it that is in no piece recomputing ``value`` uses it."""
        if value in self.local[k]:
            return False
        for use in value.uses:
            user = ancestor_in(use.owner.operation, self.block)
            if user is None or user in self.members[k]:
                continue
            piece = self.piece_of.get(user)
            if piece is None or value not in self.local[piece]:  # (None: after the region)
                return True
        return False


def rematerialize(c: Compiler, pieces: list[list], compiled: list[bool]) -> Rematerialized:
    """Decide, for each piece of one region (``pieces``, in the order they run), which
    writers of earlier pieces it runs again (see the module docstring); a piece that is not
    ``compiled`` (it runs op by op, on the function's own values) runs none."""
    plan = Rematerialized(pieces, pieces[0][0].operation.block)
    for k, piece in enumerate(pieces):
        for op in piece:
            plan.piece_of[op.operation] = k
    order = (op.operation for op in plan.block.operations)
    plan.position = {op: i for i, op in enumerate(order) if op in plan.piece_of}
    for k, piece in enumerate(pieces):
        reads = _inputs(piece)
        chooser = _Chooser(c, plan, k, set(reads))
        if compiled[k]:  # (a value the piece only deallocates is not worth recomputing)
            used = {v for op in piece if op.operation.name != _DEALLOC for v in op.operation.operands}
            for value in reads:
                if value in used:
                    chooser.recompute(value)
        plan.recomputed.append(chooser.ops)
        plan.local.append(chooser.local)
        plan.members.append({op.operation for op in plan.ops(k)})
    return plan


class _Chooser:
    """The writers piece ``k`` of ``plan`` runs again, chosen value by value."""

    def __init__(self, c: Compiler, plan: Rematerialized, k: int, reads: set) -> None:
        self.c, self.plan, self.k = c, plan, k
        self.ops: list = []
        self.local: set = set()
        self.reads = reads  # what the piece's own ops read from outside it
        self.block = plan.block
        self.visiting: set = set()
        self.pinned: set = set()  # values a recomputed writer reads as the piece's inputs

    def recompute(self, value: ir.Value, home: int | None = None) -> bool:
        """Whether ``value`` is (now) defined in the piece by a writer it runs again;
        ``home``: the piece that writer must be in (that of the value first asked for: a
        chain of writers through earlier pieces would run a whole model's elementwise
        layers again)."""
        if value in self.local:
            return True
        if value in self.pinned:
            return False
        writer = self.c.bound_by(value)
        piece = self.plan.piece_of.get(writer) if writer is not None else None
        if writer is None or piece is None or writer in self.visiting:
            return False
        # (from the piece just before, the value is freed as soon as it is read: nothing to save)
        if piece != home if home is not None else piece >= self.k - 1:
            return False
        bound = {i for i, _ in self.c.bound_operands(writer)}
        if not _elementwise(self.c, writer) or set(_written(self.c, writer) or ()) != bound:
            return False
        if any(self._written_by_other(writer.operands[i], writer) for i in bound):
            return False  # (its value changes after W: W's output alone is not it)
        kept = len(self.ops), set(self.local), set(self.pinned)
        self.visiting.add(writer)
        try:
            ready = all(i in bound or self._available(v, writer, piece) for i, v in enumerate(writer.operands))
        finally:
            self.visiting.discard(writer)
        if not ready:  # (what was recomputed for it goes too)
            del self.ops[kept[0] :]
            self.local, self.pinned = kept[1], kept[2]
            return False
        self.ops.append(writer)
        self.local.update(writer.operands[i] for i in bound)
        return True

    def _available(self, value: ir.Value, writer: ir.Operation, home: int) -> bool:
        """Whether operand ``value`` of ``writer`` (in piece ``home``) holds at the piece's
        start what it held when ``writer`` ran, without living longer for it."""
        if self.recompute(value, home):
            return True
        owner = value.owner
        if not (isinstance(owner, ir.Block) and owner == self.block) and value not in self.reads:
            return False
        self.pinned.add(value)  # (recomputed after the writer reading it, it would be an input none returns)
        return not self._written_between(value, writer)

    def _written_between(self, value: ir.Value, writer: ir.Operation) -> bool:
        """Whether an op that runs after ``writer`` and before the piece (pieces run in
        order, each in block order) writes ``value``; a function argument may be the same
        tensor as another, so then a write of any argument counts."""
        root = view_root(value)
        roots = list(self.block.arguments) if isinstance(root.owner, ir.Block) else [root]
        piece, at = self.plan.piece_of[writer], self.plan.position[writer]
        for root in roots:
            for use in uses_through_views(root):
                user = ancestor_in(use.owner.operation, self.block)
                other = self.plan.piece_of.get(user) if user is not None else None
                if other is None or not (piece < other < self.k or (other == piece and self.plan.position[user] > at)):
                    continue
                if writes_use(use, self.c.destinations.written_by):
                    return True
        return False

    def _written_by_other(self, value: ir.Value, writer: ir.Operation) -> bool:
        """Whether an op other than ``writer`` writes ``value`` (or a view of it)."""
        return any(
            use.owner.operation != writer and writes_use(use, self.c.destinations.written_by)
            for use in uses_through_views(view_root(value))
        )


def _written(c: Compiler, op: ir.Operation) -> frozenset[int] | tuple | None:
    """The operands ``op`` writes (None: unknown)."""
    return c.destinations.written_by(op) if op.name == _CALL else written_operands(op)


def _elementwise(c: Compiler, op: ir.Operation) -> bool:
    """An hir compute op declared ``ELEMENTWISE``, or a call of a kernel segment whose torch
    ops are all pointwise, dtype casts or views."""
    cls = OP_CLASSES.get(op.name)
    if cls is not None:
        return issubclass(cls, ComputeOp) and cls.ELEMENTWISE
    if op.name != _CALL:
        return False
    name = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
    callee = c.functions.get(name)
    return callee is not None and KERNEL_ATTR in callee.operation.attributes and _pointwise_body(callee)


def _pointwise_body(callee: ir.OpView) -> bool:
    """Whether a kernel segment's torch ops are all pointwise (and draw no random numbers),
    dtype casts or views."""
    for block in callee.regions[0].blocks:
        for op in block.operations:
            op = op.operation
            if op.name.startswith(_PLUMBING):
                continue
            overload = overload_of(op)
            if overload is None:
                return False
            schema = overload._schema
            alias = schema.returns[0].alias_info if len(schema.returns) == 1 else None
            view = alias is not None and not alias.is_write
            if torch.Tag.nondeterministic_seeded in overload.tags:  # (run again, it draws other numbers)
                return False
            if not (torch.Tag.pointwise in overload.tags or schema.name in _CASTS or view):
                return False
    return True


def _inputs(piece: list) -> list[ir.Value]:
    """The values ``piece`` reads that no op of it defines, in the order it reads them."""
    members = {op.operation for op in piece}
    found: dict = {}
    for op in piece:
        for value in op.operation.operands:
            owner = value.owner
            if isinstance(owner, ir.Block) or owner.operation not in members:
                found.setdefault(value, None)
    return list(found)
