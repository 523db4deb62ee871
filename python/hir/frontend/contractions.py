"""How the PyTorch frontend places contractions over device-split dims, mixed into
:class:`hir.frontend.placements.MeshPlacer` (whose placement state and resharding it uses).

Partial sums (nvFuser's reduction over a device-split axis): the contraction runs on the
local shards into a buffer with a leading mesh axis, ``[D, ..., N]`` split on axis 0, and
a ``hir.reduction`` sum over axis 0 into the result makes it whole: replicated (allreduce),
or split on axis 0 (reduce-scatter) when the consumer wants that (an output placement
``Shard(0)``, or a binary op with an operand split on axis 0, as in sequence parallelism).
The operands reach that layout through small local kernel segments (``unsqueeze``, and a
``transpose`` of the weight). hir-convert-to-communication then turns every resharding
``hir.set`` / ``hir.reduction`` into collectives.

Sequence parallelism (1-D meshes) comes out in nvFuser's stream-parallel form, which
hir-p2p-pipeline pipelines (plain hir-lower runs its collectives whole):

* a linear / matmul whose row-split input must be gathered views it as ``[D, T/D, ...]``
  (``hir.alias_reshape``), gathers it with a ``hir.set {stream_axis = 0}`` and runs with
  ``stream_axis = 0`` into ``[D, T/D, ..., N]``, viewed back as ``[T, ..., N]``;
* a partial sum scattered onto the rows computes its products as ``[S, D, T/S, ..., N]``
  (stream axis 0, mesh axis 1) and sums axis 1 into ``[S, T/S, ..., N]`` split on axis 0,
  both with ``stream_axis = 0``, viewed back as ``[T, ..., N]``.
"""

from typing import Optional, Sequence

from torch_mlir import ir
from torch_mlir.dialects import func
from torch_mlir.dialects import torch as torch_dialect

from hir.dialect import AliasReshapeOp, BinaryOp, LinearOp, MatmulOp, ReductionOp, SetOp
from hir.dialect.base import DYNAMIC, i64_attr
from hir.dialect.compute import STREAM_AXIS_ATTR
from hir.dialect.context import HirError
from hir.frontend.partition import LIST_CONSTRUCT, ComputeSpec, Partitioner, buffer_type, compute_spec, tensor_info, torch_int

_UNSQUEEZE = torch_dialect.AtenUnsqueezeOp.OPERATION_NAME
_TRANSPOSE = torch_dialect.AtenTransposeIntOp.OPERATION_NAME
_VIEW = torch_dialect.AtenViewOp.OPERATION_NAME


