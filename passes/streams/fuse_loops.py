"""``hir-fuse-loops``: merge adjacent stream-loop groups (get_current_stream, initial-sync
loop, work loop; see ``_stream_loops.py``) that run over the same extent, as in nvFuser's
stream lowering (seed 001 TwoSetOps). Only allocations, ``memref.dim`` and constants may sit
between two groups; they move above the first group. Any other op between them (a
non-stream op, seed 001 ThreeSetOpsWithDisjointsForLoops) keeps the loops apart, and so does
a dependency the merge would break: a buffer written in one body and accessed in the other
other than through ``alias_select`` slices at the loop index along the same axis.

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

from dataclasses import dataclass, field
from typing import Optional

from torch_mlir import ir

from hir.dialect import AliasChunkOp, AliasSelectOp, ForOp, is_view
from hir.dialect.base import DYNAMIC
from hir.passes.streams import _stream_loops as loops
from hir.dialect.irutils import ALLOC, CONSTANT, DIM, constant_value, defining_op, func_ops, is_memref, written_operands
from hir.passes.base import ModulePass, register_pass

_HOISTABLE = (ALLOC, DIM, CONSTANT)
_VIEW_NAMES = (AliasSelectOp.OPERATION_NAME, AliasChunkOp.OPERATION_NAME)
_UNREAD = object()  # a _Group's accesses before they are first needed


@register_pass
@dataclass
class FuseLoops(ModulePass):
    name = "hir-fuse-loops"
    description = "Merge adjacent stream loops of the same extent when no op or dependency separates them."

    def run(self, module: ir.Module) -> None:
        for func in func_ops(module):
            _fuse_block(func.regions[0].blocks[0])


@dataclass
class _Group:
    """A recognised stream-loop group, its work body read once. Merging later groups into
    it keeps these facts current, so no body is listed twice (listing costs ~0.4 us an op)."""

    group: loops.Group
    body: loops.WorkBody
    adjacent: bool  # nothing between the group's get_current_stream and its sync loop
    pending: list = field(default_factory=list)  # ops seen since the group's work loop
    bounds: object = _UNREAD  # _extent_key of the work loop's bounds and step (read on first need)
    accesses: object = _UNREAD  # _accesses of the body (read on first need)
    views: Optional[dict] = None  # _view_key -> slice taken in the body (read on first merge)

    def loop_bounds(self, memo: dict) -> tuple:
        if self.bounds is _UNREAD:
            self.bounds = tuple(_extent_key(v, memo) for v in self.group.work.operands)
        return self.bounds

    def body_accesses(self) -> Optional[dict]:
        if self.accesses is _UNREAD:
            self.accesses = _accesses(self.body)
        return self.accesses


def _fuse_block(block: ir.Block) -> None:
    ops = [op.operation for op in block.operations]
    position = {op: i for i, op in enumerate(ops)}
    state: Optional[_Group] = None
    extents: dict = {}  # _extent_key memo
    last_sync: Optional[ir.Operation] = None
    last_sync_user: Optional[ir.Value] = None
    for op in ops:
        second = None
        if op.name == ForOp.OPERATION_NAME:
            body = loops.body_ops(op)
            kind = loops.classify(op, body)
            if kind is not None and kind[0] == "work":
                if last_sync is not None and last_sync_user == kind[1]:
                    group = loops.Group(kind[1], last_sync, op)
                    gcs = defining_op(group.user)
                    adjacent = position.get(gcs, -2) + 1 == position[group.sync]
                    second = _Group(group, loops.WorkBody.of(op, body), adjacent)
            elif kind is not None:
                last_sync, last_sync_user = op, kind[1]
        if second is None:
            if state is not None:
                state.pending.append(op)
            continue
        if state is not None and _mergeable(state, second, extents):
            _merge(state, second)
            state.pending = []
            continue
        state = second


def _mergeable(first: _Group, second: _Group, memo: dict) -> bool:
    allowed = {defining_op(second.group.user), second.group.sync}
    if any(op.name not in _HOISTABLE and op not in allowed for op in first.pending):
        return False
    if first.loop_bounds(memo) != second.loop_bounds(memo):
        return False
    return _independent(first.body_accesses(), second.body_accesses())


def _merge(first: _Group, second: _Group) -> None:
    group1, group2 = first.group, second.group
    gcs2 = defining_op(group2.user)
    anchor = defining_op(group1.user) if first.adjacent else group1.sync
    for op in first.pending:
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
            op.erase()
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
    group2.sync.erase()
    group2.work.erase()
    gcs2.erase()


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
