"""``hir-fuse-loops``: a rewrite pattern rooted on ``hir.for``, applied by the greedy driver
top-down without folding: a stream work loop absorbs the adjacent stream-loop groups after
it (get_current_stream, initial-sync loop, work loop; see ``_stream_loops.py``) that run
over the same extent, as in nvFuser's stream lowering (seed 001 TwoSetOps). Only
allocations, ``memref.dim`` and constants may sit between two groups; they move above the
first group (the absorbed loops' bounds, left unused, are erased by the driver). Any other
op between them (a non-stream op, seed 001 ThreeSetOpsWithDisjointsForLoops) keeps the
loops apart, and so does a dependency the merge would break: a buffer written in one body
and accessed in the other other than through ``alias_select`` slices at the loop index
along the same axis.

Before::

    %t1 = memref.alloc(...)
    %u1 = "hir.get_current_stream"() ; "hir.for"(...) {sync with %u1} ; "hir.for"(...) {set %t1[i]}
    %t2 = memref.alloc(...)
    %u2 = "hir.get_current_stream"() ; "hir.for"(...) {sync with %u2} ; "hir.for"(...) {set %t2[i] from %t1[i]}

After::

    %t1 = memref.alloc(...)
    %t2 = memref.alloc(...)
    %u1 = "hir.get_current_stream"() ; "hir.for"(...) {sync with %u1}
    "hir.for"(...) {set %t1[i] ; set %t2[i] from %t1[i]}
"""

from dataclasses import dataclass
from typing import Optional

from torch_mlir import ir, rewrite

from hir.dialect import AliasChunkOp, AliasSelectOp, ForOp, GetCurrentStreamOp, is_view
from hir.dialect.base import DYNAMIC
from hir.dialect.irutils import ALLOC, CONSTANT, DIM, constant_value, defining_op, is_memref, next_op, written_operands
from hir.passes.base import ModulePass, register_pass
from hir.passes.patterns import GuardedRewritePatternSet, exact_greedy_config
from hir.passes.streams import _stream_loops as loops

_HOISTABLE = (ALLOC, DIM, CONSTANT)
_VIEW_NAMES = (AliasSelectOp.OPERATION_NAME, AliasChunkOp.OPERATION_NAME)
_MAY_FOLLOW = (*_HOISTABLE, GetCurrentStreamOp.OPERATION_NAME, ForOp.OPERATION_NAME)  # between twins, or a sync loop


@register_pass
@dataclass
class FuseLoops(ModulePass):
    name = "hir-fuse-loops"
    description = "Merge adjacent stream loops of the same extent when no op or dependency separates them."

    def run(self, module: ir.Module) -> None:
        patterns = GuardedRewritePatternSet(module.context)
        populate_fuse_loops_patterns(patterns)
        # The greedy driver, top-down: a work loop absorbs the twins after it before they
        # are visited themselves, as a forward scan merges (so the same loops fuse); it
        # erases the absorbed loops' bounds, left unused, too.
        patterns.apply_greedily(module, exact_greedy_config())


def populate_fuse_loops_patterns(patterns: GuardedRewritePatternSet) -> None:
    """A pattern rooted on ``hir.for``: a stream work loop absorbs the groups after it
    that are its twins (same extent, only allocations, ``memref.dim`` and constants in
    between, no dependency the merge would break), one after the other."""
    patterns.add(ForOp, _absorb_twins)


def _absorb_twins(root: ir.OpView, rewriter: rewrite.PatternRewriter) -> bool:
    """Merge the twin groups after the work loop ``root`` into it; no match when none."""
    loop = root.operation
    if len(loop.regions[0].blocks[0].operations) < loops.PROLOGUE + loops.EPILOGUE:
        return True  # an initial-sync loop (4 ops) or no stream loop
    following = next_op(loop)
    while following is not None and following.name in _MAY_FOLLOW and following.name != ForOp.OPERATION_NAME:
        following = next_op(following)
    if following is None or following.name != ForOp.OPERATION_NAME:
        return True  # no loop after this one before another op: no twin
    first = _group_of(loop)
    if first is None:
        return True
    memo: dict = {}  # _extent_key of values seen
    merged = False
    while True:
        found = _next_twin(first)
        if found is None:
            break
        second, between = found
        if not _mergeable(first, second, memo):
            break
        _merge(first, second, between, rewriter)
        merged = True
    return not merged


@dataclass
class _Group:
    """A recognised stream-loop group, its work body read once. Merging later groups into
    it keeps these facts current, so no body is listed twice (listing costs ~0.4 us an op)."""

    group: loops.Group
    body: loops.WorkBody
    adjacent: bool  # nothing between the group's get_current_stream and its sync loop
    bounds: Optional[tuple] = None  # _extent_key of the work loop's bounds and step
    accesses: Optional[dict] = None  # _accesses of the body, when analysable
    analysed: bool = False
    views: Optional[dict] = None  # _view_key -> slice taken in the body (read on first merge)

    def loop_bounds(self, memo: dict) -> tuple:
        if self.bounds is None:
            self.bounds = tuple(_extent_key(v, memo) for v in self.group.work.operands)
        return self.bounds

    def body_accesses(self) -> Optional[dict]:
        if not self.analysed:
            self.accesses, self.analysed = _accesses(self.body), True
        return self.accesses


