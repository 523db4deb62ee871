"""``hir-reuse-stream-buffers{num-streams=N}``: stream buffer reuse (seed 001's "possible
future optimization"). After stream lowering and loop fusion, an intermediate that is only
touched slice by slice inside one stream work loop -- allocated before the loop, read and
written through ``hir.alias_select(%t, %i)`` at the loop index, freed after the loop -- does
not need all its slices at once: iteration ``i`` only needs slice ``i``. The full-size
buffer becomes a ``[num_streams, ...]`` buffer (the stream axis removed, a slot axis in
front) indexed by ``%i mod num_streams`` (``arith.remui``), and the loop's pool stream
becomes ``get_stream(%i mod num_streams)``.

Why it is correct: iterations ``i`` and ``i + num_streams`` share a slot, and they also run
on the same pool stream (``(i mod n) mod pool_size`` is equal for both, whatever the run's
pool size), so the later iteration's work is queued after the earlier one's on that stream
and cannot overwrite the slot while the earlier iteration still reads it. Rewriting the
``get_stream`` index (rather than relying on ``i mod pool_size``) keeps that true when the
interpreter's pool is larger than ``num-streams``; such a run then uses only
``num-streams`` pool streams in this loop.

Before::

    %t = memref.alloc(%m) : memref<?x8xf32>
    %out = memref.alloc(%m) : memref<?x8xf32>
    ... get_current_stream, initial-sync loop ...
    "hir.for"(%c0, %m, %c1) ({
    ^bb0(%i: index):
      %s = "hir.get_stream"(%i) : (index) -> !hir.stream
      "hir.set_current_stream"(%s) : (!hir.stream) -> ()
      %a = "hir.alias_select"(%in, %i) {axis = 0 : i64} : (memref<?x32xf32>, index) -> memref<32xf32, strided<[1], offset: ?>>
      %ti = "hir.alias_select"(%t, %i) {axis = 0 : i64} : (memref<?x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
      "hir.matmul"(%a, %w, %ti) : (...) -> ()
      %oi = "hir.alias_select"(%out, %i) {axis = 0 : i64} : (memref<?x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
      "hir.binary"(%ti, %ti, %oi) {kind = "add"} : (...) -> ()
      "hir.set_current_stream"(%user) ; "hir.synchronize"(%s) ; "hir.yield"
    }) : (index, index, index) -> ()
    memref.dealloc %t : memref<?x8xf32>

After::

    %c4 = arith.constant 4 : index
    %t = memref.alloc() : memref<4x8xf32>
    %out = memref.alloc(%m) : memref<?x8xf32>
    ...
    "hir.for"(%c0, %m, %c1) ({
    ^bb0(%i: index):
      %slot = arith.remui %i, %c4 : index
      %s = "hir.get_stream"(%slot) : (index) -> !hir.stream
      "hir.set_current_stream"(%s) : (!hir.stream) -> ()
      %a = "hir.alias_select"(%in, %i) {axis = 0 : i64} : ...
      %ti = "hir.alias_select"(%t, %slot) {axis = 0 : i64} : (memref<4x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
      ...
    }) : (index, index, index) -> ()
    memref.dealloc %t : memref<4x8xf32>

Left alone (conservative): buffers with any other use (returned, used outside the loop, a
whole-buffer operand, a view at another index or along two axes, used in two loops), loops
whose payload switches streams itself (``hir.set_current_stream`` / ``hir.get_stream``
besides the prologue and epilogue), loops where a work token of an op touching the buffer
is not waited on in the same iteration, ops with the copy-engine ``cuda`` backend (peers
write into local buffers outside local stream order), and static extents of at most
``num-streams`` slices (nothing to save). Memory: ``num-streams`` slices instead of
``extent`` slices.

``num-streams`` defaults to the module's ``hir.num_streams`` (the stream pool size an
earlier pass fixed), else 4; a different explicit value is an error (one stream count).

Not part of ``hir-lower`` (it caps the loop at ``num-streams`` pool streams, a scheduling
choice the user makes): use ``hir-lower-reuse`` or add the pass to a pipeline after
``hir-fuse-loops``.
"""

from dataclasses import dataclass
from typing import Optional

from torch_mlir import ir

from torch_mlir.dialects import arith

from hir.dialect import DEFAULT_NUM_STREAMS, OP_CLASSES, AliasSelectOp, ForOp, WaitOp, WorkType, module_num_streams
from hir.dialect.base import DYNAMIC, get_int, get_str
from hir.dialect.sharding import Sharding, sharding_of
from hir.passes.streams import _stream_loops as loops
from hir.dialect.irutils import ALLOC, DEALLOC, DIM, alloc, constant_value, func_ops, index_arith, index_const, value_name
from hir.passes.base import ModulePass, PassFailure, register_pass


