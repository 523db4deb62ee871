"""IR helpers shared by the passes, the interpreter and the frontend: upstream op builders,
block walking, and the op facts the dialect declares (destinations, axis maps) read for
``ir.Operation``s. Below every user (``hir.dialect``), free of pass logic.

Everything here works on ``ir.Operation`` (not OpView): passes look at thousands of ops and
``op.opview`` costs a Python-side wrap per call. hir ops are built with their classes'
``emit``; upstream ops with the builders below (``ir.Operation.create``, not the generated
constructors, which bind arguments with ``inspect``, ~17 us an op).
"""

from collections.abc import Iterator, Sequence
from functools import cmp_to_key

from torch_mlir import ir
from torch_mlir.dialects import arith, bufferization, func, memref

from hir.dialect import OP_CLASSES, is_view
from hir.dialect.base import get_int, i64_attr, loc_name, name_loc
from hir.dialect.compute import STREAM_AXIS_ATTR

FUNC_ARG_STREAM_ATTRS = ("hir.stream_axis", STREAM_AXIS_ATTR)
# Upstream ops whose written buffer operands are known (``()``: reads only); a kernel
# segment reads its arguments with to_tensor and writes them with materialize_in_destination.
_UPSTREAM_WRITES = {
    memref.DimOp.OPERATION_NAME: (),
    func.ReturnOp.OPERATION_NAME: (),
    bufferization.ToTensorOp.OPERATION_NAME: (),
    bufferization.MaterializeInDestinationOp.OPERATION_NAME: (1,),
}
ALLOC = memref.AllocOp.OPERATION_NAME
DEALLOC = memref.DeallocOp.OPERATION_NAME
DIM = memref.DimOp.OPERATION_NAME
CONSTANT = arith.ConstantOp.OPERATION_NAME
FUNC = func.FuncOp.OPERATION_NAME


def stream_axis(op: ir.Operation) -> int | None:
    return get_int(op, STREAM_AXIS_ATTR)


# ----- upstream ops -----------------------------------------------------------------------


# ``name``: the result prints as ``%name`` with hir-opt --print-value-names (a name
# location; see hir.dialect.base.name_loc). Without one MLIR picks (%c0, %dim, %alloc).


def index_const(value: int, name: str | None = None) -> ir.Value:
    """An ``arith.constant <value> : index`` at the current insertion point."""
    index = ir.IndexType.get()
    return ir.Operation.create(
        CONSTANT, results=[index], attributes={"value": ir.IntegerAttr.get(index, value)}, loc=name_loc(name)
    ).result


def index_arith(op_class: type, lhs: ir.Value, rhs: ir.Value, name: str | None = None) -> ir.Value:
    """An index ``arith`` binary op (``arith.AddIOp``, ``arith.RemUIOp``, ...)."""
    return ir.Operation.create(
        op_class.OPERATION_NAME, results=[ir.IndexType.get()], operands=[lhs, rhs], loc=name_loc(name)
    ).result


def dim(buffer: ir.Value, axis: ir.Value, name: str | None = None) -> ir.Value:
    return ir.Operation.create(DIM, results=[ir.IndexType.get()], operands=[buffer, axis], loc=name_loc(name)).result


def alloc(
    memref_type: ir.Type, sizes: Sequence[ir.Value] = (), attributes: dict | None = None, name: str | None = None
) -> ir.Operation:
    """``memref.alloc`` with one size per dynamic extent, plus ``attributes``."""
    attrs = {"operandSegmentSizes": ir.DenseI32ArrayAttr.get([len(sizes), 0]), **(attributes or {})}
    return ir.Operation.create(ALLOC, results=[memref_type], operands=list(sizes), attributes=attrs, loc=name_loc(name))


