"""Modules parallelized with DTensor parameters (``parallelize_module``, an HF model loaded
with ``tp_plan="auto"``): their placements, mesh and HF plan, and, while they are exported,
their full tensors and their own forwards.

``torch.export`` cannot trace DTensors ("non-fx-graphable type DTensorSpec"), and HF's TP
replaces a styled module's ``forward`` with one on local tensors (``parallelize_module``
adds hooks redistributing activations): :meth:`Distributed.whole` swaps every DTensor
parameter (buffer) for its full tensor and sets the forwards and hooks aside, and puts them
back on exit; the placements read here place the program instead.
"""

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from hir.core import HirError


class Distributed:
    """The DTensor state of ``module``: ``placements`` (state name -> placement on the root
    mesh), ``mesh`` (its device layout, None without DTensors) and ``plan`` (the HF TP plan
    of a model loaded with one, ``_tp_plan``; its styles fix layouts)."""

    def __init__(self, module: torch.nn.Module) -> None:
        self.module = module
        found = dtensor_placements(module)
        meshes = {devices for _, devices in found.values()}
        if len(meshes) > 1:
            raise HirError(
                f"error: the DTensor parameters of {type(module).__name__} "
                f"live on {len(meshes)} different meshes; hir needs one"
            )
        self.placements = {n: p for n, (p, _) in found.items()}
        self.mesh: Any | None = meshes.pop() if meshes else None
        self.plan: dict = {}
        if found:  # an HF model its own TP distributed (it keeps its mesh); parallelize_module's styles are hooks
            self.plan = next(
                (
                    dict(plan)
                    for m in module.modules()
                    if (plan := getattr(m, "_tp_plan", None)) and getattr(m, "_device_mesh", None) is not None
                ),
                {},
            )

    @contextlib.contextmanager
    def whole(self) -> Iterator[None]:
        """The module with full tensors and its own forwards while active (see the module docstring)."""
        if not self.placements:
            yield
            return
        saved = []  # (owner, attribute, original)
        hooks = []
        try:
            for name, tensor in list(self.module.state_dict(keep_vars=True).items()):
                if name in self.placements:
                    path, _, attr = name.rpartition(".")
                    owner = self.module.get_submodule(path) if path else self.module
                    table = owner._parameters if attr in owner._parameters else owner._buffers
                    saved.append((table, attr, table[attr]))
                    full = tensor.full_tensor().detach()
                    table[attr] = torch.nn.Parameter(full, requires_grad=False) if table is owner._parameters else full
            for sub in self.module.modules():
                hooks.append(
                    (sub, dict(sub._forward_hooks), dict(sub._forward_pre_hooks), sub.__dict__.pop("forward", None))
                )
                sub._forward_hooks.clear()
                sub._forward_pre_hooks.clear()
            yield
        finally:
            for table, attr, original in saved:
                table[attr] = original
            for sub, post, pre, forward in hooks:
                sub._forward_hooks.update(post)
                sub._forward_pre_hooks.update(pre)
                if forward is not None:
                    sub.forward = forward


def _nested(value: Any) -> Any:
    """A nested list as nested tuples (a mesh layout of any rank, hashable)."""
    return tuple(_nested(v) for v in value) if isinstance(value, list) else value


def dtensor_placements(module: torch.nn.Module) -> dict:
    """``{state name: (placement, mesh devices)}`` for the DTensor entries of ``module``. A
    parameter on a sub-mesh (``parallelize_module(m, mesh2d["tp"], plan)``) is placed on
    the root mesh: its placement on the sub-mesh's dimensions, replicated on the others."""
    try:
        from torch.distributed.tensor import (  # torch.distributed loads only for sharded or multi-rank work
            DTensor,
            Placement,
            Replicate,
        )
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
                    raise HirError(
                        f"error: the DTensor '{name}' lives on a sub-mesh whose dimensions "
                        f"{mesh.mesh_dim_names} are not named dimensions of its root mesh {names}"
                    )
                full: list[Placement] = [Replicate()] * root.ndim
                for dim_name, placement in zip(mesh.mesh_dim_names, placements):
                    full[names.index(dim_name)] = placement
                mesh, placements = root, tuple(full)
            found[name] = (placements, _nested(mesh.mesh.tolist()))
    return found


@dataclass
class StyleHooks:
    """What ``parallelize_module`` installed on one module, read from its forward hooks:
    the style's class name (``kind``), the layouts of its input (Colwise / Rowwise: their
    ``input_layouts``; SequenceParallel: its ``sequence_sharding``) and output, and whether
    it hands on local tensors (None: not known)."""

    kind: str
    inputs: tuple = ()
    outputs: tuple = ()
    use_local_output: bool | None = None


def parallel_styles(module: torch.nn.Module) -> dict[str, StyleHooks]:
    """``{submodule name: StyleHooks}`` of ``module`` parallelized with ``parallelize_module``.
    ``distribute_module`` registers each style's input / output function as a forward hook
    (a closure over a ``partial`` of the style class's function and its layouts); a style
    that registers its own hooks (``PrepareModuleInput``) closes over the style itself."""
    try:
        from torch.distributed.tensor.parallel import ParallelStyle
    except ImportError:  # pragma: no cover - torch without distributed
        return {}
    found: dict[str, StyleHooks] = {}
    for name, sub in module.named_modules():
        for hook in [*sub._forward_pre_hooks.values(), *sub._forward_hooks.values()]:
            for cell in getattr(hook, "__closure__", None) or ():
                try:
                    value = cell.cell_contents
                except ValueError:  # an empty cell
                    continue
                if isinstance(value, ParallelStyle):
                    found[name] = StyleHooks(type(value).__name__)
                    continue
                kind, _, role = getattr(getattr(value, "func", None), "__qualname__", "").partition(".")
                if role not in ("_prepare_input_fn", "_prepare_output_fn"):
                    continue
                hooks = found.setdefault(name, StyleHooks(kind))
                args = tuple(value.args)
                if role == "_prepare_input_fn":
                    hooks.inputs = tuple(args[0]) if args and isinstance(args[0], (tuple, list)) else ()
                else:
                    hooks.outputs = tuple(args[0]) if len(args) == 2 else ()
                    hooks.use_local_output = args[-1] if args else None
    return found
