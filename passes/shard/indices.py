"""Device queries of a partitioned function (``hir-convert-shard-to-hir``): host index
arithmetic on ``hir.device_index``, built where the host program first reads a result.

Devices are laid out row-major over the grid, so the device's position in the mesh is its
linear index and its coordinate on grid axis k is (linear / stride_k) mod extent_k::

    %i = shard.process_multi_index on @g axes = [1] : index        // on a 2x3 grid

becomes::

    %d = "hir.device_index"() {mesh = array<i64: 0, 1, 2, 3, 4, 5>} : () -> index
    %i = arith.remui %d, %c3 : index
"""

from math import prod

from torch_mlir import ir
from torch_mlir.dialects import arith, shard

from hir.dialect import DeviceIndexOp
from hir.passes.base import fail
from hir.passes.shard.registry import converts, host_value
from hir.passes.shard.state import ConversionState


def device_index(s: ConversionState) -> ir.Value:
    return s.create(DeviceIndexOp.OPERATION_NAME, results=[ir.IndexType.get()], attributes={"mesh": s.team}).result


def coordinates(s: ConversionState, axes: list[int]) -> list[ir.Value]:
    """This device's coordinates on grid ``axes`` (host arithmetic on hir.device_index)."""
    linear = device_index(s)
    out = []
    for k in axes:
        stride = prod(s.grid.shape[k + 1 :])
        value = linear if stride == 1 else s.index_arith(arith.DivUIOp.OPERATION_NAME, linear, s.index_constant(stride))
        if k:  # the major axis needs no modulo
            value = s.index_arith(arith.RemUIOp.OPERATION_NAME, value, s.index_constant(s.grid.shape[k]))
        out.append(value)
    return out


@host_value(shard.ProcessLinearIndexOp)
def process_linear_index(s: ConversionState, op: ir.Operation) -> list[ir.Value]:
    """`hir.device_index` over the whole mesh (host, where first read)."""
    return [device_index(s)]


@host_value(shard.ProcessMultiIndexOp)
def process_multi_index(s: ConversionState, op: ir.Operation) -> list[ir.Value]:
    """The device's grid coordinates: host `arith.divui` / `remui` on `hir.device_index` (where first read)."""
    return coordinates(s, list(ir.DenseI16ArrayAttr(op.attributes["axes"])) or list(range(s.grid.rank)))


@host_value(shard.NeighborsLinearIndicesOp)
def neighbors_linear_indices(s: ConversionState, op: ir.Operation) -> list[ir.Value]:
    """The linear indices of the devices before and after along one grid axis, -1 past either edge (host arithmetic,
    where first read)."""
    axes = list(ir.DenseI16ArrayAttr(op.attributes["split_axes"]))
    if len(axes) != 1 or not 0 <= axes[0] < s.grid.rank:
        raise fail(op, f"has split axes {axes}; hir converts the neighbors along one axis of the {s.grid.rank}-D grid")
    device = [s.scalar(v, op) for v in op.operands]
    k = axes[0]
    linear = None
    for axis, coordinate in enumerate(device):
        stride = prod(s.grid.shape[axis + 1 :])
        term = (
            coordinate
            if stride == 1
            else s.index_arith(arith.MulIOp.OPERATION_NAME, coordinate, s.index_constant(stride))
        )
        linear = term if linear is None else s.index_arith(arith.AddIOp.OPERATION_NAME, linear, term)
    step = s.index_constant(prod(s.grid.shape[k + 1 :]))
    none = s.index_constant(-1)
    results = []
    for edge, name in ((0, arith.SubIOp.OPERATION_NAME), (s.grid.shape[k] - 1, arith.AddIOp.OPERATION_NAME)):
        at_edge = s.create(
            arith.CmpIOp.OPERATION_NAME,
            operands=[device[k], s.index_constant(edge)],
            results=[ir.IntegerType.get_signless(1)],
            attributes={"predicate": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 0)},
        ).result
        assert linear is not None, "one coordinate per grid axis, of which there is at least one"
        neighbor = s.index_arith(name, linear, step)
        results.append(
            s.create(
                arith.SelectOp.OPERATION_NAME, operands=[at_edge, none, neighbor], results=[ir.IndexType.get()]
            ).result
        )
    return results


@converts(shard.GridShapeOp)
def grid_shape(s: ConversionState, op: ir.Operation) -> None:
    """The grid's extents: host `arith.constant`s."""
    index = ir.IndexType.get()
    for result, axis in zip(op.results, ir.DenseI16ArrayAttr(op.attributes["axes"])):
        extent = ir.IntegerAttr.get(index, s.grid.shape[axis])
        s.scalars[result] = s.create(
            arith.ConstantOp.OPERATION_NAME, results=[index], attributes={"value": extent}
        ).result