def value_name(value: ir.Value) -> str | None:
    """The name a value prints with under --print-value-names, where it is known without
    printing: its name location, or ``argN`` for a function argument."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        name = loc_name(ir.BlockArgument(value).location)
        if name is None and owner.owner.operation.name == FUNC:
            name = f"arg{ir.BlockArgument(value).arg_number}"
        return name
    return loc_name(owner.location)


def slice_name(source: ir.Value) -> str:
    """``%a_slice`` for a view of ``%a``; ``%slice`` when ``source`` has no known name."""
    name = value_name(source)
    return f"{name}_slice" if name else "slice"


def dim_or_const(buffer: ir.Value, axis: int, axis_value: ir.Value | None = None) -> ir.Value:
    """The extent of ``buffer`` along ``axis``: a constant when static, else ``memref.dim``
    (``axis_value``: an existing index constant equal to ``axis``)."""
    size = ir.MemRefType(buffer.type).shape[axis]
    if size != ir.ShapedType.get_dynamic_size():
        return index_const(size)
    axis_value = axis_value if axis == 0 and axis_value is not None else index_const(axis)
    return dim(buffer, axis_value)


def constant_value(value: ir.Value) -> int | None:
    """The integer of an ``arith.constant`` value, else None."""
    op = defining_op(value)
    if op is None or op.name != CONSTANT:
        return None
    attr = op.attributes["value"]
    return ir.IntegerAttr(attr).value if isinstance(attr, ir.IntegerAttr) else None


# ----- walking ----------------------------------------------------------------------------


def defining_op(value: ir.Value) -> ir.Operation | None:
    """The op defining ``value`` (None for block arguments)."""
    owner = value.owner
    return None if isinstance(owner, ir.Block) else owner.operation  # OpView and Operation alike


def next_op(op: ir.Operation) -> ir.Operation | None:
    """The op after ``op`` in its block, None at its end (the bindings have no sibling
    accessor; an insertion point after ``op`` names it)."""
    following = ir.InsertionPoint.after(op).ref_operation
    return None if following is None else following.operation


def ancestor_in(op: ir.Operation, block: ir.Block) -> ir.Operation | None:
    """``op`` or its ancestor whose block is ``block`` (None: not nested in ``block``)."""
    current: ir.Operation | None = op
    while current is not None:
        if current.block == block:
            return current
        parent = current.parent
        current = parent.operation if parent is not None else None
    return None


def users_in_block(value: ir.Value, block: ir.Block) -> list[ir.Operation]:
    """The ops of ``block`` using ``value`` (each once), in program order: found from the
    value's uses, so a pattern asks about the ops it matches without listing the block."""
    users = {use.owner.operation: None for use in value.uses}
    here = [op for op in users if op.block == block]
    return sorted(here, key=cmp_to_key(lambda a, b: -1 if a.is_before_in_block(b) else 1))


def runs_after(user: ir.Operation, op: ir.Operation) -> bool:
    """Whether ``user`` is, or sits nested in, an op after ``op`` in ``op``'s block."""
    at = ancestor_in(user, op.block)
    return at is not None and at != op and op.is_before_in_block(at)


def blocks_postorder(op: ir.Operation) -> Iterator[ir.Block]:
    """Every block nested in ``op``, inner blocks before the block holding them, so a pass
    that rewrites a block never revisits ops it moved into a new region."""
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                if inner.operation.regions:
                    yield from blocks_postorder(inner.operation)
            yield block


def func_ops(module: ir.Module) -> Iterator[ir.Operation]:
    for op in module.body.operations:
        if op.operation.name == FUNC:
            yield op.operation


def is_memref(value: ir.Value) -> bool:
    return isinstance(value.type, ir.MemRefType)


# ----- op facts ---------------------------------------------------------------------------


def is_a(op: ir.Operation, base: type) -> bool:
    """Whether ``op`` is an hir op of class ``base`` (or a subclass)."""
    cls = OP_CLASSES.get(op.name)
    return cls is not None and issubclass(cls, base)


def streamable(op: ir.Operation) -> bool:
    """Whether hir-stream-lowering can run ``op`` per slice of its ``stream_axis``."""
    cls = OP_CLASSES.get(op.name)
    return cls is not None and cls.STREAMABLE


