"""The accumulating reduce-scatter of hir-p2p-pipeline (``accumulate=1``): the partial sums
travel a ring and each rank adds its own contribution in the matmul's epilogue
(``hir.matmul {accumulate}``: ``addmm_`` / ``baddbmm_`` into the receive slot), so no
separate reduction kernel runs.

Destination d's sum starts on team position d + 1 and moves one position down each step
(shift offset 1: receive from me + 1, send to me - 1): at step s (0 .. n-1) this rank
handles destination (me + 1 + s) mod n; step 0 computes its partial into slot 0 of a
symmetric buffer, step s >= 1 receives the sum so far into slot s and adds its partial
there, and step n - 1 (destination me) lands in the reduce-scatter's output.

Each step runs in ``chunks`` parts along the slot's first free axis; part c of every step
runs on pool stream c and waits only for its own shift, so part c of step s + 1 starts
while part c + 1 of step s still computes (a wavefront: with c parts a step takes about
max(t_m, t_c, (t_m + t_c) / c), so chunks >= 2 overlaps the copies; chunks = 1 runs copy,
then matmul, step after step). Step 0 waits for nothing, so its parts run in order (each
part's stream after the previous part's): started together they would share the SMs and
part 0, which the ring sends first, would end with the last. Pushed parts (``transfer =
push``, chunks > 1) are awaited on one receiver stream (pool index ``chunks``), in the order
the sender signalled them, and part c's stream synchronizes with it: a signal names its
sender, not the part, so a part's wait on its own stream could take another part's signal
and read its slot too early.

Before::

    "hir.matmul"(%a, %w, %partial) {stream_axis = 0 : i64}      // partial [n, n, m, N] split on axis 1
    %w = "hir.reduce_scatter"(%partial, %out) {axis = 1, reduction = "sum", scatter_axis = 0, stream_axis = 0, ...}

After (chunks = 2; ``transfer = push`` shifts into slot n - 1 and copies it to %out)::

    %slots = memref.alloc() {hir.symmetric}
    set_current_stream(get_stream(%c0)) ; matmul of a[(me + 1) mod n] part 0 into slots[0] part 0   // step 0,
    set_current_stream(get_stream(%c1)) ; synchronize(get_stream(%c0))                              // part
    matmul of a[(me + 1) mod n] part 1 into slots[0] part 1                                           // after part
    "hir.for"(%c1, %c3, %c1) ({ ^bb0(%s): "hir.for"(...) ({ ^bb0(%c):  // steps 1 .. n-2
      comm stream: synchronize(stream c) ; %w = shift(slots[s - 1] part c, slots[s] part c, %c1)
      stream c: wait(%w) ; matmul {accumulate} of a[(me + 1 + s) mod n] part c into slots[s] part c }) })
    ... step n - 1 the same, from slots[n - 2] into %out
"""

from collections.abc import Callable

from torch_mlir import ir, rewrite
from torch_mlir.dialects import arith

from hir.dialect import AliasSelectOp, GetStreamOp, SetCurrentStreamOp, SetOp, ShiftOp, SynchronizeOp, WaitOp, op_class
from hir.dialect.base import required_int, required_str
from hir.dialect.irutils import index_arith, index_const, output_index, slice_name
from hir.passes.base import PassFailure, fail
from hir.passes.p2p.reduce_scatter import erase_if_unused, producer_of
from hir.passes.p2p.steps import Steps, begin, chunk, chunk_axis, chunk_op, collective, new_buffer, slice_op


def can_accumulate(rs: ir.Operation) -> bool:
    """Whether ``rs`` sums and its producer declares an accumulating form."""
    try:
        producer = producer_of(rs, rs.operands[0], required_int(rs, "scatter_axis"))
    except PassFailure:  # the pipeline itself reports what is wrong
        return False
    return required_str(rs, "reduction") == "sum" and getattr(op_class(producer), "ACCUMULATE_ATTR", None) is not None


def accumulate_receives(opts) -> bool:
    """Whether the accumulating ring needs a receiver stream: pushed parts on several streams."""
    return opts.transfer == "push" and opts.chunks > 1


