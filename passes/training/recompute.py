"""``hir-recompute-layers``: activation checkpointing per layer. Each layer's forward is
computed again right before its backward first reads it, and the backward reads the
recomputed buffers, so the forward's own buffers die with the forward (after
``hir-insert-deallocations``): between a layer's forward and its backward only what the
layer reads from outside (its input, the parameters) stays live, as
``torch.utils.checkpoint`` keeps only a checkpointed block's inputs.

What a layer is comes from the program: ``hir.forward`` (unit) marks every op of the
forward (the loss included), and ``hir.layer = "NAME"`` the ops of one repeated block's
forward (``hir.train_step(..., recompute=True)`` sets both from the model's module
structure, :mod:`hir.frontend.layers`). An instance of a layer is its marked ops within one
forward run (each micro-batch's forward is another); an allocation belongs to the layer of
the first op that writes it. Its recompute point is the first op after it, outside the
forward, that reads one of its buffers (or a view of one) other than its outputs (those
the rest of the forward reads, such as the next layer's input, which stay live as that
layer's input does): the clones of the layer's ops go
right before it, in order, with fresh allocations, marked ``hir.recomputed = "NAME"``, and
every op from there on reads the clones (clones whose work nothing reads are dropped:
the layer's output, read in the backward as the next layer's input). The pass drops the ``hir.forward`` and
``hir.layer`` marks it consumed.

The clones compute what the originals computed only if what they read is unchanged, so a
layer is refused (an error at its op) when one of its ops writes a buffer it did not
allocate, when something outside it writes one of its inputs before the recompute point,
when it draws random numbers, or when it calls anything but a kernel segment.

Why a function pass, not patterns: what it decides are facts of the whole body in block
order -- each layer's forward runs (instances), each instance's recompute point (the first
read of its buffers outside the forward, anywhere after it), that nothing outside the layer
writes its inputs in between, and which clones no kept op reads (a fixed point over the
clones) -- and one instance's edit reaches from its forward (marks dropped) to its backward
(every later op rewired to the clones).

Before (``%h`` is the layer's activation, kept from the forward to the backward)::

    %h = memref.alloc() {hir.forward, hir.layer = "layers.0"} : memref<4x8xf32>
    "hir.matmul"(%x, %w, %h) {hir.forward, hir.layer = "layers.0"} : (...) -> ()
    %y = memref.alloc() {hir.forward} : memref<4x8xf32>
    "hir.binary"(%h, %h, %y) {hir.forward, kind = "mul"} : (...) -> ()
    ...
    "hir.binary"(%dy, %h, %dh) {kind = "mul"} : (...) -> ()          // the backward

After::

    %h = memref.alloc() : memref<4x8xf32>
    "hir.matmul"(%x, %w, %h) : (...) -> ()
    %y = memref.alloc() : memref<4x8xf32>
    "hir.binary"(%h, %h, %y) {kind = "mul"} : (...) -> ()
    ...
    %h2 = memref.alloc() {hir.recomputed = "layers.0"} : memref<4x8xf32>
    "hir.matmul"(%x, %w, %h2) {hir.recomputed = "layers.0"} : (...) -> ()
    "hir.binary"(%dy, %h2, %dh) {kind = "mul"} : (...) -> ()
"""

from collections.abc import Iterator
from dataclasses import dataclass, field

from torch_mlir import ir
from torch_mlir.dialects import func

from hir.dialect import KERNEL_ATTR, OP_CLASSES, is_view
from hir.dialect.irutils import ALLOC, ancestor_in, uses_through_views
from hir.passes.base import FunctionPass, fail, register_pass
from hir.passes.memory.hoist_parameter_work import kernel_writes

FORWARD_ATTR = "hir.forward"
LAYER_ATTR = "hir.layer"
RECOMPUTED_ATTR = "hir.recomputed"
_CALL = func.CallOp.OPERATION_NAME
# torch ops that draw random numbers (a clone would draw others), by name fragment
_RANDOM = ("rand", "bernoulli", "dropout", "normal", "uniform", "multinomial", "exponential", "geometric", "cauchy")


@dataclass
class _Instance:
    """One run of a layer's forward: its ops in block order."""

    name: str
    ops: list = field(default_factory=list)