def is_p2p_form(op: ir.Operation) -> bool:
    """Whether ``op`` streams along its peer axis (``PEER_AXIS_ATTR``): nvFuser's P2P form,
    one team member's slice per stream index (hir-p2p-pipeline's input)."""
    cls = OP_CLASSES.get(op.name)
    k = stream_axis(op)
    return cls is not None and k is not None and bool(cls.PEER_AXIS_ATTR) and k == get_int(op, cls.PEER_AXIS_ATTR)


def op_classes(base: type) -> list[type]:
    """The hir op classes deriving from ``base``: one pattern root per op kind."""
    return [cls for cls in OP_CLASSES.values() if issubclass(cls, base)]


def streamable_names() -> list[str]:
    return [name for name, cls in OP_CLASSES.items() if cls.STREAMABLE]


def written_operands(op: ir.Operation) -> tuple | None:
    """The operand indices ``op`` writes (() for read-only ops); None when unknown (treat
    every buffer operand as written: func.call, other dialects' ops)."""
    cls = OP_CLASSES.get(op.name)
    if cls is not None:
        return cls.destinations(op)
    return _UPSTREAM_WRITES.get(op.name)


def uses_through_views(value: ir.Value) -> Iterator[ir.OpOperand]:
    """The uses of ``value`` and of every view of it (transitively), the views' own uses by
    the views excluded: what reads or writes the buffer's memory."""
    todo = [value]
    while todo:
        for use in todo.pop().uses:
            user = use.owner.operation
            if is_view(user):
                todo.append(user.results[0])
            else:
                yield use


def writes_operand(use: ir.OpOperand) -> bool:
    """Whether ``use``'s op writes that operand (an op whose writes are unknown, a call or a
    return, counts as writing: the buffer leaves what a pass can see)."""
    written = written_operands(use.owner.operation)
    return written is None or use.operand_number in written


def written_through(value: ir.Value) -> bool:
    """Whether an op writes ``value`` or a view of it (deallocation aside)."""
    return any(writes_operand(use) for use in uses_through_views(value) if use.owner.operation.name != DEALLOC)


def output_index(op: ir.Operation) -> int:
    """The operand index of the buffer ``op`` writes (compute ops and collectives)."""
    return OP_CLASSES[op.name].DESTINATIONS[0]


def operand_axis(op: ir.Operation, index: int, k: int) -> int | None:
    """The axis of operand ``index`` that output axis ``k`` reads (the op class's axis map)."""
    cls = OP_CLASSES.get(op.name)
    return cls.operand_axis(op, index, k) if cls is not None else None


def is_broadcast_axis(op: ir.Operation, index: int, axis: int, k: int) -> bool:
    """True when operand ``index`` has a static extent 1 at ``axis`` while the output's
    axis ``k`` is not 1: the operand is broadcast there (every output index reads index 0)."""
    cls = OP_CLASSES.get(op.name)
    if cls is None or not cls.broadcast_operands():
        return False
    size = ir.MemRefType(op.operands[index].type).shape[axis]
    out_size = ir.MemRefType(op.operands[output_index(op)].type).shape[k]
    return size == 1 and out_size != 1


def renumber_axes(op: ir.Operation, removed: int | None) -> None:
    """Attributes naming input axes (the op class's ``INPUT_AXIS_ATTRS``) shift down past
    the sliced-away axis ``removed``."""
    if removed is None:
        return
    for name in OP_CLASSES[op.name].INPUT_AXIS_ATTRS:
        if name not in op.attributes:
            continue
        attr = op.attributes[name]
        if isinstance(attr, ir.IntegerAttr):
            value = attr.value
            op.attributes[name] = i64_attr(value - (1 if value > removed else 0))
        else:
            axes = list(ir.DenseI64ArrayAttr(attr))
            op.attributes[name] = ir.DenseI64ArrayAttr.get([a - (1 if a > removed else 0) for a in axes])