def build_accumulate(opts, rs: ir.Operation, rewriter: rewrite.PatternRewriter) -> None:
    """Replace ``rs``, its wait and the producer of its input by the accumulating ring."""
    k = required_int(rs, "scatter_axis")
    team, team_attr, backend, wait = collective(opts, rs, rs.operands[0], k, "scatters", "slice")
    partial, out = rs.operands[0], rs.operands[1]
    producer = producer_of(rs, partial, k)
    attr = getattr(op_class(producer), "ACCUMULATE_ATTR", None)
    if attr is None:
        raise fail(
            producer,
            "cannot accumulate into its output (hir-p2p-pipeline{accumulate=1} "
            "needs a producer with an accumulating form, e.g. hir.matmul)",
        )
    if required_str(rs, "reduction") != "sum":
        raise fail(rs, f"reduces with '{required_str(rs, 'reduction')}'; hir-p2p-pipeline{{accumulate=1}} only sums")
    parts_axis = chunk_axis(opts, rs, partial, [k, required_int(rs, "axis")], [(producer, output_index(producer))])
    slot_axis = parts_axis - (1 if parts_axis > k else 0)  # also the output's axis
    n = len(team)
    with ir.InsertionPoint(rs), rs.location:
        steps = begin(opts, team)
        push = opts.transfer == "push"
        slots = new_buffer(partial.type, symmetric=True, name="slots")  # pull: read in place; push: written in place
        attrs = steps.shift_attrs(team_attr, backend, opts.transfer)
        # A pushed shift's wait takes the next "pushed" signal of its sender (one flag per
        # peer and buffer), whichever part it was for: with parts on several streams the
        # waits must run in the order the sender signalled, so they go on one receiver
        # stream (pool index ``chunks``) that each part's stream then synchronizes with.
        receiver = GetStreamOp.emit(steps.pool, name="receiver") if accumulate_receives(opts) else None

        def part(buffer: ir.Value, c: ir.Value | None) -> ir.Value:
            return buffer if c is None else chunk(buffer, c, slot_axis, opts.chunks)

        def slot(index: ir.Value) -> ir.Value:
            return AliasSelectOp.emit(slots, index, k, name=slice_name(slots))

        def part_stream(c: ir.Value | None) -> ir.Value:
            """Part ``c``'s pool stream (stream 0 when there is one part)."""
            return GetStreamOp.emit(c if c is not None else steps.zero, name="stream")

        def produce(whole: ir.Value, position: ir.Value, c: ir.Value | None, accumulate: bool) -> ir.Value:
            """The producer's slice for team ``position`` (part ``c``) into ``whole``."""
            target = part(whole, c)
            sliced = slice_op(producer.clone(), k, {partial: whole}, position, steps.zero)
            if c is not None:
                chunk_op(sliced, output_index(sliced), slot_axis, c, opts.chunks, {whole: target})
            if accumulate:
                sliced.attributes[attr] = ir.UnitAttr.get()
            return target

        def first_step(position: ir.Value, into: ir.Value) -> None:
            """Step 0: this rank's partial for ``position`` into ``into``, part after part.
            With no data to wait for, parts on their own streams would start together and
            share the SMs (measured on 4x H200: part 0 took 74 us instead of 48 beside part 1,
            and the first push left 56 us late); each part's stream waits for the previous
            part's matmul."""
            previous = None
            for i in range(opts.chunks):
                c = None if opts.chunks == 1 else index_const(i)
                stream = part_stream(c)
                SetCurrentStreamOp.emit(stream)
                if previous is not None:
                    SynchronizeOp.emit(previous)
                produce(into, position, c, accumulate=False)
                previous = stream

        def step(position: ir.Value, source: ir.Value, into: ir.Value, copy_to: ir.Value | None = None) -> None:
            """One step after step 0, part by part: receive ``source`` (the sum so far) into
            ``into`` and add this rank's partial for ``position``; then copy to ``copy_to``."""

            def body(c: ir.Value | None) -> None:
                stream = part_stream(c)
                SetCurrentStreamOp.emit(steps.comm)
                SynchronizeOp.emit(stream)  # the sender's part c of the previous step
                work = ShiftOp.emit(part(source, c), part(into, c), steps.one, attrs, name="work")
                if receiver is not None:  # consume the peer's signals in the order it sent them
                    SetCurrentStreamOp.emit(receiver)
                    WaitOp.emit(work)
                    SetCurrentStreamOp.emit(stream)
                    SynchronizeOp.emit(receiver)
                else:
                    SetCurrentStreamOp.emit(stream)
                    WaitOp.emit(work)
                target = produce(into, position, c, accumulate=True)
                if copy_to is not None:
                    SetOp.emit(target, part(copy_to, c))

            _parts(steps, opts.chunks, body)

        first_step(steps.position(steps.one, 1), slot(steps.zero))
        if n > 2:
            s, end = steps.loop(steps.one, index_const(n - 1), "s")
            with ir.InsertionPoint(end):
                previous = index_arith(arith.SubIOp, s, steps.one)
                step(steps.position(index_arith(arith.AddIOp, s, steps.one), 1), slot(previous), slot(s))
        last = slot(index_const(n - 2))
        if push:  # a pushed copy lands in symmetric memory only
            step(steps.me, last, slot(index_const(n - 1)), copy_to=out)
        else:
            step(steps.me, last, out)
        SetCurrentStreamOp.emit(steps.user)
        steps.join([receiver] if receiver is not None else [])
    rewriter.erase_op(producer)
    rewriter.erase_op(wait)
    rewriter.erase_op(rs)
    erase_if_unused(partial, rewriter)


def _parts(steps: Steps, chunks: int, body: Callable[[ir.Value | None], None]) -> None:
    """``body(c)`` in a loop over the parts, or ``body(None)`` once when there is one."""
    if chunks == 1:
        body(None)
        return
    c, end = steps.loop(steps.zero, steps.chunks, "c")
    with ir.InsertionPoint(end):
        body(c)
