"""Sharding an imported program from DTensor-style placements on a device mesh (1-D, or
multi-D with one placement per mesh dimension): the placements given.

Inputs and state entries get ``Shard(dim)`` / ``Replicate()`` placements (given, or read
from the DTensor parameters of a module parallelized with ``torch.distributed.tensor.parallel``:
:mod:`hir.frontend.dtensors`); every buffer of the program then carries ``#hir.shard<mesh, dim>``
(``-1``: replicated; on a multi-D mesh one split per mesh axis), a
:class:`~hir.dialect.Sharding`. :func:`mesh_inputs` checks them; the
:class:`~hir.frontend.placer.Placer` then places every intermediate with the strategies of
:mod:`hir.frontend.strategies` (DTensor's rules), mesh axis by mesh axis; the partitioner
builds the program from that plan (contractions over split dims and sequence parallelism's
stream-parallel forms: :mod:`hir.frontend.contractions`).

Inside kernel segments torch ops compute on device-local shards: the
``unrealized_conversion_cast`` from the buffer's (global) tensor type yields the local
``!torch.vtensor`` shape, and the ops inside carry local shapes.

At run time :func:`shard_arguments` cuts the full arguments into this rank's shards.
"""

from collections.abc import Sequence
from typing import Any

import torch
from torch_mlir import ir

from hir.core import HirError
from hir.dialect import Sharding
from hir.frontend.torch_ir import shape_of
from hir.interpreter.backends.process_groups import world
from hir.interpreter.program import local_arguments


def _splits(name: str, placement: Any, shape: list[int] | None, grid: "DeviceGrid") -> tuple[tuple, dict]:
    """The split dim per mesh axis (None: replicated) of a DTensor-style placement: one
    ``Shard(dim)`` / ``Replicate()`` on a 1-D mesh, a tuple of one per mesh axis otherwise
    (on a mesh with size-1 dimensions, one per dimension or one per other dimension), and
    the pieces of packed splits (``_StridedShard(dim, split_factor)``: HF's
    ``packed_colwise``); validated against ``shape`` when that is known."""
    if placement is None:
        entries: tuple = (None,) * grid.rank
    else:
        entries = tuple(placement) if isinstance(placement, (tuple, list)) else (placement,)
    if len(entries) == len(grid.given) != grid.rank:
        entries = tuple(entries[i] for i in grid.kept)  # one device along the others: whole there
    if len(entries) != grid.rank:
        raise HirError(
            f"error: placement of '{name}' has {len(entries)} mesh dimension(s); the mesh "
            f"{grid.describe()} has {len(grid.given)} (give one Shard/Replicate per mesh dimension)"
        )
    out, packed = [], {}
    for entry in entries:
        if entry is None or (hasattr(entry, "is_replicate") and entry.is_replicate()):
            out.append(None)
            continue
        dim = getattr(entry, "dim", None)
        if dim is None or not (hasattr(entry, "is_shard") and entry.is_shard() or hasattr(entry, "split_factor")):
            raise HirError(f"error: placement {entry} of '{name}' is not Shard(dim) or Replicate()")
        if shape is not None:
            if not -len(shape) <= dim < len(shape):
                raise HirError(f"error: placement Shard({dim}) of '{name}' is out of range for its shape {list(shape)}")
            dim %= len(shape)
        out.append(dim)
        if getattr(entry, "split_factor", 1) > 1:
            packed[dim] = entry.split_factor
    if shape is not None:
        for dim in {d for d in out if d is not None}:
            devices = grid.sharding(out).parts(dim)
            if out.count(dim) > 1:
                raise HirError(
                    f"error: placement of '{name}' splits dimension {dim} over "
                    "several mesh dimensions; hir splits a dimension over one"
                )
            if shape[dim] % (devices * packed.get(dim, 1)):
                raise HirError(
                    f"error: placement Shard({dim}) of '{name}': dimension {dim} "
                    f"of extent {shape[dim]} does not divide over {devices} devices"
                    f"{f' in each of {packed[dim]} packed pieces' if dim in packed else ''}"
                )
    return tuple(out), packed


