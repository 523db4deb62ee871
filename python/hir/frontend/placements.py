"""Sharding an imported program from DTensor-style placements on a 1-D device mesh.

Inputs and state entries get ``Shard(dim)`` / ``Replicate()`` placements (given, or read
from the DTensor parameters of a module parallelized with ``torch.distributed.tensor.parallel``);
every buffer of the program then carries ``#hir.shard<mesh, dim>`` (``-1``: replicated).
Intermediates are placed op by op with DTensor's rules:

* linear / matmul: replicated input x column-split weight -> output split on its last axis
  (ColwiseParallel); row-split batch/M operand x replicated weight -> split rows; split
  contraction axis on both sides (RowwiseParallel) -> a partial sum, see below.
* binary: equal placements stay; a split operand with a replicated one broadcast along the
  split axis stays split; otherwise the replicated side is split (``hir.set``).
* reduction: a kept split axis stays split; a reduction over the (outermost) split axis is
  an allreduce (``hir.reduction`` to a replicated buffer).
* kernel segments: a segment whose every op has a local rule (pointwise, view / reshape,
  transpose / permute, softmax and layer_norm off the split dim; see
  :mod:`hir.frontend.segment_rules`) runs on the local shards, its view sizes rewritten to
  local ones; any other segment reads replicated copies (``hir.set``, an allgather), as
  DTensor's fallback redistributes to ``Replicate()``.

Partial sums (nvFuser's reduction over a device-split axis): the contraction runs on the
local shards into a buffer with a leading mesh axis, ``[D, ..., N]`` split on axis 0, and
a ``hir.reduction`` sum over axis 0 into the result makes it whole: replicated (allreduce),
or split on axis 0 (reduce-scatter) when the consumer wants that (an output placement
``Shard(0)``, or a binary op with an operand split on axis 0, as in sequence parallelism).
The operands reach that layout through small local kernel segments (``unsqueeze``, and a
``transpose`` of the weight). hir-convert-to-communication then turns every resharding
``hir.set`` / ``hir.reduction`` into collectives.

Inside kernel segments torch ops compute on device-local shards: the
``unrealized_conversion_cast`` from the buffer's (global) tensor type yields the local
``!torch.vtensor`` shape, and the ops inside carry local shapes.
"""

from typing import Any, Optional, Sequence

import torch
from torch_mlir import ir
from torch_mlir.dialects import func
from torch_mlir.dialects import torch as torch_dialect

from hir.core import HirError
from hir.dialect import BinaryOp, LinearOp, MatmulOp, ReductionOp, SetOp, Sharding
from hir.frontend.partition import ComputeSpec, Partitioner, Placer, buffer_type, compute_spec, is_tensor, tensor_info
from hir.frontend.segment_rules import NoRule, localize, propagate
from hir.interpreter.backends.process_groups import world

_UNSQUEEZE = torch_dialect.AtenUnsqueezeOp.OPERATION_NAME
_TRANSPOSE = torch_dialect.AtenTransposeIntOp.OPERATION_NAME


def dtensor_placements(module: torch.nn.Module) -> dict:
    """``{state name: (placement, mesh devices)}`` for the DTensor entries of ``module``."""
    try:
        from torch.distributed.tensor import DTensor
    except ImportError:  # pragma: no cover - torch without distributed
        return {}
    found = {}
    for name, tensor in module.state_dict(keep_vars=True).items():
        if isinstance(tensor, DTensor):
            found[name] = (tuple(tensor.placements), tuple(tensor.device_mesh.mesh.flatten().tolist()))
    return found


def _split_dim(name: str, placement: Any, shape: Optional[list[int]], devices: int) -> Optional[int]:
    """The split dim of a DTensor-style placement (None: replicated); validates it against
    ``shape`` when that is known."""
    if isinstance(placement, (tuple, list)):
        if len(placement) != 1:
            raise HirError(f"error: placement of '{name}' has {len(placement)} mesh dimensions; only 1-D meshes are supported")
        (placement,) = placement
    if placement is None or (hasattr(placement, "is_replicate") and placement.is_replicate()):
        return None
    dim = getattr(placement, "dim", None)
    if dim is None or not (hasattr(placement, "is_shard") and placement.is_shard()):
        raise HirError(f"error: placement {placement} of '{name}' is not Shard(dim) or Replicate()")
    if shape is None:
        return dim
    if not -len(shape) <= dim < len(shape):
        raise HirError(f"error: placement Shard({dim}) of '{name}' is out of range for its shape {list(shape)}")
    dim %= len(shape)
    if shape[dim] % devices:
        raise HirError(f"error: placement Shard({dim}) of '{name}': dimension {dim} of extent {shape[dim]} does not divide over {devices} devices")
    return dim


