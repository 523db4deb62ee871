"""Mutated state written by its kernel segment itself: no fresh buffer and no
``hir.set`` back into the argument.

An exported module that writes a state entry in place (HF's ``index_copy_`` into a KV cache)
is functionalized: the torch function returns the entry's new value, which
:meth:`~hir.frontend.partition.Partitioner.build` copies into the argument at the end of
``@main``. When that value is a kernel segment's result, the segment materializes it into a
fresh buffer first, so every step copies the whole entry twice (and ``index_copy`` clones it
once more)::

    %new = memref.alloc() : memref<1x2x16x8xf32>
    call @segment_9(..., %cache, ..., %new, ...)       // reads %cache (arg 1), writes %new (arg 9)
    ...
    "hir.set"(%new, %cache)                            // end of @main

    func.func private @segment_9(..., %arg1: memref<1x2x16x8xf32>, ..., %arg9: memref<1x2x16x8xf32>, ...) {
      %2 = bufferization.to_tensor %arg1 restrict : ...
      %17 = torch.operator "torch.aten.index_copy"(%3, %int2, %5, %7) ...
      bufferization.materialize_in_destination %35 in restrict writable %arg9

:func:`write_in_place` passes the argument itself as the segment's destination instead; a
segment that also reads the argument reads and writes it through ONE block argument (a call
passing one buffer twice would break the interpreter's binding and aliasing rules, see
:mod:`hir.interpreter.destinations`)::

    call @segment_9(..., %cache, ...)                  // no alloc, no hir.set

    func.func private @segment_9(..., %arg1: memref<1x2x16x8xf32>, ...) {
      %2 = bufferization.to_tensor %arg1 restrict writable : ...
      %17 = torch.operator "torch.aten.index_copy"(%3, %int2, %5, %7) ...
      ...                                              // the other results' materializations
      bufferization.materialize_in_destination %35 in writable %arg1
      return

``writable`` on the ``to_tensor`` says (as upstream bufferization reads it) that the buffer
may be updated in place; ``restrict`` moves from the materialization to the ``to_tensor``
(upstream: no ``to_tensor`` may share a buffer with a ``restrict`` destination), so the
``to_tensor`` still says no other argument the segment reads is (a view of) this buffer.
The write-back is moved last, after every other materialization, so anything computed from
the old value is read before it is overwritten even where it runs as a copy. The interpreter
then runs ``index_copy`` as ``index_copy_`` on the argument (see
:mod:`hir.interpreter.updates`): one write of the new position, as HF eager does.

Applied only where it is exact: the new value is a fresh ``memref.alloc`` of the argument's
type, written by one kernel segment call and otherwise only read after it, through no view
(compute ops, segments that only read it: an optimizer's update reads a moment it has just
written), and by the ``hir.set``; those readers then read the argument, which holds the new
value from the call on. The argument has no view, and every other op using it comes before
that call (nothing reads the old value after the segment wrote the new one), the call
passing it at most once. Anything else (a resharded or sliced argument of a sharded program,
a new value that is also returned, computed by a compute op, or viewed) keeps the ``hir.set``.
"""

from torch_mlir import ir
from torch_mlir.dialects import bufferization, func

from hir.dialect import KERNEL_ATTR, is_view
from hir.dialect.irutils import ALLOC, DEALLOC, ancestor_in, writes_operand

_CALL = func.CallOp.OPERATION_NAME
_MATERIALIZE = bufferization.MaterializeInDestinationOp.OPERATION_NAME
_TO_TENSOR = bufferization.ToTensorOp.OPERATION_NAME
_RESTRICT, _WRITABLE = "restrict", "writable"


def write_in_place(sets: list[ir.Operation], functions: dict[str, ir.Operation]) -> int:
    """Rewrite each ``hir.set(%new, %arg)`` of ``sets`` (the write-backs of mutated
    arguments, at the end of ``@main``) into the segment call computing ``%new`` writing
    ``%arg`` itself, where that is exact (module docstring); ``functions``: the module's
    functions by name. Returns how many were rewritten."""
    done = 0
    for set_op in sets:
        found = _segment_write(set_op, functions)
        if found is None:
            continue
        call, fn, dest, read = found
        new, arg = set_op.operands
        call.operands[dest] = arg
        set_op.erase()
        new.replace_all_uses_with(arg)  # the readers after the call (the argument holds the new value from there on)
        new.owner.erase()
        if read is not None:
            _merge(call, fn, read, dest)
        done += 1
    return done


