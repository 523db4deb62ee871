"""``hir-insert-deallocations``: free each intermediate buffer right after its last use
(nvFuser's InsertDeallocations). A use nested in a loop counts as the loop; uses of an
``alias_select`` view count as uses of the buffer it views; a collective's use lasts until
the ``hir.wait`` on its token (the transfer may still read or write the buffer before); a
last use followed by a join of the pool streams (``hir.synchronize``, or a loop of them)
lasts until the join, since the use may still be running on a pool stream.
Buffers returned by the function (directly or through a view) are program outputs and
program inputs are never allocated here, so neither is freed. Allocations inside ``hir.for``
bodies are freed inside the body.

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

from dataclasses import dataclass
from typing import Iterator, Optional

from torch_mlir import ir

from hir.dialect.view_ops import ALIASING_OPS
from hir.passes._ir import blocks_postorder, func_ops
from hir.passes.base import ModulePass, register_pass

_RETURNS = ("func.return", "scf.yield")  # the buffer escapes: never freed here


@register_pass
@dataclass
class InsertDeallocations(ModulePass):
    name = "hir-insert-deallocations"
    description = "Deallocate each intermediate memref.alloc after its last use (never inputs or outputs)."

    def run(self, module: ir.Module) -> None:
        for func in func_ops(module):
            for block in blocks_postorder(func):
                _insert(block)


def _insert(block: ir.Block) -> None:
    ops = [op.operation for op in block.operations]
    allocs = [op for op in ops if op.name == "memref.alloc"]
    if not allocs:
        return
    position = {op: i for i, op in enumerate(ops)}
    for alloc in allocs:
        last = _last_use(alloc, block, position)
        if last is None:
            continue
        ir.Operation.create("memref.dealloc", operands=[alloc.result], loc=alloc.location, ip=ir.InsertionPoint.after(last))


def _users(value: ir.Value) -> Iterator[ir.Operation]:
    """Ops using ``value``, through views and collective tokens."""
    for use in value.uses:
        user = use.owner.operation if hasattr(use.owner, "operation") else use.owner
        yield user
        if user.name in ALIASING_OPS:
            yield from _users(user.result)
        elif len(user.results) == 1 and str(user.result.type) == "!hir.work":
            yield from _users(user.result)


def _last_use(alloc: ir.Operation, block: ir.Block, position: dict) -> Optional[ir.Operation]:
    """The op of ``block`` after which the buffer is dead; None to leave it alone (returned,
    already freed)."""
    last, last_index = alloc, position[alloc]
    for user in _users(alloc.result):
        if user.name in _RETURNS or user.name == "memref.dealloc":
            return None
        anchor = _ancestor_in(user, block)
        index = position.get(anchor, -1) if anchor is not None else -1
        if index > last_index:
            last, last_index = anchor, index
    ops = list(position)
    while last_index + 1 < len(ops) and _is_join(ops[last_index + 1]):
        last_index += 1  # a use on a pool stream lasts until the user stream joins it
        last = ops[last_index]
    return last


def _is_join(op: ir.Operation) -> bool:
    """``hir.synchronize``, or a loop doing nothing else (joining the pool streams)."""
    if op.name == "hir.synchronize":
        return True
    if op.name != "hir.for":
        return False
    body = [o.operation.name for o in op.regions[0].blocks[0].operations]
    return set(body) <= {"hir.get_stream", "hir.synchronize", "hir.yield"} and "hir.synchronize" in body


def _ancestor_in(op: ir.Operation, block: ir.Block) -> Optional[ir.Operation]:
    """``op`` or the op enclosing it that sits directly in ``block``."""
    while op is not None:
        if op.block == block:
            return op
        op = op.parent
        op = op.operation if op is not None and hasattr(op, "operation") else op
    return None
