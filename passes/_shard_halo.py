"""``shard.update_halo`` of a partitioned function, converted by ``hir-convert-shard-to-hir``
(a mixin of :class:`~hir.passes._shard_function.FunctionConversion`).

A device's local tensor holds its block of a dim split over grid axis k with ``lo`` rows of
halo before it and ``hi`` after (local extent L = lo + core + hi, as ``shard-partition`` pads
it with ``tensor.insert_slice``). ``update_halo`` fills the lower halo with the last ``lo``
core rows of the device before it along k and the upper halo with the first ``hi`` core
rows of the device after it; the devices at either end of the grid axis keep theirs.
Rewritten in the tensor program, per split dim from the last to the first as upstream's MPI
lowering does (so corners travel through both exchanges), into ops converted as usual:

    %r = shard.update_halo %t on @g split_axes = [[0]] halo_sizes = [1, 2] : tensor<7x8xf32>

becomes::

    %s = tensor.extract_slice %t[3, 0] [1, 8] [1, 1]                  // last lo core rows
    %v = shard.shift %s on @g grid_axes = [0] shift_axis = 0 offset = 1 rotate   // -> hir.shift
    %u = tensor.insert_slice %v into %t[0, 0] [1, 8] [1, 1]           // lower halo
    %i = shard.process_multi_index on @g axes = [0] : index
    %first = arith.cmpi eq, %i, %c0 : index                           // host
    %t1 = arith.select %first, %t, %u : tensor<7x8xf32>               // the first device keeps its halo
    ... the same for the upper halo (first hi core rows, offset = -1, the last device keeps it)

Each piece is a kernel segment or a collective; the exchange is ``hir.shift`` (a paired
send+recv per device, rotating: the wrapped-around rows reach the end devices, which drop
them), on a multi-D grid with one team per line of the grid along k (``_shard_shift.py``),
the end devices found by their coordinate along k.
"""

from torch_mlir import ir
from torch_mlir.dialects import arith, shard, tensor

from hir.passes._shard_collectives import fail
from hir.passes._shard_placement import axis_groups


class Halos:
    """The ``shard.update_halo`` handler of :class:`FunctionConversion`."""

    def update_halo(self, op: ir.Operation) -> None:
        if len(op.operands) > 1:
            raise fail(op, "has dynamic halo sizes; hir converts static ones")
        sizes = list(ir.DenseI64ArrayAttr(op.attributes["static_halo_sizes"]))
        if not isinstance(op.results[0].type, ir.RankedTensorType):
            raise fail(op, f"updates a {op.results[0].type}; hir converts update_halo on tensors")
        split_dims = [(d, g) for d, g in enumerate(axis_groups(op.attributes["split_axes"])) if g]
        if len(sizes) != 2 * len(split_dims):
            raise fail(op, f"has {len(sizes)} halo sizes for {len(split_dims)} split dims (two per split dim: lower, upper)")
        shape = list(ir.RankedTensorType(op.results[0].type).shape)
        value = op.operands[0]
        added: list = []
        for (dim, axes), lo, hi in reversed(list(zip(split_dims, sizes[0::2], sizes[1::2]))):
            if len(axes) != 1 or not 0 <= axes[0] < self.grid.rank:
                raise fail(op, f"splits dim {dim} over grid axes {axes}; hir exchanges halos along one grid axis per dim")
            if ir.ShapedType.is_dynamic_size(shape[dim]):
                raise fail(op, f"exchanges halos along the dynamic dim {dim}; hir slices halos of a static extent")
            if lo < 0 or hi < 0 or lo + hi > shape[dim] or max(lo, hi) > shape[dim] - lo - hi:
                raise fail(op, f"has halos [{lo}, {hi}] on dim {dim} of local extent {shape[dim]}; each must fit in the core ({shape[dim] - lo - hi} rows)")
            k = axes[0]
            if lo:
                value = self.exchange(op, value, dim, k, shape, send_at=shape[dim] - hi - lo, size=lo, recv_at=0, offset=1, keep_at=0, added=added)
            if hi:
                value = self.exchange(op, value, dim, k, shape, send_at=lo, size=hi, recv_at=shape[dim] - hi, offset=-1, keep_at=self.grid.shape[k] - 1, added=added)
        op.results[0].replace_all_uses_with(value)
        self.rewritten[self.position] = list(reversed(added)) + self.rewritten.get(self.position, [])

    def exchange(self, op, value, dim: int, k: int, shape: list[int], *, send_at: int, size: int, recv_at: int, offset: int, keep_at: int, added: list) -> ir.Value:
        """``value`` with rows [recv_at, recv_at + size) of dim ``dim`` replaced by rows
        [send_at, send_at + size) of the device ``offset`` before it along grid axis k,
        except on the device at coordinate ``keep_at`` (the end the rows would wrap to)."""
        local = ir.RankedTensorType(self.arg_tensor_types.get(value, value.type))
        slab_shape = list(shape)
        slab_shape[dim] = size
        slab_type = ir.RankedTensorType.get(slab_shape, local.element_type)
        index = ir.IndexType.get()
        placement = self.placement(value)

        def slice_attrs(offset: int, segments: list[int]) -> dict:
            offsets = [offset if d == dim else 0 for d in range(len(shape))]
            return {
                "static_offsets": ir.DenseI64ArrayAttr.get(offsets),
                "static_sizes": ir.DenseI64ArrayAttr.get(slab_shape),
                "static_strides": ir.DenseI64ArrayAttr.get([1] * len(shape)),
                "operandSegmentSizes": ir.DenseI32ArrayAttr.get(segments),
            }

        with self.loc, self.ip:  # explicit result types: an argument's value is already a buffer here
            slab = ir.Operation.create(tensor.ExtractSliceOp.OPERATION_NAME, results=[slab_type], operands=[value], attributes=slice_attrs(send_at, [1, 0, 0, 0]))
            moved = ir.Operation.create(
                shard.ShiftOp.OPERATION_NAME,
                results=[slab_type],
                operands=[slab.result],
                attributes={
                    "grid": op.attributes["grid"],
                    "grid_axes": ir.DenseI16ArrayAttr.get([k]),
                    "shift_axis": ir.IntegerAttr.get(index, k),
                    "offset": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), offset),
                    "rotate": ir.UnitAttr.get(),
                },
            )
            updated = ir.Operation.create(tensor.InsertSliceOp.OPERATION_NAME, results=[local], operands=[moved.result, value], attributes=slice_attrs(recv_at, [1, 1, 0, 0, 0]))
            coordinate = shard.ProcessMultiIndexOp([index], self.grid.name, axes=ir.DenseI16ArrayAttr.get([k])).results[0]
            end = arith.ConstantOp(index, keep_at).result
            at_end = arith.CmpIOp(arith.CmpIPredicate.eq, coordinate, end).result
            kept = ir.Operation.create(arith.SelectOp.OPERATION_NAME, results=[local], operands=[at_end, value, updated.result])
        added += [slab, moved, updated, coordinate.owner.operation, end.owner.operation, at_end.owner.operation, kept]
        for scalar in (coordinate, end, at_end):
            self.host[scalar] = scalar.owner.operation
        self.placements[slab.result] = placement
        self.kernel(slab, [slab.result])
        self.shift(moved)
        self.placements[updated.result] = placement
        self.kernel(updated, [updated.result])
        self.placements[kept.result] = placement
        self.kernel(kept, [kept.result])
        return kept.result
