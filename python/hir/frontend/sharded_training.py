"""Training steps whose parameters are placed on a mesh as :func:`hir.from_torch` takes them
(tensor and sequence parallelism, a 2-D mesh with data parallelism on one axis):
the placements of the step module's state, and the user's tensors cut to the program's
shards and made whole again.

The user gives ``placements`` for the model as for inference (the model's state names,
``input0``..., HF plan entries); in the step module (:class:`hir.frontend.step_module.StepModule`)
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
from collections.abc import Sequence
from typing import Any

import torch
from torch.distributed.tensor import DTensor, Shard

from hir.core import HirError
from hir.dialect import Sharding
from hir.frontend.compiled import _arg_types
from hir.frontend.dtensors import Distributed, parallel_styles
from hir.frontend.hf_plans import is_plan_entry, plan_placements
from hir.frontend.strategies.redistribute import redistribute
from hir.interpreter.backends.process_groups import world
from hir.interpreter.buffers import buffer_spec, is_memref
from hir.interpreter.inputs import shard, shard_slices

_IO = re.compile(r"(input|output)\d+")


def step_placements(step: torch.nn.Module, names: Sequence[str], placements: dict, state: dict) -> dict:
    """The placements of ``step``'s program from the user's ``placements`` of its model:
    the model's entries under ``model.``, inputs and outputs as given, HF plan entries kept
    (:func:`hir.frontend.torch_import.from_torch` resolves them in ``step``, which holds the
    model), and each parameter's optimizer state of its shape placed as the parameter
    (``names``: the model's name of the parameter of each optimizer index). An entry naming
    nothing of the model is refused, naming it."""
    if not isinstance(placements, dict):
        raise HirError(
            "error: hir.train_step: placements must be a dict (state name / 'input0' "
            f"/ HF plan pattern -> placement), got {type(placements).__name__}"
        )
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
            raise HirError(
                f"error: hir.train_step: placements: '{key}' is neither "
                "a state entry of the model nor an input ('input0'...)"
            )
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


def place_gradient(gradient: torch.Tensor, layout: str | None, name: str) -> torch.Tensor:
    """``gradient`` laid out as ``layout`` (its parameter's), or itself where there is none."""
    return gradient if layout is None else redistribute(gradient, layout, name)


def parallelized(model: torch.nn.Module) -> tuple[list, dict] | None:
    """``(mesh, placements)`` of ``model`` parallelized with ``torch.distributed.tensor.parallel``
    (``parallelize_module``): the ranks of its DTensor parameters' 1-D mesh and, for each
    styled module, the HF plan style that splits its parameters and fixes its layouts as its
    ``ParallelStyle`` does (by the step's name of the module, ``model.``...), and with
    ``SequenceParallel`` the first input (the token ids) split on the tokens, as the
    residual stream between the norms is; None when it has neither DTensor nor style. The
    styles' hooks are set aside while it is exported (:class:`hir.frontend.dtensors.Distributed`);
    a style with no HF counterpart is refused, naming the module, as is one that splits a
    parameter otherwise than its DTensor."""
    found, styles = Distributed(model), parallel_styles(model)
    if not found.placements and not styles:
        return None
    plan = {}
    for name, style in styles.items():
        plan[name] = _plan_style(style, model.get_submodule(name))
        if plan[name] is None:
            raise HirError(
                f"error: hir.train_step: '{name}' is parallelized with "
                f"{style.kind} ({style}), whose layouts hir does not know "
                "(it honours ColwiseParallel, RowwiseParallel and SequenceParallel as HF's tensor-parallel styles)"
            )
    if not found.placements:
        raise HirError(
            f"error: hir.train_step: {type(model).__name__} is parallelized "
            "with styles but has no DTensor parameter to read its mesh from"
        )
    if found.plan:
        raise HirError(
            f"error: hir.train_step: {type(model).__name__} was distributed "
            "by HF's tp_plan; train the model loaded without it, "
            "with placements=model.tp_plan"
        )
    assert found.mesh is not None  # (DTensor parameters were found)
    if any(isinstance(d, tuple) for d in found.mesh):
        raise HirError(
            "error: hir.train_step: the DTensor parameters of "
            f"{type(model).__name__} live on a {len(found.mesh)}-D mesh; "
            "a module parallelized with torch.distributed.tensor.parallel trains on a 1-D mesh"
        )
    for name, placement in plan_placements(model, plan).items():
        if name in found.placements and not _same(
            placement, found.placements[name][0], model.get_parameter(name).dim()
        ):
            raise HirError(
                f"error: hir.train_step: the DTensor parameter '{name}' is placed {found.placements[name]}; its style "
                f"'{plan[name.rpartition('.')[0]]}' splits it as {placement}"
            )
    placements = {f"model.{n}": style for n, style in plan.items()}
    if (
        "sequence_parallel" in plan.values()
    ):  # the residual stream split on the tokens from the embedding on: the ids split so
        placements["input0"] = Shard(1)
    return list(found.mesh), placements


def _same(a: Any, b: Any, rank: int) -> bool:
    """Two ``Shard`` / ``Replicate`` placements of a rank-``rank`` tensor alike."""
    return a.is_replicate() == b.is_replicate() and (a.is_replicate() or a.dim % rank == b.dim % rank)


def _plan_style(style: Any, module: torch.nn.Module) -> str | None:
    """The HF plan style doing what ``style`` (:class:`hir.frontend.dtensors.StyleHooks`)
    does to ``module``, None if none does."""

    def whole(layouts: tuple) -> bool:
        return all(p.is_replicate() for p in layouts)

    embedding = isinstance(module, torch.nn.Embedding)
    if style.kind == "SequenceParallel":
        return "sequence_parallel" if style.inputs == (Shard(1),) else None  # the norm's input split on the tokens
    if not style.use_local_output:
        return None
    if style.kind == "ColwiseParallel":  # an input split on the tokens is gathered: the placer's choice, as "colwise"'s
        if embedding:
            return "embedding_colwise" if whole(style.outputs) else None
        return "colwise_gather_output" if whole(style.outputs) else "colwise"
    if style.kind == "RowwiseParallel":  # an output split on the tokens is reduce-scattered: the placer's choice
        if embedding:
            return "embedding_rowwise" if whole(style.outputs) else None
        return "rowwise"
    return None


def state_shardings(program: Any) -> dict[str, Sharding | None]:
    """Each state entry's sharding in ``program``'s ``@main`` (None: whole on every device)."""
    types = _arg_types(program.module)[: len(program.state_names)]
    return {n: buffer_spec(t, 0).sharding if is_memref(t) else None for n, t in zip(program.state_names, types)}


def _local(tensor: torch.Tensor) -> torch.Tensor | None:
    """A DTensor's local shard (its storage), None for a plain tensor."""
    return tensor.to_local() if isinstance(tensor, DTensor) else None


def held_apart(held: torch.Tensor, tensor: torch.Tensor) -> bool:
    """Whether the program holds the user's ``tensor`` in another tensor ``held`` (on
    another device, this rank's shard of it, or a DTensor's local shard), copied in and
    back around each call."""
    return hasattr(tensor, "to_local") or held.data_ptr() != tensor.data_ptr() or held.shape != tensor.shape


def local_part(tensor: torch.Tensor, sharding: Sharding | None) -> torch.Tensor:
    """This rank's shard of the user's whole ``tensor`` (a DTensor's: its local shard,
    which its placement made the program's)."""
    local = _local(tensor)
    if local is not None:
        return local
    if sharding is None:
        return tensor

    return shard(tensor, sharding, world()[0])


def write_back(tensor: torch.Tensor, held: torch.Tensor, sharding: Sharding | None) -> None:
    """The user's ``tensor`` made whole from every device's shard ``held`` (an all-gather of
    the shards, padded to the largest, each written where its device's blocks lie), or
    copied where the program holds it whole; a DTensor's local shard is written."""
    local = _local(tensor)
    if local is not None:
        local.copy_(held)
        return
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
        for index, block in zip(
            indices, [local] if axis is None else local.split(sizes, axis)
        ):  # a packed split's pieces
            tensor[index].copy_(block)


def _block_shapes(shape: Sequence[int], indices: list, axis: int | None) -> tuple[list[int], list[int]]:
    """The shape of a shard made of the blocks ``indices`` (joined along ``axis``) and each
    block's extent along it."""
    extents = [[len(range(*s.indices(n))) for n, s in zip(shape, index)] for index in indices]
    local = list(extents[0])
    if axis is not None:
        local[axis] = sum(e[axis] for e in extents)
    return local, [e[axis] for e in extents] if axis is not None else []
