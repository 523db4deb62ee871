"""``hir-p2p-pipeline{algorithm=local-first|ring streams=1 copies=1 chunks=1 backend=}``: nvFuser's
AllgatherP2p / AG_matmul_P2p and its reduce-scatter mirror, as copy-engine pipelines.

A collective whose device-split axis is also its stream axis becomes one step per team
member; each step moves ONE peer's slice with ``hir.shift`` (a paired send+recv, a
copy-engine copy with ``backend = "cuda"``). The shifts run in order on the user stream, so
each copy gets the links to itself and lands as early as it can; the compute of a step runs
on a pool stream (step j on stream ``j mod streams``) and waits only for its own copy. The
slices peers read live in a ``memref.alloc {hir.symmetric}`` buffer, so a shift reads the
peer's buffer in place (no staging copy), and its dealloc guards the buffer's reuse.

**All-gather + consumers** (``stream_axis == axis``): the stream-parallel compute ops that
read the gathered buffer (a matmul, ...) run per slice. ``local-first`` step j reads team
position (me + j) mod n; ``ring`` reads (me - j) mod n. Step 0 is this rank's own shard: a
local copy on pool stream 0, its compute starts at once, while the user stream stages the
shard into the symmetric buffer, passes one ``hir.barrier`` (every rank's shard is
published) and pulls the peers' shards with ``signal = "none"`` shifts: no step waits for a
peer's progress, only for its own copy (the hand-written copy-engine pipeline's schedule).

Before (after hir-convert-to-communication; A is [4, 2, 8] split along axis 0)::

    %w = "hir.allgather"(%A, %tmp) {axis = 0, backend = "cuda", stream_axis = 0, team = array<i64: 0, 1, 2, 3>}
    "hir.wait"(%w)
    "hir.matmul"(%tmp, %B, %out) {stream_axis = 0 : i64}

After (local-first, streams = 1; constants elided)::

    %me = "hir.device_index"() {mesh = array<i64: 0, 1, 2, 3>} : () -> index
    %user = "hir.get_current_stream"()
    "hir.for"(%c0, %c1, %c1) ({ ^bb0(%j): %s = "hir.get_stream"(%j) ; "hir.set_current_stream"(%s) ; "hir.synchronize"(%user) })
    "hir.set_current_stream"(%user)
    %staged = memref.alloc() {hir.symmetric} : <type of %A>
    "hir.set"(%A, %staged)                                     // publish the local shard
    %b = "hir.barrier"() {backend = "cuda", team = ...} ; "hir.wait"(%b)
    %s0 = "hir.get_stream"(%c0) ; "hir.set_current_stream"(%s0) // step 0: own shard
    %t0 = "hir.alias_select"(%tmp, %me) {axis = 0}
    %w0 = "hir.shift"(%A, %t0, %c0) {backend = "cuda", team = ...} ; "hir.wait"(%w0)
    "hir.matmul"(%t0, %B, %o0)                                 // %o0 = alias_select(%out, %me)
    "hir.set_current_stream"(%user)
    "hir.for"(%c1, %c4, %c1) ({ ^bb0(%j: index):               // steps 1..3: one peer each
      %p = arith.remui (arith.addi %me, %j), %c4
      %t = "hir.alias_select"(%tmp, %p) {axis = 0}
      %w = "hir.shift"(%staged, %t, %j) {backend = "cuda", signal = "none", team = ...}  // user stream
      %s = "hir.get_stream"(%c0) ; "hir.set_current_stream"(%s)
      "hir.wait"(%w)                                           // this step's copy only
      "hir.matmul"(%t, %B, %o)
      "hir.set_current_stream"(%user) })
    "hir.for"(%c0, %c1, %c1) ({ ^bb0(%j): "hir.synchronize"("hir.get_stream"(%j)) })   // join

**Producer + reduce-scatter** (``stream_axis == scatter_axis``): the stream-parallel op
writing the reduce-scatter's input is computed per destination; step j (offset o = j for
local-first, n - j for ring) computes the slice for team position (me - o) mod n into slot
o of a symmetric buffer (the same slot on every rank, so the receiver reads it in place),
then the user stream shifts it to that peer, receiving the slice its other neighbour
computed for this rank into ``%recv`` slot o. The local slice is computed last, straight into
slot 0, and one ``hir.reduction`` over the slots gives the reduce-scatter's output::

    "hir.matmul"(%a, %w, %partial) {stream_axis = 0 : i64}      // partial [4, 4, m, N] split on axis 1
    %w = "hir.reduce_scatter"(%partial, %out) {axis = 1, scatter_axis = 0, stream_axis = 0, ...}

becomes ``%slots = memref.alloc() {hir.symmetric}``, ``%recv = memref.alloc()``, a loop of
steps 1..n-1 (matmul of a[(me - o) mod n] into slots[o] on a pool stream; the user stream
waits for it and shifts slots[o] into recv[o]), the local matmul of a[me] into recv[0], and
``"hir.reduction"(%recv, %out) {axes = array<i64: 0>, kind = "sum"}``.

**Chunks** (``chunks = c``): each peer's slice moves and is computed in ``c`` parts along
its first axis that is neither the stream nor the device axis (``hir.alias_chunk`` views),
so a step's compute starts after a part of its copy, and the pipeline ends with one part's
compute instead of a whole slice's. All-gather: an inner loop over the parts of each
peer's shard (the own shard, which needs no copy, stays whole)::

    "hir.for"(%c1, %c4, %c1) ({ ^bb0(%j: index):
      %t = "hir.alias_select"(%tmp, %p) {axis = 0}
      "hir.for"(%c0, %c2, %c1) ({ ^bb0(%c: index):
        %part = "hir.alias_chunk"(%staged, %c) {axis = 1, chunks = 2}   // rows of the shard
        %tc = "hir.alias_chunk"(%t, %c) {axis = 0, chunks = 2}
        %w = "hir.shift"(%part, %tc, %j) {signal = "none", ...}        // user stream
        "hir.set_current_stream"(%s) ; "hir.wait"(%w)
        "hir.matmul"(%tc, %B, "hir.alias_chunk"(%o, %c) {axis = 0, chunks = 2}) ... }) })

Reduce-scatter: an outer loop over the parts runs the steps above on part ``c`` of every
slot, then reduces part ``c`` of ``%recv`` into part ``c`` of the output on a pool stream of
its own (index ``streams``: on the user stream it would hold back the next part's copies),
which waits for the user stream (the part's copies) and pool stream 0 (its local part).
The extents chunked must divide by ``c``, and every consumer (producer) must keep that
axis in its output (a consumer reducing over it fails with an error).

Run it after hir-convert-to-communication and before hir-lower (whose stream lowering
rejects these collectives): ``hir-convert-to-communication{backend=cuda},hir-p2p-pipeline,
hir-lower``. ``backend`` (default: the collective's) sets the shifts' backend; ``streams``
the number of pool streams the compute cycles through (1: compute in step order, like the
hand-written copy-engine pipeline; n: one stream per step); ``copies`` > 1 splits each
shift's copy over that many streams (``copies`` attribute: several copy engines per peer);
``chunks`` as above.
"""

