"""The layouts a tensor-parallel plan style fixes at a module's boundary, as DTensor's
``redistribute``: ``torch.ops.hir.redistribute(x, placement, entry)`` is ``x`` placed as
``placement`` (``"Replicate()"`` or ``"Shard(d)"``; on a multi-D mesh one per mesh axis,
joined by commas: ``"Replicate(), Shard(0)"``, or one for every axis); ``entry`` names the
plan entry that asked for it (for errors). :mod:`hir.frontend.hf_plans` puts it on a styled module's output
(``colwise_gather_output``'s gather, ``embedding_rowwise``'s sum) or input
(``sequence_parallel``'s token split) while the module is exported. It is no op of its own:
its result is its operand read as placed (a gather, the sum of a partial result, a local
slice, or the operand itself)."""

import re

import torch

from hir.dialect import SetOp
from hir.frontend.strategies.registry import (
    ComputeSpec,
    NoRule,
    OpCall,
    OpPlacement,
    register_compute_form,
    register_op_strategy,
)
from hir.frontend.torch_ir import constant_value

_PLACEMENT = re.compile(r"^(?:Replicate\(\)|Shard\((?:dim=)?(-?\d+)\))$")


@torch.library.custom_op("hir::redistribute", mutates_args=())
def redistribute(x: torch.Tensor, placement: str, entry: str) -> torch.Tensor:
    """``x`` (a new tensor of the same values) laid out as ``placement`` on the plan's mesh
    axis; eager PyTorch has one device, so only the values matter."""
    return x.clone()


@redistribute.register_fake
def _(x: torch.Tensor, placement: str, entry: str) -> torch.Tensor:
    return torch.empty_like(x)


def _backward(ctx, grad: torch.Tensor) -> tuple:
    """The gradient passes through unchanged (the values are the operand's); its placement
    is the placer's, from the ops that read it (DTensor redistributes it back to the
    operand's placement, which those ops' rules reach by their own slices and sums)."""
    return grad, None, None


redistribute.register_autograd(_backward)

OP_NAME = "torch.hir.redistribute"  # the torch.operator the FX importer makes of it


def placement_split(text: str, rank: int, axis: int = 0, axes: int = 1) -> int | None:
    """The split dim on mesh axis ``axis`` (of ``axes``) of ``"Shard(d)"`` (made
    non-negative for a rank-``rank`` tensor), None for ``"Replicate()"``; of a list of
    them, one per mesh axis, the one of ``axis``."""
    entries = [e.strip() for e in text.split(",")]
    if len(entries) not in (1, axes):
        raise ValueError(f"{text!r} has {len(entries)} placements; the mesh has {axes} axes (give one per mesh axis)")
    m = _PLACEMENT.match(entries[axis if len(entries) > 1 else 0])
    if m is None:
        raise ValueError(f"not a Shard(d) / Replicate() placement: {text!r}")
    return None if m[1] is None else int(m[1]) % rank


@register_compute_form(OP_NAME)
def redistribute_form(op) -> ComputeSpec | None:
    return ComputeSpec(SetOp, [op.operands[0]], {}, [], redistributes=True)


@register_op_strategy(
    SetOp,
    doc="a plan style's layout at a module boundary (`hir.redistribute`): "
    "its operand read as placed there (a gather, a sum, a local slice)",
)
def redistribute_strategy(call: OpCall) -> OpPlacement:
    ((x, _),) = call.operands
    placement, entry = (constant_value(v) for v in call.op.operands[1:3])
    assert isinstance(placement, str), "hir::redistribute's schema types the placement as str"
    try:
        split = placement_split(placement, call.rank(x), call.axis, call.axes)
    except ValueError as err:
        raise NoRule(f"{entry}: {err}") from None
    return OpPlacement((split,), split)
