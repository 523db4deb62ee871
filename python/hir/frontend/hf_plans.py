"""Hugging Face tensor-parallel plans as hir placements, every style honoured.

An HF model ships its plan as ``config.base_model_tp_plan`` (and, with its head, the runtime
plan ``model.tp_plan``): module- or parameter-name patterns (``*`` stands for one name
component, the layer index) mapped to style names, e.g. Llama's::

    {"layers.*.self_attn.q_proj": "colwise", ..., "layers.*.self_attn.o_proj": "rowwise",
     "layers.*.mlp.gate_proj": "colwise", ..., "embed_tokens": "embedding_rowwise", "lm_head": "colwise_gather_output"}

A style says how the matched module's parameters are split (as
``transformers.distributed.tensor_parallel`` shards them) and which layouts its input or
output must have (its ``input_layouts`` / ``output_layouts``):

=================================================  ================================  ===========================
style                                              parameters                        layouts
=================================================  ================================  ===========================
``colwise``                                        weight, bias ``Shard(-2)``         output split (DTensor's rules)
``colwise_rep``, ``colwise_gather_output``         weight, bias ``Shard(-2)``         output ``Replicate()`` (gathered)
``rowwise``, ``rowwise_rep``,                      weight ``Shard(-1)``, bias         a replicated input is sliced
``rowwise_split_input``                            replicated                         on each device; output summed
``embedding_rowwise``                              table ``Shard(0)``                 masked local lookup, output summed
``embedding_colwise``                              table ``Shard(1)``                 output ``Replicate()`` (gathered)
``packed_colwise`` / ``packed_rowwise``            fused gate/up halves split each    (see below)
``sequence_parallel``                              replicated                         input ``Shard(1)`` (tokens)
``replicate``, ``replicated_with_grad_allreduce``,  replicated                         -
``mla_kv_a_proj``
``all_reduce``, ``moe_tp_experts``, ``gather``     their own entries'                output ``Replicate()`` (summed)
``local_params``, ``moe_identity_expert``,         their own entries'                -
``local``
``local_colwise`` / ``local_rowwise`` /            as ``colwise`` / ``rowwise`` /     -
``local_packed_rowwise``                           ``packed_rowwise``
=================================================  ================================  ===========================

(a ``Conv1D``, GPT-2's transposed linear, has its weight dims swapped). Every other
activation follows DTensor's rules from the parameters' placements, which give each
style's own layouts: a colwise projection's output stays split on its last dim until a
rowwise one contracts it (one allreduce, or a reduce-scatter where the consumer wants the
tokens split). A layout is fixed by ``torch.ops.hir.redistribute`` on the module's output
(or input) while it is exported (:func:`plan_layouts`; :mod:`hir.frontend.strategies.redistribute`),
so hir reshards there exactly as DTensor's ``redistribute`` would. The styles that only
change gradients (``replicated_with_grad_allreduce``, ``mla_kv_a_proj``) or that undo HF's
local-tensor shortcuts (``moe_identity_expert``'s division, ``local_*``) change nothing in
a forward whose every value keeps its global meaning.

``packed_colwise`` splits a fused ``[gate; up]`` weight (a ``Linear``'s rows, an MoE
experts tensor's dim 1) so that each device holds its part of each half (DTensor's
``_StridedShard(dim, split_factor=2)``): the ``chunk(2)`` into gate and up is then local.

Patterns resolve relative to the module, to its ``base_model_prefix`` (``model.layers.0``
of a ``LlamaForCausalLM``) and to every HF model it holds as a submodule (a decode step's
``model``); a module holding KV-cache buffers says how they split (``cache_placements``:
:class:`hir.frontend.hf_decode.StaticCacheStep` splits them by heads when the plan splits
the key projection's heads). A style hir does not know, or a pattern that matches nothing,
is an error naming the plan entry.
"""

import contextlib
import functools
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import torch

from hir.core import HirError
from hir.frontend.strategies.redistribute import redistribute


@dataclass(frozen=True)
class Style:
    """What a plan style does: how the matched module's parameters split (``params``:
    ``colwise``, ``rowwise``, ``packed_colwise``, ``packed_rowwise``, ``embedding_rows``,
    ``embedding_columns``, ``replicated``, or None: left to their own entries) and the
    layouts of its ``input`` / ``output`` (DTensor placement text) when the style fixes them."""

    params: str | None
    input: str | None = None
    output: str | None = None