from dataclasses import dataclass
from typing import Optional

from torch_mlir import ir

from hir.dialect.compute import STREAM_AXIS_ATTR
from hir.dialect.p2p import COPIES_ATTR, SIGNAL_ATTR, SYMMETRIC_ATTR
from hir.dialect.base import sharding_of
from hir.dialect.views import chunk_type, select_type
from hir.passes._axes import is_broadcast_axis, operand_axis, output_index
from hir.passes._ir import COMPUTE_OPS, create, fail, func_ops, get_i64_array, get_int, get_str, i64_attr, index_const
from hir.passes._stream_loops import empty_for
from hir.passes.base import ModulePass, PassFailure, register_pass
from hir.passes.stream_lowering import _renumber_axes, _slices

ALGORITHMS = ("local-first", "ring")


@register_pass
@dataclass
class P2PPipeline(ModulePass):
    name = "hir-p2p-pipeline"
    description = "Stream-parallel all-gather + consumers / producer + reduce-scatter to copy-engine P2P pipelines (nvFuser AG_matmul_P2p); options algorithm, streams, copies, chunks, backend."
    algorithm: str = "local-first"
    backend: str = ""
    streams: int = 1
    copies: int = 1
    chunks: int = 1

    def run(self, module: ir.Module) -> None:
        if self.algorithm not in ALGORITHMS:
            raise PassFailure(f"hir-p2p-pipeline: algorithm '{self.algorithm}' is not one of {', '.join(ALGORITHMS)}")
        if self.backend not in ("", "nccl", "gloo", "cuda"):
            raise PassFailure(f"hir-p2p-pipeline: backend '{self.backend}' is not one of nccl, gloo, cuda")
        if self.streams < 1:
            raise PassFailure(f"hir-p2p-pipeline: streams must be at least 1, got {self.streams}")
        if self.copies < 1:
            raise PassFailure(f"hir-p2p-pipeline: copies must be at least 1, got {self.copies}")
        if self.chunks < 1:
            raise PassFailure(f"hir-p2p-pipeline: chunks must be at least 1, got {self.chunks}")
        for func in func_ops(module):
            body = func.regions[0].blocks[0]
            todo = [op.operation for op in body.operations if _is_p2p(op.operation)]
            for op in todo:
                if op.name == "hir.allgather":
                    self._allgather(op, list(body.operations))
                else:
                    self._reduce_scatter(op, list(body.operations))

    # ----- shared structure ----------------------------------------------------------------

    def _collective(self, op: ir.Operation, buffer: ir.Value, axis: int, verb: str, noun: str) -> tuple:
        """(team, team attribute, shift backend, the op's hir.wait); one ``noun`` per device."""
        team = get_i64_array(op, "team")
        extent = ir.MemRefType(buffer.type).shape[axis]
        if extent != len(team):
            raise fail(op, f"{verb} axis {axis} of extent {extent} over {len(team)} devices; hir-p2p-pipeline needs one {noun} per device along the stream axis (extent {len(team)})")
        backend = ir.StringAttr.get(self.backend or get_str(op, "backend"))
        return team, ir.DenseI64ArrayAttr.get(team), backend, _single_wait(op)

    def _chunk_axis(self, op: ir.Operation, buffer: ir.Value, skipped: list, users: list) -> int:
        """The axis of ``buffer`` that ``chunks`` splits: its first axis not in ``skipped``
        (the stream and device axes). Checks that every (op, operand index) in ``users`` maps
        it to an output axis whose operands divide into the chunks."""
        if self.chunks == 1:
            return -1
        shape = ir.MemRefType(buffer.type).shape
        axis = next((a for a in range(len(shape)) if a not in skipped), None)
        if axis is None:
            raise fail(op, f"has no axis besides {', '.join(map(str, sorted(set(skipped))))} to split into chunks = {self.chunks}")
        for user, index in users:
            _chunk_axes(user, index, axis, self.chunks)
        return axis

    def _shift_attrs(self, team: ir.Attribute, backend: ir.Attribute) -> dict:
        attrs = {"team": team, "backend": backend}
        if self.copies > 1:
            attrs[COPIES_ATTR] = i64_attr(self.copies)
        return attrs

    def _begin(self, team: list[int]) -> "_Steps":
        """device_index, constants, the user stream and the pool streams' initial sync."""
        n = len(team)
        index = ir.IndexType.get()
        stream_type = ir.Type.parse("!hir.stream")
        me = create("hir.device_index", results=[index], attributes={"mesh": ir.DenseI64ArrayAttr.get(team)}).result
        zero, one, count = index_const(0), index_const(1), index_const(n)
        streams = min(self.streams, n)
        pool = index_const(streams) if streams > 1 else one
        user = create("hir.get_current_stream", results=[stream_type]).result
        chunks = index_const(self.chunks) if self.chunks > 1 else one
        steps = _Steps(team, me, zero, one, count, pool, chunks, streams, user, self.algorithm)
        steps.each_stream(lambda s: create("hir.synchronize", [user]), set_current=True)
        create("hir.set_current_stream", [user])
        return steps

    # ----- all-gather ------------------------------------------------------------------------

    def _allgather(self, ag: ir.Operation, block_ops: list) -> None:
        axis = get_int(ag, "axis")
        team, team_attr, backend, wait = self._collective(ag, ag.operands[1], axis, "gathers", "shard")
        src, gathered = ag.operands[0], ag.operands[1]
        consumers = _consumers(ag, gathered, axis, block_ops)
        # Chunks split each shard along its first axis (axis 0 of a step's slice).
        chunk_axis = self._chunk_axis(ag, gathered, [axis], [(op, list(op.operands).index(gathered)) for op in consumers])
        view_axis = chunk_axis - (1 if chunk_axis > axis else 0)
        work_type = ir.Type.parse("!hir.work")
        # At the last consumer: everything the consumers read is defined by then.
        with ir.InsertionPoint(consumers[-1] if consumers else ag), ag.location:
            steps = self._begin(team)
            staged = _alloc(src.type, symmetric=True)
            create("hir.set", [src, staged])
            # Every rank's shard is published once: the steps need no handshake.
            create("hir.wait", [create("hir.barrier", results=[work_type], attributes={"team": team_attr, "backend": backend}).result])

            def step(source: ir.Value, whole: ir.Value, view: ir.Value, offset: ir.Value, position: ir.Value, stream: ir.Value, attrs: dict, chunk: Optional[ir.Value]) -> None:
                """Shift ``source`` into ``view`` (``whole``, the slice at ``position``, or its
                part ``chunk``) on the current stream, then compute on ``stream`` what reads it."""
                work = create("hir.shift", [source, view, offset], [work_type], attrs).result
                if source != src:  # a peer's shard: copied on the user stream, computed on a pool one
                    create("hir.set_current_stream", [stream])
                create("hir.wait", [work])
                for op in consumers:
                    sliced = _slice_op(op.clone(), axis, {gathered: whole}, position, steps.zero)
                    if chunk is not None:
                        _chunk_op(sliced, list(sliced.operands).index(whole), view_axis, chunk, self.chunks, {whole: view})
                create("hir.set_current_stream", [steps.user])

            def select(position: ir.Value) -> ir.Value:
                return create("hir.alias_select", [gathered, position], [select_type(gathered.type, axis)], {"axis": i64_attr(axis)}).result

            # step 0: own shard, a local copy and its compute on pool stream 0, at once
            stream = steps.stream(steps.zero)
            create("hir.set_current_stream", [stream])
            whole = select(steps.me)
            step(src, whole, whole, steps.zero, steps.me, stream, {"team": team_attr, "backend": backend}, None)
            _, j, end = empty_for(steps.one, steps.count, steps.one)
            with ir.InsertionPoint(end):
                offset = steps.offset(j)
                position = steps.position(offset, +1)
                stream = steps.stream(j)
                whole = select(position)
                attrs = {**self._shift_attrs(team_attr, backend), SIGNAL_ATTR: ir.StringAttr.get("none")}
                if self.chunks == 1:
                    step(staged, whole, whole, offset, position, stream, attrs, None)
                else:  # the peer's shard in chunks: each chunk's compute waits for its copy only
                    _, c, chunk_end = empty_for(steps.zero, steps.chunks, steps.one)
                    with ir.InsertionPoint(chunk_end):
                        part = _chunk(staged, c, chunk_axis, self.chunks)
                        step(part, whole, _chunk(whole, c, view_axis, self.chunks), offset, position, stream, attrs, c)
            steps.each_stream(lambda s: create("hir.synchronize", [s]))
        for op in consumers:
            op.erase()
        wait.erase()
        ag.erase()

    # ----- reduce-scatter ----------------------------------------------------------------------

    def _reduce_scatter(self, rs: ir.Operation, block_ops: list) -> None:
        k = get_int(rs, "scatter_axis")
        team, team_attr, backend, wait = self._collective(rs, rs.operands[0], k, "scatters", "slice")
        partial, out = rs.operands[0], rs.operands[1]
        producer = _producer(rs, partial, k, block_ops)
        # Chunks split each slice along its first axis that is neither scattered nor reduced.
        chunk_axis = self._chunk_axis(rs, partial, [k, get_int(rs, "axis")], [(producer, output_index(producer))])
        slot_axis = chunk_axis - (1 if chunk_axis > k else 0)  # also the output's axis
        work_type = ir.Type.parse("!hir.work")
        with ir.InsertionPoint(rs), rs.location:
            steps = self._begin(team)
            slots = _alloc(partial.type, symmetric=True)
            recv = _alloc(partial.type, symmetric=False)
            slot_type = select_type(partial.type, k)

            def slot_of(buffer: ir.Value, index: ir.Value, c: Optional[ir.Value]) -> tuple:
                """(slot ``index`` of ``buffer``, its chunk ``c`` or the whole slot)."""
                view = create("hir.alias_select", [buffer, index], [slot_type], {"axis": i64_attr(k)}).result
                return view, (view if c is None else _chunk(view, c, slot_axis, self.chunks))

            def produce(into: tuple, position: ir.Value, c: Optional[ir.Value]) -> None:
                whole, part = into
                sliced = _slice_op(producer.clone(), k, {partial: whole}, position, steps.zero)
                if c is not None:
                    _chunk_op(sliced, output_index(sliced), slot_axis, c, self.chunks, {whole: part})

            def exchange(c: Optional[ir.Value], then: ir.Value) -> None:
                """Steps 1..n-1 (of chunk ``c``), then the local slice, straight into %recv[0];
                ends on stream ``then``."""
                _, j, end = empty_for(steps.one, steps.count, steps.one)
                with ir.InsertionPoint(end):
                    offset = steps.offset(j)
                    stream = steps.stream(j)
                    create("hir.set_current_stream", [stream])
                    slot = slot_of(slots, offset, c)
                    produce(slot, steps.position(offset, -1), c)
                    create("hir.set_current_stream", [steps.user])
                    create("hir.synchronize", [stream])  # the shift sends what this step computed
                    work = create("hir.shift", [slot[1], slot_of(recv, offset, c)[1], offset], [work_type], self._shift_attrs(team_attr, backend)).result
                    create("hir.wait", [work])
                stream = steps.stream(steps.zero)
                create("hir.set_current_stream", [stream])
                produce(slot_of(recv, steps.zero, c), steps.me, c)
                create("hir.set_current_stream", [then])

            reduction = {"kind": ir.StringAttr.get(get_str(rs, "reduction")), "axes": ir.DenseI64ArrayAttr.get([k])}
            if self.chunks == 1:
                exchange(None, steps.user)
                steps.each_stream(lambda s: create("hir.synchronize", [s]))
                create("hir.reduction", [recv, out], attributes=reduction)
            else:  # chunk by chunk; a chunk's reduction overlaps the next chunk's copies and compute
                stream_type = ir.Type.parse("!hir.stream")
                # Its own pool stream, past the compute ones: on the user stream it would
                # hold back the next chunk's copies, on a compute stream its matmuls.
                reducer = create("hir.get_stream", [steps.pool], [stream_type]).result  # pool = streams
                _, c, end = empty_for(steps.zero, steps.chunks, steps.one)
                with ir.InsertionPoint(end):
                    exchange(c, reducer)
                    create("hir.synchronize", [steps.user])  # the chunk's copies
                    create("hir.synchronize", [steps.stream(steps.zero)])  # its local part
                    parts = _chunk(recv, c, chunk_axis, self.chunks)
                    create("hir.reduction", [parts, _chunk(out, c, slot_axis, self.chunks)], attributes=reduction)
                    create("hir.set_current_stream", [steps.user])
                steps.each_stream(lambda s: create("hir.synchronize", [s]))
                create("hir.synchronize", [reducer])
        producer.erase()
        wait.erase()
        rs.erase()
        _erase_if_unused(partial)


