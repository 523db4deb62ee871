"""``hir-p2p-pipeline{algorithm=local-first|ring streams=1 backend=}``: nvFuser's
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

Run it after hir-convert-to-communication and before hir-lower (whose stream lowering
rejects these collectives): ``hir-convert-to-communication{backend=cuda},hir-p2p-pipeline,
hir-lower``. ``backend`` (default: the collective's) sets the shifts' backend; ``streams``
the number of pool streams the compute cycles through (1: compute in step order, like the
hand-written copy-engine pipeline; n: one stream per step); ``copies`` > 1 splits each
shift's copy over that many streams (``copies`` attribute: several copy engines per peer).
"""

from dataclasses import dataclass
from typing import Optional

from torch_mlir import ir

from hir.dialect.compute_ops import STREAM_AXIS_ATTR
from hir.dialect.p2p_ops import COPIES_ATTR, SIGNAL_ATTR, SYMMETRIC_ATTR
from hir.dialect.view_ops import select_type
from hir.passes._axes import operand_axis, output_index
from hir.passes._ir import COMPUTE_OPS, create, fail, func_ops, get_i64_array, get_int, get_str, i64_attr, index_const
from hir.passes._stream_loops import empty_for
from hir.passes.base import ModulePass, PassFailure, register_pass
from hir.passes.stream_lowering import _renumber_axes, _slices

ALGORITHMS = ("local-first", "ring")


@register_pass
@dataclass
class P2PPipeline(ModulePass):
    name = "hir-p2p-pipeline"
    description = "Stream-parallel all-gather + consumers / producer + reduce-scatter to copy-engine P2P pipelines (nvFuser AG_matmul_P2p)."
    algorithm: str = "local-first"
    backend: str = ""
    streams: int = 1
    copies: int = 1

    def run(self, module: ir.Module) -> None:
        if self.algorithm not in ALGORITHMS:
            raise PassFailure(f"hir-p2p-pipeline: algorithm '{self.algorithm}' is not one of {', '.join(ALGORITHMS)}")
        if self.backend not in ("", "nccl", "gloo", "cuda"):
            raise PassFailure(f"hir-p2p-pipeline: backend '{self.backend}' is not one of nccl, gloo, cuda")
        if self.streams < 1:
            raise PassFailure(f"hir-p2p-pipeline: streams must be at least 1, got {self.streams}")
        if self.copies < 1:
            raise PassFailure(f"hir-p2p-pipeline: copies must be at least 1, got {self.copies}")
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
        steps = _Steps(team, me, zero, one, count, pool, streams, user, self.algorithm)
        steps.each_stream(lambda s: create("hir.synchronize", [user]), set_current=True)
        create("hir.set_current_stream", [user])
        return steps

    # ----- all-gather ------------------------------------------------------------------------

    def _allgather(self, ag: ir.Operation, block_ops: list) -> None:
        axis = get_int(ag, "axis")
        team, team_attr, backend, wait = self._collective(ag, ag.operands[1], axis, "gathers", "shard")
        src, gathered = ag.operands[0], ag.operands[1]
        consumers = _consumers(ag, gathered, axis, block_ops)
        work_type = ir.Type.parse("!hir.work")
        # At the last consumer: everything the consumers read is defined by then.
        with ir.InsertionPoint(consumers[-1] if consumers else ag), ag.location:
            steps = self._begin(team)
            staged = _alloc(src.type, symmetric=True)
            create("hir.set", [src, staged])
            # Every rank's shard is published once: the steps need no handshake.
            create("hir.wait", [create("hir.barrier", results=[work_type], attributes={"team": team_attr, "backend": backend}).result])

            def step(source: ir.Value, offset: ir.Value, position: ir.Value, stream: ir.Value, attrs: dict) -> None:
                view = create("hir.alias_select", [gathered, position], [select_type(gathered.type, axis)], {"axis": i64_attr(axis)}).result
                work = create("hir.shift", [source, view, offset], [work_type], attrs).result
                if source != src:  # a peer's shard: copied on the user stream, computed on a pool one
                    create("hir.set_current_stream", [stream])
                create("hir.wait", [work])
                for op in consumers:
                    _slice_op(op.clone(), axis, {gathered: view}, position, steps.zero)
                create("hir.set_current_stream", [steps.user])

            # step 0: own shard, a local copy and its compute on pool stream 0, at once
            stream = steps.stream(steps.zero)
            create("hir.set_current_stream", [stream])
            step(src, steps.zero, steps.me, stream, {"team": team_attr, "backend": backend})
            _, j, end = empty_for(steps.one, steps.count, steps.one)
            with ir.InsertionPoint(end):
                offset = steps.offset(j)
                attrs = {**self._shift_attrs(team_attr, backend), SIGNAL_ATTR: ir.StringAttr.get("none")}
                step(staged, offset, steps.position(offset, +1), steps.stream(j), attrs)
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
        work_type = ir.Type.parse("!hir.work")
        with ir.InsertionPoint(rs), rs.location:
            steps = self._begin(team)
            slots = _alloc(partial.type, symmetric=True)
            recv = _alloc(partial.type, symmetric=False)
            slot_type = select_type(partial.type, k)
            _, j, end = empty_for(steps.one, steps.count, steps.one)
            with ir.InsertionPoint(end):
                offset = steps.offset(j)
                stream = steps.stream(j)
                create("hir.set_current_stream", [stream])
                slot = create("hir.alias_select", [slots, offset], [slot_type], {"axis": i64_attr(k)}).result
                _slice_op(producer.clone(), k, {partial: slot}, steps.position(offset, -1), steps.zero)
                create("hir.set_current_stream", [steps.user])
                create("hir.synchronize", [stream])  # the shift sends what this step computed
                into = create("hir.alias_select", [recv, offset], [slot_type], {"axis": i64_attr(k)}).result
                work = create("hir.shift", [slot, into, offset], [work_type], self._shift_attrs(team_attr, backend)).result
                create("hir.wait", [work])
            stream = steps.stream(steps.zero)  # the local slice, last, straight into slot 0
            create("hir.set_current_stream", [stream])
            own = create("hir.alias_select", [recv, steps.zero], [slot_type], {"axis": i64_attr(k)}).result
            _slice_op(producer.clone(), k, {partial: own}, steps.me, steps.zero)
            create("hir.set_current_stream", [steps.user])
            steps.each_stream(lambda s: create("hir.synchronize", [s]))
            create("hir.reduction", [recv, out], attributes={"kind": ir.StringAttr.get(get_str(rs, "reduction")), "axes": ir.DenseI64ArrayAttr.get([k])})
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


def _slice_op(op: ir.Operation, k: int, replace: dict, position: ir.Value, zero: ir.Value) -> None:
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
