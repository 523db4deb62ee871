"""Outlining tensor ops of a partitioned program into hir kernel segments (used by
``hir-convert-shard-to-hir``'s handlers: :func:`outline` is how every tensor op without an
hir op of its own converts).

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

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional

from torch_mlir import ir
from torch_mlir.dialects import bufferization, func, tensor

from hir.dialect import KERNEL_ATTR
from hir.dialect.sharding import Sharding
from hir.passes.base import fail
from hir.passes.shard.inference import maps_of
from hir.passes.shard.placement import local_shape

if TYPE_CHECKING:
    from hir.passes.shard.state import ConversionState

ExtentOf = Callable[[int], Optional[tuple]]  # result dim -> (buffer, dim) of the same global extent, or None

CAST = "builtin.unrealized_conversion_cast"


@dataclass
class Port:
    """A kernel argument: the program value it stands for and the value passed for it."""

    key: ir.Value  # the value of the partitioned program the cloned ops read
    outer: ir.Value  # what the call passes: a buffer or a host scalar of the converted function
    tensor_type: Optional[ir.Type] = None  # local tensor type (None: a scalar passed as is)
    placement: Optional[Sharding] = None


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


def closure(root: ir.Operation, free_producer: Callable[[ir.Value], Optional[ir.Operation]]) -> tuple[list[ir.Operation], list[ir.Value]]:
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
    outputs: list[tuple[ir.Value, ir.Type, Sharding]],
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
        for (result, buffer_type, placement), arg in zip(outputs, args[len(ports) :]):
            value = mapping[result]
            if placement.partial:
                shaped = ir.RankedTensorType(result.type)
                expanded = ir.RankedTensorType.get(local_shape(result.type, placement), shaped.element_type)
                value = tensor.ExpandShapeOp(expanded, value, _device_axis_groups(shaped.rank), [], local_shape(result.type, placement)).result
            bufferization.MaterializeInDestinationOp(None, value, _local_view(arg, result.type, placement), restrict=True, writable=True)
        func.ReturnOp([])


def _remap(op: ir.Operation, mapping: dict) -> None:
    def visit(nested: ir.Operation) -> ir.WalkResult:
        for index, value in enumerate(nested.operands):
            if value in mapping:
                nested.operands[index] = mapping[value]
        return ir.WalkResult.ADVANCE

    op.walk(visit, ir.WalkOrder.PRE_ORDER)


def outline(s: "ConversionState", root: ir.Operation, results: list[ir.Value], extent_of: Optional[ExtentOf] = None) -> None:
    """Outline ``root`` (with the free producers it reads) into a kernel segment called in
    its place, writing a buffer per value of ``results`` (placed as ``s.placements`` says);
    the dynamic extents of its first result from ``extent_of`` when given, else from the
    indexing maps (:func:`_kernel_extent`)."""
    clones, inputs = closure(root, s.free.get)
    ports = []
    for value in inputs:
        if s.is_data(value):
            ports.append(Port(value, s.buffer(value, root), s.tensor_type(value), s.placement(value)))
        elif isinstance(value.type, (ir.IndexType, ir.IntegerType, ir.FloatType)):
            ports.append(Port(value, s.scalar(value, root)))
        else:
            raise fail(root, f"reads {value.get_name()} of type {value.type}, which cannot be passed to a kernel segment")
    placements = [s.placements[r] for r in results]
    outputs = [(r, s.buffer_type(r.type, p), p) for r, p in zip(results, placements)]
    name = f"{s.name}_kernel_{s.kernels}"
    s.kernels += 1
    build_kernel(name, s.fn, ports, clones + [root], outputs, root.location)
    extents = [extent_of] if extent_of is not None else [_kernel_extent(s, root, i) if i < len(root.results) and r == root.results[i] else None for i, r in enumerate(results)]
    outs = [s.alloc(r, p, e) for r, p, e in zip(results, placements, extents)]
    s.create(func.CallOp.OPERATION_NAME, operands=[p.outer for p in ports] + outs, attributes={"callee": ir.FlatSymbolRefAttr.get(name)})


def _kernel_extent(s: "ConversionState", root: ir.Operation, result: int) -> ExtentOf:
    """For a kernel's result ``result``: dim d -> (buffer, dim) of an operand that the
    op's indexing maps read along the same loop, placed alike on it (same global extent)."""
    maps = maps_of(root)
    placement = s.placements[root.results[result]]

    def extent_of(d: int) -> Optional[tuple]:
        if maps is None or placement.partial:
            return None
        dims = maps[0]
        operands = list(root.operands) if len(dims) == len(root.operands) else [v for v in root.operands if s.is_data(v)]
        loop = dims[len(dims) - len(root.results) + result][d]
        for value, operand_dims in zip(operands, dims):
            if value not in s.buffers or loop is None or loop not in operand_dims:
                continue
            q = operand_dims.index(loop)
            have = s.placement(value)
            if have is not None and not have.partial and all((have.splits[k] == q) == (placement.splits[k] == d) for k in range(s.grid.rank)):
                return s.buffers[value], q
        return None

    return extent_of