def _segment_write(set_op: ir.Operation, functions: dict) -> tuple[ir.Operation, ir.Operation, int, int | None] | None:
    """(the call, its kernel segment, the operand it writes ``%new`` through, the operand
    it reads ``%arg`` through or None) when ``set_op`` can go (module docstring)."""
    new, arg = set_op.operands
    if not isinstance(arg.owner, ir.Block) or isinstance(new.owner, ir.Block) or new.type != arg.type:
        return None
    alloc = new.owner.operation
    block = set_op.block
    others = [u for u in new.uses if u.owner.operation != set_op]
    writers = [u for u in others if _segment_writes(u, functions)]
    if alloc.name != ALLOC or alloc.block != block or len(writers) != 1:
        return None
    call, dest = writers[0].owner.operation, writers[0].operand_number
    if call.block != block or not all(u is writers[0] or _reads_after(u, call, functions) for u in others):
        return None
    fn = _segment(call, functions)
    read = None
    for use in arg.uses:
        user = use.owner.operation
        if user == set_op:
            continue
        if is_view(user):
            return None  # a view of the argument may be read after the segment wrote it
        if user == call:
            if read is not None:
                return None
            read = use.operand_number
            continue
        at = ancestor_in(user, block)
        if at is None or at == call or not at.is_before_in_block(call):
            return None
    return call, fn, dest, read


def _segment(call: ir.Operation, functions: dict) -> ir.Operation | None:
    """The kernel segment (one block) ``call`` calls, or None."""
    if call.name != _CALL:
        return None
    fn = functions.get(ir.FlatSymbolRefAttr(call.attributes["callee"]).value)
    if fn is None or KERNEL_ATTR not in fn.attributes or len(fn.regions[0].blocks) != 1:
        return None
    return fn


def _segment_writes(use: ir.OpOperand, functions: dict) -> bool:
    """Whether ``use`` passes a kernel segment the buffer it materializes a result into
    (and does nothing else with)."""
    fn = _segment(use.owner.operation, functions)
    if fn is None:
        return False
    uses = list(fn.regions[0].blocks[0].arguments[use.operand_number].uses)
    return bool(uses) and all(u.owner.operation.name == _MATERIALIZE and u.operand_number == 1 for u in uses)


def _reads_after(use: ir.OpOperand, call: ir.Operation, functions: dict) -> bool:
    """Whether ``use`` only reads the buffer (no view of it, no deallocation), after
    ``call``: a reader of the new value, which may read the argument instead."""
    user = use.owner.operation
    at = ancestor_in(user, call.block)
    if at is None or at == call or not call.is_before_in_block(at) or is_view(user) or user.name == DEALLOC:
        return False
    fn = _segment(user, functions)
    if fn is not None:
        uses = fn.regions[0].blocks[0].arguments[use.operand_number].uses
        return all(u.owner.operation.name == _TO_TENSOR and _WRITABLE not in u.owner.operation.attributes for u in uses)
    return user.name != _CALL and not writes_operand(use)


def _merge(call: ir.Operation, fn: ir.Operation, read: int, dest: int) -> None:
    """Segment ``fn`` reads its argument ``read`` and writes its argument ``dest``, which
    ``call`` now passes the same buffer for: one argument, read with ``to_tensor restrict
    writable`` and written last (module docstring); the call rebuilt without ``dest``."""
    body = fn.regions[0].blocks[0]
    kept, gone = body.arguments[read], body.arguments[dest]
    gone.replace_all_uses_with(kept)
    body.erase_argument(dest)
    function_type = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    inputs = [t for i, t in enumerate(function_type.inputs) if i != dest]
    fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, function_type.results))
    ret = list(body.operations)[-1]
    for use in list(kept.uses):
        user = use.owner.operation
        if user.name == _TO_TENSOR:
            user.attributes[_WRITABLE] = ir.UnitAttr.get()
        elif user.name == _MATERIALIZE and use.operand_number == 1:
            del user.attributes[_RESTRICT]
            source = user.operands[0].owner
            if not isinstance(source, ir.Block) and len(list(user.operands[0].uses)) == 1:
                source.operation.move_before(ret)
            user.move_before(ret)
    operands = [v for i, v in enumerate(call.operands) if i != dest]
    with ir.InsertionPoint(call), call.location:
        ir.Operation.create(
            _CALL, operands=operands, attributes={name: call.attributes[name] for name in call.attributes}
        )
    call.erase()