@dataclass
class _Steps:
    """Values every step uses, and the index arithmetic of the two algorithms."""

    team: list
    me: ir.Value
    zero: ir.Value
    one: ir.Value
    count: ir.Value
    pool: ir.Value
    chunks: ir.Value
    streams: int
    user: ir.Value
    algorithm: str

    def offset(self, j: ir.Value) -> ir.Value:
        """The shift offset of step j >= 1: j (local-first) or n - j (ring)."""
        if self.algorithm == "local-first":
            return j
        return _arith("subi", self.count, j)

    def position(self, offset: ir.Value, sign: int) -> ir.Value:
        """Team position (me + sign * offset) mod n."""
        moved = _arith("addi", self.me, offset) if sign > 0 else _arith("subi", _arith("addi", self.me, self.count), offset)
        return _arith("remui", moved, self.count)

    def stream(self, j: ir.Value) -> ir.Value:
        """Pool stream ``j mod streams``."""
        index = j if self.streams >= len(self.team) else (self.zero if self.streams == 1 else _arith("remui", j, self.pool))
        return create("hir.get_stream", [index], [ir.Type.parse("!hir.stream")]).result

    def each_stream(self, body, set_current: bool = False) -> None:
        """A loop over the pool streams running ``body(stream)`` (optionally on it)."""
        _, i, end = empty_for(self.zero, self.pool, self.one)
        with ir.InsertionPoint(end):
            stream = create("hir.get_stream", [i], [ir.Type.parse("!hir.stream")]).result
            if set_current:
                create("hir.set_current_stream", [stream])
            body(stream)


