"""Data parallelism (FSDP or DDP) over one axis of a 2-D mesh and tensor parallelism over the
other, torchtitan's layout: ``mesh=[[0, 1], [2, 3]]``, its rows (mesh axis 0) the
data-parallel axis, its columns (mesh axis 1) the tensor-parallel one. The user gives the
tensor-parallel ``placements`` as for a 1-D mesh (one ``Shard``/``Replicate`` per entry);
the batch is split on dim 0 over axis 0.

With ``"fully_shard"`` each parameter is also split over axis 0, on a dim that its
tensor-parallel placement leaves whole: the first whose extent axis 0 divides (a
column-split ``Shard(0)`` projection on its columns, a row-split ``Shard(1)`` one on its
rows, a replicated one on dim 0). torchtitan's FSDP splits dim 0 always, which for a
``Shard(0)`` weight splits dim 0 over both axes (DTensor's ``_StridedShard``: FSDP's blocks
inside TP's); hir splits a dimension over one mesh axis, and the other dim gives each
device a shard of the same size and the same collectives (an all-gather over axis 0 before
the forward reads the parameter, a reduce-scatter over axis 0 of its gradient). A
parameter with no such dim (a column-split bias) stays whole along axis 0, its gradient
all-reduced there, as with ``"replicate"`` (DDP: every parameter whole along axis 0).

Each layout is a ``torch.ops.hir.redistribute`` mark with one placement per mesh axis
(``"Replicate(), Shard(0)"``: gathered along axis 0, column-split along axis 1); the
gradient's mark sums the partial gradient over axis 0 only, so the update reads the
device's 2-D shard of it and of the optimizer state.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.tensor import Replicate, Shard

from hir.core import HirError
from hir.frontend.hf_plans import is_plan_entry


@dataclass(frozen=True)
class Layout:
    """One parameter's placements on the 2-D mesh: ``held`` (the program's state, one per
    mesh axis), ``gathered`` (as the loss reads it) and ``reduced`` (as the update reads its
    gradient), the last two as ``hir.redistribute`` strings."""

    held: tuple
    gathered: str
    reduced: str


def _text(placement: Any) -> str:
    return "Replicate()" if placement.is_replicate() else f"Shard({placement.dim})"


def check_mesh(mesh: Any, placements: Any) -> list:
    """The 2-D mesh of a data x tensor parallel step as nested lists: every rank of the
    process group in row-major order, both axes of two or more devices; ``placements``
    without HF plan entries (their styles fix layouts on a 1-D mesh)."""
    plan = next((k for k, v in placements.items() if is_plan_entry(v)), None) if isinstance(placements, dict) else None
    if plan is not None:
        raise HirError(
            "error: hir.train_step: data_parallel with placements takes "
            f"Shard/Replicate placements; the HF plan entry '{plan}' "
            "fixes layouts on a 1-D mesh"
        )

    layout = mesh.mesh.tolist() if hasattr(mesh, "mesh") else mesh
    world = dist.get_world_size() if dist.is_initialized() else None
    shape = (
        torch.as_tensor(layout).shape
        if isinstance(layout, (list, tuple)) and all(isinstance(r, (list, tuple)) for r in layout)
        else None
    )
    flat = [int(d) for row in layout for d in row] if shape is not None and len(shape) == 2 else None
    if (
        flat is None
        or shape is None
        or min(shape) < 2
        or flat != list(range(len(flat)))
        or (world is not None and len(flat) != world)
    ):
        raise HirError(
            "error: hir.train_step: data_parallel with placements takes a "
            "2-D mesh of every rank in order, rows the data-parallel axis "
            f"and columns the tensor-parallel one, each of 2 or more devices (e.g. [[0, 1], [2, 3]]), got {mesh!r}"
        )
    return [list(row) for row in layout]


def layouts(mode: str, names: Sequence[str], state: dict, tp: dict, rows: int) -> dict[str, Layout]:
    """The :class:`Layout` of each parameter (the model's ``names``; ``state``: the step's
    state, ``model.NAME`` -> tensor) from its tensor-parallel placement in ``tp`` (by the
    step's state name; absent: replicated) on a mesh of ``rows`` data-parallel rows."""
    out = {}
    for name in names:
        placement = tp.get(f"model.{name}", Replicate())
        if isinstance(placement, (tuple, list, str)) or not (placement.is_replicate() or placement.is_shard()):
            raise HirError(
                "error: hir.train_step: data_parallel with placements: the "
                f"placement of '{name}' must be one Shard(d) / Replicate() "
                f"(the tensor-parallel axis's; the data-parallel axis is hir's), got {placement!r}"
            )
        shape = state[f"model.{name}"].shape
        taken = placement.dim % len(shape) if placement.is_shard() else None
        free = (
            next((d for d, n in enumerate(shape) if d != taken and n % rows == 0), None)
            if mode == "fully_shard"
            else None
        )
        held = (Replicate() if free is None else Shard(free), placement)
        whole = f"Replicate(), {_text(placement)}"
        out[name] = Layout(held, whole, f"{_text(held[0])}, {_text(placement)}")
    return out


def placements(
    step_placements: dict,
    found: dict[str, Layout],
    names: Sequence[str],
    state: dict,
    batch: Sequence[torch.Tensor],
    rows: int,
) -> dict:
    """The step's placements on the 2-D mesh from its tensor-parallel ones
    (:func:`hir.frontend.sharded_training.step_placements`): each parameter and its
    optimizer state of its shape held as its :class:`Layout` says, every batch tensor split
    on dim 0 along axis 0, the rest whole along axis 0 (all as given along axis 1)."""
    out: dict = {k: (Replicate(), v) for k, v in step_placements.items()}
    for i, x in enumerate(batch):
        if x.dim() == 0 or x.shape[0] % rows:
            raise HirError(
                f"error: data_parallel: batch tensor {i} (shape {list(x.shape)}) must "
                f"have a dim 0 that the {rows} data-parallel rows of the mesh divide"
            )
        given = step_placements.get(f"input{i}", Replicate())
        if given.is_shard() and given.dim % x.dim() == 0:
            raise HirError(
                f"error: data_parallel with placements: input{i} is split on dim 0 along the "
                f"data-parallel axis; its tensor-parallel placement must be another, got {given}"
            )
        out[f"input{i}"] = (Shard(0), given)
    for i, name in enumerate(names):
        layout = found[name]
        shape = state[f"model.{name}"].shape
        out[f"model.{name}"] = layout.held
        prefix = f"optimizer.state.{i}."
        out.update({k: layout.held for k, t in state.items() if k.startswith(prefix) and t.shape == shape})
    return out
