"""Sharding an imported program from DTensor-style placements on a device mesh (1-D, or
multi-D with one placement per mesh dimension).

Inputs and state entries get ``Shard(dim)`` / ``Replicate()`` placements (given, or read
from the DTensor parameters of a module parallelized with ``torch.distributed.tensor.parallel``);
every buffer of the program then carries ``#hir.shard<mesh, dim>`` (``-1``: replicated; on a
multi-D mesh one split per mesh axis). Intermediates are placed op by op with DTensor's rules
(:mod:`hir.frontend.placement_rules`), mesh axis by mesh axis:

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

Contractions over split dims (partial sums) and sequence parallelism's stream-parallel
forms: :mod:`hir.frontend.contractions`.

Inside kernel segments torch ops compute on device-local shards: the
``unrealized_conversion_cast`` from the buffer's (global) tensor type yields the local
``!torch.vtensor`` shape, and the ops inside carry local shapes.
"""

from typing import Any, Optional, Sequence

import torch
from torch_mlir import ir

from hir.core import HirError
from hir.dialect import BinaryOp, LinearOp, MatmulOp, SetOp, Sharding
from hir.dialect.sharding import sharding_of
from hir.frontend import placement_rules as rules
from hir.frontend.contractions import ContractionPlacer, rank_of, vtensor
from hir.frontend.partition import ComputeSpec, Partitioner, Placer, buffer_type, is_tensor, tensor_info
from hir.frontend.segment_rules import NoRule, localize, propagate
from hir.interpreter.backends.process_groups import world
from hir.interpreter.inputs import shard



def dtensor_placements(module: torch.nn.Module) -> dict:
    """``{state name: (placement, mesh devices)}`` for the DTensor entries of ``module``. A
    parameter on a sub-mesh (``parallelize_module(m, mesh2d["tp"], plan)``) is placed on
    the root mesh: its placement on the sub-mesh's dimensions, replicated on the others."""
    try:
        from torch.distributed.tensor import DTensor, Replicate
    except ImportError:  # pragma: no cover - torch without distributed
        return {}
    found = {}
    for name, tensor in module.state_dict(keep_vars=True).items():
        if isinstance(tensor, DTensor):
            mesh, placements = tensor.device_mesh, tuple(tensor.placements)
            root = mesh._get_root_mesh() if hasattr(mesh, "_get_root_mesh") else mesh
            if root is not mesh and root.ndim > mesh.ndim:
                names = list(root.mesh_dim_names or ())
                if not mesh.mesh_dim_names or any(n not in names for n in mesh.mesh_dim_names):
                    raise HirError(f"error: the DTensor '{name}' lives on a sub-mesh whose dimensions {mesh.mesh_dim_names} are not named dimensions of its root mesh {names}")
                full = [Replicate()] * root.ndim
                for dim_name, placement in zip(mesh.mesh_dim_names, placements):
                    full[names.index(dim_name)] = placement
                mesh, placements = root, tuple(full)
            layout = mesh.mesh
            found[name] = (placements, tuple(map(tuple, layout.tolist())) if layout.dim() > 1 else tuple(layout.tolist()))
    return found


def _splits(name: str, placement: Any, shape: Optional[list[int]], grid: "DeviceGrid") -> tuple:
    """The split dim per mesh axis (None: replicated) of a DTensor-style placement: one
    ``Shard(dim)`` / ``Replicate()`` on a 1-D mesh, a tuple of one per mesh axis otherwise;
    validated against ``shape`` when that is known."""
    if placement is None:
        entries: tuple = (None,) * grid.rank
    else:
        entries = tuple(placement) if isinstance(placement, (tuple, list)) else (placement,)
    if len(entries) != grid.rank:
        raise HirError(f"error: placement of '{name}' has {len(entries)} mesh dimension(s); the mesh {grid.describe()} has {grid.rank} (give one Shard/Replicate per mesh dimension)")
    out = []
    for entry in entries:
        if entry is None or (hasattr(entry, "is_replicate") and entry.is_replicate()):
            out.append(None)
            continue
        dim = getattr(entry, "dim", None)
        if dim is None or not (hasattr(entry, "is_shard") and entry.is_shard()):
            raise HirError(f"error: placement {entry} of '{name}' is not Shard(dim) or Replicate()")
        if shape is not None:
            if not -len(shape) <= dim < len(shape):
                raise HirError(f"error: placement Shard({dim}) of '{name}' is out of range for its shape {list(shape)}")
            dim %= len(shape)
        out.append(dim)
    if shape is not None:
        for dim in {d for d in out if d is not None}:
            devices = grid.sharding(out).parts(dim)
            if out.count(dim) > 1:
                raise HirError(f"error: placement of '{name}' splits dimension {dim} over several mesh dimensions; hir splits a dimension over one")
            if shape[dim] % devices:
                raise HirError(f"error: placement Shard({dim}) of '{name}': dimension {dim} of extent {shape[dim]} does not divide over {devices} devices")
    return tuple(out)