def _alloc(memref_type: ir.Type, symmetric: bool) -> ir.Value:
    attrs = {"operandSegmentSizes": ir.DenseI32ArrayAttr.get([0, 0])}
    if symmetric:
        attrs[SYMMETRIC_ATTR] = ir.UnitAttr.get()
    return create("memref.alloc", results=[memref_type], attributes=attrs).result


def _arith(name: str, lhs: ir.Value, rhs: ir.Value) -> ir.Value:
    return create(f"arith.{name}", [lhs, rhs], [ir.IndexType.get()]).result


def _slice_op(op: ir.Operation, k: int, replace: dict, position: ir.Value, zero: ir.Value) -> ir.Operation:
    """Turn a clone of a stream-parallel op into its per-step form: ``replace`` gives the
    view of the whole slice for some operands, the others are selected at ``position``
    (broadcast operands at 0) along their stream axis."""
    in_axis = operand_axis(op, 0, k)
    for s in _slices(op, k):
        source = op.operands[s.index]
        view = replace.get(source)
        if view is None:
            index = zero if s.broadcast else position
            view = create("hir.alias_select", [source, index], [select_type(source.type, s.axis)], {"axis": i64_attr(s.axis)}).result
        op.operands[s.index] = view
    op.move_before(ir.InsertionPoint.current.ref_operation)  # after the views it reads
    del op.attributes[STREAM_AXIS_ATTR]
    _renumber_axes(op, in_axis)
    return op


