"""The shared step builder of hir-p2p-pipeline (``pipeline.py``): the values every step
uses (device index, constants, user and pool streams), the step index arithmetic of the two
algorithms, and the per-step forms of stream-parallel ops (sliced at one team position, and
chunked). The all-gather and reduce-scatter sides (``allgather.py``,
``reduce_scatter.py``, ``accumulate.py``, ``allreduce.py``) build their pipelines from these.
"""

from dataclasses import dataclass
from typing import Any

from torch_mlir import ir
from torch_mlir.dialects import arith

from hir.dialect import (
    AliasChunkOp,
    AliasSelectOp,
    DeviceIndexOp,
    ForOp,
    GetCurrentStreamOp,
    GetStreamOp,
    SetCurrentStreamOp,
    SynchronizeOp,
    WaitOp,
)
from hir.dialect.base import i64_attr, required_i64_array, required_str
from hir.dialect.compute import STREAM_AXIS_ATTR
from hir.dialect.irutils import (
    alloc,
    index_arith,
    index_const,
    is_broadcast_axis,
    operand_axis,
    output_index,
    renumber_axes,
    slice_name,
    value_name,
)
from hir.dialect.nodes import team_backend
from hir.dialect.p2p import COPIES_ATTR, SYMMETRIC_ATTR, TRANSFER_ATTR
from hir.dialect.sharding import sharding_of
from hir.passes.base import fail
from hir.passes.streams._stream_loops import stream_slices

ALGORITHMS = ("local-first", "ring")


@dataclass
class Steps:
    """Values every step uses, and the index arithmetic of the two algorithms. ``opts`` is
    the pass (its algorithm, backend, streams, copies, chunks, transfer and comm_stream
    options; ``chunks`` already resolved to a number)."""

    opts: Any
    team: list
    me: ir.Value
    zero: ir.Value
    one: ir.Value
    count: ir.Value
    pool: ir.Value  # index constant: the number of compute streams
    chunks: ir.Value
    streams: int
    user: ir.Value
    comm: ir.Value  # the stream shifts are issued on: the user stream, or a high-priority pool one

    def offset(self, j: ir.Value) -> ir.Value:
        """The shift offset of step j >= 1: j (local-first) or n - j (ring)."""
        if self.opts.algorithm == "local-first":
            return j
        return index_arith(arith.SubIOp, self.count, j, name="offset")

    def position(self, offset: ir.Value, sign: int) -> ir.Value:
        """Team position (me + sign * offset) mod n."""
        if sign > 0:
            moved = index_arith(arith.AddIOp, self.me, offset)
        else:
            moved = index_arith(arith.SubIOp, index_arith(arith.AddIOp, self.me, self.count), offset)
        return index_arith(arith.RemUIOp, moved, self.count, name="position")

    def stream(self, j: ir.Value) -> ir.Value:
        """Pool stream ``j mod streams``."""
        index = (
            j
            if self.streams >= len(self.team)
            else (self.zero if self.streams == 1 else index_arith(arith.RemUIOp, j, self.pool))
        )
        return GetStreamOp.emit(index, name="stream")

    def each_stream(self, body, set_current: bool = False) -> None:
        """A loop over the compute streams running ``body(stream)`` (optionally on it)."""
        _, i, end = ForOp.emit(self.zero, self.pool, self.one, name="s")
        with ir.InsertionPoint(end):
            stream = GetStreamOp.emit(i, name="stream")
            if set_current:
                SetCurrentStreamOp.emit(stream)
            body(stream)

    def loop(self, lower: ir.Value, upper: ir.Value, name: str) -> tuple[ir.Value, ir.Operation]:
        """An ``hir.for`` from ``lower`` to ``upper`` by one: (index ``%name``, where its body goes)."""
        _, index, end = ForOp.emit(lower, upper, self.one, name=name)
        return index, end

    def shift_attrs(self, team: ir.Attribute, backend: ir.Attribute, transfer: str = "pull") -> dict:
        attrs = {"team": team, "backend": backend}
        if self.opts.copies > 1:
            attrs[COPIES_ATTR] = i64_attr(self.opts.copies)
        if transfer != "pull":
            attrs[TRANSFER_ATTR] = ir.StringAttr.get(transfer)
        return attrs

    def to_comm(self) -> None:
        """Make the comm stream current, after what the user stream issued so far (a no-op
        when the comm stream is the user stream)."""
        SetCurrentStreamOp.emit(self.comm)
        if self.comm != self.user:
            SynchronizeOp.emit(self.user)

    def join(self, extra: list, from_comm: bool = False) -> None:
        """On the user stream (switched to when issuing on the comm stream, ``from_comm``):
        wait for the compute streams, the comm stream and ``extra``."""
        if from_comm and self.comm != self.user:
            SetCurrentStreamOp.emit(self.user)
        _, i, end = ForOp.emit(
            self.zero, self.pool, self.one, joins_pool_streams=True, name="s"
        )  # deallocation reads it
        with ir.InsertionPoint(end):
            SynchronizeOp.emit(GetStreamOp.emit(i, name="stream"))
        for stream in ([self.comm] if self.comm != self.user else []) + extra:
            SynchronizeOp.emit(stream)


