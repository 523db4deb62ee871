"""``hir-expand-stream-loops``: every ``hir.stream_for`` becomes nvFuser's stream-loop form
(seeds 001/003), the form the interpreter and the CUDA-graph capture run: a loop syncing each
pool stream with the user stream (so the work loop's first collective is not held back by
the sync of later streams), then the work loop, each iteration issuing on pool stream
``slot`` and the user stream waiting for it at the end. The stream axis goes with the loop:
nothing stream-parallel is left after it. And a join of the pool streams (``hir.for``
marked ``hir.joins_pool_streams``, hir-p2p-pipeline's) is written as the plain loop it is: the
mark goes with the stream form. One pattern rooted on ``hir.stream_for`` and one on
``hir.for``, on the walk driver (each builds before its root and erases only its root; the
loop's body moves into the work loop built for it, the ``inlineBlockBefore`` of a C++
pattern, which the Python ``PatternRewriter`` does not offer: only the root's own ops move).

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

from torch_mlir import ir, rewrite
from torch_mlir.dialects import arith

from hir.dialect import ForOp, GetStreamOp, SetCurrentStreamOp, StreamForOp, SynchronizeOp
from hir.dialect.control import JOINS_POOL_STREAMS_ATTR
from hir.dialect.irutils import index_arith
from hir.passes.base import ModulePass, register_pass
from hir.passes.patterns import GuardedRewritePatternSet
from hir.passes.streams._stream_loops import body_ops


@register_pass
@dataclass
class ExpandStreamLoops(ModulePass):
    name = "hir-expand-stream-loops"
    description = (
        "Write each hir.stream_for as nvFuser's stream loops: the "
        "initial-sync hir.for, then the work hir.for on pool streams."
    )

    def run(self, module: ir.Module) -> None:
        patterns = GuardedRewritePatternSet(module.context)
        populate_expand_stream_loops_patterns(patterns)
        patterns.walk(module)


def populate_expand_stream_loops_patterns(patterns: GuardedRewritePatternSet) -> None:
    """A pattern rooted on ``hir.stream_for``: the loop -> its sync loop and work loop; one
    rooted on ``hir.for``: a join of the pool streams -> the same loop, unmarked."""
    patterns.add(StreamForOp, expand_stream_loop)
    patterns.add(ForOp, unmark_join)


def unmark_join(root: ir.OpView, rewriter: rewrite.PatternRewriter) -> bool:
    """A loop marked as a join of the pool streams -> its copy without the mark (built
    before it), then the loop erased."""
    loop = root.operation
    if JOINS_POOL_STREAMS_ATTR not in loop.attributes:
        return True
    plain = loop.clone(ip=rewriter.ip)
    del plain.attributes[JOINS_POOL_STREAMS_ATTR]
    rewriter.erase_op(loop)
    return False


def expand_stream_loop(root: ir.OpView, rewriter: rewrite.PatternRewriter) -> bool:
    """Build the sync loop and the work loop before the stream loop ``root``, move its body
    into the work loop and erase it."""
    loop = root.operation
    lower, upper, step, user = list(loop.operands)[:4]
    slots = StreamForOp.slots_of(loop)
    body = loop.regions[0].blocks[0]
    with rewriter.ip, loop.location:
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
    rewriter.erase_op(loop)
    return False
