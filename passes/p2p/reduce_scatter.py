"""The reduce-scatter pattern of hir-p2p-pipeline (slot form): a reduce-scatter whose scatter axis is its
stream axis, and the stream-parallel compute op writing its input, become one step per
team member. Step j (offset o = j for local-first, n - j for ring) computes the slice for
team position (me - o) mod n into slot o of a symmetric buffer (the same slot on every
rank, so the receiver reads it in place), then the user stream shifts it to that peer,
receiving the slice computed for this rank into ``%recv`` slot o. The local slice is
computed last, straight into slot 0, and one ``hir.reduction`` over the slots gives the
reduce-scatter's output.

Before::

    "hir.matmul"(%a, %w, %partial) {stream_axis = 0 : i64}      // partial [4, 4, m, N] split on axis 1
    %w = "hir.reduce_scatter"(%partial, %out) {axis = 1, scatter_axis = 0, stream_axis = 0, ...}

After::

    %slots = memref.alloc() {hir.symmetric} ; %recv = memref.alloc()
    "hir.for"(%c1, %c4, %c1) ({ ^bb0(%j):     // steps 1..n-1
      matmul of a[(me - o) mod n] into slots[o] on a pool stream ; the user stream waits for it
      "hir.wait"("hir.shift"(slots[o], recv[o], %o)) })
    matmul of a[me] into recv[0] on pool stream 0
    "hir.reduction"(%recv, %out) {axes = array<i64: 0>, kind = "sum"}

With ``chunks = c`` an outer loop over the parts runs the steps on part c of every slot,
then reduces part c of ``%recv`` into part c of the output on a pool stream of its own
(index ``streams``: on the user stream it would hold back the next part's copies).

With ``transfer = push`` the roles of the buffers swap: ``%slots`` is an ordinary buffer and
``%received`` the symmetric one; each step's shift (``transfer = "push"``) copies
``slots[o]`` straight into the owner's ``received[o]`` and signals after the copy, so the
comm stream runs copy after copy with no handshake kernel before any of them, and each
shift's ``hir.wait`` (the owner waiting for the sender's signal) is issued on the receiver
stream (pool index ``streams``)::

    "hir.set_current_stream"(%comm) ; "hir.synchronize"(%stream_j)
    %w = "hir.shift"(slots[o], received[o], %o) {transfer = "push", ...}
    "hir.set_current_stream"(%receiver) ; "hir.wait"(%w)
"""

from torch_mlir import ir, rewrite

from hir.dialect import (
    AliasSelectOp,
    ComputeOp,
    GetStreamOp,
    ReductionOp,
    SetCurrentStreamOp,
    ShiftOp,
    SynchronizeOp,
    WaitOp,
)
from hir.dialect.base import required_int, required_str
from hir.dialect.irutils import ALLOC, DEALLOC, is_a, output_index, slice_name, stream_axis, users_in_block
from hir.passes.base import fail
from hir.passes.p2p.steps import begin, chunk, chunk_axis, chunk_op, collective, new_buffer, slice_op


