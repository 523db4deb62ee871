"""Hugging Face tensor-parallel plans as hir placements.

An HF model ships its plan as ``config.base_model_tp_plan``: module-name patterns (``*``
stands for one name component, the layer index) mapped to style names, e.g. Llama's::

    {"layers.*.self_attn.q_proj": "colwise", ..., "layers.*.self_attn.o_proj": "rowwise",
     "layers.*.mlp.gate_proj": "colwise", "layers.*.mlp.up_proj": "colwise",
     "layers.*.mlp.down_proj": "rowwise"}

:func:`plan_placements` turns the plan into DTensor placements of the matched modules'
parameters, the way ``transformers.distributed.tensor_parallel`` shards them:

========================================================  =====================================
style                                                     parameters
========================================================  =====================================
``colwise``, ``colwise_rep``, ``colwise_gather_output``    weight ``Shard(0)``, bias ``Shard(0)``
``rowwise``, ``rowwise_rep``, ``rowwise_split_input``      weight ``Shard(1)``, bias replicated
``embedding_rowwise`` / ``embedding_colwise``              weight ``Shard(0)`` / ``Shard(1)``
``replicate``, ``sequence_parallel``,                      replicated
``replicated_with_grad_allreduce``
========================================================  =====================================

(a ``Conv1D``, GPT-2's transposed linear, has its weight dims swapped). Activations are not
placed by the plan: hir places every intermediate with DTensor's rules from the parameters'
placements, so a colwise projection's output stays split on its last dim until a rowwise one
contracts it (one allreduce), whatever the style's output layout says; ``colwise_rep``'s
gathered output is gathered where a consumer needs it whole. ``sequence_parallel`` only
replicates its module's parameters: split the tokens with ``"input0": Shard(1)``. Styles
that need a module-specific forward (packed, MoE, MLA, ``all_reduce``, ``local_params``)
are refused by name.
"""

import re
from typing import Any

import torch

from hir.core import HirError

COLWISE = ("colwise", "colwise_rep", "colwise_gather_output")
ROWWISE = ("rowwise", "rowwise_rep", "rowwise_split_input")
REPLICATED = ("replicate", "sequence_parallel", "replicated_with_grad_allreduce")
EMBEDDING = {"embedding_rowwise": 0, "embedding_colwise": 1}
STYLES = COLWISE + ROWWISE + REPLICATED + tuple(EMBEDDING)


def is_plan_entry(value: Any) -> bool:
    """A placements entry that is an HF plan style (a string) rather than a DTensor placement."""
    return isinstance(value, str)


def plan_placements(module: torch.nn.Module, plan: dict[str, str]) -> dict[str, Any]:
    """``{parameter name: placement}`` of ``module`` under the HF plan ``plan`` (see the
    module docstring). A pattern matches a module (or parameter) name in full, or after the
    model's ``base_model_prefix`` (``model.layers.0...`` in ``LlamaForCausalLM``). A tied
    parameter is placed under its first name (the program's state entry)."""
    prefix = getattr(module, "base_model_prefix", "") or ""
    modules = dict(module.named_modules())
    entry = {id(p): name for name, p in module.named_parameters()}  # first name of each tensor
    placements: dict[str, Any] = {}
    for pattern, style in plan.items():
        if style not in STYLES:
            known = ", ".join(f'"{s}"' for s in STYLES)
            raise HirError(f"error: tensor-parallel plan entry '{pattern}': style \"{style}\" is not supported (hir maps {known})")
        body = re.escape(pattern).replace(r"\*", r"[^.]+")
        regex = re.compile((f"(?:{re.escape(prefix)}\\.)?" if prefix else "") + body + "$")
        matched = False
        for name, param in module.named_parameters(remove_duplicate=False):
            owner, _, _ = name.rpartition(".")
            if regex.match(name) or regex.match(owner):  # the parameter itself, or its module
                matched = True
                placements[entry[id(param)]] = _param_placement(style, type(modules[owner]).__name__, param.dim())
        if not matched and not any(regex.match(name) for name in modules):
            raise HirError(f"error: tensor-parallel plan entry '{pattern}' matches no module or parameter of {type(module).__name__}")
    return placements


def _param_placement(style: str, owner: str, ndim: int) -> Any:
    """One parameter's placement under ``style`` (``Shard(dim)`` or ``Replicate()``)."""
    from torch.distributed.tensor import Replicate, Shard

    if style in REPLICATED or ndim == 0:
        return Replicate()
    if style in EMBEDDING:
        return Shard(EMBEDDING[style]) if ndim == 2 else Replicate()
    swapped = owner == "Conv1D" and ndim == 2  # weight [in, out]
    if style in COLWISE:  # output features split: weight rows (bias too)
        return Shard(1 if swapped else 0)
    if ndim == 1:  # rowwise: the bias is added after the sum
        return Replicate()
    return Shard(0 if swapped else 1)
