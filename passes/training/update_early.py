"""The ``optimizer-in-backward`` option of ``hir-schedule-data-parallel`` (:mod:`.schedule`):
the optimizer's update of a parameter's shard runs as soon as its reduced gradient arrives,
inside the backward, instead of after the last gradient's collective; the gradient's last
reader moves up with it, so ``hir-insert-deallocations`` frees it there.

The step's tail (every op after the wait of its last collective: the update) is scheduled
as early as it may be, op by op in order: each op moves up to just after the last op it
depends on (one that makes a value it uses, touches one of its buffers or a view of them,
waits on a collective that touches them, or changes the current stream), taking along the
allocations it writes into. An op never passes a dependency, so each buffer is read and
written in the same order as before: the values are the plain schedule's, element for
element.

Before::

    %w1 = "hir.reduce_scatter"(%partial1, %g1)
    "hir.wait"(%w1)
    call @backward_of_layer0(...)
    %w0 = "hir.reduce_scatter"(%partial0, %g0)
    "hir.wait"(%w0)
    "hir.binary"(%p1, %g1, %p1) {kind = "sub"}      // the tail: both updates
    "hir.binary"(%p0, %g0, %p0) {kind = "sub"}

After::

    %w1 = "hir.reduce_scatter"(%partial1, %g1)
    "hir.wait"(%w1)
    "hir.binary"(%p1, %g1, %p1) {kind = "sub"}      // layer 1's update, in the backward
    call @backward_of_layer0(...)
    %w0 = "hir.reduce_scatter"(%partial0, %g0)
    "hir.wait"(%w0)
    "hir.binary"(%p0, %g0, %p0) {kind = "sub"}

A whole-function decision (where the tail starts), so a plain walk of each function body,
not a pattern.
"""

from torch_mlir import ir
from torch_mlir.dialects import func, memref

from hir.dialect import (
    AllgatherOp,
    AllreduceOp,
    GetCurrentStreamOp,
    GetStreamOp,
    ReduceScatterOp,
    SetCurrentStreamOp,
    SynchronizeOp,
    WaitOp,
)
from hir.passes.training.waits import reads_any, touched_buffers

_COLLECTIVES = {op.OPERATION_NAME for op in (AllgatherOp, AllreduceOp, ReduceScatterOp)}
_STREAMS = {op.OPERATION_NAME for op in (GetCurrentStreamOp, GetStreamOp, SetCurrentStreamOp, SynchronizeOp)}
_ALLOC, _WAIT = memref.AllocOp.OPERATION_NAME, WaitOp.OPERATION_NAME


def _tail_start(ops: list) -> int:
    """The index of the first op after the last collective's wait (len(ops) if none)."""
    last = max((i for i, op in enumerate(ops) if op.name in _COLLECTIVES), default=None)
    if last is None:
        return len(ops)
    waits = [i for i, op in enumerate(ops) if op.name == _WAIT and op.operands[0].owner.operation == ops[last]]
    return max(waits, default=last) + 1


def _depends(op: ir.Operation, on: ir.Operation, buffers: set, carried: list) -> bool:
    """Whether ``op`` (touching ``buffers``) must stay after ``on``; an allocation it
    writes into is ``carried`` along instead."""
    if on.name in _STREAMS or on.name in _COLLECTIVES and reads_any(on, buffers):
        return True
    if on.name == _WAIT:
        owner = on.operands[0].owner
        return isinstance(owner, ir.Block) or bool(touched_buffers(owner) & buffers)
    made = set(on.results)
    if made and any(v in made for v in op.operands):
        if on.name == _ALLOC and not list(on.operands):
            carried.append(on)
            return False
        return True
    return reads_any(on, buffers)


def update_early(block: ir.Block) -> None:
    """Move each op of ``block``'s tail up to just after its last dependency."""
    ops = [o.operation for o in block.operations]  # Operations: a view's .name may be its symbol
    start = _tail_start(ops)
    for op in ops[start:-1]:
        if op.name == _ALLOC:
            continue  # moves with the op that writes into it
        current = [o.operation for o in block.operations]
        at = current.index(op)
        buffers, carried, target = touched_buffers(op), [], None
        for k in range(at - 1, -1, -1):
            if _depends(op, current[k], buffers, carried):
                target = current[k]
                break
        if target is None or all(o in carried for o in current[current.index(target) + 1 : at]):
            continue  # nothing before it to pass
        anchor = current[current.index(target) + 1]
        for alloc in carried:
            alloc.move_before(anchor)
        op.move_before(anchor)


def update_early_in_functions(module: ir.Module) -> None:
    for op in module.body.operations:
        if op.operation.name == func.FuncOp.OPERATION_NAME and len(op.regions[0].blocks):
            update_early(op.regions[0].blocks[0])