@register_pass
@dataclass
class ReuseStreamBuffers(ModulePass):
    name = "hir-reuse-stream-buffers"
    description = "Replace intermediates used slice by slice in one stream loop by [num-streams, ...] buffers indexed by i mod num-streams (num-streams: the module's hir.num_streams, else 4)."
    num_streams: Optional[int] = None  # None: the module's hir.num_streams, else 4

    def run(self, module: ir.Module) -> None:
        if self.num_streams is not None and self.num_streams < 1:
            raise PassFailure(f"hir-reuse-stream-buffers: num-streams must be >= 1, got {self.num_streams}")
        try:
            fixed = module_num_streams(module)
        except ValueError as err:
            raise PassFailure(f"hir-reuse-stream-buffers: {err}") from None
        if fixed is not None and self.num_streams not in (None, fixed):
            raise PassFailure(f"hir-reuse-stream-buffers: num-streams = {self.num_streams} contradicts the module's hir.num_streams = {fixed}")
        count = self.num_streams or fixed or DEFAULT_NUM_STREAMS
        for func in func_ops(module):
            for block in _blocks(func):
                _reuse_block(block, count)


def _blocks(op: ir.Operation):
    for region in op.regions:
        for block in region.blocks:
            yield block
            for inner in block.operations:
                if inner.operation.regions and inner.operation.name != ForOp.OPERATION_NAME:
                    yield from _blocks(inner.operation)


def _op(owner) -> ir.Operation:
    return owner.operation if hasattr(owner, "operation") else owner


def _reuse_block(block: ir.Block, n: int) -> None:
    ops = [op.operation for op in block.operations]
    position = {op: i for i, op in enumerate(ops)}
    slots: dict = {}  # work loop (its iv) -> its slot value (%i mod n)
    safe: dict = {}  # work loop (its iv) -> whether its payload allows reuse
    chosen = []  # analyse everything first: a rewrite changes the loop's prologue
    for buffer in [op for op in ops if op.name == ALLOC]:
        found = _candidate(buffer, block, position, n)
        if found is None:
            continue
        loop, axis, views, dims = found
        key = _loop_key(loop)
        if key not in safe:
            safe[key] = _loop_safe(loop)
        if safe[key] and _tokens_waited(views, loop):
            chosen.append((buffer, loop, key, axis, views, dims))
    for buffer, loop, key, axis, views, dims in chosen:
        if key not in slots:
            slots[key] = _slot_value(loop, buffer, n)
        _fold_dims(buffer, dims)
        _rewrite(buffer, axis, views, slots[key], n)


def _loop_key(loop: ir.Operation) -> ir.Value:
    """A stable dict key for a loop (Operation wrappers are not stable keys): its body's
    induction variable."""
    return loop.regions[0].blocks[0].arguments[0]


def _candidate(alloc: ir.Operation, block: ir.Block, position: dict, n: int):
    """(work loop, axis, views) when every use of the buffer is a view at the index of one
    stream work loop of this block (plus deallocs after it and memref.dim), else None."""
    mt = ir.MemRefType(alloc.result.type)
    if mt.rank == 0 or not _identity(mt):
        return None
    loop, axis, views = None, None, []
    deallocs, dims = [], []
    for use in alloc.result.uses:
        user = _op(use.owner)
        if user.name == DEALLOC:
            deallocs.append(user)
            continue
        if user.name == DIM and use.operand_number == 0:
            dims.append(user)
            continue
        if user.name != AliasSelectOp.OPERATION_NAME or use.operand_number != 0:
            return None
        body = user.block
        parent = _op(body.owner) if body.owner is not None else None
        if parent is None or parent.name != ForOp.OPERATION_NAME or parent.block != block:
            return None
        iv = body.arguments[0]
        if user.operands[1] != iv:
            return None
        view_axis = get_int(user, "axis")
        if (loop is not None and parent != loop) or (axis is not None and view_axis != axis):
            return None
        loop, axis = parent, view_axis
        views.append(user)
    if loop is None or any(constant_value(d.operands[1]) is None for d in dims):
        return None
    kind = loops.classify(loop)
    if kind is None or kind[0] != "work":
        return None
    at = _index(position, loop)
    if any(_index(position, d) < at for d in deallocs) or _index(position, alloc) > at:
        return None
    extent = mt.shape[axis]
    if extent != DYNAMIC and extent <= n:
        return None
    trips = _static_trips(loop)
    if trips is not None and trips <= n:
        return None
    sharding = sharding_of(mt)
    if sharding is not None and sharding.axis == axis:
        return None
    return loop, axis, views, dims