class DeviceGrid:
    """The mesh of an import: its devices (row-major) and shape."""

    def __init__(self, devices: Sequence[int], shape: Sequence[int]) -> None:
        self.devices, self.shape = tuple(devices), tuple(shape)
        self.rank = len(self.shape)

    def describe(self) -> str:
        return f"{list(self.devices)} of shape {list(self.shape)}" if self.rank > 1 else str(list(self.devices))

    def sharding(self, splits: Sequence[Optional[int]]) -> Sharding:
        # On one device along a mesh axis a split is the whole: replicated (nothing to communicate).
        return Sharding.of(self.devices, self.shape, [s if n > 1 else None for n, s in zip(self.shape, splits)])


def _grid(mesh: Any) -> DeviceGrid:
    """A 1-D list of ranks, a nested list (a multi-D mesh, row-major) or a DeviceMesh."""
    try:
        layout = mesh.mesh if hasattr(mesh, "mesh") else torch.as_tensor(mesh)
    except (TypeError, ValueError, RuntimeError) as err:  # None entries, ragged lists, ...
        raise HirError(f"error: the device mesh {mesh!r} is not a list of device ids: {err}") from None
    if layout.dim() == 0:
        raise HirError(f"error: the device mesh {mesh!r} is not a list of device ids (a 1-D mesh is a list: [0, 1, ...])")
    if layout.numel() == 0:
        raise HirError(f"error: the device mesh {mesh} is empty")
    if layout.dtype.is_floating_point or layout.dtype.is_complex or layout.dtype == torch.bool:
        raise HirError(f"error: the device mesh {mesh!r} is not a list of device ids (integers)")
    devices = tuple(int(d) for d in layout.flatten().tolist())
    if len(set(devices)) != len(devices) or min(devices) < 0:
        raise HirError(f"error: the device mesh {list(devices)} must list distinct non-negative ranks")
    return DeviceGrid(devices, tuple(layout.shape))


def mesh_placer(torch_func, names: list[str], num_inputs: int, mesh: Any, placements: dict) -> Placer:
    """The placer of an import: plain (no mesh) or :class:`MeshPlacer`."""
    if mesh is None and not placements:
        return Placer()
    if mesh is None:
        raise HirError("error: placements were given without a mesh (pass mesh=[0, 1, ...] or a DeviceMesh)")
    grid = _grid(mesh)
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():  # else the check waits for the run
        _check_world(len(grid.devices), dist.get_world_size())
    return MeshPlacer(torch_func, names, num_inputs, grid, placements)


