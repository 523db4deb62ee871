"""``shard.all_slice`` and ``shard.all_to_all`` of a partitioned function
(``hir-convert-shard-to-hir``).

``all_slice`` needs no communication: each device keeps its slice of the (on grid axis k)
replicated input. It is rewritten in the tensor program as ``tensor.extract_slice`` at the
offset of the device's coordinate on k, then outlined into a kernel segment::

    %s = shard.all_slice %x on @g grid_axes = [1] slice_axis = 1 : tensor<4x6xf32> -> tensor<4x2xf32>

becomes (on a 2x3 grid)::

    %d = "hir.device_index"() {mesh = array<i64: 0, 1, 2, 3, 4, 5>} : () -> index
    %i = arith.remui %d, %c3 : index                     // the coordinate on grid axis 1
    %o = arith.muli %i, %c2 : index
    %s = memref.alloc() : memref<4x6xf32, #hir.shard<dense<...> : tensor<2x3xi64>, array<i64: -1, 1>>>
    call @f_kernel_0(%x, %o, %s)                         // tensor.extract_slice %x[0, %o] [4, 2] [1, 1]

``all_to_all`` splits along split_axis, exchanges, concatenates along concat_axis: globally
the value split along concat_axis becomes split along split_axis. It is rewritten as
``shard.all_gather`` along concat_axis then ``shard.all_slice`` along split_axis, each
converted by its own handler.
"""

from torch_mlir import ir
from torch_mlir.dialects import arith, shard, tensor

from hir.passes.base import fail
from hir.passes.shard.collectives import all_gather, grid_axes, grid_axis, index_attr
from hir.passes.shard.extents import local_extent
from hir.passes.shard.placement import axis_text, moved
from hir.passes.shard.registry import converts
from hir.passes.shard.state import ConversionState


@converts(shard.AllSliceOp)
def all_slice(s: ConversionState, op: ir.Operation) -> None:
    """A kernel segment slicing each device's part at its coordinate's offset (no communication), over one grid axis; a
    dynamic dim's part is its extent / n on the host."""
    source, dim = op.operands[0], index_attr(op, "slice_axis")
    k = grid_axis(s, op)
    have = s.data_placement(source)
    if have.on(k) is not None:
        where = f" on grid axis {k}" if s.grid.rank > 1 else ""
        raise fail(
            op,
            f"reads {source.get_name()}, which is {axis_text(have.on(k))}{where}; shard.all_slice needs it replicated",
        )
    result = op.results[0]
    shape = list(ir.RankedTensorType(result.type).shape)
    index = ir.IndexType.get()
    sizes = []  # dynamic dims: the source's local extents (on the host), the sliced one / n
    chunk = None
    for d in (d for d, n in enumerate(shape) if ir.ShapedType.is_dynamic_size(n)):
        extent = local_extent(s, source, d, op)
        s.scalars[extent] = extent
        if d == dim:  # as upstream's lowering: the extent / the grid axis's devices
            parts = s.build(lambda: arith.ConstantOp(index, s.grid.shape[k])).result
            chunk = s.build(lambda extent=extent, parts=parts: arith.DivUIOp(extent, parts)).result
            s.host[parts] = parts.owner
        sizes.append(chunk if d == dim else extent)
    device = s.build(
        lambda: shard.ProcessMultiIndexOp([index], s.grid.name, axes=ir.DenseI16ArrayAttr.get([k]))
    ).results[0]
    if chunk is None:
        chunk = s.build(lambda: arith.ConstantOp(index, shape[dim])).result
    offset = s.build(lambda: arith.MulIOp(device, chunk)).result
    offsets = [0] * len(shape)
    offsets[dim] = ir.ShapedType.get_dynamic_stride_or_offset()
    local = s.build(
        lambda: tensor.ExtractSliceOp(result.type, source, [offset], sizes, [], offsets, shape, [1] * len(shape))
    )
    for value in (device, chunk, offset):
        s.host[value] = value.owner
    inp = s.buffer(source, op)
    s.kernel(
        local, [local.result], moved(have, [k], dim), lambda d: (inp, d)
    )  # unsliced dims: the source's global extents
    s.same_as(result, local.result, op)


@converts(shard.AllToAllOp)
def all_to_all(s: ConversionState, op: ir.Operation) -> None:
    """`shard.all_gather` along its concat axis then `shard.all_slice` along its split axis, each converted as above
    (one grid axis)."""
    grid_axes(s, op)
    source, result = op.operands[0], op.results[0]
    concat, split_dim = index_attr(op, "concat_axis"), index_attr(op, "split_axis")
    local = ir.RankedTensorType(s.tensor_type(source))
    shape = list(local.shape)
    if not ir.ShapedType.is_dynamic_size(shape[concat]):
        shape[concat] *= s.grid.shape[grid_axis(s, op)]
    common = {"grid": op.attributes["grid"], "grid_axes": op.attributes["grid_axes"]}
    index = ir.IndexType.get()
    gathered = s.build(
        lambda: ir.Operation.create(
            shard.AllGatherOp.OPERATION_NAME,
            operands=[source],
            results=[ir.RankedTensorType.get(shape, local.element_type)],
            attributes={**common, "gather_axis": ir.IntegerAttr.get(index, concat)},
        )
    )
    sliced = s.build(
        lambda: ir.Operation.create(
            shard.AllSliceOp.OPERATION_NAME,
            operands=[gathered.result],
            results=[result.type],
            attributes={**common, "slice_axis": ir.IntegerAttr.get(index, split_dim)},
        )
    )
    all_gather(s, gathered)
    all_slice(s, sliced)
    s.same_as(result, sliced.result, op)
