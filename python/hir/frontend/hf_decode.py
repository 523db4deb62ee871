"""A decode step of an HF causal LM over transformers' ``StaticCache``, as a module
:func:`hir.from_torch` imports: ``step(input_ids, cache_position) -> logits``, its key/value
cache buffers program state that the step updates in place.

Why not ``transformers.integrations.executorch.TorchExportableModuleWithStaticCache`` as
is: it registers the cache layers' tensors as buffers, but the cache keeps its own references
to them, so an export that swaps the module's buffers for graph inputs (``functional_call``,
non-strict ``torch.export``) still sees the original tensors inside the cache: they are lifted
as constants and their in-place updates are dropped (the functionalized export then fails). This
module points the cache layers at its buffers at the start of every call, so the cache
tensors are the graph's inputs and ``index_copy_`` into them becomes a mutation of the
program's arguments (``@main`` writes them in place, see :mod:`hir.frontend.export`).

Greedy decoding through the program equals ``model.generate(..., do_sample=False)``
(``docs/from-pytorch.md``, ``test/python/test_from_torch_hf_decode.py``): the prompt goes
through one token at a time (the step's shapes are fixed at import), then each argmax token.

transformers renamed the models' cache keyword ``past_key_values`` to ``cache`` (5.24 takes
both, warning on the old name; 5.17 takes only the old one and drops an unknown ``cache=``
into ``**kwargs``, so the model would make its own ``DynamicCache`` and never write the
step's buffers): the step passes the cache under the keyword the model's ``forward`` names.
Before 5.5.1 pieces the step is built from are missing (before 5.4 a layer's length is a
Python int, not a tensor the step can hold): such a version is refused by name. The cache
itself (every layer holding every position, sized by the model's own writes) is
:func:`hir.frontend.hf_cache.static_cache`'s.

:class:`StaticCachePrefill` is the same step for the prompt's prefill (every call starts at
position 0 of an empty cache): attention over the call's own tokens, causally, as HF's eager
prefill runs it.
"""

import inspect
import sys
from typing import TYPE_CHECKING, cast

import torch

from hir.core import HirError
from hir.frontend.hf_cache import model_config, refuse_undecodable, static_cache

if TYPE_CHECKING:
    from transformers.cache_utils import StaticLayer

MIN_TRANSFORMERS = "5.5.1"  # the oldest transformers whose StaticCache the step can hold (module docstring)
KEY_PROJECTIONS = ("k_proj", "qkv_proj", "query_key_value")  # modules whose output holds the keys (HF's list)
PREFILL_ATTENTION = "hir_empty_cache_prefill"  # StaticCachePrefill's name in transformers' AttentionInterface


