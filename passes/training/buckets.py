"""The ``bucket-bytes=N`` pattern of ``hir-schedule-data-parallel`` (:mod:`.schedule`): small
gradient all-reduces issued one after another become one all-reduce of a bucket, as DDP's
gradient buckets: one collective's launch and latency instead of one per small parameter
(biases, norm weights).

A member is an all-reduce of a contiguous ``[D, ...]`` buffer split on axis 0 (each
device's partial sum in its row) into a contiguous replicated buffer of rank >= 1, of at
most N bytes. The pattern, rooted on the first member, takes the members that follow it in
the block, same team, backend, reduction and element type, while the bucket stays within N
bytes and no op between that must follow an earlier member (:func:`members_before_last`)
writes a later member's buffers; those ops (what reads an earlier member's sum, and what
touches what they touched) move after the bucket. Before the last member it copies each member's rows into its columns
of a ``[D, total]`` bucket (``hir.set`` into a ``memref.subview``), all-reduces the bucket into
a ``[total]`` buffer, waits, and copies each member's columns out into its output; the
members and their waits go. With ``defer-waits`` the bucket's wait then moves to the first
copy out. The sums are the members' sums, element for element.

Before (N >= 48 bytes)::

    %w0 = "hir.allreduce"(%g0, %r0) : (memref<2x4xf32, split 0>, memref<4xf32>) -> !hir.work
    "hir.wait"(%w0)
    %w1 = "hir.allreduce"(%g1, %r1) : (memref<2x8xf32, split 0>, memref<8xf32>) -> !hir.work
    "hir.wait"(%w1)

After::

    %in = memref.alloc() : memref<2x12xf32, split 0>
    "hir.set"(%g0, subview %in[0, 0] [2, 4])
    "hir.set"(%g1, subview %in[0, 4] [2, 8])
    %out = memref.alloc() : memref<12xf32>
    %w = "hir.allreduce"(%in, %out)
    "hir.wait"(%w)
    "hir.set"(subview %out[0] [4], %r0)
    "hir.set"(subview %out[4] [8], %r1)

A bucket is one all-reduce of more bytes than any member alone, and what joined it is gone:
visiting it again finds nothing more to take (the next member did not fit, or something
between touches it).
"""

import math

from torch_mlir import ir, rewrite
from torch_mlir.dialects import memref

from hir.dialect import AliasReshapeOp, AllreduceOp, SetOp, WaitOp
from hir.dialect.compute import STREAM_AXIS_ATTR
from hir.dialect.sharding import sharding_of
from hir.dialect.views import is_identity_layout
from hir.passes.patterns import Pattern
from hir.passes.training.waits import reads_any, touched_buffers

_ATTRS = ("team", "backend", "reduction", "axis")


def whole_bytes(t: ir.MemRefType) -> int:
    element = ir.ShapedType(t).element_type
    assert isinstance(element, (ir.IntegerType, ir.FloatType)), f"{t}: a bucketed buffer holds numbers"
    return math.prod(t.shape) * element.width // 8 if t.has_static_shape else -1


def _member(op: ir.Operation, limit: int) -> bool:
    """Whether ``op`` is an all-reduce a bucket of ``limit`` bytes may take."""
    if op.name != AllreduceOp.OPERATION_NAME:
        return False
    source, target = (ir.MemRefType(v.type) for v in op.operands)
    if not (
        source.has_static_shape
        and target.has_static_shape
        and is_identity_layout(source)
        and is_identity_layout(target)
    ):
        return False
    split = sharding_of(source, "input")
    kept = sharding_of(target, "output")
    if split is None or list(split.splits) != [0] or target.rank < 1 or kept is None or list(kept.splits) != [None]:
        return False
    return 0 < whole_bytes(target) <= limit


def _same_kind(a: ir.Operation, b: ir.Operation) -> bool:
    types = [ir.ShapedType(x.operands[0].type).element_type for x in (a, b)]
    return types[0] == types[1] and all(
        str(a.attributes[k]) == str(b.attributes[k]) for k in _ATTRS if k in a.attributes or k in b.attributes
    )


def waits_of(op: ir.Operation) -> list:
    return [use.owner for use in op.results[0].uses if use.owner.name == WaitOp.OPERATION_NAME]


def members_before_last(first: ir.Operation, joins, limit: int) -> tuple:
    """``first`` and the collectives after it in its block that a bucket placed where the
    last of them is takes (``joins(op)``: whether ``op`` is one of the kind, and its bytes),
    while the bucket stays within ``limit`` bytes; and the ops between them that must run
    after the bucket: each op that touches a member's buffers (a reader of a reduced
    gradient: a view, a transpose), or a buffer or value such an op touched, in order. No op
    that stays touches what a moved op touches, so each buffer sees its readers and writers
    in the same order."""
    taken, total = [first], joins(first)
    deferred = set(touched_buffers(first))
    moved, pending = [], []
    ops = list(first.block.operations)
    for op in ops[ops.index(first) + 1 :]:
        if op.name == WaitOp.OPERATION_NAME and op.operands[0].owner in taken:
            continue
        size = joins(op)
        if size:
            if total + size > limit or reads_any(op, deferred):
                break
            taken.append(op)
            total += size
            deferred |= touched_buffers(op)
            moved, pending = moved + pending, []
            continue
        if reads_any(op, deferred):
            pending.append(op)
            deferred |= touched_buffers(op) | set(op.results)
    return taken, moved


