"""``hir.for``: an index loop with a body region; ``hir.stream_for``: the stream loop, one
iteration per pool stream, until ``hir-expand-stream-loops`` writes it as ``hir.for`` loops.

    "hir.for"(%lb, %ub, %step) ({
    ^bb0(%i: index):
      ...
      "hir.yield"() : () -> ()
    }) : (index, index, index) -> ()

    "hir.stream_for"(%lb, %ub, %step, %user) ({
    ^bb0(%i: index, %slot: index):
      ...                                         // runs on pool stream %slot
      "hir.yield"() : () -> ()
    }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (index, index, index, !hir.stream) -> ()
"""


from typing import Optional

from torch_mlir import ir
from torch_mlir.dialects import ext

from hir.dialect.base import HirOp, StreamType, fail


class ForOp(HirOp, name="for"):
    """``for i in range(lb, ub, step)``; ``step`` must be positive at run time."""

    lower_bound: ext.Operand[ir.IndexType]
    upper_bound: ext.Operand[ir.IndexType]
    step: ext.Operand[ir.IndexType]
    body: ext.Region

    def check(self) -> None:
        blocks = self.operation.regions[0].blocks
        if len(blocks) != 1:
            fail(f"body must have exactly one block, has {len(blocks)}")
        block = blocks[0]
        args = block.arguments
        if len(args) != 1 or not isinstance(args[0].type, ir.IndexType):
            fail("body block must have exactly one argument, the index (of type index)")
        ops = block.operations
        count = len(ops)
        if not count or ops[count - 1].operation.name != YieldOp.OPERATION_NAME:
            fail(f"body must end with '{YieldOp.OPERATION_NAME}'")

    @classmethod
    def emit(cls, lower_bound: ir.Value, upper_bound: ir.Value, step: ir.Value, *, name: Optional[str] = None) -> tuple[ir.Operation, ir.Value, ir.Operation]:
        """(loop, induction variable, yield): insert the body before the yield. ``name``
        names the induction variable (``^bb0(%i: index)``)."""
        loop = cls._create([lower_bound, upper_bound, step], regions=1, name=name)
        block = loop.regions[0].blocks.append(ir.IndexType.get(), arg_locs=[loop.location])
        with ir.InsertionPoint(block):
            terminator = YieldOp.emit()
        return loop, block.arguments[0], terminator


class StreamForOp(HirOp, name="stream_for"):
    """nvFuser's stream loop (ParallelType::Stream): for each ``i`` in ``range(lb, ub, step)``,
    the body runs on pool stream ``slot``, after the work the user stream issued before the
    loop; the user stream (current before the loop, and again after it) then waits for
    every iteration. ``slot`` is ``i``, or ``i mod slots`` when ``slots`` is given
    (iterations sharing a slot share a pool stream, so their buffers may share memory).

    Until ``hir-expand-stream-loops`` rewrites it, the loop is one op, so passes find it by
    name (fusion, buffer reuse, deallocation); the expansion writes nvFuser's form: the user
    stream saved (the operand), a loop syncing each pool stream with it, and the work loop
    (``get_stream``, ``set_current_stream``, the body, back to the user stream,
    ``synchronize``)."""

    lower_bound: ext.Operand[ir.IndexType]
    upper_bound: ext.Operand[ir.IndexType]
    step: ext.Operand[ir.IndexType]
    user_stream: ext.Operand[StreamType]
    slots: Optional[ext.Operand[ir.IndexType]] = None
    body: ext.Region

    def check(self) -> None:
        blocks = self.operation.regions[0].blocks
        if len(blocks) != 1:
            fail(f"body must have exactly one block, has {len(blocks)}")
        block = blocks[0]
        args = block.arguments
        if len(args) != 2 or not all(isinstance(a.type, ir.IndexType) for a in args):
            fail("body block must have exactly two arguments, the index and the stream slot (both of type index)")
        ops = block.operations
        count = len(ops)
        if not count or ops[count - 1].operation.name != YieldOp.OPERATION_NAME:
            fail(f"body must end with '{YieldOp.OPERATION_NAME}'")
        parent = self.operation.parent
        while parent is not None:
            if parent.name == StreamForOp.OPERATION_NAME:
                fail(f"is nested in another '{StreamForOp.OPERATION_NAME}'; nested stream parallelism is not supported")
            parent = parent.parent

    @classmethod
    def emit(cls, lower_bound: ir.Value, upper_bound: ir.Value, step: ir.Value, user_stream: ir.Value, slots: Optional[ir.Value] = None, *,
             name: Optional[str] = None) -> tuple[ir.Operation, ir.Value, ir.Value, ir.Operation]:
        """(loop, index, slot, yield): insert the body before the yield. ``name`` names the
        loop's location and so its block arguments (stream lowering gives none: the expansion
        names what it builds)."""
        operands = [lower_bound, upper_bound, step, user_stream] + ([slots] if slots is not None else [])
        segments = ir.DenseI32ArrayAttr.get([1, 1, 1, 1, 1 if slots is not None else 0])
        loop = cls._create(operands, attributes={"operandSegmentSizes": segments}, regions=1, name=name)
        index = ir.IndexType.get()
        block = loop.regions[0].blocks.append(index, index, arg_locs=[loop.location, loop.location])
        with ir.InsertionPoint(block):
            terminator = YieldOp.emit()
        return loop, block.arguments[0], block.arguments[1], terminator

    @staticmethod
    def slots_of(loop: ir.Operation) -> Optional[ir.Value]:
        """The ``slots`` operand of a stream loop (an ``ir.Operation``), None when absent."""
        operands = loop.operands
        return operands[4] if len(operands) > 4 else None


class YieldOp(HirOp, name="yield", traits=[ir.IsTerminatorTrait]):
    """Terminates a ``hir.for`` or ``hir.stream_for`` body."""

    def check(self) -> None:
        parent = self.operation.parent
        if parent is None or parent.name not in (ForOp.OPERATION_NAME, StreamForOp.OPERATION_NAME):
            fail(f"expects parent op '{ForOp.OPERATION_NAME}' or '{StreamForOp.OPERATION_NAME}', got '{parent.name if parent else None}'")

    @classmethod
    def emit(cls, *, name: Optional[str] = None) -> ir.Operation:
        return cls._create(name=name)
