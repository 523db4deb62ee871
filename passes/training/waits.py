"""The ``defer-waits`` pattern of ``hir-schedule-data-parallel`` (:mod:`.schedule`), and what
the schedule's patterns know of a collective's buffers. A collective's ``hir.wait`` moves down to just before the first
op that touches one of its buffers (or a view of one): a gradient's reduce-scatter (an allreduce
with ``replicate``) is issued as soon as the gradient exists and waited only where the
optimizer's update reads it, so the backward of the layers before it runs while it is in
flight; a gathered parameter's wait sits right before its first reader. The program
computes the same values (every reader of a buffer still comes after its wait);
``hir-insert-deallocations`` then keeps the buffers until the moved wait.

Before::

    %w = "hir.reduce_scatter"(%grad, %shard) {...} : (...) -> !hir.work
    "hir.wait"(%w) : (!hir.work) -> ()
    call @backward_of_the_layer_before(%x, %y)
    "hir.binary"(%p, %shard, %p) {kind = "sub"}

After::

    %w = "hir.reduce_scatter"(%grad, %shard) {...} : (...) -> !hir.work
    call @backward_of_the_layer_before(%x, %y)
    "hir.wait"(%w) : (!hir.work) -> ()
    "hir.binary"(%p, %shard, %p) {kind = "sub"}

The pattern is rooted on ``hir.wait``; a wait it moved already sits before its first reader,
so visiting it again matches nothing.
"""

from torch_mlir import ir, rewrite


def _memrefs(op: ir.Operation) -> list:
    return [v for v in op.operands if isinstance(v.type, ir.MemRefType)]


def touched_buffers(collective: ir.Operation) -> set:
    """The buffers ``collective`` reads or writes, the buffers they view, and every view of
    those (an op that takes one of them and returns a memref)."""
    roots, seen = list(_memrefs(collective)), set()
    while roots:  # up: what each buffer is a view of
        value = roots.pop()
        if value in seen:
            continue
        seen.add(value)
        owner = value.owner
        if not isinstance(owner, ir.Block):
            roots += _memrefs(owner)
    return with_views(seen)  # down: every view of them


def with_views(values) -> set:
    """``values`` and every view of them (the ops that take one and return a memref), transitively."""
    seen = set(values)
    frontier = list(seen)
    while frontier:
        for use in frontier.pop().uses:
            for result in use.owner.results:
                if isinstance(result.type, ir.MemRefType) and result not in seen:
                    seen.add(result)
                    frontier.append(result)
    return seen


def reads_any(op: ir.Operation, values: set) -> bool:
    """Whether ``op`` or an op nested in it has an operand in ``values``."""
    if any(v in values for v in op.operands):
        return True
    return any(reads_any(inner, values) for region in op.regions for block in region for inner in block)


def defer_wait(op: ir.OpView, rewriter: rewrite.PatternRewriter) -> bool:
    work = op.operands[0]
    if isinstance(work.owner, ir.Block):
        return True  # a token passed in: its buffers are not known here
    touched = touched_buffers(work.owner)
    ops = list(op.operation.block.operations)
    at = ops.index(op.operation)
    first = first_reader(ops, at + 1, touched)
    if all(o.name == op.operation.name for o in ops[at + 1 : first]):
        return True  # already just before its first reader (or other waits for it): no match
    op.operation.move_before(ops[first])
    return False


def first_reader(ops: list, start: int, touched: set) -> int:
    """The index of the first op of ``ops`` from ``start`` that touches ``touched`` (the
    block's terminator if none does)."""
    return next(i for i in range(start, len(ops)) if reads_any(ops[i], touched) or i == len(ops) - 1)