def begin(opts: Any, team: list[int]) -> Steps:
    """device_index, constants, the user stream and the pool streams' initial sync."""
    n = len(team)
    me = DeviceIndexOp.emit(team, name="me")
    zero, one, count = index_const(0), index_const(1), index_const(n)
    streams = compute_streams(opts, n)
    pool = index_const(streams) if streams > 1 else one
    user = GetCurrentStreamOp.emit(name="user_stream")
    chunks = index_const(opts.chunks) if opts.chunks > 1 else one
    comm = GetStreamOp.emit(index_const(comm_stream_index(opts, n)), name="comm_stream") if opts.comm_stream else user
    steps = Steps(opts, team, me, zero, one, count, pool, chunks, streams, user, comm)
    steps.each_stream(lambda s: SynchronizeOp.emit(user), set_current=True)
    SetCurrentStreamOp.emit(user)
    return steps


def compute_streams(opts: Any, team_size: int) -> int:
    """How many pool streams the steps' compute cycles through (the accumulating
    reduce-scatter: one per part)."""
    if opts.accumulate:
        return opts.chunks
    return min(opts.streams, team_size)


def comm_stream_index(opts: Any, team_size: int) -> int:
    """The pool index of the high-priority comm stream (``comm_stream=1``): past the compute
    streams and the one after them (the reduce-scatter's reducer / receiver; the
    accumulating ring has one only when it pushes parts, ``accumulate_receives``)."""
    if opts.accumulate:
        return compute_streams(opts, team_size) + (1 if opts.transfer == "push" and opts.chunks > 1 else 0)
    return compute_streams(opts, team_size) + 1


def collective(opts: Any, op: ir.Operation, buffer: ir.Value, axis: int, verb: str, noun: str) -> tuple:
    """(team, team attribute, shift backend, the op's hir.wait); one ``noun`` per device."""
    team = required_i64_array(op, "team")
    extent = ir.MemRefType(buffer.type).shape[axis]
    if extent != len(team):
        raise fail(
            op,
            f"{verb} axis {axis} of extent {extent} over {len(team)} devices; hir-p2p-pipeline "
            f"needs one {noun} per device along the stream axis (extent {len(team)})",
        )
    backend = ir.StringAttr.get(
        team_backend(op, op.attributes["team"], opts.backend or required_str(op, "backend"), opts.name)
    )  # no copy engines across nodes
    return team, ir.DenseI64ArrayAttr.get(team), backend, _single_wait(op)


def _single_wait(op: ir.Operation) -> ir.Operation:
    waits = [use.owner.operation for use in op.results[0].uses]
    if len(waits) != 1 or waits[0].name != WaitOp.OPERATION_NAME:
        raise fail(op, f"must have exactly one use, its {WaitOp.OPERATION_NAME}")
    return waits[0]