class ContractionPlacer:
    """Partial sums and the sequence-parallel stream forms. Needs the placer's ``grid``,
    ``split``, ``replicated``, ``output_splits``, ``sharding``, ``memref_type``,
    ``local_shape`` and ``placed``."""

    # ----- sequence parallelism: nvFuser's stream-parallel form ------------------------
    def _streams(self) -> bool:
        """The P2P form needs one team: a 1-D mesh of several devices."""
        return self.grid.rank == 1 and self.grid.shape[0] > 1

    def _gathers_rows(self, spec: ComputeSpec, wanted: tuple) -> bool:
        """A linear / matmul whose row-split input (split on an axis it does not contract:
        tokens ``[T, D]`` on 0, ``[B, S, D]`` on 1) must be gathered (the all-gather side
        of sequence parallelism)."""
        x = spec.inputs[0]
        (split,) = self.split.get(x, self.replicated) if self._streams() else (None,)
        return (spec.op_class in (LinearOp, MatmulOp) and rank_of(x) >= 2
                and (spec.op_class is LinearOp or rank_of(spec.inputs[1]) == 2)
                and split is not None and split < rank_of(x) - 1 and wanted == self.replicated)

    def _stream_gathered(self, part: Partitioner, op: ir.Operation, spec: ComputeSpec, operand_splits: list) -> None:
        """nvFuser's AG + matmul form: the row-split input ``[T, ...]`` is viewed as
        ``[D, T/D, ...]`` (split on axis 0), gathered by a ``hir.set`` with ``stream_axis = 0``
        and consumed by the op with ``stream_axis = 0``; its ``[D, T/D, ..., N]`` output is
        viewed back as ``[T, ..., N]``. hir-convert-to-communication makes the set an
        allgather streamed along its split axis, which hir-p2p-pipeline pipelines (hir-lower
        alone runs it whole, then the op's stream loop). An input split on an inner axis
        ``s`` (``[B, S, D]`` on 1) is transposed locally to lead with it, and the output
        transposed back (:meth:`_swapped`)."""
        loc, d = op.location, self.grid.shape[0]
        x, out = spec.inputs[0], op.results[0]
        x_shape, dtype = tensor_info(x.type)
        (lead,) = self.split[x]
        rows = self._swapped(part, part.buffer_of(x, op), x_shape, dtype, (lead,), lead, loc)
        x_shape = _swap(x_shape, lead)
        viewed = self._rows_view(part, rows, d, loc)
        gathered = part.new_buffer(buffer_type(vtensor(_rows_shape(x_shape, d), dtype), self.sharding(self.replicated)), loc)
        with part.in_main(loc):
            SetOp.emit(viewed, gathered).attributes[STREAM_AXIS_ATTR] = i64_attr(0)
        others = [self.placed(part, v, s, op) for v, s in zip(spec.inputs[1:] + spec.trailing, operand_splits[1:])]
        shape = _swap(tensor_info(out.type)[0], lead)
        (split,) = self.split[out]
        product = part.new_buffer(buffer_type(vtensor(_rows_shape(shape, d), dtype), self.sharding((None if split is None else split + 1,))), loc)
        with part.in_main(loc):
            args = [gathered, others[0], product] + others[1:]
            spec.op_class.emit(*args, **spec.options).attributes[STREAM_AXIS_ATTR] = i64_attr(0)
        part.buffers[out] = self._swapped(part, self._rows_collapsed(part, product, loc), shape, dtype, (split,), lead, loc)

    def _swapped(self, part: Partitioner, buf: ir.Value, shape: Sequence[int], dtype: str, splits: tuple, lead: int, loc: ir.Location) -> ir.Value:
        """``buf`` (global ``shape``, placed as ``splits``) with axes 0 and ``lead`` swapped,
        by a local kernel (a transpose on each device's shard); ``buf`` itself for lead 0."""
        if lead == 0:
            return buf
        moved = tuple(None if s is None else (lead if s == 0 else 0 if s == lead else s) for s in splits)
        out = part.new_buffer(buffer_type(vtensor(_swap(shape, lead), dtype), self.sharding(moved)), loc)
        local = self.local_shape(shape, splits)

        def body(values: list, ip: ir.InsertionPoint) -> list:
            with ip, loc:
                return [_torch_op(_TRANSPOSE, [values[0], torch_int(0), torch_int(lead)], vtensor(_swap(local, lead), dtype))]

        part.kernel([buf], [out], [vtensor(local, dtype)], body, loc)
        return out

    def _rows_view(self, part: Partitioner, rows: ir.Value, d: int, loc: ir.Location) -> ir.Value:
        """``[T, ...]`` split on axis 0 viewed as ``[D, T/D, ...]`` split on axis 0 (each
        device's rows are its slice of the new axis 0)."""
        t = ir.MemRefType(rows.type)
        with part.in_main(loc):
            return AliasReshapeOp.emit(rows, _rows_shape(list(t.shape), d), _rows_groups(t.rank))

    def _rows_collapsed(self, part: Partitioner, buf: ir.Value, loc: ir.Location) -> ir.Value:
        """The inverse view: ``[D, T/D, ...]`` back to ``[T, ...]`` (a split follows its axis)."""
        t = ir.MemRefType(buf.type)
        shape = [t.shape[0] * t.shape[1]] + list(t.shape[2:])
        with part.in_main(loc):
            return AliasReshapeOp.emit(buf, shape, _rows_groups(len(shape)))

    # ----- partial sums -----------------------------------------------------------------
    def _partial(self, part: Partitioner, op: ir.Operation, spec: ComputeSpec, k: int, per_axis: list) -> None:
        """A contraction over dims split on mesh axis ``k``: local products into
        ``[D, ..., N]`` split on axis 0 over ``k`` (the other mesh axes as their rules say),
        then a sum over axis 0 into the result (allreduce or reduce-scatter along ``k``)."""
        x, w = spec.inputs
        loc = op.location
        linear = spec.op_class is LinearOp
        others = [rule if j != k else None for j, rule in enumerate(per_axis)]

        def operand(i: int, value: ir.Value) -> tuple:
            own = self.split.get(value, self.replicated)
            return tuple(own[j] if j == k else others[j][0][i] for j in range(self.grid.rank))

        out = op.results[0]
        out_others = [None if j == k else others[j][1] for j in range(self.grid.rank)]
        shape, dtype = tensor_info(out.type)
        target = self._partial_target(out, k)
        if linear and spec.trailing and target is not None and target == len(shape) - 1:
            target = None
        self.split[out] = tuple(target if j == k else s for j, s in enumerate(out_others))
        d = self.grid.shape[k]
        # Scattered onto the rows on a 1-D mesh: nvFuser's matmul + reduce-scatter form,
        # streamed along the scatter axis (what hir-p2p-pipeline pipelines): the local
        # products as [S, D, T/S, ..., N] (stream axis 0, mesh axis 1) from x viewed as
        # [S, D, T/S, ..., K/D] and the weight as [1, D, 1.., K/D, N]; summed over axis 1.
        # Rows on an inner axis ([B, S, N] on 1) lead after a local transpose, and back.
        stream = target is not None and target < len(shape) - 1 and self._streams() and rank_of(x) == len(shape)
        row_axis = target if stream else 0
        shape = _swap(shape, row_axis)
        ones = [1] * (rank_of(x) - 2)
        x_outer = self._outer(part, x, operand(0, x), k, [], op, rows=d if stream else 0, row_axis=row_axis)
        # Linear's weight [N, K] is used transposed; the mesh axis then broadcasts against
        # x's batch axes (size-1 axes in between).
        w_outer = self._outer(part, w, operand(1, w), k, ones, op, transpose=linear, before=1 if stream else 0)
        if stream:
            partial_shape, lead, summed_shape = [d, d] + _rows_shape(shape, d)[1:], (1,), _rows_shape(shape, d)
        else:
            partial_shape, summed_shape = [d] + shape, shape
            lead = tuple(0 if j == k else (None if s is None else s + 1) for j, s in enumerate(out_others))
        partial = part.new_buffer(buffer_type(vtensor(partial_shape, dtype), self.sharding(lead)), loc, out)
        with part.in_main(loc):
            product = MatmulOp.emit(x_outer, w_outer, partial)
        summed = part.new_buffer(buffer_type(vtensor(summed_shape, dtype), self.sharding((0,) if stream else self.split[out])), loc, out)
        with part.in_main(loc):
            reduction = ReductionOp.emit(partial, summed, "sum", [1 if stream else 0])
            if stream:
                product.attributes[STREAM_AXIS_ATTR] = reduction.attributes[STREAM_AXIS_ATTR] = i64_attr(0)
        if stream:
            summed = self._swapped(part, self._rows_collapsed(part, summed, loc), shape, dtype, (0,), row_axis, loc)
        if not spec.trailing:
            part.buffers[out] = summed
        if spec.trailing:  # bias, after the sum (added once, not once per shard)
            (bias,) = spec.trailing
            bias_buf = self.placed(part, bias, self.replicated, op)
            result = part.alloc(out, loc)
            with part.in_main(loc):
                BinaryOp.emit(summed, bias_buf, result, "add")

    def _partial_target(self, out: ir.Value, k: int) -> Optional[int]:
        """Where the consumer wants the sum on mesh axis ``k``: split as a requested
        ``Shard(dim)`` output, or as the other operand of an add (sequence parallelism:
        ``[T, D]`` on axis 0, ``[B, S, D]`` on axis 1): a reduce-scatter; else replicated."""
        for use in out.uses:
            user = use.owner if isinstance(use.owner, ir.Operation) else use.owner.operation
            if user.name == func.ReturnOp.OPERATION_NAME:
                index = list(user.operands).index(out)
                if index in self.output_splits and self.output_splits[index][k] is not None:
                    return self.output_splits[index][k]
            spec = compute_spec(user)
            if spec is not None and spec.op_class is BinaryOp:
                other = [v for v in spec.inputs if v != out]
                if other and self.split.get(other[0], self.replicated)[k] is not None and rank_of(other[0]) == rank_of(out):
                    return self.split.get(other[0], self.replicated)[k]
        return None

    def _outer(self, part: Partitioner, value: ir.Value, splits: tuple, k: int, ones: list, op: ir.Operation, transpose: bool = False, before: int = 0, rows: int = 0, row_axis: int = 0) -> ir.Value:
        """``value``'s local shard (placed as ``splits``) with mesh axis ``k`` as a new axis,
        split over ``k`` (a local kernel segment: transpose, view, unsqueeze): a
        ``[1 * before, D, *ones, ...]`` buffer; with ``rows = S`` (1-D meshes) value's axis 0
        is viewed as ``[S, T/S]`` around the mesh axis: ``[S, D, T/S, ...]``, after axes 0 and
        ``row_axis`` are swapped."""
        shape, dtype = tensor_info(value.type)
        source = self.placed(part, value, splits, op)
        unmoved = self.local_shape(shape, splits)
        local = unmoved
        block = self.local_shape(shape, tuple(s if j == k else None for j, s in enumerate(splits)))
        moved = list(splits)
        if transpose or row_axis:
            swap = 1 if transpose else row_axis
            local, block = _swap(local, swap), _swap(block, swap)
            moved = [None if s is None else (swap if s == 0 else 0 if s == swap else s) for s in moved]
        if rows:  # [T, ...] -> [S, T/S, ...]: the mesh axis goes in at 1
            assert self.grid.rank == 1, "the row view is for 1-D meshes"
            local, block = [rows, local[0] // rows] + local[1:], [rows, block[0] // rows] + block[1:]
            lead, mesh_at = [rows, 1], 1
        else:
            lead, mesh_at = [1] * before + [1] + [1] * len(ones), before
        global_lead = list(lead)
        global_lead[mesh_at] = self.grid.shape[k]
        inserted = len(lead) - (1 if rows else 0)
        out_splits = [mesh_at if j == k else (None if s is None else s + inserted) for j, s in enumerate(moved)]
        out = part.new_buffer(buffer_type(vtensor(global_lead + (block[1:] if rows else block), dtype), self.sharding(out_splits)), op.location, value)
        local_out = lead + (local[1:] if rows else local)

        def body(values: list, ip: ir.InsertionPoint) -> list:
            with ip, op.location:
                v = values[0]
                current = list(unmoved)
                if transpose or row_axis:
                    current = _swap(current, 1 if transpose else row_axis)
                    v = _torch_op(_TRANSPOSE, [v, torch_int(0), torch_int(1 if transpose else row_axis)], vtensor(current, dtype))
                if rows:
                    current = local
                    sizes = _torch_op(LIST_CONSTRUCT, [torch_int(n) for n in current], ir.Type.parse("!torch.list<int>"))
                    v = _torch_op(_VIEW, [v, sizes], vtensor(current, dtype))
                    current = [rows, 1] + current[1:]
                    v = _torch_op(_UNSQUEEZE, [v, torch_int(1)], vtensor(current, dtype))
                else:
                    for _ in range(len(lead)):
                        current = [1] + current
                        v = _torch_op(_UNSQUEEZE, [v, torch_int(0)], vtensor(current, dtype))
                assert current == local_out
                return [v]

        part.kernel([source], [out], [vtensor(unmoved, dtype)], body, op.location)
        return out


def rank_of(value: ir.Value) -> int:
    return len(tensor_info(value.type)[0])


def vtensor(shape: Sequence[int], dtype: str) -> ir.Type:
    return ir.Type.parse(f"!torch.vtensor<[{','.join('?' if d == DYNAMIC else str(d) for d in shape)}],{dtype}>")


def _torch_op(name: str, operands: list, result: ir.Type) -> ir.Value:
    return ir.Operation.create(name, results=[result], operands=operands).result


def _swap(shape: Sequence[int], axis: int) -> list[int]:
    """``shape`` with axes 0 and ``axis`` swapped."""
    out = list(shape)
    out[0], out[axis] = out[axis], out[0]
    return out


def _rows_shape(shape: Sequence[int], d: int) -> list[int]:
    """``[T, ...]`` as ``[D, T/D, ...]``."""
    if shape[0] == DYNAMIC:
        raise HirError("error: sequence parallelism over a dynamic dim is not supported: mark the sequence dim static (or split another one)")
    return [d, shape[0] // d] + list(shape[1:])


def _rows_groups(rank: int) -> list[list[int]]:
    """The reassociation of ``[D, T/D, ...]`` onto ``[T, ...]`` (of the given rank)."""
    return [[0, 1]] + [[i + 1] for i in range(1, rank)]
