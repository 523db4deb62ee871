"""The tensor computations of a partitioned function (``hir-convert-shard-to-hir``):

* ``linalg.matmul`` / ``batch_matmul`` into a zero fill -> ``hir.matmul``; elementwise named
  ``linalg.add/sub/mul/div/max/min`` on equally placed operands -> ``hir.binary``;
* every other op with tensor results (``linalg.generic``, partial-sum matmuls, transposes,
  reshapes, ...) -> a kernel segment (``kernels.py``), its results placed by ``inference.py``;
* ``tensor.empty``, fills of free values and constants have no data of their own: they are
  cloned into the kernels that read them (and a scalar constant into the host program);
  other scalar ops are host arithmetic, cloned where the host program reads them;
* ``tensor.extract`` of a replicated tensor: a host ``memref.load``.
"""

from torch_mlir import ir
from torch_mlir.dialects import arith, memref, tensor

from hir.dialect import BinaryOp, MatmulOp
from hir.dialect.linalg_facts import BINARY_NAMED, FILL_NAMED, MATMUL_NAMED
from hir.passes.base import fail
from hir.passes.shard.placement import placement_text
from hir.passes.shard.registry import converts, converts_any
from hir.passes.shard.state import ConversionState, is_tensor


@converts_any
def outline_or_host(s: ConversionState, op: ir.Operation) -> None:
    """A kernel segment (`func.func {hir.kernel}`, called with the buffers) for an op with tensor results; host
    arithmetic (cloned where read) for an op on scalars."""
    if any(is_tensor(r) for r in op.results):
        outline(s, op)
    elif len(op.regions) == 0 and not any(s.is_data(v) for v in list(op.operands) + list(op.results)):
        for result in op.results:  # host scalar arithmetic (e.g. on a device index)
            s.host[result] = op
    else:
        raise fail(op, "cannot be converted to hir (no tensor result to outline and not host arithmetic)")


def outline(s: ConversionState, op: ir.Operation) -> None:
    """``op`` as a kernel segment, its results placed by the forward rules."""
    s.kernel(op, list(op.results), s.result_placement(op))


@converts(arith.ConstantOp)
def constant(s: ConversionState, op: ir.Operation) -> None:
    """No op: cloned into the kernels that read it (a scalar also into the host program)."""
    s.free[op.results[0]] = op
    if not is_tensor(op.results[0]):  # host scalars may also be read by the host program
        s.host[op.results[0]] = op


@converts(tensor.EmptyOp)
def empty(s: ConversionState, op: ir.Operation) -> None:
    """No op: cloned into the kernels that read it."""
    s.free[op.results[0]] = op


@converts(FILL_NAMED)
def fill(s: ConversionState, op: ir.Operation) -> None:
    """No op when it fills a free tensor with a constant (cloned into the kernels that read it), else a kernel
    segment."""
    if not all(v in s.free for v in op.operands):
        outline(s, op)
        return
    s.free[op.results[0]] = op
    value = s.free[op.operands[0]].attributes["value"]
    if isinstance(value, (ir.FloatAttr, ir.IntegerAttr)) and value.value == 0:
        s.zero.add(op.results[0])


@converts(*MATMUL_NAMED)
def matmul(s: ConversionState, op: ir.Operation) -> None:
    """`hir.matmul` when it writes a zero fill with even splits and is no partial product, else a kernel segment."""
    a, b, init = op.operands
    placement = s.result_placement(op)
    if init not in s.zero or placement.partial or any(p is not None and p.offsets for p in s.operand_placements(op)):
        s.kernel(op, list(op.results), placement)  # hir.matmul takes even splits
        return
    operands = [s.buffer(a, op), s.buffer(b, op)]
    s.create(MatmulOp.OPERATION_NAME, operands=operands + [s.alloc(op.results[0], placement)])


@converts(*BINARY_NAMED)
def binary(s: ConversionState, op: ir.Operation) -> None:
    """`hir.binary` of its kind on equally placed, evenly split operands of one type, else a kernel segment."""
    lhs, rhs, _ = op.operands
    placement = s.placement(lhs)
    if (
        placement is None
        or placement != s.placement(rhs)
        or placement.partial
        or placement.offsets
        or s.tensor_type(lhs) != s.tensor_type(rhs)
    ):
        outline(s, op)
        return
    kind = ir.StringAttr.get(BINARY_NAMED[op.name])
    operands = [s.buffer(lhs, op), s.buffer(rhs, op)]
    s.create(
        BinaryOp.OPERATION_NAME, operands=operands + [s.alloc(op.results[0], placement)], attributes={"kind": kind}
    )


@converts(tensor.ExtractOp)
def extract(s: ConversionState, op: ir.Operation) -> None:
    """A host `memref.load` of an element of a replicated tensor (every device holds the same data, so the local index
    is the global one)."""
    source = op.operands[0]
    placement = s.placement(source)
    if placement != s.grid.replicated:
        raise fail(
            op,
            f"reads an element of {source.get_name()}, which is "
            f"{placement_text(placement)}; hir reads elements of replicated tensors only",
        )
    indices = [s.scalar(v, op) for v in op.operands[1:]]
    load = s.create(
        memref.LoadOp.OPERATION_NAME, operands=[s.buffer(source, op)] + indices, results=[op.results[0].type]
    )
    s.scalars[op.results[0]] = load.result
