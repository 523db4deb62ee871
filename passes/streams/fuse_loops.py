"""``hir-fuse-loops``: two adjacent stream loops (``hir.stream_for``) of the same extent
become one, as in nvFuser's stream lowering (seed 001 TwoSetOps). One pattern rooted on
``hir.stream_for``, applied by the greedy driver top-down without folding: a loop and the
stream loop after it fuse when only allocations, ``memref.dim``, constants and the second
loop's ``hir.get_current_stream`` sit between them (the allocations, dims and constants move
above the first loop, the second user stream is the first's) and no dependency separates
them: a buffer written in one body and accessed in the other other than through slices at
the loop index along the same axis (``alias_select``, or ``alias_chunk`` of the same count).
The fused loop is the second one, its body after the first's and its bounds the first's, so
the driver visits it next and it fuses with the loop after it, as a forward scan would; the
first loop goes, and so do the second's bounds, left unused. Any other op between two loops
(a non-stream op, seed 001 ThreeSetOpsWithDisjointsForLoops) keeps them apart.

The pattern changes only what it matched (the two loops and the ops between them) and
erases through the rewriter; moving the first body into the second loop, the ops between
above the first and setting the second's bounds are the edits a C++ pattern makes with
``inlineBlockBefore``, ``moveOpBefore`` and ``modifyOpInPlace``, which the Python
``PatternRewriter`` does not offer, so they are made on the ops directly (the driver needs
no word of them: the second loop is next on its top-down worklist anyway).

Before::

    %t1 = memref.alloc(...)
    %u1 = "hir.get_current_stream"()
    "hir.stream_for"(%c0, %n, %c1, %u1) ({ ^bb0(%i: index, %slot: index): set %t1[i] })
    %t2 = memref.alloc(...)
    %u2 = "hir.get_current_stream"()
    "hir.stream_for"(%c0, %n2, %c1, %u2) ({ ^bb0(%j: index, %slot2: index): set %t2[j] from %t1[j] })

After::

    %t1 = memref.alloc(...)
    %t2 = memref.alloc(...)
    %u1 = "hir.get_current_stream"()
    "hir.stream_for"(%c0, %n, %c1, %u1) ({ ^bb0(%j: index, %slot2: index): set %t1[j] ; set %t2[j] from %t1[j] })
"""

from dataclasses import dataclass

from torch_mlir import ir, rewrite

from hir.dialect import AliasChunkOp, AliasSelectOp, GetCurrentStreamOp, StreamForOp, is_view
from hir.dialect.base import DYNAMIC
from hir.dialect.irutils import ALLOC, CONSTANT, DIM, constant_value, defining_op, is_memref, next_op, written_operands
from hir.passes.base import ModulePass, register_pass
from hir.passes.patterns import GuardedRewritePatternSet, exact_greedy_config
from hir.passes.streams._stream_loops import body_ops, terminator

_HOISTABLE = (ALLOC, DIM, CONSTANT)
_VIEW_NAMES = (AliasSelectOp.OPERATION_NAME, AliasChunkOp.OPERATION_NAME)


@register_pass
@dataclass
class FuseLoops(ModulePass):
    name = "hir-fuse-loops"
    description = "Merge adjacent stream loops of the same extent when no op or dependency separates them."

    def run(self, module: ir.Module) -> None:
        patterns = GuardedRewritePatternSet(module.context)
        populate_fuse_loops_patterns(patterns)
        # The greedy driver, top-down: the fused loop (the second) is visited after the
        # pair's rewrite, so it fuses with the loop after it as a forward scan would; the
        # driver erases the second loop's bounds, left unused.
        patterns.apply_greedily(module, exact_greedy_config())


def populate_fuse_loops_patterns(patterns: GuardedRewritePatternSet) -> None:
    """A pattern rooted on ``hir.stream_for``: it fuses with the stream loop after it when
    they are twins (same extent, only allocations, ``memref.dim``, constants and the second
    loop's user stream in between, no dependency the fusion would break)."""
    patterns.add(StreamForOp, fuse_with_next)


def fuse_with_next(root: ir.OpView, rewriter: rewrite.PatternRewriter) -> bool:
    """Fuse the stream loop ``root`` with its twin after it; no match when there is none."""
    first = root.operation
    found = _next_twin(first)
    if found is None:
        return True
    second, between = found
    first_body, second_body = body_ops(first), body_ops(second)
    if not _same_extent(first, second) or not _independent(
        _accesses(first, first_body), _accesses(second, second_body)
    ):
        return True
    _fuse(first, second, first_body, second_body, between, rewriter)
    return False


def _next_twin(first: ir.Operation) -> tuple[ir.Operation, list] | None:
    """The stream loop right after ``first`` and the ops between them, when those are
    allocations, ``memref.dim``, constants and the second loop's ``hir.get_current_stream``."""
    between: list = []
    op = next_op(first)
    while op is not None and op.name != StreamForOp.OPERATION_NAME:
        if op.name not in _HOISTABLE and op.name != GetCurrentStreamOp.OPERATION_NAME:
            return None
        between.append(op)
        op = next_op(op)
    if op is None:
        return None
    user = op.operands[3]
    streams = [o for o in between if o.name == GetCurrentStreamOp.OPERATION_NAME]
    if user != first.operands[3] and streams != [defining_op(user)]:
        return None  # another user stream, or one saved elsewhere
    if user == first.operands[3] and streams:
        return None
    return op, between


