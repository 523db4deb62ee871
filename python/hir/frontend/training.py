"""``hir.train_step``: a whole training step (forward, backward, gradient clipping, the
optimizer's update) as one hir program, run on the user's own model and optimizer.

How: a module (:class:`~hir.frontend.step_module.StepModule`) whose ``forward(*batch)`` calls the user's
``loss_fn(model, *batch)`` with the parameters requiring grad, differentiates it with
``torch.autograd.grad``, and applies the optimizer's rule (:mod:`hir.frontend.optimizers`)
in place, under ``torch.no_grad`` (or returns the gradients, for Adam's update as one op:
:mod:`hir.frontend.optimizer_update`). Its state is the model's (``model.NAME``), each
parameter's optimizer state (``optimizer.state.I.KEY``, I the index in
``optimizer.state_dict()``) and each param group's hyper-parameters
(``optimizer.param_groups.G.KEY``, 0-d float64). :func:`hir.from_torch` exports it with
torch's decompositions (``keep_composites=False``: autograd traced below itself); the state
it writes becomes entries the program writes in place. :class:`TrainStep` binds the user's
tensors (the model's parameters, the optimizer's state tensors) as that state, so a call
updates them where they are.

Per call: the hyper-parameters are refreshed from ``optimizer.param_groups`` (an LR
scheduler is honoured); optimizer state missing before the first step is created as torch
creates it; a state tensor the user replaced (``optimizer.load_state_dict``) is bound anew;
a batch of another signature (shapes, dtypes) or a change of the update's shape (momentum
turned on) imports another program, cached as ``torch.compile`` recompiles.
"""

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import torch

from hir.core import HirError
from hir.frontend import data_parallel as dp
from hir.frontend import fsdp_tp, layers, optimizer_update, sharded_training
from hir.frontend.optimizers import FIRST_STEP, hyper_values, rule_for
from hir.frontend.step_attention import attention_backends, causal_masks_as_eager
from hir.frontend.step_module import StepModule, parameter_names
from hir.frontend.torch_import import from_torch
from hir.passes import run_pipeline

STEP_OPTIONS = ("max_grad_norm", "accumulate", "data_parallel", "schedule", "recompute", "reshard_after_forward")
COMPILE_OPTIONS = ("device", "lower", "graph", "compile_kernels", "static_outputs", "num_streams")
COMPILE_OPTIONS += ("autotune", "regional")


