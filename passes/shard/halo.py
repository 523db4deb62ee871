"""``shard.update_halo`` of a partitioned function, converted by ``hir-convert-shard-to-hir``.

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
them), on a multi-D grid with one team per line of the grid along k (``exchange.py``),
the end devices found by their coordinate along k.
"""

from torch_mlir import ir
from torch_mlir.dialects import arith, shard, tensor

from hir.passes.base import fail
from hir.passes.shard.exchange import shift
from hir.passes.shard.placement import axis_groups
from hir.passes.shard.registry import converts
from hir.passes.shard.state import ConversionState


@converts(shard.UpdateHaloOp)
def update_halo(s: ConversionState, op: ir.Operation) -> None:
    """Per split dim, a rotating `hir.shift` of the neighbours' boundary rows for each halo, written into the block by a
    kernel segment and kept at the grid axis's ends (static halo sizes, each dim over one grid axis)."""
    if len(op.operands) > 1:
        raise fail(op, "has dynamic halo sizes; hir converts static ones")
    sizes = list(ir.DenseI64ArrayAttr(op.attributes["static_halo_sizes"]))
    if not isinstance(op.results[0].type, ir.RankedTensorType):
        raise fail(op, f"updates a {op.results[0].type}; hir converts update_halo on tensors")
    split_dims = [(d, g) for d, g in enumerate(axis_groups(op.attributes["split_axes"])) if g]
    if len(sizes) != 2 * len(split_dims):
        raise fail(
            op, f"has {len(sizes)} halo sizes for {len(split_dims)} split dims (two per split dim: lower, upper)"
        )
    shape = list(ir.RankedTensorType(op.results[0].type).shape)
    value = op.operands[0]
    for (dim, axes), lo, hi in reversed(list(zip(split_dims, sizes[0::2], sizes[1::2]))):
        if len(axes) != 1 or not 0 <= axes[0] < s.grid.rank:
            raise fail(op, f"splits dim {dim} over grid axes {axes}; hir exchanges halos along one grid axis per dim")
        if ir.ShapedType.is_dynamic_size(shape[dim]):
            raise fail(op, f"exchanges halos along the dynamic dim {dim}; hir slices halos of a static extent")
        if lo < 0 or hi < 0 or lo + hi > shape[dim] or max(lo, hi) > shape[dim] - lo - hi:
            raise fail(
                op,
                f"has halos [{lo}, {hi}] on dim {dim} of local extent {shape[dim]}; "
                f"each must fit in the core ({shape[dim] - lo - hi} rows)",
            )
        k = axes[0]
        if lo:
            value = _exchange(
                s, op, value, dim, k, shape, send_at=shape[dim] - hi - lo, size=lo, recv_at=0, offset=1, keep_at=0
            )
        if hi:
            value = _exchange(
                s,
                op,
                value,
                dim,
                k,
                shape,
                send_at=lo,
                size=hi,
                recv_at=shape[dim] - hi,
                offset=-1,
                keep_at=s.grid.shape[k] - 1,
            )
    s.same_as(op.results[0], value, op)


def _exchange(
    s: ConversionState,
    op: ir.Operation,
    value: ir.Value,
    dim: int,
    k: int,
    shape: list[int],
    *,
    send_at: int,
    size: int,
    recv_at: int,
    offset: int,
    keep_at: int,
) -> ir.Value:
    """``value`` with rows [recv_at, recv_at + size) of dim ``dim`` replaced by rows
    [send_at, send_at + size) of the device ``offset`` before it along grid axis k,
    except on the device at coordinate ``keep_at`` (the end the rows would wrap to)."""
    local = ir.RankedTensorType(s.tensor_type(value))
    slab_shape = list(shape)
    slab_shape[dim] = size
    slab_type = ir.RankedTensorType.get(slab_shape, local.element_type)
    index = ir.IndexType.get()
    placement = s.data_placement(value)

    def slice_attrs(at: int, segments: list[int]) -> dict:
        offsets = [at if d == dim else 0 for d in range(len(shape))]
        return {
            "static_offsets": ir.DenseI64ArrayAttr.get(offsets),
            "static_sizes": ir.DenseI64ArrayAttr.get(slab_shape),
            "static_strides": ir.DenseI64ArrayAttr.get([1] * len(shape)),
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get(segments),
        }

    # explicit result types: an argument's value is already a buffer here
    slab = s.build(
        lambda: ir.Operation.create(
            tensor.ExtractSliceOp.OPERATION_NAME,
            results=[slab_type],
            operands=[value],
            attributes=slice_attrs(send_at, [1, 0, 0, 0]),
        )
    )
    moved = s.build(
        lambda: ir.Operation.create(
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
    )
    updated = s.build(
        lambda: ir.Operation.create(
            tensor.InsertSliceOp.OPERATION_NAME,
            results=[local],
            operands=[moved.result, value],
            attributes=slice_attrs(recv_at, [1, 1, 0, 0, 0]),
        )
    )
    coordinate = s.build(
        lambda: shard.ProcessMultiIndexOp([index], s.grid.name, axes=ir.DenseI16ArrayAttr.get([k]))
    ).results[0]
    end = s.build(lambda: arith.ConstantOp(index, keep_at)).result
    at_end = s.build(lambda: arith.CmpIOp(arith.CmpIPredicate.eq, coordinate, end)).result
    kept = s.build(
        lambda: ir.Operation.create(
            arith.SelectOp.OPERATION_NAME, results=[local], operands=[at_end, value, updated.result]
        )
    )
    for scalar in (coordinate, end, at_end):
        s.host[scalar] = scalar.owner
    s.kernel(slab, [slab.result], placement)
    shift(s, moved)
    s.kernel(updated, [updated.result], placement)
    s.kernel(kept, [kept.result], placement)
    return kept.result
