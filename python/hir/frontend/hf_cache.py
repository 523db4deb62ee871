"""The ``StaticCache`` a :class:`~hir.frontend.hf_decode.StaticCacheStep` holds, and the
models a decode step cannot serve, refused by name.

**Every attention layer holds every position.** transformers' ``StaticSlidingWindowLayer``
(sliding-window and chunked layers: Mistral, Gemma2/3, GPT-OSS, OLMo3...) keeps only the
window, and chooses between writing in place and rolling the window with a Python int it
counts the tokens in: one traced program cannot hold that choice (``torch.export`` of the
step fails on the int it adds a symbolic token count to). Here each such layer is a plain
``StaticLayer`` of the whole cache length instead: the cache write is the full layers'
``index_copy_`` at the call's positions, and the window is the model's own attention mask
(``masking_utils``' sliding-window / chunked mask over absolute positions: a query at
position ``q`` sees keys ``q - window < k <= q``), the same keys HF's attention sees. The
window's memory saving is given up: each layer takes what a full-attention layer takes.

**Shapes from the model, not the config.** The cache's heads and head sizes are what the
model's layers write, as in HF's own ``generate`` (``StaticLayer.lazy_initialization`` on
the first write): the cache is sized by one no-grad forward of one token per row through
it, then emptied. A config's head counts may not be what the layers compute with (Falcon's
multi-query default, DeepSeek-V3's latent attention with different key and value head sizes,
a GPT-2 / GPT-NeoX / OPT config carrying an unused ``num_key_value_heads``).
"""

import inspect
from typing import TYPE_CHECKING, Any, Protocol, cast

import torch

from hir.core import HirError

if TYPE_CHECKING:
    from transformers import GenerationConfig, PreTrainedConfig, StaticCache

    class CausalLM(Protocol):
        """What ``hir.generate`` calls of a Hugging Face model's ``GenerationMixin``: HF's own
        preparation of the special tokens and the attention mask."""

        def _prepare_special_tokens(
            self,
            generation_config: GenerationConfig,
            kwargs_has_attention_mask: bool | None = None,
            device: torch.device | str | None = None,
            batch_size: int | None = None,
        ) -> None: ...

        def _prepare_attention_mask_for_generation(
            self, inputs_tensor: torch.Tensor, generation_config: GenerationConfig, model_kwargs: dict[str, Any]
        ) -> torch.Tensor: ...


def model_config(model: torch.nn.Module) -> "PreTrainedConfig":
    """A Hugging Face ``model``'s ``config`` (torch's stubs type a module's attributes as its
    tensors and submodules only)."""
    return cast("PreTrainedConfig", model.config)


def refuse_undecodable(model: torch.nn.Module) -> None:
    """Raise an ``HirError`` naming ``model`` and why where a decode step over a static cache
    cannot serve it: an encoder-decoder (T5, BART: its decoder reads an encoder's output the
    step has no input for) or parameters that are DTensors (a tensor-parallel model, e.g.
    ``from_pretrained(tp_plan=...)``: the step's cache and program are for whole tensors)."""
    config = getattr(model, "config", None)
    name = f"{type(model).__name__} ({getattr(config, 'model_type', '?')})"
    if config is not None and bool(getattr(config, "is_encoder_decoder", False)):
        raise HirError(
            f"error: hir.generate: {name} is an encoder-decoder model; "
            "hir.generate decodes causal (decoder-only) language models only"
        )
    from torch.distributed.tensor import DTensor  # torch.distributed loads only for sharded or multi-rank work

    sharded = next((key for key, tensor in model.state_dict().items() if isinstance(tensor, DTensor)), None)
    if sharded is not None:
        raise HirError(
            f"error: hir.generate: {name} is tensor-parallel (its parameter "
            f"{sharded!r} is a DTensor, e.g. from from_pretrained(tp_plan=...)); "
            "hir.generate decodes models with whole (unsharded) parameters: load it without tp_plan"
        )


def static_cache(
    model: torch.nn.Module, batch_size: int, max_cache_len: int, keyword: str, dtype: torch.dtype | None = None
) -> "StaticCache":
    """A transformers ``StaticCache`` for ``model``: ``batch_size`` rows, ``max_cache_len``
    positions in every attention layer, sized by the model's own writes, empty (see the
    module docstring); ``keyword`` is the one ``model.forward`` takes its cache by, ``dtype``
    the cache's (default: the dtype the layers write)."""
    from transformers import StaticCache  # transformers loads only for Hugging Face models (seconds to import)
    from transformers.cache_utils import (  # transformers loads only for Hugging Face models (seconds to import)
        DummyLayer,
        StaticLayer,
        StaticSlidingWindowLayer,
    )

    config = model_config(model).get_text_config()
    cache = StaticCache(max_cache_len=max_cache_len, config=config)
    cache.layers = [
        StaticLayer(max_cache_len=max_cache_len) if type(layer) is StaticSlidingWindowLayer else layer
        for layer in cache.layers
    ]
    odd = sorted({type(layer).__name__ for layer in cache.layers if not isinstance(layer, (StaticLayer, DummyLayer))})
    if odd:
        raise HirError(
            f"error: hir.generate: {type(model).__name__} "
            f"({getattr(config, 'model_type', '?')}) has cache layers of kind {', '.join(odd)}; "
            "hir.generate's decode step holds attention keys and values only"
        )
    device = next(model.parameters()).device
    ids = torch.zeros(batch_size, 1, dtype=torch.long, device=device)
    keep = {"logits_to_keep": 1} if "logits_to_keep" in inspect.signature(model.forward).parameters else {}
    with torch.no_grad():
        model(input_ids=ids, attention_mask=None, use_cache=True, **keep, **{keyword: cache})
    for i, layer in enumerate(cache.layers):
        if isinstance(layer, DummyLayer):
            continue
        assert isinstance(layer, StaticLayer)  # the only other kind (refused above otherwise)
        if not layer.is_initialized or layer.keys is None or layer.values is None:
            raise HirError(
                f"error: hir.generate: {type(model).__name__}'s attention "
                f"layer {i} wrote no keys to its cache in a forward; "
                "hir.generate's decode step needs every cache layer written by its own attention"
            )
        if dtype is not None:
            layer.keys, layer.values = layer.keys.to(dtype), layer.values.to(dtype)
        layer.keys.zero_()
        layer.values.zero_()
        layer.cumulative_length.zero_()
    return cache