def build_reduce_scatter(opts, rs: ir.Operation, rewriter: rewrite.PatternRewriter) -> None:
    """Replace ``rs``, its wait and the producer of its input by the pipeline."""
    k = required_int(rs, "scatter_axis")
    team, team_attr, backend, wait = collective(opts, rs, rs.operands[0], k, "scatters", "slice")
    partial, out = rs.operands[0], rs.operands[1]
    producer = producer_of(rs, partial, k)
    # Chunks split each slice along its first axis that is neither scattered nor reduced.
    parts_axis = chunk_axis(opts, rs, partial, [k, required_int(rs, "axis")], [(producer, output_index(producer))])
    slot_axis = parts_axis - (1 if parts_axis > k else 0)  # also the output's axis
    with ir.InsertionPoint(rs), rs.location:
        steps = begin(opts, team)
        push = opts.transfer == "push"
        # Pull: peers read our slots in place. Push: we write straight into their %received.
        slots = new_buffer(partial.type, symmetric=not push, name="slots")
        recv = new_buffer(partial.type, symmetric=push, name="received")
        # A pushed step's wait (for the sender's signal) runs on a pool stream of its own
        # (index ``streams``, also the chunked reducer), never on the comm stream.
        receiver = GetStreamOp.emit(steps.pool, name="receiver") if push or opts.chunks > 1 else None

        def slot_of(buffer: ir.Value, index: ir.Value, c: ir.Value | None) -> tuple:
            """(slot ``index`` of ``buffer``, its chunk ``c`` or the whole slot)."""
            view = AliasSelectOp.emit(buffer, index, k, name=slice_name(buffer))
            return view, (view if c is None else chunk(view, c, slot_axis, opts.chunks))

        def produce(into: tuple, position: ir.Value, c: ir.Value | None) -> None:
            whole, part = into
            sliced = slice_op(producer.clone(), k, {partial: whole}, position, steps.zero)
            if c is not None:
                chunk_op(sliced, output_index(sliced), slot_axis, c, opts.chunks, {whole: part})

        def exchange(c: ir.Value | None, then: ir.Value) -> None:
            """Steps 1..n-1 (of chunk ``c``), then the local slice, straight into %recv[0];
            ends on stream ``then``."""
            j, end = steps.loop(steps.one, steps.count, "j")
            with ir.InsertionPoint(end):
                offset = steps.offset(j)
                stream = steps.stream(j)
                SetCurrentStreamOp.emit(stream)
                slot = slot_of(slots, offset, c)
                produce(slot, steps.position(offset, -1), c)
                SetCurrentStreamOp.emit(steps.comm)
                SynchronizeOp.emit(stream)  # the shift sends what this step computed
                work = ShiftOp.emit(
                    slot[1],
                    slot_of(recv, offset, c)[1],
                    offset,
                    steps.shift_attrs(team_attr, backend, opts.transfer),
                    name="work",
                )
                if push:  # the comm stream goes on pushing; the receiver stream waits
                    assert receiver is not None
                    SetCurrentStreamOp.emit(receiver)
                WaitOp.emit(work)
            stream = steps.stream(steps.zero)
            SetCurrentStreamOp.emit(stream)
            produce(slot_of(recv, steps.zero, c), steps.me, c)
            SetCurrentStreamOp.emit(then)

        kind = required_str(rs, "reduction")
        extra = [receiver] if receiver is not None else []
        if opts.chunks == 1:
            exchange(None, steps.user)
            steps.join(extra)
            ReductionOp.emit(recv, out, kind, [k])
        else:  # chunk by chunk; a chunk's reduction overlaps the next chunk's copies and compute
            # On the receiver stream: on the comm stream it would hold back the next
            # chunk's copies, on a compute stream its matmuls.
            c, end = steps.loop(steps.zero, steps.chunks, "c")
            assert receiver is not None
            with ir.InsertionPoint(end):
                exchange(c, receiver)
                SynchronizeOp.emit(steps.comm)  # the chunk's copies
                SynchronizeOp.emit(steps.stream(steps.zero))  # its local part
                ReductionOp.emit(
                    chunk(recv, c, parts_axis, opts.chunks), chunk(out, c, slot_axis, opts.chunks), kind, [k]
                )
                SetCurrentStreamOp.emit(steps.user)
            steps.join(extra)
    rewriter.erase_op(producer)
    rewriter.erase_op(wait)
    rewriter.erase_op(rs)
    erase_if_unused(partial, rewriter)


def producer_of(rs: ir.Operation, partial: ir.Value, k: int) -> ir.Operation:
    """The stream-parallel compute op (stream axis ``k``) that writes ``partial`` before the
    reduce-scatter, with no other use of ``partial`` in between or after."""
    found: ir.Operation | None = None
    for op in users_in_block(partial, rs.block):
        if op == rs or rs.is_before_in_block(op):
            break
        if op.name == DEALLOC:
            continue
        if is_a(op, ComputeOp) and op.operands[output_index(op)] == partial and stream_axis(op) == k and found is None:
            found = op
            continue
        raise fail(op, "uses the reduce-scatter input of a P2P pipeline; only its stream-parallel producer may")
    if found is None:
        raise fail(
            rs,
            f"needs its input written by a compute op with stream_axis = {k} "
            "in the same block (the P2P pipeline computes it per destination)",
        )
    for use in partial.uses:
        owner = use.owner.operation
        if owner not in (found, rs) and owner.name != DEALLOC:
            raise fail(owner, "uses the reduce-scatter input of a P2P pipeline after it; only the reduce-scatter may")
    return found


def erase_if_unused(buffer: ir.Value, rewriter: rewrite.PatternRewriter) -> None:
    """Drop ``buffer``'s alloc (and deallocs) once nothing else uses it."""
    owner = buffer.owner
    users = [use.owner.operation for use in buffer.uses]
    if not isinstance(owner, ir.Block) and owner.name == ALLOC and all(u.name == DEALLOC for u in users):
        for user in users:
            rewriter.erase_op(user)
        rewriter.erase_op(owner)
