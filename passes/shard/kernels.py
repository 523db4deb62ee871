"""Outlining tensor ops of a partitioned program into hir kernel segments (used by
``hir-convert-shard-to-hir``'s handlers: :func:`hir.passes.shard.state.outline` is how every
tensor op without an hir op of its own converts).

A kernel segment is a private ``func.func {hir.kernel}`` taking the program's buffers
(global-shaped, ``#hir.shard``-placed) and writing its results into destination buffers.
Inside, each buffer is viewed as the device's local buffer with
``builtin.unrealized_conversion_cast`` (the upstream op for a type-system boundary: hir's
global placed type -> the local type the partitioned ops were written for; no data moves)
and bridged to a tensor with ``bufferization.to_tensor`` / back with
``bufferization.materialize_in_destination``; a partial sum's leading device axis (local
extent 1) is collapsed / expanded around the cloned ops:

    func.func private @mlp_kernel_0(%h: memref<8x64xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>,
                                    %out: memref<8x64xf32, #hir.shard<array<i64: 0, 1, 2, 3>, 1 : i64>>)
        attributes {hir.kernel} {
      %0 = builtin.unrealized_conversion_cast %h : memref<8x64xf32, #hir.shard<...>> to memref<8x16xf32>
      %1 = bufferization.to_tensor %0 restrict : memref<8x16xf32> to tensor<8x16xf32>
      %2 = tensor.empty() : tensor<8x16xf32>                 // cloned free producers
      %3 = linalg.generic ... ins(%1) outs(%2) ...            // the outlined op
      %4 = builtin.unrealized_conversion_cast %out : ... to memref<8x16xf32>
      bufferization.materialize_in_destination %3 in restrict writable %4 : (...) -> ()
      return
    }
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from torch_mlir import ir
from torch_mlir.dialects import bufferization, func, tensor

from hir.dialect import KERNEL_ATTR
from hir.dialect.sharding import Sharding
from hir.passes.shard.placement import local_shape

ExtentOf = Callable[[int], tuple | None]  # result dim -> (buffer, dim) of the same global extent, or None

CAST = "builtin.unrealized_conversion_cast"


@dataclass
class Port:
    """A kernel argument: the program value it stands for and the value passed for it."""

    key: ir.Value  # the value of the partitioned program the cloned ops read
    outer: ir.Value  # what the call passes: a buffer or a host scalar of the converted function
    tensor_type: ir.Type | None = None  # local tensor type (None: a scalar passed as is)
    placement: Sharding | None = None


def external_values(root: ir.Operation) -> list[ir.Value]:
    """Values ``root`` (with its regions) uses but does not define, in first-use order."""
    walked: list[ir.Operation] = []
    inner: set = set()

    def visit(op: ir.Operation) -> ir.WalkResult:
        walked.append(op)
        inner.update(op.results)
        for region in op.regions:
            for block in region.blocks:
                inner.update(block.arguments)
        return ir.WalkResult.ADVANCE

    root.walk(visit, ir.WalkOrder.PRE_ORDER)
    out: list[ir.Value] = []
    for op in walked:
        for value in op.operands:
            if value not in inner and value not in out:
                out.append(value)
    return out


def closure(
    root: ir.Operation, free_producer: Callable[[ir.Value], ir.Operation | None]
) -> tuple[list[ir.Operation], list[ir.Value]]:
    """The free producers to clone before ``root`` (in order) and the remaining inputs."""
    clones: list[ir.Operation] = []
    cloned: set = set()  # first results of the producers already listed
    inputs: list[ir.Value] = []

    def need(op: ir.Operation) -> None:
        for value in external_values(op):
            producer = free_producer(value)
            if producer is None:
                if value not in inputs:
                    inputs.append(value)
            elif producer.results[0] not in cloned:
                need(producer)
                cloned.add(producer.results[0])
                clones.append(producer)

    need(root)
    return clones, inputs


def _local_view(buffer: ir.Value, tensor_type: ir.Type, placement: Sharding) -> ir.Value:
    shaped = ir.RankedTensorType(tensor_type)
    local = ir.MemRefType.get(local_shape(tensor_type, placement), shaped.element_type)
    return ir.Operation.create(CAST, results=[local], operands=[buffer]).result


def _device_axis_groups(rank: int) -> ir.ArrayAttr:
    """Reassociation folding a leading unit device axis into dim 0: [[0, 1], [2], ...]; a
    0-d value's [1] folds to [] (no groups)."""
    i64 = ir.IntegerType.get_signless(64)
    groups = [[0, 1]] + [[d + 1] for d in range(1, rank)] if rank else []
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in g]) for g in groups])


def build_kernel(
    name: str,
    before: ir.Operation,
    ports: list[Port],
    clones: list[ir.Operation],
    outputs: Sequence[tuple[ir.Value, ir.Type, Sharding]],
    loc: ir.Location,
) -> None:
    """Create kernel ``name`` before ``before``: its arguments are ``ports`` then one
    destination buffer of type ``outputs[i][1]`` per result value ``outputs[i][0]``; its
    body clones ``clones`` (free producers, then the outlined op)."""
    types = [p.outer.type for p in ports] + [t for _, t, _ in outputs]
    with loc, ir.InsertionPoint(before):
        fn = func.FuncOp(name, ir.FunctionType.get(types, []), visibility="private")
    fn.attributes[KERNEL_ATTR] = ir.UnitAttr.get()
    block = fn.add_entry_block()
    args = list(block.arguments)
    mapping: dict = {}
    with loc, ir.InsertionPoint(block):
        for port, arg in zip(ports, args):
            if port.tensor_type is None:
                mapping[port.key] = arg
                continue
            assert port.placement is not None, "a tensor port is placed"
            view = _local_view(arg, port.tensor_type, port.placement)
            shaped = ir.RankedTensorType(port.tensor_type)
            local = ir.RankedTensorType.get(local_shape(port.tensor_type, port.placement), shaped.element_type)
            value = bufferization.ToTensorOp(local, view, restrict=True).result
            if port.placement.partial:
                value = tensor.CollapseShapeOp(port.tensor_type, value, _device_axis_groups(shaped.rank)).result
            mapping[port.key] = value
        for op in clones:
            copy = op.clone(ir.InsertionPoint(block))
            _remap(copy, mapping)
            for old, new in zip(op.results, copy.results):
                mapping[old] = new
        for (result, _buffer_type, placement), arg in zip(outputs, args[len(ports) :]):
            value = mapping[result]
            if placement.partial:
                shaped = ir.RankedTensorType(result.type)
                expanded = ir.RankedTensorType.get(local_shape(result.type, placement), shaped.element_type)
                value = tensor.ExpandShapeOp(
                    expanded, value, _device_axis_groups(shaped.rank), [], local_shape(result.type, placement)
                ).result
            bufferization.MaterializeInDestinationOp(
                None, value, _local_view(arg, result.type, placement), restrict=True, writable=True
            )
        func.ReturnOp([])


def _remap(op: ir.Operation, mapping: dict) -> None:
    def visit(nested: ir.Operation) -> ir.WalkResult:
        for index, value in enumerate(nested.operands):
            if value in mapping:
                nested.operands[index] = mapping[value]
        return ir.WalkResult.ADVANCE

    op.walk(visit, ir.WalkOrder.PRE_ORDER)
