"""The ``shard`` collectives and grid queries of a partitioned function, converted by
``hir-convert-shard-to-hir`` (a mixin of :class:`~hir.passes._shard_function.FunctionConversion`,
which provides the buffers, placements and the insertion point):

    %g = shard.all_gather %x on @g grid_axes = [0] gather_axis = 0 : tensor<2x16xf32> -> tensor<8x16xf32>

becomes (the operand must be split along the gathered dim; a multi-D grid gets one team
per line of the mesh along the grid axis, or per plane along several)::

    %g = memref.alloc() : memref<8x16xf32, #hir.shard<array<i64: 0, 1, 2, 3>, -1 : i64>>
    %w = "hir.allgather"(%x, %g) {axis = 0 : i64, backend = "nccl", team = array<i64: 0, 1, 2, 3>}
    "hir.wait"(%w) : (!hir.work) -> ()

``all_reduce`` / ``reduce_scatter`` read a partial sum (a leading device axis);
``all_slice`` is a kernel slicing at the device's offset; ``all_to_all`` an all_gather along
its concat axis then an all_slice along its split axis (``shift`` and ``broadcast``:
``_shard_shift.py``);
``grid_shape`` host constants; ``process_linear_index`` ``hir.device_index`` over the mesh,
``process_multi_index`` its coordinates on the grid (host ``arith.divui`` / ``remui``).
"""

from math import prod
from typing import Optional

from torch_mlir import ir
from torch_mlir.dialects import arith, shard, tensor

from hir.dialect import AllgatherOp, AllreduceOp, DeviceIndexOp, ReduceScatterOp, WaitOp
from hir.dialect.nodes import team_backend
from hir.dialect.teams import teams_attr
from hir.dialect.linalg_facts import ADDITIVE, is_elementwise
from hir.passes.base import PassFailure
from hir.passes._shard_placement import PARTIAL, REPLICATED, GridPlacement, Placement, split


def is_tensor(value: ir.Value) -> bool:
    return isinstance(value.type, ir.RankedTensorType)


def fail(op: ir.Operation, message: str) -> PassFailure:
    return PassFailure(f"'{op.name}' op {message}", op.location)


DEVICE_INDEX_OPS = (shard.ProcessMultiIndexOp.OPERATION_NAME, shard.ProcessLinearIndexOp.OPERATION_NAME)
HOST_INDEX_OPS = DEVICE_INDEX_OPS + (shard.NeighborsLinearIndicesOp.OPERATION_NAME, shard.ShardShapeOp.OPERATION_NAME)  # index arithmetic on the host
_REDUCTIONS = {"sum": "sum", "max": "max", "min": "min", "product": "prod"}
# (operand is float, result is float) -> the arith op converting tensors elementwise
# ((widen, narrow) where both are of one kind).
_CASTS = {
    (True, True): ("arith.extf", "arith.truncf"),
    (False, False): ("arith.extsi", "arith.trunci"),
    (False, True): "arith.sitofp",
    (True, False): "arith.fptosi",
}


def _index_attr(op: ir.Operation, name: str) -> int:
    return ir.IntegerAttr(op.attributes[name]).value


def _i64(value: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)


def _needed_by_collective(op: ir.Operation) -> Optional[Placement]:
    """The placement collective ``op`` needs of its operand on the grid axis it runs over
    (None: not a collective)."""
    name = op.name
    if name == shard.AllGatherOp.OPERATION_NAME:
        return split(_index_attr(op, "gather_axis"))
    if name in (shard.AllReduceOp.OPERATION_NAME, shard.ReduceScatterOp.OPERATION_NAME):
        return PARTIAL
    if name in (shard.AllSliceOp.OPERATION_NAME, shard.BroadcastOp.OPERATION_NAME):
        return REPLICATED
    if name == shard.AllToAllOp.OPERATION_NAME:
        return split(_index_attr(op, "concat_axis"))
    return None


def needed_downstream(value: ir.Value) -> Optional[tuple[ir.Operation, Placement]]:
    """(collective, the placement it needs) of the first collective reading ``value``, directly
    or through elementwise ops that keep that placement (only additive ones keep a partial
    sum: shard-simplify moves all_reduce(x) + all_reduce(y) to all_reduce(x + y))."""
    for use in value.uses:
        owner = use.owner
        needed = _needed_by_collective(owner)
        if needed is not None:
            return owner, needed
        if is_elementwise(owner) and owner.results and is_tensor(owner.results[0]):
            found = needed_downstream(owner.results[0])
            if found is not None and (found[1] != PARTIAL or owner.name in ADDITIVE):
                return found
    return None