def chunk_axis(opts: Any, op: ir.Operation, buffer: ir.Value, skipped: list, users: list) -> int:
    """The axis of ``buffer`` that ``chunks`` splits: its first axis not in ``skipped``
    (the stream and device axes). Checks that every (op, operand index) in ``users`` maps
    it to an output axis whose operands divide into the chunks."""
    if opts.chunks == 1:
        return -1
    shape = ir.MemRefType(buffer.type).shape
    axis = next((a for a in range(len(shape)) if a not in skipped), None)
    if axis is None:
        raise fail(
            op, f"has no axis besides {', '.join(map(str, sorted(set(skipped))))} to split into chunks = {opts.chunks}"
        )
    for user, index in users:
        _chunk_axes(user, index, axis, opts.chunks)
    return axis


def new_buffer(memref_type: ir.Type, symmetric: bool, name: str) -> ir.Value:
    """A static ``memref.alloc`` ``%name``, in symmetric memory (peers read it in place) if asked."""
    return alloc(memref_type, attributes={SYMMETRIC_ATTR: ir.UnitAttr.get()} if symmetric else None, name=name).result


def chunk(buffer: ir.Value, c: ir.Value, axis: int, chunks: int) -> ir.Value:
    """``hir.alias_chunk``: chunk ``c`` of ``buffer`` along ``axis`` (``%buffer_part``)."""
    name = value_name(buffer)
    return AliasChunkOp.emit(buffer, c, axis, chunks, name=f"{name}_part" if name else "part")


def slice_op(op: ir.Operation, k: int, replace: dict, position: ir.Value, zero: ir.Value) -> ir.Operation:
    """Turn a clone of a stream-parallel op into its per-step form: ``replace`` gives the
    view of the whole slice for some operands, the others are selected at ``position``
    (broadcast operands at 0) along their stream axis."""
    in_axis = operand_axis(op, 0, k)
    for s in stream_slices(op, k):
        source = op.operands[s.index]
        view = replace.get(source)
        if view is None:
            view = AliasSelectOp.emit(source, zero if s.broadcast else position, s.axis, name=slice_name(source))
        op.operands[s.index] = view
    op.move_before(ir.InsertionPoint.current.ref_operation)  # after the views it reads
    del op.attributes[STREAM_AXIS_ATTR]
    renumber_axes(op, in_axis)
    return op


def _chunk_axes(op: ir.Operation, index: int, axis: int, chunks: int) -> list:
    """(operand index, axis) of every operand of ``op`` to chunk with axis ``axis`` of
    operand ``index``: the operands that have the output axis it maps to (not broadcast)."""
    out_rank = ir.MemRefType(op.operands[output_index(op)].type).rank
    out_axis = next((k for k in range(out_rank) if operand_axis(op, index, k) == axis), None)
    if out_axis is None:
        raise fail(
            op,
            f"reduces over axis {axis} of operand #{index}, which chunks = "
            f"{chunks} would split; only an axis the output keeps can be chunked",
        )
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
            raise fail(
                op, f"axis {a} of operand #{i} has extent {extent}, which does not divide into chunks = {chunks}"
            )
        found.append((i, a))
    return found


def chunk_op(op: ir.Operation, index: int, axis: int, c: ir.Value, chunks: int, replace: dict) -> None:
    """Turn a step's op into its chunk-``c`` form: every operand that has the output axis
    read from axis ``axis`` of operand ``index`` is chunked along it (``replace`` gives
    chunk views already taken)."""
    for i, a in _chunk_axes(op, index, axis, chunks):
        source = op.operands[i]
        view = replace.get(source)
        op.operands[i] = view if view is not None else chunk(source, c, a, chunks)
    op.move_before(ir.InsertionPoint.current.ref_operation)  # after the views it reads