class TrainStep:
    """``step(*batch) -> loss``: one training step of ``model`` with ``optimizer`` (see
    :func:`train_step`). ``programs`` holds the imported programs by batch signature."""

    def __init__(
        self,
        model: torch.nn.Module,
        optimizer: torch.optim.Optimizer,
        loss_fn: Callable,
        example_batch: Sequence[torch.Tensor],
        options: dict,
    ) -> None:
        self.model, self.optimizer, self.loss_fn = model, optimizer, loss_fn
        self.rule = rule_for(optimizer)
        self.accumulate = options.get("accumulate", 1)
        self.max_grad_norm = options.get("max_grad_norm")
        self.compile_options = {k: v for k, v in options.items() if k in COMPILE_OPTIONS}
        self.data_parallel, self.mesh, self.placements = (
            options.get("data_parallel"),
            options.get("mesh"),
            options.get("placements"),
        )
        self.schedule = options.get("schedule")
        self.recompute = options.get("recompute", False)
        self.reshard_after_forward = options.get("reshard_after_forward", True)
        self.names = parameter_names(model, optimizer)
        self.update_op = optimizer_update.applies(optimizer, self.mesh)
        first = next(iter(model.parameters()))
        self.device = torch.device(self.compile_options.setdefault("device", str(first.device)))
        self.programs: dict = {}  # signature -> TorchProgram
        self._compiled: dict = {}  # signature -> (CompiledProgram, the user's tensors it is bound to)
        self._shardings: dict = {}  # signature -> {state entry: its sharding in the program}
        self._hyper: list = []  # per group: {key: 0-d float64 tensor}
        self._hyper_values: list = []
        self._program(tuple(example_batch))

    # --- the program of a signature -------------------------------------------------

    def _signature(self, batch: tuple) -> tuple:
        shapes = tuple((tuple(x.shape), x.dtype) if isinstance(x, torch.Tensor) else type(x) for x in batch)
        groups = tuple((len(g["params"]), self.rule.structure(g)) for g in self.optimizer.param_groups)
        return shapes, groups, optimizer_update.constants(self.optimizer) if self.update_op else ()

    def _program(self, batch: tuple) -> Any:
        key = self._signature(batch)
        if key not in self.programs:
            bad = [i for i, x in enumerate(batch) if not isinstance(x, torch.Tensor)]
            if bad:
                raise HirError(
                    f"error: hir.train_step: the batch holds tensors only; item {bad[0]} is "
                    f"{type(batch[bad[0]]).__name__}"
                )
            self.names = parameter_names(self.model, self.optimizer)  # (param groups may have been added)
            # the settings, not the tensors: the export would track tensors among the module's attributes
            groups = [
                {k: v for k, v in g.items() if k != "params"} | {"count": len(g["params"])}
                for g in self.optimizer.param_groups
            ]
            states = [
                {k: t.to(self.device) for k, t in self.rule.init(self._param(i), g).items()}
                for i, g in self._indexed_groups()
            ]
            hyper = [
                {
                    k: torch.zeros((), dtype=torch.float64, device=self.device)
                    for k in (*self.rule.hyper, *self.rule.extra)
                }
                for _ in groups
            ]
            step = StepModule(
                self.model,
                self.loss_fn,
                self.names,
                groups,
                self.rule,
                states,
                hyper,
                self.accumulate,
                self.max_grad_norm,
                self.data_parallel,
                self.reshard_after_forward,
            )
            # traced where the model is (a call moves its batch there too)
            batch = tuple(x.to(self.device) for x in batch)
            placements = None
            # (torch has none before step 1)
            state = self.state() if self.placements is not None or self.data_parallel is not None else {}
            if (
                self.placements is not None
            ):  # the model's parameters placed as the user says, their optimizer state alike
                placements = sharded_training.step_placements(step, self.names, self.placements, state)
                if self.data_parallel is not None:  # data parallel along mesh axis 0, tensor parallel along 1
                    assert self.mesh is not None  # train_step takes data_parallel only with a mesh
                    rows = len(self.mesh)
                    step.mesh_layouts = fsdp_tp.layouts(self.data_parallel, self.names, state, placements, rows)
                    placements = fsdp_tp.placements(placements, step.mesh_layouts, self.names, state, batch, rows)
                else:
                    step.gradient_layouts = sharded_training.gradient_layouts(placements, self.names)
            elif self.data_parallel is not None:  # parameters and their optimizer state sharded with fully_shard
                assert self.mesh is not None  # train_step takes data_parallel only with a mesh
                sharded = [f"model.{n}" for n in self.names] + [n for n in state if n.startswith("optimizer.state.")]
                placements = dp.placements(self.data_parallel, state, batch, len(self.mesh), sharded)
            marking = (
                layers.marking_layers(layers.repeated_blocks(self.model), "model.")
                if self.recompute
                else contextlib.nullcontext()
            )
            # (on one device only: how the placement rules split attention without a mask is not checked yet)
            masks = causal_masks_as_eager() if self.mesh is None else contextlib.nullcontext()
            step.update_op = self.update_op
            with (
                attention_backends(self.device),
                masks,
                marking,
                layers.marking_checkpoints(self.model, "model.") as checkpointed,
            ):
                self.programs[key] = from_torch(
                    step,
                    batch,
                    grouped_attention=False,
                    fused_projections=False,
                    keep_composites=False,
                    mesh=self.mesh,
                    placements=placements,
                    replicate_fallback=self.mesh is None,
                    source_name=f"<train_step of {type(self.model).__name__}>",
                )
            if step.update_op:
                optimizer_update.append_update(self.programs[key], self.names, self.optimizer)
            self.programs[key].weights = {}  # the placeholders traced with (each call binds the user's state): freed
            for holder in (*step.optimizer.state, *step.optimizer.param_groups):
                holder._buffers.clear()  # the example state traced with: freed now, not at a later garbage collection
            self._shardings[key] = sharded_training.state_shardings(self.programs[key])
            if (
                self.recompute or checkpointed
            ):  # each layer's (checkpointed region's) forward again before its backward (passes/training/recompute.py)
                layers.marks_to_attributes(self.programs[key].module)
                run_pipeline(self.programs[key].module, "hir-recompute-layers")
            if self.schedule is not None:
                self.programs[key].lower(pipeline=dp.schedule_pipeline(self.schedule))
        return self.programs[key]

    def _indexed_groups(self) -> list:
        """(parameter index in ``optimizer.state_dict()``, its group) per parameter."""
        return [(i, g) for i, g in enumerate(g for g in self.optimizer.param_groups for _ in g["params"])]

    def _param(self, index: int) -> torch.nn.Parameter:
        return [p for g in self.optimizer.param_groups for p in g["params"]][index]

    # --- the state a call binds ------------------------------------------------------

    def _refresh(self) -> None:
        """The hyper-parameters from ``optimizer.param_groups``; optimizer state a
        parameter lacks (before its first step) created as torch creates it."""
        groups = self.optimizer.param_groups
        while len(self._hyper) < len(groups):
            self._hyper.append(
                {
                    k: torch.zeros((), dtype=torch.float64, device=self.device)
                    for k in (*self.rule.hyper, *self.rule.extra)
                }
            )
            self._hyper_values.append({})
        for g, (group, tensors) in enumerate(zip(groups, self._hyper)):
            for key, value in hyper_values(self.rule, group).items():
                if self._hyper_values[g].get(key) != value:
                    tensors[key].fill_(value)
                    self._hyper_values[g][key] = value
            fresh = 0
            for p in group["params"]:
                state = self.optimizer.state[p]
                missing = [k for k in self.rule.state(group) if k not in state]
                if missing:
                    state.update({k: v for k, v in self.rule.init(p, group).items() if k in missing})
                    fresh += 1
            if FIRST_STEP in tensors:
                if fresh not in (0, len(group["params"])):
                    raise HirError(
                        f"error: hir.train_step: param group {g}: {fresh} of its {len(group['params'])} parameters "
                        "have no momentum buffer; hir starts all or none of them"
                    )
                if fresh:
                    tensors[FIRST_STEP].fill_(1.0)

    def state(self) -> dict:
        """The step program's state, by entry name: the model's state, the optimizer's
        state tensors and the hyper-parameters (the tensors a call reads and writes)."""
        self._refresh()
        out = {
            f"model.{k}": v
            for k, v in {**dict(self.model.named_buffers()), **self.model.state_dict(keep_vars=True)}.items()
        }
        params = [p for g in self.optimizer.param_groups for p in g["params"]]
        for g in range(len(self.optimizer.param_groups)):
            out.update({f"optimizer.param_groups.{g}.{k}": t for k, t in self._hyper[g].items()})
        for i, (p, (_, group)) in enumerate(zip(params, self._indexed_groups())):
            out.update({f"optimizer.state.{i}.{k}": self.optimizer.state[p][k] for k in self.rule.state(group)})
        return out

    def __call__(self, *batch: torch.Tensor) -> torch.Tensor:
        """Run one step on ``batch`` (as ``loss_fn(model, *batch)`` takes it): returns the
        loss (the mean over micro-batches with ``accumulate``); the model's parameters and
        the optimizer's state are updated in place."""
        self.rule.check(self.optimizer)
        program = self._program(tuple(batch))
        key = self._signature(tuple(batch))
        state = self.state()
        bound = program.state_values(state)
        compiled, tensors = self._compiled.get(key, (None, None))
        if compiled is None or any(a is not b for a, b in zip(tensors, bound)):
            compiled = program.compile(state, **self.compile_options)
            self._compiled[key] = compiled, bound
        # (a shard is another tensor on every rank, even one that starts where the user's does)
        copied = [
            (n, t) for n, t in zip(program.state_names, bound) if sharded_training.held_apart(compiled.state[n], t)
        ]
        with torch.no_grad():
            shardings = self._shardings[key]
            # on another device than the program's (Adam's CPU step count), or this rank's shard
            for name, tensor in copied:
                compiled.state[name].copy_(sharded_training.local_part(tensor, shardings[name]))
            (loss,) = compiled.run(*batch)
            for name, tensor in copied:
                sharded_training.write_back(tensor, compiled.state[name], shardings[name])
        # what optimizer.step() records for an LR scheduler (which warns without it); not in Optimizer's stub
        self.optimizer._opt_called = True  # pyright: ignore[reportAttributeAccessIssue]
        return loss

    def save(self, path: str, weights: str | None = None) -> str:
        """Write the program of the example batch (IR) and its state (weights, optimizer
        state, hyper-parameters as safetensors; :meth:`hir.frontend.TorchProgram.save`): ``hir-run
        path BATCH...`` runs one step of it. Returns the weights file."""
        program = next(iter(self.programs.values()))
        return program.save(path, {k: v.detach() for k, v in self.state().items()}, weights=weights)