WHOLE, TOKENS = "Replicate()", "Shard(1)"
STYLES = {
    "colwise": Style("colwise"),
    "colwise_rep": Style("colwise", output=WHOLE),
    "colwise_gather_output": Style("colwise", output=WHOLE),
    "rowwise": Style("rowwise"),
    "rowwise_rep": Style("rowwise"),
    "rowwise_split_input": Style("rowwise"),
    "embedding_rowwise": Style("embedding_rows", output=WHOLE),
    "embedding_colwise": Style("embedding_columns", output=WHOLE),
    "packed_colwise": Style("packed_colwise"),
    "packed_rowwise": Style("packed_rowwise"),
    "sequence_parallel": Style("replicated", input=TOKENS),
    "replicate": Style("replicated"),
    "replicated_with_grad_allreduce": Style("replicated"),
    "mla_kv_a_proj": Style("replicated"),
    "all_reduce": Style(None, output=WHOLE),
    "moe_tp_experts": Style(None, output=WHOLE),
    "gather": Style(None, output=WHOLE),
    "moe_identity_expert": Style(None),
    "local_params": Style(None),
    "local": Style(None),
    "local_colwise": Style("colwise"),
    "local_rowwise": Style("rowwise"),
    "local_packed_rowwise": Style("packed_rowwise"),
}
PACKED = 2  # packed_colwise's halves: [gate; up]


def is_plan_entry(value: Any) -> bool:
    """A placements entry that is an HF plan style (a string) rather than a DTensor placement."""
    return isinstance(value, str)


def with_plan(module: torch.nn.Module, placements: dict) -> tuple[dict, dict]:
    """``placements`` with its HF tensor-parallel plan entries (module pattern -> style name,
    e.g. ``config.base_model_tp_plan``) replaced by the placements they imply, and the plan."""
    plan = {k: v for k, v in placements.items() if is_plan_entry(v)}
    if not plan:
        return placements, plan
    return {**plan_placements(module, plan), **{k: v for k, v in placements.items() if not is_plan_entry(v)}}, plan


def _prefixes(module: torch.nn.Module) -> list[str]:
    """Where plan patterns may start: the module itself, its ``base_model_prefix``, and every
    HF model inside it (with its own base prefix)."""
    out = []
    for name, sub in module.named_modules():
        if name and not hasattr(sub, "base_model_prefix"):
            continue
        root = f"{name}." if name else ""
        out.append(root)
        base = getattr(sub, "base_model_prefix", "") or ""
        if base and isinstance(getattr(sub, base, None), torch.nn.Module):
            out.append(f"{root}{base}.")
    return list(dict.fromkeys(out))


def _matcher(module: torch.nn.Module, pattern: str) -> re.Pattern:
    body = re.escape(pattern).replace(r"\*", r"[^.]+")
    roots = "|".join(re.escape(p) for p in _prefixes(module))
    return re.compile(f"^(?:{roots}){body}$")


def _style(pattern: str, style: str) -> Style:
    if style not in STYLES:
        known = ", ".join(f'"{s}"' for s in STYLES)
        raise HirError(
            f"error: tensor-parallel plan entry '{pattern}': style \"{style}\" is not supported (hir honours {known})"
        )
    return STYLES[style]


def plan_placements(module: torch.nn.Module, plan: dict[str, str]) -> dict[str, Any]:
    """``{state name: placement}`` of ``module`` under the HF plan ``plan`` (see the module
    docstring): its parameters', and the KV-cache buffers of the modules that hold them. A
    tied parameter is placed under its first name (the program's state entry)."""
    modules = dict(module.named_modules())
    entry = {id(p): name for name, p in module.named_parameters()}  # first name of each tensor
    placements: dict[str, Any] = {}
    for pattern, style_name in plan.items():
        style = _style(pattern, style_name)
        regex = _matcher(module, pattern)
        matched = False
        for name, param in module.named_parameters(remove_duplicate=False):
            owner, _, _ = name.rpartition(".")
            if regex.match(name) or regex.match(owner):  # the parameter itself, or its module
                matched = True
                if style.params is not None:
                    placements[entry[id(param)]] = _param_placement(
                        style.params, type(modules[owner]).__name__, param.dim(), name.endswith("bias")
                    )
        if not matched and not any(regex.match(name) for name in modules):
            if (pattern, style_name) not in _own_plans(module):
                raise HirError(
                    f"error: tensor-parallel plan entry '{pattern}' matches "
                    f"no module or parameter of {type(module).__name__}"
                )
            # the model's own plan names modules of every layer kind (Qwen3-MoE's dense MLPs): as HF, skip it
            warnings.warn(
                f"tensor-parallel plan entry '{pattern}' matches no module or parameter of {type(module).__name__}",
                stacklevel=4,
            )
    for name, sub in modules.items():
        if isinstance(sub, CachePlacements):
            placements.update({f"{name}.{k}" if name else k: v for k, v in sub.cache_placements(plan).items()})
    return placements