def _chunk(buffer: ir.Value, c: ir.Value, axis: int, chunks: int) -> ir.Value:
    """``hir.alias_chunk``: chunk ``c`` of ``buffer`` along ``axis``."""
    view_type = chunk_type(buffer.type, axis, chunks)
    return create("hir.alias_chunk", [buffer, c], [view_type], {"axis": i64_attr(axis), "chunks": i64_attr(chunks)}).result


def _chunk_axes(op: ir.Operation, index: int, axis: int, chunks: int) -> list:
    """(operand index, axis) of every operand of ``op`` to chunk with axis ``axis`` of
    operand ``index``: the operands that have the output axis it maps to (not broadcast)."""
    out_rank = ir.MemRefType(op.operands[output_index(op)].type).rank
    out_axis = next((k for k in range(out_rank) if operand_axis(op, index, k) == axis), None)
    if out_axis is None:
        raise fail(op, f"reduces over axis {axis} of operand #{index}, which chunks = {chunks} would split; only an axis the output keeps can be chunked")
    found = []
    for i, operand in enumerate(op.operands):
        a = operand_axis(op, i, out_axis)
        if not isinstance(operand.type, ir.MemRefType) or a is None or is_broadcast_axis(op, i, a, out_axis):
            continue
        extent = ir.MemRefType(operand.type).shape[a]
        sharding = sharding_of(operand)
        if sharding is not None and sharding.axis == a:
            raise fail(op, f"would chunk axis {a} of operand #{i}, which is split over the device mesh")
        if extent != ir.ShapedType.get_dynamic_size() and extent % chunks:
            raise fail(op, f"axis {a} of operand #{i} has extent {extent}, which does not divide into chunks = {chunks}")
        found.append((i, a))
    return found


