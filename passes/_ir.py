"""IR helpers shared by the hir passes: constants, attribute access, block walking and the
read/write roles of buffer operands. Kept free of pass logic so each pass file stays small.

Everything here works on ``ir.Operation`` (not OpView): passes look at thousands of ops and
``op.opview`` costs a Python-side wrap per call.
"""

from typing import Iterator, Optional

from torch_mlir import ir

from hir.dialect.compute_ops import STREAM_AXIS_ATTR
from hir.dialect.view_ops import ALIASING_OPS
from hir.passes.base import PassFailure

FUNC_ARG_STREAM_ATTRS = ("hir.stream_axis", STREAM_AXIS_ATTR)

COMPUTE_OPS = ("hir.set", "hir.binary", "hir.reduction", "hir.matmul", "hir.linear")
COLLECTIVE_OPS = (
    "hir.allgather",
    "hir.allreduce",
    "hir.reduce_scatter",
    "hir.broadcast",
    "hir.scatter",
    "hir.gather",
    "hir.reduce",
    "hir.send_recv",
)

# Index of the operand each op writes (destination-passing style). Ops not listed are
# treated as writing every buffer operand (func.call, unknown ops): conservative.
_WRITTEN_OPERAND = {
    "hir.set": 1,
    "hir.binary": 2,
    "hir.reduction": 1,
    "hir.matmul": 2,
    "hir.linear": 2,
    "hir.recv": 0,
    **{name: 1 for name in COLLECTIVE_OPS},
}
_READ_ONLY_OPS = ("hir.send", *ALIASING_OPS, "memref.dim", "func.return")


def i64_attr(value: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)


def get_int(op: ir.Operation, name: str) -> Optional[int]:
    """An integer attribute of ``op`` (None when absent)."""
    attrs = op.attributes
    return ir.IntegerAttr(attrs[name]).value if name in attrs else None


def get_str(op: ir.Operation, name: str) -> str:
    return ir.StringAttr(op.attributes[name]).value


def get_i64_array(op: ir.Operation, name: str) -> list[int]:
    return list(ir.DenseI64ArrayAttr(op.attributes[name]))


def stream_axis(op: ir.Operation) -> Optional[int]:
    return get_int(op, STREAM_AXIS_ATTR)


def create(name: str, operands=(), results=(), attributes=None, regions: int = 0) -> ir.Operation:
    """``name`` at the current insertion point and location. Passes build ops this way, not
    through the generated/ext op classes: their constructors bind arguments with
    ``inspect`` (~17 us an op), which dominated hir-lower's time on large modules."""
    return ir.Operation.create(name, results=list(results), operands=list(operands), attributes=attributes, regions=regions)


def index_const(value: int) -> ir.Value:
    """An ``arith.constant <value> : index`` at the current insertion point."""
    index = ir.IndexType.get()
    return create("arith.constant", results=[index], attributes={"value": ir.IntegerAttr.get(index, value)}).result


def dim_or_const(buffer: ir.Value, axis: int, axis_value: Optional[ir.Value] = None) -> ir.Value:
    """The extent of ``buffer`` along ``axis``: a constant when static, else ``memref.dim``
    (``axis_value``: an existing index constant equal to ``axis``)."""
    size = ir.MemRefType(buffer.type).shape[axis]
    if size != ir.ShapedType.get_dynamic_size():
        return index_const(size)
    axis_value = axis_value if axis == 0 and axis_value is not None else index_const(axis)
    return create("memref.dim", [buffer, axis_value], [ir.IndexType.get()]).result


def constant_value(value: ir.Value) -> Optional[int]:
    """The integer of an ``arith.constant`` value, else None."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    op = owner.operation if hasattr(owner, "operation") else owner
    if op.name != "arith.constant":
        return None
    attr = op.attributes["value"]
    return ir.IntegerAttr(attr).value if isinstance(attr, ir.IntegerAttr) else None


def defining_op(value: ir.Value) -> Optional[ir.Operation]:
    """The op defining ``value`` (None for block arguments)."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return owner.operation if hasattr(owner, "operation") else owner


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
        if op.operation.name == "func.func":
            yield op.operation


def written_operands(op: ir.Operation) -> Optional[int]:
    """Index of the operand ``op`` writes; -1 for read-only ops; None when unknown (treat
    every buffer operand as written)."""
    name = op.name
    if name in _WRITTEN_OPERAND:
        return _WRITTEN_OPERAND[name]
    if name in _READ_ONLY_OPS:
        return -1
    return None


def is_memref(value: ir.Value) -> bool:
    return isinstance(value.type, ir.MemRefType)


def fail(op: ir.Operation, message: str) -> PassFailure:
    """A failure at ``op``'s location, naming the op (``raise fail(op, "...")``)."""
    return PassFailure(f"'{op.name}' op {message}", op.location)