class DeviceGrid:
    """The mesh of an import: its devices (row-major) and shape, without the dimensions of
    one device (HF's ``tp_plan="auto"`` mesh ``(pp=1, fsdp=1, tp=N)`` is the 1-D mesh of its
    tp dimension): ``given`` is the shape as given, ``kept`` the dimensions kept."""

    def __init__(self, devices: Sequence[int], shape: Sequence[int]) -> None:
        self.devices, self.given = tuple(devices), tuple(shape)
        self.kept = tuple(i for i, n in enumerate(shape) if n > 1) or (len(shape) - 1,)
        self.shape = tuple(self.given[i] for i in self.kept)
        self.rank = len(self.shape)

    def describe(self) -> str:
        return f"{list(self.devices)} of shape {list(self.given)}" if len(self.given) > 1 else str(list(self.devices))

    def sharding(self, splits: Sequence[int | None], packed: dict[int, int] | None = None) -> Sharding:
        # On one device along a mesh axis a split is the whole: replicated (nothing to communicate).
        kept = [s if n > 1 else None for n, s in zip(self.shape, splits)]
        return Sharding.of(
            self.devices, self.shape, kept, packed={a: n for a, n in (packed or {}).items() if a in kept}
        )


def _grid(mesh: Any) -> DeviceGrid:
    """A 1-D list of ranks, a nested list (a multi-D mesh, row-major) or a DeviceMesh."""
    try:
        layout = mesh.mesh if hasattr(mesh, "mesh") else torch.as_tensor(mesh)
    except (TypeError, ValueError, RuntimeError) as err:  # None entries, ragged lists, ...
        raise HirError(f"error: the device mesh {mesh!r} is not a list of device ids: {err}") from None
    if layout.dim() == 0:
        raise HirError(
            f"error: the device mesh {mesh!r} is not a list of device ids (a 1-D mesh is a list: [0, 1, ...])"
        )
    if layout.numel() == 0:
        raise HirError(f"error: the device mesh {mesh} is empty")
    if layout.dtype.is_floating_point or layout.dtype.is_complex or layout.dtype == torch.bool:
        raise HirError(f"error: the device mesh {mesh!r} is not a list of device ids (integers)")
    devices = tuple(int(d) for d in layout.flatten().tolist())
    if len(set(devices)) != len(devices) or min(devices) < 0:
        raise HirError(f"error: the device mesh {list(devices)} must list distinct non-negative ranks")
    return DeviceGrid(devices, tuple(layout.shape))


def mesh_inputs(
    torch_func, names: list[str], num_inputs: int, mesh: Any, placements: dict
) -> tuple[DeviceGrid | None, list, dict]:
    """The mesh of an import (None: unsharded), the placement of each argument of
    ``torch_func`` and those requested for its results (by index), from ``placements``
    (state names, ``input0``..., ``output0``... to DTensor placements), checked."""
    num_args = len(list(torch_func.regions[0].blocks[0].arguments))
    if mesh is None and not placements:
        return None, [None] * num_args, {}
    if mesh is None:
        raise HirError("error: placements were given without a mesh (pass mesh=[0, 1, ...] or a DeviceMesh)")
    grid = _grid(mesh)
    import torch.distributed as dist  # torch.distributed loads only for sharded or multi-rank work

    if dist.is_available() and dist.is_initialized():  # else the check waits for the run
        _check_world(len(grid.devices), dist.get_world_size())
    args = list(torch_func.regions[0].blocks[0].arguments)
    arg_names = list(names) + [f"input{i}" for i in range(num_inputs)]
    num_results = len(ir.FunctionType(ir.TypeAttr(torch_func.attributes["function_type"]).value).results)
    unknown = sorted(str(k) for k in set(placements) - set(arg_names) - {f"output{i}" for i in range(num_results)})
    if unknown:
        raise HirError(
            f"error: placements name {', '.join(unknown)}, which are neither state entries nor inputs (input0, "
            f"...) nor outputs (output0, ...); the module has {num_inputs} input(s) and {num_results} output(s)"
        )
    arguments = [
        grid.sharding(*_splits(name, placements.get(name), shape_of(arg), grid)) for name, arg in zip(arg_names, args)
    ]
    outputs = {
        int(k[len("output") :]): grid.sharding(*_splits(k, v, None, grid))
        for k, v in placements.items()
        if k.startswith("output")
    }
    return grid, arguments, outputs


def shard_arguments(module: ir.Module, mesh: Sequence[int] | None, full: list, rank: int | None) -> list:
    """Run time: ``@main``'s arguments on ``rank`` (default: this process's) from the full
    tensors, each cut to the rank's shard as its argument type places it (the
    interpreter's :func:`~hir.interpreter.local_arguments`; None where the rank is off the
    mesh); the full tensors themselves when the program has no ``mesh``."""
    if mesh is None:
        return full

    this_rank, world_size = world()
    _check_world(len(mesh), world_size)
    return local_arguments(module, full, this_rank if rank is None else rank)


def _check_world(devices: int, world_size: int) -> None:
    if devices != world_size:
        raise HirError(
            f"error: the device mesh has {devices} devices but the run "
            f"has {world_size} rank(s); the mesh size must be the world size"
        )