class MeshPlacer(ContractionPlacer, Placer):
    """Places the values of one imported function on a mesh, mesh axis by mesh axis (see the
    module docstring); a value's placement is its split dim per mesh axis."""

    def __init__(self, torch_func, names: list[str], num_inputs: int, grid: DeviceGrid, placements: dict) -> None:
        self.grid = grid
        self.mesh = grid.devices
        self.replicated = (None,) * grid.rank
        args = list(torch_func.regions[0].blocks[0].arguments)
        arg_names = list(names) + [f"input{i}" for i in range(num_inputs)]
        num_results = len(ir.FunctionType(ir.TypeAttr(torch_func.attributes["function_type"]).value).results)
        unknown = sorted(str(k) for k in set(placements) - set(arg_names) - {f"output{i}" for i in range(num_results)})
        if unknown:
            raise HirError(f"error: placements name {', '.join(unknown)}, which are neither state entries nor inputs (input0, ...) nor outputs (output0, ...); the module has {num_inputs} input(s) and {num_results} output(s)")
        self.split: dict = {}  # torch value -> split dim per mesh axis
        self.arg_splits: list[tuple] = []
        for name, arg in zip(arg_names, args):
            splits = _splits(name, placements.get(name), tensor_info(arg.type)[0], grid)
            self.split[arg] = splits
            self.arg_splits.append(splits)
        self.output_splits = {int(k[len("output"):]): _splits(k, v, None, grid) for k, v in placements.items() if k.startswith("output")}
        self.copies: dict = {}  # (torch value, splits) -> resharded buffer

    # ----- types ------------------------------------------------------------------------
    def sharding(self, splits: Sequence[Optional[int]]) -> ir.Attribute:
        return self.grid.sharding(splits).attr()

    def memref_type(self, value: ir.Value) -> ir.MemRefType:
        return buffer_type(value.type, self.sharding(self.split.get(value, self.replicated)))

    def local_shape(self, shape: Sequence[int], splits: Sequence[Optional[int]]) -> list[int]:
        return self.grid.sharding(splits).local_shape(shape)

    def local_type(self, value: ir.Value) -> ir.Type:
        shape, dtype = tensor_info(value.type)
        return vtensor(self.local_shape(shape, self.split.get(value, self.replicated)), dtype)

    def read_type(self, value: ir.Value, buffer: ir.Value) -> ir.Type:
        shape, dtype = tensor_info(value.type)
        return vtensor(sharding_of(buffer, "segment input").local_shape(shape), dtype)

    # ----- resharding -------------------------------------------------------------------
    def placed(self, part: Partitioner, value: ir.Value, splits: tuple, at: ir.Operation) -> ir.Value:
        """The buffer of ``value`` placed as ``splits`` (an ``hir.set`` when it differs)."""
        if self.split.get(value, self.replicated) == splits:
            return part.buffer_of(value, at)
        key = (value, splits)
        if key not in self.copies:
            buf = part.new_buffer(buffer_type(value.type, self.sharding(splits)), at.location, value)
            with part.in_main(at.location):
                SetOp.emit(part.buffer_of(value, at), buf)
            self.copies[key] = buf
        return self.copies[key]

    def placed_as(self, part: Partitioner, value: ir.Value, like: ir.Value, at: ir.Operation) -> ir.Value:
        return self.placed(part, value, self.split.get(like, self.replicated), at)

    # ----- compute ops ------------------------------------------------------------------
    def emit_compute(self, part: Partitioner, op: ir.Operation, spec: ComputeSpec) -> bool:
        values = spec.inputs + spec.trailing
        per_axis = [self._rule(op, spec, k) for k in range(self.grid.rank)]
        partial = [k for k, rule in enumerate(per_axis) if rule == rules.PARTIAL]
        if len(partial) > 1:
            raise part.error(op, f"contracts a dimension split over mesh axes {partial}; split a contraction over one mesh axis")
        if partial:
            self._partial(part, op, spec, partial[0], per_axis)
            return True
        operand_splits = [tuple(rule[0][i] for rule in per_axis) for i in range(len(values))]
        self.split[op.results[0]] = tuple(rule[1] for rule in per_axis)
        if self._gathers_rows(spec, operand_splits[0]):
            self._stream_gathered(part, op, spec, operand_splits)
            return True
        bufs = [self.placed(part, v, s, op) for v, s in zip(values, operand_splits)]
        part.plain_compute(op, spec, bufs[: len(spec.inputs)], bufs[len(spec.inputs):])
        return True

    def _rule(self, op: ir.Operation, spec: ComputeSpec, k: int) -> rules.Rule:
        split = [self.split.get(v, self.replicated)[k] for v in spec.inputs]
        if spec.op_class is LinearOp:
            return rules.linear(split[0], split[1], rank_of(spec.inputs[0]), bool(spec.trailing))
        if spec.op_class is MatmulOp:
            return rules.matmul(split[0], split[1], rank_of(spec.inputs[0]), rank_of(spec.inputs[1]), len(tensor_info(op.results[0].type)[0]))
        if spec.op_class is BinaryOp:
            return rules.binary(split, [tensor_info(v.type)[0] for v in spec.inputs], len(tensor_info(op.results[0].type)[0]))
        return rules.reduction(split[0], spec.options["axes"])

    # ----- segments ---------------------------------------------------------------------
    def segment_inputs(self, part: Partitioner, run: list, inputs: list, outputs: list) -> list:
        """Local shards in when every op of the segment has a local rule on every mesh axis
        (:mod:`hir.frontend.segment_rules`), else replicated copies (DTensor's fallback)."""
        try:
            found = [propagate(run, {v: self.split.get(v, self.replicated)[k] for v in inputs}, n) for k, n in enumerate(self.grid.shape)]
        except NoRule:
            found = None
        for op in run:  # every tensor inside gets its placement (for local types)
            for r in op.results:
                if is_tensor(r):
                    self.split[r] = self.replicated if found is None else tuple(f[r] for f in found)
        return [self.placed(part, v, self.replicated if found is None else self.split.get(v, self.replicated), run[0]) for v in inputs]

    def localize(self, old: ir.Operation, new: ir.Operation, ip: ir.InsertionPoint) -> None:
        results = [r for r in old.results if is_tensor(r)]
        if results:
            for split, n in zip(self.split.get(results[0], self.replicated), self.grid.shape):
                localize(old, new, split, n, ip)

    def output_buffer(self, part: Partitioner, value: ir.Value, index: int, at: ir.Operation) -> ir.Value:
        if index in self.output_splits:
            return self.placed(part, value, self.output_splits[index], at)
        return part.buffer_of(value, at)

    # ----- run-time arguments -----------------------------------------------------------
    def local_arguments(self, full: list, rank: Optional[int]) -> list:
        this_rank, world_size = world()
        _check_world(len(self.mesh), world_size)
        if rank is None:
            rank = this_rank
        if rank not in self.mesh:
            return [None] * len(full)
        return [shard(tensor, self.grid.sharding(splits), rank) for tensor, splits in zip(full, self.arg_splits)]


def _check_world(devices: int, world_size: int) -> None:
    if devices != world_size:
        raise HirError(f"error: the device mesh has {devices} devices but the run has {world_size} rank(s); the mesh size must be the world size")
