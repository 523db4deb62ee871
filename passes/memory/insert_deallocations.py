"""``hir-insert-deallocations``: free each intermediate buffer right after its last use
(nvFuser's InsertDeallocations). A use nested in a loop counts as the loop; uses of an
``alias_select`` view count as uses of the buffer it views; a collective's use lasts until
the ``hir.wait`` on its token (the transfer may still read or write the buffer before); a
last use followed by a join of the pool streams (``hir.synchronize``, or an ``hir.for``
marked ``hir.joins_pool_streams``, which its verifier checks) lasts until the join, since the use may still be running
on a pool stream, and so does a last use issued on a pool stream with other ops before the join (a P2P
pipeline's step 0). Buffers returned by the function (directly or through a view) are program outputs and
program inputs are never allocated here, so neither is freed. Allocations inside ``hir.for``
bodies are freed inside the body.

Why a function pass: the fact it computes is each buffer's last use in its block's op order
(liveness, through views and collective tokens, extended to the next join of the pool
streams), and which ops run on a pool stream is the state the block's last
``hir.set_current_stream`` before each left: both come from one scan of each block (an op's
index costs O(index) to find), then each allocation, in program order, gets its
deallocation. It only creates ops (the deallocations).

Before::

    %t = memref.alloc() : memref<8xf32>
    "hir.set"(%in, %t) : (memref<8xf32>, memref<8xf32>) -> ()
    %out = memref.alloc() : memref<8xf32>
    "hir.binary"(%t, %t, %out) {kind = "add"} : (...) -> ()
    return %out : memref<8xf32>

After::

    %t = memref.alloc() : memref<8xf32>
    "hir.set"(%in, %t) : (memref<8xf32>, memref<8xf32>) -> ()
    %out = memref.alloc() : memref<8xf32>
    "hir.binary"(%t, %t, %out) {kind = "add"} : (...) -> ()
    memref.dealloc %t : memref<8xf32>
    return %out : memref<8xf32>
"""

from collections.abc import Iterator
from dataclasses import dataclass

from torch_mlir import ir
from torch_mlir.dialects import func, scf

from hir.dialect import ForOp, GetCurrentStreamOp, GetStreamOp, SetCurrentStreamOp, SynchronizeOp, WorkType, is_view
from hir.dialect.control import JOINS_POOL_STREAMS_ATTR
from hir.dialect.irutils import ALLOC, DEALLOC
from hir.passes.base import FunctionPass, register_pass

_RETURNS = (func.ReturnOp.OPERATION_NAME, scf.YieldOp.OPERATION_NAME)  # the buffer escapes: never freed here


@register_pass
@dataclass
class InsertDeallocations(FunctionPass):
    name = "hir-insert-deallocations"
    description = "Deallocate each intermediate memref.alloc after its last use (never inputs or outputs)."

    def run_on_function(self, fn: ir.Operation) -> None:
        for block in _blocks(fn):
            free_after_last_uses(block)


def _blocks(op: ir.Operation) -> Iterator[ir.Block]:
    """The blocks of ``op``'s regions and of the ops nested in them."""
    for region in op.regions:
        for block in region.blocks:
            yield block
            for inner in block.operations:
                if inner.operation.regions:
                    yield from _blocks(inner.operation)


def free_after_last_uses(block: ir.Block) -> None:
    """A ``memref.dealloc`` after the last use of each allocation of ``block``, in program
    order (so of two buffers dead after the same op, the later one is freed first), except
    buffers that escape or are freed already. The block's op order is listed once, before
    any deallocation goes in (an op's index in a block costs O(index) to find)."""
    ops = [op.operation for op in block.operations]
    position = {op: i for i, op in enumerate(ops)}
    on_pool = _on_pool_stream(ops)
    for alloc in [op for op in ops if op.name == ALLOC]:
        last = _last_use(alloc, ops, position, on_pool)
        if last is not None:
            ir.Operation.create(DEALLOC, operands=[alloc.result], loc=alloc.location, ip=ir.InsertionPoint.after(last))


def _users(value: ir.Value) -> list[ir.Operation]:
    """Ops using ``value``, through views and collective tokens."""
    users, pending = [], [value]
    while pending:
        for use in pending.pop().uses:
            user = use.owner.operation
            users.append(user)
            results = user.results
            if len(results) == 1 and (is_view(user) or isinstance(results[0].type, WorkType)):
                pending.append(results[0])
    return users


def _last_use(alloc: ir.Operation, ops: list[ir.Operation], position: dict, on_pool: list[bool]) -> ir.Operation | None:
    """The op of the block (``ops``, their indices in ``position``; ``on_pool``: which run on
    a pool stream) after which the buffer is dead; None to leave it alone (returned, already
    freed). O(uses of the buffer): the block's facts are listed once by the caller."""
    last_index = position[alloc]
    for user in _users(alloc.result):
        if user.name in _RETURNS or user.name == DEALLOC:
            return None
        last_index = max(last_index, _index_in_block(user, position))
    if on_pool[last_index]:  # issued on a pool stream: it lasts until the next join
        joins = (
            i
            for i in range(last_index + 1, len(ops))
            if _joins(ops[i]) and ops[i].name != SetCurrentStreamOp.OPERATION_NAME
        )
        last_index = next(joins, last_index)
    while last_index + 1 < len(ops) and _joins(ops[last_index + 1]):
        last_index += 1  # a use on a pool stream lasts until the user stream joins it
    return ops[last_index]


def _on_pool_stream(ops: list[ir.Operation]) -> list[bool]:
    """For each op of a block (``ops``), whether it runs on a pool stream: the block's last
    ``hir.set_current_stream`` before it picks a ``hir.get_stream``. Freed on the host right
    after such a use (a P2P pipeline's local step 0, with other work after it on the user
    stream before the join), the buffer could go to an allocation whose kernels run before
    the use is done. One forward scan of the block."""
    found, pool = [], False
    for op in ops:
        found.append(pool)
        if op.name == SetCurrentStreamOp.OPERATION_NAME:
            owner = op.operands[0].owner
            pool = not isinstance(owner, ir.Block) and owner.name == GetStreamOp.OPERATION_NAME
    return found


def _joins(op: ir.Operation) -> bool:
    """``hir.synchronize``, a return to the user stream (``hir.set_current_stream`` of a
    ``hir.get_current_stream``) before one, or a loop marked as a join of the pool streams."""
    if op.name == SynchronizeOp.OPERATION_NAME:
        return True
    if op.name == SetCurrentStreamOp.OPERATION_NAME:
        owner = op.operands[0].owner
        return not isinstance(owner, ir.Block) and owner.name == GetCurrentStreamOp.OPERATION_NAME
    return op.name == ForOp.OPERATION_NAME and JOINS_POOL_STREAMS_ATTR in op.attributes


def _index_in_block(op: ir.Operation, position: dict) -> int:
    """Index in the block of ``op`` or of the op enclosing it that sits there (-1: outside)."""
    while op is not None:
        index = position.get(op)
        if index is not None:
            return index
        op = op.parent
        op = op.operation if op is not None else None
    return -1