def _chunk_op(op: ir.Operation, index: int, axis: int, c: ir.Value, chunks: int, replace: dict) -> None:
    """Turn a step's op into its chunk-``c`` form: every operand that has the output axis
    read from axis ``axis`` of operand ``index`` is chunked along it (``replace`` gives
    chunk views already taken)."""
    for i, a in _chunk_axes(op, index, axis, chunks):
        source = op.operands[i]
        view = replace.get(source)
        op.operands[i] = view if view is not None else _chunk(source, c, a, chunks)
    op.move_before(ir.InsertionPoint.current.ref_operation)  # after the views it reads


def _is_p2p(op: ir.Operation) -> bool:
    k = get_int(op, STREAM_AXIS_ATTR)
    if k is None:
        return False
    if op.name == "hir.allgather":
        return k == get_int(op, "axis")
    return op.name == "hir.reduce_scatter" and k == get_int(op, "scatter_axis")


def _single_wait(op: ir.Operation) -> ir.Operation:
    waits = [use.owner.operation for use in op.results[0].uses]
    if len(waits) != 1 or waits[0].name != "hir.wait":
        raise fail(op, "must have exactly one use, its hir.wait")
    return waits[0]


def _consumers(ag: ir.Operation, gathered: ir.Value, axis: int, block_ops: list) -> list:
    """The stream-parallel compute ops after the all-gather reading ``gathered`` on ``axis``;
    other uses of ``gathered`` must come after them (the pipeline runs at the last one)."""
    out: list = []
    others: list = []
    after = False
    for op in block_ops:
        op = op.operation
        if op == ag:
            after = True
            continue
        if not after or gathered not in list(op.operands):
            continue
        if op.name == "hir.wait" or op.name == "memref.dealloc":
            continue
        k = get_int(op, STREAM_AXIS_ATTR)
        if op.name not in COMPUTE_OPS or k is None:
            others.append(op)
            continue
        if others:
            raise fail(others[0], "uses the gathered buffer of a P2P pipeline before its stream-parallel consumers; move it after them")
        if op.operands[output_index(op)] == gathered:
            raise fail(op, "writes the gathered buffer of a P2P pipeline")
        if any(operand_axis(op, i, k) != axis for i, v in enumerate(op.operands) if v == gathered):
            raise fail(op, f"reads the gathered buffer along another axis than its stream axis {axis}")
        out.append(op)
    return out


