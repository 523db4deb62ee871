"""What a device computes from its own position on the mesh, built by the
:class:`~hir.frontend.partition.Partitioner` as small kernel segments (functions of the
partitioner, like :mod:`hir.frontend.contractions`):

* **local slices**: a replicated value read split (``rowwise_split_input``'s input, a
  ``sequence_parallel`` module's tokens) needs no communication: each device keeps its part,
  as DTensor's ``Replicate() -> Shard(d)`` is a local chunk. (A resharding ``hir.set`` would
  be nvFuser's scatter from the first device.)
* **partial lookups**: a segment op whose strategy answers a partial sum (a vocabulary-split
  embedding: the masked lookup of ``embedding_rowwise``) runs its ``partial_form`` on the
  device's parts into a ``[D, ...]`` buffer split on axis 0 over the mesh axis, summed over
  axis 0 into the result (an allreduce, or a reduce-scatter, after
  hir-convert-to-communication), as the contractions' partial sums are.

The device's position comes from ``hir.device_index`` inside the kernel (each rank's plan
folds it, with the index arithmetic of its coordinates, into constants), handed to the torch
ops as a ``!torch.int`` through ``builtin.unrealized_conversion_cast``.
"""

from math import prod

from torch_mlir import ir
from torch_mlir.dialects import arith, builtin
from torch_mlir.dialects import torch as torch_dialect

from hir.dialect import DeviceIndexOp, ReductionOp, Sharding
from hir.dialect.base import DYNAMIC
from hir.dialect.irutils import index_arith, index_const
from hir.frontend.torch_ir import buffer_type, ranked_info, shape_of, torch_int, torch_op, vtensor

_TORCH_INT = "!torch.int"


def coordinate(grid, k: int) -> ir.Value:
    """This device's coordinate along mesh axis ``k`` (an index, at the current insertion
    point): its position in the row-major mesh, divided by the axes after ``k``, modulo ``k``'s extent."""
    position = DeviceIndexOp.emit(list(grid.devices))
    stride = prod(grid.shape[k + 1 :])
    if stride > 1:
        position = index_arith(arith.DivUIOp, position, index_const(stride))
    if k > 0:
        position = index_arith(arith.RemUIOp, position, index_const(grid.shape[k]))
    return position


def as_torch_int(index: ir.Value) -> ir.Value:
    """An index as the ``!torch.int`` torch ops take."""
    return builtin.UnrealizedConversionCastOp([ir.Type.parse(_TORCH_INT)], [index]).results[0]


def part_index(grid, mesh_axes: list[int]) -> ir.Value:
    """Which part of a buffer dim split by ``mesh_axes`` (row-major over them) this device holds."""
    first, *rest = sorted(mesh_axes)
    index = coordinate(grid, first)
    for k in rest:
        scaled = index_arith(arith.MulIOp, index, index_const(grid.shape[k]))
        index = index_arith(arith.AddIOp, scaled, coordinate(grid, k))
    return index


def is_local_slice(have: Sharding | None, want: Sharding | None) -> bool:
    """Whether ``want`` only splits dims that ``have`` holds whole (replicated -> split on
    some mesh axes, equal on the others): each device slices its part."""
    if have is None or want is None or have.mesh != want.mesh or have.uneven or want.uneven:
        return False
    held = {s for s in have.splits if s is not None}
    changed = [(a, b) for a, b in zip(have.splits, want.splits) if a != b]
    return bool(changed) and all(a is None and b not in held for a, b in changed)