def _index(position: dict, op: ir.Operation) -> int:
    """``op``'s position in its block (wrappers of one op need not hash alike: fall back to
    comparing)."""
    found = position.get(op)
    if found is None:
        found = next((i for other, i in position.items() if other == op), -1)
    return found


def _identity(mt: ir.MemRefType) -> bool:
    layout = mt.layout
    return isinstance(layout, ir.AffineMapAttr) and layout.value == ir.AffineMap.get_identity(mt.rank)


def _static_trips(loop: ir.Operation) -> Optional[int]:
    lb, ub, st = (constant_value(v) for v in loop.operands)
    if lb is None or ub is None or st is None or st <= 0:
        return None
    return max(0, -(-(ub - lb) // st))


def _walk(block: ir.Block):
    for op in block.operations:
        op = op.operation
        yield op
        for region in op.regions:
            for inner in region.blocks:
                yield from _walk(inner)


def _loop_safe(loop: ir.Operation) -> bool:
    """The payload runs entirely on the iteration's pool stream: no stream switches of its
    own and no copy-engine (``cuda`` backend) transfers."""
    body = loops.WorkBody.of(loop)
    for top in body.payload:
        for op in _walk_op(top):
            cls = OP_CLASSES.get(op.name)
            if cls is not None and cls.CHOOSES_STREAM:
                return False
            if get_str(op, "backend") == "cuda":
                return False
    return True


def _walk_op(op: ir.Operation):
    yield op
    for region in op.regions:
        for block in region.blocks:
            yield from _walk(block)


def _tokens_waited(views: list, loop: ir.Operation) -> bool:
    """Every work token of an op using one of the views is waited on in the same body."""
    body = loop.regions[0].blocks[0]
    for view in views:
        for use in view.result.uses:
            user = _op(use.owner)
            for result in user.results:
                if not isinstance(result.type, WorkType):
                    continue
                waits = [_op(u.owner) for u in result.uses]
                if not any(w.name == WaitOp.OPERATION_NAME and w.block == body for w in waits):
                    return False
    return True


def _slot_value(loop: ir.Operation, buffer: ir.Operation, n: int) -> ir.Value:
    """``%i mod n`` at the top of the loop body; the prologue's get_stream then takes it."""
    body = loop.regions[0].blocks[0]
    iv = body.arguments[0]
    first = _op(body.operations[0])  # the prologue's get_stream(%i)
    with buffer.location, ir.InsertionPoint(buffer):
        count = index_const(n)
    with loop.location, ir.InsertionPoint(first):
        slot = index_arith(arith.RemUIOp, iv, count, name="slot")
    first.operands[0] = slot
    return slot


def _fold_dims(buffer: ir.Operation, dims: list) -> None:
    """``memref.dim`` of the buffer (e.g. the loop extent) becomes the allocated size."""
    mt = ir.MemRefType(buffer.result.type)
    dynamic_axes = [i for i, d in enumerate(mt.shape) if d == DYNAMIC]
    for dim in dims:
        k = constant_value(dim.operands[1])
        if mt.shape[k] == DYNAMIC:
            size = buffer.operands[dynamic_axes.index(k)]
        else:
            with dim.location, ir.InsertionPoint(dim):
                size = index_const(mt.shape[k])
        dim.result.replace_all_uses_with(size)
        dim.erase()


def _rewrite(buffer: ir.Operation, axis: int, views: list, slot: ir.Value, n: int) -> None:
    mt = ir.MemRefType(buffer.result.type)
    shape = [n] + [d for i, d in enumerate(mt.shape) if i != axis]
    sizes = list(buffer.operands)  # one per dynamic dim, in order
    dynamic_axes = [i for i, d in enumerate(mt.shape) if d == DYNAMIC]
    new_sizes = [size for i, size in zip(dynamic_axes, sizes) if i != axis]
    sharding = sharding_of(mt)
    space = None
    if sharding is not None:
        shard_axis = sharding.axis
        if shard_axis is not None:
            shard_axis = shard_axis + 1 if shard_axis < axis else shard_axis
        space = Sharding(sharding.mesh, shard_axis).attr()
    new_type = ir.MemRefType.get(shape, mt.element_type, memory_space=space, loc=buffer.location)
    with buffer.location, ir.InsertionPoint(buffer):
        new = alloc(new_type, new_sizes, name=value_name(buffer.result))
    for view in views:
        with view.location, ir.InsertionPoint(view):
            replacement = AliasSelectOp.emit(new.result, slot, 0, name=value_name(view.result))
        view.result.replace_all_uses_with(replacement)
        view.erase()
    buffer.result.replace_all_uses_with(new.result)
    buffer.erase()
