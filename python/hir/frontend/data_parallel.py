"""Data-parallel training steps on a 1-D mesh: the placements and the two layout marks that
make a training step (a module computing the loss, its gradients with
``torch.autograd.grad`` and the optimizer's update in its ``forward``) data parallel when
:func:`hir.from_torch` imports it with ``mesh=`` and ``keep_composites=False``.

* ``"replicate"`` (DDP): every batch tensor ``Shard(0)`` (each device its rows of the global
  batch), parameters and optimizer state ``Replicate()``. A weight's gradient is a sum over
  the batch rows, so the placer finds it a partial sum (:mod:`hir.frontend.strategies.backward`);
  :func:`reduce_gradient` marks where it must be whole: an allreduce before the update.
* ``"fully_shard"`` (FSDP2's ``fully_shard``): parameters and their optimizer state
  ``Shard(0)`` (each device a block of rows); :func:`gather` marks each parameter read
  whole (an all-gather) before the loss, :func:`reduce_gradient` its gradient read as the
  device's rows (a reduce-scatter of the partial sum), so the update and the optimizer
  state stay on each device's rows. By default (FSDP2's ``reshard_after_forward=True``)
  :func:`regathering` makes the backward gather each parameter again where it reads it,
  so the forward's gathered copy (and what is derived from it: its transpose, its autocast
  copy) dies with the forward; ``reshard_after_forward=False`` keeps it from the forward to the backward.

The loss's mean is over the global batch (the sums of the devices' losses and counts are
allreduced; see :mod:`hir.frontend.strategies.backward`), so a step gives the numbers of
one process on the whole batch. The marks are ``torch.ops.hir.redistribute``
(:mod:`hir.frontend.strategies.redistribute`): in eager PyTorch they are copies.
"""

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from torch._C import _autograd
from torch.distributed.tensor import Replicate, Shard

from hir.core import HirError
from hir.frontend.strategies.redistribute import redistribute
from hir.passes.training.schedule import data_parallel_pipeline

MODES = ("replicate", "fully_shard")
SCHEDULE_OPTIONS = (
    "defer_waits",
    "prefetch",
    "bucket_bytes",
    "comm_stream",
    "optimizer_in_backward",
)  # data_parallel_pipeline's


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise HirError(f"error: data_parallel must be one of {', '.join(repr(m) for m in MODES)}, got {mode!r}")
    return mode


def placements(
    mode: str, state: dict, batch: Sequence[torch.Tensor], devices: int, sharded: Sequence[str] = ()
) -> dict:
    """The placements of a step's state (``{name: tensor}``) and batch (``input0``...) on
    ``devices`` devices: the batch split on dim 0; with ``"fully_shard"`` the entries named
    in ``sharded`` (parameters and their optimizer state) split on dim 0, the rest (scalar
    hyper-parameters, step counts, buffers) replicated. Refuses a batch or a sharded entry
    whose dim 0 the devices do not divide, naming it."""
    check_mode(mode)
    out: dict = {}
    for i, x in enumerate(batch):
        if x.dim() == 0 or x.shape[0] % devices:
            raise HirError(
                f"error: data_parallel: batch tensor {i} (shape {list(x.shape)}) must have "
                f"a dim 0 that the {devices} devices divide (each device takes its rows)"
            )
        out[f"input{i}"] = Shard(0)
    for name, tensor in state.items():
        split = mode == "fully_shard" and name in sharded and tensor.dim() > 0
        if split and tensor.shape[0] % devices:
            raise HirError(
                f"error: data_parallel='fully_shard': '{name}' (shape {list(tensor.shape)}) "
                f"has a dim 0 that the {devices} devices do not divide; "
                "hir shards every parameter on dim 0 without padding"
            )
        out[name] = Shard(0) if split else Replicate()
    return out


def gather(mode: str, parameter: torch.Tensor, name: str, placement: str | None = None) -> torch.Tensor:
    """``parameter`` as the loss reads it: whole (an all-gather of the devices' rows; on a
    2-D mesh ``placement``, gathered along the data-parallel axis) with ``"fully_shard"``;
    itself with ``"replicate"``."""
    return redistribute(parameter, placement or "Replicate()", name) if mode == "fully_shard" else parameter


def reduce_gradient(mode: str, gradient: torch.Tensor, name: str, placement: str | None = None) -> torch.Tensor:
    """``gradient`` (a sum over each device's rows of the batch) as the update reads it:
    summed over the devices, whole (``"replicate"``: an allreduce) or this device's rows
    (``"fully_shard"``: a reduce-scatter); on a 2-D mesh as ``placement`` says (summed
    along the data-parallel axis only)."""
    if placement is None:
        placement = "Shard(0)" if mode == "fully_shard" and gradient.dim() > 0 else "Replicate()"
    return redistribute(gradient, placement, name)


