"""The module that :class:`hir.frontend.training.TrainStep` exports: the user's loss, its gradients
and the optimizer's update in one ``forward(*batch)``, with the parameters' optimizer state and
hyper-parameters as buffers (see :mod:`hir.frontend.training` for how the export reads it); and
the model's names of the optimizer's parameters, which that module's state is keyed by."""

from collections.abc import Callable, Sequence
from typing import Any

import torch

from hir.core import HirError
from hir.frontend import data_parallel as dp
from hir.frontend import layers, sharded_training
from hir.frontend.optimizers import Rule


class _Holder(torch.nn.Module):
    """Tensors as buffers, under their own names (optimizer state of one parameter, or one
    param group's hyper-parameters)."""

    def __init__(self, tensors: dict) -> None:
        super().__init__()
        for key, tensor in tensors.items():
            self.register_buffer(key, tensor)


class _Optimizer(torch.nn.Module):
    """The optimizer's state (one holder per parameter) and param groups (one holder each), under
    the names the export keys them by (``optimizer.state.I.KEY``, ``optimizer.param_groups.G.KEY``)."""

    def __init__(self, states: list, hyper: list) -> None:
        super().__init__()
        self.state = torch.nn.ModuleList([_Holder(s) for s in states])
        self.param_groups = torch.nn.ModuleList([_Holder(h) for h in hyper])


class StepModule(torch.nn.Module):
    """The training step as a module: see :mod:`hir.frontend.training`'s docstring."""

    loss_fn: Callable  # set past Module.__setattr__: the user's function, not state

    def __init__(
        self,
        model: torch.nn.Module,
        loss_fn: Callable,
        names: list,
        groups: list,
        rule: Rule,
        states: list,
        hyper: list,
        accumulate: int,
        max_grad_norm: float | None,
        data_parallel: str | None = None,
        reshard_after_forward: bool = True,
    ) -> None:
        super().__init__()
        self.model = model
        self.optimizer = _Optimizer(states, hyper)
        object.__setattr__(self, "loss_fn", loss_fn)  # the user's function, not state
        self.names, self.groups, self.rule = names, groups, rule
        self.accumulate, self.max_grad_norm, self.data_parallel = accumulate, max_grad_norm, data_parallel
        self.gradient_layouts: dict = {}  # parameter name -> the layout its gradient takes (placed training)
        self.mesh_layouts: dict = {}  # parameter name -> its fsdp_tp.Layout (data x tensor parallel on a 2-D mesh)
        self.reshard_after_forward = reshard_after_forward
        self.update_op = (
            False  # the update left to hir.adam_update (hir.frontend.optimizer_update): return the gradients
        )

    def forward(self, *batch: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, ...]:
        params = [_attribute(self.model, n) for n in self.names]  # the tensors the export swapped in
        states = [dict(holder.named_buffers()) for holder in self.optimizer.state]
        mode = self.data_parallel
        gathered = [self.mesh_layouts[n].gathered if self.mesh_layouts else None for n in self.names]
        whole = (
            params
            if mode is None
            else [dp.gather(mode, p, f"model.{n}", g) for p, n, g in zip(params, self.names, gathered)]
        )
        with torch.enable_grad():
            for p in whole:
                p.requires_grad_()
            loss, grads = None, None
            for micro in _micro_batches(batch, self.accumulate):
                with (
                    dp.reading(self.model, self.names, whole, mode),
                    layers.forward_marks(),
                    dp.regathering(
                        mode, self.reshard_after_forward, params, whole, [f"model.{n}" for n in self.names], gathered
                    ),
                ):
                    part = self.loss_fn(self.model, *micro)
                if not isinstance(part, torch.Tensor) or part.dim() != 0:
                    raise HirError(f"error: hir.train_step: loss_fn must return a scalar tensor, got {_describe(part)}")
                if self.accumulate > 1:
                    part = part / self.accumulate
                new = torch.autograd.grad(part, whole, allow_unused=True)
                unused = [n for n, g in zip(self.names, new) if g is None]
                if unused:
                    raise HirError(
                        f"error: hir.train_step: parameter(s) {', '.join(unused[:5])} get no gradient from loss_fn "
                        "(torch would leave them out of the update): freeze them (requires_grad_(False)) "
                        "and leave them out of the optimizer"
                    )
                grads = list(new) if grads is None else [a + b for a, b in zip(grads, new)]
                loss = part.detach() if loss is None else loss + part.detach()
        assert loss is not None and grads is not None  # _micro_batches gives at least one micro-batch
        with torch.no_grad():
            if mode is not None:
                grads = [
                    dp.reduce_gradient(
                        mode, g, f"model.{n}", self.mesh_layouts[n].reduced if self.mesh_layouts else None
                    )
                    for g, n in zip(grads, self.names)
                ]
            grads = [
                sharded_training.place_gradient(g, self.gradient_layouts.get(n), f"model.{n}")
                for g, n in zip(grads, self.names)
            ]
            if self.max_grad_norm is not None:
                grads = _clip(grads, self.max_grad_norm)
            if self.update_op:
                return (loss, *grads)
            start = 0
            for group, holder in zip(self.groups, self.optimizer.param_groups):
                count = group["count"]
                span = slice(start, start + count)
                self.rule.update(params[span], grads[span], states[span], dict(holder.named_buffers()), group)
                start += count
        return loss


