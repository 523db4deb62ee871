"""Local extents in ``hir-convert-shard-to-hir``: ``tensor.dim`` of a placed tensor and
``shard.shard_shape``, computed on the host.

An even split's local extent is the global one (``memref.dim``) divided by its parts. An
uneven one (upstream's ``sharded_dims_offsets``) differs per device. Partitioned with offsets, a tensor's local type is
dynamic along the uneven dim and ``shard-partition`` sizes its ``tensor.empty`` with ``shard.shard_shape``::

    %s = shard.sharding @g split_axes = [[0]] sharded_dims_offsets = [0, 1, 4, 7, 8] : !shard.sharding
    %i = shard.process_multi_index on @g : index
    %n:2 = shard.shard_shape dims = [8, 4] sharding = %s device = [%i] : index, index
    %e = tensor.empty(%n#0) : tensor<?x4xf32>

The buffers are placed unevenly (``#hir.shard<..., {axis = 0 : i64, offsets = array<i64: 0, 1,
4, 7, 8>}>``, global 8x4), and ``shard_shape`` (like ``tensor.dim`` of an uneven value)
becomes host arithmetic on ``hir.device_index``: the device's part along the grid axes
splitting the dim, and a select of that part's extent::

    %d = "hir.device_index"() {mesh = array<i64: 0, 1, 2, 3>} : () -> index
    %p1 = arith.cmpi eq, %d, %c1 : index
    %e1 = arith.select %p1, %c3, %c1 : index       // part 1 holds 3 rows, part 0 one
    ...                                             // one compare and select per part
"""

from math import prod

from torch_mlir import ir
from torch_mlir.dialects import arith, memref, shard, tensor

from hir.dialect.base import DYNAMIC
from hir.passes.base import fail
from hir.passes.shard.compute import outline_or_host
from hir.passes.shard.indices import coordinates
from hir.passes.shard.placement import axis_groups
from hir.passes.shard.registry import converts, host_value
from hir.passes.shard.state import ConversionState


def local_extent(s: ConversionState, source: ir.Value, dim: int, user: ir.Operation) -> ir.Value:
    """The extent of ``source``'s dim ``dim`` on this device (a local extent): on the host,
    the buffer's global extent (``memref.dim``) divided by the parts the dim is split into;
    a device's own part of an uneven dim."""
    placement = s.data_placement(source)
    if placement.partial:
        raise fail(user, "reads a dynamic dim index or a partial sum's extent; hir sizes static dims of placed tensors")
    bounds = placement.bounds(dim)
    if bounds is not None:
        axes = [k for k, d in enumerate(placement.splits) if d == dim]
        return part_extent(s, list(bounds), coordinates(s, axes), [s.grid.shape[k] for k in axes])
    extent = s.create(
        memref.DimOp.OPERATION_NAME,
        operands=[s.buffer(source, user), s.index_constant(dim)],
        results=[ir.IndexType.get()],
    ).result
    parts = prod(s.grid.shape[k] for k, d in enumerate(placement.splits) if d == dim)
    if parts > 1:
        extent = s.index_arith(arith.DivUIOp.OPERATION_NAME, extent, s.index_constant(parts))
    return extent


@converts(tensor.DimOp)
def dim(s: ConversionState, op: ir.Operation) -> None:
    """A placed tensor's local extent: host `memref.dim` of its buffer over the dim's parts (an uneven dim's part by
    `hir.device_index`)."""
    source, index = op.operands
    if not s.is_data(source):
        outline_or_host(s, op)  # not a program tensor: host arithmetic
        return
    dim_index = s.constant_value(index)
    if not isinstance(dim_index, int):  # not a constant (an index constant is an integer)
        raise fail(op, "reads a dynamic dim index or a partial sum's extent; hir sizes static dims of placed tensors")
    s.scalars[op.results[0]] = local_extent(s, source, dim_index, op)


@host_value(shard.ShardShapeOp)
def shard_shape(s: ConversionState, op: ir.Operation) -> list[ir.Value]:
    """Per dim, the extent of the shard a device holds, halos included (host arithmetic; a select of the part's extent
    for `sharded_dims_offsets`)."""
    segments = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    device = [s.scalar(v, op) for v in list(op.operands)[segments[0] + segments[1] :]]
    sharding = op.operands[segments[0]]
    owner = sharding.owner if isinstance(sharding, ir.OpResult) else None
    if owner is None or owner.name != shard.ShardingOp.OPERATION_NAME or len(owner.operands):
        raise fail(op, "reads a sharding that is not a static shard.sharding op")
    dims = list(ir.DenseI64ArrayAttr(op.attributes["dims"]))
    if segments[0] or DYNAMIC in dims:
        raise fail(op, f"has dynamic dims {dims}; hir computes shard shapes of static tensors")
    coordinates_given = iter(device)
    static_device = list(ir.DenseI64ArrayAttr(op.attributes["device"]))
    where = [next(coordinates_given) if c == DYNAMIC else s.index_constant(c) for c in static_device]
    if len(where) != s.grid.rank:
        raise fail(
            op,
            f"names device {static_device} on the {s.grid.rank}-D grid "
            f"@{s.grid.name}; hir takes one coordinate per grid axis",
        )
    attrs = owner.attributes
    groups = axis_groups(attrs["split_axes"])
    offsets = list(ir.DenseI64ArrayAttr(attrs["static_sharded_dims_offsets"]))
    halos = list(ir.DenseI64ArrayAttr(attrs["static_halo_sizes"]))
    out = []
    for d, extent in enumerate(dims):
        axes = groups[d] if d < len(groups) else []
        if not axes:
            out.append(s.index_constant(extent))
            continue
        parts = prod(s.grid.shape[k] for k in axes)
        halo = sum(halos[:2]) if halos else 0
        halos = halos[2:]
        if offsets:
            bounds, offsets = offsets[: parts + 1], offsets[parts + 1 :]
            size = part_extent(s, bounds, [where[k] for k in axes], [s.grid.shape[k] for k in axes])
        elif extent % parts:
            raise fail(
                op, f"cuts dim {d} of extent {extent} into {parts} parts; hir splits evenly or by sharded_dims_offsets"
            )
        else:
            size = s.index_constant(extent // parts)
        out.append(s.index_arith(arith.AddIOp.OPERATION_NAME, size, s.index_constant(halo)) if halo else size)
    return out


def part_extent(s: ConversionState, bounds: list[int], coordinates: list[ir.Value], extents: list[int]) -> ir.Value:
    """The extent of the part of a dim cut at ``bounds`` that the device at
    ``coordinates`` (on grid axes of ``extents``, major to minor) holds."""
    part: ir.Value | None = None
    for coordinate, extent in zip(coordinates, extents):
        part = (
            coordinate
            if part is None
            else s.index_arith(
                arith.AddIOp.OPERATION_NAME,
                s.index_arith(arith.MulIOp.OPERATION_NAME, part, s.index_constant(extent)),
                coordinate,
            )
        )
    sizes = [b - a for a, b in zip(bounds, bounds[1:])]
    value = s.index_constant(sizes[0])
    i1, eq = ir.IntegerType.get_signless(1), ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 0)
    for index, size in enumerate(sizes[1:], 1):
        if size == sizes[0]:
            continue
        at = s.create(
            arith.CmpIOp.OPERATION_NAME,
            operands=[part, s.index_constant(index)],
            results=[i1],
            attributes={"predicate": eq},
        ).result
        value = s.create(
            arith.SelectOp.OPERATION_NAME, operands=[at, s.index_constant(size), value], results=[ir.IndexType.get()]
        ).result
    return value