class StaticCacheStep(torch.nn.Module):
    """``model`` (a ``*ForCausalLM`` or base model) with a ``StaticCache`` of ``batch_size``
    rows and ``max_cache_len`` positions held in buffers ``key_cache_{i}`` /
    ``value_cache_{i}`` / ``cumulative_length_{i}`` (one per layer that caches keys; every
    layer holds every position, shaped as the model writes it:
    :func:`hir.frontend.hf_cache.static_cache`), made on the model's device. Encoder-decoder
    and DTensor (tensor-parallel) models are refused by name. ``logits_to_keep`` is the
    model's (``1``: the logits of the last position only, what ``generate`` reads; ``0``:
    every position's).

    The buffers are the cache: ``step.to(device)`` moves them, and each call points the
    cache's layers at the step's current buffers and device, and drops those references when
    it returns (a copy, ``copy.deepcopy(step)``, holds only its own buffers; an export's
    fake tensors are never left behind)."""

    key_cache_0: torch.Tensor  # a buffer (see __init__): its shape is the batch and cache length

    def __init__(
        self,
        model: torch.nn.Module,
        batch_size: int,
        max_cache_len: int,
        dtype: torch.dtype | None = None,
        logits_to_keep: int = 0,
    ) -> None:
        super().__init__()
        require_transformers()

        refuse_undecodable(model)
        self.model = model
        self.logits_to_keep = logits_to_keep
        self.cache_keyword = cache_keyword(model)
        # positions given as HF's generate gives them: a model deriving them from the cache's
        # length (OPT) would read that length as a number, inside the traced step
        self.takes_positions = "position_ids" in inspect.signature(model.forward).parameters
        self.cache = static_cache(model, batch_size, max_cache_len, self.cache_keyword, dtype)
        self.cached_layers = [
            i for i, layer in enumerate(self.cache.layers) if getattr(layer, "keys", None) is not None
        ]  # (shared-KV layers hold none)
        for i in self.cached_layers:
            layer = self._layer(i)
            self.register_buffer(f"key_cache_{i}", layer.keys, persistent=False)
            self.register_buffer(f"value_cache_{i}", layer.values, persistent=False)
            self.register_buffer(f"cumulative_length_{i}", layer.cumulative_length, persistent=False)
        self._release()

    def extra_repr(self) -> str:
        return f"logits_to_keep={self.logits_to_keep}"

    def cache_placements(self, plan: dict) -> dict:
        """The cache buffers' placements under the tensor-parallel ``plan`` (see
        :func:`hir.frontend.hf_plans.plan_placements`): split by heads (``Shard(1)``) where
        the plan splits the key projection's heads (``colwise``), as HF's TP sizes its
        cache; so the cache update and attention stay on each device's heads."""
        from torch.distributed.tensor import Shard  # torch.distributed loads only for sharded or multi-rank work

        if not any(key.rsplit(".", 1)[-1] in KEY_PROJECTIONS and style == "colwise" for key, style in plan.items()):
            return {}
        return {f"{kind}_cache_{i}": Shard(1) for i in self.cached_layers for kind in ("key", "value")}

    def forward(
        self,
        input_ids: torch.Tensor,
        cache_position: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Logits of ``input_ids`` (``[batch, tokens]``) at positions ``cache_position``
        (``[tokens]``, the first one also where the cache's valid part ends); a padded batch
        also gives ``attention_mask`` (``[batch, max_cache_len]``, 0 at each row's padding) and
        ``position_ids`` (``[batch, tokens]``, the positions without the padding), as HF's
        ``generate`` passes them."""
        for i in self.cached_layers:
            layer = self._layer(i)
            keys: torch.Tensor = getattr(self, f"key_cache_{i}")
            layer.keys = keys
            layer.values = getattr(self, f"value_cache_{i}")
            layer.cumulative_length = getattr(self, f"cumulative_length_{i}")
            layer.device = keys.device
            # the mask's length: symbolic in an import with a dynamic cache length
            layer.max_cache_len = keys.shape[2]
            layer.cumulative_length.copy_(cache_position[0])
        keep = {"logits_to_keep": self.logits_to_keep} if self.logits_to_keep else {}
        if position_ids is None and self.takes_positions:
            position_ids = cache_position[None].expand(input_ids.shape[0], -1)
        positions = {} if position_ids is None else {"position_ids": position_ids}
        out = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            use_cache=True,
            **keep,
            **positions,
            **{self.cache_keyword: self.cache},
        )
        self._release()  # (no try/finally: torch.compile traces this forward too)
        return out.logits if hasattr(out, "logits") else out.last_hidden_state

    def _release(self) -> None:
        """The cache layers forget their tensors until the next call (see the class docstring)."""
        for i in self.cached_layers:
            layer = self._layer(i)
            # (transformers infers the length a tensor; here it too is released)
            layer.keys = layer.values = layer.cumulative_length = None  # pyright: ignore[reportAttributeAccessIssue]

    def _layer(self, i: int) -> "StaticLayer":
        """Cache layer ``i`` of :attr:`cached_layers`: a ``StaticLayer`` (:func:`static_cache`'s
        other layers, ``DummyLayer``, hold no keys)."""
        return cast("StaticLayer", self.cache.layers[i])


def cache_keyword(model: torch.nn.Module) -> str:
    """The keyword ``model.forward`` takes its cache by: ``cache`` (transformers 5.24) or
    ``past_key_values`` (5.17 and earlier); a model taking neither has no cache a step could hold."""
    parameters = inspect.signature(model.forward).parameters
    for name in ("cache", "past_key_values"):
        if name in parameters:
            return name
    import transformers  # transformers loads only for Hugging Face models (seconds to import)

    raise HirError(
        f"error: StaticCacheStep: {type(model).__name__}.forward takes no 'cache' or 'past_key_values' "
        f"argument (transformers {transformers.__version__}), so it has no KV cache to decode with"
    )


def require_transformers() -> None:
    """Refuse a transformers older than :data:`MIN_TRANSFORMERS` (see the module docstring)."""
    import transformers  # transformers loads only for Hugging Face models (seconds to import)
    from packaging.version import Version  # transformers loads only for Hugging Face models (seconds to import)

    if Version(transformers.__version__) < Version(MIN_TRANSFORMERS):
        raise HirError(
            f"error: StaticCacheStep (hir.generate's decode step) needs transformers >= {MIN_TRANSFORMERS} "
            f"(StaticCache layers holding their length as a tensor); "
            f"transformers {transformers.__version__} is installed"
        )


class PrefillRefused(HirError):
    """:class:`StaticCachePrefill` would not equal HF's prefill for this model (the message
    names it and why). Raised at construction, or by a call (an import) whose attention turns
    out not to be plain causal SDPA (``from_torch`` re-raises it as an ``HirError``); either
    way :func:`hir.generate` then prefills through the step itself (warned in the second)."""


class StaticCachePrefill(torch.nn.Module):
    """The prompt's prefill through ``step`` (a :class:`StaticCacheStep`, held as the
    submodule ``step``: the state is the step's buffers, under ``step.`` names, so a program
    of this module bound to the same tensors writes the same cache):
    ``prefill(input_ids, cache_position) -> logits`` is ``step(input_ids, cache_position)``
    for a call that starts at position 0 of an empty cache (``cache_position`` is
    ``arange(tokens)``; anything else is wrong, unchecked).

    Why: HF's eager prefill from an empty static cache skips the attention mask
    (``masking_utils._ignore_causal_mask_sdpa``: query offset 0) and runs SDPA over the
    step's own tokens only with ``is_causal=True`` (a flash kernel, half the keys of a cache
    twice the prompt, no work above the diagonal). An export of the step (``torch.export``,
    and ``torch.compile`` before torch 2.14) cannot skip it: the mask is data it cannot
    see, so it keeps a materialized mask over every cache position. This module makes the
    skip explicit: for the call, the model's attention is an ``AttentionInterface`` entry
    calling transformers' ``sdpa_attention_forward`` with the keys and values cut to the
    query's length and no mask (the mask registry has no such entry, so ``masking_utils``
    builds none), so the import holds ``scaled_dot_product_attention(q, k[:, :, :T],
    v[:, :, :T], is_causal=True)``: HF's eager prefill, exactly.

    It is right only for plain causal full attention through SDPA: the model is refused at
    construction (:class:`PrefillRefused`, an ``HirError`` naming it and why) for attention
    that is not ``"sdpa"`` or not dispatched through the ``AttentionInterface``, sliding-window
    or chunked layers, attention softcapping, ALiBi, bidirectional or encoder-decoder attention
    and composite (multimodal) configs; and each call checks
    that every layer's attention ran through the entry (a model calling its own attention
    would otherwise run unmasked)."""

    def __init__(self, step: StaticCacheStep) -> None:
        super().__init__()
        refuse_prefill(step.model)
        register_prefill_attention()
        self.step = step

    def forward(self, input_ids: torch.Tensor, cache_position: torch.Tensor) -> torch.Tensor:
        """Logits of the prompt ``input_ids`` (``[batch, tokens]``) at positions
        ``cache_position`` (``arange(tokens)``), its keys and values written to the cache."""
        config = model_config(self.step.model).get_text_config()
        attention = config._attn_implementation
        config._attn_implementation = PREFILL_ATTENTION
        _PREFILL_CALLS.append(0)
        try:
            logits = self.step(input_ids, cache_position)
            calls = _PREFILL_CALLS[-1]
        finally:
            _PREFILL_CALLS.pop()
            config._attn_implementation = attention
        if calls != len(self.step.cached_layers):
            raise PrefillRefused(
                f"error: StaticCachePrefill: {type(self.step.model).__name__}: {calls} of its "
                f"{len(self.step.cached_layers)} attention layers ran through transformers' AttentionInterface; "
                "the others would attend without a mask"
            )
        return logits


_PREFILL_CALLS: list = []  # per StaticCachePrefill call in progress: its attention calls so far
_UNSUPPORTED_ATTENTION = (
    "sliding_window",
    "softcap",
    "s_aux",
    "position_bias",
)  # attention keywords the prefill cannot honour


def prefill_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    **kwargs,
):
    """:class:`StaticCachePrefill`'s attention: SDPA over the query's own positions (the
    cache's first ``tokens``), causal, no mask."""
    from transformers.integrations.sdpa_attention import (
        sdpa_attention_forward,  # transformers loads only for Hugging Face models (seconds to import)
    )

    used = [name for name in _UNSUPPORTED_ATTENTION if kwargs.get(name) is not None]
    if kwargs.get("is_causal", getattr(module, "is_causal", True)) is False:
        used.append("is_causal=False")
    if used:
        raise PrefillRefused(
            f"error: StaticCachePrefill: {type(module).__name__} passes {', '.join(used)} to its attention; the "
            "prefill runs plain causal attention only"
        )
    if _PREFILL_CALLS:
        _PREFILL_CALLS[-1] += 1
    tokens = query.shape[2]
    return sdpa_attention_forward(module, query, key[:, :, :tokens], value[:, :, :tokens], None, **kwargs)


def register_prefill_attention() -> None:
    """Add :func:`prefill_attention` to transformers' ``AttentionInterface`` (once)."""
    from transformers import AttentionInterface  # transformers loads only for Hugging Face models (seconds to import)

    if PREFILL_ATTENTION not in AttentionInterface._global_mapping:
        AttentionInterface.register(PREFILL_ATTENTION, prefill_attention)


def refuse_prefill(model: torch.nn.Module) -> None:
    """Raise :class:`PrefillRefused` naming ``model`` and the reason where
    :class:`StaticCachePrefill` would not equal HF's prefill (see its docstring)."""
    config = model_config(model).get_text_config()
    layer_types = getattr(config, "layer_types", None) or []
    reasons = {
        f"its attention is {config._attn_implementation!r}, not 'sdpa'": config._attn_implementation != "sdpa",
        "its attention does not run through transformers' AttentionInterface": not dispatches_attention(model),
        # (Qwen2-MoE: sliding_window 0 when off)
        f"it has sliding-window attention (sliding_window={getattr(config, 'sliding_window', None)})": (
            bool(getattr(config, "sliding_window", None)) or bool(getattr(config, "use_sliding_window", False))
        ),
        f"not all its layers are full attention (layer_types {sorted(set(layer_types))})": any(
            t != "full_attention" for t in layer_types
        ),
        "it has chunked attention (attention_chunk_size)": getattr(config, "attention_chunk_size", None) is not None,
        "it softcaps its attention scores (attn_logit_softcapping)": getattr(config, "attn_logit_softcapping", None)
        is not None,
        "it has ALiBi position biases": bool(getattr(config, "alibi", False))
        or getattr(config, "position_embedding_type", None) == "alibi",
        "its attention is bidirectional": bool(getattr(config, "use_bidirectional_attention", False)),
        "it is an encoder-decoder model": bool(getattr(config, "is_encoder_decoder", False)),
        "it is a composite (multimodal) model": config is not model.config
        or bool(getattr(config, "sub_configs", None)),
    }
    why = [reason for reason, applies in reasons.items() if applies]
    if why:
        raise PrefillRefused(
            f"error: StaticCachePrefill: {type(model).__name__} ({getattr(config, 'model_type', '?')}): "
            f"{'; '.join(why)}; the prefill runs plain causal full attention through SDPA only (use StaticCacheStep)"
        )


def dispatches_attention(model: torch.nn.Module) -> bool:
    """Whether ``model``'s modeling code picks its attention from transformers'
    ``ALL_ATTENTION_FUNCTIONS`` (what the prefill's entry replaces); Falcon's, for one, runs
    its own SDPA or eager attention, whatever the config names."""
    modeling = [
        cls.__module__ for cls in type(model).__mro__ if cls.__module__.startswith("transformers.models.")
    ]  # (not PreTrainedModel's)
    return any(hasattr(sys.modules.get(name), "ALL_ATTENTION_FUNCTIONS") for name in modeling)
