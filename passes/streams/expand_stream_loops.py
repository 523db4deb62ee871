"""``hir-expand-stream-loops``: every ``hir.stream_for`` becomes nvFuser's stream-loop form
(seeds 001/003), the form the interpreter and the CUDA-graph capture run: a loop syncing each
pool stream with the user stream (so the work loop's first collective is not held back by
the sync of later streams), then the work loop, each iteration issuing on pool stream
``slot`` and the user stream waiting for it at the end. The stream axis goes with the loop:
nothing stream-parallel is left after it. And a join of the pool streams (``hir.for``
marked ``hir.joins_pool_streams``, hir-p2p-pipeline's) is written as the plain loop it is: the
mark goes with the stream form.

A function pass, a plain walk over each function (not a pattern: the loop's body moves into
the work loop, an inlining of a region that the Python ``PatternRewriter`` cannot do, and
the join's mark is dropped in place, which it has no call for either): the function's
stream loops and marked joins are listed once, then each is rewritten in program order.

Before::

    %user = "hir.get_current_stream"() : () -> !hir.stream
    "hir.stream_for"(%c0, %n, %c1, %user, %c4) ({
    ^bb0(%i: index, %slot: index):
      %t_slice = "hir.alias_select"(%t, %slot) {axis = 0 : i64} : ...
      ...
      "hir.yield"() : () -> ()
    }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (index, index, index, !hir.stream, index) -> ()

After (``%c4``: the ``slots`` operand; without it ``%slot`` is ``%i``)::

    %user = "hir.get_current_stream"() : () -> !hir.stream
    "hir.for"(%c0, %n, %c1) ({
    ^bb0(%i: index):
      %stream = "hir.get_stream"(%i) ; "hir.set_current_stream"(%stream) ; "hir.synchronize"(%user)
      "hir.yield"() : () -> () }) : (index, index, index) -> ()
    "hir.for"(%c0, %n, %c1) ({
    ^bb0(%i: index):
      %slot = arith.remui %i, %c4 : index
      %stream = "hir.get_stream"(%slot) ; "hir.set_current_stream"(%stream)
      %t_slice = "hir.alias_select"(%t, %slot) {axis = 0 : i64} : ...
      ...
      "hir.set_current_stream"(%user) ; "hir.synchronize"(%stream)
      "hir.yield"() : () -> () }) : (index, index, index) -> ()
"""

from dataclasses import dataclass

from torch_mlir import ir
from torch_mlir.dialects import arith

from hir.dialect import ForOp, GetStreamOp, SetCurrentStreamOp, StreamForOp, SynchronizeOp
from hir.dialect.control import JOINS_POOL_STREAMS_ATTR
from hir.dialect.irutils import index_arith
from hir.passes.base import FunctionPass, register_pass
from hir.passes.streams._stream_loops import body_ops


@register_pass
@dataclass
class ExpandStreamLoops(FunctionPass):
    name = "hir-expand-stream-loops"
    description = "Write each hir.stream_for as nvFuser's stream loops: the initial-sync hir.for, then the work hir.for on pool streams."

    def run_on_function(self, fn: ir.Operation) -> None:
        found: list[ir.Operation] = []

        def visit(op: ir.Operation) -> ir.WalkResult:
            if op.name == StreamForOp.OPERATION_NAME:
                found.append(op)
                return ir.WalkResult.SKIP  # no stream loop or join inside one (stream lowering nests none)
            if op.name == ForOp.OPERATION_NAME and JOINS_POOL_STREAMS_ATTR in op.attributes:
                found.append(op)
            return ir.WalkResult.ADVANCE

        fn.walk(visit, ir.WalkOrder.PRE_ORDER)
        for op in found:
            if op.name == StreamForOp.OPERATION_NAME:
                expand_stream_loop(op)
            else:  # a join of the pool streams: the plain loop it is
                del op.attributes[JOINS_POOL_STREAMS_ATTR]


def expand_stream_loop(loop: ir.Operation) -> None:
    """Build the sync loop and the work loop before the stream loop ``loop``, move its body
    into the work loop and erase it."""
    lower, upper, step, user = list(loop.operands)[:4]
    slots = StreamForOp.slots_of(loop)
    body = loop.regions[0].blocks[0]
    with ir.InsertionPoint(loop), loop.location:
        _, sync_iv, sync_end = ForOp.emit(lower, upper, step, name="i")
        with ir.InsertionPoint(sync_end):
            SetCurrentStreamOp.emit(GetStreamOp.emit(sync_iv, name="stream"))
            SynchronizeOp.emit(user)
        _, iv, work_end = ForOp.emit(lower, upper, step, name="i")
        with ir.InsertionPoint(work_end):
            slot = iv if slots is None else index_arith(arith.RemUIOp, iv, slots, name="slot")
            stream = GetStreamOp.emit(slot, name="stream")
            SetCurrentStreamOp.emit(stream)
            back = SetCurrentStreamOp.emit(user)
            SynchronizeOp.emit(stream)
    body.arguments[0].replace_all_uses_with(iv)
    body.arguments[1].replace_all_uses_with(slot)
    for op in body_ops(loop):
        op.move_before(back)
    loop.erase()
