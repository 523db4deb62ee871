"""The all-gather pattern of hir-p2p-pipeline: an all-gather whose split axis is its stream
axis, and the stream-parallel compute ops reading the gathered buffer, become one step per
team member. Step 0 is this rank's own shard (read in place, computed at once on pool
stream 0); the user stream stages the shard into a symmetric buffer, passes one ``hir.barrier``
and pulls the peers' shards with ``signal = "none"`` shifts; each step's compute waits only
for its own copy.

Before::

    %w = "hir.allgather"(%A, %tmp) {axis = 0, stream_axis = 0, ...} ; "hir.wait"(%w)
    "hir.matmul"(%tmp, %B, %out) {stream_axis = 0 : i64}

After (local-first: step j reads team position (me + j) mod n)::

    %me = "hir.device_index"() ; %user = "hir.get_current_stream"() ; initial sync loop
    %staged = memref.alloc() {hir.symmetric} ; "hir.set"(%A, %staged)
    "hir.wait"("hir.barrier"())
    step 0 on pool stream 0, at once: "hir.matmul"("hir.own_block"(%A), %B, %out[me])
    "hir.for"(%c1, %c4, %c1) ({ ^bb0(%j):      // steps 1..n-1, shifts on the comm stream
      %w = "hir.shift"(%staged, %tmp[p], %j) {signal = "none"} ; set_current_stream(pool j)
      "hir.wait"(%w) ; "hir.matmul"(%tmp[p], %B, %out[p]) ; set_current_stream(%comm) })
    join loop over the pool streams

Step 0 reads the rank's own shard in place: ``hir.own_block``, a view of the split axis'
own block of %A (its local data), so its compute starts at t=0, with no copy in front of it (the staging copy
for the peers runs meanwhile on the user stream). Only when the gathered buffer is read
after the consumers does a local ``hir.shift`` (offset 0) also fill its own block. The comm
stream is the user stream, or with ``comm_stream=1`` a high-priority pool stream.

With ``chunks = c`` each peer's shard moves and is computed in c parts (``hir.alias_chunk``
along its first axis): an inner loop over the parts in every step but step 0.

With ``transfer = push`` nothing is staged or published: step j pushes the own shard (the
``hir.own_block`` view step 0 reads) into slot j - 1 of the symmetric ``%received`` (n - 1
slots) of position me - j, and its compute reads slot j - 1 of ours once position me + j
has signalled (a pushed ``hir.shift``; the received buffer's dealloc barrier guards the next
run's pushes). The gathered buffer, then unused, is erased::

    %received = memref.alloc() {hir.symmetric}      // [n - 1, ...]; no %staged, "hir.set", barrier
    step 0 as above, on %shard = "hir.own_block"(%A)
    "hir.for"(%c1, %c4, %c1) ({ ^bb0(%j):
      %slot = arith.subi %j, %c1
      %w = "hir.shift"(%shard, %received[slot], %j) {transfer = "push"} ; set_current_stream(pool j)
      "hir.wait"(%w) ; "hir.matmul"(%received[slot], %B, %out[p]) ; set_current_stream(%comm) })

A gathered buffer something else reads (after the consumers, nested, through a view: its
blocks, own block included, are then filled) or of a dynamic shape (pushes need symmetric
slots) keeps the pulled form.
"""

from torch_mlir import ir, rewrite
from torch_mlir.dialects import arith

from hir.dialect import AliasSelectOp, BarrierOp, ComputeOp, OwnBlockOp, SetCurrentStreamOp, SetOp, ShiftOp, WaitOp
from hir.dialect.base import required_int
from hir.dialect.irutils import (
    DEALLOC,
    index_arith,
    is_a,
    operand_axis,
    output_index,
    stream_axis,
    users_in_block,
    uses_through_views,
)
from hir.dialect.p2p import SIGNAL_ATTR
from hir.passes.base import fail
from hir.passes.p2p.reduce_scatter import erase_if_unused
from hir.passes.p2p.steps import begin, chunk, chunk_axis, chunk_op, collective, new_buffer, slice_op


