"""The ``prefetch`` pattern of ``hir-schedule-data-parallel`` (:mod:`.schedule`): each
all-gather of a parameter's shard (an argument of the function) is issued, with the
allocation it writes, right before the first reader of the parameter gathered before it
(in the order the program first reads them), so it is in flight while the layer before
computes: the next layer's all-gather prefetched, forward and backward alike (a parameter
gathered again for the backward is one more gather in that order). The first-read gather
stays where it is. It moves only across ops that touch none of its buffers (nothing writes
the shard or the gathered buffer before it); with ``defer-waits`` its wait then sits at its
own first reader. A bucket's gather (:mod:`.fsdp_buckets`) moves with the allocation and
the copies in that issue it.

A prefetched gather is issued on the communication stream (pool stream ``comm_stream``,
high priority), so on a GPU the layer's kernels on the user stream do not queue behind it:
the comm stream first waits for the user stream's work so far (``hir.synchronize``: the
shard's last update is done), the gather is issued there, and the user stream is current
again; the ``hir.wait`` of the gather, on the user stream, is where its readers start.

Before (``p0`` first read by ``@layer0``, ``p1`` by ``@layer1``; the gathers at the top)::

    %w0 = "hir.allgather"(%shard0, %p0)     "hir.wait"(%w0)
    %w1 = "hir.allgather"(%shard1, %p1)     "hir.wait"(%w1)
    call @layer0(%x, %p0, ...)
    call @layer1(%h, %p1, ...)

After (with ``defer-waits``)::

    %w0 = "hir.allgather"(%shard0, %p0)
    "hir.wait"(%w0)
    %user = "hir.get_current_stream"()
    %comm = "hir.get_stream"(%c3)
    "hir.set_current_stream"(%comm)
    "hir.synchronize"(%user)
    %w1 = "hir.allgather"(%shard1, %p1)
    "hir.set_current_stream"(%user)
    call @layer0(%x, %p0, ...)
    "hir.wait"(%w1)
    call @layer1(%h, %p1, ...)
"""

from torch_mlir import ir, rewrite
from torch_mlir.dialects import arith, memref

from hir.dialect import (
    AliasReshapeOp,
    AllgatherOp,
    GetCurrentStreamOp,
    GetStreamOp,
    SetCurrentStreamOp,
    SetOp,
    SynchronizeOp,
    WaitOp,
)
from hir.dialect.irutils import index_const
from hir.passes.patterns import Pattern
from hir.passes.training.waits import first_reader, reads_any, touched_buffers

_GATHER, _WAIT, _ALLOC = AllgatherOp.OPERATION_NAME, WaitOp.OPERATION_NAME, memref.AllocOp.OPERATION_NAME
# what a prefetched gather brings along: a gather with only these between it and its
# target reader is in place
_ISSUE = {_WAIT, _ALLOC, _GATHER, arith.ConstantOp.OPERATION_NAME} | {
    op.OPERATION_NAME for op in (GetCurrentStreamOp, GetStreamOp, SetCurrentStreamOp, SynchronizeOp)
}


_COPY_IN = {_ALLOC, memref.SubViewOp.OPERATION_NAME, SetOp.OPERATION_NAME, AliasReshapeOp.OPERATION_NAME}


def _issue(gather: ir.Operation, ops: list) -> list | None:
    """The ops that issue ``gather`` if it gathers parameters into a buffer allocated in the
    block, in order, its output's allocation left out: the gather of a shard (an argument),
    or the gather of a bucket (:mod:`.fsdp_buckets`) with its allocation and copies in of
    shards. None for another gather."""
    gather, ops = gather.operation, [o.operation for o in ops]
    source, target = gather.operands
    if isinstance(target.owner, ir.Block) or target.owner.name != _ALLOC:
        return None
    if isinstance(source.owner, ir.Block):
        return [gather]
    if source.owner.name != _ALLOC or source.owner.operation.block != gather.block:
        return None
    group = ops[ops.index(source.owner.operation) : ops.index(gather) + 1]
    copies = [o for o in group if o.name == SetOp.OPERATION_NAME]
    if (
        any(o.name not in _COPY_IN for o in group[:-1])
        or not copies
        or not all(_root_is_argument(o.operands[0]) for o in copies)
    ):
        return None
    return [o for o in group if o != target.owner.operation]


def _root_is_argument(value: ir.Value) -> bool:
    while not isinstance(value.owner, ir.Block) and value.owner.name == AliasReshapeOp.OPERATION_NAME:
        value = value.owner.operands[0]
    return isinstance(value.owner, ir.Block)


def _parameter_gathers(ops: list) -> list:
    """(index of its first reader, the gather) for each gather of parameters (:func:`_issue`),
    by first reader (waits read no buffer)."""
    found = []
    for i, op in enumerate(ops):
        if op.name == _GATHER and _issue(op, ops) is not None:
            found.append((first_reader(ops, i + 1, touched_buffers(op)), op))
    return sorted(found, key=lambda item: item[0])


def prefetch_pattern(comm_stream: int) -> Pattern:
    """The pattern (rooted on ``hir.allgather``) that prefetches a parameter's gather (or a
    bucket's) on pool stream ``comm_stream``."""

    def prefetch_gather(op: ir.OpView, rewriter: rewrite.PatternRewriter) -> bool:
        gather = op.operation
        ops = list(gather.block.operations)
        order = _parameter_gathers(ops)
        at = next((k for k, (_, g) in enumerate(order) if g == gather), None)
        if not at:
            return True  # not a parameter's gather, or the first one read: it stays
        issue = _issue(gather, ops)
        assert issue is not None  # (_parameter_gathers keeps only gathers with one)
        target, here = order[at - 1][0], ops.index(gather)
        if target <= here:
            return True  # issued after that reader already: it stays
        between = ops[here + 1 : target]
        if ops[ops.index(issue[0]) - 1].name == SynchronizeOp.OPERATION_NAME and all(o.name in _ISSUE for o in between):
            return True  # already issued on the comm stream right before that reader
        touched = set().union(*(touched_buffers(o) for o in issue))
        if any(reads_any(o, touched) for o in between):
            return True  # something before the prefetch point touches its buffers
        alloc, anchor = op.operands[1].owner, ops[target]
        alloc.move_before(anchor)
        with ir.InsertionPoint(anchor), gather.location:
            user = GetCurrentStreamOp.emit(name="user_stream")
            comm = GetStreamOp.emit(index_const(comm_stream), name="comm_stream")
            SetCurrentStreamOp.emit(comm)
            SynchronizeOp.emit(user)  # the comm stream waits for the shard's last writer
        for o in issue:
            o.move_before(anchor)
        with ir.InsertionPoint(anchor), gather.location:
            SetCurrentStreamOp.emit(user)
        for use in list(gather.results[0].uses):  # a wait now above its collective follows it
            if use.owner.name == _WAIT and ops.index(use.owner) < target:
                use.owner.move_before(anchor)
        return False

    return prefetch_gather