@register_pass
@dataclass
class RecomputeLayers(FunctionPass):
    name = "hir-recompute-layers"
    description = (
        "Activation checkpointing: each layer's forward (ops marked hir.layer) is computed again right before its "
        "backward first reads it, and the backward reads the recomputed buffers."
    )

    def run(self, module: ir.Module) -> None:
        self._functions = {
            ir.StringAttr(op.attributes["sym_name"]).value: op.operation
            for op in module.body.operations
            if op.operation.name == func.FuncOp.OPERATION_NAME
        }
        self._kernel_writes: dict = {}  # callee name -> the arguments it writes
        super().run(module)

    def run_on_function(self, fn: ir.Operation) -> None:
        if KERNEL_ATTR in fn.attributes or not fn.regions[0].blocks:
            return
        block = fn.regions[0].blocks[0]
        for instance in _instances(list(block.operations), self._writes):
            self._recompute(block, instance)
        for op in block.operations:
            for attr in (FORWARD_ATTR, LAYER_ATTR):
                if attr in op.attributes:
                    del op.attributes[attr]

    def _callee(self, op: ir.Operation) -> ir.Operation | None:
        callee = self._functions.get(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
        return callee if callee is not None and KERNEL_ATTR in callee.attributes else None

    def _writes(self, op: ir.Operation) -> frozenset | None:
        """The operand indices ``op`` writes; None when unknown (a call of a plain function,
        another dialect's op)."""
        if op.name == _CALL:
            callee = self._callee(op)
            if callee is None:
                return None
            name = ir.StringAttr(callee.attributes["sym_name"]).value
            if name not in self._kernel_writes:
                self._kernel_writes[name] = kernel_writes(callee)
            return self._kernel_writes[name]
        cls = OP_CLASSES.get(op.name)
        if cls is not None:
            return frozenset(cls.destinations(op))
        return frozenset() if op.name == ALLOC or is_view(op) or not op.operands else None

    def _recompute(self, block: ir.Block, instance: _Instance) -> None:
        members = instance.ops
        made = [r for op in members for r in op.results]
        position = {op: i for i, op in enumerate(o.operation for o in block.operations)}
        first, last = position[members[0]], position[members[-1]]
        ops = [o.operation for o in block.operations]
        for op in members:
            self._check_member(op, instance.name, made)
        member_set = set(members)
        outputs = [
            v
            for v in made
            if any(
                FORWARD_ATTR in u.owner.attributes and ancestor_in(u.owner.operation, block) not in member_set
                for u in uses_through_views(v)
            )
        ]
        point = _recompute_point(ops, last, _with_views([v for v in made if v not in outputs]))
        if point is None:
            return  # nothing of the layer is read outside the forward
        _check_inputs(ops, position, members, made, first, point, self._writes, instance.name)
        mapping: dict = {}
        clones = []
        at = ir.InsertionPoint(ops[point])
        for op in members:
            clone = op.clone(ip=at).operation
            clones.append(clone)
            _remap(clone, mapping)
            for old, new in zip(op.results, clone.results):
                mapping[old] = new
            for attr in (FORWARD_ATTR, LAYER_ATTR):
                if attr in clone.attributes:
                    del clone.attributes[attr]
            clone.attributes[RECOMPUTED_ATTR] = ir.StringAttr.get(instance.name)
        for op in ops[point:]:
            _remap(op, mapping)
        for op in reversed(_unread(clones, self._writes)):
            op.erase()

    def _check_member(self, op: ir.Operation, name: str, made: list) -> None:
        written = self._writes(op)
        if written is None:
            raise fail(
                op,
                f"in layer '{name}' cannot be recomputed: what it writes "
                "is not known (only kernel segments, hir ops and views)",
            )
        for i in written:
            root = _root(op.operands[i])
            if root not in made:
                raise fail(
                    op,
                    f"in layer '{name}' writes operand {i}, a buffer the layer "
                    "did not allocate: recomputing it would write it again",
                )
        callee = self._callee(op) if op.name == _CALL else None
        if callee is not None:
            drawn = next((n for n in _torch_ops(callee) if any(r in n for r in _RANDOM)), None)
            if drawn is not None:
                raise fail(op, f"in layer '{name}' draws random numbers ({drawn}): a recomputation would draw others")


def _instances(ops: list, writes) -> list:
    """The layer instances of a block's ops: the ``hir.layer`` ops of each forward run (a run
    ends at an op outside the forward that touches a buffer); each allocation moved to the
    instance of the first op that writes it."""
    found, current = [], {}
    owner: dict = {}  # instance of each op
    for op in (o.operation for o in ops):
        if FORWARD_ATTR not in op.attributes:
            if any(isinstance(v.type, ir.MemRefType) for v in op.operands):
                found += current.values()
                current = {}
            continue
        if LAYER_ATTR in op.attributes and op.name != ALLOC:
            name = ir.StringAttr(op.attributes[LAYER_ATTR]).value
            instance = current.setdefault(name, _Instance(name))
            instance.ops.append(op)
            owner[op] = instance
    found += current.values()
    order = {op: i for i, op in enumerate(o.operation for o in ops)}
    for op in (o.operation for o in ops):  # an allocation: in the instance of its first writer
        if op.name == ALLOC:
            writer = _first_writer(op.results[0], writes, order)
            if writer is not None and writer in owner:
                owner[writer].ops.append(op)
    for instance in found:
        instance.ops.sort(key=order.__getitem__)
    return found


def _first_writer(buffer: ir.OpResult, writes, order: dict) -> ir.Operation | None:
    block = buffer.owner.operation.block
    tops = [
        ancestor_in(use.owner.operation, block)
        for use in uses_through_views(buffer)
        if (w := writes(use.owner.operation)) is None or use.operand_number in w
    ]
    return min((t for t in tops if t is not None), key=order.__getitem__, default=None)


def _root(value: ir.Value) -> ir.Value:
    """The buffer ``value`` views (itself when it is no view)."""
    while not isinstance(value.owner, ir.Block) and is_view(value.owner):
        value = value.owner.operands[0]
    return value


def _with_views(values: list) -> set:
    """``values`` and every view of them (transitively)."""
    seen, todo = set(values), list(values)
    while todo:
        for use in todo.pop().uses:
            if is_view(use.owner):
                for r in use.owner.results:
                    if r not in seen:
                        seen.add(r)
                        todo.append(r)
    return seen


def _nested(op: ir.Operation) -> Iterator[ir.Operation]:
    yield op
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield from _nested(inner.operation)


def _recompute_point(ops: list, last: int, layer_buffers: set) -> int | None:
    """The index of the first op after ``last`` outside the forward that reads one of
    ``layer_buffers``."""
    for i in range(last + 1, len(ops)):
        op = ops[i]
        if FORWARD_ATTR in op.attributes:
            continue
        if any(v in layer_buffers for inner in _nested(op) for v in inner.operands):
            return i
    return None


def _check_inputs(
    ops: list, position: dict, members: list, made: list, first: int, point: int, writes, name: str
) -> None:
    """No op outside the layer writes what the layer reads between its forward and its
    recompute point."""
    inside = set(made)
    inputs = {
        _root(v)
        for op in members
        for inner in _nested(op)
        for v in inner.operands
        if isinstance(v.type, ir.MemRefType) and v not in inside
    }
    member_set = set(members)
    block = members[0].block
    for buffer in inputs:
        for use in uses_through_views(buffer):
            top = ancestor_in(use.owner.operation, block)
            if top is None or top in member_set or not first < position[top] < point:
                continue
            w = writes(use.owner.operation)
            if w is None or use.operand_number in w:
                raise fail(
                    top,
                    f"writes a buffer layer '{name}' reads, between its forward "
                    "and its recomputation: the layer cannot be recomputed",
                )


def _unread(clones: list, writes) -> list:
    """The clones whose work nothing reads (the layer's output, which the backward reads as
    the next layer's input, computed again for nothing), in block order: an op that writes
    only cloned buffers no kept op touches, a view or an allocation no kept op uses."""
    made = {op.results[0] for op in clones if op.name == ALLOC}
    dead: set = set()

    def unused(value: ir.Value, writer: ir.Operation | None = None) -> bool:
        return all(
            use.owner.operation in dead or (writer is not None and use.owner.operation == writer) for use in value.uses
        )

    changed = True
    while changed:
        changed = False
        for op in reversed(clones):
            if op in dead:
                continue
            if op.name == ALLOC or is_view(op):
                gone = all(unused(r) for r in op.results)
            else:
                written = writes(op)
                roots = [_root(op.operands[i]) for i in written or ()]
                gone = (
                    bool(roots)
                    and all(unused(r) for r in op.results)
                    and all(
                        r in made
                        and all(u.owner.operation in dead or u.owner.operation == op for u in uses_through_views(r))
                        for r in roots
                    )
                )
            if gone:
                dead.add(op)
                changed = True
    return [op for op in clones if op in dead]


def _remap(op: ir.Operation, mapping: dict) -> None:
    """Operands of ``op`` (and of the ops nested in it) found in ``mapping`` replaced."""
    for inner in _nested(op):
        for i, v in enumerate(inner.operands):
            new = mapping.get(v)
            if new is not None:
                inner.operands[i] = new


def _torch_ops(fn: ir.Operation) -> Iterator[str]:
    """The names of the torch ops a kernel segment runs (a ``torch.operator`` by the op it
    names)."""
    for inner in _nested(fn):
        if inner.name == "torch.operator" and "name" in inner.attributes:
            yield ir.StringAttr(inner.attributes["name"]).value
        elif inner.name.startswith("torch.aten."):
            yield inner.name
