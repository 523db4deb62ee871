"""Training steps whose parameters are placed on a mesh as :func:`hir.from_torch` takes them
(tensor and sequence parallelism, a 2-D mesh with data parallelism on one axis):
the placements of the step module's state, and the user's tensors cut to the program's
shards and made whole again.

The user gives ``placements`` for the model as for inference (the model's state names,
``input0``..., HF plan entries); in the step module (:class:`hir.frontend.training._Step`)
the model is ``model.``, so its entries are renamed, and each parameter's optimizer state of
the parameter's shape takes the parameter's placement: the update then reads and writes only
this device's shard of each (its gradient is placed as the parameter by the update's
pointwise rules, so a sharded parameter's gradient stays sharded). The program holds its
state as shards; :func:`local_part` cuts the user's whole tensors to them before a call and
:func:`write_back` makes them whole again after it (an all-gather), so the user's model and
optimizer keep ordinary tensors.
"""

import math
import re
from typing import Any, Optional, Sequence

import torch

from hir.core import HirError
from hir.dialect import Sharding
from hir.frontend.hf_plans import is_plan_entry, plan_placements
from hir.frontend.strategies.redistribute import redistribute
from hir.frontend.compiled import _arg_types
from hir.interpreter.buffers import buffer_spec, is_memref
from hir.interpreter.backends.process_groups import world
from hir.interpreter.inputs import shard
from hir.interpreter.inputs import shard_slices

_IO = re.compile(r"(input|output)\d+")


def step_placements(step: torch.nn.Module, names: Sequence[str], placements: dict, state: dict) -> dict:
    """The placements of ``step``'s program from the user's ``placements`` of its model:
    the model's entries under ``model.``, inputs and outputs as given, HF plan entries kept
    (:func:`hir.frontend.torch_import.from_torch` resolves them in ``step``, which holds the
    model), and each parameter's optimizer state of its shape placed as the parameter
    (``names``: the model's name of the parameter of each optimizer index). An entry naming
    nothing of the model is refused, naming it."""
    if not isinstance(placements, dict):
        raise HirError(f"error: hir.train_step: placements must be a dict (state name / 'input0' / HF plan pattern -> placement), got {type(placements).__name__}")
    plan = {k: v for k, v in placements.items() if is_plan_entry(v)}
    out: dict = {}
    for key, value in placements.items():
        if key in plan:
            continue
        if _IO.fullmatch(key):
            out[key] = value
        elif f"model.{key}" in state:
            out[f"model.{key}"] = value
        else:
            raise HirError(f"error: hir.train_step: placements: '{key}' is neither a state entry of the model nor an input ('input0'...)")
    params = {**plan_placements(step, plan), **out}
    for i, name in enumerate(names):
        placement = params.get(f"model.{name}")
        if placement is None:
            continue
        shape = state[f"model.{name}"].shape
        prefix = f"optimizer.state.{i}."
        out.update({k: placement for k, t in state.items() if k.startswith(prefix) and t.shape == shape})
    return {**params, **out, **plan}


def gradient_layouts(placements: dict, names: Sequence[str]) -> dict[str, str]:
    """The layout (``"Shard(d)"`` / ``"Replicate()"``) of each parameter placed on a 1-D mesh,
    by the model's name, from the step's ``placements``: its gradient is read so by the
    update (a replicated gradient of a split parameter, an embedding table's, as its slice;
    a partial sum summed), as DTensor's gradients take their parameter's placement."""
    out = {}
    for name in names:
        placement = placements.get(f"model.{name}")
        if placement is not None and not isinstance(placement, (tuple, list, str)):
            out[name] = "Replicate()" if placement.is_replicate() else f"Shard({placement.dim})"
    return out


def place_gradient(gradient: torch.Tensor, layout: Optional[str], name: str) -> torch.Tensor:
    """``gradient`` laid out as ``layout`` (its parameter's), or itself where there is none."""
    return gradient if layout is None else redistribute(gradient, layout, name)


def state_shardings(program: Any) -> dict[str, Optional[Sharding]]:
    """Each state entry's sharding in ``program``'s ``@main`` (None: whole on every device)."""
    types = _arg_types(program.module)[: len(program.state_names)]
    return {n: buffer_spec(t, 0).sharding if is_memref(t) else None for n, t in zip(program.state_names, types)}


def local_part(tensor: torch.Tensor, sharding: Optional[Sharding]) -> torch.Tensor:
    """This rank's shard of the user's whole ``tensor``."""
    if sharding is None:
        return tensor

    return shard(tensor, sharding, world()[0])


def write_back(tensor: torch.Tensor, held: torch.Tensor, sharding: Optional[Sharding]) -> None:
    """The user's ``tensor`` made whole from every device's shard ``held`` (an all-gather of
    the shards, padded to the largest, each written where its device's blocks lie), or
    copied where the program holds it whole."""
    if sharding is None or tuple(held.shape) == tuple(tensor.shape):
        tensor.copy_(held)
        return
    import torch.distributed as dist  # torch.distributed loads only for sharded or multi-rank work

    shapes = {r: _block_shapes(tensor.shape, *shard_slices(tensor.shape, sharding, r)) for r in sharding.mesh}
    flat = torch.zeros(max(math.prod(shape) for shape, _ in shapes.values()), dtype=held.dtype, device=held.device)
    flat[: held.numel()] = held.reshape(-1)
    pieces = [torch.empty_like(flat) for _ in range(dist.get_world_size())]
    dist.all_gather(pieces, flat)
    for r, (shape, sizes) in shapes.items():
        indices, axis = shard_slices(tensor.shape, sharding, r)
        local = pieces[r][: math.prod(shape)].view(shape)
        for index, block in zip(indices, [local] if axis is None else local.split(sizes, axis)):  # a packed split's pieces
            tensor[index].copy_(block)


def _block_shapes(shape: Sequence[int], indices: list, axis: Optional[int]) -> tuple[list[int], list[int]]:
    """The shape of a shard made of the blocks ``indices`` (joined along ``axis``) and each
    block's extent along it."""
    extents = [[len(range(*s.indices(n))) for n, s in zip(shape, index)] for index in indices]
    local = list(extents[0])
    if axis is not None:
        local[axis] = sum(e[axis] for e in extents)
    return local, [e[axis] for e in extents] if axis is not None else []