def train_step(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_fn: Callable,
    example_batch: Sequence[torch.Tensor],
    *,
    mesh: Any = None,
    placements: dict | None = None,
    **options: Any,
) -> TrainStep:
    """One training step of ``model`` as an hir program: ``step = train_step(model,
    optimizer, loss_fn, example_batch)`` imports it (``loss_fn(model, *example_batch)``
    must return a scalar tensor); ``loss = step(*batch)`` runs forward, backward and
    ``optimizer``'s update, the model's parameters and the optimizer's state updated in
    place. See docs/training.md.

    Options: ``max_grad_norm`` (clip as ``torch.nn.utils.clip_grad_norm_``), ``accumulate=K``
    (dim 0 of each batch tensor split into K micro-batches, one update; the loss returned
    is their mean), and the compile options ``device`` (default: the model's), ``lower``,
    ``graph``, ``compile_kernels``, ``static_outputs``, ``num_streams``, ``autotune``, ``regional``
    (:class:`hir.interpreter.Program`'s: with ``regional`` (default True) the step's region is
    cut at its layers, each distinct one compiled once, and a backward piece recomputes the
    elementwise values its forward piece wrote rather than keep them: docs/training.md).
    ``data_parallel="replicate"`` (DDP) or
    ``"fully_shard"`` (FSDP2; ``reshard_after_forward=False`` keeps each gathered parameter from
    the forward to the backward instead of gathering it again there) with ``mesh`` (every rank,
    ``list(range(world))``): each rank passes the global batch and computes on its rows
    (:mod:`hir.frontend.data_parallel`); the model and optimizer state are whole on every rank
    after each call. ``placements`` with
    ``mesh`` (as :func:`hir.from_torch` takes them; tensor / sequence parallel): parameters
    and their optimizer state sharded in the program, the update on local shards
    (:mod:`hir.frontend.sharded_training`). Both, with a 2-D ``mesh`` (``[[0, 1], [2, 3]]``):
    data parallel along its rows, tensor parallel along its columns
    (:mod:`hir.frontend.fsdp_tp`). A module parallelized with ``torch.distributed.tensor.parallel``
    brings its mesh and placements (none given; :func:`hir.frontend.sharded_training.parallelized`).
    ``schedule`` (a dict
    of ``defer_waits``, ``prefetch``, ``bucket_bytes``, ``comm_stream``, ``optimizer_in_backward``)
    lowers a data-parallel step with ``hir-schedule-data-parallel``'s options. ``recompute=True``:
    activation checkpointing, each of the model's repeated blocks (its layers) computed
    again in the backward instead of keeping its activations (``hir-recompute-layers``)."""
    if not isinstance(model, torch.nn.Module):
        raise HirError(f"error: hir.train_step: model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise HirError(
            f"error: hir.train_step: optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}"
        )
    if not callable(loss_fn):
        raise HirError(
            f"error: hir.train_step: loss_fn must be callable as loss_fn(model, *batch), got {type(loss_fn).__name__}"
        )
    found = sharded_training.parallelized(model)
    if found is not None:  # parallelize_module's DTensor parameters: their mesh and placements
        if mesh is not None or placements is not None or options.get("data_parallel") is not None:
            raise HirError(
                f"error: hir.train_step: {type(model).__name__} is parallelized with DTensor parameters, "
                "which bring their mesh and placements; give no mesh=, placements= or data_parallel="
            )
        mesh, placements = found
    parallel = options.get("data_parallel") is not None or placements is not None
    if (mesh is None) == parallel:
        raise HirError(
            "error: hir.train_step: training on several devices takes mesh= with data_parallel='replicate' or "
            "'fully_shard', or with placements= (tensor / sequence parallel); train on one device with none of them"
        )
    known = STEP_OPTIONS + COMPILE_OPTIONS
    unknown = [k for k in options if k not in known]
    if unknown:
        raise HirError(f"error: hir.train_step: unknown option(s) {', '.join(unknown)} (options: {', '.join(known)})")
    # data parallel along the mesh's rows, tensor parallel along its columns
    if options.get("data_parallel") is not None and placements is not None:
        options = dict(
            options,
            mesh=fsdp_tp.check_mesh(mesh, placements),
            placements=placements,
            data_parallel=dp.check_mode(options["data_parallel"]),
        )
    elif options.get("data_parallel") is not None:
        options = dict(options, mesh=dp.check_mesh(mesh), data_parallel=dp.check_mode(options["data_parallel"]))
    elif placements is not None:
        options = dict(options, mesh=mesh, placements=placements)
    if "reshard_after_forward" in options:
        if options.get("data_parallel") != "fully_shard":
            raise HirError(
                "error: hir.train_step: reshard_after_forward= says when a fully sharded step gathers its "
                "parameters; it takes data_parallel='fully_shard'"
            )
        if not isinstance(options["reshard_after_forward"], bool):
            raise HirError(
                "error: hir.train_step: reshard_after_forward must be True or False, "
                f"got {options['reshard_after_forward']!r}"
            )
    if "schedule" in options:
        if options.get("data_parallel") is None:
            raise HirError(
                "error: hir.train_step: schedule= orders a data-parallel step's collectives; "
                "it takes mesh= and data_parallel="
            )
        options = dict(options, schedule=dp.check_schedule(options["schedule"]))
    accumulate = options.get("accumulate", 1)
    if isinstance(accumulate, bool) or not isinstance(accumulate, int) or accumulate < 1:
        raise HirError(f"error: hir.train_step: accumulate must be a positive int, got {accumulate!r}")
    clip = options.get("max_grad_norm")
    if clip is not None and (isinstance(clip, bool) or not isinstance(clip, (int, float)) or not clip > 0):
        raise HirError(f"error: hir.train_step: max_grad_norm must be a positive number, got {clip!r}")
    recompute = options.get("recompute", False)
    if not isinstance(recompute, bool):
        raise HirError(f"error: hir.train_step: recompute must be True or False, got {recompute!r}")
    if recompute and not layers.repeated_blocks(model):
        raise HirError(
            "error: hir.train_step: recompute=True recomputes the model's repeated blocks "
            f"(a ModuleList of two or more modules of one class); {type(model).__name__} has none"
        )
    if isinstance(example_batch, torch.Tensor) or not isinstance(example_batch, (tuple, list)):
        raise HirError(
            "error: hir.train_step: example_batch must be a tuple of tensors (loss_fn's arguments after the model), "
            f"got {type(example_batch).__name__}"
        )
    return TrainStep(
        model, optimizer, loss_fn, example_batch, dict(options, max_grad_norm=None if clip is None else float(clip))
    )
