"""The ``bucket-bytes=N`` patterns of ``hir-schedule-data-parallel`` (:mod:`.schedule`) for a
fully sharded step: parameters' all-gathers and gradients' reduce-scatters of at most N
(whole) bytes each go as one collective of a flat bucket, as FSDP2's all-gather copy-in /
copy-out and its reduce-scatter of a flat gradient buffer: one launch and one latency
instead of one per small parameter.

Every member is seen through a ``[D, c]`` view (``[D, D, c]`` for a reduce-scatter's
input): each device's part of it as one row of ``c`` contiguous elements (the axes before
the split axis must be unit axes, so each device's block is contiguous). A bucket of
``S`` columns holds member ``k`` in columns ``offset_k .. offset_k + c_k`` of every row;
the copies in and out are ``hir.set`` between a member's view and a ``memref.subview`` of
its columns (no copy to make the views: ``hir.alias_reshape`` / ``hir.alias_stack_shards``).
A gathered parameter needs its own buffer still (FSDP2's copy-out): within the bucket its
rows are ``S`` apart, a layout no view of ``[E, ...]`` has.

- All-gather of a parameter's shard (an argument) into a buffer: the bucket goes where
  its first member is, taking the gathers after it in the block (a later one moves up:
  nothing between touches its shard or its buffer) while it stays within N bytes and does
  not gather a shard twice (a shard gathered again for the backward starts a bucket of
  its own). Each member's copy out (and its buffer's allocation) is placed right before
  its first reader, so a buffer lives from its first reader as before::

      %in = memref.alloc() : memref<2x24xf32, split 0>       // D = 2; p0: [8, 4], p1: [16]
      "hir.set"(view [2, 16] of %shard0, subview %in[0, 0] [2, 16])
      "hir.set"(view [2, 8] of %shard1, subview %in[0, 16] [2, 8])
      %out = memref.alloc() : memref<2x24xf32>
      %w = "hir.allgather"(%in, %out) {axis = 0}
      "hir.wait"(%w)
      ...
      %p0 = memref.alloc() : memref<8x4xf32>
      "hir.set"(subview %out[0, 0] [2, 16], view [2, 16] of %p0)
      call @layer0(%p0, ...)

- Reduce-scatter of a gradient's partial sums: the bucket goes where its last member is,
  as the all-reduce buckets (:mod:`.buckets`): a ``[D, D, S]`` bucket split on axis 0 (each
  device's partial sums in its row, each destination device's columns in its slice)
  reduce-scattered on axis 1 into ``[D, S]`` split on axis 0; what reads a member's rows
  before the last member exists runs after the bucket.

With ``prefetch`` a gather's bucket is prefetched as a whole (:mod:`.prefetch`); with
``defer-waits`` its wait moves to its first copy out.
"""

import math

from torch_mlir import ir, rewrite
from torch_mlir.dialects import memref

from hir.dialect import AliasReshapeOp, AliasStackShardsOp, AllgatherOp, ReduceScatterOp, SetOp, WaitOp
from hir.dialect.sharding import Sharding, sharding_of
from hir.dialect.views import is_identity_layout
from hir.passes.patterns import Pattern
from hir.passes.training.buckets import (
    clone_collective,
    columns,
    members_before_last,
    replace_members,
    waits_of,
    whole_bytes,
)
from hir.passes.training.waits import first_reader, reads_any, touched_buffers, with_views

_ALLOC = memref.AllocOp.OPERATION_NAME


def _split(t: ir.MemRefType, blocks: bool = True) -> tuple | None:
    """(the axis a 1-D mesh splits evenly, the mesh's extent) of ``t`` (-1 when
    replicated); None for another placement or a buffer a bucket does not take (dynamic,
    strided, rank 0, or with ``blocks`` a device's block not contiguous)."""
    if not (t.has_static_shape and is_identity_layout(t) and t.rank >= 1):
        return None
    s = sharding_of(t)
    if s is None or len(s.splits) != 1 or s.offsets or s.packed or s.partial:
        return None
    axis = s.splits[0]
    if axis is not None and (t.shape[axis] % s.mesh_shape[0] or blocks and any(d != 1 for d in t.shape[:axis])):
        return None
    return (-1 if axis is None else axis), s.mesh_shape[0]


