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
Before 5.5.1 pieces the step is built from are missing (``get_head_shapes``; before 5.4 a
layer's length is a Python int, not a tensor the step can hold): such a version is refused
by name.
"""

import inspect
from typing import Optional

import torch

from hir.core import HirError

MIN_TRANSFORMERS = "5.5.1"  # the oldest transformers whose StaticCache the step can hold (module docstring)
KEY_PROJECTIONS = ("k_proj", "qkv_proj", "query_key_value")  # modules whose output holds the keys (HF's list)


class StaticCacheStep(torch.nn.Module):
    """``model`` (a ``*ForCausalLM`` or base model) with a ``StaticCache`` of ``batch_size``
    rows and ``max_cache_len`` positions held in buffers ``key_cache_{i}`` /
    ``value_cache_{i}`` / ``cumulative_length_{i}`` (one per layer), made on the model's
    device. ``logits_to_keep`` is the model's (``1``: the logits of the last position only,
    what ``generate`` reads; ``0``: every position's).

    The buffers are the cache: ``step.to(device)`` moves them, and each call points the
    cache's layers at the step's current buffers and device, and drops those references when
    it returns (a copy, ``copy.deepcopy(step)``, holds only its own buffers; an export's
    fake tensors are never left behind)."""

    def __init__(self, model: torch.nn.Module, batch_size: int, max_cache_len: int, dtype: Optional[torch.dtype] = None, logits_to_keep: int = 0) -> None:
        super().__init__()
        require_transformers()
        from transformers import StaticCache
        from transformers.integrations.executorch import get_head_shapes

        config = model.config.get_text_config()
        self.model = model
        self.logits_to_keep = logits_to_keep
        self.cache_keyword = cache_keyword(model)
        self.cache = StaticCache(max_cache_len=max_cache_len, config=config)
        heads, head_dim = get_head_shapes(config)
        device = next(model.parameters()).device
        self.cache.early_initialization(batch_size, heads, head_dim, dtype or model.dtype, device)
        for i, layer in enumerate(self.cache.layers):
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
        from torch.distributed.tensor import Shard

        if not any(key.rsplit(".", 1)[-1] in KEY_PROJECTIONS and style == "colwise" for key, style in plan.items()):
            return {}
        return {f"{kind}_cache_{i}": Shard(1) for i in range(len(self.cache.layers)) for kind in ("key", "value")}

    def forward(self, input_ids: torch.Tensor, cache_position: torch.Tensor) -> torch.Tensor:
        """Logits of ``input_ids`` (``[batch, tokens]``) at positions ``cache_position``
        (``[tokens]``, the first one also where the cache's valid part ends)."""
        for i, layer in enumerate(self.cache.layers):
            layer.keys = getattr(self, f"key_cache_{i}")
            layer.values = getattr(self, f"value_cache_{i}")
            layer.cumulative_length = getattr(self, f"cumulative_length_{i}")
            layer.device = layer.keys.device
            layer.cumulative_length.copy_(cache_position[0])
        keep = {"logits_to_keep": self.logits_to_keep} if self.logits_to_keep else {}
        out = self.model(input_ids=input_ids, attention_mask=None, use_cache=True, **keep, **{self.cache_keyword: self.cache})
        self._release()  # (no try/finally: torch.compile traces this forward too)
        return out.logits if hasattr(out, "logits") else out.last_hidden_state

    def _release(self) -> None:
        """The cache layers forget their tensors until the next call (see the class docstring)."""
        for layer in self.cache.layers:
            layer.keys = layer.values = layer.cumulative_length = None


def cache_keyword(model: torch.nn.Module) -> str:
    """The keyword ``model.forward`` takes its cache by: ``cache`` (transformers 5.24) or
    ``past_key_values`` (5.17 and earlier); a model taking neither has no cache a step could hold."""
    parameters = inspect.signature(model.forward).parameters
    for name in ("cache", "past_key_values"):
        if name in parameters:
            return name
    import transformers

    raise HirError(f"error: StaticCacheStep: {type(model).__name__}.forward takes no 'cache' or 'past_key_values' "
                   f"argument (transformers {transformers.__version__}), so it has no KV cache to decode with")


def require_transformers() -> None:
    """Refuse a transformers older than :data:`MIN_TRANSFORMERS` (see the module docstring)."""
    import transformers
    from packaging.version import Version

    if Version(transformers.__version__) < Version(MIN_TRANSFORMERS):
        raise HirError(f"error: StaticCacheStep (hir.generate's decode step) needs transformers >= {MIN_TRANSFORMERS} "
                       f"(StaticCache layers holding their length as a tensor, integrations.executorch.get_head_shapes); "
                       f"transformers {transformers.__version__} is installed")