def _group_of(work: ir.Operation) -> Optional[_Group]:
    """The group of a stream work loop: its user stream's get_current_stream and the sync
    loop of that stream that is the last sync loop before it; None for other loops."""
    body = loops.body_ops(work)
    kind = loops.classify(work, body)
    if kind is None or kind[0] != "work":
        return None
    user = kind[1]
    gcs = defining_op(user)
    following = next_op(gcs) if gcs.block == work.block else None
    if following is not None and following != work and _leads_to(following, user, work):
        sync, adjacent = following, True  # the shape stream lowering builds
    else:
        sync, adjacent = _sync_loop(user, work), False
    if sync is None:
        return None
    return _Group(loops.Group(user, sync, work), loops.WorkBody.of(work, body), adjacent)


def _leads_to(sync: ir.Operation, user: ir.Value, work: ir.Operation) -> bool:
    """Whether ``sync`` is the initial-sync loop of ``user`` and the last one before ``work``."""
    if sync.name != ForOp.OPERATION_NAME or loops.classify(sync) != ("sync", user):
        return False
    op = next_op(sync)
    while op is not None and op != work:
        if op.name == ForOp.OPERATION_NAME and (loops.classify(op) or ("",))[0] == "sync":
            return False
        op = next_op(op)
    return op == work


def _sync_loop(user: ir.Value, work: ir.Operation) -> Optional[ir.Operation]:
    """The sync loop of ``user`` that is the last sync loop before ``work`` in its block
    (checked walking forward from it: ``is_before_in_block`` renumbers the whole block
    after each edit, quadratic over a pass)."""
    for use in user.uses:
        sync = use.owner.operation.parent
        if sync is not None and sync != work and sync.block == work.block and _leads_to(sync, user, work):
            return sync
    return None


def _next_twin(first: _Group) -> Optional[tuple[_Group, list]]:
    """The group right after ``first`` and the ops between them, when only allocations,
    ``memref.dim``, constants and the group's own get_current_stream and sync loop sit
    between them."""
    between: list = []
    last_sync = None  # (the last sync loop seen, its user stream)
    op = next_op(first.group.work)
    while op is not None:
        if op.name == ForOp.OPERATION_NAME:
            body = loops.body_ops(op)
            kind = loops.classify(op, body)
            if kind is None:
                return None
            if kind[0] == "sync":
                between.append(op)
                last_sync = (op, kind[1])
            else:
                return _second_group(op, body, kind[1], between, last_sync)
        elif op.name in _MAY_FOLLOW:
            between.append(op)
        else:
            return None
        op = next_op(op)
    return None


def _second_group(work: ir.Operation, body: list, user: ir.Value, between: list, last_sync: Optional[tuple]) -> Optional[tuple[_Group, list]]:
    if last_sync is None or last_sync[1] != user:
        return None
    allowed = {defining_op(user), last_sync[0]}
    if any(op.name not in _HOISTABLE and op not in allowed for op in between):
        return None
    return _Group(loops.Group(user, last_sync[0], work), loops.WorkBody.of(work, body), adjacent=False), between


def _mergeable(first: _Group, second: _Group, memo: dict) -> bool:
    if first.loop_bounds(memo) != second.loop_bounds(memo):
        return False
    return _independent(first.body_accesses(), second.body_accesses())


def _merge(first: _Group, second: _Group, between: list, rewriter: rewrite.PatternRewriter) -> None:
    group1, group2 = first.group, second.group
    gcs2 = defining_op(group2.user)
    anchor = defining_op(group1.user) if first.adjacent else group1.sync
    for op in between:
        if op.name in _HOISTABLE:
            op.move_before(anchor)
    body1, body2 = first.body, second.body
    body2.iv.replace_all_uses_with(body1.iv)
    if first.views is None:
        first.views = {_view_key(op): op.result for op in body1.payload if op.name in _VIEW_NAMES}
    for op in body2.payload:
        key = _view_key(op) if op.name in _VIEW_NAMES else None
        existing = first.views.get(key) if key is not None else None
        if existing is not None:  # the same slice is already taken: reuse it (seed 001 TwoSetOps)
            op.result.replace_all_uses_with(existing)
            rewriter.erase_op(op)
            continue
        op.move_before(body1.epilogue)
        body1.payload.append(op)
        if key is not None:
            first.views[key] = op.result
    # Both bodies were analysed (_mergeable) and had no region: the union is exact.
    for root, uses in second.accesses.items():
        first.accesses.setdefault(root, []).extend(uses)
    body2.stream.replace_all_uses_with(body1.stream)
    group2.user.replace_all_uses_with(group1.user)
    rewriter.erase_op(group2.sync)
    rewriter.erase_op(group2.work)
    rewriter.erase_op(gcs2)


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


def _accesses(body: loops.WorkBody) -> Optional[dict]:
    """Buffer -> list of (slice axis or None for whole-buffer access, written) in a work
    body; None when the body holds a region (not analysed: never merged)."""
    iv = body.iv
    found: dict = {}
    for op in body.payload:
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


def _independent(a: Optional[dict], b: Optional[dict]) -> bool:
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
