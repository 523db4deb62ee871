"""The ``prefetch`` pattern of ``hir-schedule-data-parallel`` (:mod:`.schedule`): each
all-gather of a parameter's shard (an argument of the function) is issued, with the
allocation it writes, right before the first reader of the parameter gathered before it
(in the order the program first reads them), so it is in flight while the layer before
computes: the next layer's all-gather prefetched. The first-read gather stays where it is.
It moves only across ops that touch none of its buffers (nothing writes the shard or the
gathered buffer before it); with ``defer-waits`` its wait then sits at its own first reader.

Before (``p0`` first read by ``@layer0``, ``p1`` by ``@layer1``; the gathers at the top)::

    %w0 = "hir.allgather"(%shard0, %p0)     "hir.wait"(%w0)
    %w1 = "hir.allgather"(%shard1, %p1)     "hir.wait"(%w1)
    call @layer0(%x, %p0, ...)
    call @layer1(%h, %p1, ...)

After (with ``defer-waits``)::

    %w0 = "hir.allgather"(%shard0, %p0)
    "hir.wait"(%w0)
    %w1 = "hir.allgather"(%shard1, %p1)
    call @layer0(%x, %p0, ...)
    "hir.wait"(%w1)
    call @layer1(%h, %p1, ...)
"""

from torch_mlir import ir, rewrite
from torch_mlir.dialects import memref

from hir.dialect import AllgatherOp, WaitOp
from hir.passes.training.waits import first_reader, reads_any, touched_buffers

_GATHER, _WAIT, _ALLOC = AllgatherOp.OPERATION_NAME, WaitOp.OPERATION_NAME, memref.AllocOp.OPERATION_NAME


def _parameter_gathers(ops: list) -> list:
    """(index of its first reader, the gather) for each all-gather of a function argument
    into a buffer allocated in the block, by first reader (waits read no buffer)."""
    found = []
    for i, op in enumerate(ops):
        if op.name == _GATHER and isinstance(op.operands[0].owner, ir.Block) and not isinstance(op.operands[1].owner, ir.Block) \
                and op.operands[1].owner.name == _ALLOC:
            found.append((first_reader(ops, i + 1, touched_buffers(op)), op))
    return sorted(found, key=lambda item: item[0])


def prefetch_gather(op: ir.OpView, rewriter: rewrite.PatternRewriter) -> bool:
    gather = op.operation
    ops = list(gather.block.operations)
    order = _parameter_gathers(ops)
    at = next((k for k, (_, g) in enumerate(order) if g == gather), None)
    if not at:
        return True  # not a parameter's gather, or the first one read: it stays
    target, here = order[at - 1][0], ops.index(gather)
    between = ops[here + 1:target]
    if all(o.name in (_WAIT, _ALLOC, _GATHER) for o in between):
        return True  # already issued right before that reader (or after it)
    touched = touched_buffers(gather)
    if any(reads_any(o, touched) for o in between):
        return True  # something before the prefetch point touches its buffers
    alloc, anchor = op.operands[1].owner, ops[target]
    alloc.move_before(anchor)
    gather.move_before(anchor)
    for use in list(gather.results[0].uses):  # a wait now above its collective follows it
        if use.owner.name == _WAIT and ops.index(use.owner) < target:
            use.owner.move_before(anchor)
    return False
