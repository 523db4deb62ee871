"""``hir-reuse-stream-buffers{num-streams=N}``: stream buffer reuse (seed 001's "possible
future optimization"). After stream lowering and loop fusion, an
intermediate that is only touched slice by slice inside one stream loop -- allocated
before the loop, read and written through ``hir.alias_select(%t, %i)`` at the loop index,
freed after the loop -- does not need all its slices at once: iteration ``i`` only needs
slice ``i``. The full-size buffer becomes a ``[num_streams, ...]`` buffer (the stream axis
removed, a slot axis in front) indexed by the body's stream slot, and the loop is rebuilt
with ``slots = num_streams``: iteration ``i`` runs on pool stream ``i mod num_streams``
(``hir-expand-stream-loops`` computes it with ``arith.remui``).

Why it is correct: iterations ``i`` and ``i + num_streams`` share a slot, and they also run
on the same pool stream (``(i mod n) mod pool_size`` is equal for both, whatever the run's
pool size), so the later iteration's work is queued after the earlier one's on that stream
and cannot overwrite the slot while the earlier iteration still reads it. Choosing the
stream by slot (rather than relying on ``i mod pool_size``) keeps that true when the
interpreter's pool is larger than ``num-streams``; such a run then uses only
``num-streams`` pool streams in this loop.

Why a function pass (each function's stream loops in program order), not a pattern on the
loop: whether a buffer qualifies depends on every use of it in the function (none but the
loop's views at its index, ``memref.dim`` and a deallocation after the loop) and on the
waits of the tokens of the loop's ops on it, and one rewrite changes ops outside the loop
(the allocation before it, its ``memref.dim`` ops, the deallocation after it) besides
rebuilding the loop with its slots.

Before::

    %t = memref.alloc(%m) : memref<?x8xf32>
    %out = memref.alloc(%m) : memref<?x8xf32>
    %user = "hir.get_current_stream"() : () -> !hir.stream
    "hir.stream_for"(%c0, %m, %c1, %user) ({
    ^bb0(%i: index, %slot: index):
      %a = "hir.alias_select"(%in, %i) {axis = 0 : i64}
          : (memref<?x32xf32>, index) -> memref<32xf32, strided<[1], offset: ?>>
      %ti = "hir.alias_select"(%t, %i) {axis = 0 : i64}
          : (memref<?x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
      "hir.matmul"(%a, %w, %ti) : (...) -> ()
      %oi = "hir.alias_select"(%out, %i) {axis = 0 : i64}
          : (memref<?x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
      "hir.binary"(%ti, %ti, %oi) {kind = "add"} : (...) -> ()
      "hir.yield"() : () -> ()
    }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (index, index, index, !hir.stream) -> ()
    memref.dealloc %t : memref<?x8xf32>

After::

    %c4 = arith.constant 4 : index
    %t = memref.alloc() : memref<4x8xf32>
    %out = memref.alloc(%m) : memref<?x8xf32>
    %user = "hir.get_current_stream"() : () -> !hir.stream
    "hir.stream_for"(%c0, %m, %c1, %user, %c4) ({
    ^bb0(%i: index, %slot: index):
      %a = "hir.alias_select"(%in, %i) {axis = 0 : i64} : ...
      %ti = "hir.alias_select"(%t, %slot) {axis = 0 : i64}
          : (memref<4x8xf32>, index) -> memref<8xf32, strided<[1], offset: ?>>
      ...
    }) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (index, index, index, !hir.stream, index) -> ()
    memref.dealloc %t : memref<4x8xf32>

Left alone (conservative): buffers with any other use (returned, used outside the loop, a
whole-buffer operand, a view at another index or along two axes, used in two loops), loops
whose body switches streams itself (``hir.set_current_stream`` / ``hir.get_stream``), loops
with slots already, loops where a work token of an op touching the buffer
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
from functools import cmp_to_key

from torch_mlir import ir

from hir.dialect import (
    DEFAULT_NUM_STREAMS,
    OP_CLASSES,
    AliasSelectOp,
    ForOp,
    StreamForOp,
    WaitOp,
    WorkType,
    module_num_streams,
)
from hir.dialect.base import DYNAMIC, get_str, required_int
from hir.dialect.irutils import ALLOC, DEALLOC, DIM, FUNC, alloc, constant_value, defining_op, index_const, value_name
from hir.dialect.sharding import Sharding, sharding_of
from hir.dialect.views import is_identity_layout
from hir.passes.base import FunctionPass, PassFailure, register_pass
from hir.passes.streams._stream_loops import body_ops


@register_pass
@dataclass
class ReuseStreamBuffers(FunctionPass):
    name = "hir-reuse-stream-buffers"
    description = (
        "Replace intermediates used slice by slice in one stream loop by [num-streams, ...] "
        "buffers indexed by i mod num-streams (num-streams: the module's hir.num_streams, else 4)."
    )
    num_streams: int | None = None  # None: the module's hir.num_streams, else 4

    def run(self, module: ir.Module) -> None:
        if self.num_streams is not None and self.num_streams < 1:
            raise PassFailure(f"hir-reuse-stream-buffers: num-streams must be >= 1, got {self.num_streams}")
        try:
            fixed = module_num_streams(module)
        except ValueError as err:
            raise PassFailure(f"hir-reuse-stream-buffers: {err}") from None
        if fixed is not None and self.num_streams not in (None, fixed):
            raise PassFailure(
                f"hir-reuse-stream-buffers: num-streams = {self.num_streams} "
                f"contradicts the module's hir.num_streams = {fixed}"
            )
        self._slots = self.num_streams or fixed or DEFAULT_NUM_STREAMS
        super().run(module)

    def run_on_function(self, fn: ir.Operation) -> None:
        """Every buffer a stream loop of ``fn`` uses only slice by slice becomes a
        ``[num_streams, ...]`` slot buffer indexed by ``%i mod num_streams`` (the loop is
        rebuilt with ``slots = num_streams``); the loops are listed first, then rewritten in
        program order."""
        loops = [op for block in fn.regions[0].blocks for op in _walk(block) if op.name == StreamForOp.OPERATION_NAME]
        for loop in loops:
            _reuse(loop, self._slots)


def _op(owner) -> ir.Operation:
    return owner.operation if hasattr(owner, "operation") else owner


def _reuse(loop: ir.Operation, n: int) -> bool:
    """Rewrite the candidate buffers of the stream loop ``loop`` (all analysed first); whether
    any was."""
    if StreamForOp.slots_of(loop) is not None or _inside_a_loop(loop):
        return False  # slots chosen already; a nested loop's buffers are per iteration already
    body = body_ops(loop)
    if not _loop_safe(body):
        return False
    chosen = []
    for buffer in _sliced_buffers(loop, body):
        found = _candidate(buffer, loop, n)
        if found is not None and _tokens_waited(found[1], loop):
            chosen.append((buffer, *found))
    if not chosen:
        return False
    slot = _with_slots(loop, chosen[0][0], n)
    for buffer, axis, views, dims in chosen:
        _fold_dims(buffer, dims)
        _rewrite(buffer, axis, views, slot, n)
    return True


def _inside_a_loop(op: ir.Operation) -> bool:
    """Whether an ``hir.for`` encloses ``op`` (its buffers are per iteration already)."""
    parent = op.parent
    while parent is not None and parent.name != FUNC:
        if parent.name == ForOp.OPERATION_NAME:
            return True
        parent = parent.parent
    return False


def _sliced_buffers(loop: ir.Operation, body: list) -> list:
    """The allocations of ``loop``'s block that its body views, in program order."""
    found = {}
    for op in body:
        if op.name != AliasSelectOp.OPERATION_NAME:
            continue
        owner = defining_op(op.operands[0])
        if owner is not None and owner.name == ALLOC and owner.block == loop.block:
            found.setdefault(owner.result, owner)
    return sorted(found.values(), key=cmp_to_key(lambda a, b: -1 if a.is_before_in_block(b) else 1))