class Collectives:
    """The shard-op handlers of :class:`FunctionConversion`."""

    def shard_op(self, op: ir.Operation) -> None:
        name = op.name
        if name in HOST_INDEX_OPS:
            for result in op.results:
                self.host[result] = op
            return
        if name == shard.GridShapeOp.OPERATION_NAME:
            self.grid_shape(op)
            return
        if name == shard.UpdateHaloOp.OPERATION_NAME:
            self.update_halo(op)  # _shard_halo.py
            return
        if name == shard.ShardingOp.OPERATION_NAME and all(use.owner.name == shard.ShardShapeOp.OPERATION_NAME for use in op.results[0].uses):
            return  # read by shard_shape only (static attributes)
        if name == shard.ShardingOp.OPERATION_NAME and any(use.owner.name == "func.return" for use in op.results[0].uses):
            raise fail(op, "is returned (a !shard.sharding result); hir functions return buffers and host scalars, whose placements live in their types")
        if name in (shard.ShardOp.OPERATION_NAME, shard.ShardingOp.OPERATION_NAME):
            raise fail(op, "is a sharding annotation: partition the program first (sharding-propagation, shard-partition; or use the hir-from-shard pipeline)")
        handler = {
            shard.AllGatherOp.OPERATION_NAME: self.all_gather,
            shard.AllReduceOp.OPERATION_NAME: self.all_reduce,
            shard.ReduceScatterOp.OPERATION_NAME: self.reduce_scatter,
            shard.AllSliceOp.OPERATION_NAME: self.all_slice,
            shard.ShiftOp.OPERATION_NAME: self.shift,
            shard.AllToAllOp.OPERATION_NAME: self.all_to_all,
            shard.BroadcastOp.OPERATION_NAME: self.broadcast,
        }.get(name)
        if handler is None:
            raise fail(op, "has no hir equivalent yet (converted: all_gather, all_reduce, reduce_scatter, all_slice, all_to_all, broadcast, shift, update_halo, grid_shape, process_multi_index, process_linear_index, neighbors_linear_indices, shard_shape)")
        self.grid_axes(op)
        handler(op)

    def grid_axes(self, op: ir.Operation) -> list[int]:
        """The grid axes collective ``op`` runs over (axes of extent 1 take no part)."""
        axes = list(ir.DenseI16ArrayAttr(op.attributes["grid_axes"]))
        if not axes or not all(0 <= a < self.grid.rank for a in axes) or len(set(axes)) != len(axes):
            raise fail(op, f"runs over grid axes {axes}; the {self.grid.rank}-D grid @{self.grid.name} has axes 0 .. {self.grid.rank - 1} (each listed once)")
        if axes != sorted(axes):
            raise fail(op, f"runs over grid axes {axes} minor-first; hir runs a team over grid axes in grid order (row-major)")
        return [a for a in axes if self.grid.shape[a] != 1] or axes[:1]

    def grid_axis(self, op: ir.Operation) -> int:
        """The one grid axis ``op`` (all_slice, all_to_all) runs over."""
        axes = self.grid_axes(op)
        if len(axes) != 1:
            raise fail(op, f"runs over grid axes {axes}; hir converts {op.name} over one axis of the grid")
        return axes[0]

    def collective(self, op: ir.Operation, needed: Placement, out: Placement, hir_name: str, attributes: dict) -> ir.Value:
        """``op`` over grid axes K: its operand must be ``needed`` on each of K; the result
        is ``out`` on K and placed as the operand on the other grid axes. Over several grid
        axes one team holds each plane of the grid along K (row-major over K)."""
        source, axes = op.operands[0], self.grid_axes(op)
        if ir.ShapedType(self.arg_tensor_types.get(source, source.type)).element_type != ir.ShapedType(op.results[0].type).element_type:
            source = self.converted_operand(op)
        have = self.placement(source)
        if have == self.free_placement:
            have = self.replicated
        if any(have[k] != needed for k in axes) and needed.kind in ("split", "partial") and not any(have[k].kind == "partial" for k in axes):
            source = self.relayout(op, source, have.with_axes(axes, needed))
            have = self.placement(source)
        wrong = next((k for k in axes if have[k] != needed), None)
        if wrong is not None:
            where = f" on grid axis {wrong}" if self.grid.rank > 1 else ""
            raise fail(op, f"reads {source.get_name()}, which is {have[wrong]}{where}; {op.name} needs it {needed}")
        pending = [k for k, p in enumerate(have.axes) if p == PARTIAL]
        if needed == PARTIAL and pending != axes:
            raise fail(op, f"sums over grid axes {axes} a value whose sum is pending on grid axes {pending}; hir reduces a partial sum over all its grid axes at once")
        placed = have.with_axes(axes, out)
        for placement in (have, placed):
            minor = placement.split_minor_to(axes)
            if minor is not None:
                raise fail(op, f"runs over grid axes {axes} of a value split along dim {placement[minor].axis} by grid axis {minor} too, minor to them: a team along {axes} holds no contiguous block of it")
        inp = self.buffer(source, op)
        lead = (have.kind == "partial") - (placed.kind == "partial")  # a partial sum's device axis comes first
        output = self.alloc(op.results[0], placed, lambda d: (inp, d + lead))  # global extents kept
        self.communicate(hir_name, axes, [inp, output], attributes)
        return output

    def communicate(self, hir_name: str, axes: list[int], operands: list, attributes: dict) -> None:
        """The hir communication ``hir_name`` over grid axes ``axes`` and its ``hir.wait``: the
        mesh's one team on a 1-D grid, else one team per line (plane) of the grid along them."""
        team = self.team if self.grid.rank == 1 else teams_attr(self.grid.lines(axes))
        backend = ir.StringAttr.get(team_backend(self.fn, team, self.backend.value, "hir-convert-shard-to-hir"))  # no copy engines across nodes
        attributes = {**attributes, "backend": backend, "team": team}
        work = self.create(hir_name, operands=operands, results=[self.work_type], attributes=attributes).result
        self.create(WaitOp.OPERATION_NAME, operands=[work])

    def relayout(self, op: ir.Operation, source: ir.Value, placement: GridPlacement) -> ir.Value:
        """``source``'s local data, each device's own, seen as ``placement``: a collective of a
        hand-partitioned program may gather along a dim the value is not split by, or sum a
        value that is not a partial sum (its meaning is per device: concatenate, or add, the
        devices' local tensors). A copy kernel gives the local data a buffer placed as the
        collective needs; only split and partial-sum placements are taken (each device holds
        its own part), never replicated (that would claim equal data)."""
        local = ir.RankedTensorType(self.arg_tensor_types.get(source, source.type))
        shape = list(local.shape)
        with self.loc, self.ip:
            copy = tensor.ExtractSliceOp(local, source, [], [], [], [0] * len(shape), shape, [1] * len(shape))
        self.rewritten[self.position] = [copy.operation] + self.rewritten.get(self.position, [])
        self.placements[copy.result] = placement
        self.kernel(copy.operation, [copy.result])
        op.operands[0] = copy.result
        return copy.result

    def converted_operand(self, op: ir.Operation) -> ir.Value:
        """A collective that changes the element type (``all_reduce ... : tensor<5xf32> ->
        tensor<5xf64>``) communicates in the result's type, as upstream's MPI lowering does:
        its operand is converted first by an elementwise kernel (``arith.extf`` and kin),
        which keeps the operand's placement (a partial sum stays one)."""
        source = op.operands[0]
        shaped = ir.RankedTensorType(self.arg_tensor_types.get(source, source.type))
        have, want = shaped.element_type, ir.ShapedType(op.results[0].type).element_type
        cast = _CASTS.get((isinstance(have, ir.FloatType), isinstance(want, ir.FloatType)))
        if cast is None or not isinstance(have, (ir.FloatType, ir.IntegerType)) or not isinstance(want, (ir.FloatType, ir.IntegerType)):
            raise fail(op, f"changes the element type ({have} -> {want}); hir converts between integer and float types only")
        if isinstance(cast, tuple):  # same kind: widen or narrow
            cast = cast[0] if want.width > have.width else cast[1]
        with self.loc, self.ip:
            converted = ir.Operation.create(cast, results=[ir.RankedTensorType.get(shaped.shape, want)], operands=[source])
        self.rewritten[self.position] = [converted] + self.rewritten.get(self.position, [])
        self.placements[converted.result] = self.placement(source)
        self.kernel(converted, [converted.result])
        op.operands[0] = converted.result
        return converted.result

    def reduction(self, op: ir.Operation) -> ir.StringAttr:
        kind = str(op.attributes["reduction"]).rstrip(">").split()[-1]
        if kind not in _REDUCTIONS:
            raise fail(op, f"reduces with '{kind}'; hir collectives reduce with {', '.join(_REDUCTIONS)}")
        return ir.StringAttr.get(_REDUCTIONS[kind])

    def all_gather(self, op: ir.Operation) -> None:
        axis = _index_attr(op, "gather_axis")
        self.collective(op, _needed_by_collective(op), REPLICATED, AllgatherOp.OPERATION_NAME, {"axis": _i64(axis)})

    def all_reduce(self, op: ir.Operation) -> None:
        self.collective(op, _needed_by_collective(op), REPLICATED, AllreduceOp.OPERATION_NAME, {"axis": _i64(0), "reduction": self.reduction(op)})

    def reduce_scatter(self, op: ir.Operation) -> None:
        dim = _index_attr(op, "scatter_dim")
        attrs = {"axis": _i64(0), "scatter_axis": _i64(dim + 1), "reduction": self.reduction(op)}
        self.collective(op, _needed_by_collective(op), split(dim), ReduceScatterOp.OPERATION_NAME, attrs)

    def all_slice(self, op: ir.Operation) -> None:
        """No communication: each device keeps its slice of the (on grid axis k) replicated
        input. Rewritten in the tensor program as ``tensor.extract_slice`` at the offset of
        the device's coordinate on k, then outlined."""
        source, dim = op.operands[0], _index_attr(op, "slice_axis")
        k = self.grid_axis(op)
        have = self.placement(source)
        if have == self.free_placement:
            have = self.replicated
        if have[k] != REPLICATED:
            where = f" on grid axis {k}" if self.grid.rank > 1 else ""
            raise fail(op, f"reads {source.get_name()}, which is {have[k]}{where}; shard.all_slice needs it replicated")
        result = op.results[0]
        shape = list(ir.RankedTensorType(result.type).shape)
        index = ir.IndexType.get()
        added = []
        sizes = []  # dynamic dims: the source's local extents (tensor.dim, on the host), the sliced one / n
        chunk = None
        with self.loc, self.ip:
            for d in (d for d, n in enumerate(shape) if ir.ShapedType.is_dynamic_size(n)):
                position = arith.ConstantOp(index, d)
                extent = ir.Operation.create(tensor.DimOp.OPERATION_NAME, results=[index], operands=[source, position.result])
                self.local_extent(extent)
                if d == dim:  # as upstream's lowering: the extent / the grid axis's devices
                    parts = arith.ConstantOp(index, self.grid.shape[k])
                    chunk = arith.DivUIOp(extent.result, parts.result).result
                    self.host[parts.result] = parts.operation
                    added += [chunk.owner.operation, parts.operation]  # users before producers (erased in order)
                added += [extent, position.operation]
                sizes.append(chunk if d == dim else extent.result)
            device = shard.ProcessMultiIndexOp([index], self.grid.name, axes=ir.DenseI16ArrayAttr.get([k])).results[0]
            if chunk is None:
                chunk = arith.ConstantOp(index, shape[dim]).result
                added.append(chunk.owner.operation)
            offset = arith.MulIOp(device, chunk).result
            offsets = [0] * len(shape)
            offsets[dim] = ir.ShapedType.get_dynamic_stride_or_offset()
            local = tensor.ExtractSliceOp(result.type, source, [offset], sizes, [], offsets, shape, [1] * len(shape))
        for value in (device, chunk, offset):
            self.host[value] = value.owner.operation
        added = [local.operation, offset.owner.operation, device.owner.operation] + added
        self.rewritten[self.position] = added + self.rewritten.get(self.position, [])
        self.placements[local.result] = have.with_axis(k, split(dim))
        inp = self.buffer(source, op)
        self.kernel(local.operation, [local.result], lambda d: (inp, d))  # unsliced dims: the source's global extents
        result.replace_all_uses_with(local.result)

    def grid_shape(self, op: ir.Operation) -> None:
        """The grid's extents along ``axes``: host constants."""
        index = ir.IndexType.get()
        for result, axis in zip(op.results, ir.DenseI16ArrayAttr(op.attributes["axes"])):
            extent = ir.IntegerAttr.get(index, self.grid.shape[axis])
            self.scalars[result] = self.create(arith.ConstantOp.OPERATION_NAME, results=[index], attributes={"value": extent}).result

    def index_constant(self, value: int) -> ir.Value:
        index = ir.IndexType.get()
        return self.create(arith.ConstantOp.OPERATION_NAME, results=[index], attributes={"value": ir.IntegerAttr.get(index, value)}).result

    def index_arith(self, name: str, lhs: ir.Value, rhs: ir.Value) -> ir.Value:
        return self.create(name, operands=[lhs, rhs], results=[ir.IndexType.get()]).result

    def device_index(self, op: ir.Operation) -> list[ir.Value]:
        """``process_linear_index``: ``hir.device_index`` over the whole mesh (devices are laid
        out row-major, so the position is the linear index); ``process_multi_index``: its
        coordinates on the requested grid axes, (linear / stride_k) mod extent_k on the host."""
        if op.name == shard.ProcessLinearIndexOp.OPERATION_NAME:
            return [self.create(DeviceIndexOp.OPERATION_NAME, results=[ir.IndexType.get()], attributes={"mesh": self.team}).result]
        return self.coordinates(list(ir.DenseI16ArrayAttr(op.attributes["axes"])) or list(range(self.grid.rank)))

    def coordinates(self, axes: list[int]) -> list[ir.Value]:
        """This device's coordinates on grid ``axes`` (host arithmetic on hir.device_index)."""
        linear = self.create(DeviceIndexOp.OPERATION_NAME, results=[ir.IndexType.get()], attributes={"mesh": self.team}).result
        coordinates = []
        for k in axes:
            stride = prod(self.grid.shape[k + 1 :])
            value = linear if stride == 1 else self.index_arith(arith.DivUIOp.OPERATION_NAME, linear, self.index_constant(stride))
            if k:  # the major axis needs no modulo
                value = self.index_arith(arith.RemUIOp.OPERATION_NAME, value, self.index_constant(self.grid.shape[k]))
            coordinates.append(value)
        return coordinates

    def neighbors(self, op: ir.Operation, device: list[ir.Value]) -> list[ir.Value]:
        """``neighbors_linear_indices on @g[%i, %j, ...] split_axes = [k]``: the linear indices
        of the devices before and after ``device`` along grid axis k, -1 past either edge
        (host index arithmetic; one split axis, as upstream's MPI lowering)."""
        axes = list(ir.DenseI16ArrayAttr(op.attributes["split_axes"]))
        if len(axes) != 1 or not 0 <= axes[0] < self.grid.rank:
            raise fail(op, f"has split axes {axes}; hir converts the neighbors along one axis of the {self.grid.rank}-D grid")
        k = axes[0]
        linear = None
        for axis, coordinate in enumerate(device):
            stride = prod(self.grid.shape[axis + 1 :])
            term = coordinate if stride == 1 else self.index_arith(arith.MulIOp.OPERATION_NAME, coordinate, self.index_constant(stride))
            linear = term if linear is None else self.index_arith(arith.AddIOp.OPERATION_NAME, linear, term)
        step = self.index_constant(prod(self.grid.shape[k + 1 :]))
        none = self.index_constant(-1)
        results = []
        for edge, name in ((0, arith.SubIOp.OPERATION_NAME), (self.grid.shape[k] - 1, arith.AddIOp.OPERATION_NAME)):
            at_edge = self.create(
                arith.CmpIOp.OPERATION_NAME,
                operands=[device[k], self.index_constant(edge)],
                results=[ir.IntegerType.get_signless(1)],
                attributes={"predicate": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 0)},
            ).result
            neighbor = self.index_arith(name, linear, step)
            results.append(self.create(arith.SelectOp.OPERATION_NAME, operands=[at_edge, none, neighbor], results=[ir.IndexType.get()]).result)
        return results

    def all_to_all(self, op: ir.Operation) -> None:
        """Split along split_axis, exchange, concatenate along concat_axis: globally, the value
        split along concat_axis becomes split along split_axis. Rewritten in the tensor program
        as ``shard.all_gather`` along concat_axis then ``shard.all_slice`` along split_axis
        (both converted as usual)."""
        source, result = op.operands[0], op.results[0]
        concat, split_dim = _index_attr(op, "concat_axis"), _index_attr(op, "split_axis")
        local = ir.RankedTensorType(self.arg_tensor_types.get(source, source.type))
        shape = list(local.shape)
        if not ir.ShapedType.is_dynamic_size(shape[concat]):
            shape[concat] *= self.grid.shape[self.grid_axis(op)]
        common = {"grid": op.attributes["grid"], "grid_axes": op.attributes["grid_axes"]}
        index = ir.IndexType.get()
        gathered = self.create(
            shard.AllGatherOp.OPERATION_NAME,
            operands=[source],
            results=[ir.RankedTensorType.get(shape, local.element_type)],
            attributes={**common, "gather_axis": ir.IntegerAttr.get(index, concat)},
        )
        sliced = self.create(
            shard.AllSliceOp.OPERATION_NAME,
            operands=[gathered.result],
            results=[result.type],
            attributes={**common, "slice_axis": ir.IntegerAttr.get(index, split_dim)},
        )
        result.replace_all_uses_with(sliced.result)
        self.rewritten[self.position] = [sliced, gathered]
        self.all_gather(gathered)
        self.all_slice(sliced)