def build_allgather(opts, ag: ir.Operation, rewriter: rewrite.PatternRewriter) -> None:
    """Replace ``ag``, its wait and its stream-parallel consumers by the pipeline, built at
    the last consumer."""
    axis = required_int(ag, "axis")
    team, team_attr, backend, wait = collective(opts, ag, ag.operands[1], axis, "gathers", "shard")
    src, gathered = ag.operands[0], ag.operands[1]
    consumers, gathered_read_after = _consumers(ag, gathered, axis)
    gathered_read_after = gathered_read_after or _read_elsewhere(ag, gathered, consumers)
    # Chunks split each shard along its first axis (axis 0 of a step's slice).
    parts_axis = chunk_axis(opts, ag, gathered, [axis], [(op, list(op.operands).index(gathered)) for op in consumers])
    view_axis = parts_axis - (1 if parts_axis > axis else 0)
    # At the last consumer: everything the consumers read is defined by then.
    with ir.InsertionPoint(consumers[-1] if consumers else ag), ag.location:
        steps = begin(opts, team)
        # pushed shards land in symmetric slots (static shapes); nothing fills the gathered buffer
        push = opts.transfer == "push" and not gathered_read_after and ir.MemRefType(gathered.type).has_static_shape
        if push:  # peers write their shards straight into our slots (slot o - 1: position me + o)
            received = new_buffer(_slots_type(ir.MemRefType(gathered.type), axis), symmetric=True, name="received")
        else:
            staged = new_buffer(src.type, symmetric=True, name="staged")
            SetOp.emit(src, staged)
            # Every rank's shard is published once: the steps need no handshake.
            WaitOp.emit(BarrierOp.emit(team_attr, backend, name="published"))

        def compute(whole: ir.Value, view: ir.Value | None, position: ir.Value, part: ir.Value | None) -> None:
            """The consumers' step at ``position``, reading ``whole`` (or its part ``view``)."""
            for op in consumers:
                sliced = slice_op(op.clone(), axis, {gathered: whole}, position, steps.zero)
                if part is not None:
                    chunk_op(sliced, list(sliced.operands).index(whole), view_axis, part, opts.chunks, {whole: view})

        def step(
            source: ir.Value,
            whole: ir.Value,
            view: ir.Value,
            offset: ir.Value,
            position: ir.Value,
            stream: ir.Value,
            attrs: dict,
            part: ir.Value | None,
        ) -> None:
            """Shift ``source`` into ``view`` (``whole``, the slice at ``position``, or its
            part ``part``) on the comm stream, then compute on ``stream`` what reads it."""
            work = ShiftOp.emit(source, view, offset, attrs, name="work")
            SetCurrentStreamOp.emit(stream)
            WaitOp.emit(work)
            compute(whole, view, position, part)
            SetCurrentStreamOp.emit(steps.comm)

        # step 0: the own shard read in place (the split axis' own block of %A), computed on
        # pool stream 0 at once: no copy before it.
        stream = steps.stream(steps.zero)
        SetCurrentStreamOp.emit(stream)
        shard = OwnBlockOp.emit(src, axis, name="shard")
        compute(shard, None, steps.me, None)
        if gathered_read_after:  # the gathered buffer is read later: its own block too
            SetCurrentStreamOp.emit(steps.user)
            ShiftOp.emit(
                src,
                AliasSelectOp.emit(gathered, steps.me, axis, name="gathered"),
                steps.zero,
                {"team": team_attr, "backend": backend},
                name="own",
            )
        steps.to_comm()
        j, end = steps.loop(steps.one, steps.count, "j")
        with ir.InsertionPoint(end):
            offset = steps.offset(j)
            position = steps.position(offset, +1)
            stream = steps.stream(j)
            if push:  # send our shard to position me - offset, whose slot ``offset - 1`` it fills
                slot = index_arith(arith.SubIOp, offset, steps.one, name="slot")
                whole = AliasSelectOp.emit(received, slot, axis, name="received")
                source, source_axis, attrs = shard, view_axis, steps.shift_attrs(team_attr, backend, "push")
            else:  # pull position me + offset's published shard into its block
                whole = AliasSelectOp.emit(gathered, position, axis, name="gathered")
                source, source_axis = staged, parts_axis
                attrs = {**steps.shift_attrs(team_attr, backend), SIGNAL_ATTR: ir.StringAttr.get("none")}
            if opts.chunks == 1:
                step(source, whole, whole, offset, position, stream, attrs, None)
            else:  # the peer's shard in chunks: each chunk's compute waits for its copy only
                c, chunk_end = steps.loop(steps.zero, steps.chunks, "c")
                with ir.InsertionPoint(chunk_end):
                    part = chunk(source, c, source_axis, opts.chunks)
                    step(part, whole, chunk(whole, c, view_axis, opts.chunks), offset, position, stream, attrs, c)
        steps.join([], from_comm=True)
    for op in consumers:
        rewriter.erase_op(op)
    rewriter.erase_op(wait)
    rewriter.erase_op(ag)
    if push:  # the consumers read the received slots: nothing uses the gathered buffer
        erase_if_unused(gathered, rewriter)


def _read_elsewhere(ag: ir.Operation, gathered: ir.Value, consumers: list) -> bool:
    """Whether anything but the consumers reads ``gathered``, nested in a region or through
    a view (``_consumers`` sees the ops of the block only)."""
    skip = {ag, *consumers}
    return any(
        use.owner.operation not in skip and use.owner.operation.name != DEALLOC for use in uses_through_views(gathered)
    )


def _slots_type(gathered: ir.MemRefType, axis: int) -> ir.MemRefType:
    """The received slots of a pushed all-gather: the gathered buffer but one block (the own
    shard is read in place)."""
    shape = list(gathered.shape)
    shape[axis] -= 1
    return ir.MemRefType.get(shape, gathered.element_type, memory_space=gathered.memory_space)


def _consumers(ag: ir.Operation, gathered: ir.Value, axis: int) -> tuple[list, bool]:
    """The stream-parallel compute ops after the all-gather reading ``gathered`` on ``axis``,
    and whether other ops use ``gathered`` (after them: the pipeline runs at the last one)."""
    out: list = []
    others: list = []
    for op in users_in_block(gathered, ag.block):
        if op == ag or not ag.is_before_in_block(op):
            continue
        if op.name == WaitOp.OPERATION_NAME or op.name == DEALLOC:
            continue
        k = stream_axis(op)
        if not is_a(op, ComputeOp) or k is None:
            others.append(op)
            continue
        if others:
            raise fail(
                others[0],
                "uses the gathered buffer of a P2P pipeline before its stream-parallel consumers; move it after them",
            )
        if op.operands[output_index(op)] == gathered:
            raise fail(op, "writes the gathered buffer of a P2P pipeline")
        if any(operand_axis(op, i, k) != axis for i, v in enumerate(op.operands) if v == gathered):
            raise fail(op, f"reads the gathered buffer along another axis than its stream axis {axis}")
        out.append(op)
    return out, bool(others)