def _producer(rs: ir.Operation, partial: ir.Value, k: int, block_ops: list) -> ir.Operation:
    """The stream-parallel compute op (stream axis ``k``) that writes ``partial`` before the
    reduce-scatter, with no other use of ``partial`` in between or after."""
    found: Optional[ir.Operation] = None
    for op in block_ops:
        op = op.operation
        if op == rs:
            break
        if partial not in list(op.operands) or op.name == "memref.dealloc":
            continue
        if op.name in COMPUTE_OPS and op.operands[output_index(op)] == partial and get_int(op, STREAM_AXIS_ATTR) == k and found is None:
            found = op
            continue
        raise fail(op, "uses the reduce-scatter input of a P2P pipeline; only its stream-parallel producer may")
    if found is None:
        raise fail(rs, f"needs its input written by a compute op with stream_axis = {k} in the same block (the P2P pipeline computes it per destination)")
    for use in partial.uses:
        owner = use.owner.operation
        if owner not in (found, rs) and owner.name != "memref.dealloc":
            raise fail(owner, "uses the reduce-scatter input of a P2P pipeline after it; only the reduce-scatter may")
    return found


def _erase_if_unused(buffer: ir.Value) -> None:
    """Drop ``buffer``'s alloc (and deallocs) once nothing else uses it."""
    owner = buffer.owner
    users = [use.owner.operation for use in buffer.uses]
    if not isinstance(owner, ir.Block) and owner.name == "memref.alloc" and all(u.name == "memref.dealloc" for u in users):
        for user in users:
            user.erase()
        owner.erase()