@runtime_checkable
class CachePlacements(Protocol):
    """A module holding KV-cache buffers: their placements (state name in the module ->
    placement) under the TP ``plan``."""

    def cache_placements(self, plan: dict) -> dict: ...


def _own_plans(module: torch.nn.Module) -> set:
    """The (pattern, style) entries of the plans the HF models in ``module`` ship."""
    own: set = set()
    for sub in module.modules():
        config = getattr(sub, "config", None)
        for plan in (getattr(config, "base_model_tp_plan", None), getattr(sub, "_tp_plan", None)):
            own.update((plan or {}).items())
    return own


def _param_placement(params: str, owner: str, ndim: int, bias: bool) -> Any:
    """One parameter's placement (``Shard(dim)``, ``_StridedShard`` for packed halves, or
    ``Replicate()``)."""
    from torch.distributed.tensor import Replicate, Shard  # torch.distributed loads only for sharded or multi-rank work
    from torch.distributed.tensor.placement_types import (
        _StridedShard,  # torch.distributed loads only for sharded or multi-rank work
    )

    if params == "replicated" or ndim == 0:
        return Replicate()
    if params.startswith("embedding"):
        return Shard(0 if params == "embedding_rows" else 1) if ndim == 2 else Replicate()
    swapped = owner == "Conv1D" and ndim == 2  # weight [in, out]
    if params in ("colwise", "packed_colwise"):  # output features split: weight rows (bias too)
        dim = 0 if ndim == 1 else (1 if swapped else ndim - 2)
    elif ndim == 1 or bias:  # rowwise: the bias is added after the sum
        return Replicate()
    else:
        dim = 0 if swapped else ndim - 1
    return _StridedShard(dim, split_factor=PACKED) if params.startswith("packed") else Shard(dim)


def styled_modules(module: torch.nn.Module, plan: dict[str, str]) -> Iterator[tuple[str, torch.nn.Module, str, Style]]:
    """(name, module, plan entry, style) of every module a plan entry with a layout matches."""
    for pattern, style_name in plan.items():
        style = _style(pattern, style_name)
        if style.input is None and style.output is None:
            continue
        regex = _matcher(module, pattern)
        for name, sub in module.named_modules():
            if regex.match(name):
                yield name, sub, f"{pattern}: {style_name}", style


@contextlib.contextmanager
def plan_layouts(module: torch.nn.Module, plan: dict[str, str]) -> Iterator[None]:
    """While active (the export), the layouts the plan's styles fix are
    ``torch.ops.hir.redistribute`` on the styled modules' outputs and inputs (forward hooks,
    removed on exit)."""
    handles = []
    try:
        for _, sub, entry, style in styled_modules(module, plan):
            if style.output is not None:
                handles.append(
                    sub.register_forward_hook(functools.partial(_mark_output, redistribute, style.output, entry))
                )
            if style.input is not None:
                handles.append(
                    sub.register_forward_pre_hook(
                        functools.partial(_mark_input, redistribute, style.input, entry), with_kwargs=True
                    )
                )
        yield
    finally:
        for handle in handles:
            handle.remove()


def _first_tensor(value: Any, mark) -> Any:
    """``value`` with its first tensor (itself, or the first of a tuple / list) marked."""
    if isinstance(value, torch.Tensor):
        return mark(value)
    if isinstance(value, (tuple, list)):
        items = list(value)
        for i, item in enumerate(items):
            if isinstance(item, torch.Tensor):
                items[i] = mark(item)
                return type(value)(items) if isinstance(value, list) else tuple(items)
    return value


def _mark_output(redistribute, placement: str, entry: str, module, args, output):
    return _first_tensor(output, lambda t: redistribute(t, placement, entry))


def _mark_input(redistribute, placement: str, entry: str, module, args, kwargs):
    def mark(t: torch.Tensor) -> torch.Tensor:
        return redistribute(t, placement, entry)

    if args:
        return _first_tensor(args, mark), kwargs
    key = next((k for k, v in kwargs.items() if isinstance(v, torch.Tensor)), None)
    return args, ({**kwargs, key: mark(kwargs[key])} if key is not None else kwargs)