def _same_extent(first: ir.Operation, second: ir.Operation) -> bool:
    """Equal bounds, step and stream slots (``memref.dim`` of an allocation by its size)."""
    memo: dict = {}
    keys = [tuple(_extent_key(v, memo) for v in list(loop.operands)[:3]) for loop in (first, second)]
    return keys[0] == keys[1] and StreamForOp.slots_of(first) == StreamForOp.slots_of(second)


def _fuse(
    first: ir.Operation,
    second: ir.Operation,
    first_body: list,
    second_body: list,
    between: list,
    rewriter: rewrite.PatternRewriter,
) -> None:
    """``second`` takes ``first``'s body before its own, ``first``'s bounds, user stream
    and location, and ``first``'s place; a slice both bodies take is taken once."""
    user, user2 = first.operands[3], second.operands[3]
    saved = defining_op(user)
    anchor = saved if saved is not None and saved.block == first.block and next_op(saved) == first else first
    for op in between:
        if op.name in _HOISTABLE:
            op.move_before(anchor)
    block, block2 = first.regions[0].blocks[0], second.regions[0].blocks[0]
    for arg, arg2 in zip(block.arguments, block2.arguments):
        arg.replace_all_uses_with(arg2)
    views = {_view_key(op): op.result for op in first_body if op.name in _VIEW_NAMES}
    head = second_body[0] if second_body else terminator(second)
    for op in first_body:
        op.move_before(head)
    for op in second_body:
        existing = views.get(_view_key(op)) if op.name in _VIEW_NAMES else None
        if existing is not None:  # the same slice is already taken: reuse it (seed 001 TwoSetOps)
            op.result.replace_all_uses_with(existing)
            rewriter.erase_op(op)
    for index in range(4):
        second.operands[index] = first.operands[index]
    second.location = first.location
    if user2 != user:
        user2.replace_all_uses_with(user)
        rewriter.erase_op(defining_op(user2))
    rewriter.erase_op(first)


def _view_key(op: ir.Operation):
    return (op.name, op.operands[0], op.operands[1], ir.IntegerAttr(op.attributes["axis"]).value, op.result.type)


def _extent_key(value: ir.Value, memo: dict):
    """A key equal for loop bounds known to be equal: constants by value, ``memref.dim`` of
    an allocation by the size it was allocated with (``memo``: keys found so far)."""
    key = memo.get(value)
    if key is None:
        key = memo[value] = _find_extent_key(value, memo)
    return key


def _find_extent_key(value: ir.Value, memo: dict):
    op = defining_op(value)
    if op is None:
        return ("value", value)
    if op.name == CONSTANT:
        constant = constant_value(value)
        return ("value", value) if constant is None else ("const", constant)
    if op.name == DIM:
        source, axis = op.operands[0], constant_value(op.operands[1])
        if axis is not None:
            shape = ir.MemRefType(source.type).shape
            if shape[axis] != DYNAMIC:
                return ("const", shape[axis])
            alloc = defining_op(source)
            if alloc is not None and alloc.name == ALLOC:
                dynamic_before = sum(1 for d in shape[:axis] if d == DYNAMIC)
                return _extent_key(alloc.operands[dynamic_before], memo)
            return ("dim", source, axis)
    return ("value", value)


def _accesses(loop: ir.Operation, body: list) -> dict | None:
    """Buffer -> list of (slice axis or None for whole-buffer access, written) in a stream
    loop's ``body``; None when the body holds a region (not analysed: never fused)."""
    iv = loop.regions[0].blocks[0].arguments[0]
    found: dict = {}
    for op in body:
        if op.regions:
            return None
        if is_view(op):
            continue  # accounted for where its view is used
        written = written_operands(op)
        for index, operand in enumerate(op.operands):
            if is_memref(operand):
                root, axis = _slice_of(operand, iv)
                found.setdefault(root, []).append((axis, written is None or index in written))
    return found


def _slice_of(view: ir.Value, iv: ir.Value) -> tuple:
    """(the buffer under ``view``'s chain of views, the axis when ``view`` is exactly its
    alias_select at ``iv`` (axis and chunk count for an alias_chunk at ``iv``), else None: a
    whole-buffer access as far as fusion can tell)."""
    chain = []
    root, owner = view, defining_op(view)
    while owner is not None and is_view(owner):
        chain.append(owner)
        root = owner.operands[0]
        owner = defining_op(root)
    if len(chain) == 1 and chain[0].name == AliasSelectOp.OPERATION_NAME and chain[0].operands[1] == iv:
        return root, chain[0].attributes["axis"]
    if len(chain) == 1 and chain[0].name == AliasChunkOp.OPERATION_NAME and chain[0].operands[1] == iv:
        return root, (chain[0].attributes["axis"], chain[0].attributes["chunks"])  # hir-stream-lowering{chunks=}
    return root, None


def _independent(a: dict | None, b: dict | None) -> bool:
    """Iteration i of the second body may run right after iteration i of the first (``a``,
    ``b``: their :func:`_accesses`): every buffer written by either and touched by both is
    only touched at slice i of one axis."""
    if a is None or b is None:
        return False
    for root in a.keys() & b.keys():
        uses = a[root] + b[root]
        if not any(written for _, written in uses):
            continue
        axes = {axis for axis, _ in uses}
        if None in axes or len(axes) != 1:
            return False
    return True