def _candidate(alloc: ir.Operation, loop: ir.Operation, n: int):
    """(axis, views, dims) when every use of the buffer is a view at the index of ``loop``
    (plus deallocs after it and memref.dim), else None."""
    mt = ir.MemRefType(alloc.result.type)
    if mt.rank == 0 or not is_identity_layout(
        mt
    ):  # (an allocation in the loop's block that the loop uses is before it)
        return None
    iv = loop.regions[0].blocks[0].arguments[0]
    axis, views, dims = None, [], []
    for use in alloc.result.uses:
        user = _op(use.owner)
        if user.name == DEALLOC:
            if user.block != loop.block or user.is_before_in_block(loop):
                return None
            continue
        if user.name == DIM and use.operand_number == 0:
            dims.append(user)
            continue
        if user.name != AliasSelectOp.OPERATION_NAME or use.operand_number != 0 or user.operands[1] != iv:
            return None
        view_axis = required_int(user, "axis")
        if axis is not None and view_axis != axis:
            return None
        axis = view_axis
        views.append(user)
    if any(constant_value(d.operands[1]) is None for d in dims):
        return None
    assert axis is not None, "the buffer was found through one of its views"
    extent = mt.shape[axis]
    if extent != DYNAMIC and extent <= n:
        return None
    trips = _static_trips(loop)
    if trips is not None and trips <= n:
        return None
    sharding = sharding_of(mt)
    if sharding is not None and sharding.axis == axis:
        return None
    return axis, views, dims


def _static_trips(loop: ir.Operation) -> int | None:
    lb, ub, st = (constant_value(v) for v in list(loop.operands)[:3])
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


def _loop_safe(body: list) -> bool:
    """The body runs entirely on the iteration's pool stream: no stream switches of its own
    and no copy-engine (``cuda`` backend) transfers."""
    for top in body:
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


def _with_slots(loop: ir.Operation, buffer: ir.Operation, n: int) -> ir.Value:
    """Rebuild the stream loop with ``slots = n`` (the constant before the first rewritten
    buffer) in its place, its body moved over; the new loop's stream slot (``%i mod n``)."""
    with buffer.location, ir.InsertionPoint(buffer):
        count = index_const(n)
    lower, upper, step, user = list(loop.operands)
    with ir.InsertionPoint(loop), loop.location:
        new_loop, iv, slot, end = StreamForOp.emit(lower, upper, step, user, count)
    block = loop.regions[0].blocks[0]
    block.arguments[0].replace_all_uses_with(iv)
    block.arguments[1].replace_all_uses_with(slot)
    for op in body_ops(loop):
        op.move_before(end)
    loop.erase()
    return slot


def _fold_dims(buffer: ir.Operation, dims: list) -> None:
    """``memref.dim`` of the buffer (e.g. the loop extent) becomes the allocated size."""
    mt = ir.MemRefType(buffer.result.type)
    dynamic_axes = [i for i, d in enumerate(mt.shape) if d == DYNAMIC]
    for dim in dims:
        k = constant_value(dim.operands[1])
        assert k is not None, "_candidate took constant dims only"
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
