"""``hir-stream-lowering``: a rewrite pattern per streamable op kind (rooted on it), applied
by the walk driver: every op carrying ``stream_axis = k`` (axis k of its output is
stream-parallel, nvFuser's ParallelType::Stream) becomes a stream loop, ``hir.stream_for``:
the full output stays allocated before the loop, the user stream is saved, and the loop's
body runs the op on ``hir.alias_select`` slices (index ``%i`` along the mapped axis of each
operand that has it); the op's stream axis is the loop's now. ``hir-expand-stream-loops``
later writes each loop as nvFuser's seed 001/003 form (a loop syncing each pool stream with
the user stream, then the work loop on pool stream ``%i``).
Collectives (from hir-convert-to-communication) run per slice with their ``hir.wait``, but
for a collective streamed along its peer axis (nvFuser's P2P form: the allgather of a split
axis that is also the stream axis, the reduce-scatter onto it), which has no per-slice
collective: when hir-p2p-pipeline has not pipelined it, it runs whole (its ``stream_axis``
is dropped) and its consumers or producer keep their stream loop. A pattern rooted on
``hir.wait`` moves a collective's wait into the loop after it. Before the patterns, an
analysis rejects what no pattern is rooted on: stream-parallel program inputs, ops of other
kinds carrying ``stream_axis``, and stream-parallel ops nested in regions.

Before::

    %out = memref.alloc(%d) : memref<?x8xf32>
    "hir.set"(%in, %out) {stream_axis = 0 : i64} : (memref<?x8xf32>, memref<?x8xf32>) -> ()

After::

    %out = memref.alloc(%d) : memref<?x8xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %out, %c0 : memref<?x8xf32>
    %user = "hir.get_current_stream"() : () -> !hir.stream
    "hir.stream_for"(%c0, %n, %c1, %user) ({
    ^bb0(%i: index, %slot: index):
      %a = "hir.alias_select"(%in, %i) {axis = 0 : i64}
          : (memref<?x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
      %b = "hir.alias_select"(%out, %i) {axis = 0 : i64} : (...) -> memref<8xf32, strided<[1], offset: ?>>
      "hir.set"(%a, %b) : (...) -> ()
      "hir.yield"() : () -> ()
    }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (index, index, index, !hir.stream) -> ()

The stream axis maps through set, binary (broadcast operands are not sliced, or read at index
0 where their extent is 1), reduction (kept axes; ``axes`` renumbered), matmul (batch axes;
M unless both operands are batched; N with a 2-D B: the slices are vectors) and linear
(every axis; an N slice is a 1-D weight). Errors: stream axes on program inputs or on split
axes, nested stream parallelism, unsupported ops, and matmul axes whose slices would be
read as matrices.

``chunks=S`` (``hir-stream-lowering{chunks=4}``) splits the stream axis of extent N into S
stream iterations of N/S rows each instead of N iterations of one: the loops run to S and
every operand is viewed with ``hir.alias_chunk`` (the axis is kept, so no axis renumbering
and no vector restriction on matmul; a broadcast operand is used whole). This is how an
AG+matmul pipeline is written when the stream axis is not a device axis. A static N that S
does not divide is an error at the op; a dynamic N is checked when the chunk is taken.

    "hir.stream_for"(%c0, %c4, %c1, %user) ({ ^bb0(%i: index, %slot: index):      // chunks = 4, N = 8: 2 rows each
      ...
      %a = "hir.alias_chunk"(%in, %i) {axis = 0 : i64, chunks = 4 : i64}
          : (memref<8x8xf32>, index) -> memref<2x8xf32, strided<[8, 1], offset: ?>>
      ...
"""

from dataclasses import dataclass

from torch_mlir import ir, rewrite

from hir.dialect import OP_CLASSES, AliasChunkOp, AliasSelectOp, StreamForOp, WaitOp
from hir.dialect.base import required_int
from hir.dialect.compute import STREAM_AXIS_ATTR
from hir.dialect.irutils import (
    FUNC,
    FUNC_ARG_STREAM_ATTRS,
    defining_op,
    func_ops,
    is_p2p_form,
    operand_axis,
    output_index,
    renumber_axes,
    slice_name,
    stream_axis,
    streamable,
    streamable_names,
)
from hir.passes.base import ModulePass, PassFailure, fail, register_pass
from hir.passes.patterns import GuardedRewritePatternSet, replace_without_attribute
from hir.passes.streams import _stream_loops


@register_pass
@dataclass
class StreamLowering(ModulePass):
    name = "hir-stream-lowering"
    description = (
        "Lower stream-parallel ops to hir.stream_for stream loops over alias_select "
        "slices (seeds 001/003); chunks=S: S iterations over alias_chunk views."
    )
    chunks: int = 0  # 0: one iteration per index of the stream axis; S: S chunks of N/S rows

    def run(self, module: ir.Module) -> None:
        if self.chunks < 0:
            raise PassFailure(
                f"hir-stream-lowering: chunks must be >= 0 (0: one iteration per index), got {self.chunks}"
            )
        for func in func_ops(module):  # analysis: what no pattern is rooted on
            _check_inputs(func)
            _check_carriers(func)
        patterns = GuardedRewritePatternSet(module.context)
        populate_stream_lowering_patterns(patterns, self.chunks)
        # The walk driver: each op once, in program order, nothing folded or erased, so the
        # IR is the docstring's; a lowered op moves into the loop built before it (behind
        # the walk) and its hir.wait follows when the walk reaches it.
        patterns.walk(module)


