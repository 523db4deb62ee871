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

from torch_mlir import ir
from torch_mlir.dialects import ext

from hir.dialect.base import HirOp, StreamType
from hir.dialect.checks import fail
from hir.dialect.streams import GetStreamOp, SynchronizeOp

# Unit attribute of ``hir.for``: the loop is a join, the current stream waiting for the pool
# streams it indexes (its body only ``get_stream`` of the index and ``synchronize`` on it).
# Passes working on the stream form read it (a buffer used on a pool stream lives until the
# join); ``hir-expand-stream-loops`` writes the final form without it.
JOINS_POOL_STREAMS_ATTR = "hir.joins_pool_streams"


class ForOp(HirOp, name="for"):
    """``for i in range(lb, ub, step)``; ``step`` must be positive at run time. With
    ``hir.joins_pool_streams`` (``JOINS_POOL_STREAMS_ATTR``) the loop is a join of pool
    streams ``lb .. ub``: its body is ``%stream = hir.get_stream(%i)``,
    ``hir.synchronize(%stream)`` and nothing else."""

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
        if JOINS_POOL_STREAMS_ATTR in self.operation.attributes:
            _check_join(block)

    @classmethod
    def emit(
        cls,
        lower_bound: ir.Value,
        upper_bound: ir.Value,
        step: ir.Value,
        *,
        joins_pool_streams: bool = False,
        name: str | None = None,
    ) -> tuple[ir.Operation, ir.Value, ir.Operation]:
        """(loop, induction variable, yield): insert the body before the yield. ``name``
        names the induction variable (``^bb0(%i: index)``); ``joins_pool_streams``: the loop
        is a join (its body, built by the caller, must be the one the class docstring says)."""
        attributes = {JOINS_POOL_STREAMS_ATTR: ir.UnitAttr.get()} if joins_pool_streams else None
        loop = cls._create([lower_bound, upper_bound, step], attributes=attributes, regions=1, name=name)
        block = loop.regions[0].blocks.append(ir.IndexType.get(), arg_locs=[loop.location])
        with ir.InsertionPoint(block):
            terminator = YieldOp.emit()
        return loop, block.arguments[0], terminator


def _check_join(block: ir.Block) -> None:
    """A join's body: the pool stream of the index, the current stream waiting for it."""
    ops = [op.operation for op in block.operations]
    names = [op.name for op in ops]
    expected = [GetStreamOp.OPERATION_NAME, SynchronizeOp.OPERATION_NAME, YieldOp.OPERATION_NAME]
    if names != expected or ops[0].operands[0] != block.arguments[0] or ops[1].operands[0] != ops[0].results[0]:
        fail(
            f"with '{JOINS_POOL_STREAMS_ATTR}' must have the body %stream = "
            f"{expected[0]}(index), {expected[1]}(%stream), {expected[2]}; got {', '.join(names)}"
        )


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
    slots: ext.Operand[ir.IndexType] | None = None
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
    def emit(
        cls,
        lower_bound: ir.Value,
        upper_bound: ir.Value,
        step: ir.Value,
        user_stream: ir.Value,
        slots: ir.Value | None = None,
        *,
        name: str | None = None,
    ) -> tuple[ir.Operation, ir.Value, ir.Value, ir.Operation]:
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
    def slots_of(loop: ir.Operation) -> ir.Value | None:
        """The ``slots`` operand of a stream loop (an ``ir.Operation``), None when absent."""
        operands = loop.operands
        return operands[4] if len(operands) > 4 else None


class YieldOp(HirOp, name="yield", traits=[ir.IsTerminatorTrait]):
    """Terminates a ``hir.for`` or ``hir.stream_for`` body."""

    def check(self) -> None:
        parent = self.operation.parent
        if parent is None or parent.name not in (ForOp.OPERATION_NAME, StreamForOp.OPERATION_NAME):
            fail(
                f"expects parent op '{ForOp.OPERATION_NAME}' or "
                f"'{StreamForOp.OPERATION_NAME}', got '{parent.name if parent else None}'"
            )

    @classmethod
    def emit(cls, *, name: str | None = None) -> ir.Operation:
        return cls._create(name=name)