def _mesh_devices(mesh: Any) -> tuple[int, ...]:
    if hasattr(mesh, "mesh"):  # torch.distributed.DeviceMesh
        if mesh.mesh.dim() != 1:
            raise HirError(f"error: the device mesh has shape {list(mesh.mesh.shape)}; only 1-D meshes are supported")
        return tuple(mesh.mesh.tolist())
    devices = tuple(int(d) for d in mesh)
    if not devices or len(set(devices)) != len(devices) or min(devices) < 0:
        raise HirError(f"error: the device mesh {list(devices)} must list distinct non-negative ranks")
    return devices


def mesh_placer(torch_func, names: list[str], num_inputs: int, mesh: Any, placements: dict) -> Placer:
    """The placer of an import: plain (no mesh) or :class:`MeshPlacer`."""
    if mesh is None and not placements:
        return Placer()
    if mesh is None:
        raise HirError("error: placements were given without a mesh (pass mesh=[0, 1, ...] or a DeviceMesh)")
    devices = _mesh_devices(mesh)
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():  # else the check waits for the run
        _check_world(len(devices), dist.get_world_size())
    return MeshPlacer(torch_func, names, num_inputs, devices, placements)


class MeshPlacer(Placer):
    """Places the values of one imported function on a 1-D mesh (see the module docstring)."""

    def __init__(self, torch_func, names: list[str], num_inputs: int, mesh: tuple[int, ...], placements: dict) -> None:
        self.mesh = mesh
        self.devices = len(mesh)
        args = list(torch_func.regions[0].blocks[0].arguments)
        arg_names = list(names) + [f"input{i}" for i in range(num_inputs)]
        unknown = sorted(set(placements) - set(arg_names) - {f"output{i}" for i in range(8)})
        if unknown:
            raise HirError(f"error: placements name {', '.join(unknown)}, which are neither state entries nor inputs (input0, ...) nor outputs (output0, ...)")
        self.split: dict = {}  # torch value -> split dim (None: replicated)
        self.arg_splits: list[Optional[int]] = []
        for name, arg in zip(arg_names, args):
            shape = tensor_info(arg.type)[0]
            dim = _split_dim(name, placements.get(name), shape, self.devices)
            self.split[arg] = dim
            self.arg_splits.append(dim)
        self.output_splits = {int(k[len("output"):]): _split_dim(k, v, None, self.devices) for k, v in placements.items() if k.startswith("output")}
        self.copies: dict = {}  # (torch value, split) -> resharded buffer

    # ----- types ------------------------------------------------------------------------
    def sharding(self, split: Optional[int]) -> ir.Attribute:
        # On one device a split is the whole: replicated (nothing to communicate).
        return Sharding(self.mesh, split if self.devices > 1 else None).attr()

    def memref_type(self, value: ir.Value) -> ir.MemRefType:
        return buffer_type(value.type, self.sharding(self.split.get(value)))

    def local_type(self, value: ir.Value) -> ir.Type:
        return _vtensor(_local(tensor_info(value.type)[0], self.split.get(value), self.devices), tensor_info(value.type)[1])

    # ----- resharding -------------------------------------------------------------------
    def placed(self, part: Partitioner, value: ir.Value, split: Optional[int], at: ir.Operation) -> ir.Value:
        """The buffer of ``value`` with split ``split`` (an ``hir.set`` when it differs)."""
        if self.split.get(value) == split:
            return part.buffer_of(value, at)
        key = (value, split)
        if key not in self.copies:
            buf = part.new_buffer(buffer_type(value.type, self.sharding(split)), at.location)
            with part.in_main(at.location):
                SetOp.emit(part.buffer_of(value, at), buf)
            self.copies[key] = buf
        return self.copies[key]

    # ----- compute ops ------------------------------------------------------------------
    def emit_compute(self, part: Partitioner, op: ir.Operation, spec: ComputeSpec) -> bool:
        rule = {LinearOp: self._linear, MatmulOp: self._matmul, BinaryOp: self._binary, ReductionOp: self._reduction}[spec.op_class]
        values = spec.inputs + spec.trailing
        splits = rule(op, spec)
        if splits == "partial":
            self._partial(part, op, spec)
            return True
        operand_splits, out_split = splits
        bufs = [self.placed(part, v, s, op) for v, s in zip(values, operand_splits)]
        self.split[op.results[0]] = out_split
        part.plain_compute(op, spec, bufs[: len(spec.inputs)], bufs[len(spec.inputs):])
        return True

    def _replicated(self, values) -> tuple:
        return [None] * len(values), None

    def _linear(self, op, spec):
        x, w = spec.inputs
        px, pw = self.split[x], self.split[w]
        last = _rank(x) - 1
        has_bias = bool(spec.trailing)
        if pw == 0:  # ColwiseParallel (a split input is gathered first, as in sequence parallelism)
            return [None, 0] + ([0] if has_bias else []), last
        if px == last and pw == 1:  # RowwiseParallel
            return "partial"
        if px is not None and px < last and pw is None:  # split rows (data / sequence parallel)
            return [px, None] + ([None] if has_bias else []), px
        return self._replicated(spec.inputs + spec.trailing)

    def _matmul(self, op, spec):
        a, b = spec.inputs
        pa, pb, ra, rb = self.split[a], self.split[b], _rank(a), _rank(b)
        out_rank = len(tensor_info(op.results[0].type)[0])
        if ra < 2 or rb < 2:
            return self._replicated(spec.inputs)
        if pa == ra - 2 and pb is None:
            return [pa, None], out_rank - 2
        if pb == rb - 1:
            return [None, pb], out_rank - 1
        if pa == ra - 1 and pb == rb - 2:
            return "partial"
        if pa is not None and pa < ra - 2 and ra == rb and pa == pb:
            return [pa, pb], pa + out_rank - ra
        return self._replicated(spec.inputs)

    def _binary(self, op, spec):
        a, b = spec.inputs
        out_shape = tensor_info(op.results[0].type)[0]
        out_rank = len(out_shape)
        to_out = [None if self.split[v] is None else self.split[v] + out_rank - _rank(v) for v in (a, b)]
        if to_out[0] == to_out[1]:
            return [self.split[a], self.split[b]], to_out[0]
        if None in to_out:
            k = to_out[0] if to_out[0] is not None else to_out[1]
            splits = []
            for v in (a, b):
                own = k - (out_rank - _rank(v))
                broadcast = own < 0 or tensor_info(v.type)[0][own] == 1
                splits.append(None if broadcast else own)
            return splits, k
        return self._replicated(spec.inputs)

    def _reduction(self, op, spec):
        (x,) = spec.inputs
        px = self.split[x]
        axes = spec.options["axes"]
        if px is None:
            return [None], None
        if px not in axes:
            return [px], px - sum(1 for a in axes if a < px)
        if axes == [px] and px == 0:
            return [px], None  # an allreduce
        return [None], None

    # ----- partial sums -----------------------------------------------------------------
    def _partial(self, part: Partitioner, op: ir.Operation, spec: ComputeSpec) -> None:
        """A contraction over split axes: local products into ``[D, ..., N]`` split on axis 0,
        then a sum over axis 0 into the result (allreduce or reduce-scatter)."""
        x, w = spec.inputs
        loc = op.location
        linear = spec.op_class is LinearOp
        x_outer = self._outer(part, x, [], op)
        # Linear's weight [N, K] is used transposed; the leading mesh axis then broadcasts
        # against x's batch axes (size-1 axes in between).
        batch = _rank(x) - 2
        w_outer = self._outer(part, w, [1] * batch, op, transpose=linear)
        out = op.results[0]
        shape, dtype = tensor_info(out.type)
        partial_type = buffer_type(_vtensor([self.devices] + shape, dtype), self.sharding(0))
        partial = part.new_buffer(partial_type, loc)
        with part.in_main(loc):
            MatmulOp.emit(x_outer, w_outer, partial)
        target = self._partial_target(out)
        if linear and spec.trailing and target is not None and target == len(shape) - 1:
            target = None
        self.split[out] = target
        summed = part.new_buffer(buffer_type(out.type, self.sharding(target)), loc) if spec.trailing else part.alloc(out, loc)
        with part.in_main(loc):
            ReductionOp.emit(partial, summed, "sum", [0])
        if spec.trailing:  # bias, after the sum (added once, not once per shard)
            (bias,) = spec.trailing
            bias_buf = self.placed(part, bias, None, op)
            result = part.alloc(out, loc)
            with part.in_main(loc):
                BinaryOp.emit(summed, bias_buf, result, "add")

    def _partial_target(self, out: ir.Value) -> Optional[int]:
        """Where the consumer wants the sum: split on axis 0 for a requested ``Shard(0)``
        output or an add with a row-split operand (sequence parallelism); else replicated."""
        for use in out.uses:
            user = use.owner if isinstance(use.owner, ir.Operation) else use.owner.operation
            if user.name == func.ReturnOp.OPERATION_NAME:
                index = list(user.operands).index(out)
                if self.output_splits.get(index) == 0:
                    return 0
            spec = compute_spec(user)
            if spec is not None and spec.op_class is BinaryOp:
                other = [v for v in spec.inputs if v != out]
                if other and self.split.get(other[0]) == 0 and _rank(other[0]) == _rank(out):
                    return 0
        return None

    def _outer(self, part: Partitioner, value: ir.Value, ones: list, op: ir.Operation, transpose: bool = False) -> ir.Value:
        """``value``'s local shard with the mesh axis in front, as a ``[D, *ones, ...]``
        buffer split on axis 0 (a local kernel segment: transpose, unsqueeze)."""
        shape, dtype = tensor_info(value.type)
        local = _local(shape, self.split[value], self.devices)
        if transpose:
            local = [local[1], local[0]]
        local_out = [1] * (1 + len(ones)) + local
        global_out = [self.devices] + ones + local
        out_type = buffer_type(_vtensor(global_out, dtype), self.sharding(0))
        out = part.new_buffer(out_type, op.location)

        def body(values: list, ip: ir.InsertionPoint) -> list:
            with ip, op.location:
                v = values[0]
                current = list(_local(shape, self.split[value], self.devices))
                if transpose:
                    current = [current[1], current[0]]
                    v = _torch_op(_TRANSPOSE, [v, _int(0), _int(1)], _vtensor(current, dtype))
                for _ in range(1 + len(ones)):
                    current = [1] + current
                    v = _torch_op(_UNSQUEEZE, [v, _int(0)], _vtensor(current, dtype))
                assert current == local_out
                return [v]

        part.kernel([part.buffer_of(value, op)], [out], [self.local_type(value)], body, op.location)
        return out

    # ----- segments ---------------------------------------------------------------------
    def segment_inputs(self, part: Partitioner, run: list, inputs: list, outputs: list) -> list:
        """Local shards in when every op of the segment has a local rule
        (:mod:`hir.frontend.segment_rules`), else replicated copies (DTensor's fallback)."""
        try:
            found = propagate(run, {v: self.split.get(v) for v in inputs}, self.devices)
        except NoRule:
            found = None
        for op in run:  # every tensor inside gets its placement (for local types)
            for r in op.results:
                if is_tensor(r):
                    self.split[r] = None if found is None else found[r]
        return [self.placed(part, v, None if found is None else self.split.get(v), run[0]) for v in inputs]

    def localize(self, old: ir.Operation, new: ir.Operation, ip: ir.InsertionPoint) -> None:
        results = [r for r in old.results if is_tensor(r)]
        if results:
            localize(old, new, self.split.get(results[0]), self.devices, ip)

    def output_buffer(self, part: Partitioner, value: ir.Value, index: int, at: ir.Operation) -> ir.Value:
        if index in self.output_splits:
            return self.placed(part, value, self.output_splits[index], at)
        return part.buffer_of(value, at)

    # ----- run-time arguments -----------------------------------------------------------
    def local_arguments(self, full: list, rank: Optional[int]) -> list:
        this_rank, world_size = world()
        _check_world(self.devices, world_size)
        if rank is None:
            rank = this_rank
        if rank not in self.mesh:
            return [None] * len(full)
        index = self.mesh.index(rank)
        return [t if s is None else t.chunk(self.devices, s)[index].contiguous() for t, s in zip(full, self.arg_splits)]


def _check_world(devices: int, world_size: int) -> None:
    if devices != world_size:
        raise HirError(f"error: the device mesh has {devices} devices but the run has {world_size} rank(s); the mesh size must be the world size")


def _rank(value: ir.Value) -> int:
    return len(tensor_info(value.type)[0])


def _local(shape: Sequence[int], split: Optional[int], devices: int) -> list[int]:
    out = list(shape)
    if split is not None:
        out[split] //= devices
    return out


def _vtensor(shape: Sequence[int], dtype: str) -> ir.Type:
    return ir.Type.parse(f"!torch.vtensor<[{','.join(str(d) for d in shape)}],{dtype}>")


def _int(value: int) -> ir.Value:
    i64 = ir.IntegerType.get_signless(64)
    return ir.Operation.create(torch_dialect.ConstantIntOp.OPERATION_NAME, results=[ir.Type.parse("!torch.int")], attributes={"value": ir.IntegerAttr.get(i64, value)}).result


def _torch_op(name: str, operands: list, result: ir.Type) -> ir.Value:
    return ir.Operation.create(name, results=[result], operands=operands).result