def local_slice(part, value: ir.Value, have: Sharding, want: Sharding, at: ir.Operation) -> ir.Value:
    """A buffer of ``value`` placed as ``want`` sliced on each device from its copy placed
    as ``have`` (see :func:`is_local_slice`), by a kernel segment of ``aten.narrow`` ops."""
    grid = part.plan.grid
    shape, dtype = ranked_info(value)
    source = part.buffer_of(value, at)
    out = part.new_buffer(buffer_type(value.type, want.attr()), at.location, value)
    dims = sorted({b for a, b in zip(have.splits, want.splits) if a != b and b is not None})
    local_in, local_out = have.local_shape(shape), want.local_shape(shape)

    def body(values: list, ip: ir.InsertionPoint) -> list:
        with ip, at.location:
            x, current = values[0], list(local_in)
            for d in dims:
                axes = [k for k, (a, b) in enumerate(zip(have.splits, want.splits)) if a != b and b == d]
                length = _extent(x, d, current[d], want.parts(d) // have.parts(d) if have.parts(d) else want.parts(d))
                start = torch_op(
                    torch_dialect.AtenMulIntOp.OPERATION_NAME,
                    [as_torch_int(part_index(grid, axes)), length],
                    ir.Type.parse(_TORCH_INT),
                )
                current[d] = local_out[d]
                x = torch_op(
                    torch_dialect.AtenNarrowOp.OPERATION_NAME, [x, torch_int(d), start, length], vtensor(current, dtype)
                )
            return [x]

    part.kernel([source], [out], [vtensor(local_in, dtype)], body, at.location)
    return out


def _extent(x: ir.Value, d: int, held: int, parts: int) -> ir.Value:
    """The extent of one of ``parts`` parts of dim ``d`` of ``x`` (held: its local extent;
    a dynamic one is computed from ``x``'s size)."""
    if held != DYNAMIC:
        return torch_int(held // parts)
    size = torch_op(torch_dialect.AtenSizeIntOp.OPERATION_NAME, [x, torch_int(d)], ir.Type.parse(_TORCH_INT))
    return torch_op(torch_dialect.AtenFloordivIntOp.OPERATION_NAME, [size, torch_int(parts)], ir.Type.parse(_TORCH_INT))


def partial_segment(part, step) -> None:
    """The buffers of a :class:`~hir.frontend.placer.PartialStep`'s results (``part.buffers``): its op's
    ``partial_form`` on each device's parts, each partial sum into a ``[D, ...]`` buffer (split
    on axis 0 over the step's mesh axis) summed over axis 0 (see the module docstring), each
    other result into its own buffer, placed as the plan says."""
    op, k, grid = step.op, step.mesh_axis, part.plan.grid
    loc = op.location
    in_bufs = [part.read(v, r, op) for v, r in zip(step.inputs, step.reads)]
    out_bufs, types, sums = [], [], []
    unsqueezed: list[ir.Type | None] = []  # per result: a partial sum's [1, ...] local type
    for result, others, summed in zip(op.results, step.others, step.summed):
        if not summed:
            out_bufs.append(part.alloc(result, loc))
            types.append(part.local_type(result, part.plan.of(result)))
            unsqueezed.append(None)
            continue
        shape, dtype = ranked_info(result)
        lead = tuple(0 if j == k else (None if s is None else s + 1) for j, s in enumerate(others))
        out_bufs.append(
            part.new_buffer(
                buffer_type(vtensor([grid.shape[k]] + shape, dtype), grid.sharding(lead).attr()), loc, result
            )
        )
        local = grid.sharding(others).local_shape(shape)
        types.append(vtensor(local, dtype))
        unsqueezed.append(vtensor([1] + local, dtype))
        sums.append((out_bufs[-1], result))
    split_input = next(i for i, r in enumerate(step.reads) if r is not None and r.splits[k] is not None)
    split_dim = step.reads[split_input].splits[k]
    held = step.reads[split_input].local_shape(shape_of(step.inputs[split_input]))[split_dim]

    def body(values: list, ip: ir.InsertionPoint) -> list:
        mapping = dict(zip(step.inputs, values))
        operands = [part.clone_value(v, mapping, ip) for v in op.operands]
        with ip, loc:
            start = as_torch_int(index_arith(arith.MulIOp, coordinate(grid, k), index_const(held)))
            mine = step.form(op, operands, start, types)
            return [
                v if t is None else torch_op(torch_dialect.AtenUnsqueezeOp.OPERATION_NAME, [v, torch_int(0)], t)
                for v, t in zip(mine, unsqueezed)
            ]

    part.kernel(in_bufs, out_bufs, [part.local_type(v, r) for v, r in zip(step.inputs, step.reads)], body, loc)
    for partial, result in sums:
        total = part.alloc(result, loc)
        with part.in_main(loc):
            ReductionOp.emit(partial, total, "sum", [0])
