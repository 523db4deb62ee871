"""Local extents in ``hir-convert-shard-to-hir``: ``tensor.dim`` of a placed tensor and
``shard.shard_shape``, computed on the host (a mixin of
:class:`~hir.passes._shard_function.FunctionConversion`).

An even split's local extent is the global one (``memref.dim``) divided by its parts. An
uneven one (upstream's ``sharded_dims_offsets``) differs per device. Partitioned with offsets, a tensor's local type is dynamic along the uneven dim and
``shard-partition`` sizes its ``tensor.empty`` with ``shard.shard_shape``::

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
from typing import Optional

from torch_mlir import ir
from torch_mlir.dialects import arith, shard

from hir.dialect.base import DYNAMIC
from hir.passes._shard_collectives import fail
from hir.passes._shard_placement import GridPlacement, axis_groups, split

_SELECT = arith.SelectOp.OPERATION_NAME


class Extents:
    """The local-extent handlers of :class:`FunctionConversion`."""

    def local_extent(self, op: ir.Operation) -> None:
        """``tensor.dim`` of a program tensor (a local extent, e.g. sizing a ``tensor.empty``
        of a dynamic shape): on the host, the buffer's global extent (``memref.dim``) divided
        by the parts its dim is split into."""
        source, dim = op.operands
        index = self.constant_value(dim)
        placement = self.placement(source)
        if index is None or placement.kind == "partial":
            raise fail(op, "reads a dynamic dim index or a partial sum's extent; hir sizes static dims of placed tensors")
        if placement.bounds(index) is not None:
            self.scalars[op.results[0]] = self.uneven_extent(placement.bounds(index), index, placement)
            return
        extent = self.create("memref.dim", operands=[self.buffer(source, op), self.index_constant(index)], results=[ir.IndexType.get()]).result
        parts = 1
        for k, p in enumerate(placement.axes):
            parts *= self.grid.shape[k] if p == split(index) else 1
        if parts > 1:
            extent = self.index_arith(arith.DivUIOp.OPERATION_NAME, extent, self.index_constant(parts))
        self.scalars[op.results[0]] = extent

    def shard_shape(self, op: ir.Operation) -> list[ir.Value]:
        """``shard.shard_shape``: per dim, the extent of the shard its device (grid
        coordinates) holds, halos included."""
        segments = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        device = [self.scalar(v, op) for v in list(op.operands)[segments[0] + segments[1] :]]
        sharding = op.operands[segments[0]]
        owner = sharding.owner if isinstance(sharding, ir.OpResult) else None
        if owner is None or owner.name != shard.ShardingOp.OPERATION_NAME or len(owner.operands):
            raise fail(op, "reads a sharding that is not a static shard.sharding op")
        dims = list(ir.DenseI64ArrayAttr(op.attributes["dims"]))
        if segments[0] or DYNAMIC in dims:
            raise fail(op, f"has dynamic dims {dims}; hir computes shard shapes of static tensors")
        coordinates = iter(device)
        static_device = list(ir.DenseI64ArrayAttr(op.attributes["device"]))
        where = [next(coordinates) if c == DYNAMIC else self.index_constant(c) for c in static_device]
        if len(where) != self.grid.rank:
            raise fail(op, f"names device {static_device} on the {self.grid.rank}-D grid @{self.grid.name}; hir takes one coordinate per grid axis")
        attrs = owner.attributes
        groups = axis_groups(attrs["split_axes"])
        offsets = list(ir.DenseI64ArrayAttr(attrs["static_sharded_dims_offsets"]))
        halos = list(ir.DenseI64ArrayAttr(attrs["static_halo_sizes"]))
        out = []
        for dim, extent in enumerate(dims):
            axes = groups[dim] if dim < len(groups) else []
            if not axes:
                out.append(self.index_constant(extent))
                continue
            parts = prod(self.grid.shape[k] for k in axes)
            halo = sum(halos[:2]) if halos else 0
            halos = halos[2:]
            if offsets:
                bounds, offsets = offsets[: parts + 1], offsets[parts + 1 :]
                size = self.part_extent(bounds, [where[k] for k in axes], [self.grid.shape[k] for k in axes])
            elif extent % parts:
                raise fail(op, f"cuts dim {dim} of extent {extent} into {parts} parts; hir splits evenly or by sharded_dims_offsets")
            else:
                size = self.index_constant(extent // parts)
            out.append(self.index_arith(arith.AddIOp.OPERATION_NAME, size, self.index_constant(halo)) if halo else size)
        return out

    def part_extent(self, bounds: list[int], coordinates: list[ir.Value], extents: list[int]) -> ir.Value:
        """The extent of the part of a dim cut at ``bounds`` that the device at
        ``coordinates`` (on grid axes of ``extents``, major to minor) holds."""
        part: Optional[ir.Value] = None
        for coordinate, extent in zip(coordinates, extents):
            part = coordinate if part is None else self.index_arith(arith.AddIOp.OPERATION_NAME, self.index_arith(arith.MulIOp.OPERATION_NAME, part, self.index_constant(extent)), coordinate)
        sizes = [b - a for a, b in zip(bounds, bounds[1:])]
        value = self.index_constant(sizes[0])
        i1, eq = ir.IntegerType.get_signless(1), ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 0)
        for index, size in enumerate(sizes[1:], 1):
            if size == sizes[0]:
                continue
            at = self.create(arith.CmpIOp.OPERATION_NAME, operands=[part, self.index_constant(index)], results=[i1], attributes={"predicate": eq}).result
            value = self.create(_SELECT, operands=[at, self.index_constant(size), value], results=[ir.IndexType.get()]).result
        return value

    def uneven_extent(self, bounds: tuple[int, ...], dim: int, placement: GridPlacement) -> ir.Value:
        """``tensor.dim`` of a value cut at ``bounds`` along ``dim``: this device's extent."""
        axes = [k for k, p in enumerate(placement.axes) if p.kind == "split" and p.axis == dim]
        return self.part_extent(list(bounds), self.coordinates(axes), [self.grid.shape[k] for k in axes])