def _attribute(module: torch.nn.Module, name: str) -> torch.Tensor:
    value: Any = module
    for part in name.split("."):
        value = getattr(value, part)
    return value


def _micro_batches(batch: Sequence[torch.Tensor], count: int) -> list:
    """``batch`` split along dim 0 into ``count`` equal micro-batches."""
    if count == 1:
        return [batch]
    if not batch:
        raise HirError(f"error: hir.train_step: accumulate={count} needs batch tensors to split into micro-batches")
    for i, x in enumerate(batch):
        if x.dim() == 0 or x.shape[0] % count:
            raise HirError(
                f"error: hir.train_step: accumulate={count}: batch tensor {i} of shape {tuple(x.shape)} does not "
                f"split into {count} equal micro-batches along dim 0"
            )
    return list(zip(*(x.chunk(count) for x in batch)))


def _clip(grads: list, max_norm: float) -> list:
    """``torch.nn.utils.clip_grad_norm_(..., max_norm)``'s arithmetic on ``grads``."""
    total = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g, 2.0) for g in grads]), 2.0)
    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    return [g * coef for g in grads]


def _describe(value: Any) -> str:
    return f"a tensor of shape {tuple(value.shape)}" if isinstance(value, torch.Tensor) else type(value).__name__


def parameter_names(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> list:
    """The model's name of each parameter of ``optimizer`` (in its order); every parameter of
    the model must be in it, requiring grad."""
    names = {id(p): n for n, p in model.named_parameters()}
    listed = [p for g in optimizer.param_groups for p in g["params"]]
    strangers = [i for i, p in enumerate(listed) if id(p) not in names]
    if strangers:
        raise HirError(
            f"error: hir.train_step: the optimizer's parameter {strangers[0]} is not a parameter of the model"
        )
    frozen = [names[id(p)] for p in listed if not p.requires_grad]
    if frozen:
        raise HirError(
            f"error: hir.train_step: parameter(s) {', '.join(frozen[:5])} of the optimizer do not require grad "
            "(torch would skip them): leave them out of the optimizer"
        )
    left_out = [n for n, p in model.named_parameters() if id(p) not in {id(q) for q in listed}]
    if left_out:
        raise HirError(
            f"error: hir.train_step: parameter(s) {', '.join(left_out[:5])} of the model are not in the optimizer; "
            "hir trains every parameter "
            "(a frozen parameter as a buffer of the model)"
        )
    return [names[id(p)] for p in listed]