def _rows(value: ir.Value, devices: int, lead: int = 0) -> ir.Value:
    """``value`` (contiguous, axes ``lead..`` holding ``devices`` contiguous blocks) viewed
    as ``[*value.shape[:lead], devices, c]``."""
    t = ir.MemRefType(value.type)
    keep = list(range(lead))
    if t.rank != lead + 1:
        value = AliasReshapeOp.emit(
            value, list(t.shape[:lead]) + [math.prod(t.shape[lead:])], [[k] for k in keep] + [list(range(lead, t.rank))]
        )
    n = math.prod(t.shape[lead:])
    return AliasReshapeOp.emit(
        value, list(t.shape[:lead]) + [devices, n // devices], [[k] for k in keep] + [[lead, lead + 1]]
    )


def _gathered_parameter(op: ir.Operation, limit: int) -> int:
    """The whole bytes of ``op`` if it is an all-gather of an argument (a parameter's shard)
    into an allocated buffer that a bucket of ``limit`` bytes may take, else 0."""
    if (
        op.name != AllgatherOp.OPERATION_NAME
        or not isinstance(op.operands[0].owner, ir.Block)
        or isinstance(op.operands[1].owner, ir.Block)
        or op.operands[1].owner.name != _ALLOC
    ):
        return 0
    source, target = (ir.MemRefType(v.type) for v in op.operands)
    split, kept = _split(source), _split(target)
    if split is None or kept is None or kept[0] != -1 or split[0] != ir.IntegerAttr(op.attributes["axis"]).value:
        return 0
    size = whole_bytes(target)
    return size if 0 < size <= limit else 0


def _same_team(a: ir.Operation, b: ir.Operation) -> bool:
    types = [ir.MemRefType(x.operands[0].type) for x in (a, b)]
    return types[0].element_type == types[1].element_type and all(
        str(a.attributes[k]) == str(b.attributes[k]) for k in ("team", "backend")
    )


def _gathers_after(first: ir.Operation, limit: int) -> list:
    """``first`` and the parameter gathers after it a bucket placed at ``first`` takes."""
    taken, total, shards, seen = [first], _gathered_parameter(first, limit), {first.operands[0]}, set()
    ops = list(first.block.operations)
    for op in ops[ops.index(first) + 1 :]:
        if op.name == WaitOp.OPERATION_NAME and op.operands[0].owner in taken:
            continue
        size = _gathered_parameter(op, limit)
        if size and _same_team(first, op):
            if op.operands[0] in shards or total + size > limit:
                break
            if not reads_any(op, seen):
                taken.append(op)
                total += size
                shards.add(op.operands[0])
                continue
        if op.name != _ALLOC:
            seen |= touched_buffers(op)
    return taken


def gather_bucket_pattern(limit: int) -> Pattern:
    """The pattern (rooted on ``hir.allgather``) that buckets parameters' gathers of at most
    ``limit`` bytes."""

    def bucket_gathers(op: ir.OpView, rewriter: rewrite.PatternRewriter) -> bool:
        first = op.operation
        if not _gathered_parameter(first, limit):
            return True
        members = _gathers_after(first, limit)
        if len(members) < 2:
            return True
        split = _split(ir.MemRefType(first.operands[0].type))
        assert split is not None  # (checked by _gathered_parameter)
        devices = split[1]
        sizes = [math.prod(ir.MemRefType(m.operands[1].type).shape) // devices for m in members]
        offsets = [sum(sizes[:k]) for k in range(len(sizes))]
        element = ir.MemRefType(first.operands[1].type).element_type
        shards = sharding_of(first.operands[0])
        assert shards is not None  # (a parameter's gather reads a sharded buffer)
        rows = Sharding.of(shards.mesh, shards.mesh_shape, [0]).attr()
        with ir.InsertionPoint(first), first.location:
            bucket_in = memref.alloc(ir.MemRefType.get([devices, sum(sizes)], element, memory_space=rows), [], [])
            for m, offset, size in zip(members, offsets, sizes):
                SetOp.emit(_rows(m.operands[0], devices), columns(bucket_in, offset, size))
            replicated = ir.MemRefType(first.operands[1].type).memory_space
            bucket_out = memref.alloc(
                ir.MemRefType.get([devices, sum(sizes)], element, memory_space=replicated), [], []
            )
            WaitOp.emit(clone_collective(first, bucket_in, bucket_out, axis=0))
        outputs = [m.operands[1] for m in members]
        for m in members:
            for wait in waits_of(m):
                rewriter.erase_op(wait)
            rewriter.erase_op(m)
        for out, offset, size in zip(outputs, offsets, sizes):
            alloc = out.owner.operation
            block_ops = [o.operation for o in alloc.block.operations]
            reader = block_ops[first_reader(block_ops, block_ops.index(alloc) + 1, with_views([out]))]
            alloc.move_before(reader)
            with ir.InsertionPoint(reader), reader.location:
                SetOp.emit(columns(bucket_out, offset, size), _rows(out, devices))
        return False

    return bucket_gathers


def _scattered_gradient(op: ir.Operation, limit: int) -> int:
    """The whole bytes of ``op``'s output if it is a reduce-scatter a bucket of ``limit``
    bytes may take (each device's partial sums in its row of the reduced axis, the
    output's blocks contiguous), else 0."""
    if op.name != ReduceScatterOp.OPERATION_NAME:
        return 0
    source, target = (ir.MemRefType(v.type) for v in op.operands)
    split, kept = _split(source, blocks=False), _split(target)
    axis = ir.IntegerAttr(op.attributes["axis"]).value
    if split is None or kept is None or split[0] != axis or source.shape[axis] != split[1] or kept[0] == -1:
        return 0
    size = whole_bytes(target)
    return size if 0 < size <= limit else 0


def scatter_bucket_pattern(limit: int) -> Pattern:
    """The pattern (rooted on ``hir.reduce_scatter``) that buckets gradients' reduce-scatters
    of at most ``limit`` bytes."""

    def bucket_scatters(op: ir.OpView, rewriter: rewrite.PatternRewriter) -> bool:
        first = op.operation
        if not _scattered_gradient(first, limit):
            return True

        def joins(other: ir.Operation) -> int:
            size = _scattered_gradient(other, limit)
            return (
                size
                if size
                and _same_team(first, other)
                and str(first.attributes["reduction"]) == str(other.attributes["reduction"])
                else 0
            )

        members, moved = members_before_last(first, joins, limit)
        if len(members) < 2:
            return True
        split = _split(ir.MemRefType(first.operands[0].type), blocks=False)
        assert split is not None  # (checked by _scattered_gradient)
        devices = split[1]
        sizes = [math.prod(ir.MemRefType(m.operands[1].type).shape) // devices for m in members]
        offsets = [sum(sizes[:k]) for k in range(len(sizes))]
        element = ir.MemRefType(first.operands[1].type).element_type
        with ir.InsertionPoint(members[-1]), first.location:
            views = []
            for m in members:
                partial = m.operands[0]
                axis = ir.IntegerAttr(m.attributes["axis"]).value
                if axis:
                    partial = AliasStackShardsOp.emit(partial, axis, 0)
                views.append(_rows(partial, devices, lead=1))
            bucket_in = memref.alloc(
                ir.MemRefType.get(
                    [devices, devices, sum(sizes)], element, memory_space=ir.MemRefType(views[0].type).memory_space
                ),
                [],
                [],
            )
            for view, offset, size in zip(views, offsets, sizes):
                SetOp.emit(view, columns(bucket_in, offset, size))
            outs = [_rows(m.operands[1], devices) for m in members]
            bucket_out = memref.alloc(
                ir.MemRefType.get(
                    [devices, sum(sizes)], element, memory_space=ir.MemRefType(outs[0].type).memory_space
                ),
                [],
                [],
            )
            WaitOp.emit(clone_collective(first, bucket_in, bucket_out, axis=0, scatter_axis=1))
            for out, offset, size in zip(outs, offsets, sizes):
                SetOp.emit(columns(bucket_out, offset, size), out)
        replace_members(members, moved, rewriter)
        return False

    return bucket_scatters