def populate_stream_lowering_patterns(patterns: GuardedRewritePatternSet, chunks: int = 0) -> None:
    """One pattern per streamable op kind, rooted on it: an op carrying ``stream_axis``
    becomes its stream loop (``chunks``: as the pass option); a collective in P2P form
    runs whole. And one rooted on ``hir.wait``: a wait left behind joins its collective
    in the loop."""
    lower = _lowering_pattern(chunks)
    for name, cls in OP_CLASSES.items():
        if cls.STREAMABLE:
            patterns.add(name, lower)
    patterns.add(WaitOp, _wait_joins_its_collective)


def _lowering_pattern(chunks: int):
    def lower_stream_op(root: ir.OpView, rewriter: rewrite.PatternRewriter) -> bool:
        op = root.operation
        if STREAM_AXIS_ATTR not in op.attributes:
            return True
        if is_p2p_form(op):  # not pipelined by hir-p2p-pipeline: run it whole
            replace_without_attribute(op, STREAM_AXIS_ATTR, rewriter)
            return False
        if op.parent.name != FUNC:
            raise _nested(op)
        _lower(op, rewriter, chunks)
        return False

    return lower_stream_op


def _wait_joins_its_collective(root: ir.OpView, rewriter: rewrite.PatternRewriter) -> bool:
    """A wait whose token now comes from inside a stream loop of its own block (its
    collective was lowered) goes into that loop, to the end of its body (a copy built
    there, the wait erased: the rewriter has no move)."""
    wait = root.operation
    producer = defining_op(wait.operands[0])
    if producer is None:
        return True
    loop = producer.parent
    if loop is None or loop.name != StreamForOp.OPERATION_NAME or loop.block != wait.block:
        return True
    wait.clone(ip=ir.InsertionPoint(_stream_loops.terminator(loop)))
    rewriter.erase_op(wait)
    return False


def _check_inputs(func: ir.Operation) -> None:
    if "arg_attrs" not in func.attributes:
        return
    for index, attrs in enumerate(ir.ArrayAttr(func.attributes["arg_attrs"])):
        attrs = ir.DictAttr(attrs)
        for key in FUNC_ARG_STREAM_ATTRS:
            if key in attrs:
                raise PassFailure(
                    f"program input #{index} is stream-parallel ('{key}'); nvFuser does "
                    "not stream-parallelize fusion inputs: stream a copy of it instead",
                    func.location,
                )


def _check_carriers(func: ir.Operation) -> None:
    """Every op carrying ``stream_axis`` is of a streamable kind and sits in the function's
    body, not in a nested region."""
    for op in func.regions[0].blocks[0].operations:
        op = op.operation
        if STREAM_AXIS_ATTR in op.attributes:
            if not streamable(op):
                raise fail(
                    op,
                    f"carries stream_axis = {stream_axis(op)}, but "
                    f"hir-stream-lowering only handles {', '.join(streamable_names())}",
                )
        elif op.regions:
            _reject_nested(op)


def _nested(op: ir.Operation) -> PassFailure:
    return fail(op, "is stream-parallel inside a region; nested stream parallelism is not supported")


def _reject_nested(op: ir.Operation) -> None:
    for nested in op.regions:
        for block in nested.blocks:
            for inner in block.operations:
                inner = inner.operation
                if STREAM_AXIS_ATTR in inner.attributes:
                    raise _nested(inner)
                if inner.regions:
                    _reject_nested(inner)


def _lower(op: ir.Operation, rewriter: rewrite.PatternRewriter, chunks: int) -> None:
    k = required_int(op, STREAM_AXIS_ATTR)  # the pattern matched an op carrying it
    out = op.operands[output_index(op)]
    if isinstance(out.owner, ir.Block):
        raise fail(
            op,
            "writes its stream-parallel output into a program input; "
            "stream parallelism needs an output allocated by the program",
        )
    extent = ir.MemRefType(out.type).shape[k]
    if chunks and extent != ir.ShapedType.get_dynamic_size() and extent % chunks:
        raise fail(
            op,
            f"has stream axis {k} of extent {extent}, which does not split into {chunks} stream "
            f"chunks (hir-stream-lowering{{chunks={chunks}}}): use a chunk count dividing it",
        )
    slices = _stream_loops.stream_slices(op, k, vectors=not chunks)  # a chunk keeps the axis: no vectors
    in_axis = operand_axis(op, 0, k)  # before the op's operands change
    loc = op.location
    with rewriter.ip, loc:  # before the op
        loop = _stream_loops.build(out, k, chunks)
    views = {}
    with ir.InsertionPoint(loop.end), loc:
        for s in slices:
            source = op.operands[s.index]
            if chunks and s.broadcast:
                continue  # an extent-1 axis broadcasts to every chunk
            if chunks:
                views[s.index] = AliasChunkOp.emit(source, loop.iv, s.axis, chunks, name=slice_name(source))
            else:
                index = loop.zero if s.broadcast else loop.iv
                views[s.index] = AliasSelectOp.emit(source, index, s.axis, name=slice_name(source))
        per_slice = op.clone()  # the op's per-iteration form, built in the body after its views
    for index, view in views.items():
        per_slice.operands[index] = view
    del per_slice.attributes[STREAM_AXIS_ATTR]
    if not chunks:  # a chunk keeps the axis
        renumber_axes(per_slice, in_axis)
    rewriter.replace_op(op, per_slice)