def _flat(value: ir.Value, keep_rows: bool) -> ir.Value:
    """``value`` (contiguous) viewed as ``[D, n]`` (``keep_rows``) or ``[n]``."""
    t = ir.MemRefType(value.type)
    rank = t.rank
    if keep_rows:
        if rank == 2:
            return value
        n = math.prod(t.shape[1:])
        return AliasReshapeOp.emit(value, [t.shape[0], n], [[0], list(range(1, rank))] if rank > 1 else [[0, 1]])
    if rank == 1:
        return value
    return AliasReshapeOp.emit(value, [math.prod(t.shape)], [list(range(rank))])


def columns(bucket: ir.Value, offset: int, size: int) -> ir.Value:
    """Columns ``offset .. offset + size`` of ``bucket`` (its last axis), every row."""
    t = ir.MemRefType(bucket.type)
    lead = list(t.shape[:-1])
    strides = [math.prod(t.shape[k + 1 :]) for k in range(t.rank)]
    layout = ir.StridedLayoutAttr.get(offset, strides)
    result = ir.MemRefType.get(lead + [size], t.element_type, layout=layout, memory_space=t.memory_space)
    return memref.subview(bucket, [0] * len(lead) + [offset], lead + [size], [1] * t.rank, result_type=result)


def bucket_pattern(limit: int) -> Pattern:
    """The pattern (rooted on ``hir.allreduce``) that buckets small all-reduces up to
    ``limit`` bytes."""

    def bucket_allreduces(op: ir.OpView, rewriter: rewrite.PatternRewriter) -> bool:
        first = op.operation
        if not _member(first, limit):
            return True

        def joins(other: ir.Operation) -> int:
            return (
                whole_bytes(ir.MemRefType(other.operands[1].type))
                if _member(other, limit) and _same_kind(first, other)
                else 0
            )

        members, moved = members_before_last(first, joins, limit)
        if len(members) < 2:
            return True
        sources = [ir.MemRefType(m.operands[0].type) for m in members]
        sizes = [math.prod(s.shape[1:]) for s in sources]
        rows, total = sources[0].shape[0], sum(sizes)
        offsets = [sum(sizes[:k]) for k in range(len(sizes))]
        element = sources[0].element_type
        with ir.InsertionPoint(members[-1]), first.location:
            bucket_in = memref.alloc(
                ir.MemRefType.get([rows, total], element, memory_space=sources[0].memory_space), [], []
            )
            for m, offset, size in zip(members, offsets, sizes):
                SetOp.emit(_flat(m.operands[0], True), columns(bucket_in, offset, size))
            target = ir.MemRefType(members[0].operands[1].type)
            bucket_out = memref.alloc(ir.MemRefType.get([total], element, memory_space=target.memory_space), [], [])
            work = clone_collective(first, bucket_in, bucket_out)
            WaitOp.emit(work)
            for m, offset, size in zip(members, offsets, sizes):
                SetOp.emit(columns(bucket_out, offset, size), _flat(m.operands[1], False))
        replace_members(members, moved, rewriter)
        return False

    return bucket_allreduces


def replace_members(members: list, moved: list, rewriter: rewrite.PatternRewriter) -> None:
    """The ``moved`` ops placed after the bucket emitted before the last member, and the
    members and their waits erased."""
    for op in moved:
        op.move_before(members[-1])
    for m in members:
        for wait in waits_of(m):
            rewriter.erase_op(wait)
    for m in members:
        rewriter.erase_op(m)


def clone_collective(like: ir.Operation, source: ir.Value, target: ir.Value, **overrides: int) -> ir.Value:
    """A collective of ``like``'s kind from ``source`` into ``target`` with ``like``'s
    attributes (the integer ones in ``overrides`` replaced; no stream axis: ``like``'s is
    an axis of its own buffers)."""
    attributes = {
        a.name: a.attr for a in (like.attributes[i] for i in range(len(like.attributes))) if a.name != STREAM_AXIS_ATTR
    }
    attributes.update({k: ir.IntegerAttr.get(ir.IntegerType.get_signless(64), v) for k, v in overrides.items()})
    op = ir.Operation.create(
        like.name, results=[like.results[0].type], operands=[source, target], attributes=attributes
    )
    return op.results[0]