def regathering(
    mode: str | None,
    reshard_after_forward: bool,
    shards: Sequence[torch.Tensor],
    whole: Sequence[torch.Tensor],
    names: Sequence[str],
    placements: Sequence[str | None] | None = None,
):
    """A context in which the loss's autograd saves no gathered parameter, nor a tensor
    derived from one, for the backward (``"fully_shard"`` with ``reshard_after_forward``):
    a tensor the backward would read that is a gathered parameter in ``whole``, its
    transpose, or a chain of 2-D transposes and one dtype cast of it (an autocast copy) is
    kept as a recipe and made again when the backward unpacks it, from a second gather of
    the shard in ``shards`` (``names``: their state names, ``placements`` their gathered
    placements on a 2-D mesh, as :func:`gather` takes them). The two gathers are two
    ``torch.ops.hir.redistribute`` in the program, the second where the backward first
    reads it (a cast is then computed again there). Other tensors (other views, other
    computations on a parameter) are saved as they are, kept from the forward to the backward."""
    if mode != "fully_shard" or not reshard_after_forward:
        return contextlib.nullcontext()

    def pack(saved: torch.Tensor) -> Any:
        for i, w in enumerate(whole):
            # torch._C._is_alias_of is not in torch's stub
            if (
                saved.dim() != w.dim()
                or not torch._C._is_alias_of(saved, w)  # pyright: ignore[reportAttributeAccessIssue]
                or saved.storage_offset() != w.storage_offset()
            ):
                continue
            if saved.shape == w.shape and saved.stride() == w.stride():
                return (i, ())
            if w.dim() == 2 and saved.shape == w.shape[::-1] and saved.stride() == w.stride()[::-1]:
                return (i, ("t",))
        return _derived(saved, whole) or saved

    def unpack(packed: Any) -> torch.Tensor:
        if isinstance(packed, torch.Tensor):
            return packed
        i, steps = packed
        again = gather(
            mode, shards[i], f"{names[i]} (gathered again for the backward)", placements[i] if placements else None
        )
        for step in steps:
            again = again.t() if step == "t" else again.to(step)
        return again

    return _traced_hooks(pack, unpack)


def _derived(saved: torch.Tensor, whole: Sequence[torch.Tensor]) -> tuple | None:
    """``(i, steps)`` when autograd made ``saved`` from ``whole[i]`` by 2-D transposes and
    one dtype cast (``steps``: ``"t"`` or the dtype, from the parameter out), else None."""
    steps: list = []
    node, dtype = saved.grad_fn, saved.dtype
    while node is not None:
        kind = type(node).__name__
        if kind == "AccumulateGrad":
            leaf = node.variable  # pyright: ignore[reportAttributeAccessIssue]  # AccumulateGrad's; not in Node's stub
            i = next((k for k, w in enumerate(whole) if leaf is w), None)
            if i is None or not steps:
                return None
            return i, tuple(reversed(steps))
        if kind in ("TBackward0", "TransposeBackward0") and saved.dim() == 2:
            steps.append("t")
        elif kind == "ToCopyBackward0" and dtype is not None:
            steps.append(dtype)
            dtype = None  # one cast: its source is the parameter's dtype
        else:
            return None
        node = node.next_functions[0][0] if node.next_functions else None
    return None


@contextlib.contextmanager
def _traced_hooks(pack: Callable[[torch.Tensor], Any], unpack: Callable[[Any], torch.Tensor]) -> Iterator[None]:
    """``saved_tensors_hooks(pack, unpack)`` that ``torch.export`` traces: the export turns
    saved-tensor hooks off while it traces (they would run around a compiled graph); here
    they are what the graph computes."""
    prior = _autograd._saved_tensors_hooks_set_tracing(False)
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            yield
    finally:
        _autograd._saved_tensors_hooks_set_tracing(prior)


def reading(model: torch.nn.Module, names: Sequence[str], whole: Sequence[torch.Tensor], mode: str | None):
    """A context in which ``model``'s parameters ``names`` are ``whole`` (the gathered
    tensors, tied parameters alike) while the loss is computed; nothing to swap unless
    ``"fully_shard"``."""
    if mode != "fully_shard":
        return contextlib.nullcontext()
    return torch.nn.utils.stateless._reparametrize_module(model, dict(zip(names, whole)), tie_weights=True)


def check_mesh(mesh: Any) -> list:
    """The mesh of a data-parallel step: every rank of the process group, in order."""
    import torch.distributed as dist  # torch.distributed loads only for sharded or multi-rank work

    world = dist.get_world_size() if dist.is_initialized() else 1
    if not isinstance(mesh, (list, tuple)) or list(mesh) != list(range(world)):
        raise HirError(
            "error: data_parallel: mesh must list every rank of the "
            f"process group in order ({list(range(world))}), got {mesh!r}"
        )
    return list(mesh)


def check_schedule(schedule: Any) -> dict:
    """``train_step(..., schedule=)``: the options of ``hir-schedule-data-parallel``
    (:func:`hir.passes.training.schedule.data_parallel_pipeline`'s keywords) as a dict."""
    if not isinstance(schedule, dict) or any(k not in SCHEDULE_OPTIONS for k in schedule):
        raise HirError(
            f"error: hir.train_step: schedule must be a dict of {', '.join(SCHEDULE_OPTIONS)}, got {schedule!r}"
        )
    for key in ("bucket_bytes", "comm_stream"):
        value = schedule.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < (-1 if key == "comm_stream" else 0):
            raise HirError(
                f"error: hir.train_step: schedule's {key} must be an int "
                f">= {-1 if key == 'comm_stream' else 0}, got {value!r}"
            )
    return dict(schedule)


def schedule_pipeline(schedule: dict) -> str:
    """The lowering pipeline of a data-parallel step with ``schedule``'s options."""
    return data_parallel_pipeline(**schedule)
